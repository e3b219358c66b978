//! The scatter family: MLX's `scatter`, `scatter_add`, `scatter_prod`,
//! `scatter_max` and `scatter_min`.
//!
//! Scatters are functional: the output is a copy of `a` with the updates
//! applied. They run serially in row-major index order, so duplicate indices
//! are well defined: the combining modes accumulate every update, `Set`
//! keeps the last one. (Splitting over cores would need the destination
//! partitioned by position, which duplicate and overlapping slices defeat.)

use super::{index_axes, index_shape, require_indices};
use crate::backend::cpu::scatter::{self, ScatterPlan};
pub use crate::backend::cpu::scatter::{ScatterMode, UpdatesLayout};
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;
use crate::ops::shape_rules::broadcast_shapes;

/// Writes a slice of updates at every index tuple of a copy of `a`.
///
/// Inputs: `a`, one index array per entry of `axes`, the updates (already
/// cast to `a`'s dtype).
///
/// ```
/// use ferrox::{scatter_add, zeros, Array, DType};
/// let a = zeros(&[3], DType::Float32)?;
/// let s = scatter_add(&a, &[Array::scalar(1i32)], &ferrox::ones(&[1], DType::Float32)?, &[0])?;
/// assert_eq!(s.primitive().unwrap().name(), "scatter_add");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Scatter {
    /// How updates combine with the values they land on.
    pub mode: ScatterMode,
    /// The axis each index array indexes (normalised, distinct).
    pub axes: Vec<usize>,
    /// The shape of the slice each index tuple updates (one entry per axis
    /// of `a`).
    pub slice: Vec<usize>,
    /// How the updates operand maps onto `index_shape + slice`.
    pub layout: UpdatesLayout,
}

impl crate::graph::export::Exportable for Scatter {
    const KIND: &'static str = "scatter";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let op = self.mode.name();
        let (a, rest) = inputs
            .split_first()
            .ok_or_else(|| crate::graph::export::wrong_inputs(op, 0))?;
        let (updates, indices) = rest
            .split_last()
            .ok_or_else(|| crate::graph::export::wrong_inputs(op, 1))?;
        match self.layout {
            UpdatesLayout::Full => scatter_mode(
                self.mode,
                a,
                indices,
                updates,
                &crate::graph::export::signed(&self.axes),
            ),
            UpdatesLayout::Squeezed => {
                // `a.at[indices]`: the leading axes, whole trailing slices,
                // updates broadcast to the selection.
                let k = indices.len();
                let slice: Vec<usize> = std::iter::repeat_n(1, k)
                    .chain(a.shape().get(k..).unwrap_or(&[]).iter().copied())
                    .collect();
                if k > a.ndim() || self.axes != (0..k).collect::<Vec<_>>() || self.slice != slice {
                    return Err(Error::value(
                        op,
                        format!(
                            "an exported {op} ({self:?}) does not fit an input of shape {:?}",
                            a.shape()
                        ),
                    ));
                }
                for idx in indices {
                    require_indices(op, idx)?;
                }
                let mut target = index_shape(op, indices)?;
                target.extend_from_slice(&a.shape()[k..]);
                if broadcast_shapes(op, updates.shape(), &target)? != target {
                    return Err(Error::shape(
                        op,
                        format!(
                            "updates of shape {:?} do not broadcast to {target:?}",
                            updates.shape()
                        ),
                    ));
                }
                scatter_node(
                    self.mode,
                    a,
                    indices,
                    updates,
                    self.axes.clone(),
                    slice,
                    UpdatesLayout::Squeezed,
                )
            }
        }
    }
}

impl Primitive for Scatter {
    fn name(&self) -> &'static str {
        self.mode.name()
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let op = self.mode.name();
        let m = self.axes.len();
        let (a, indices, updates) = (&inputs[0], &inputs[1..1 + m], &inputs[1 + m]);
        let mut index_shape: Vec<usize> = vec![];
        for idx in indices {
            index_shape = broadcast_shapes(op, &index_shape, idx.shape)?;
        }
        let plan = ScatterPlan {
            mode: self.mode,
            layout: self.layout,
            axes: &self.axes,
            slice: &self.slice,
            index_shape: &index_shape,
        };
        scatter::scatter(&plan, a, indices, updates, out)
    }
    /// scatter_add: `a` gets the cotangent, the updates its gathered
    /// slices. scatter (set): as add, but the overwritten entries of `a`
    /// get zero (with duplicate indices every duplicate update gets the
    /// cotangent). max and min: the cotangent goes to every value equal to
    /// the result (ties each get all of it). prod: each factor gets the
    /// cotangent times the product of the other factors (exact with zeros).
    fn vjp(&self, p: &[Array], g: &Array, out: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        let m = self.axes.len();
        let (a, indices, updates) = (&p[0], &p[1..1 + m], &p[1 + m]);
        let axes: Vec<isize> = self.axes.iter().map(|&a| a as isize).collect();
        let gather_at = |t: &Array| crate::ops::indexing::gather(t, indices, &axes, &self.slice);
        argnums
            .iter()
            .map(|&i| {
                if i == 0 {
                    match self.mode {
                        ScatterMode::Add => Ok(g.clone()),
                        ScatterMode::Set => {
                            let zero = crate::ops::creation::zeros(&[], g.dtype())?;
                            let z =
                                crate::ops::views::broadcast_to(&zero, &self.full_shape(indices)?)?;
                            self.rebuild(ScatterMode::Set, g, indices, &z)
                        }
                        ScatterMode::Prod => {
                            let ones = crate::ops::creation::ones_like(a)?;
                            let uf = self.full_updates(updates, indices)?;
                            crate::ops::binary::multiply(
                                g,
                                &self.rebuild(ScatterMode::Prod, &ones, indices, &uf)?,
                            )
                        }
                        ScatterMode::Max | ScatterMode::Min => crate::ops::select::r#where(
                            &crate::ops::binary::equal(out, a)?,
                            g,
                            &crate::ops::creation::zeros_like(g)?,
                        ),
                    }
                } else if i == 1 + m {
                    let gathered = gather_at(g)?;
                    let full = match self.mode {
                        ScatterMode::Set | ScatterMode::Add => gathered,
                        ScatterMode::Prod => {
                            let others = self.other_factors(a, indices, updates)?;
                            crate::ops::binary::multiply(
                                &gather_at(&crate::ops::binary::multiply(g, a)?)?,
                                &others,
                            )?
                        }
                        ScatterMode::Max | ScatterMode::Min => {
                            let uf = self.full_updates(updates, indices)?;
                            let won = crate::ops::binary::equal(&gather_at(out)?, &uf)?;
                            crate::ops::select::r#where(
                                &won,
                                &gathered,
                                &crate::ops::creation::zeros_like(&gathered)?,
                            )?
                        }
                    };
                    self.fold_to_updates(&full, updates, indices)
                } else {
                    crate::ops::creation::zeros_like(&p[i])
                }
            })
            .collect()
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        let m = self.axes.len();
        if tangents[0].is_none() && tangents[1 + m].is_none() {
            return crate::ops::creation::zeros_like(output);
        }
        let (a, indices, updates) = (&p[0], &p[1..1 + m], &p[1 + m]);
        let ta = grad_helpers::tangent_or_zeros(p, tangents, 0)?;
        let tu = grad_helpers::tangent_or_zeros(p, tangents, 1 + m)?;
        let tu = self.full_updates(&tu, indices)?;
        match self.mode {
            ScatterMode::Set | ScatterMode::Add => self.rebuild(self.mode, &ta, indices, &tu),
            ScatterMode::Prod => {
                // d out = ta * P + a * scatter_add(tu_j * prod of the other
                // updates landing with j).
                let ones = crate::ops::creation::ones_like(a)?;
                let uf = self.full_updates(updates, indices)?;
                let prod = self.rebuild(ScatterMode::Prod, &ones, indices, &uf)?;
                let others = self.other_factors(a, indices, updates)?;
                let spread = self.rebuild(
                    ScatterMode::Add,
                    &crate::ops::creation::zeros_like(a)?,
                    indices,
                    &crate::ops::binary::multiply(&tu, &others)?,
                )?;
                crate::ops::binary::add(
                    &crate::ops::binary::multiply(&ta, &prod)?,
                    &crate::ops::binary::multiply(a, &spread)?,
                )
            }
            ScatterMode::Max | ScatterMode::Min => {
                // The tangent of whichever value won (every tied one).
                let axes: Vec<isize> = self.axes.iter().map(|&a| a as isize).collect();
                let zero_a = crate::ops::creation::zeros_like(a)?;
                let from_a = crate::ops::select::r#where(
                    &crate::ops::binary::equal(output, a)?,
                    &ta,
                    &zero_a,
                )?;
                let uf = self.full_updates(updates, indices)?;
                let won = crate::ops::binary::equal(
                    &crate::ops::indexing::gather(output, indices, &axes, &self.slice)?,
                    &uf,
                )?;
                let tu_won = crate::ops::select::r#where(
                    &won,
                    &tu,
                    &crate::ops::creation::zeros_like(&tu)?,
                )?;
                let from_u = self.rebuild(ScatterMode::Add, &zero_a, indices, &tu_won)?;
                crate::ops::binary::add(&from_a, &from_u)
            }
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let m = self.axes.len();
        let (a, indices, updates) = (&inputs[0], &inputs[1..1 + m], &inputs[1 + m]);
        if axes.iter().all(Option::is_none) {
            return Ok((self.rebuild(self.mode, a, indices, updates)?, None));
        }
        let b = axes
            .iter()
            .zip(inputs)
            .find_map(|(ax, x)| ax.map(|ax| x.shape()[ax]))
            .unwrap_or(1);
        // Every example writes into its own slab of a batched `a`: the
        // batch position becomes an extra index on axis 0.
        let a2 = match axes[0] {
            Some(_) => grad_helpers::batch_front(a, axes[0])?,
            None => {
                let shape: Vec<usize> = std::iter::once(b)
                    .chain(a.shape().iter().copied())
                    .collect();
                crate::ops::views::broadcast_to(&crate::ops::views::expand_dims(a, &[0])?, &shape)?
            }
        };
        // Example index shape, from the unbatched view of the indices.
        let ex_index: Vec<usize> = {
            let shapes: Vec<Vec<usize>> = indices
                .iter()
                .zip(&axes[1..1 + m])
                .map(|(x, ax)| {
                    let mut s = x.shape().to_vec();
                    if let Some(ax) = ax {
                        s.remove(*ax);
                    }
                    s
                })
                .collect();
            let mut shape: Vec<usize> = vec![];
            for s in &shapes {
                shape = crate::ops::shape_rules::broadcast_shapes("scatter", &shape, s)?;
            }
            shape
        };
        let ri = ex_index.len();
        let mut idx = Vec::with_capacity(m + 1);
        let mut pos_shape = vec![1; ri + 1];
        pos_shape[0] = b;
        let pos = crate::ops::creation::arange(0.0, b as f64, 1.0, crate::dtype::DType::Int64)?;
        idx.push(grad_helpers::reshape_to(&pos, &pos_shape)?);
        for (x, ax) in indices.iter().zip(&axes[1..1 + m]) {
            idx.push(match ax {
                Some(_) => grad_helpers::pad_example_rank(&grad_helpers::batch_front(x, *ax)?, ri)?,
                None => x.clone(),
            });
        }
        // Updates in the full layout of one example, then batched:
        // [b, index..., 1 (the batch slice), slice...].
        let ex_updates = match axes[1 + m] {
            Some(ax) => {
                let u = grad_helpers::batch_front(updates, Some(ax))?;
                let mut full = vec![b];
                full.extend(&ex_index);
                full.extend(&self.slice);
                // Broadcast each example's updates to the full layout.
                let u = match self.layout {
                    UpdatesLayout::Full => crate::ops::views::broadcast_to(
                        &grad_helpers::pad_example_rank(&u, full.len() - 1)?,
                        &full,
                    )?,
                    UpdatesLayout::Squeezed => self.squeezed_to_full_batched(&u, &ex_index, b)?,
                };
                crate::ops::views::expand_dims(&u, &[1 + ri as isize])?
            }
            None => {
                let u = self.full_updates_for(updates, &ex_index)?;
                let mut full = vec![b];
                full.extend(&ex_index);
                full.extend(&self.slice);
                let u = crate::ops::views::broadcast_to(&u, &full)?;
                crate::ops::views::expand_dims(&u, &[1 + ri as isize])?
            }
        };
        let ax2: Vec<isize> = std::iter::once(0)
            .chain(self.axes.iter().map(|&x| x as isize + 1))
            .collect();
        let out = scatter_mode(self.mode, &a2, &idx, &ex_updates, &ax2)?;
        Ok((out, Some(0)))
    }
    crate::primitive_common!();
}

impl Scatter {
    /// For each (full-layout) update of a `Prod` scatter, the product of
    /// the other updates landing on the same element (not including `a`).
    /// Zero-safe: zeros are counted rather than divided by.
    fn other_factors(&self, a: &Array, indices: &[Array], updates: &Array) -> Result<Array> {
        let axes: Vec<isize> = self.axes.iter().map(|&a| a as isize).collect();
        let uf = self.full_updates(updates, indices)?;
        let is_zero = crate::ops::binary::equal(&uf, &Array::from(0.0))?;
        let one = crate::ops::creation::ones_like(&uf)?;
        let u1 = crate::ops::select::r#where(&is_zero, &one, &uf)?;
        // The product of the non-zero updates and the count of zeros, per element.
        let nonzero_prod = self.rebuild(
            ScatterMode::Prod,
            &crate::ops::creation::ones_like(a)?,
            indices,
            &u1,
        )?;
        let zeros = self.rebuild(
            ScatterMode::Add,
            &crate::ops::creation::zeros_like(a)?,
            indices,
            &is_zero.astype(a.dtype())?,
        )?;
        let none = crate::ops::binary::equal(&zeros, &Array::from(0.0))?;
        let one_zero = crate::ops::binary::equal(&zeros, &Array::from(1.0))?;
        let zero_a = crate::ops::creation::zeros_like(a)?;
        let if_nonzero = crate::ops::select::r#where(&none, &nonzero_prod, &zero_a)?;
        let if_zero = crate::ops::select::r#where(&one_zero, &nonzero_prod, &zero_a)?;
        let gather_at = |t: &Array| crate::ops::indexing::gather(t, indices, &axes, &self.slice);
        crate::ops::select::r#where(
            &is_zero,
            &gather_at(&if_zero)?,
            &crate::ops::binary::divide(&gather_at(&if_nonzero)?, &u1)?,
        )
    }

    /// The full-layout updates shape: the index shape then the slice.
    fn full_shape(&self, indices: &[Array]) -> Result<Vec<usize>> {
        Ok([index_shape(self.mode.name(), indices)?, self.slice.clone()].concat())
    }

    /// `updates` (this node's layout) as full-layout updates.
    fn full_updates(&self, updates: &Array, indices: &[Array]) -> Result<Array> {
        let ex_index = index_shape(self.mode.name(), indices)?;
        self.full_updates_for(updates, &ex_index)
    }

    /// `updates` in the full layout for an index shape `ex_index`.
    fn full_updates_for(&self, updates: &Array, ex_index: &[usize]) -> Result<Array> {
        let full: Vec<usize> = [ex_index.to_vec(), self.slice.clone()].concat();
        match self.layout {
            UpdatesLayout::Full => crate::ops::views::broadcast_to(updates, &full),
            UpdatesLayout::Squeezed => {
                let kept: Vec<usize> = (0..self.slice.len())
                    .filter(|d| !self.axes.contains(d))
                    .map(|d| self.slice[d])
                    .collect();
                let target: Vec<usize> = [ex_index.to_vec(), kept].concat();
                let u = crate::ops::views::broadcast_to(updates, &target)?;
                let ni = ex_index.len() as isize;
                let mut at: Vec<isize> = self.axes.iter().map(|&a| ni + a as isize).collect();
                at.sort_unstable();
                crate::ops::views::broadcast_to(&crate::ops::views::expand_dims(&u, &at)?, &full)
            }
        }
    }

    /// Batched squeezed updates `[b, ...]` as batched full-layout ones.
    fn squeezed_to_full_batched(&self, u: &Array, ex_index: &[usize], b: usize) -> Result<Array> {
        let kept: Vec<usize> = (0..self.slice.len())
            .filter(|d| !self.axes.contains(d))
            .map(|d| self.slice[d])
            .collect();
        let target: Vec<usize> = std::iter::once(b)
            .chain(ex_index.iter().copied())
            .chain(kept)
            .collect();
        let u = crate::ops::views::broadcast_to(
            &grad_helpers::pad_example_rank(u, target.len() - 1)?,
            &target,
        )?;
        let ni = 1 + ex_index.len() as isize;
        let mut at: Vec<isize> = self.axes.iter().map(|&a| ni + a as isize).collect();
        at.sort_unstable();
        let full: Vec<usize> = std::iter::once(b)
            .chain(ex_index.iter().copied())
            .chain(self.slice.iter().copied())
            .collect();
        crate::ops::views::broadcast_to(&crate::ops::views::expand_dims(&u, &at)?, &full)
    }

    /// A full-layout cotangent of the updates, folded back to `updates`'
    /// layout and shape (summing where they were broadcast).
    fn fold_to_updates(&self, g: &Array, updates: &Array, indices: &[Array]) -> Result<Array> {
        let g = match self.layout {
            UpdatesLayout::Full => g.clone(),
            UpdatesLayout::Squeezed => {
                let ni = index_shape(self.mode.name(), indices)?.len() as isize;
                let at: Vec<isize> = self.axes.iter().map(|&a| ni + a as isize).collect();
                crate::ops::reduce::sum(g, Some(&at), false)?
            }
        };
        grad_helpers::unbroadcast(&g, updates.shape())
    }

    /// A full-layout scatter of `mode` with this node's axes and slice.
    fn rebuild(
        &self,
        mode: ScatterMode,
        a: &Array,
        indices: &[Array],
        updates: &Array,
    ) -> Result<Array> {
        scatter_node(
            mode,
            a,
            indices,
            updates,
            self.axes.clone(),
            self.slice.clone(),
            if updates.ndim() == index_shape(mode.name(), indices)?.len() + self.slice.len() {
                UpdatesLayout::Full
            } else {
                self.layout
            },
        )
    }
}

/// Builds a scatter node after the caller validated shapes; casts updates.
pub(super) fn scatter_node(
    mode: ScatterMode,
    a: &Array,
    indices: &[Array],
    updates: &Array,
    axes: Vec<usize>,
    slice: Vec<usize>,
    layout: UpdatesLayout,
) -> Result<Array> {
    let updates = updates.astype(a.dtype())?;
    let inputs = std::iter::once(a.clone())
        .chain(indices.iter().cloned())
        .chain([updates])
        .collect();
    Ok(Array::from_op(
        a.shape().to_vec(),
        a.dtype(),
        Scatter {
            mode,
            axes,
            slice,
            layout,
        },
        inputs,
    ))
}

/// MLX's scatter signature, shared by the five modes.
fn scatter_mode(
    mode: ScatterMode,
    a: &Array,
    indices: &[Array],
    updates: &Array,
    axes: &[isize],
) -> Result<Array> {
    let op = mode.name();
    for idx in indices {
        require_indices(op, idx)?;
    }
    let axes = index_axes(op, axes, indices.len(), a.ndim())?;
    let index_shape = index_shape(op, indices)?;
    let (u, ni) = (updates.shape(), index_shape.len());
    if u.len() != ni + a.ndim() || u[..ni] != index_shape[..] {
        return Err(Error::shape(
            op,
            format!(
                "updates have shape {u:?} but must have the index shape {index_shape:?} followed by one slice \
                 dimension per axis of a (shape {:?})",
                a.shape()
            ),
        ));
    }
    let slice = u[ni..].to_vec();
    if let Some(d) = (0..a.ndim()).find(|&d| slice[d] > a.shape()[d]) {
        return Err(Error::shape(
            op,
            format!(
                "update slices {slice:?} are larger than a (shape {:?}) along axis {d}",
                a.shape()
            ),
        ));
    }
    scatter_node(mode, a, indices, updates, axes, slice, UpdatesLayout::Full)
}

/// Returns a copy of `a` with slices replaced by `updates`: MLX's `scatter`.
///
/// `indices[k]` holds positions along `axes[k]`; the index arrays broadcast
/// to a shape `I`. `updates` has shape `I + slice`, one entry of `slice` per
/// axis of `a` (`slice[d] <= a.shape[d]`); update block `i` is written
/// starting at the index tuple `i` (and at 0 along the other axes). Index
/// values are checked at evaluation (negative ones count from the end; a
/// slice must fit after its start). With duplicate indices the last update
/// in row-major order wins. `updates` is cast to `a`'s dtype.
///
/// ```
/// use ferrox::{scatter, zeros, Array, DType};
/// let a = zeros(&[2, 3], DType::Int32)?;
/// let rows = Array::from_slice(&[1i32], &[1])?;
/// let upd = Array::from_slice(&[7i32, 8, 9], &[1, 1, 3])?;
/// let s = scatter(&a, &[rows], &upd, &[0])?;
/// assert_eq!(s.to_vec::<i32>()?, vec![0, 0, 0, 7, 8, 9]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn scatter(a: &Array, indices: &[Array], updates: &Array, axes: &[isize]) -> Result<Array> {
    scatter_mode(ScatterMode::Set, a, indices, updates, axes)
}

/// Like [`scatter()`], but adds the updates; duplicate indices accumulate.
///
/// ```
/// use ferrox::{scatter_add, zeros, Array, DType};
/// let a = zeros(&[3], DType::Float32)?;
/// let idx = Array::from_slice(&[0i32, 2, 0], &[3])?;
/// let upd = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3, 1])?;
/// assert_eq!(scatter_add(&a, &[idx], &upd, &[0])?.to_vec::<f32>()?, vec![4.0, 0.0, 2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn scatter_add(a: &Array, indices: &[Array], updates: &Array, axes: &[isize]) -> Result<Array> {
    scatter_mode(ScatterMode::Add, a, indices, updates, axes)
}

/// Like [`scatter()`], but multiplies by the updates; duplicates accumulate.
///
/// ```
/// use ferrox::{scatter_prod, ones, Array, DType};
/// let a = ones(&[2], DType::Int32)?;
/// let idx = Array::from_slice(&[1i32, 1], &[2])?;
/// let upd = Array::from_slice(&[3i32, 5], &[2, 1])?;
/// assert_eq!(scatter_prod(&a, &[idx], &upd, &[0])?.to_vec::<i32>()?, vec![1, 15]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn scatter_prod(
    a: &Array,
    indices: &[Array],
    updates: &Array,
    axes: &[isize],
) -> Result<Array> {
    scatter_mode(ScatterMode::Prod, a, indices, updates, axes)
}

/// Like [`scatter()`], but keeps the maximum (numpy's `maximum`: NaNs
/// propagate; complex numbers compare lexicographically).
///
/// ```
/// use ferrox::{scatter_max, zeros, Array, DType};
/// let a = zeros(&[2], DType::Float32)?;
/// let idx = Array::from_slice(&[0i32, 0, 1], &[3])?;
/// let upd = Array::from_slice(&[3.0f32, 5.0, -1.0], &[3, 1])?;
/// assert_eq!(scatter_max(&a, &[idx], &upd, &[0])?.to_vec::<f32>()?, vec![5.0, 0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn scatter_max(a: &Array, indices: &[Array], updates: &Array, axes: &[isize]) -> Result<Array> {
    scatter_mode(ScatterMode::Max, a, indices, updates, axes)
}

/// Like [`scatter()`], but keeps the minimum (numpy's `minimum`).
///
/// ```
/// use ferrox::{scatter_min, zeros, Array, DType};
/// let a = zeros(&[2], DType::Int8)?;
/// let idx = Array::from_slice(&[1i32, 1], &[2])?;
/// let upd = Array::from_slice(&[-3i8, 4], &[2, 1])?;
/// assert_eq!(scatter_min(&a, &[idx], &upd, &[0])?.to_vec::<i8>()?, vec![0, -3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn scatter_min(a: &Array, indices: &[Array], updates: &Array, axes: &[isize]) -> Result<Array> {
    scatter_mode(ScatterMode::Min, a, indices, updates, axes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Complex64;
    use crate::dtype::DType;
    use crate::error::ErrorKind;
    use crate::ops::creation::zeros;
    use crate::ops::indexing::tests_support::{contiguous, eval_kernel, permuted, reversed};
    use proptest::prelude::*;

    fn arr(v: &[i32], shape: &[usize]) -> Array {
        Array::from_slice(v, shape).unwrap()
    }

    #[test]
    fn scatter_rows_and_elements() {
        let a = zeros(&[3, 2], DType::Int32).unwrap();
        let rows = arr(&[2, -3], &[2]);
        let upd = arr(&[1, 2, 3, 4], &[2, 1, 2]);
        assert_eq!(
            scatter(&a, std::slice::from_ref(&rows), &upd, &[0])
                .unwrap()
                .to_vec::<i32>()
                .unwrap(),
            [3, 4, 0, 0, 1, 2]
        );
        let cols = arr(&[1, 0], &[2]);
        let upd = arr(&[5, 6], &[2, 1, 1]);
        let s = scatter(&a, &[rows, cols], &upd, &[0, 1]).unwrap();
        assert_eq!(s.to_vec::<i32>().unwrap(), [6, 0, 0, 0, 0, 5]);
    }

    #[test]
    fn duplicates_accumulate_or_last_wins() {
        let a = arr(&[1, 1, 1], &[3]);
        let idx = arr(&[0, 2, 0, 0], &[4]);
        let upd = arr(&[2, 3, 4, 5], &[4, 1]);
        let run = |f: fn(&Array, &[Array], &Array, &[isize]) -> Result<Array>| {
            f(&a, std::slice::from_ref(&idx), &upd, &[0])
                .unwrap()
                .to_vec::<i32>()
                .unwrap()
        };
        assert_eq!(run(scatter), [5, 1, 3]);
        assert_eq!(run(scatter_add), [12, 1, 4]);
        assert_eq!(run(scatter_prod), [40, 1, 3]);
        assert_eq!(run(scatter_max), [5, 1, 3]);
        assert_eq!(run(scatter_min), [1, 1, 1]);
    }

    #[test]
    fn float_and_complex_combinations() {
        let a = Array::from_slice(&[0.0f32, f32::NAN], &[2]).unwrap();
        let idx = arr(&[0, 1, 0], &[3]);
        let upd = Array::from_slice(&[f32::NAN, 1.0, 2.0], &[3, 1]).unwrap();
        let m = scatter_max(&a, std::slice::from_ref(&idx), &upd, &[0])
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert!(m[0].is_nan() && m[1].is_nan());
        let c = |re, im| Complex64::new(re, im);
        let a = Array::from_slice(&[c(1.0, 5.0)], &[1]).unwrap();
        let upd = Array::from_slice(&[c(1.0, 6.0), c(0.0, 9.0)], &[2, 1]).unwrap();
        let i = arr(&[0, 0], &[2]);
        assert_eq!(
            scatter_max(&a, std::slice::from_ref(&i), &upd, &[0])
                .unwrap()
                .to_vec::<Complex64>()
                .unwrap(),
            [c(1.0, 6.0)]
        );
        assert_eq!(
            scatter_min(&a, std::slice::from_ref(&i), &upd, &[0])
                .unwrap()
                .to_vec::<Complex64>()
                .unwrap(),
            [c(0.0, 9.0)]
        );
        let b = Array::from_slice(&[false, true], &[2]).unwrap();
        let upd = Array::from_slice(&[true, false], &[2, 1]).unwrap();
        let i = arr(&[0, 1], &[2]);
        assert_eq!(
            scatter_add(&b, std::slice::from_ref(&i), &upd, &[0])
                .unwrap()
                .to_vec::<bool>()
                .unwrap(),
            [true, true]
        );
        assert_eq!(
            scatter_prod(&b, &[i], &upd, &[0])
                .unwrap()
                .to_vec::<bool>()
                .unwrap(),
            [false, false]
        );
    }

    #[test]
    fn scatter_validates() {
        let a = zeros(&[3, 2], DType::Float32).unwrap();
        let i = arr(&[0], &[1]);
        let ok = zeros(&[1, 1, 2], DType::Float32).unwrap();
        let one = std::slice::from_ref(&i);
        assert_eq!(
            scatter(&a, one, &zeros(&[1, 2], DType::Float32).unwrap(), &[0])
                .unwrap_err()
                .kind(),
            ErrorKind::Shape
        );
        assert_eq!(
            scatter(&a, one, &zeros(&[2, 1, 2], DType::Float32).unwrap(), &[0])
                .unwrap_err()
                .kind(),
            ErrorKind::Shape
        );
        assert_eq!(
            scatter(&a, one, &zeros(&[1, 1, 3], DType::Float32).unwrap(), &[0])
                .unwrap_err()
                .kind(),
            ErrorKind::Shape
        );
        assert_eq!(
            scatter(&a, one, &ok, &[2]).unwrap_err().kind(),
            ErrorKind::Axis
        );
        assert_eq!(
            scatter(&a, one, &ok, &[]).unwrap_err().kind(),
            ErrorKind::Value
        );
        let f = Array::from_slice(&[0.0f32], &[1]).unwrap();
        assert_eq!(
            scatter(&a, &[f], &ok, &[0]).unwrap_err().kind(),
            ErrorKind::Dtype
        );
        let err = scatter_add(&a, &[arr(&[3], &[1])], &ok, &[0])
            .unwrap()
            .eval()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "scatter_add: index 3 is out of bounds for axis 0 with size 3"
        );
        let err = scatter(&a, &[arr(&[-4], &[1])], &ok, &[0])
            .unwrap()
            .eval()
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Index);
        // A slice of 2 rows fits only at rows 0 and 1.
        let two = zeros(&[1, 2, 2], DType::Float32).unwrap();
        assert!(
            scatter(&a, &[arr(&[1], &[1])], &two, &[0])
                .unwrap()
                .eval()
                .is_ok()
        );
        let err = scatter(&a, &[arr(&[2], &[1])], &two, &[0])
            .unwrap()
            .eval()
            .unwrap_err();
        assert!(
            err.to_string().ends_with("with size 3 and slice size 2"),
            "{err}"
        );
    }

    #[test]
    fn scatter_on_strided_operands() {
        // a = [[0, 1, 2], [3, 4, 5]] stored column-major; updates reversed.
        let (a_data, a_shape) = permuted(&[0i32, 3, 1, 4, 2, 5], &[3, 2], &[1, 0]);
        let i_data = contiguous(&[2i32, 0], &[2]);
        let (u_data, u_shape) = reversed(&[20i32, 10, 2, 1], &[2, 2, 1]);
        let ops = [
            Operand {
                data: &a_data,
                shape: &a_shape,
                dtype: DType::Int32,
            },
            Operand {
                data: &i_data,
                shape: &[2],
                dtype: DType::Int32,
            },
            Operand {
                data: &u_data,
                shape: &u_shape,
                dtype: DType::Int32,
            },
        ];
        // updates = [[[1], [2]], [[10], [20]]]: column 2 += [1, 2], column 0 += [10, 20].
        let s = Scatter {
            mode: ScatterMode::Add,
            axes: vec![1],
            slice: vec![2, 1],
            layout: UpdatesLayout::Full,
        };
        assert_eq!(
            eval_kernel::<i32>(&s, &ops, &[2, 3], DType::Int32).unwrap(),
            [10, 1, 3, 23, 4, 7]
        );
    }

    proptest! {
        #[test]
        fn scatter_add_matches_naive_loop(
            n in 1usize..6, cols in 1usize..4,
            raw in proptest::collection::vec((0usize..100, -50i32..50), 0..12),
        ) {
            let idx: Vec<i32> = raw.iter().map(|&(i, _)| (i % (2 * n)) as i32 - n as i32).collect();
            let upd: Vec<i32> = raw.iter().flat_map(|&(_, v)| (0..cols as i32).map(move |c| v + c)).collect();
            let mut want = vec![0i32; n * cols];
            for (k, &i) in idx.iter().enumerate() {
                let r = if i < 0 { i + n as i32 } else { i } as usize;
                for c in 0..cols {
                    want[r * cols + c] += upd[k * cols + c];
                }
            }
            let a = zeros(&[n, cols], DType::Int32).unwrap();
            let got = scatter_add(&a, &[arr(&idx, &[idx.len()])], &arr(&upd, &[idx.len(), 1, cols]), &[0])
                .unwrap().to_vec::<i32>().unwrap();
            prop_assert_eq!(got, want);
        }
    }
}
