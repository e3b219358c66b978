//! Products built from [`matmul`] and views: [`inner`], [`outer`],
//! [`tensordot`], [`einsum`] and [`kron`].
//!
//! None of these has a primitive of its own: each is a small graph of
//! transposes, reshapes, broadcasts, elementwise products and matmuls, so
//! the transforms (vjp, jvp, vmap) of those ops cover them too.
//!
//! `einsum` plans like this: repeated labels within an operand become
//! diagonals (views); operands are contracted left to right, each pair as
//! one batched matmul `[batch..., M, K] @ [batch..., K, N]` after
//! transposing and reshaping (a pair with nothing to contract is a
//! broadcast multiply); a label that no later step needs is summed away
//! as early as possible, also by matmul (with a vector of ones), which keeps
//! every reduction on the gemm kernels and in the operands' dtype.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::binary::multiply;
use crate::ops::creation::ones;
use crate::ops::matmul::matmul;
use crate::ops::shape_rules::normalize_axis;
use crate::ops::views::{broadcast_to, diagonal, reshape, transpose};

// ---------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------

fn dims(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}

/// Reshapes `a` to `shape` (all dimensions known).
fn reshape_to(a: &Array, shape: &[usize]) -> Result<Array> {
    if a.shape() == shape {
        return Ok(a.clone());
    }
    reshape(a, &dims(shape))
}

/// Permutes `a`'s axes unless the permutation is the identity.
fn permute(a: &Array, axes: &[usize]) -> Result<Array> {
    if axes.iter().enumerate().all(|(i, &ax)| i == ax) {
        return Ok(a.clone());
    }
    transpose(a, Some(axes))
}

/// Casts every array to their common (promoted) dtype.
fn promote_all(arrays: &[&Array]) -> Result<Vec<Array>> {
    let dtype = arrays
        .iter()
        .map(|a| a.dtype())
        .reduce(DType::promote)
        .unwrap_or(DType::Float32);
    arrays.iter().map(|a| a.astype(dtype)).collect()
}

// ---------------------------------------------------------------------------
// tensordot, inner, outer
// ---------------------------------------------------------------------------

/// Which axes [`tensordot`] contracts.
///
/// ```
/// use ferrox::TensordotAxes;
/// assert_eq!(TensordotAxes::from(2), TensordotAxes::Last(2));
/// assert_eq!(TensordotAxes::from(([0, 1], [1, 0])), TensordotAxes::Pairs(vec![0, 1], vec![1, 0]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TensordotAxes {
    /// The last `n` axes of `a` with the first `n` axes of `b`, in order.
    Last(usize),
    /// `a`'s axes `.0[i]` with `b`'s axes `.1[i]` (negative values count
    /// from the end).
    Pairs(Vec<isize>, Vec<isize>),
}

impl From<usize> for TensordotAxes {
    fn from(n: usize) -> Self {
        TensordotAxes::Last(n)
    }
}
impl From<(Vec<isize>, Vec<isize>)> for TensordotAxes {
    fn from((a, b): (Vec<isize>, Vec<isize>)) -> Self {
        TensordotAxes::Pairs(a, b)
    }
}
impl<const N: usize> From<([isize; N], [isize; N])> for TensordotAxes {
    fn from((a, b): ([isize; N], [isize; N])) -> Self {
        TensordotAxes::Pairs(a.to_vec(), b.to_vec())
    }
}

/// Sums products over the given axes of `a` and `b` (numpy's `tensordot`).
///
/// The result has `a`'s remaining axes followed by `b`'s, in order. `axes`
/// is a count `n` (the last `n` axes of `a` with the first `n` of `b`) or a
/// pair of axis lists; see [`TensordotAxes`].
///
/// ```
/// use ferrox::{tensordot, ones, DType};
/// let a = ones(&[2, 3, 4], DType::Float32)?;
/// let b = ones(&[3, 4, 5], DType::Float32)?;
/// let y = tensordot(&a, &b, 2)?;
/// assert_eq!(y.shape(), &[2, 5]);
/// assert_eq!(y.to_vec::<f32>()?, vec![12.0; 10]);
/// let y = tensordot(&a, &ones(&[4, 2], DType::Float32)?, ([2, 0], [0, 1]))?;
/// assert_eq!(y.shape(), &[3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn tensordot(a: &Array, b: &Array, axes: impl Into<TensordotAxes>) -> Result<Array> {
    let (axes_a, axes_b) = match axes.into() {
        TensordotAxes::Last(n) => {
            if n > a.ndim() || n > b.ndim() {
                return Err(Error::axis(
                    "tensordot",
                    format!(
                        "cannot contract {n} axes of arrays of shape {:?} and {:?}",
                        a.shape(),
                        b.shape()
                    ),
                ));
            }
            ((a.ndim() - n..a.ndim()).collect(), (0..n).collect())
        }
        TensordotAxes::Pairs(xa, xb) => {
            if xa.len() != xb.len() {
                return Err(Error::axis(
                    "tensordot",
                    format!("axes {xa:?} and {xb:?} must have the same length"),
                ));
            }
            (
                normalize_unique("tensordot", &xa, a.ndim())?,
                normalize_unique("tensordot", &xb, b.ndim())?,
            )
        }
    };
    contract_axes("tensordot", a, b, &axes_a, &axes_b)
}

fn normalize_unique(op: &str, axes: &[isize], ndim: usize) -> Result<Vec<usize>> {
    let mut out: Vec<usize> = Vec::with_capacity(axes.len());
    for &ax in axes {
        let n = normalize_axis(op, ax, ndim)?;
        if out.contains(&n) {
            return Err(Error::axis(op, format!("repeated axis {ax} in {axes:?}")));
        }
        out.push(n);
    }
    Ok(out)
}

/// `tensordot` on normalized axes: `a` becomes `[free_a, K]` and `b`
/// `[K, free_b]` (transposed and reshaped), one matmul, reshaped back.
fn contract_axes(
    op: &str,
    a: &Array,
    b: &Array,
    axes_a: &[usize],
    axes_b: &[usize],
) -> Result<Array> {
    for (&i, &j) in axes_a.iter().zip(axes_b) {
        if a.shape()[i] != b.shape()[j] {
            return Err(Error::shape(
                op,
                format!(
                    "a has shape {:?} and b has shape {:?}; axis {i} of a (size {}) != axis {j} of b (size {})",
                    a.shape(),
                    b.shape(),
                    a.shape()[i],
                    b.shape()[j]
                ),
            ));
        }
    }
    let [a, b] = <[Array; 2]>::try_from(promote_all(&[a, b])?)
        .map_err(|_| Error::runtime(op, "internal: promotion lost an operand"))?;
    let free_a: Vec<usize> = (0..a.ndim()).filter(|i| !axes_a.contains(i)).collect();
    let free_b: Vec<usize> = (0..b.ndim()).filter(|i| !axes_b.contains(i)).collect();
    let size = |x: &Array, ax: &[usize]| ax.iter().map(|&i| x.shape()[i]).product::<usize>();
    let (m, k, n) = (size(&a, &free_a), size(&a, axes_a), size(&b, &free_b));
    let a2 = reshape_to(
        &permute(&a, &[free_a.clone(), axes_a.to_vec()].concat())?,
        &[m, k],
    )?;
    let b2 = reshape_to(
        &permute(&b, &[axes_b.to_vec(), free_b.clone()].concat())?,
        &[k, n],
    )?;
    let out: Vec<usize> = free_a
        .iter()
        .map(|&i| a.shape()[i])
        .chain(free_b.iter().map(|&i| b.shape()[i]))
        .collect();
    reshape_to(&matmul(&a2, &b2)?, &out)
}

/// Inner product over the last axes (numpy's `inner`): the result has
/// shape `a.shape[..-1] + b.shape[..-1]`. A 0-d operand multiplies.
///
/// ```
/// use ferrox::{inner, Array};
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
/// assert_eq!(inner(&a, &a)?.item::<f32>()?, 14.0);
/// let m = Array::from_slice(&[1.0f32, 0.0, 0.0, 0.0, 1.0, 0.0], &[2, 3])?;
/// assert_eq!(inner(&m, &a)?.to_vec::<f32>()?, vec![1.0, 2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn inner(a: &Array, b: &Array) -> Result<Array> {
    if a.ndim() == 0 || b.ndim() == 0 {
        return multiply(a, b);
    }
    let (ka, kb) = (a.shape()[a.ndim() - 1], b.shape()[b.ndim() - 1]);
    if ka != kb {
        return Err(Error::shape(
            "inner",
            format!(
                "a has shape {:?} and b has shape {:?}; last dimensions {ka} != {kb}",
                a.shape(),
                b.shape()
            ),
        ));
    }
    contract_axes("inner", a, b, &[a.ndim() - 1], &[b.ndim() - 1])
}

/// The dot product of vectors along `axis` after broadcasting `a` and
/// `b` together: `sum(conj(a) * b, axis)` (the first operand is
/// conjugated, as numpy and the array API do). `axis` must be an axis of
/// both operands.
///
/// ```
/// use ferrox::{vecdot, Array};
/// let a = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// let b = Array::from_slice(&[1.0f32, 1.0, 2.0, 2.0], &[2, 2])?;
/// assert_eq!(vecdot(&a, &b, -1)?.to_vec::<f32>()?, vec![3.0, 6.0]);
/// assert!(vecdot(&a, &b, 2).is_err());
/// let c = Array::from_slice(&[1.0f32], &[1])?;
/// assert!(vecdot(&a, &c, 0).is_err()); // lengths 2 and 1 along the axis
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn vecdot(a: &Array, b: &Array, axis: isize) -> Result<Array> {
    let shape = crate::ops::shape_rules::broadcast_shapes("vecdot", a.shape(), b.shape())?;
    // The axis must exist in both operands (as MLX checks) and have one
    // length in both: broadcasting does not stretch the contracted axis.
    let (ia, ib) = (
        normalize_axis("vecdot", axis, a.ndim())?,
        normalize_axis("vecdot", axis, b.ndim())?,
    );
    if a.shape()[ia] != b.shape()[ib] {
        return Err(Error::shape(
            "vecdot",
            format!(
                "the operands' axis {axis} lengths differ: {:?} and {:?}",
                a.shape(),
                b.shape()
            ),
        ));
    }
    let ax = normalize_axis("vecdot", axis, shape.len())?;
    let prod = multiply(&crate::ops::unary::conjugate(a)?, b)?;
    crate::ops::reduce::sum(&prod, Some(&[ax as isize]), false)
}

/// Outer product of the flattened inputs: `out[i, j] = a.flat[i] * b.flat[j]`.
///
/// ```
/// use ferrox::{outer, Array};
/// let a = Array::from_slice(&[1i32, 2], &[2])?;
/// let b = Array::from_slice(&[1i32, 10, 100], &[3])?;
/// let y = outer(&a, &b)?;
/// assert_eq!(y.shape(), &[2, 3]);
/// assert_eq!(y.to_vec::<i32>()?, vec![1, 10, 100, 2, 20, 200]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn outer(a: &Array, b: &Array) -> Result<Array> {
    crate::graph::layout::checked_numel("outer", &[a.size(), b.size()])?;
    let column = reshape_to(a, &[a.size(), 1])?;
    let row = reshape_to(b, &[b.size()])?;
    multiply(&column, &row)
}

/// Kronecker product (numpy's `kron`): the block matrix whose block `i` is
/// `a[i] * b`. The operand with fewer dimensions gets leading 1s; the result
/// has shape `a.shape * b.shape` elementwise.
///
/// ```
/// use ferrox::{kron, Array, eye, DType};
/// let a = Array::from_slice(&[1i32, 2], &[1, 2])?;
/// let y = kron(&eye(2, None, 0, DType::Int32)?, &a)?;
/// assert_eq!(y.shape(), &[2, 4]);
/// assert_eq!(y.to_vec::<i32>()?, vec![1, 2, 0, 0, 0, 0, 1, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn kron(a: &Array, b: &Array) -> Result<Array> {
    if a.size() == 0 || b.size() == 0 {
        return Err(Error::value(
            "kron",
            format!(
                "inputs cannot be empty, got shapes {:?} and {:?}",
                a.shape(),
                b.shape()
            ),
        ));
    }
    let nd = a.ndim().max(b.ndim());
    let lead = |x: &Array| -> Vec<usize> {
        let mut s = vec![1; nd - x.ndim()];
        s.extend_from_slice(x.shape());
        s
    };
    let (sa, sb) = (lead(a), lead(b));
    let out: Option<Vec<usize>> = sa
        .iter()
        .zip(&sb)
        .map(|(&x, &y)| x.checked_mul(y))
        .collect();
    let out = out.ok_or_else(|| {
        Error::value(
            "kron",
            format!(
                "shapes {:?} and {:?} give too many elements",
                a.shape(),
                b.shape()
            ),
        )
    })?;
    crate::graph::layout::checked_numel("kron", &out)?;
    // a as [a0, 1, a1, 1, ...] times b as [1, b0, 1, b1, ...], then merge
    // each (a_i, b_i) pair.
    let interleave = |s: &[usize], first: bool| -> Vec<usize> {
        s.iter()
            .flat_map(|&d| if first { [d, 1] } else { [1, d] })
            .collect()
    };
    let prod = multiply(
        &reshape_to(a, &interleave(&sa, true))?,
        &reshape_to(b, &interleave(&sb, false))?,
    )?;
    reshape_to(&prod, &out)
}

// ---------------------------------------------------------------------------
// einsum
// ---------------------------------------------------------------------------

/// An einsum index: a letter's code point, or `ELLIPSIS + i` for the i-th
/// (right-aligned) dimension covered by `...`.
type Label = u32;
const ELLIPSIS: Label = 1 << 16;

fn label_name(l: Label) -> String {
    if l >= ELLIPSIS {
        format!("... dimension {}", l - ELLIPSIS)
    } else {
        format!("'{}'", char::from_u32(l).unwrap_or('?'))
    }
}

/// Parsed subscripts: the labels of each operand's axes and of the output.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Subscripts {
    inputs: Vec<Vec<Label>>,
    output: Vec<Label>,
}

/// One operand's term: letters, with an optional `...` at `ellipsis`.
struct Term {
    letters: Vec<Label>,
    ellipsis: Option<usize>,
}

fn parse_term(spec: &str, term: &str) -> Result<Term> {
    let bad = |what: String| Error::value("einsum", format!("{what} in subscripts {spec:?}"));
    let mut letters = Vec::new();
    let mut ellipsis = None;
    let mut chars = term.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            'a'..='z' | 'A'..='Z' => letters.push(c as Label),
            '.' => {
                if chars.next() != Some('.') || chars.next() != Some('.') {
                    return Err(bad("a '.' that is not part of '...'".into()));
                }
                if ellipsis.replace(letters.len()).is_some() {
                    return Err(bad(format!("more than one '...' in term {term:?}")));
                }
            }
            c => return Err(bad(format!("invalid character {c:?}"))),
        }
    }
    Ok(Term { letters, ellipsis })
}

/// Parses `subscripts` against the operand shapes (numpy's grammar:
/// letters, `...`, `,` between operands, optional `->output`).
fn parse_subscripts(spec: &str, shapes: &[&[usize]]) -> Result<Subscripts> {
    let compact: String = spec.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match compact.split_once("->") {
        Some((l, r)) => {
            if r.contains("->") {
                return Err(Error::value(
                    "einsum",
                    format!("more than one '->' in subscripts {spec:?}"),
                ));
            }
            (l, Some(r))
        }
        None => (compact.as_str(), None),
    };
    let terms: Vec<Term> = lhs
        .split(',')
        .map(|t| parse_term(spec, t))
        .collect::<Result<_>>()?;
    if terms.len() != shapes.len() {
        return Err(Error::value(
            "einsum",
            format!(
                "subscripts {spec:?} name {} operand(s) but {} were given",
                terms.len(),
                shapes.len()
            ),
        ));
    }
    // Expand each operand's `...` into right-aligned ellipsis labels.
    let mut ellipsis_dims = 0;
    for (i, (t, s)) in terms.iter().zip(shapes).enumerate() {
        let fits = if t.ellipsis.is_some() {
            t.letters.len() <= s.len()
        } else {
            t.letters.len() == s.len()
        };
        if !fits {
            return Err(Error::shape(
                "einsum",
                format!(
                    "operand {i} has shape {s:?} ({} dimensions) but its subscripts name {}{}",
                    s.len(),
                    t.letters.len(),
                    if t.ellipsis.is_some() {
                        " plus '...'"
                    } else {
                        ""
                    }
                ),
            ));
        }
        ellipsis_dims = ellipsis_dims.max(s.len() - t.letters.len());
    }
    let ellipsis_labels =
        |count: usize| (ellipsis_dims - count..ellipsis_dims).map(|d| ELLIPSIS + d as Label);
    let inputs: Vec<Vec<Label>> = terms
        .iter()
        .zip(shapes)
        .map(|(t, s)| match t.ellipsis {
            None => t.letters.clone(),
            Some(at) => {
                let mut v = t.letters[..at].to_vec();
                v.extend(ellipsis_labels(s.len() - t.letters.len()));
                v.extend_from_slice(&t.letters[at..]);
                v
            }
        })
        .collect();
    let count = |l: Label| inputs.iter().flatten().filter(|&&x| x == l).count();
    let output = match rhs {
        None => {
            // Implicit: broadcast dimensions, then letters used once, sorted.
            let mut out: Vec<Label> = ellipsis_labels(ellipsis_dims).collect();
            let mut once: Vec<Label> = inputs
                .iter()
                .flatten()
                .copied()
                .filter(|&l| l < ELLIPSIS && count(l) == 1)
                .collect();
            once.sort_unstable();
            out.extend(once);
            out
        }
        Some(r) => {
            let t = parse_term(spec, r)?;
            let mut out = t.letters.clone();
            match t.ellipsis {
                Some(at) => {
                    out.splice(at..at, ellipsis_labels(ellipsis_dims));
                }
                None if ellipsis_dims > 0 => {
                    return Err(Error::value(
                        "einsum",
                        format!(
                            "subscripts {spec:?} broadcast over '...' but the output has no '...'"
                        ),
                    ));
                }
                None => {}
            }
            for (i, &l) in t.letters.iter().enumerate() {
                if t.letters[..i].contains(&l) {
                    return Err(Error::value(
                        "einsum",
                        format!(
                            "output label {} appears more than once in {spec:?}",
                            label_name(l)
                        ),
                    ));
                }
                if count(l) == 0 {
                    return Err(Error::value(
                        "einsum",
                        format!(
                            "output label {} does not appear in any input of {spec:?}",
                            label_name(l)
                        ),
                    ));
                }
            }
            out
        }
    };
    Ok(Subscripts { inputs, output })
}

/// The size of every label (broadcast over operands), checking that sizes
/// agree: equal within an operand, equal or 1 across operands.
fn label_sizes(spec: &str, subs: &Subscripts, shapes: &[&[usize]]) -> Result<Vec<(Label, usize)>> {
    let mut sizes: Vec<(Label, usize, usize)> = Vec::new(); // label, size, first operand
    for (i, (labels, shape)) in subs.inputs.iter().zip(shapes).enumerate() {
        for (ax, (&l, &d)) in labels.iter().zip(shape.iter()).enumerate() {
            if let Some(prev) = labels[..ax].iter().position(|&x| x == l) {
                if shape[prev] != d {
                    return Err(Error::shape(
                        "einsum",
                        format!(
                            "label {} of operand {i} (shape {shape:?}) repeats with sizes {} and {d} in {spec:?}",
                            label_name(l),
                            shape[prev]
                        ),
                    ));
                }
            }
            match sizes.iter_mut().find(|(x, _, _)| *x == l) {
                None => sizes.push((l, d, i)),
                Some((_, s, first)) => {
                    if *s != d && *s != 1 && d != 1 {
                        return Err(Error::shape(
                            "einsum",
                            format!(
                                "label {} has size {s} in operand {first} but size {d} in operand {i} of {spec:?}",
                                label_name(l)
                            ),
                        ));
                    }
                    // A size-1 axis broadcasts to the other size (0 too).
                    if *s == 1 {
                        *s = d;
                    }
                }
            }
        }
    }
    Ok(sizes.into_iter().map(|(l, s, _)| (l, s)).collect())
}

/// An intermediate of the plan: an array and the label of each axis.
#[derive(Clone)]
struct Labeled {
    array: Array,
    labels: Vec<Label>,
}

impl Labeled {
    fn size_of(&self, l: Label) -> usize {
        self.labels
            .iter()
            .position(|&x| x == l)
            .map_or(1, |i| self.array.shape()[i])
    }

    /// Replaces each repeated label by the diagonal over its axes.
    fn take_diagonals(mut self) -> Result<Labeled> {
        while let Some((i, j)) = (0..self.labels.len()).find_map(|j| {
            self.labels[..j]
                .iter()
                .position(|&l| l == self.labels[j])
                .map(|i| (i, j))
        }) {
            // `diagonal` removes axes i and j and appends the diagonal axis.
            let l = self.labels[i];
            self.array = diagonal(&self.array, 0, i as isize, j as isize)?;
            self.labels.remove(j);
            self.labels.remove(i);
            self.labels.push(l);
        }
        Ok(self)
    }

    /// Sums over the axes labelled in `drop` (matmul with a vector of ones).
    fn sum_out(self, drop: &[Label]) -> Result<Labeled> {
        let drop: Vec<Label> = self
            .labels
            .iter()
            .copied()
            .filter(|l| drop.contains(l))
            .collect();
        if drop.is_empty() {
            return Ok(self);
        }
        let keep: Vec<Label> = self
            .labels
            .iter()
            .copied()
            .filter(|l| !drop.contains(l))
            .collect();
        let pos = |l: &Label| self.labels.iter().position(|x| x == l).unwrap_or(0);
        let order: Vec<usize> = keep.iter().chain(&drop).map(pos).collect();
        let rows: usize = keep.iter().map(|&l| self.size_of(l)).product();
        let depth: usize = drop.iter().map(|&l| self.size_of(l)).product();
        let kept_shape: Vec<usize> = keep.iter().map(|&l| self.size_of(l)).collect();
        let flat = reshape_to(&permute(&self.array, &order)?, &[rows, depth])?;
        let summed = matmul(&flat, &ones(&[depth], self.array.dtype())?)?;
        Ok(Labeled {
            array: reshape_to(&summed, &kept_shape)?,
            labels: keep,
        })
    }

    /// Transposes to `labels` order, inserting size-1 axes for labels it
    /// lacks, and reshapes to `shape`.
    fn arranged(&self, labels: &[Label], shape: &[usize]) -> Result<Array> {
        let order: Vec<usize> = labels
            .iter()
            .filter_map(|l| self.labels.iter().position(|x| x == l))
            .collect();
        reshape_to(&permute(&self.array, &order)?, shape)
    }
}

/// Contracts two terms: labels in both that are still `needed` are batch
/// dimensions, the other shared labels are summed; labels of one side only
/// are kept (they are needed, or they were summed beforehand).
fn contract_pair(a: Labeled, b: Labeled, needed: &[Label]) -> Result<Labeled> {
    let shared = |l: &Label| b.labels.contains(l);
    let batch: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|l| shared(l) && needed.contains(l))
        .collect();
    let summed: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|l| shared(l) && !needed.contains(l))
        .collect();
    let free_a: Vec<Label> = a.labels.iter().copied().filter(|l| !shared(l)).collect();
    let free_b: Vec<Label> = b
        .labels
        .iter()
        .copied()
        .filter(|l| !a.labels.contains(l))
        .collect();
    let sizes = |t: &Labeled, ls: &[Label]| ls.iter().map(|&l| t.size_of(l)).collect::<Vec<_>>();
    let product = |v: Vec<usize>| v.iter().product::<usize>();
    let labels = [batch.clone(), free_a.clone(), free_b.clone()].concat();

    if summed.is_empty() {
        // Nothing to sum: a broadcast elementwise product.
        let ones_for = |n: usize| vec![1usize; n];
        let sa = [
            sizes(&a, &batch),
            sizes(&a, &free_a),
            ones_for(free_b.len()),
        ]
        .concat();
        let sb = [
            sizes(&b, &batch),
            ones_for(free_a.len()),
            sizes(&b, &free_b),
        ]
        .concat();
        let xa = a.arranged(&[batch.clone(), free_a].concat(), &sa)?;
        let xb = b.arranged(&[batch, free_b].concat(), &sb)?;
        let out: Vec<usize> = sa.iter().zip(&sb).map(|(&x, &y)| x.max(y)).collect();
        crate::graph::layout::checked_numel("einsum", &out)?;
        return Ok(Labeled {
            array: multiply(&xa, &xb)?,
            labels,
        });
    }

    // A summed label of size 1 on one side broadcasts against the other.
    let mut a_arr = a.array.clone();
    let mut b_arr = b.array.clone();
    let bcast = |arr: &Array, t: &Labeled, other: &Labeled| -> Result<Array> {
        let want: Vec<usize> = t
            .labels
            .iter()
            .map(|&l| {
                if summed.contains(&l) {
                    // Sizes agree or one is 1 (which broadcasts, also to 0).
                    match t.size_of(l) {
                        1 => other.size_of(l),
                        d => d,
                    }
                } else {
                    t.size_of(l)
                }
            })
            .collect();
        broadcast_to(arr, &want)
    };
    if summed.iter().any(|&l| a.size_of(l) != b.size_of(l)) {
        a_arr = bcast(&a.array, &a, &b)?;
        b_arr = bcast(&b.array, &b, &a)?;
    }
    let a = Labeled {
        array: a_arr,
        labels: a.labels,
    };
    let b = Labeled {
        array: b_arr,
        labels: b.labels,
    };
    let (m, k, n) = (
        product(sizes(&a, &free_a)),
        product(sizes(&a, &summed)),
        product(sizes(&b, &free_b)),
    );
    let xa = a.arranged(
        &[batch.clone(), free_a.clone(), summed.clone()].concat(),
        &[sizes(&a, &batch), vec![m, k]].concat(),
    )?;
    let xb = b.arranged(
        &[batch.clone(), summed, free_b.clone()].concat(),
        &[sizes(&b, &batch), vec![k, n]].concat(),
    )?;
    let y = matmul(&xa, &xb)?;
    // matmul broadcast the batch dimensions; split M and N again.
    let batch_shape = &y.shape()[..batch.len()];
    let out = [batch_shape.to_vec(), sizes(&a, &free_a), sizes(&b, &free_b)].concat();
    Ok(Labeled {
        array: reshape_to(&y, &out)?,
        labels,
    })
}

/// Einstein summation over `operands` as described by `subscripts`
/// (numpy's and MLX's `einsum`).
///
/// Each operand gets one letter per axis (`a-z`, `A-Z`), operands are
/// separated by `,`, and `->` introduces the output's letters. Letters
/// shared between operands are multiplied together; letters missing from
/// the output are summed. A letter repeated within one operand takes the
/// diagonal. Without `->` the output has every letter used exactly once, in
/// alphabetical order. `...` stands for the remaining (broadcast)
/// dimensions. The result dtype is the promotion of the operands' dtypes.
///
/// ```
/// use ferrox::{einsum, Array};
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// assert_eq!(einsum("ii", &[a.clone()])?.item::<f32>()?, 5.0);          // trace
/// assert_eq!(einsum("ij->ji", &[a.clone()])?.to_vec::<f32>()?, vec![1.0, 3.0, 2.0, 4.0]);
/// let y = einsum("ij,jk->ik", &[a.clone(), a.clone()])?;                // matmul
/// assert_eq!(y.to_vec::<f32>()?, vec![7.0, 10.0, 15.0, 22.0]);
/// assert!(einsum("ij,jk", &[a]).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn einsum(subscripts: &str, operands: &[Array]) -> Result<Array> {
    if operands.is_empty() {
        return Err(Error::value("einsum", "at least one operand is required"));
    }
    let shapes: Vec<&[usize]> = operands.iter().map(|a| a.shape()).collect();
    let subs = parse_subscripts(subscripts, &shapes)?;
    let sizes = label_sizes(subscripts, &subs, &shapes)?;
    let out_shape: Vec<usize> = subs
        .output
        .iter()
        .map(|l| sizes.iter().find(|(x, _)| x == l).map_or(1, |&(_, s)| s))
        .collect();
    crate::graph::layout::checked_numel("einsum", &out_shape)?;

    let refs: Vec<&Array> = operands.iter().collect();
    let mut terms: Vec<Labeled> = promote_all(&refs)?
        .into_iter()
        .zip(&subs.inputs)
        .map(|(array, labels)| {
            Labeled {
                array,
                labels: labels.clone(),
            }
            .take_diagonals()
        })
        .collect::<Result<_>>()?;

    // Contract pairs in the greedy order of `greedy_path`, summing each
    // label as soon as no remaining term or the output needs it.
    let label_sets: Vec<Vec<Label>> = terms.iter().map(|t| t.labels.clone()).collect();
    let sizes_of = |l: Label| sizes.iter().find(|(x, _)| *x == l).map_or(1, |&(_, s)| s);
    for (i, j) in greedy_path(&label_sets, &subs.output, &sizes_of) {
        let (hi, lo) = (i.max(j), i.min(j));
        let b = terms.remove(hi);
        let a = terms.remove(lo);
        let mut needed: Vec<Label> = subs
            .output
            .iter()
            .chain(terms.iter().flat_map(|t| &t.labels))
            .copied()
            .collect();
        let local = |x: &Labeled, y: &Labeled| -> Vec<Label> {
            x.labels
                .iter()
                .copied()
                .filter(|l| !y.labels.contains(l) && !needed.contains(l))
                .collect()
        };
        let (la, lb) = (local(&a, &b), local(&b, &a));
        let a = a.sum_out(&la)?;
        let b = b.sum_out(&lb)?;
        needed.sort_unstable();
        needed.dedup();
        terms.push(contract_pair(a, b, &needed)?);
    }
    let acc = terms
        .pop()
        .ok_or_else(|| Error::runtime("einsum", "internal: no terms"))?;
    let rest: Vec<Label> = acc
        .labels
        .iter()
        .copied()
        .filter(|l| !subs.output.contains(l))
        .collect();
    let acc = acc.sum_out(&rest)?;
    let order: Vec<usize> = subs
        .output
        .iter()
        .filter_map(|l| acc.labels.iter().position(|x| x == l))
        .collect();
    let y = permute(&acc.array, &order)?;
    // Broadcast labels of size 1 in every surviving operand keep size 1;
    // numpy broadcasts them to the output size.
    if y.shape() != out_shape.as_slice() {
        return broadcast_to(&y, &out_shape);
    }
    Ok(y)
}

/// The order in which to contract the terms (pairs of positions in the
/// shrinking list, the result appended last), chosen greedily: among the
/// pairs that share a label (every pair when none does), the one whose
/// result is smallest relative to its operands (`size(result) - size(a) -
/// size(b)`), the first such pair on ties; opt_einsum's and numpy's greedy
/// rule.
fn greedy_path(
    terms: &[Vec<Label>],
    output: &[Label],
    size_of: &dyn Fn(Label) -> usize,
) -> Vec<(usize, usize)> {
    let mut terms: Vec<Vec<Label>> = terms.to_vec();
    let volume = |labels: &[Label]| -> f64 { labels.iter().map(|&l| size_of(l) as f64).product() };
    let mut path = Vec::new();
    while terms.len() > 1 {
        let mut best: Option<(bool, f64, usize, usize, Vec<Label>)> = None;
        for i in 0..terms.len() {
            for j in i + 1..terms.len() {
                let (a, b) = (&terms[i], &terms[j]);
                let shares = a.iter().any(|l| b.contains(l));
                let kept: Vec<Label> = a
                    .iter()
                    .chain(b.iter().filter(|l| !a.contains(l)))
                    .copied()
                    .filter(|l| {
                        output.contains(l)
                            || terms
                                .iter()
                                .enumerate()
                                .any(|(k, t)| k != i && k != j && t.contains(l))
                    })
                    .collect();
                let cost = volume(&kept) - volume(a) - volume(b);
                let better = match &best {
                    None => true,
                    Some((s, c, ..)) => (shares && !s) || (shares == *s && cost < *c),
                };
                if better {
                    best = Some((shares, cost, i, j, kept));
                }
            }
        }
        let Some((_, _, i, j, kept)) = best else {
            break;
        };
        terms.remove(j);
        terms.remove(i);
        terms.push(kept);
        path.push((i, j));
    }
    path
}

/// The contraction order [`einsum`] uses for `subscripts` over operands of
/// `shapes`, as numpy's `einsum_path` reports it: a list of position tuples
/// (each contracted group is removed and its result appended), and a
/// description with the naive and the planned FLOP counts.
///
/// ```
/// use ferrox::einsum_path;
/// let (path, _) = einsum_path("ij,jk,kl", &[&[5, 8], &[8, 10], &[10, 7]])?;
/// assert_eq!(path, vec![vec![1, 2], vec![0, 1]]);
/// let (single, _) = einsum_path("ii", &[&[3, 3]])?;
/// assert_eq!(single, vec![vec![0]]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn einsum_path(subscripts: &str, shapes: &[&[usize]]) -> Result<(Vec<Vec<usize>>, String)> {
    if shapes.is_empty() {
        return Err(Error::value(
            "einsum_path",
            "at least one operand is required",
        ));
    }
    let subs = parse_subscripts(subscripts, shapes)?;
    let sizes = label_sizes(subscripts, &subs, shapes)?;
    let size_of = |l: Label| sizes.iter().find(|(x, _)| *x == l).map_or(1, |&(_, s)| s);
    let sets: Vec<Vec<Label>> = subs
        .inputs
        .iter()
        .map(|t| {
            let mut v: Vec<Label> = Vec::new();
            for &l in t {
                if !v.contains(&l) {
                    v.push(l);
                }
            }
            v
        })
        .collect();
    let pairs = greedy_path(&sets, &subs.output, &size_of);
    let mut all: Vec<Label> = sets.iter().flatten().copied().collect();
    all.sort_unstable();
    all.dedup();
    let naive: f64 = all.iter().map(|&l| size_of(l) as f64).product::<f64>() * shapes.len() as f64;
    // Each pairwise step costs the product of the sizes of its labels.
    let mut terms = sets.clone();
    let mut planned = 0.0;
    for &(i, j) in &pairs {
        let (b, a) = (terms.remove(j), terms.remove(i));
        let mut union = a.clone();
        union.extend(b.iter().filter(|l| !a.contains(l)));
        planned += union.iter().map(|&l| size_of(l) as f64).product::<f64>();
        union.retain(|l| subs.output.contains(l) || terms.iter().any(|t| t.contains(l)));
        terms.push(union);
    }
    let path = if pairs.is_empty() {
        vec![vec![0]]
    } else {
        pairs.iter().map(|&(i, j)| vec![i, j]).collect()
    };
    let info = format!(
        "  Complete contraction:  {subscripts}\n         Naive FLOP count:  {naive:.3e}\n     Optimized FLOP count:  {planned:.3e}\n      Contraction order:  {path:?}"
    );
    Ok((path, info))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arange(n: usize, shape: &[usize]) -> Array {
        let v: Vec<f64> = (0..n).map(|i| i as f64 - 3.0).collect();
        Array::from_slice(&v, shape).unwrap()
    }

    fn vals(a: &Array) -> Vec<f64> {
        a.astype(DType::Float64).unwrap().to_vec::<f64>().unwrap()
    }

    #[test]
    fn parses_numpy_grammar() {
        let p = |s: &str, shapes: &[&[usize]]| parse_subscripts(s, shapes).unwrap();
        let l = |s: &str| s.chars().map(|c| c as Label).collect::<Vec<_>>();
        assert_eq!(p("ij,jk", &[&[2, 3], &[3, 4]]).output, l("ik"));
        assert_eq!(p("ba", &[&[2, 3]]).output, l("ab"));
        assert_eq!(p("ii", &[&[2, 2]]).output, l(""));
        assert_eq!(p(" i j -> j ", &[&[2, 3]]).output, l("j"));
        let e = p("...ij,jk->...ik", &[&[5, 2, 3], &[3, 4]]);
        assert_eq!(e.inputs[0], vec![ELLIPSIS, 'i' as Label, 'j' as Label]);
        assert_eq!(e.output, vec![ELLIPSIS, 'i' as Label, 'k' as Label]);
        let e = p("i...,...", &[&[5, 2, 3], &[3]]);
        assert_eq!(e.inputs[1], vec![ELLIPSIS + 1]);
        // Implicit output: the broadcast dimensions, then 'i' (used once).
        assert_eq!(e.output, vec![ELLIPSIS, ELLIPSIS + 1, 'i' as Label]);
    }

    #[test]
    fn subscript_errors_name_the_problem() {
        let e = |s: &str, shapes: &[&[usize]]| parse_subscripts(s, shapes).unwrap_err().to_string();
        assert!(e("ij,jk", &[&[2, 3]]).contains("name 2 operand(s) but 1 were given"));
        assert!(e("i1", &[&[2, 3]]).contains("invalid character '1'"));
        assert!(e("i.j", &[&[2, 3]]).contains("'.' that is not part of '...'"));
        assert!(e("......", &[&[2, 3]]).contains("more than one '...'"));
        assert!(
            e("i", &[&[2, 3]])
                .contains("operand 0 has shape [2, 3] (2 dimensions) but its subscripts name 1")
        );
        assert!(e("ij->k", &[&[2, 3]]).contains("output label 'k' does not appear"));
        assert!(e("ij->ii", &[&[2, 3]]).contains("output label 'i' appears more than once"));
        assert!(e("...i->i", &[&[2, 3]]).contains("the output has no '...'"));
        assert!(e("i->j->k", &[&[2]]).contains("more than one '->'"));
        let a = crate::ops::creation::ones(&[2, 3], DType::Float32).unwrap();
        let b = crate::ops::creation::ones(&[2], DType::Float32).unwrap();
        let msg = einsum("ij,j", &[a.clone(), b]).unwrap_err().to_string();
        assert_eq!(
            msg,
            "einsum: label 'j' has size 3 in operand 0 but size 2 in operand 1 of \"ij,j\""
        );
        let msg = einsum("ii->i", &[a]).unwrap_err().to_string();
        assert!(
            msg.contains("label 'i' of operand 0 (shape [2, 3]) repeats with sizes 2 and 3"),
            "{msg}"
        );
        assert!(einsum("", &[]).is_err());
    }

    #[test]
    fn einsum_basic_forms() {
        let m = arange(9, &[3, 3]);
        assert_eq!(
            vals(&einsum("ii", std::slice::from_ref(&m)).unwrap()),
            vec![-3.0 + 1.0 + 5.0]
        );
        assert_eq!(
            vals(&einsum("ii->i", std::slice::from_ref(&m)).unwrap()),
            vec![-3.0, 1.0, 5.0]
        );
        assert_eq!(
            vals(&einsum("ij->", std::slice::from_ref(&m)).unwrap()),
            vec![9.0]
        );
        assert_eq!(
            vals(&einsum("ij->i", std::slice::from_ref(&m)).unwrap()),
            vec![-6.0, 3.0, 12.0]
        );
        let v = arange(3, &[3]);
        assert_eq!(
            vals(&einsum("i,i", &[v.clone(), v.clone()]).unwrap()),
            vec![9.0 + 4.0 + 1.0]
        );
        assert_eq!(
            einsum("i,j->ij", &[v.clone(), v.clone()]).unwrap().shape(),
            &[3, 3]
        );
        // Broadcasting a size-1 label, as numpy does.
        let one = Array::from_slice(&[2.0f64], &[1]).unwrap();
        assert_eq!(
            vals(&einsum("i,i", &[v.clone(), one.clone()]).unwrap()),
            vec![2.0 * -6.0]
        );
        assert_eq!(
            vals(&einsum("i,i->i", &[v.clone(), one]).unwrap()),
            vec![-6.0, -4.0, -2.0]
        );
        // Scalars.
        let s = Array::scalar(3.0f64);
        assert_eq!(
            vals(&einsum(",->", &[s.clone(), s.clone()]).unwrap()),
            vec![9.0]
        );
        assert_eq!(
            vals(&einsum(",i", &[s, v]).unwrap()),
            vec![-9.0, -6.0, -3.0]
        );
    }

    #[test]
    fn einsum_matches_matmul_and_promotes() {
        let a = arange(24, &[2, 3, 4]);
        let b = arange(40, &[2, 4, 5]).astype(DType::Int32).unwrap();
        let y = einsum("bij,bjk->bik", &[a.clone(), b.clone()]).unwrap();
        assert_eq!(y.dtype(), DType::Float64);
        assert_eq!(
            vals(&y),
            vals(&matmul(&a, &b.astype(DType::Float64).unwrap()).unwrap())
        );
        let y = einsum("bij,bjk->kib", &[a.clone(), b.clone()]).unwrap();
        assert_eq!(y.shape(), &[5, 3, 2]);
    }

    #[test]
    fn oversized_results_are_errors() {
        // Lazy and never evaluated: only the shape rules run.
        let v = crate::ops::creation::zeros(&[1 << 40], DType::Float32).unwrap();
        assert!(kron(&v, &v).is_err());
        assert!(outer(&v, &v).is_err());
        assert!(einsum("i,j->ij", &[v.clone(), v.clone()]).is_err());
        assert!(einsum("i,j", &[v.clone(), v]).is_err());
    }

    #[test]
    fn tensordot_inner_outer_kron() {
        let a = arange(24, &[2, 3, 4]);
        let b = arange(12, &[3, 4]);
        assert_eq!(tensordot(&a, &b, 2).unwrap().shape(), &[2]);
        assert_eq!(tensordot(&a, &b, 0).unwrap().shape(), &[2, 3, 4, 3, 4]);
        let e = tensordot(&a, &b, 3).unwrap_err().to_string();
        assert_eq!(
            e,
            "tensordot: cannot contract 3 axes of arrays of shape [2, 3, 4] and [3, 4]"
        );
        let e = tensordot(&a, &b, ([0], [0])).unwrap_err().to_string();
        assert_eq!(
            e,
            "tensordot: a has shape [2, 3, 4] and b has shape [3, 4]; axis 0 of a (size 2) != axis 0 of b (size 3)"
        );
        assert!(
            tensordot(&a, &b, ([1, 1], [0, 0]))
                .unwrap_err()
                .to_string()
                .contains("repeated axis")
        );
        assert!(tensordot(&a, &b, (vec![1], vec![0, 1])).is_err());
        assert!(tensordot(&a, &b, ([5], [0])).is_err());
        let e = inner(&a, &arange(3, &[3])).unwrap_err().to_string();
        assert_eq!(
            e,
            "inner: a has shape [2, 3, 4] and b has shape [3]; last dimensions 4 != 3"
        );
        assert_eq!(inner(&a, &b).unwrap().shape(), &[2, 3, 3]);
        assert_eq!(
            vals(&inner(&Array::scalar(2.0f64), &b).unwrap())[..2],
            [-6.0, -4.0]
        );
        assert_eq!(outer(&a, &b).unwrap().shape(), &[24, 12]);
        assert_eq!(kron(&a, &b).unwrap().shape(), &[2, 9, 16]);
        assert_eq!(
            vals(&kron(&Array::scalar(2.0f64), &Array::scalar(3.0f64)).unwrap()),
            vec![6.0]
        );
    }

    /// Direct evaluation: loop over every assignment of every label.
    fn naive_einsum(terms: &[(&[u8], &[f64])], out: &[u8], size: impl Fn(u8) -> usize) -> Vec<f64> {
        let mut all: Vec<u8> = terms.iter().flat_map(|(l, _)| l.iter().copied()).collect();
        all.sort_unstable();
        all.dedup();
        let flat = |labels: &[u8], assign: &[usize]| {
            labels.iter().fold(0, |acc, l| {
                let i = all.iter().position(|x| x == l).unwrap();
                acc * size(*l) + assign[i]
            })
        };
        let mut result = vec![0.0; out.iter().map(|&l| size(l)).product()];
        let total: usize = all.iter().map(|&l| size(l)).product();
        for mut code in 0..total {
            let mut assign = vec![0; all.len()];
            for (i, &l) in all.iter().enumerate().rev() {
                assign[i] = code % size(l);
                code /= size(l);
            }
            let p: f64 = terms.iter().map(|(l, v)| v[flat(l, &assign)]).product();
            result[flat(out, &assign)] += p;
        }
        result
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn einsum_matches_naive_sum(
            a in prop::collection::vec(0u8..5, 0..4),
            b in prop::collection::vec(0u8..5, 0..4),
            keep in prop::collection::vec(any::<bool>(), 5),
            rotate in 0usize..5,
            sizes in prop::collection::vec(1usize..4, 5),
            implicit in any::<bool>(),
        ) {
            let letter = |l: u8| (b'a' + l) as char;
            let size = |l: u8| sizes[l as usize];
            let mut union: Vec<u8> = a.iter().chain(&b).copied().collect();
            union.sort_unstable();
            union.dedup();
            let mut out: Vec<u8> = union.iter().copied().filter(|&l| keep[l as usize]).collect();
            if !out.is_empty() {
                let r = rotate % out.len();
                out.rotate_left(r);
            }
            if implicit {
                // numpy's implicit output: labels used once, sorted.
                let all: Vec<u8> = a.iter().chain(&b).copied().collect();
                out = union.iter().copied().filter(|l| all.iter().filter(|x| *x == l).count() == 1).collect();
            }
            let term = |ls: &[u8]| ls.iter().map(|&l| letter(l)).collect::<String>();
            let spec = if implicit {
                format!("{},{}", term(&a), term(&b))
            } else {
                format!("{},{}->{}", term(&a), term(&b), term(&out))
            };
            let operand = |ls: &[u8], seed: usize| {
                let shape: Vec<usize> = ls.iter().map(|&l| size(l)).collect();
                let n: usize = shape.iter().product();
                let v: Vec<f64> = (0..n).map(|i| ((i * 5 + seed) % 7) as f64 - 3.0).collect();
                (Array::from_slice(&v, &shape).unwrap(), v)
            };
            let (xa, va) = operand(&a, 1);
            let (xb, vb) = operand(&b, 2);
            let want = naive_einsum(&[(&a, &va), (&b, &vb)], &out, size);
            let got = einsum(&spec, &[xa, xb]).unwrap();
            let want_shape: Vec<usize> = out.iter().map(|&l| size(l)).collect();
            prop_assert_eq!(got.shape(), &want_shape[..], "{}", spec);
            prop_assert_eq!(vals(&got), want, "{}", spec);
        }
    }
}
