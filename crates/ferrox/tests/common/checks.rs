//! Reference checks for transform rules, computed outside ferrox's ops:
//! vjp and jvp against central finite differences in f64, vmap against a
//! loop over examples.

use ferrox::{Array, DType, Result};

/// Deterministic xorshift values in [-1, 1).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
    pub fn vec(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.next()).collect()
    }
    /// A random f64 array of `shape`, values in [lo, hi).
    pub fn array(&mut self, shape: &[usize], lo: f64, hi: f64) -> Array {
        let n = shape.iter().product();
        let v: Vec<f64> = self
            .vec(n)
            .into_iter()
            .map(|x| lo + (x + 1.0) / 2.0 * (hi - lo))
            .collect();
        Array::from_slice(&v, shape).expect("array")
    }
}

fn f64s(a: &Array) -> Vec<f64> {
    a.astype(DType::Float64)
        .and_then(|a| a.to_vec::<f64>())
        .expect("values")
}

fn shifted(xs: &[Array], dirs: &[Vec<f64>], eps: f64) -> Vec<Array> {
    xs.iter()
        .zip(dirs)
        .map(|(x, d)| {
            let v: Vec<f64> = f64s(x).iter().zip(d).map(|(a, b)| a + eps * b).collect();
            Array::from_slice(&v, x.shape()).expect("shifted")
        })
        .collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn assert_close(what: &str, got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol * (1.0 + want.abs()),
        "{what}: got {got}, finite differences say {want}"
    );
}

/// Checks `vjp(f)` and `jvp(f)` at `xs` (float64 inputs) against central
/// differences along random directions.
pub fn check_derivatives(
    name: &str,
    f: &dyn Fn(&[Array]) -> Result<Vec<Array>>,
    xs: &[Array],
    seed: u64,
) {
    check_derivatives_with(name, f, xs, seed, 1e-6, 1e-5)
}

/// [`check_derivatives`] with a chosen step `eps` and relative tolerance
/// `tol`: for functions that compute in single precision (complex64), a
/// larger step keeps rounding out of the differences.
pub fn check_derivatives_with(
    name: &str,
    f: &dyn Fn(&[Array]) -> Result<Vec<Array>>,
    xs: &[Array],
    seed: u64,
    eps: f64,
    tol: f64,
) {
    let mut rng = Rng::new(seed);
    let outs = f(xs).expect("forward");
    let cots: Vec<Array> = outs
        .iter()
        .map(|o| {
            rng.array(o.shape(), -1.0, 1.0)
                .astype(o.dtype())
                .expect("cot")
        })
        .collect();
    let dirs: Vec<Vec<f64>> = xs.iter().map(|x| rng.vec(x.size())).collect();
    let (_, grads) =
        ferrox::vjp(|a| f(a), xs, &cots).unwrap_or_else(|e| panic!("{name}: vjp failed: {e}"));
    for (g, x) in grads.iter().zip(xs) {
        assert_eq!(g.shape(), x.shape(), "{name}: cotangent shape");
    }
    let plus = f(&shifted(xs, &dirs, eps)).expect("f(x+h)");
    let minus = f(&shifted(xs, &dirs, -eps)).expect("f(x-h)");
    // <u, J v> by differences and by the vjp: <J^T u, v>.
    let mut fd = 0.0;
    for ((p, m), c) in plus.iter().zip(&minus).zip(&cots) {
        let diff: Vec<f64> = f64s(p)
            .iter()
            .zip(f64s(m))
            .map(|(a, b)| (a - b) / (2.0 * eps))
            .collect();
        fd += dot(&diff, &f64s(c));
    }
    let an: f64 = grads.iter().zip(&dirs).map(|(g, d)| dot(&f64s(g), d)).sum();
    assert_close(&format!("{name}: vjp"), an, fd, tol);
    // jvp: J v elementwise.
    let tans: Vec<Array> = xs
        .iter()
        .zip(&dirs)
        .map(|(x, d)| Array::from_slice(d, x.shape()).expect("tangent"))
        .collect();
    let (_, jv) =
        ferrox::jvp(|a| f(a), xs, &tans).unwrap_or_else(|e| panic!("{name}: jvp failed: {e}"));
    for ((t, p), m) in jv.iter().zip(&plus).zip(&minus) {
        let (t, p, m) = (f64s(t), f64s(p), f64s(m));
        for i in 0..t.len() {
            assert_close(
                &format!("{name}: jvp element {i}"),
                t[i],
                (p[i] - m[i]) / (2.0 * eps),
                tol,
            );
        }
    }
}

/// Example `b` of `x` along `axis`, built from the values (no ferrox ops).
pub fn example(x: &Array, axis: usize, b: usize) -> Array {
    let shape = x.shape();
    let v = f64s(x);
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    let n = shape[axis];
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        out.extend_from_slice(&v[(o * n + b) * inner..(o * n + b + 1) * inner]);
    }
    let mut s = shape.to_vec();
    s.remove(axis);
    Array::from_slice(&out, &s)
        .expect("example")
        .astype(x.dtype())
        .expect("astype")
}

/// Checks `vmap(f, in_axes, [0; outputs])` against calling `f` per example.
pub fn check_vmap(
    name: &str,
    f: impl Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + Clone + 'static,
    xs: &[Array],
    in_axes: &[Option<isize>],
) {
    check_vmap_out(name, f, xs, in_axes, 0)
}

/// Checks `vmap(f, in_axes, [out_axis; outputs])` against calling `f` per
/// example (`out_axis` must be valid for every output).
pub fn check_vmap_out(
    name: &str,
    f: impl Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + Clone + 'static,
    xs: &[Array],
    in_axes: &[Option<isize>],
    out_axis: usize,
) {
    let n_out = f(&xs
        .iter()
        .zip(in_axes)
        .map(|(x, a)| match a {
            Some(a) => example(x, *a as usize, 0),
            None => x.clone(),
        })
        .collect::<Vec<_>>())
    .expect("forward")
    .len();
    let batch = xs
        .iter()
        .zip(in_axes)
        .find_map(|(x, a)| a.map(|a| x.shape()[a as usize]))
        .expect("a batched input");
    let vf =
        ferrox::transforms::vmap::vmap(f.clone(), in_axes, &vec![Some(out_axis as isize); n_out]);
    let got = vf(xs).unwrap_or_else(|e| panic!("{name}: vmap failed: {e}"));
    for b in 0..batch {
        let args: Vec<Array> = xs
            .iter()
            .zip(in_axes)
            .map(|(x, a)| match a {
                Some(a) => example(x, *a as usize, b),
                None => x.clone(),
            })
            .collect();
        let want = f(&args).expect("example forward");
        for (j, (g, w)) in got.iter().zip(&want).enumerate() {
            let gb = example(g, out_axis, b);
            assert_eq!(
                gb.shape(),
                w.shape(),
                "{name}: output {j} example {b} shape"
            );
            let (gv, wv) = (f64s(&gb), f64s(w));
            for i in 0..gv.len() {
                assert!(
                    (gv[i] - wv[i]).abs() <= 1e-9 * (1.0 + wv[i].abs())
                        || (gv[i].is_nan() && wv[i].is_nan()),
                    "{name}: output {j} example {b} element {i}: vmap {} loop {}",
                    gv[i],
                    wv[i]
                );
            }
        }
    }
}
