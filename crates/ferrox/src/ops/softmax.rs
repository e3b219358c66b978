//! softmax and logsumexp: one online pass per row for the running max and
//! the sum of exponentials, then (softmax only) one write pass.
//!
//! Inputs that are not floating point compute in `float32`; half floats
//! compute in `f32` and round once. Complex inputs are an error.

use super::reduce::reduced_shape;
use super::shape_rules::normalize_axes;
use crate::backend::cpu::softmax as softmax_kernel;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;

/// The dtype softmax/logsumexp compute and return for an input dtype.
fn float_dtype(name: &str, dtype: DType) -> Result<DType> {
    match dtype {
        DType::Complex64 => Err(Error::dtype(name, "complex64 is not supported")),
        d if d.is_float() => Ok(d),
        _ => Ok(DType::Float32),
    }
}

/// `log(sum(exp(x)))` over `axes` (sorted, distinct).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LogSumExp {
    /// The reduced axes, sorted.
    pub axes: Vec<usize>,
    /// Whether the output keeps the reduced axes as size 1.
    pub keepdims: bool,
}

impl crate::graph::export::Exportable for LogSumExp {
    const KIND: &'static str = "logsumexp";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, "logsumexp")?;
        logsumexp(
            x,
            Some(&crate::graph::export::signed(&self.axes)),
            self.keepdims,
        )
    }
}

impl Primitive for LogSumExp {
    fn name(&self) -> &'static str {
        "logsumexp"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        softmax_kernel::logsumexp(&inputs[0], &self.axes, out)
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let shape = input_shapes.first()?;
        (self.axes.iter().all(|&a| a < shape.len()))
            .then(|| Ok(reduced_shape(shape, &self.axes, self.keepdims)))
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        // d lse / dx = softmax(x) over the reduced axes.
        let x = &p[0];
        let s = softmax(x, Some(&signed(&self.axes)), false)?;
        let g = grad_helpers::expand_reduced(g, &self.axes, self.keepdims, x)?;
        Ok(vec![crate::ops::binary::multiply(&g, &s)?])
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        let Some(t) = &tangents[0] else {
            return crate::ops::creation::zeros_like(output);
        };
        let axes = signed(&self.axes);
        let s = softmax(&p[0], Some(&axes), false)?;
        crate::ops::reduce::sum(
            &crate::ops::binary::multiply(t, &s)?,
            Some(&axes),
            self.keepdims,
        )
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let Some(ax) = axes[0] else {
            let y = logsumexp(&inputs[0], Some(&signed(&self.axes)), self.keepdims)?;
            return Ok((y, None));
        };
        let x = grad_helpers::batch_front(&inputs[0], Some(ax))?;
        let shifted: Vec<isize> = self.axes.iter().map(|&a| a as isize + 1).collect();
        Ok((logsumexp(&x, Some(&shifted), self.keepdims)?, Some(0)))
    }
    crate::primitive_common!();
}

/// Axes as the `isize`s the public ops take.
fn signed(axes: &[usize]) -> Vec<isize> {
    axes.iter().map(|&a| a as isize).collect()
}

/// `log(sum(exp(a)))` over `axes` (`None`: all axes), computed stably in one
/// pass: a running maximum and a running sum of `exp(x - max)`.
///
/// Follows MLX: an infinite maximum is the result itself (`+inf` stays
/// `+inf`, all `-inf` gives `-inf`), NaN propagates; the logsumexp of
/// nothing is `-inf`. Integer and bool inputs give `float32`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32, 0.0, 1000.0, 1000.0], &[2, 2])?;
/// let l = ferrox::logsumexp(&a, Some(&[1]), false)?.to_vec::<f32>()?;
/// assert!((l[0] - 2f32.ln()).abs() < 1e-6 && (l[1] - (1000.0 + 2f32.ln())).abs() < 1e-3);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn logsumexp(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let axes = normalize_axes("logsumexp", axes, a.ndim())?;
    let dtype = float_dtype("logsumexp", a.dtype())?;
    let shape = reduced_shape(a.shape(), &axes, keepdims);
    Ok(Array::from_op(
        shape,
        dtype,
        LogSumExp { axes, keepdims },
        vec![a.astype(dtype)?],
    ))
}

/// `exp(x - max) / sum(exp(x - max))` over `axes` (sorted, distinct).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Softmax {
    /// The normalised axes, sorted.
    pub axes: Vec<usize>,
    /// MLX's flag to accumulate half-float inputs in `f32`. The CPU kernels
    /// always compute half floats in `f32` (faster than emulated half
    /// arithmetic and at least as accurate), so it does not change results.
    pub precise: bool,
}

impl crate::graph::export::Exportable for Softmax {
    const KIND: &'static str = "softmax";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, "softmax")?;
        softmax(
            x,
            Some(&crate::graph::export::signed(&self.axes)),
            self.precise,
        )
    }
}

impl Primitive for Softmax {
    fn name(&self) -> &'static str {
        "softmax"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        softmax_kernel::softmax(&inputs[0], &self.axes, out)
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let shape = input_shapes.first()?;
        (self.axes.iter().all(|&a| a < shape.len())).then(|| Ok(shape.to_vec()))
    }
    fn vjp(
        &self,
        _p: &[Array],
        g: &Array,
        output: &Array,
        _argnums: &[usize],
    ) -> Result<Vec<Array>> {
        // s * (g - sum(g * s)) over the normalised axes.
        let s = output;
        let gs = crate::ops::reduce::sum(
            &crate::ops::binary::multiply(g, s)?,
            Some(&signed(&self.axes)),
            true,
        )?;
        Ok(vec![crate::ops::binary::multiply(
            s,
            &crate::ops::binary::subtract(g, &gs)?,
        )?])
    }
    fn jvp(&self, _p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        let Some(t) = &tangents[0] else {
            return crate::ops::creation::zeros_like(output);
        };
        let s = output;
        let ts = crate::ops::reduce::sum(
            &crate::ops::binary::multiply(t, s)?,
            Some(&signed(&self.axes)),
            true,
        )?;
        crate::ops::binary::multiply(s, &crate::ops::binary::subtract(t, &ts)?)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let Some(ax) = axes[0] else {
            let y = softmax(&inputs[0], Some(&signed(&self.axes)), self.precise)?;
            return Ok((y, None));
        };
        let x = grad_helpers::batch_front(&inputs[0], Some(ax))?;
        let shifted: Vec<isize> = self.axes.iter().map(|&a| a as isize + 1).collect();
        Ok((softmax(&x, Some(&shifted), self.precise)?, Some(0)))
    }
    crate::primitive_common!();
}

/// Softmax over `axes` (`None`: all axes): `exp(a - max) / sum(exp(a - max))`.
///
/// One pass per row finds the maximum and the sum together (online
/// rescaling), a second writes the result. `precise` is MLX's flag for
/// accumulating half floats in `f32`; on the CPU they always are. Integer
/// and bool inputs give `float32`; a row containing `+inf` or NaN gives NaN,
/// as in numpy.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, 1.0, 0.0, 1000.0], &[2, 2])?;
/// let s = ferrox::softmax(&a, Some(&[-1]), false)?.to_vec::<f32>()?;
/// assert_eq!(s, vec![0.5, 0.5, 0.0, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn softmax(a: &Array, axes: Option<&[isize]>, precise: bool) -> Result<Array> {
    let axes = normalize_axes("softmax", axes, a.ndim())?;
    let dtype = float_dtype("softmax", a.dtype())?;
    Ok(Array::from_op(
        a.shape().to_vec(),
        dtype,
        Softmax { axes, precise },
        vec![a.astype(dtype)?],
    ))
}

impl Array {
    /// Method form of [`logsumexp`].
    ///
    /// ```
    /// let a = ferrox::zeros(&[4], ferrox::DType::Float32)?;
    /// assert!((a.logsumexp(None, false)?.item::<f32>()? - 4f32.ln()).abs() < 1e-6);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn logsumexp(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
        logsumexp(self, axes, keepdims)
    }
    /// Method form of [`softmax`].
    ///
    /// ```
    /// let a = ferrox::zeros(&[4], ferrox::DType::Float16)?;
    /// let s = a.softmax(None, true)?;
    /// assert_eq!(s.to_vec::<half::f16>()?, vec![half::f16::from_f32(0.25); 4]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn softmax(&self, axes: Option<&[isize]>, precise: bool) -> Result<Array> {
        softmax(self, axes, precise)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Element;
    use crate::graph::storage::{Pod, Storage};
    use half::bf16;

    fn softmax_ref(row: &[f64]) -> Vec<f64> {
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = row.iter().map(|x| (x - m).exp()).collect();
        let s: f64 = e.iter().sum();
        e.iter().map(|x| x / s).collect()
    }

    fn eval_view<T: Pod + Element>(
        prim: &dyn Primitive,
        values: &[T],
        shape: &[usize],
        strides: Vec<isize>,
        out_shape: &[usize],
    ) -> Vec<T> {
        let mut st = Storage::new(std::mem::size_of_val(values), false).unwrap();
        st.as_mut_slice::<T>().copy_from_slice(values);
        let data = Data {
            storage: std::sync::Arc::new(st),
            strides,
            offset: 0,
        };
        let x = Operand {
            data: &data,
            shape,
            dtype: T::DTYPE,
        };
        prim.eval_cpu(
            &[x],
            OutSpec {
                shape: out_shape,
                dtype: T::DTYPE,
            },
        )
        .unwrap()
        .to_vec::<T>(out_shape)
    }

    #[test]
    fn softmax_matches_reference_on_every_path() {
        // 3 x 130: rows longer than one block plus a tail.
        let (r, c) = (3, 130);
        let v: Vec<f32> = (0..r * c)
            .map(|i| ((i * 37) % 101) as f32 / 7.0 - 6.0)
            .collect();
        let a = Array::from_slice(&v, &[r, c]).unwrap();
        let last = softmax(&a, Some(&[1]), false)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let first = softmax(&a, Some(&[0]), false)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        for i in 0..r {
            let row: Vec<f64> = v[i * c..(i + 1) * c].iter().map(|&x| x as f64).collect();
            for (j, w) in softmax_ref(&row).into_iter().enumerate() {
                assert!((last[i * c + j] as f64 - w).abs() < 1e-6, "row {i} col {j}");
            }
        }
        for j in 0..c {
            let col: Vec<f64> = (0..r).map(|i| v[i * c + j] as f64).collect();
            for (i, w) in softmax_ref(&col).into_iter().enumerate() {
                assert!(
                    (first[i * c + j] as f64 - w).abs() < 1e-6,
                    "col {j} row {i}"
                );
            }
        }
        let all = softmax(&a, None, false).unwrap().to_vec::<f32>().unwrap();
        let flat: Vec<f64> = v.iter().map(|&x| x as f64).collect();
        for (g, w) in all.iter().zip(softmax_ref(&flat)) {
            assert!((*g as f64 - w).abs() < 1e-7);
        }
    }

    #[test]
    fn softmax_of_a_transposed_view() {
        // Storage: 2 x 3 row-major; the view is its 3 x 2 transpose.
        let m = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let got = eval_view(
            &Softmax {
                axes: vec![1],
                precise: false,
            },
            &m,
            &[3, 2],
            vec![1, 3],
            &[3, 2],
        );
        for i in 0..3 {
            let w = softmax_ref(&[m[i] as f64, m[3 + i] as f64]);
            assert!(
                (got[2 * i] as f64 - w[0]).abs() < 1e-6
                    && (got[2 * i + 1] as f64 - w[1]).abs() < 1e-6
            );
        }
        let lse = eval_view(
            &LogSumExp {
                axes: vec![0],
                keepdims: false,
            },
            &m,
            &[3, 2],
            vec![1, 3],
            &[2],
        );
        let want = (1f64.exp() + 2f64.exp() + 3f64.exp()).ln();
        assert!((lse[0] as f64 - want).abs() < 1e-5);
    }

    #[test]
    fn special_values() {
        let a = Array::from_slice(
            &[f32::NEG_INFINITY, 0.0, f32::NEG_INFINITY, f32::NEG_INFINITY],
            &[2, 2],
        )
        .unwrap();
        let s = softmax(&a, Some(&[1]), false)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert_eq!(&s[..2], &[0.0, 1.0]);
        assert!(s[2].is_nan() && s[3].is_nan()); // numpy: 0/0
        let l = logsumexp(&a, Some(&[1]), false)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert_eq!(l, vec![0.0, f32::NEG_INFINITY]);
        let b = Array::from_slice(&[f32::INFINITY, 1.0, f32::NAN, 1.0], &[2, 2]).unwrap();
        let l = logsumexp(&b, Some(&[1]), false)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert!(l[0] == f32::INFINITY && l[1].is_nan());
        let e = crate::ops::creation::zeros(&[0, 3], DType::Float32).unwrap();
        assert_eq!(
            logsumexp(&e, Some(&[0]), false)
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
            vec![f32::NEG_INFINITY; 3]
        );
        assert_eq!(softmax(&e, None, false).unwrap().shape(), &[0, 3]);
    }

    #[test]
    fn dtypes() {
        let i = Array::from_slice(&[1i32, 2, 3], &[3]).unwrap();
        assert_eq!(softmax(&i, None, false).unwrap().dtype(), DType::Float32);
        assert_eq!(logsumexp(&i, None, true).unwrap().shape(), &[1]);
        let h = Array::from_slice(&[bf16::from_f32(1.0), bf16::from_f32(2.0)], &[2]).unwrap();
        let s = softmax(&h, None, true).unwrap();
        assert_eq!(s.dtype(), DType::BFloat16);
        let w = softmax_ref(&[1.0, 2.0]);
        let got = s.to_vec::<bf16>().unwrap();
        assert!((got[1].to_f64() - w[1]).abs() < 4e-3);
        let c = crate::ops::creation::zeros(&[2], DType::Complex64).unwrap();
        assert!(
            softmax(&c, None, false)
                .unwrap_err()
                .to_string()
                .starts_with("softmax:")
        );
        assert!(logsumexp(&c, None, false).is_err());
        assert!(softmax(&i, Some(&[1]), false).is_err());
    }

    #[test]
    fn large_rows_run_in_parallel_and_sum_to_one() {
        let (r, c) = (64, 4099);
        let v: Vec<f64> = (0..r * c)
            .map(|i| ((i * 7919) % 1000) as f64 / 100.0)
            .collect();
        let a = Array::from_slice(&v, &[r, c]).unwrap();
        let s = softmax(&a, Some(&[-1]), false)
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        for row in s.chunks(c) {
            assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
        let l = logsumexp(&a, Some(&[-1]), false)
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        for (i, &g) in l.iter().enumerate() {
            let row = &v[i * c..(i + 1) * c];
            let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let want = m + row.iter().map(|x| (x - m).exp()).sum::<f64>().ln();
            assert!((g - want).abs() < 1e-12);
        }
    }
}
