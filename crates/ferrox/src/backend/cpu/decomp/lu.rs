//! LU factorisation with partial pivoting (faer), in LAPACK's packed
//! form: one `m x n` matrix holding the unit lower factor `L` below the
//! diagonal and `U` on and above it, the `min(m, n)` pivots (row `i` was
//! swapped with row `pivots[i]`, in order, 0-based) and the resulting row
//! permutation. Singular matrices factor (a zero on `U`'s diagonal).
//!
//! faer reports its pivoting as a permutation, not as swaps; the swaps are
//! recovered from it (step `i` brings the row that ends at position `i`
//! up from wherever earlier swaps left it, which is unique), and rows below
//! `min(m, n)` are put in the order those swaps leave them, so the packed
//! matrix, the pivots and the permutation always agree.

use super::{Elem, Matrices, concat, each, no_kernel};
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use faer::Par;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::lu::partial_pivoting::factor::{lu_in_place, lu_in_place_scratch};

/// `[LU, pivots, perm]` of each matrix of `x` (`float32` or `float64`):
/// the packed factors, the `uint32` pivots and the `uint32` permutation
/// `perm` with `a[i] = (L U)[perm[i]]`.
pub fn lu(x: &Operand<'_>, outs: [OutSpec<'_>; 3]) -> Result<Vec<Data>> {
    match x.dtype {
        DType::Float32 => typed::<f32>(x, outs),
        DType::Float64 => typed::<f64>(x, outs),
        d => Err(no_kernel("lu_factor", d)),
    }
}

/// One matrix's packed factors, pivots and permutation.
type Parts<T> = (Vec<T>, Vec<u32>, Vec<u32>);

fn typed<T: Elem>(
    x: &Operand<'_>,
    [lu_out, piv_out, perm_out]: [OutSpec<'_>; 3],
) -> Result<Vec<Data>> {
    let a = Matrices::<T>::read("lu_factor", x)?;
    let (m, n) = (a.rows, a.cols);
    let k = m.min(n);
    // Matrices of a batch already run in parallel.
    let par = if a.count > 1 { Par::Seq } else { Par::rayon(0) };
    let parts: Vec<Parts<T>> = each("lu_factor", a.count, |i| {
        if k == 0 {
            return Ok((Vec::new(), Vec::new(), (0..m as u32).collect()));
        }
        let mut f = a.get(i).to_owned();
        let (mut fwd, mut bwd) = (vec![0usize; m], vec![0usize; m]);
        let mut mem = MemBuffer::new(lu_in_place_scratch::<usize, T>(
            m,
            n,
            par,
            Default::default(),
        ));
        let (_, perm) = lu_in_place(
            f.as_mut(),
            &mut fwd,
            &mut bwd,
            par,
            MemStack::new(&mut mem),
            Default::default(),
        );
        // src[r]: the input row that faer's factored row r comes from.
        let src = perm.arrays().0.to_vec();
        let mut order: Vec<usize> = (0..m).collect(); // order[p]: input row now at p
        let mut at: Vec<usize> = (0..m).collect(); // at[row]: its position
        let mut pivots = Vec::with_capacity(k);
        for r in 0..k {
            let p = at[src[r]];
            pivots.push(p as u32);
            let (x, y) = (order[r], order[p]);
            order.swap(r, p);
            at[x] = p;
            at[y] = r;
        }
        let mut faer_row = vec![0usize; m];
        for (r, &s) in src.iter().enumerate() {
            faer_row[s] = r;
        }
        let mut packed = Vec::with_capacity(m * n);
        for &row in &order {
            let fr = faer_row[row];
            packed.extend((0..n).map(|c| f[(fr, c)]));
        }
        let mut inverse = vec![0u32; m];
        for (r, &row) in order.iter().enumerate() {
            inverse[row] = r as u32;
        }
        Ok((packed, pivots, inverse))
    })?;
    Ok(vec![
        concat("lu_factor", lu_out, parts.iter().map(|p| p.0.as_slice()))?,
        concat("lu_factor", piv_out, parts.iter().map(|p| p.1.as_slice()))?,
        concat("lu_factor", perm_out, parts.iter().map(|p| p.2.as_slice()))?,
    ])
}
