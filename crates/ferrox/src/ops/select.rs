//! Selection: `where` and `clip`.
//!
//! `where` is the one three-input elementwise op: a [`Select`] primitive
//! with its own contiguous fast path (condition contiguous, each value
//! operand contiguous or a single element), split over cores and
//! vectorised like the binary fast paths; anything else walks the
//! broadcast strides. `clip` composes `maximum` and `minimum` (as MLX
//! does).

use super::binary::{maximum, minimum, result_dtype};
use super::shape_rules::{broadcast_many, broadcast_shapes};
use crate::backend::cpu::select;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;

// ---------------------------------------------------------------------------
// where
// ---------------------------------------------------------------------------

/// Picks `x` where the condition is true and `y` elsewhere. Inputs:
/// condition (bool), x, y (one dtype, the output's).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Select;

impl crate::graph::export::Exportable for Select {
    const KIND: &'static str = "select";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [c, x, y] = crate::graph::export::args(inputs, "where")?;
        r#where(c, x, y)
    }
}

impl Primitive for Select {
    fn is_elementwise(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "where"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let [c, x, y] = inputs else {
            return Err(Error::runtime(
                "where",
                format!("expected 3 inputs, got {}", inputs.len()),
            ));
        };
        if c.dtype != DType::Bool || x.dtype != out.dtype || y.dtype != out.dtype {
            return Err(Error::runtime(
                "where",
                format!(
                    "internal error: input dtypes {}, {}, {} for output {}",
                    c.dtype, x.dtype, y.dtype, out.dtype
                ),
            ));
        }
        select::select(c, x, y, out)
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        match input_shapes {
            [c, a, b] => {
                Some(broadcast_shapes("where", c, a).and_then(|s| broadcast_shapes("where", &s, b)))
            }
            _ => None,
        }
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        // The condition gets no gradient; x and y get the cotangent where
        // they were picked.
        let zero = crate::ops::creation::zeros_like(g)?;
        argnums
            .iter()
            .map(|&i| match i {
                0 => crate::ops::creation::zeros_like(&p[0]),
                1 => grad_helpers::unbroadcast(&r#where(&p[0], g, &zero)?, p[1].shape()),
                _ => grad_helpers::unbroadcast(&r#where(&p[0], &zero, g)?, p[2].shape()),
            })
            .collect()
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        if tangents[1].is_none() && tangents[2].is_none() {
            return crate::ops::creation::zeros_like(output);
        }
        let tx = grad_helpers::tangent_or_zeros(p, tangents, 1)?;
        let ty = grad_helpers::tangent_or_zeros(p, tangents, 2)?;
        r#where(&p[0], &tx, &ty)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let (a, out_ax) = grad_helpers::align_batch(inputs, axes)?;
        Ok((r#where(&a[0], &a[1], &a[2])?, out_ax))
    }
    crate::primitive_common!();
}

/// Elementwise selection: `x` where `condition` is true (non-zero), `y`
/// elsewhere. The three inputs broadcast together; `x` and `y` promote to
/// a common dtype (weak scalars adopt the other's dtype). MLX's `where`
/// (`where` is a Rust keyword, hence the raw identifier).
///
/// ```
/// use ferrox::{r#where, Array};
/// let c = Array::from_slice(&[true, false, true], &[3])?;
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
/// assert_eq!(r#where(&c, &x, &Array::from(0.0))?.to_vec::<f32>()?, vec![1.0, 0.0, 3.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn r#where(condition: &Array, x: &Array, y: &Array) -> Result<Array> {
    let shape = broadcast_many("where", &[condition, x, y])?;
    let dtype = result_dtype(x, y);
    let inputs = vec![
        condition.astype(DType::Bool)?,
        x.astype(dtype)?,
        y.astype(dtype)?,
    ];
    Ok(Array::from_op(shape, dtype, Select, inputs))
}

// ---------------------------------------------------------------------------
// clip
// ---------------------------------------------------------------------------

/// Limits `a` to `[min, max]`: `minimum(maximum(a, min), max)`, with either
/// bound optional (not both). Bounds broadcast against `a` and take part in
/// promotion; NaNs propagate; where `min > max` the result is `max`.
/// Complex inputs are a dtype error.
///
/// ```
/// use ferrox::{clip, Array};
/// let a = Array::from_slice(&[-2.0f32, 0.5, 3.0], &[3])?;
/// let c = clip(&a, Some(&Array::from(0.0)), Some(&Array::from(1.0)))?;
/// assert_eq!(c.to_vec::<f32>()?, vec![0.0, 0.5, 1.0]);
/// assert!(clip(&a, None, None).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn clip(a: &Array, min: Option<&Array>, max: Option<&Array>) -> Result<Array> {
    let op = "clip";
    if min.is_none() && max.is_none() {
        return Err(Error::value(
            op,
            "at least one of min and max must be given",
        ));
    }
    let all: Vec<&Array> = [Some(a), min, max].into_iter().flatten().collect();
    broadcast_many(op, &all)?;
    // Errors of the two steps (e.g. complex dtypes) are clip's own.
    let as_clip = |e: Error| Error::new(e.kind(), op, e.message());
    let lower = match min {
        Some(lo) => maximum(a, lo).map_err(as_clip)?,
        None => a.clone(),
    };
    match max {
        Some(hi) => minimum(&lower, hi).map_err(as_clip),
        None => Ok(lower),
    }
}

impl Array {
    /// Method form of [`clip`].
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[-1i32, 5, 10], &[3])?;
    /// let c = a.clip(Some(&ferrox::Array::from(0)), Some(&ferrox::Array::from(6)))?;
    /// assert_eq!(c.to_vec::<i32>()?, vec![0, 5, 6]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn clip(&self, min: Option<&Array>, max: Option<&Array>) -> Result<Array> {
        clip(self, min, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Element;
    use crate::error::ErrorKind;
    use crate::graph::storage::Pod;
    use crate::ops::closeness::{AllPairs, Closeness, IsClose};
    use proptest::prelude::*;
    use std::sync::Arc;

    fn arr<T: Element + Pod>(v: &[T], shape: &[usize]) -> Array {
        Array::from_slice(v, shape).unwrap()
    }

    #[test]
    fn where_broadcasts_and_promotes() {
        let c = arr(&[true, false], &[2, 1]);
        let x = arr(&[1i8, 2, 3], &[3]);
        let r = r#where(&c, &x, &Array::from(2.5)).unwrap();
        assert_eq!((r.shape(), r.dtype()), (&[2usize, 3][..], DType::Float32));
        assert_eq!(
            r.to_vec::<f32>().unwrap(),
            vec![1.0, 2.0, 3.0, 2.5, 2.5, 2.5]
        );
        // A non-bool condition is cast: non-zero is true.
        let c = arr(&[0.0f32, -0.5, f32::NAN], &[3]);
        let r = r#where(&c, &x, &Array::from(0)).unwrap();
        assert_eq!(
            (r.dtype(), r.to_vec::<i8>().unwrap()),
            (DType::Int8, vec![0, 2, 3])
        );
        let e = r#where(&arr(&[true; 2], &[2]), &x, &x).unwrap_err();
        assert_eq!((e.kind(), e.op()), (ErrorKind::Shape, "where"));
    }

    #[test]
    fn where_fast_paths_match_the_general_path() {
        // Large enough to split over cores; every value-operand combination.
        let n = 100_003;
        let cond: Vec<bool> = (0..n).map(|i| i % 3 == 0 || i % 7 == 0).collect();
        let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let ys: Vec<f32> = (0..n).map(|i| -(i as f32)).collect();
        let (c, x, y) = (arr(&cond, &[n]), arr(&xs, &[n]), arr(&ys, &[n]));
        let sx = arr(&[7.0f32], &[1]);
        let sy = arr(&[-7.0f32], &[]);
        let pick = |xv: &dyn Fn(usize) -> f32, yv: &dyn Fn(usize) -> f32| -> Vec<f32> {
            (0..n)
                .map(|i| if cond[i] { xv(i) } else { yv(i) })
                .collect()
        };
        let (fx, fy) = (|i: usize| xs[i], |i: usize| ys[i]);
        assert_eq!(
            r#where(&c, &x, &y).unwrap().to_vec::<f32>().unwrap(),
            pick(&fx, &fy)
        );
        assert_eq!(
            r#where(&c, &x, &sy).unwrap().to_vec::<f32>().unwrap(),
            pick(&fx, &|_| -7.0)
        );
        assert_eq!(
            r#where(&c, &sx, &y).unwrap().to_vec::<f32>().unwrap(),
            pick(&|_| 7.0, &fy)
        );
        assert_eq!(
            r#where(&c, &sx, &sy).unwrap().to_vec::<f32>().unwrap(),
            pick(&|_| 7.0, &|_| -7.0)
        );
    }

    /// A 2-d operand whose storage holds the transpose (column-major).
    fn transposed<T: Pod>(values: &[T], rows: usize, cols: usize) -> Data {
        let mut storage =
            crate::graph::storage::Storage::new(std::mem::size_of_val(values), false).unwrap();
        let dst = storage.as_mut_slice::<T>();
        for r in 0..rows {
            for c in 0..cols {
                dst[c * rows + r] = values[r * cols + c];
            }
        }
        Data {
            storage: Arc::new(storage),
            strides: vec![1, rows as isize],
            offset: 0,
        }
    }

    #[test]
    fn where_and_isclose_on_transposed_operands() {
        let shape = [3usize, 4];
        let cond: Vec<bool> = (0..12).map(|i| i % 2 == 0).collect();
        let xs: Vec<i64> = (0..12).collect();
        let ys: Vec<i64> = (0..12).map(|i| 100 + i).collect();
        let (dc, dx, dy) = (
            transposed(&cond, 3, 4),
            transposed(&xs, 3, 4),
            transposed(&ys, 3, 4),
        );
        let ops = [
            Operand {
                data: &dc,
                shape: &shape,
                dtype: DType::Bool,
            },
            Operand {
                data: &dx,
                shape: &shape,
                dtype: DType::Int64,
            },
            Operand {
                data: &dy,
                shape: &shape,
                dtype: DType::Int64,
            },
        ];
        let out = Select
            .eval_cpu(
                &ops,
                OutSpec {
                    shape: &shape,
                    dtype: DType::Int64,
                },
            )
            .unwrap();
        let want: Vec<i64> = (0..12)
            .map(|i| if cond[i] { xs[i] } else { ys[i] })
            .collect();
        assert_eq!(out.to_vec::<i64>(&shape), want);

        let a: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..12)
            .map(|i| i as f32 + if i % 3 == 0 { 1e-7 } else { 0.1 })
            .collect();
        let (da, db) = (transposed(&a, 3, 4), transposed(&b, 3, 4));
        let ops = [
            Operand {
                data: &da,
                shape: &shape,
                dtype: DType::Float32,
            },
            Operand {
                data: &db,
                shape: &shape,
                dtype: DType::Float32,
            },
        ];
        let test = Closeness::Close {
            rtol: 1e-5,
            atol: 1e-6,
            equal_nan: false,
        };
        let out = IsClose(test)
            .eval_cpu(
                &ops,
                OutSpec {
                    shape: &shape,
                    dtype: DType::Bool,
                },
            )
            .unwrap();
        let want: Vec<bool> = (0..12).map(|i| i % 3 == 0).collect();
        assert_eq!(out.to_vec::<bool>(&shape), want);
        let all = AllPairs(test)
            .eval_cpu(
                &ops,
                OutSpec {
                    shape: &[],
                    dtype: DType::Bool,
                },
            )
            .unwrap();
        assert_eq!(all.to_vec::<bool>(&[]), vec![false]);
        let same = [ops[0], ops[0]];
        let all = AllPairs(test)
            .eval_cpu(
                &same,
                OutSpec {
                    shape: &[],
                    dtype: DType::Bool,
                },
            )
            .unwrap();
        assert_eq!(all.to_vec::<bool>(&[]), vec![true]);
    }

    #[test]
    fn clip_needs_a_bound_and_composes_maximum_minimum() {
        let a = arr(&[-3i32, 0, 3, 9], &[4]);
        let lo = arr(&[-1i32, 1, 1, 1], &[4]);
        assert_eq!(
            clip(&a, Some(&lo), None).unwrap().to_vec::<i32>().unwrap(),
            vec![-1, 1, 3, 9]
        );
        assert_eq!(
            clip(&a, None, Some(&Array::from(2)))
                .unwrap()
                .to_vec::<i32>()
                .unwrap(),
            vec![-3, 0, 2, 2]
        );
        // min > max gives max, as numpy.
        let r = clip(&a, Some(&Array::from(5)), Some(&Array::from(2))).unwrap();
        assert_eq!(r.to_vec::<i32>().unwrap(), vec![2; 4]);
        let f = clip(&a, Some(&Array::from(0.5)), None).unwrap();
        assert_eq!(f.dtype(), DType::Float32);
        let e = clip(&a, None, None).unwrap_err();
        assert_eq!(
            (e.kind(), e.to_string().as_str()),
            (
                ErrorKind::Value,
                "clip: at least one of min and max must be given"
            )
        );
        let nan = clip(
            &arr(&[f32::NAN], &[1]),
            Some(&Array::from(0.0)),
            Some(&Array::from(1.0)),
        )
        .unwrap();
        assert!(nan.to_vec::<f32>().unwrap()[0].is_nan());
        let c = arr(&[crate::dtype::Complex64::new(1.0, 1.0)], &[1]);
        assert_eq!(
            clip(&c, Some(&Array::from(0.0)), None).unwrap_err().kind(),
            ErrorKind::Dtype
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn where_matches_a_naive_loop(
            rows in 1usize..5, cols in 1usize..6,
            bits in prop::collection::vec(any::<bool>(), 30),
            cond_row in any::<bool>(), x_col in any::<bool>(),
        ) {
            // cond broadcast along rows or full; x a column or full; y scalar.
            let cshape = if cond_row { vec![cols] } else { vec![rows, cols] };
            let xshape = if x_col { vec![rows, 1] } else { vec![rows, cols] };
            let cn: usize = cshape.iter().product();
            let xn: usize = xshape.iter().product();
            let cond: Vec<bool> = bits[..cn].to_vec();
            let xs: Vec<i32> = (0..xn as i32).collect();
            let r = r#where(&arr(&cond, &cshape), &arr(&xs, &xshape), &Array::from(-1)).unwrap();
            let mut want = vec![];
            for i in 0..rows {
                for j in 0..cols {
                    let c = if cond_row { cond[j] } else { cond[i * cols + j] };
                    let x = if x_col { xs[i] } else { xs[i * cols + j] };
                    want.push(if c { x } else { -1 });
                }
            }
            prop_assert_eq!(r.to_vec::<i32>().unwrap(), want);
        }
    }
}
