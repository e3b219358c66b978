//! `slice_update`: a copy of an array with a strided slice replaced.

use crate::backend::cpu::scatter;
use crate::backend::cpu::strided::broadcasts_to;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};

/// Writes `update` (broadcast) over a strided slice of a copy of `a`.
///
/// ```
/// use ferrox::{slice_update, zeros, Array, DType};
/// let s = slice_update(&zeros(&[4], DType::Int32)?, &Array::from(1), &[1], &[3], None)?;
/// assert_eq!(s.primitive().unwrap().name(), "slice_update");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SliceUpdate {
    /// First index of the slice along each axis (normalised, in range when
    /// the slice is not empty).
    pub start: Vec<usize>,
    /// Step along each axis (non-zero, may be negative).
    pub strides: Vec<isize>,
    /// The slice's shape.
    pub shape: Vec<usize>,
}

impl crate::graph::export::Exportable for SliceUpdate {
    const KIND: &'static str = "slice_update";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [a, u] = crate::graph::export::args(inputs, "slice_update")?;
        let nd = a.ndim();
        if self.start.len() != nd || self.strides.len() != nd || self.shape.len() != nd {
            return Err(Error::value(
                "slice_update",
                format!(
                    "an exported slice update {self:?} does not fit an input of shape {:?}",
                    a.shape()
                ),
            ));
        }
        // The same selection as start/stop/step arguments: stop one step
        // past the last selected index (isize::MIN: through the front).
        let mut start = Vec::with_capacity(nd);
        let mut stop = Vec::with_capacity(nd);
        for d in 0..nd {
            let (b, n, k) = (
                self.start[d] as i128,
                self.shape[d] as i128,
                self.strides[d] as i128,
            );
            let end = b + n * k;
            let conv = |v: i128| {
                isize::try_from(v).map_err(|_| {
                    Error::value(
                        "slice_update",
                        format!("an exported slice update has an out-of-range bound {v}"),
                    )
                })
            };
            start.push(conv(b)?);
            stop.push(if end < 0 { isize::MIN } else { conv(end)? });
        }
        let y = slice_update(a, u, &start, &stop, Some(&self.strides))?;
        let same = y
            .primitive()
            .and_then(|p| p.as_any().downcast_ref::<SliceUpdate>())
            .is_some_and(|p| p == self);
        if !same {
            return Err(Error::value(
                "slice_update",
                format!(
                    "an exported slice update {self:?} does not fit an input of shape {:?}",
                    a.shape()
                ),
            ));
        }
        Ok(y)
    }
}

impl Primitive for SliceUpdate {
    fn name(&self) -> &'static str {
        "slice_update"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let (a, update) = (&inputs[0], &inputs[1]);
        scatter::slice_update(a, update, &self.start, &self.strides, &self.shape, out)
    }
    /// The slice (start, steps and shape) is part of the op, as in MLX's
    /// shapeless compile; a target it no longer fits in is an error.
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let a = input_shapes.first()?;
        let fits = a.len() == self.shape.len()
            && (0..a.len()).all(|i| {
                let (n, start, step) = (
                    self.shape[i] as isize,
                    self.start[i] as isize,
                    self.strides[i],
                );
                n == 0 || {
                    let last = start + (n - 1) * step;
                    start < a[i] as isize && (0..a[i] as isize).contains(&last)
                }
            });
        Some(if fits {
            Ok(a.to_vec())
        } else {
            Err(Error::shape(
                "slice_update",
                format!(
                    "the traced slice (start {:?}, steps {:?}, shape {:?}) does not fit an array of shape {a:?}",
                    self.start, self.strides, self.shape
                ),
            ))
        })
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        // `a` gets the cotangent outside the slice; the update gets the
        // slice of it (summed where the update was broadcast).
        argnums
            .iter()
            .map(|&i| match i {
                0 => Ok(self.apply(g, &crate::ops::creation::zeros(&[], g.dtype())?)),
                _ => {
                    let taken = self.take(g)?;
                    crate::ops::grad_helpers::unbroadcast(&taken, p[1].shape())
                }
            })
            .collect()
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        if tangents.iter().all(Option::is_none) {
            return crate::ops::creation::zeros_like(output);
        }
        let ta = crate::ops::grad_helpers::tangent_or_zeros(p, tangents, 0)?;
        let tu = crate::ops::grad_helpers::tangent_or_zeros(p, tangents, 1)?;
        Ok(self.apply(&ta, &tu))
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        use crate::ops::grad_helpers::{batch_front, pad_example_rank};
        let (a, u) = (&inputs[0], &inputs[1]);
        if axes[0].is_none() && axes[1].is_none() {
            return Ok((self.apply(a, u), None));
        }
        let b = match (axes[0], axes[1]) {
            (Some(ax), _) => a.shape()[ax],
            (None, Some(ax)) => u.shape()[ax],
            (None, None) => 1,
        };
        let a2 = match axes[0] {
            Some(_) => batch_front(a, axes[0])?,
            None => {
                let mut shape = vec![b];
                shape.extend_from_slice(a.shape());
                crate::ops::views::broadcast_to(&crate::ops::views::expand_dims(a, &[0])?, &shape)?
            }
        };
        let u2 = match axes[1] {
            Some(_) => pad_example_rank(&batch_front(u, axes[1])?, self.shape.len())?,
            None => u.clone(),
        };
        let batched = SliceUpdate {
            start: std::iter::once(0)
                .chain(self.start.iter().copied())
                .collect(),
            strides: std::iter::once(1)
                .chain(self.strides.iter().copied())
                .collect(),
            shape: std::iter::once(b)
                .chain(self.shape.iter().copied())
                .collect(),
        };
        Ok((batched.apply(&a2, &u2), Some(0)))
    }
    crate::primitive_common!();
}

impl SliceUpdate {
    /// This update applied to `a` with `update` (which must broadcast to
    /// the slice shape and have `a`'s shape rules).
    fn apply(&self, a: &Array, update: &Array) -> Array {
        let update = update.astype(a.dtype()).unwrap_or_else(|_| update.clone());
        Array::from_op(
            a.shape().to_vec(),
            a.dtype(),
            self.clone(),
            vec![a.clone(), update],
        )
    }

    /// The slice this update writes, read from `g`.
    fn take(&self, g: &Array) -> Result<Array> {
        if self.shape.contains(&0) {
            return crate::ops::creation::zeros(&self.shape, g.dtype());
        }
        let start: Vec<isize> = self.start.iter().map(|&s| s as isize).collect();
        let stop: Vec<isize> = start
            .iter()
            .zip(&self.strides)
            .zip(&self.shape)
            .map(|((&b, &k), &n)| {
                let end = b + k * (n as isize - 1);
                if k > 0 {
                    end + 1
                } else if end > 0 {
                    end - 1
                } else {
                    isize::MIN
                }
            })
            .collect();
        crate::ops::views::slice(g, &start, &stop, &self.strides)
    }
}

/// numpy's slice normalisation along an axis of `n`: the first index and
/// the number of elements of `start:stop:step` (`step != 0`).
pub(crate) fn normalize_slice(n: usize, start: isize, stop: isize, step: isize) -> (usize, usize) {
    let (n, step) = (n as i128, step as i128);
    let clamp = |v: isize| {
        let v = v as i128;
        if v < 0 {
            (v + n).max(if step < 0 { -1 } else { 0 })
        } else {
            v.min(if step < 0 { n - 1 } else { n })
        }
    };
    let (s, e) = (clamp(start), clamp(stop));
    let len = match step > 0 {
        true if e > s => (e - s + step - 1) / step,
        false if s > e => (s - e - step - 1) / -step,
        _ => 0,
    };
    if len == 0 {
        (0, 0)
    } else {
        (s as usize, len as usize)
    }
}

/// Returns a copy of `a` whose slice `start:stop:strides` is replaced by
/// `update`: MLX's `slice_update`, the functional form of
/// `a[start:stop:step] = update`.
///
/// `start`, `stop` and `strides` (default all 1) have one entry per axis and
/// follow numpy's slice rules: negative values count from the end, bounds
/// are clamped, a negative step walks backwards. `update` broadcasts to the
/// slice's shape and is cast to `a`'s dtype.
///
/// ```
/// use ferrox::{slice_update, zeros, Array, DType};
/// let a = zeros(&[2, 4], DType::Int32)?;
/// let u = Array::from_slice(&[1i32, 2], &[2])?;
/// // a[:, ::-2] = u  (columns 3 and 1 of each row)
/// let b = slice_update(&a, &u, &[0, -1], &[2, isize::MIN], Some(&[1, -2]))?;
/// assert_eq!(b.to_vec::<i32>()?, vec![0, 2, 0, 1, 0, 2, 0, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn slice_update(
    a: &Array,
    update: &Array,
    start: &[isize],
    stop: &[isize],
    strides: Option<&[isize]>,
) -> Result<Array> {
    let op = "slice_update";
    let nd = a.ndim();
    let ones = vec![1; nd];
    let strides = strides.unwrap_or(&ones);
    if start.len() != nd || stop.len() != nd || strides.len() != nd {
        return Err(Error::value(
            op,
            format!(
                "start {start:?}, stop {stop:?} and strides {strides:?} must each have {nd} entries, one per \
                 dimension of a (shape {:?})",
                a.shape()
            ),
        ));
    }
    if let Some(d) = strides.iter().position(|&s| s == 0) {
        return Err(Error::value(
            op,
            format!("stride 0 at axis {d} is not allowed"),
        ));
    }
    let (first, shape): (Vec<usize>, Vec<usize>) = (0..nd)
        .map(|d| normalize_slice(a.shape()[d], start[d], stop[d], strides[d]))
        .unzip();
    if !broadcasts_to(update.shape(), &shape) {
        return Err(Error::shape(
            op,
            format!(
                "update with shape {:?} cannot be broadcast to the slice shape {shape:?}",
                update.shape()
            ),
        ));
    }
    let update = update.astype(a.dtype())?;
    let prim = SliceUpdate {
        start: first,
        strides: strides.to_vec(),
        shape,
    };
    Ok(Array::from_op(
        a.shape().to_vec(),
        a.dtype(),
        prim,
        vec![a.clone(), update],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::error::ErrorKind;
    use crate::ops::creation::zeros;
    use crate::ops::indexing::tests_support::{eval_kernel, permuted, reversed};
    use proptest::prelude::*;

    #[test]
    fn normalisation_follows_numpy() {
        assert_eq!(normalize_slice(5, 1, 4, 1), (1, 3));
        assert_eq!(normalize_slice(5, -2, 100, 1), (3, 2));
        assert_eq!(normalize_slice(5, -100, 100, 2), (0, 3));
        assert_eq!(normalize_slice(5, 100, -100, -1), (4, 5));
        assert_eq!(normalize_slice(5, 3, 3, 1), (0, 0));
        assert_eq!(normalize_slice(5, 1, 4, -1), (0, 0));
        assert_eq!(normalize_slice(0, 0, 1, -1), (0, 0));
        assert_eq!(
            normalize_slice(5, isize::MIN, isize::MAX, isize::MIN),
            (0, 0)
        );
        assert_eq!(
            normalize_slice(5, isize::MAX, isize::MIN, isize::MIN),
            (4, 1)
        );
    }

    #[test]
    fn slice_update_validates() {
        let a = zeros(&[2, 3], DType::Float32).unwrap();
        let u = Array::from(1.0);
        assert_eq!(
            slice_update(&a, &u, &[0], &[1], None).unwrap_err().kind(),
            ErrorKind::Value
        );
        assert_eq!(
            slice_update(&a, &u, &[0, 0], &[1, 1], Some(&[1, 0]))
                .unwrap_err()
                .kind(),
            ErrorKind::Value
        );
        let big = zeros(&[2, 2], DType::Float32).unwrap();
        assert_eq!(
            slice_update(&a, &big, &[0, 0], &[2, 3], None)
                .unwrap_err()
                .kind(),
            ErrorKind::Shape
        );
        let s = slice_update(&a, &big, &[1, 1], &[1, 1], None);
        assert_eq!(
            s.unwrap_err().kind(),
            ErrorKind::Shape,
            "[2, 2] does not broadcast to [0, 0]"
        );
        // An empty slice leaves `a` as it was.
        let s = slice_update(&a, &u, &[1, 1], &[1, 1], None).unwrap();
        assert_eq!(s.to_vec::<f32>().unwrap(), [0.0; 6]);
        // Extreme steps select one element and must not overflow.
        let s = slice_update(
            &a,
            &u,
            &[1, -1],
            &[2, isize::MIN],
            Some(&[isize::MAX, isize::MIN]),
        );
        assert_eq!(
            s.unwrap().to_vec::<f32>().unwrap(),
            [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
        );
    }

    #[test]
    fn slice_update_of_strided_operands() {
        // a = [[0, 1, 2], [3, 4, 5]] stored column-major, update [[1, 2]] reversed.
        let (a_data, a_shape) = permuted(&[0i32, 3, 1, 4, 2, 5], &[3, 2], &[1, 0]);
        let (u_data, u_shape) = reversed(&[20i32, 10], &[1, 2]);
        let ops = [
            Operand {
                data: &a_data,
                shape: &a_shape,
                dtype: DType::Int32,
            },
            Operand {
                data: &u_data,
                shape: &u_shape,
                dtype: DType::Int32,
            },
        ];
        // a[:, ::2] = [[10, 20]] broadcast over both rows.
        let p = SliceUpdate {
            start: vec![0, 0],
            strides: vec![1, 2],
            shape: vec![2, 2],
        };
        assert_eq!(
            eval_kernel::<i32>(&p, &ops, &[2, 3], DType::Int32).unwrap(),
            [10, 1, 20, 10, 4, 20]
        );
    }

    proptest! {
        #[test]
        fn slice_update_matches_naive_loop(
            n in 0usize..8, start in -10isize..10, stop in -10isize..10,
            step in prop_oneof![-3isize..0, 1isize..4],
        ) {
            let a: Vec<i32> = (0..n as i32).collect();
            let (first, len) = normalize_slice(n, start, stop, step);
            let mut want = a.clone();
            for k in 0..len {
                want[(first as isize + k as isize * step) as usize] = -1 - k as i32;
            }
            let upd: Vec<i32> = (0..len as i32).map(|k| -1 - k).collect();
            let got = slice_update(
                &Array::from_slice(&a, &[n]).unwrap(),
                &Array::from_slice(&upd, &[len]).unwrap(),
                &[start], &[stop], Some(&[step]),
            ).unwrap().to_vec::<i32>().unwrap();
            prop_assert_eq!(got, want);
        }
    }
}
