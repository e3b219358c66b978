//! Matrix decompositions with several outputs: [`qr`](qr::qr),
//! [`svd`](svd::svd), [`eigh`](eigh::eigh) / [`eigvalsh`](eigh::eigvalsh),
//! [`eig`](eig::eig) / [`eigvals`](eig::eigvals) and
//! [`lu_factor`](lu::lu_factor) / [`lu`](lu::lu), each one primitive whose
//! node has one output per factor (see [`crate::graph::outputs`]); the
//! kernels are in `backend::cpu::decomp` (faer).
//!
//! As in MLX 0.32, none of them has a derivative rule: `grad`, `vjp` and
//! `jvp` through them are an `Unsupported` error naming the primitive
//! (`svd: no vjp rule`). All of them batch under `vmap` (the batch axis is
//! moved to the front and the op runs on the larger batch).
//!
//! Input rules are MLX's: at least 2-D, square where the op needs it, and
//! float32 or float64 (complex64 too for svd, eigh and eig), with no
//! implicit promotion; a wrong dtype is a `Value` error as in MLX.

pub mod eig;
pub mod eigh;
pub mod lu;
pub mod qr;
pub mod svd;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::grad_helpers::batch_front;

/// The `(rows, cols)` of the matrices in `a`'s last two axes, or an error
/// naming `op` when `a` has fewer than two axes or (with `square`) the
/// matrices are not square.
pub(crate) fn matrix_dims(op: &str, a: &Array, square: bool) -> Result<(usize, usize)> {
    let s = a.shape();
    let nd = s.len();
    if nd < 2 {
        return Err(Error::shape(
            op,
            format!("expected an array with at least 2 dimensions, got shape {s:?}"),
        ));
    }
    let (m, n) = (s[nd - 2], s[nd - 1]);
    if square && m != n {
        return Err(Error::shape(
            op,
            format!("expected square matrices in the last two axes, got shape {s:?}"),
        ));
    }
    Ok((m, n))
}

/// `a`'s dtype if it is float32, float64 or (with `complex`) complex64;
/// otherwise a `Value` error naming `op` and the dtype.
pub(crate) fn decomp_dtype(op: &str, a: &Array, complex: bool) -> Result<DType> {
    match a.dtype() {
        d @ (DType::Float32 | DType::Float64) => Ok(d),
        DType::Complex64 if complex => Ok(DType::Complex64),
        d => Err(Error::value(
            op,
            format!(
                "expected {}, got {d}",
                if complex {
                    "float32, float64 or complex64"
                } else {
                    "float32 or float64"
                }
            ),
        )),
    }
}

/// The real dtype of `d`'s magnitudes (complex64 gives float32).
pub(crate) fn real_of(d: DType) -> DType {
    if d == DType::Complex64 {
        DType::Float32
    } else {
        d
    }
}

/// `shape` with its last axis dropped.
pub(crate) fn without_last(shape: &[usize]) -> Vec<usize> {
    shape[..shape.len().saturating_sub(1)].to_vec()
}

/// `shape` with its last two axes replaced by `tail`.
pub(crate) fn with_matrix(shape: &[usize], tail: &[usize]) -> Vec<usize> {
    let mut s = shape[..shape.len().saturating_sub(2)].to_vec();
    s.extend_from_slice(tail);
    s
}

/// The error for a rule called with the wrong number of operands.
pub(crate) fn arity(op: &str, inputs: usize, outputs: usize) -> Error {
    Error::runtime(
        op,
        format!("internal error: {inputs} inputs and {outputs} outputs"),
    )
}

/// The batching rule every decomposition shares: the one input's batch
/// axis moves to the front, `op` runs on the larger batch, and every output
/// has its batch axis in front (unbatched input: unbatched outputs).
pub(crate) fn vmap_front(
    op: &str,
    inputs: &[Array],
    axes: &[Option<usize>],
    f: impl Fn(&Array) -> Result<Vec<Array>>,
) -> Result<Vec<(Array, Option<usize>)>> {
    let ([x], [ax]) = (inputs, axes) else {
        return Err(arity(op, inputs.len(), axes.len()));
    };
    let outs = f(&batch_front(x, *ax)?)?;
    let axis = ax.map(|_| 0);
    Ok(outs.into_iter().map(|o| (o, axis)).collect())
}

#[cfg(test)]
mod tests;
