//! Derivative and batching rules of the quantization primitives.
//!
//! `quantized_matmul` is linear in `x` and, for a fixed packed `w`, jointly
//! linear in the affine scales and biases (`W = s * q + b`), so its vjp and
//! jvp are quantized products again (MLX's rules); the packed codes are
//! integers and have no derivative. `dequantize` is likewise linear in the
//! scales and biases.

use super::{Dequantize, QuantMode, Quantize, QuantizedMatmul, dequantize, qmm_checked, quantize};
use crate::error::{Error, ErrorKind, Result};
use crate::graph::array::Array;
use crate::ops::creation::{ones_like, zeros_like};
use crate::ops::grad_helpers::{batch_front, pad_example_rank, sum_terms};
use crate::ops::matmul::matmul;
use crate::ops::reduce::sum;
use crate::ops::views::{broadcast_to, expand_dims, flatten, reshape, swapaxes};

/// The floating point modes' scales are uint8 codes: no derivative (a
/// value error, as MLX).
fn no_scale_gradient(op: &str, mode: QuantMode) -> Error {
    Error::value(
        op,
        format!(
            "no derivative with respect to the scales of '{}' quantization (uint8 codes)",
            mode.name()
        ),
    )
}

fn no_gradient(op: &str, what: &str) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        op,
        format!("no derivative with respect to {what}"),
    )
}

/// `x` (`[..., r, c]`) as `[..., r, c / gs, gs]`.
fn grouped(x: &Array, gs: usize) -> Result<Array> {
    let mut s: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
    let c = s.pop().unwrap_or(0);
    s.push(c / gs as isize);
    s.push(gs as isize);
    reshape(x, &s)
}

/// The codes of `w` as values (`dequantize(w, 1, 0)`), grouped.
fn codes(w: &Array, scales: &Array, gs: usize, bits: usize) -> Result<Array> {
    let q = dequantize(
        w,
        &ones_like(scales)?,
        Some(&zeros_like(scales)?),
        Some(gs),
        Some(bits),
        "affine",
        None,
        None,
    )?;
    grouped(&q, gs)
}

/// Cotangents of the affine scales and biases given `dw`, the cotangent of
/// the dequantized matrix: `sum(dw * q)` and `sum(dw)` over each group.
fn scale_bias_cotangents(
    dw: &Array,
    w: &Array,
    scales: &Array,
    gs: usize,
    bits: usize,
    want_scales: bool,
    want_biases: bool,
) -> Result<(Option<Array>, Option<Array>)> {
    let g = grouped(dw, gs)?;
    let gb = if want_biases {
        Some(sum(&g, Some(&[-1]), false)?.astype(scales.dtype())?)
    } else {
        None
    };
    let gsc = if want_scales {
        let q = codes(w, scales, gs, bits)?.astype(g.dtype())?;
        Some(
            sum(&crate::ops::binary::multiply(&g, &q)?, Some(&[-1]), false)?
                .astype(scales.dtype())?,
        )
    } else {
        None
    };
    Ok((gsc, gb))
}

// ---------------------------------------------------------------------------
// quantized_matmul
// ---------------------------------------------------------------------------

pub(super) fn qmm_vjp(
    p: &QuantizedMatmul,
    primals: &[Array],
    cot: &Array,
    argnums: &[usize],
) -> Result<Vec<Array>> {
    let op = "quantized_matmul";
    let (x, w, s) = (&primals[0], &primals[1], &primals[2]);
    let b = primals.get(3);
    let wants_sb = argnums.iter().any(|&a| a >= 2);
    if argnums.contains(&1) {
        return Err(no_gradient(op, "the packed matrix w"));
    }
    if wants_sb && p.mode != QuantMode::Affine {
        return Err(no_scale_gradient(op, p.mode));
    }
    let (mut gs_, mut gb_) = (None, None);
    if wants_sb {
        // dW (the cotangent of the dequantized matrix), summed over the
        // batch dimensions x has beyond w's.
        let nd = w.ndim() as isize;
        let fc = flatten(cot, 0, -nd)?;
        let fx = flatten(x, 0, -nd)?;
        let dw = if p.transpose {
            matmul(&swapaxes(&fc, -1, -2)?, &fx)?
        } else {
            matmul(&swapaxes(&fx, -1, -2)?, &fc)?
        };
        (gs_, gb_) = scale_bias_cotangents(
            &dw,
            w,
            s,
            p.group_size,
            p.bits,
            argnums.contains(&2),
            argnums.contains(&3),
        )?;
    }
    argnums
        .iter()
        .map(|&a| match a {
            0 => qmm_checked(
                op,
                cot,
                w,
                s,
                b,
                !p.transpose,
                Some(p.group_size),
                Some(p.bits),
                p.mode,
            )?
            .astype(x.dtype()),
            2 => gs_
                .clone()
                .ok_or_else(|| Error::runtime(op, "internal: missing cotangent")),
            _ => gb_
                .clone()
                .ok_or_else(|| Error::runtime(op, "internal: missing cotangent")),
        })
        .collect()
}

pub(super) fn qmm_jvp(
    p: &QuantizedMatmul,
    primals: &[Array],
    tangents: &[Option<Array>],
    output: &Array,
) -> Result<Array> {
    let op = "quantized_matmul";
    let (x, w, s) = (&primals[0], &primals[1], &primals[2]);
    let b = primals.get(3);
    if tangents.get(1).is_some_and(|t| t.is_some()) {
        return Err(no_gradient(op, "the packed matrix w"));
    }
    let call = |x: &Array, s: &Array, b: Option<&Array>| {
        qmm_checked(
            op,
            x,
            w,
            s,
            b,
            p.transpose,
            Some(p.group_size),
            Some(p.bits),
            p.mode,
        )
    };
    let from_x = match &tangents[0] {
        Some(t) => Some(call(t, s, b)?),
        None => None,
    };
    let ts = tangents.get(2).cloned().flatten();
    let tb = tangents.get(3).cloned().flatten();
    let from_sb = if ts.is_some() || tb.is_some() {
        if p.mode != QuantMode::Affine {
            return Err(no_scale_gradient(op, p.mode));
        }
        let ts = match ts {
            Some(t) => t,
            None => zeros_like(s)?,
        };
        let tb = match tb {
            Some(t) => t,
            None => zeros_like(s)?,
        };
        Some(call(x, &ts, Some(&tb))?)
    } else {
        None
    };
    match sum_terms([from_x, from_sb])? {
        Some(t) => t.astype(output.dtype()),
        None => zeros_like(output),
    }
}

/// The batch size of the batched inputs.
fn batch_size(inputs: &[Array], axes: &[Option<usize>]) -> Option<usize> {
    inputs
        .iter()
        .zip(axes)
        .find_map(|(a, ax)| ax.map(|ax| a.shape()[ax]))
}

/// `a` with its batch axis in front, or (unbatched) broadcast along a new
/// front axis of size `n`.
fn batched(a: &Array, ax: Option<usize>, n: usize) -> Result<Array> {
    match ax {
        Some(_) => batch_front(a, ax),
        None => {
            let mut s = vec![n];
            s.extend_from_slice(a.shape());
            broadcast_to(&expand_dims(a, &[0])?, &s)
        }
    }
}

pub(super) fn qmm_vmap(
    p: &QuantizedMatmul,
    inputs: &[Array],
    axes: &[Option<usize>],
) -> Result<(Array, Option<usize>)> {
    let call = |x: &Array, w: &Array, s: &Array, b: Option<&Array>| {
        qmm_checked(
            "quantized_matmul",
            x,
            w,
            s,
            b,
            p.transpose,
            Some(p.group_size),
            Some(p.bits),
            p.mode,
        )
    };
    let Some(n) = batch_size(inputs, axes) else {
        return Ok((
            call(&inputs[0], &inputs[1], &inputs[2], inputs.get(3))?,
            None,
        ));
    };
    if axes[1..].iter().all(|a| a.is_none()) {
        // Only x is batched: its batch axis is one more batch dimension.
        let x = batch_front(&inputs[0], axes[0])?;
        return Ok((call(&x, &inputs[1], &inputs[2], inputs.get(3))?, Some(0)));
    }
    let all: Vec<Array> = inputs
        .iter()
        .zip(axes)
        .map(|(a, &ax)| batched(a, ax, n))
        .collect::<Result<_>>()?;
    let rank = all.iter().map(|a| a.ndim() - 1).max().unwrap_or(2);
    let all: Vec<Array> = all
        .iter()
        .map(|a| pad_example_rank(a, rank))
        .collect::<Result<_>>()?;
    Ok((call(&all[0], &all[1], &all[2], all.get(3))?, Some(0)))
}

// ---------------------------------------------------------------------------
// dequantize
// ---------------------------------------------------------------------------

pub(super) fn dequantize_vjp(
    p: &Dequantize,
    primals: &[Array],
    cot: &Array,
    argnums: &[usize],
) -> Result<Vec<Array>> {
    let op = "dequantize";
    if argnums.contains(&0) {
        return Err(no_gradient(op, "the packed matrix w"));
    }
    if p.mode != QuantMode::Affine {
        return Err(no_scale_gradient(op, p.mode));
    }
    let (w, s) = (&primals[0], &primals[1]);
    let (gs, gb) = scale_bias_cotangents(
        cot,
        w,
        s,
        p.group_size,
        p.bits,
        argnums.contains(&1),
        argnums.contains(&2),
    )?;
    argnums
        .iter()
        .map(|&a| {
            if a == 1 { gs.clone() } else { gb.clone() }
                .ok_or_else(|| Error::runtime(op, "internal: missing cotangent"))
        })
        .collect()
}

pub(super) fn dequantize_jvp(
    p: &Dequantize,
    primals: &[Array],
    tangents: &[Option<Array>],
    output: &Array,
) -> Result<Array> {
    let op = "dequantize";
    if tangents[0].is_some() {
        return Err(no_gradient(op, "the packed matrix w"));
    }
    if p.mode != QuantMode::Affine {
        return Err(no_scale_gradient(op, p.mode));
    }
    let s = &primals[1];
    let ts = match &tangents[1] {
        Some(t) => t.clone(),
        None => zeros_like(s)?,
    };
    let tb = match tangents.get(2).cloned().flatten() {
        Some(t) => t,
        None => zeros_like(s)?,
    };
    dequantize(
        &primals[0],
        &ts,
        Some(&tb),
        Some(p.group_size),
        Some(p.bits),
        "affine",
        None,
        Some(output.dtype()),
    )
}

pub(super) fn dequantize_vmap(
    p: &Dequantize,
    inputs: &[Array],
    axes: &[Option<usize>],
) -> Result<(Array, Option<usize>)> {
    let op = "dequantize";
    if axes.get(2).is_some_and(|a| a.is_some()) && p.mode != QuantMode::Affine {
        return Err(crate::graph::primitive::no_rule(
            op,
            "vmap over the global scale",
        ));
    }
    let n = batch_size(inputs, axes);
    let all: Vec<Array> = match n {
        None => inputs.to_vec(),
        Some(n) => inputs
            .iter()
            .zip(axes)
            .enumerate()
            .map(|(i, (a, &ax))| {
                if i == 2 && p.mode != QuantMode::Affine {
                    Ok(a.clone())
                } else {
                    batched(a, ax, n)
                }
            })
            .collect::<Result<_>>()?,
    };
    let biases = if p.mode == QuantMode::Affine {
        all.get(2)
    } else {
        None
    };
    let global = if p.mode == QuantMode::Affine {
        None
    } else {
        all.get(2)
    };
    let out = dequantize(
        &all[0],
        &all[1],
        biases,
        Some(p.group_size),
        Some(p.bits),
        p.mode.name(),
        global,
        Some(p.dtype),
    )?;
    Ok((out, n.map(|_| 0)))
}

// ---------------------------------------------------------------------------
// quantize
// ---------------------------------------------------------------------------

pub(super) fn quantize_vmap(
    p: &Quantize,
    inputs: &[Array],
    axes: &[Option<usize>],
) -> Result<Vec<(Array, Option<usize>)>> {
    if axes.get(1).is_some_and(|a| a.is_some()) {
        return Err(crate::graph::primitive::no_rule(
            "quantize",
            "vmap over the global scale",
        ));
    }
    let w = batch_front(&inputs[0], axes[0])?;
    let (wq, s, b) = quantize(
        &w,
        Some(p.group_size),
        Some(p.bits),
        p.mode.name(),
        inputs.get(1),
    )?;
    let ax = axes[0].map(|_| 0);
    let mut v = vec![(wq, ax), (s, ax)];
    if let Some(b) = b {
        v.push((b, ax));
    }
    Ok(v)
}
