//! Dtype conversion: `astype` (value conversion) and `view` (bit reinterpretation).
//!
//! The kernels are in [`crate::backend::cpu::cast`].

use crate::backend::cpu::cast;
use crate::graph::layout::checked_numel;
// The element conversion is the kernels'; its public path stays here.
pub use crate::backend::cpu::cast::convert;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};

/// Converts values to another dtype.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AsType {
    /// The target dtype.
    pub dtype: DType,
}

impl crate::graph::export::Exportable for AsType {
    const KIND: &'static str = "astype";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, "astype")?;
        astype(x, self.dtype)
    }
}

impl Primitive for AsType {
    fn is_elementwise(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "astype"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        cast::astype(&inputs[0], out)
    }
    fn vjp(
        &self,
        primals: &[Array],
        cotangent: &Array,
        _o: &Array,
        _argnums: &[usize],
    ) -> Result<Vec<Array>> {
        Ok(vec![cotangent.astype(primals[0].dtype())?])
    }
    fn jvp(&self, _p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match &tangents[0] {
            Some(t) => t.astype(output.dtype()),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        Ok((inputs[0].astype(self.dtype)?, axes[0]))
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        input_shapes.first().map(|s| Ok(s.to_vec()))
    }
    crate::primitive_common!();
}

/// `a` converted to `dtype`. Converting to the same dtype returns `a` itself.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.7f32, -2.5], &[2])?;
/// assert_eq!(ferrox::astype(&a, ferrox::DType::Int32)?.to_vec::<i32>()?, vec![1, -2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn astype(a: &Array, dtype: DType) -> Result<Array> {
    if a.dtype() == dtype {
        return Ok(a.clone());
    }
    if let (DType::Float64, Some(exact)) = (dtype, a.weak_exact()) {
        return Ok(Array::scalar(exact));
    }
    Ok(Array::from_op(
        a.shape().to_vec(),
        dtype,
        AsType { dtype },
        vec![a.clone()],
    ))
}

impl Array {
    /// Method form of [`astype`].
    ///
    /// ```
    /// let a = ferrox::ones(&[2], ferrox::DType::Float32)?.astype(ferrox::DType::Float16)?;
    /// assert_eq!(a.dtype(), ferrox::DType::Float16);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn astype(&self, dtype: DType) -> Result<Array> {
        astype(self, dtype)
    }

    /// Method form of [`view`].
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[1.0f32], &[1])?;
    /// assert_eq!(a.view(ferrox::DType::UInt32)?.to_vec::<u32>()?, vec![0x3f80_0000]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn view(&self, dtype: DType) -> Result<Array> {
        view(self, dtype)
    }
}

/// Reinterprets the bytes of its input as another dtype.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct View {
    /// The dtype the bytes are read as.
    pub dtype: DType,
}

impl crate::graph::export::Exportable for View {
    const KIND: &'static str = "view";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, "view")?;
        view(x, self.dtype)
    }
}

impl Primitive for View {
    fn name(&self) -> &'static str {
        "view"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let [x] = inputs else {
            return Err(Error::runtime(
                "view",
                format!("expected 1 input, got {}", inputs.len()),
            ));
        };
        cast::view(x, out)
    }
    /// Reinterpreting bits is not differentiable: a clear error.
    fn vjp(&self, _p: &[Array], _g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        Err(Error::unsupported(
            "view",
            "no vjp rule: reinterpreting bits is not differentiable",
        ))
    }
    fn jvp(&self, _p: &[Array], _t: &[Option<Array>], _o: &Array) -> Result<Array> {
        Err(Error::unsupported(
            "view",
            "no jvp rule: reinterpreting bits is not differentiable",
        ))
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let Some(ax) = axes[0] else {
            return Ok((view(&inputs[0], self.dtype)?, None));
        };
        // The last axis changes length: keep the batch axis away from it.
        let x = crate::ops::grad_helpers::batch_front(&inputs[0], Some(ax))?;
        if x.ndim() == 1 && self.dtype.size() != x.dtype().size() {
            return Err(Error::shape(
                "view",
                "a 0-d example can only be viewed as a type of the same size",
            ));
        }
        Ok((view(&x, self.dtype)?, Some(0)))
    }
    crate::primitive_common!();
}

/// The bytes of `a` read as `dtype` (MLX's `view`; numpy's `ndarray.view`).
///
/// With equal element sizes the shape is unchanged; otherwise the last axis
/// scales by the size ratio, and viewing as a wider type needs a last axis
/// whose byte length is a multiple of the new element size. A 0-d array can
/// only be viewed as a type of its own size. Viewing as bool maps each
/// non-zero byte to `true` (a bool must hold 0 or 1). No copy is made when
/// the element sizes match or the input is contiguous; otherwise the bytes
/// are copied into row-major order first.
///
/// ```
/// use ferrox::{view, Array, DType};
/// let a = Array::from_slice(&[1.0f32, -2.0], &[2])?;
/// let bits = view(&a, DType::UInt16)?;
/// assert_eq!(bits.shape(), &[4]);
/// assert_eq!(bits.to_vec::<u16>()?, vec![0, 0x3f80, 0, 0xc000]);
/// assert!(view(&Array::from_slice(&[1u8, 2, 3], &[3])?, DType::Int16).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn view(a: &Array, dtype: DType) -> Result<Array> {
    if a.dtype() == dtype {
        return Ok(a.clone());
    }
    let (from, to) = (a.dtype().size(), dtype.size());
    let mut shape = a.shape().to_vec();
    match shape.last_mut() {
        None if from != to => {
            return Err(Error::shape(
                "view",
                format!(
                    "a 0-d array of {} ({from} bytes) can only be viewed as a type of the same size, not {dtype} ({to} bytes)",
                    a.dtype()
                ),
            ));
        }
        None => {}
        Some(last) if from < to => {
            if (*last * from) % to != 0 {
                return Err(Error::shape(
                    "view",
                    format!(
                        "the last axis of shape {:?} holds {} bytes of {}, not a multiple of the {to}-byte {dtype}",
                        a.shape(),
                        *last * from,
                        a.dtype()
                    ),
                ));
            }
            *last = *last * from / to;
        }
        Some(last) => *last *= from / to,
    }
    checked_numel("view", &shape)?;
    Ok(Array::from_op(
        shape,
        dtype,
        View { dtype },
        vec![a.clone()],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Complex64;
    use crate::dtype::Element;
    use crate::error::ErrorKind;
    use crate::graph::storage::{Pod, Storage};
    use crate::with_dtype;
    use half::{bf16, f16};
    use std::sync::Arc;

    fn arr<T: Element + Pod>(v: &[T], shape: &[usize]) -> Array {
        Array::from_slice(v, shape).unwrap()
    }

    /// Values every dtype holds exactly, as f64.
    const SMALL: [f64; 5] = [0.0, 1.0, 2.0, 5.0, 100.0];

    #[test]
    fn small_values_survive_every_dtype_pair() {
        for from in DType::ALL {
            for to in DType::ALL {
                let src = with_dtype!(from, T => arr(&SMALL.map(T::from_f64), &[5]));
                let got = src.astype(to).unwrap();
                assert_eq!(got.dtype(), to);
                let want: Vec<f64> = SMALL
                    .iter()
                    .map(|&v| {
                        if to == DType::Bool || from == DType::Bool {
                            (v != 0.0) as u8 as f64
                        } else {
                            v
                        }
                    })
                    .collect();
                let vals: Vec<f64> = with_dtype!(to, U => got.to_vec::<U>().unwrap().into_iter().map(|v| v.to_f64()).collect());
                assert_eq!(vals, want, "{from} -> {to}");
            }
        }
    }

    #[test]
    fn integers_wrap_and_floats_truncate() {
        let a = arr(&[300i32, -1, 70000, -129], &[4]);
        assert_eq!(
            a.astype(DType::Int8).unwrap().to_vec::<i8>().unwrap(),
            vec![44, -1, 112, 127]
        );
        assert_eq!(
            a.astype(DType::UInt8).unwrap().to_vec::<u8>().unwrap(),
            vec![44, 255, 112, 127]
        );
        assert_eq!(
            a.astype(DType::UInt16).unwrap().to_vec::<u16>().unwrap(),
            vec![300, 65535, 4464, 65407]
        );
        let u = arr(&[u64::MAX, 1 << 63], &[2]);
        assert_eq!(
            u.astype(DType::Int64).unwrap().to_vec::<i64>().unwrap(),
            vec![-1, i64::MIN]
        );
        let f = arr(&[1.9f32, -1.9, 126.99, -0.5], &[4]);
        assert_eq!(
            f.astype(DType::Int8).unwrap().to_vec::<i8>().unwrap(),
            vec![1, -1, 126, 0]
        );
        // Out of range float -> int saturates (numpy's result is platform-defined).
        let big = arr(&[1e10f64, -1e10, f64::NAN], &[3]);
        assert_eq!(
            big.astype(DType::Int32).unwrap().to_vec::<i32>().unwrap(),
            vec![i32::MAX, i32::MIN, 0]
        );
        assert_eq!(
            big.astype(DType::UInt8).unwrap().to_vec::<u8>().unwrap(),
            vec![255, 0, 0]
        );
    }

    #[test]
    fn special_conversions() {
        let f = arr(&[f32::NAN, 0.0, -0.0, 0.1], &[4]);
        assert_eq!(
            f.astype(DType::Bool).unwrap().to_vec::<bool>().unwrap(),
            vec![true, false, false, true]
        );
        let c = arr(
            &[
                Complex64::new(2.5, -1.0),
                Complex64::new(0.0, 3.0),
                Complex64::new(0.0, 0.0),
            ],
            &[3],
        );
        assert_eq!(
            c.astype(DType::Float32).unwrap().to_vec::<f32>().unwrap(),
            vec![2.5, 0.0, 0.0]
        );
        assert_eq!(
            c.astype(DType::Int16).unwrap().to_vec::<i16>().unwrap(),
            vec![2, 0, 0]
        );
        assert_eq!(
            c.astype(DType::Bool).unwrap().to_vec::<bool>().unwrap(),
            vec![true, true, false]
        );
        let h = arr(&[70000.0f64, 1.0 / 3.0], &[2])
            .astype(DType::Float16)
            .unwrap();
        assert_eq!(
            h.to_vec::<f16>().unwrap(),
            vec![f16::INFINITY, f16::from_f64(1.0 / 3.0)]
        );
        // int64 -> float32 rounds once (through f64 it would round twice).
        let x = (1i64 << 62) + (1 << 38) + 1;
        let r = arr(&[x], &[1])
            .astype(DType::Float32)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert_eq!(r, vec![x as f32]);
        let b = arr(&[bf16::from_f32(1.5)], &[1])
            .astype(DType::Complex64)
            .unwrap();
        assert_eq!(
            b.to_vec::<Complex64>().unwrap(),
            vec![Complex64::new(1.5, 0.0)]
        );
    }

    #[test]
    fn block_conversions_match_element_conversions() {
        // Specials, subnormals, ties and overflow; large enough to split.
        let mut v: Vec<f32> = vec![
            0.0,
            -0.0,
            f32::NAN,
            f32::INFINITY,
            -f32::INFINITY,
            65504.0,
            65520.0,
            1e-8,
            6e-8,
            1.0 + 2f32.powi(-11), // ties: round to even
            1.0 + 3.0 * 2f32.powi(-11),
            3.0e38,
        ];
        v.extend((0..70_000).map(|i| (i as f32 - 35_000.0) * 0.37));
        let a = arr(&v, &[v.len()]);
        let h = a.astype(DType::Float16).unwrap().to_vec::<f16>().unwrap();
        let b = a.astype(DType::BFloat16).unwrap().to_vec::<bf16>().unwrap();
        for (i, &x) in v.iter().enumerate() {
            let (eh, eb) = (convert::<f32, f16>(x), convert::<f32, bf16>(x));
            assert!(
                h[i].to_bits() == eh.to_bits() || (h[i].is_nan() && eh.is_nan()),
                "f16 {x}"
            );
            assert!(
                b[i].to_bits() == eb.to_bits() || (b[i].is_nan() && eb.is_nan()),
                "bf16 {x}"
            );
        }
        let back = arr(&h, &[h.len()])
            .astype(DType::Float32)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        for (i, &x) in h.iter().enumerate() {
            let e = convert::<f16, f32>(x);
            assert!(
                back[i] == e || (back[i].is_nan() && e.is_nan()),
                "f16 -> f32 {x}"
            );
        }
        let back = arr(&b, &[b.len()])
            .astype(DType::Float32)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert!(
            back.iter()
                .zip(&b)
                .all(|(&y, &x)| y == x.to_f32() || (y.is_nan() && x.is_nan()))
        );
        // Strided inputs take the element path.
        let t = operand_data(&[1.5f32, 2.5, -3.0], vec![-1], 2);
        let x = Operand {
            data: &t,
            shape: &[3],
            dtype: DType::Float32,
        };
        let out = AsType {
            dtype: DType::Float16,
        }
        .eval_cpu(
            &[x],
            OutSpec {
                shape: &[3],
                dtype: DType::Float16,
            },
        )
        .unwrap();
        assert_eq!(
            out.to_vec::<f16>(&[3]),
            vec![f16::from_f32(-3.0), f16::from_f32(2.5), f16::from_f32(1.5)]
        );
    }

    #[test]
    fn view_reinterprets_bits() {
        let a = arr(&[1.0f32, -2.0], &[2]);
        assert_eq!(
            view(&a, DType::Int32).unwrap().to_vec::<i32>().unwrap(),
            vec![0x3f80_0000, 0xc000_0000u32 as i32]
        );
        let bytes = view(&a, DType::UInt8).unwrap();
        assert_eq!(bytes.shape(), &[8]);
        assert_eq!(
            bytes.to_vec::<u8>().unwrap(),
            vec![0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0]
        );
        let back = view(&bytes, DType::Float32).unwrap();
        assert_eq!(back.to_vec::<f32>().unwrap(), vec![1.0, -2.0]);
        let c = view(&arr(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]), DType::Complex64).unwrap();
        assert_eq!(c.shape(), &[2, 1]);
        assert_eq!(
            c.to_vec::<Complex64>().unwrap(),
            vec![Complex64::new(1.0, 2.0), Complex64::new(3.0, 4.0)]
        );
        let s = view(&arr(&[1.0f32], &[]), DType::UInt32).unwrap();
        assert_eq!(
            (s.shape(), s.item::<u32>().unwrap()),
            (&[][..], 0x3f80_0000)
        );
        assert_eq!(view(&a, DType::Float32).unwrap().id(), a.id());
        let empty = view(
            &crate::ops::creation::zeros(&[3, 0], DType::Float64).unwrap(),
            DType::Int16,
        )
        .unwrap();
        assert_eq!(empty.shape(), &[3, 0]);
        assert_eq!(empty.to_vec::<i16>().unwrap(), Vec::<i16>::new());
    }

    #[test]
    fn view_to_bool_normalises() {
        let a = arr(&[0u8, 1, 2, 255], &[4]);
        let b = view(&a, DType::Bool).unwrap();
        assert_eq!(b.to_vec::<bool>().unwrap(), vec![false, true, true, true]);
        let w = view(&arr(&[0x0100i16], &[1]), DType::Bool).unwrap();
        assert_eq!(w.to_vec::<bool>().unwrap(), vec![false, true]);
        let t = view(&arr(&[true, false], &[2]), DType::UInt8).unwrap();
        assert_eq!(t.to_vec::<u8>().unwrap(), vec![1, 0]);
    }

    #[test]
    fn view_shape_errors() {
        let e = view(&arr(&[1u8, 2, 3], &[3]), DType::Int16).unwrap_err();
        assert_eq!((e.kind(), e.op()), (ErrorKind::Shape, "view"));
        assert!(
            e.message().contains("[3]") && e.message().contains("int16"),
            "{e}"
        );
        let e = view(&arr(&[1.0f64], &[]), DType::Float32).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Shape);
        assert!(e.message().contains("0-d"), "{e}");
        assert!(view(&arr(&[1u8, 2], &[1, 2]), DType::Int16).is_ok());
    }

    fn operand_data<T: Pod>(storage_values: &[T], strides: Vec<isize>, offset: usize) -> Data {
        let mut s = Storage::new(std::mem::size_of_val(storage_values), false).unwrap();
        s.as_mut_slice::<T>().copy_from_slice(storage_values);
        Data {
            storage: Arc::new(s),
            strides,
            offset,
        }
    }

    #[test]
    fn view_of_strided_inputs() {
        // [[1, 2], [3, 4]] stored transposed: logical rows are (1, 2), (3, 4).
        let t = operand_data(&[1u16, 3, 2, 4], vec![1, 2], 0);
        let x = Operand {
            data: &t,
            shape: &[2, 2],
            dtype: DType::UInt16,
        };
        let out = View {
            dtype: DType::UInt32,
        }
        .eval_cpu(
            &[x],
            OutSpec {
                shape: &[2, 1],
                dtype: DType::UInt32,
            },
        )
        .unwrap();
        assert_eq!(out.to_vec::<u32>(&[2, 1]), vec![1 | 2 << 16, 3 | 4 << 16]);
        // Same size: strides are kept, nothing is copied.
        let same = View {
            dtype: DType::Int16,
        }
        .eval_cpu(
            &[x],
            OutSpec {
                shape: &[2, 2],
                dtype: DType::Int16,
            },
        )
        .unwrap();
        assert!(Arc::ptr_eq(&same.storage, &t.storage));
        assert_eq!(same.to_vec::<i16>(&[2, 2]), vec![1, 2, 3, 4]);
        // Narrower, reversed.
        let r = operand_data(&[0x0102u16, 0x0304], vec![-1], 1);
        let x = Operand {
            data: &r,
            shape: &[2],
            dtype: DType::UInt16,
        };
        let out = View {
            dtype: DType::UInt8,
        }
        .eval_cpu(
            &[x],
            OutSpec {
                shape: &[4],
                dtype: DType::UInt8,
            },
        )
        .unwrap();
        assert_eq!(out.to_vec::<u8>(&[4]), vec![4, 3, 2, 1]);
        let out = View { dtype: DType::Bool }
            .eval_cpu(
                &[x],
                OutSpec {
                    shape: &[4],
                    dtype: DType::Bool,
                },
            )
            .unwrap();
        assert_eq!(out.to_vec::<bool>(&[4]), vec![true; 4]);
        // Contiguous with an offset that is misaligned for the wider type.
        let o = operand_data(&[9u16, 1, 2], vec![1], 1);
        let x = Operand {
            data: &o,
            shape: &[2],
            dtype: DType::UInt16,
        };
        let out = View {
            dtype: DType::UInt32,
        }
        .eval_cpu(
            &[x],
            OutSpec {
                shape: &[1],
                dtype: DType::UInt32,
            },
        )
        .unwrap();
        assert_eq!(out.to_vec::<u32>(&[1]), vec![1 | 2 << 16]);
        // Aligned offset: shared storage.
        let o = operand_data(&[9u16, 9, 1, 2], vec![1], 2);
        let x = Operand {
            data: &o,
            shape: &[2],
            dtype: DType::UInt16,
        };
        let out = View {
            dtype: DType::UInt32,
        }
        .eval_cpu(
            &[x],
            OutSpec {
                shape: &[1],
                dtype: DType::UInt32,
            },
        )
        .unwrap();
        assert!(Arc::ptr_eq(&out.storage, &o.storage));
        assert_eq!(out.to_vec::<u32>(&[1]), vec![1 | 2 << 16]);
    }
}
