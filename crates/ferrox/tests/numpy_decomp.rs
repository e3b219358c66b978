//! qr, svd, eigh, eig, lu_factor, lu, det, slogdet, pinv, cholesky_inv and
//! the singular-value norms against numpy references
//! (tests/fixtures/gen_decomp.py).
//!
//! Factors defined only up to a sign or a phase (QR, singular and eigen
//! vectors) are brought to the canonical form the generator wrote before
//! comparing; the fixture's `canon` param names it.

mod common;

use common::{Case, Tensor, array, load, values};
use ferrox::{Array, DType, linalg};

fn flag(case: &Case, key: &str) -> bool {
    case.params[key].as_bool() == Some(true)
        || case.params[key]
            .as_array()
            .is_some_and(|v| v[0].as_bool() == Some(true))
}

fn input(case: &Case) -> Array {
    let a = array(&case.inputs[0]);
    if flag(case, "transpose") {
        ferrox::swapaxes(&a, -1, -2).expect("swapaxes")
    } else {
        a
    }
}

/// Every output of the case's op.
fn outputs(case: &Case) -> Vec<Array> {
    let a = input(case);
    let upper = flag(case, "upper");
    let r = match case.op.as_str() {
        "qr" => linalg::qr(&a).map(|(q, r)| vec![q, r]),
        "svd" => linalg::svd(&a, flag(case, "compute_uv")),
        "eigh" => linalg::eigh(&a, upper).map(|(w, v)| vec![w, v]),
        "eigvalsh" => linalg::eigvalsh(&a, upper).map(|w| vec![w]),
        "eig" => linalg::eig(&a).map(|(w, v)| vec![w, v]),
        "eigvals" => linalg::eigvals(&a).map(|w| vec![w]),
        "lu_factor" => linalg::lu_factor(&a).map(|(lu, p)| vec![lu, p]),
        "lu" => linalg::lu(&a).map(|(p, l, u)| vec![p, l, u]),
        "det" => linalg::det(&a).map(|d| vec![d]),
        "slogdet" => linalg::slogdet(&a).map(|(s, l)| vec![s, l]),
        "pinv" => linalg::pinv(&a).map(|p| vec![p]),
        "cholesky_inv" => linalg::cholesky_inv(&a, upper).map(|p| vec![p]),
        "norm" => {
            let ord = match &case.params["ord"] {
                serde_json::Value::String(s) => s.parse().expect("ord"),
                v => linalg::NormOrd::P(v.as_f64().expect("ord")),
            };
            linalg::norm(&a, Some(ord), Some(&[-2, -1]), false).map(|n| vec![n])
        }
        other => panic!("{}: unknown op {other}", case.name),
    };
    r.unwrap_or_else(|e| panic!("{}: {e}", case.name))
}

/// A batch of complex matrices, row-major, as f64 (re, im).
struct Mats {
    re: Vec<f64>,
    im: Vec<f64>,
    rows: usize,
    cols: usize,
}

impl Mats {
    fn of(a: &Array) -> Mats {
        let s = a.shape();
        let (re, im) = values(a);
        let nd = s.len();
        let (rows, cols) = if nd >= 2 {
            (s[nd - 2], s[nd - 1])
        } else {
            (1, s.last().copied().unwrap_or(1))
        };
        Mats { re, im, rows, cols }
    }
    fn count(&self) -> usize {
        self.re.len() / (self.rows * self.cols).max(1)
    }
    fn at(&self, b: usize, i: usize, j: usize) -> usize {
        (b * self.rows + i) * self.cols + j
    }
    /// Multiplies entry `k` by `(pr, pi)`.
    fn scale(&mut self, k: usize, (pr, pi): (f64, f64)) {
        let (r, i) = (self.re[k], self.im[k]);
        self.re[k] = r * pr - i * pi;
        self.im[k] = r * pi + i * pr;
    }
    /// The unit phase that makes column `j` of matrix `b` have its
    /// largest-magnitude entry real and positive (the generator's rule).
    fn column_phase(&self, b: usize, j: usize) -> (f64, f64) {
        let mut best = (0, -1.0);
        for i in 0..self.rows {
            let k = self.at(b, i, j);
            let mag = self.re[k].hypot(self.im[k]) - 1e-9 * i as f64;
            if mag > best.1 {
                best = (i, mag);
            }
        }
        let k = self.at(b, best.0, j);
        let mag = self.re[k].hypot(self.im[k]);
        if mag > 0.0 {
            (self.re[k] / mag, -self.im[k] / mag)
        } else {
            (1.0, 0.0)
        }
    }
}

/// `outs[i]` in the fixture's canonical form, as (re, im).
fn canonical(case: &Case, outs: &[Array], i: usize) -> (Vec<f64>, Vec<f64>) {
    let canon = case.params["canon"].as_str().unwrap_or("");
    let mut m = Mats::of(&outs[i]);
    match canon {
        "" => {}
        "rows" | "cols" => {
            // Signs of R's diagonal (R is output 1).
            let r = Mats::of(&outs[1]);
            let k = r.rows;
            for b in 0..m.count() {
                for d in 0..k {
                    let s = if r.re[r.at(b, d, d)] < 0.0 { -1.0 } else { 1.0 };
                    for e in 0..(if canon == "rows" { m.cols } else { m.rows }) {
                        let idx = if canon == "rows" {
                            m.at(b, d, e)
                        } else {
                            m.at(b, e, d)
                        };
                        m.scale(idx, (s, 0.0));
                    }
                }
            }
        }
        "vec" | "vt" if case.op == "svd" => {
            // Keep U[:, :k] / Vt[:k, :] and scale by U's column phases.
            let u = Mats::of(&outs[0]);
            let s = outs[1].shape();
            let k = s[s.len() - 1];
            let mut kept = Mats {
                re: vec![],
                im: vec![],
                rows: if canon == "vec" { m.rows } else { k },
                cols: if canon == "vec" { k } else { m.cols },
            };
            for b in 0..m.count() {
                for r in 0..kept.rows {
                    for c in 0..kept.cols {
                        let idx = m.at(b, r, c);
                        let (j, row) = if canon == "vec" {
                            (c, false)
                        } else {
                            (r, true)
                        };
                        let (pr, pi) = u.column_phase(b, j);
                        let p = if row { (pr, -pi) } else { (pr, pi) };
                        let (x, y) = (m.re[idx], m.im[idx]);
                        kept.re.push(x * p.0 - y * p.1);
                        kept.im.push(x * p.1 + y * p.0);
                    }
                }
            }
            m = kept;
        }
        "vec" if case.op == "eig" => {
            // Columns in the sorted order of the eigenvalues, unit norm,
            // then phased.
            let w = Mats::of(&outs[0]);
            let n = m.cols;
            let mut out = Mats {
                re: vec![0.0; m.re.len()],
                im: vec![0.0; m.re.len()],
                rows: m.rows,
                cols: n,
            };
            for b in 0..m.count() {
                let order = eig_order(&w.re[b * n..(b + 1) * n], &w.im[b * n..(b + 1) * n]);
                for (c, &src) in order.iter().enumerate() {
                    let norm: f64 = (0..m.rows)
                        .map(|r| {
                            let k = m.at(b, r, src);
                            m.re[k] * m.re[k] + m.im[k] * m.im[k]
                        })
                        .sum::<f64>()
                        .sqrt();
                    for r in 0..m.rows {
                        let (k, d) = (m.at(b, r, src), out.at(b, r, c));
                        out.re[d] = m.re[k] / norm;
                        out.im[d] = m.im[k] / norm;
                    }
                }
                for c in 0..n {
                    let p = out.column_phase(b, c);
                    for r in 0..m.rows {
                        let k = out.at(b, r, c);
                        out.scale(k, p);
                    }
                }
            }
            m = out;
        }
        "vec" => {
            for b in 0..m.count() {
                for c in 0..m.cols {
                    let p = m.column_phase(b, c);
                    for r in 0..m.rows {
                        let k = m.at(b, r, c);
                        m.scale(k, p);
                    }
                }
            }
        }
        "sort" => {
            let n = *outs[i].shape().last().expect("eigenvalues");
            let (mut re, mut im) = (vec![], vec![]);
            for b in 0..m.re.len() / n.max(1) {
                let (r, j) = (&m.re[b * n..(b + 1) * n], &m.im[b * n..(b + 1) * n]);
                for k in eig_order(r, j) {
                    re.push(r[k]);
                    im.push(j[k]);
                }
            }
            return (re, im);
        }
        other => panic!("{}: unknown canon {other}", case.name),
    }
    (m.re, m.im)
}

/// Indices sorting eigenvalues by real part, then imaginary part (real
/// parts within 1e-3 count as equal: conjugate pairs).
fn eig_order(re: &[f64], im: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..re.len()).collect();
    order.sort_by(|&a, &b| {
        if (re[a] - re[b]).abs() < 1e-3 {
            im[a].total_cmp(&im[b])
        } else {
            re[a].total_cmp(&re[b])
        }
    });
    order
}

fn tolerance(dtype: DType, case: &Case) -> f64 {
    let base = match dtype {
        DType::Float64 => 1e-9,
        _ => 2e-4,
    };
    // Eigenvectors of a general matrix are less well conditioned.
    if case.op == "eig" { base * 10.0 } else { base }
}

/// The first mismatch of `got` against the fixture, if any.
fn mismatch(
    case: &Case,
    got: (Vec<f64>, Vec<f64>),
    want: &Tensor,
    shape: &[usize],
) -> Option<String> {
    if shape != &want.shape[..] {
        return Some(format!("shape {shape:?}, want {:?}", want.shape));
    }
    // Float64 inputs with float64 results; eig's results are complex64.
    let dtype = if want.dtype == DType::Float64 {
        case.inputs[0].dtype
    } else {
        DType::Float32
    };
    let tol = tolerance(dtype, case);
    if got.0.len() != want.data.len() {
        return Some(format!(
            "{} elements, want {}",
            got.0.len(),
            want.data.len()
        ));
    }
    let close = |a: f64, b: f64| {
        (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol * (1.0 + b.abs())
    };
    for (k, (&a, &b)) in got.0.iter().zip(&want.data).enumerate() {
        if !close(a, b) {
            return Some(format!("element {k}: got {a}, want {b}"));
        }
    }
    for (k, (&a, &b)) in got.1.iter().zip(&want.imag).enumerate() {
        if !close(a, b) {
            return Some(format!("element {k} (imag): got {a}, want {b}"));
        }
    }
    None
}

#[test]
fn decompositions_match_numpy() {
    common::watchdog(120, || {
        let cases = load("decomp.json");
        assert!(cases.len() > 300);
        let mut failures = vec![];
        for case in &cases {
            let outs = outputs(case);
            let i = case.params["out"].as_u64().unwrap_or(0) as usize;
            let out = &outs[i];
            if out.dtype() != case.output.dtype {
                failures.push(format!("{}: dtype {}", case.name, out.dtype()));
                continue;
            }
            let mut shape = out.shape().to_vec();
            if case.op == "svd" && case.params["canon"].is_string() {
                // U[:, :k] and Vt[:k, :] are compared.
                let s = outs[1].shape();
                let k = s[s.len() - 1];
                let nd = shape.len();
                let axis = if i == 0 { nd - 1 } else { nd - 2 };
                shape[axis] = k;
            }
            if let Some(m) = mismatch(case, canonical(case, &outs, i), &case.output, &shape) {
                failures.push(format!("{}: {m}", case.name));
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} cases:\n{}",
            failures.len(),
            cases.len(),
            failures.join("\n")
        );
    });
}

#[test]
fn det_and_slogdet_of_small_matrices_differentiate() {
    // Up to 3 x 3 both are cofactor formulas of public ops; larger
    // matrices go through lu_factor, which has no rule (as in MLX).
    common::watchdog(60, || {
        let mut rng = common::checks::Rng::new(71);
        for n in [1, 2, 3] {
            let a = ferrox::add(
                &rng.array(&[2, n, n], -1.0, 1.0),
                &ferrox::multiply(
                    &ferrox::eye(n, None, 0, DType::Float64).unwrap(),
                    &Array::scalar(2.0f64),
                )
                .unwrap(),
            )
            .unwrap();
            common::checks::check_derivatives(
                &format!("det {n}x{n}"),
                &|x| Ok(vec![linalg::det(&x[0])?]),
                std::slice::from_ref(&a),
                n as u64,
            );
            common::checks::check_derivatives(
                &format!("slogdet {n}x{n}"),
                &|x| Ok(vec![linalg::slogdet(&x[0])?.1]),
                std::slice::from_ref(&a),
                10 + n as u64,
            );
        }
        let big = rng.array(&[4, 4], -1.0, 1.0);
        let e = ferrox::vjp(
            |x| Ok(vec![linalg::det(&x[0])?]),
            std::slice::from_ref(&big),
            &[Array::scalar(1.0f64)],
        )
        .map(|_| ())
        .expect_err("no rule");
        assert!(e.to_string().contains("lu_factor: no vjp rule"), "{e}");
    });
}
