//! `rope`: rotary positional embeddings as one primitive
//! ([`crate::backend::cpu::fast::rope`]). The rotation is linear in the
//! input, so its vjp is the inverse rotation of the cotangent and its jvp
//! the rotation of the tangent.

use crate::backend::cpu::fast::rope::{self as kernel, RopeSpec};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive, no_rule};
use crate::ops::binary::{add, multiply, subtract};
use crate::ops::cast::astype;
use crate::ops::creation::arange;
use crate::ops::join::{concatenate, stack};
use crate::ops::unary::{cos, reciprocal, sin};
use crate::ops::views::{expand_dims, moveaxis, reshape, slice};

/// The position of the first row: one for all, or one per batch element.
#[derive(Debug, Clone)]
pub enum RopeOffset<'a> {
    /// The same offset for every batch element.
    Scalar(i64),
    /// An integer array: a scalar or one offset per batch element (`[B]`).
    Array(&'a Array),
}

/// The primitive of [`rope`]; inputs `[x, offset (int32), freqs (float32)?]`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rope {
    /// Leading features rotated.
    pub dims: usize,
    /// Rotate consecutive pairs instead of the two halves.
    pub traditional: bool,
    /// The frequency base (unused when `freqs` is an input).
    pub base: f32,
    /// Scale of the positions.
    pub scale: f32,
    /// `false`: the inverse rotation.
    pub forward: bool,
}

impl crate::graph::export::Exportable for Rope {
    const KIND: &'static str = "rope";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let (x, offset, freqs) = match inputs {
            [x, o] => (x, o, None),
            [x, o, f] => (x, o, Some(f)),
            _ => return Err(crate::graph::export::wrong_inputs("rope", inputs.len())),
        };
        let base = freqs.is_none().then_some(self.base);
        let y = rope(
            x,
            self.dims,
            self.traditional,
            base,
            self.scale,
            RopeOffset::Array(offset),
            freqs,
        )?;
        if self.forward
            || y.primitive()
                .and_then(|p| p.as_any().downcast_ref::<Rope>())
                .is_none()
        {
            return Ok(y);
        }
        // The inverse rotation (a derivative's), on the validated inputs.
        Ok(Array::from_op(
            y.shape().to_vec(),
            y.dtype(),
            self.clone(),
            y.inputs(),
        ))
    }
}

impl Rope {
    fn spec(&self) -> RopeSpec {
        RopeSpec {
            dims: self.dims,
            traditional: self.traditional,
            base: self.base,
            scale: self.scale,
            forward: self.forward,
        }
    }

    /// This rotation (or its inverse) of `x` with the node's other inputs.
    fn apply(&self, x: &Array, rest: &[Array], forward: bool) -> Result<Array> {
        let op = Rope {
            forward,
            ..self.clone()
        };
        let mut inputs = vec![x.clone()];
        inputs.extend(rest.iter().cloned());
        Ok(Array::from_op(x.shape().to_vec(), x.dtype(), op, inputs))
    }
}

/// Rotary positional encoding of `a` (`[B, ..., T, D]`), as
/// `mlx.core.fast.rope`: the leading `dims` features of the row at position
/// `t` are rotated in pairs by the angles `(t + offset) * scale * f_i`, with
/// `f_i = base^(-i / (dims/2))` or `1 / freqs[i]`. `traditional` pairs
/// features `(2i, 2i+1)`; otherwise `(i, i + dims/2)`. Exactly one of
/// `base` and `freqs` is given.
///
/// ```
/// use ferrox::*;
/// let x = ones(&[1, 1, 2, 2], DType::Float32)?;
/// let y = fast::rope(&x, 2, false, Some(10000.0), 1.0, fast::RopeOffset::Scalar(0), None)?;
/// let v = y.to_vec::<f32>()?;
/// // Position 0 is not rotated; position 1 is rotated by one radian.
/// assert_eq!(&v[..2], &[1.0, 1.0]);
/// assert!((v[2] - (1f32.cos() - 1f32.sin())).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn rope(
    a: &Array,
    dims: usize,
    traditional: bool,
    base: Option<f32>,
    scale: f32,
    offset: RopeOffset<'_>,
    freqs: Option<&Array>,
) -> Result<Array> {
    let name = "rope";
    if a.ndim() < 3 {
        return Err(Error::shape(
            name,
            format!(
                "the input must have at least 3 dimensions, got shape {:?}",
                a.shape()
            ),
        ));
    }
    if !a.dtype().is_float() {
        return Err(Error::dtype(
            name,
            format!("the input must be a float, got {}", a.dtype()),
        ));
    }
    let d = a.shape()[a.ndim() - 1];
    if dims == 0 || dims % 2 != 0 || dims > d {
        return Err(Error::value(
            name,
            format!("dims must be positive, even and at most the last dimension {d}, got {dims}"),
        ));
    }
    let offset = match offset {
        RopeOffset::Scalar(o) => {
            let o = i32::try_from(o)
                .map_err(|_| Error::value(name, format!("offset {o} does not fit in int32")))?;
            Array::scalar(o)
        }
        RopeOffset::Array(o) => {
            if !o.dtype().is_integer() {
                return Err(Error::dtype(
                    name,
                    format!("offset must be an integer, got {}", o.dtype()),
                ));
            }
            if o.ndim() > 1 || (o.size() != 1 && o.size() != a.shape()[0]) {
                return Err(Error::shape(
                    name,
                    format!(
                        "offset must be a scalar or a vector of {} (the batch size), got shape {:?}",
                        a.shape()[0],
                        o.shape()
                    ),
                ));
            }
            astype(o, DType::Int32)?
        }
    };
    let mut inputs = vec![a.clone(), offset];
    let base = match (base, freqs) {
        (Some(b), None) => b,
        (None, Some(f)) => {
            if f.ndim() != 1 || f.shape()[0] != dims / 2 {
                return Err(Error::shape(
                    name,
                    format!(
                        "freqs must be one-dimensional with {} elements, got shape {:?}",
                        dims / 2,
                        f.shape()
                    ),
                ));
            }
            inputs.push(astype(f, DType::Float32)?);
            0.0
        }
        (Some(_), Some(_)) => {
            return Err(Error::value(
                name,
                "only one of base and freqs can be given",
            ));
        }
        (None, None) => return Err(Error::value(name, "one of base and freqs must be given")),
    };
    let op = Rope {
        dims,
        traditional,
        base,
        scale,
        forward: true,
    };
    if a.dtype() == DType::Float64 {
        return reference(&op, &inputs);
    }
    Ok(Array::from_op(a.shape().to_vec(), a.dtype(), op, inputs))
}

/// The rotation composed of ops (float64 inputs; the tests' reference).
pub(crate) fn reference(op: &Rope, inputs: &[Array]) -> Result<Array> {
    let x = &inputs[0];
    let dtype = x.dtype();
    let shape = x.shape().to_vec();
    let nd = shape.len();
    let (t, d, half) = (shape[nd - 2], shape[nd - 1], op.dims / 2);
    // x as [B, M, T, D]; M spelled out, since -1 is ambiguous when empty.
    let m: usize = shape[1..nd - 2].iter().product();
    let x4 = reshape(x, &[shape[0], m, t, d].map(|n| n as isize))?;
    let offset = astype(&inputs[1], DType::Float32)?;
    let offset = if offset.size() > 1 {
        reshape(&offset, &[-1, 1, 1])?
    } else {
        offset
    };
    let positions = multiply(
        &add(&arange(0.0, t as f64, 1.0, DType::Float32)?, &offset)?,
        &Array::scalar(op.scale),
    )?;
    let inv = match inputs.get(2) {
        Some(f) => reciprocal(f)?,
        None => {
            let k = -(op.base.ln()) / half as f32;
            crate::ops::unary::exp(&multiply(
                &arange(0.0, half as f64, 1.0, DType::Float32)?,
                &Array::scalar(k),
            )?)?
        }
    };
    // theta: [T, half] or [B, 1, T, half].
    let theta = multiply(&expand_dims(&positions, &[-1])?, &inv)?;
    let (c, mut s) = (astype(&cos(&theta)?, dtype)?, astype(&sin(&theta)?, dtype)?);
    if !op.forward {
        s = crate::ops::unary::negative(&s)?;
    }
    let (b, m) = (shape[0] as isize, m as isize);
    let (ti, di) = (t as isize, op.dims as isize);
    let part = |start: isize, step: isize, stop: isize| {
        slice(&x4, &[0, 0, 0, start], &[b, m, ti, stop], &[1, 1, 1, step])
    };
    let (x1, x2) = if op.traditional {
        (part(0, 2, di)?, part(1, 2, di)?)
    } else {
        (part(0, 1, di / 2)?, part(di / 2, 1, di)?)
    };
    let y1 = subtract(&multiply(&x1, &c)?, &multiply(&x2, &s)?)?;
    let y2 = add(&multiply(&x1, &s)?, &multiply(&x2, &c)?)?;
    let mut rotated = if op.traditional {
        reshape(&stack(&[y1, y2], -1)?, &[b, m, ti, di])?
    } else {
        concatenate(&[y1, y2], -1)?
    };
    if op.dims < d {
        rotated = concatenate(&[rotated, part(di, 1, d as isize)?], -1)?;
    }
    let out: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
    reshape(&rotated, &out)
}

impl Primitive for Rope {
    fn name(&self) -> &'static str {
        "rope"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        kernel::rope(&inputs[0], &inputs[1], inputs.get(2), self.spec(), out)
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        input_shapes.first().map(|s| Ok(s.to_vec()))
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        argnums
            .iter()
            .map(|&i| match i {
                0 => self.apply(g, &p[1..], !self.forward),
                _ => Err(no_rule("rope (offset or freqs)", "vjp")),
            })
            .collect()
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        if tangents.get(2).is_some_and(Option::is_some) {
            return Err(no_rule("rope (freqs)", "jvp"));
        }
        match tangents.first().cloned().flatten() {
            Some(t) => self.apply(&t, &p[1..], self.forward),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    /// The batch axis of `x` goes to position 1, after the axis the
    /// offsets index; batched offsets or frequencies are not supported.
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        if axes.iter().skip(1).any(Option::is_some) {
            return Err(no_rule("rope (batched offset or freqs)", "vmap"));
        }
        let Some(ax) = axes.first().copied().flatten() else {
            return Ok((self.apply(&inputs[0], &inputs[1..], self.forward)?, None));
        };
        let x = moveaxis(&inputs[0], ax as isize, 1)?;
        Ok((self.apply(&x, &inputs[1..], self.forward)?, Some(1)))
    }
    crate::primitive_common!();
}
