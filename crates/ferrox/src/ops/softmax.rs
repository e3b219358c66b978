//! softmax and logsumexp: one online pass per row for the running max and
//! the sum of exponentials, then (softmax only) one write pass.
//!
//! Inputs that are not floating point compute in `float32`; half floats
//! compute in `f32` and round once. Complex inputs are an error.

use super::reduce::reduced_shape;
use super::shape_rules::normalize_axes;
use crate::backend::cpu::elementwise::out_storage;
use crate::backend::cpu::half::HalfBlock;
use crate::backend::cpu::parallel::MIN_PAR_ELEMS;
use crate::backend::cpu::reduce::{
    Cursor, Dim, LogSumExpReducer, LseFloat, LseInput, MaxSumReducer, SOFTMAX_LANES, dispatch,
    reduce, softmax_row as softmax_row_kernel,
};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::{Data, for_each_offset, row_major_strides};
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;
use crate::graph::storage::Storage;
use half::{bf16, f16};
use pulp::{Simd, WithSimd};
use rayon::prelude::*;

/// The dtype softmax/logsumexp compute and return for an input dtype.
fn float_dtype(name: &str, dtype: DType) -> Result<DType> {
    match dtype {
        DType::Complex64 => Err(Error::dtype(name, "complex64 is not supported")),
        d if d.is_float() => Ok(d),
        _ => Ok(DType::Float32),
    }
}

/// Runs `$body` with `$T` bound to the Rust type of a float dtype.
macro_rules! with_float {
    ($name:expr, $dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::Float16 => {
                type $T = f16;
                $body
            }
            DType::BFloat16 => {
                type $T = bf16;
                $body
            }
            DType::Float32 => {
                type $T = f32;
                $body
            }
            DType::Float64 => {
                type $T = f64;
                $body
            }
            d => Err(Error::dtype(
                $name,
                format!("expected a float dtype, got {d}"),
            )),
        }
    };
}

/// `log(sum(exp(x)))` over `axes` (sorted, distinct).
#[derive(Debug, Clone, PartialEq)]
pub struct LogSumExp {
    /// The reduced axes, sorted.
    pub axes: Vec<usize>,
    /// Whether the output keeps the reduced axes as size 1.
    pub keepdims: bool,
}

impl Primitive for LogSumExp {
    fn name(&self) -> &'static str {
        "logsumexp"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        let mut st = out_storage(out)?;
        with_float!("logsumexp", x.dtype, T => reduce::<T, _>(x, &self.axes, &LogSumExpReducer, st.as_mut_slice::<T>()))?;
        Ok(Data::contiguous(st, out.shape))
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
        let g = grad_helpers::expand_reduced(g, &self.axes, self.keepdims, x.shape())?;
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
#[derive(Debug, Clone, PartialEq)]
pub struct Softmax {
    /// The normalised axes, sorted.
    pub axes: Vec<usize>,
    /// MLX's flag to accumulate half-float inputs in `f32`. The CPU kernels
    /// always compute half floats in `f32` (faster than emulated half
    /// arithmetic and at least as accurate), so it does not change results.
    pub precise: bool,
}

impl Primitive for Softmax {
    fn name(&self) -> &'static str {
        "softmax"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        let mut st = out_storage(out)?;
        with_float!("softmax", x.dtype, T => softmax_kernel::<T>(x, &self.axes, &mut st))?;
        Ok(Data::contiguous(st, out.shape))
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

/// Converting a float type to and from its compute type, a slice at a time.
trait Compute: LseInput {
    /// `xs` itself when it already is the compute type.
    fn as_compute(xs: &[Self]) -> Option<&[Self::F]>;
    /// `ys` itself when it already is the compute type.
    fn as_compute_mut(ys: &mut [Self]) -> Option<&mut [Self::F]>;
    /// Converts `xs` into `out` (same length).
    fn widen_into(xs: &[Self], out: &mut [Self::F]);
    /// Rounds `xs` into `out` (same length).
    fn narrow_into(xs: &[Self::F], out: &mut [Self]);
}

macro_rules! compute_native {($($t:ty),*) => {$(
    impl Compute for $t {
        fn as_compute(xs: &[$t]) -> Option<&[$t]> { Some(xs) }
        fn as_compute_mut(ys: &mut [$t]) -> Option<&mut [$t]> { Some(ys) }
        fn widen_into(xs: &[$t], out: &mut [$t]) { out.copy_from_slice(xs) }
        fn narrow_into(xs: &[$t], out: &mut [$t]) { out.copy_from_slice(xs) }
    }
)*}}
compute_native!(f32, f64);

macro_rules! compute_half {($($t:ty),*) => {$(
    impl Compute for $t {
        fn as_compute(_: &[$t]) -> Option<&[f32]> { None }
        fn as_compute_mut(_: &mut [$t]) -> Option<&mut [f32]> { None }
        fn widen_into(xs: &[$t], out: &mut [f32]) {
            <$t as HalfBlock>::widen(xs, out)
        }
        fn narrow_into(xs: &[f32], out: &mut [$t]) {
            <$t as HalfBlock>::narrow(xs, out)
        }
    }
)*}}
compute_half!(f16, bf16);

/// Per-task scratch of the row kernel: converted rows (half floats) and
/// the kernel's block maxima.
struct Scratch<F> {
    xs: Vec<F>,
    ys: Vec<F>,
    maxima: Vec<[F; SOFTMAX_LANES]>,
}

impl<F> Scratch<F> {
    fn new() -> Self {
        Scratch {
            xs: Vec::new(),
            ys: Vec::new(),
            maxima: Vec::new(),
        }
    }
}

/// Softmax of one row into `out`; rows not already in the compute type are
/// converted through the scratch buffers.
fn softmax_row<T: Compute>(row: &[T], out: &mut [T], scratch: &mut Scratch<T::F>) {
    if let (Some(xs), Some(ys)) = (T::as_compute(row), T::as_compute_mut(out)) {
        softmax_row_kernel(xs, ys, &mut scratch.maxima);
        return;
    }
    scratch.xs.resize(row.len(), T::F::ZERO);
    scratch.ys.resize(row.len(), T::F::ZERO);
    T::widen_into(row, &mut scratch.xs);
    softmax_row_kernel(&scratch.xs, &mut scratch.ys, &mut scratch.maxima);
    T::narrow_into(&scratch.ys, out);
}

fn softmax_kernel<T: Compute>(x: &Operand<'_>, axes: &[usize], st: &mut Storage) -> Result<()> {
    let nd = x.shape.len();
    let n: usize = x.shape.iter().product();
    let dst = st.as_mut_slice::<T>();
    if n == 0 {
        return Ok(());
    }
    let trailing = axes
        .iter()
        .enumerate()
        .all(|(i, &a)| a == nd - axes.len() + i);
    if !trailing {
        softmax_any_axes::<T>(x, axes, dst);
        return Ok(());
    }
    // Rows are the trailing axes: output rows are contiguous and independent.
    let lead = nd - axes.len();
    let row_len: usize = x.shape[lead..].iter().product();
    let contiguous = x.data.as_contiguous::<T>(x.shape);
    let rows_per_task = MIN_PAR_ELEMS.div_ceil(row_len).max(1);
    let raw = x.data.raw::<T>();
    let (outer_shape, row_shape) = x.shape.split_at(lead);
    let (outer_strides, row_strides) = x.data.strides.split_at(lead);
    let task = |first_row: usize, out_rows: &mut [T]| {
        let mut scratch = Scratch::new();
        let mut gathered = Vec::new();
        for (i, out_row) in out_rows.chunks_mut(row_len).enumerate() {
            let r = first_row + i;
            match contiguous {
                Some(src) => {
                    softmax_row(&src[r * row_len..(r + 1) * row_len], out_row, &mut scratch)
                }
                None => {
                    // Gather the strided row, then the same kernel.
                    let mut base = x.data.offset as isize;
                    let mut rest = r;
                    for (&d, &s) in outer_shape.iter().zip(outer_strides).rev() {
                        base += (rest % d) as isize * s;
                        rest /= d;
                    }
                    gathered.clear();
                    for_each_offset(row_shape, row_strides, base as usize, |o| {
                        gathered.push(raw[o])
                    });
                    softmax_row(&gathered, out_row, &mut scratch);
                }
            }
        }
    };
    if n >= 2 * MIN_PAR_ELEMS && rayon::current_num_threads() > 1 {
        dst.par_chunks_mut(rows_per_task * row_len)
            .enumerate()
            .for_each(|(c, d)| task(c * rows_per_task, d));
    } else {
        task(0, dst);
    }
    Ok(())
}

/// Softmax over axes that are not the trailing ones: the `(max, sum)` of
/// every output row through the reduction engines, then one write pass.
fn softmax_any_axes<T: Compute>(x: &Operand<'_>, axes: &[usize], dst: &mut [T]) {
    let kept_shape = reduced_shape(x.shape, axes, false);
    let n_stats: usize = kept_shape.iter().product();
    let mut stats = vec![(T::F::NEG_INF, T::F::ZERO); n_stats];
    if reduce::<T, _>(x, axes, &MaxSumReducer, &mut stats).is_err() {
        // Unreachable: `stats` has exactly the kept size.
        return;
    }
    // (shift, 1 / sum) per row, as the write pass uses them.
    let coef: Vec<(T::F, T::F)> = stats
        .iter()
        .map(|&(m, s)| {
            (
                if m == T::F::NEG_INF { T::F::ZERO } else { m },
                T::F::ONE / s,
            )
        })
        .collect();
    let kept_strides = row_major_strides(&kept_shape);
    let mut k = 0;
    let mut input_dims = Vec::with_capacity(x.shape.len());
    let mut stat_dims = Vec::with_capacity(x.shape.len());
    for (d, (&n, &s)) in x.shape.iter().zip(&x.data.strides).enumerate() {
        input_dims.push(Dim { n, s });
        let stat_stride = if axes.contains(&d) {
            0
        } else {
            k += 1;
            kept_strides[k - 1]
        };
        stat_dims.push(Dim { n, s: stat_stride });
    }
    dispatch(WritePass {
        raw: x.data.raw::<T>(),
        input: Cursor::new(&input_dims, x.data.offset as isize, 0),
        stat: Cursor::new(&stat_dims, 0, 0),
        coef: &coef,
        out: dst,
    });
}

/// The write pass of [`softmax_any_axes`]: every element in row-major
/// order, with the `(shift, 1 / sum)` of its row.
struct WritePass<'a, T: LseInput> {
    raw: &'a [T],
    input: Cursor<'a>,
    stat: Cursor<'a>,
    coef: &'a [(T::F, T::F)],
    out: &'a mut [T],
}

impl<T: LseInput> WithSimd for WritePass<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let (mut input, mut stat) = (self.input, self.stat);
        for o in self.out.iter_mut() {
            let (sh, inv) = self.coef[stat.offset()];
            *o = T::narrow((self.raw[input.offset()].widen() - sh).exp() * inv);
            input.advance();
            stat.advance();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Element;
    use crate::graph::storage::Pod;

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
