//! Bad-input sweep: every public op, called with random shapes (rank 0-4,
//! dims 0-5, zero-size included), every dtype, random axes (out of range,
//! negative, repeated), random indices (out of range, negative, extreme) and
//! random sizes (0, 1, ..., `usize::MAX`, `isize::MIN` steps, overflowing
//! products), must never panic, abort or misbehave: it either builds a node
//! that evaluates (to a value or to an error) or returns an `Err` whose
//! message starts with the op's name.
//!
//! Each call runs inside `catch_unwind`, and so does the `eval` of its
//! result. Set `BAD_INPUT_COLLECT=1` to print every finding (`BUG: ...`)
//! instead of failing on the first one.

use ferrox as fx;
use ferrox::{
    Array, Complex64, DType, ErrorKind, PadMode, Result, Sections, SliceArg, TensordotAxes,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::panic::{AssertUnwindSafe, catch_unwind};

type TestResult = std::result::Result<(), TestCaseError>;

// ------------------------------------------------------------------ checking

fn panic_msg(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic>".to_string()
    }
}

fn report(msg: String) -> TestResult {
    if std::env::var_os("BAD_INPUT_COLLECT").is_some() {
        eprintln!("BUG: {msg}");
        Ok(())
    } else {
        Err(TestCaseError::fail(msg))
    }
}

/// What an op returns: one array or several.
trait Outputs {
    fn arrays(self) -> Vec<Array>;
}
impl Outputs for Array {
    fn arrays(self) -> Vec<Array> {
        vec![self]
    }
}
impl Outputs for Vec<Array> {
    fn arrays(self) -> Vec<Array> {
        self
    }
}

/// Largest output the sweep evaluates; bigger (but allocatable) results are
/// only built. Results of at least `HUGE_BYTES` are evaluated too: their
/// allocation must fail with an error, not abort.
const EVAL_LIMIT_BYTES: usize = 16 << 20;
const HUGE_BYTES: usize = 1 << 46;

/// Runs `f` (building `op`'s node) and evaluates the result, both inside
/// `catch_unwind`; errors must start with `op: `.
fn check<R: Outputs>(op: &str, f: impl FnOnce() -> Result<R>) -> TestResult {
    check_as(op, &[op], f)
}

/// Like [`check`], but an error may also start with one of `names` (ops
/// that are documented spellings of the same thing, e.g. a method).
fn check_as<R: Outputs>(op: &str, names: &[&str], f: impl FnOnce() -> Result<R>) -> TestResult {
    let named = |s: &str| names.iter().any(|n| s.starts_with(&format!("{n}: ")));
    let trace = std::env::var_os("BAD_INPUT_TRACE").is_some();
    let stat = |what: &str| {
        if trace {
            eprintln!("stat {op} {what}");
        }
    };
    if trace {
        eprintln!("op {op}");
    }
    let built = match catch_unwind(AssertUnwindSafe(f)) {
        Err(p) => return report(format!("{op}: panicked while building: {}", panic_msg(&*p))),
        Ok(r) => r,
    };
    let outs = match built {
        Err(e) => {
            let s = e.to_string();
            if !named(&s) {
                return report(format!(
                    "{op}: error does not start with the op name: {s:?}"
                ));
            }
            if e.op() == s || e.message().is_empty() {
                return report(format!("{op}: empty error message: {s:?}"));
            }
            stat("build_err");
            return Ok(());
        }
        Ok(r) => r.arrays(),
    };
    for o in &outs {
        let n = o
            .shape()
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d));
        let bytes = n.and_then(|n| n.checked_mul(o.dtype().size()));
        match bytes {
            None => {
                return report(format!(
                    "{op}: returned Ok with shape {:?} whose size overflows",
                    o.shape()
                ));
            }
            Some(b) if b > EVAL_LIMIT_BYTES && b < HUGE_BYTES => {
                stat("not_evaluated");
                return Ok(());
            }
            _ => {}
        }
    }
    match catch_unwind(AssertUnwindSafe(|| fx::eval(&outs))) {
        Err(p) => report(format!(
            "{op}: panicked while evaluating: {}",
            panic_msg(&*p)
        )),
        Ok(Err(e)) => {
            let s = e.to_string();
            if e.kind() == ErrorKind::Memory || named(&s) {
                stat("eval_err");
                Ok(())
            } else {
                report(format!(
                    "{op}: eval error does not start with the op name: {s:?}"
                ))
            }
        }
        Ok(Ok(())) => {
            stat("ok");
            Ok(())
        }
    }
}

// ---------------------------------------------------------------- strategies

/// Element values: small, boundary, huge, non-finite (cast to each dtype).
const VALUES: &[f64] = &[
    0.0,
    1.0,
    -1.0,
    2.0,
    -2.0,
    3.0,
    0.5,
    -0.5,
    7.0,
    100.0,
    127.0,
    -128.0,
    255.0,
    65535.0,
    1e10,
    -1e10,
    1e19,
    -1e19,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
];

/// A data array: shape, dtype, values (indices into `VALUES`, cycled) and
/// layout: contiguous, or a transposed, reversed (negative strides) or
/// broadcast (zero strides) view.
#[derive(Debug, Clone)]
struct Spec {
    shape: Vec<usize>,
    dtype: DType,
    vals: Vec<u8>,
    layout: u8,
}

/// An index array: shape, dtype (mostly integer) and values (cycled).
#[derive(Debug, Clone)]
struct ISpec {
    shape: Vec<usize>,
    dtype: DType,
    vals: Vec<i64>,
}

const INT_DTYPES: [DType; 8] = [
    DType::UInt8,
    DType::UInt16,
    DType::UInt32,
    DType::UInt64,
    DType::Int8,
    DType::Int16,
    DType::Int32,
    DType::Int64,
];

fn dim() -> impl Strategy<Value = usize> {
    0usize..=5
}
fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(dim(), 0..=4)
}
fn dtype() -> BoxedStrategy<DType> {
    prop::sample::select(DType::ALL.to_vec()).boxed()
}
fn index_dtype() -> BoxedStrategy<DType> {
    prop_oneof![6 => prop::sample::select(INT_DTYPES.to_vec()), 1 => dtype()].boxed()
}
fn spec_of(shape: impl Strategy<Value = Vec<usize>>) -> impl Strategy<Value = Spec> {
    (
        shape,
        dtype(),
        prop::collection::vec(any::<u8>(), 1..8),
        0u8..4,
    )
        .prop_map(|(shape, dtype, vals, layout)| Spec {
            shape,
            dtype,
            vals,
            layout,
        })
}
fn spec() -> impl Strategy<Value = Spec> {
    spec_of(shape())
}
fn index_val() -> BoxedStrategy<i64> {
    prop_oneof![
        10 => -8i64..8,
        1 => prop::sample::select(vec![
            i64::MIN,
            i64::MAX,
            i32::MIN as i64,
            i32::MAX as i64,
            u32::MAX as i64,
            1 << 40,
            -(1 << 40),
        ]),
    ]
    .boxed()
}
fn ispec_of(shape: impl Strategy<Value = Vec<usize>>) -> impl Strategy<Value = ISpec> {
    (
        shape,
        index_dtype(),
        prop::collection::vec(index_val(), 1..6),
    )
        .prop_map(|(shape, dtype, vals)| ISpec { shape, dtype, vals })
}
fn ispec() -> impl Strategy<Value = ISpec> {
    ispec_of(shape())
}
/// An axis: mostly near the valid range, sometimes extreme.
fn axis() -> BoxedStrategy<isize> {
    prop_oneof![
        10 => -6isize..6,
        1 => prop::sample::select(vec![isize::MIN, isize::MIN + 1, isize::MAX, i32::MIN as isize]),
    ]
    .boxed()
}
fn axes() -> impl Strategy<Value = Option<Vec<isize>>> {
    prop::option::weighted(0.8, prop::collection::vec(axis(), 0..=5))
}
/// A signed amount (offset, shift, slice bound, kth).
fn offset() -> BoxedStrategy<isize> {
    prop_oneof![
        10 => -7isize..7,
        1 => prop::sample::select(vec![
            isize::MIN,
            isize::MIN + 1,
            isize::MAX,
            isize::MAX - 1,
            i32::MIN as isize,
            1 << 40,
        ]),
    ]
    .boxed()
}
/// A size or count: mostly small, sometimes enormous.
fn size() -> BoxedStrategy<usize> {
    prop_oneof![
        10 => 0usize..6,
        1 => prop::sample::select(vec![
            usize::MAX,
            usize::MAX - 1,
            usize::MAX / 2,
            isize::MAX as usize,
            (isize::MAX as usize) + 1,
            1 << 62,
            1 << 40,
            1 << 32,
            1 << 31,
        ]),
    ]
    .boxed()
}
/// A shape that may hold enormous dims (overflowing products).
fn big_shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(size(), 0..=4)
}
/// A reshape target: dims, `-1`, other negatives, huge values.
fn reshape_dims() -> impl Strategy<Value = Vec<isize>> {
    prop::collection::vec(
        prop_oneof![
            10 => -2isize..7,
            1 => prop::sample::select(vec![isize::MIN, isize::MAX, 1 << 40, 1 << 62]),
        ],
        0..=5,
    )
}
fn finite_or_not() -> BoxedStrategy<f64> {
    prop_oneof![
        8 => -10.0f64..10.0,
        1 => prop::sample::select(vec![
            0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
            -1e300,
            f64::MIN_POSITIVE,
            1e18,
            -1e18,
            9.3e18,
        ]),
    ]
    .boxed()
}

// ---------------------------------------------------------------- building

fn values(n: usize, vals: &[u8]) -> Vec<f64> {
    (0..n)
        .map(|i| VALUES[vals[i % vals.len()] as usize % VALUES.len()])
        .collect()
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Builds and evaluates `s`. Building inputs goes through `from_slice`,
/// `astype` and `transpose`; a failure there is a finding for `astype`.
fn build(s: &Spec) -> std::result::Result<Array, TestCaseError> {
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<Array> {
        let data = values(numel(&s.shape), &s.vals);
        let nd = s.shape.len();
        let a = match s.layout % 4 {
            // Transposed: strides permuted.
            1 if nd >= 2 => {
                let rev: Vec<usize> = s.shape.iter().rev().copied().collect();
                let a = fx::astype(&Array::from_slice(&data, &rev)?, s.dtype)?;
                fx::transpose(&a, None)?
            }
            // Reversed along every axis: negative strides, offset at the end.
            2 if nd >= 1 => {
                let a = fx::astype(&Array::from_slice(&data, &s.shape)?, s.dtype)?;
                let idx = vec![SliceArg::REVERSED; nd];
                a.index(&idx)?
            }
            // Broadcast along the first axis: stride 0.
            3 if nd >= 1 => {
                let mut one = s.shape.clone();
                one[0] = 1;
                let data = values(numel(&one), &s.vals);
                let a = fx::astype(&Array::from_slice(&data, &one)?, s.dtype)?;
                fx::broadcast_to(&a, &s.shape)?
            }
            _ => fx::astype(&Array::from_slice(&data, &s.shape)?, s.dtype)?,
        };
        a.eval()?;
        Ok(a)
    }));
    match r {
        Ok(Ok(a)) => Ok(a),
        Ok(Err(e)) => Err(TestCaseError::fail(format!(
            "building input {s:?} failed: {e}"
        ))),
        Err(p) => Err(TestCaseError::fail(format!(
            "astype: panicked building input {s:?}: {}",
            panic_msg(&*p)
        ))),
    }
}

fn build_idx(s: &ISpec) -> std::result::Result<Array, TestCaseError> {
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<Array> {
        let n = numel(&s.shape);
        let data: Vec<i64> = (0..n).map(|i| s.vals[i % s.vals.len()]).collect();
        let a = fx::astype(&Array::from_slice(&data, &s.shape)?, s.dtype)?;
        a.eval()?;
        Ok(a)
    }));
    match r {
        Ok(Ok(a)) => Ok(a),
        Ok(Err(e)) => Err(TestCaseError::fail(format!(
            "building index input {s:?} failed: {e}"
        ))),
        Err(p) => Err(TestCaseError::fail(format!(
            "astype: panicked building index input {s:?}: {}",
            panic_msg(&*p)
        ))),
    }
}

/// A second shape related to `a`: equal, broadcastable (some dims 1, leading
/// dims dropped), or unrelated.
fn related_shape(a: &[usize], mode: u8, other: &[usize], mask: u8) -> Vec<usize> {
    match mode % 4 {
        0 => a.to_vec(),
        1 => a
            .iter()
            .enumerate()
            .map(|(i, &d)| if mask & (1 << i) != 0 { 1 } else { d })
            .collect(),
        2 => a[(mask as usize % (a.len() + 1))..].to_vec(),
        _ => other.to_vec(),
    }
}

/// `s` with another shape; dims too large to build (from huge sizes in the
/// arguments it was derived from) become 1.
fn with_shape(s: &Spec, shape: Vec<usize>) -> Spec {
    let shape = shape
        .into_iter()
        .map(|d| if d > 64 { 1 } else { d })
        .collect();
    Spec { shape, ..s.clone() }
}

fn opt(v: &Option<Vec<isize>>) -> Option<&[isize]> {
    v.as_deref()
}

/// `cases` per sweep, or `BAD_INPUT_CASES` when set (for longer hunts).
fn cfg(cases: u32) -> ProptestConfig {
    let cases = std::env::var("BAD_INPUT_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ------------------------------------------------------------------- sweeps

type Unary = fn(&Array) -> Result<Array>;
type Binary = fn(&Array, &Array) -> Result<Array>;

const UNARY: &[(&str, Unary)] = &[
    ("abs", fx::abs),
    ("arccos", fx::arccos),
    ("arccosh", fx::arccosh),
    ("arcsin", fx::arcsin),
    ("arcsinh", fx::arcsinh),
    ("arctan", fx::arctan),
    ("arctanh", fx::arctanh),
    ("bitwise_invert", fx::bitwise_invert),
    ("ceil", fx::ceil),
    ("conjugate", fx::conjugate),
    ("cos", fx::cos),
    ("cosh", fx::cosh),
    ("erf", fx::erf),
    ("erfinv", fx::erfinv),
    ("exp", fx::exp),
    ("expm1", fx::expm1),
    ("floor", fx::floor),
    ("imag", fx::imag),
    ("isfinite", fx::isfinite),
    ("isinf", fx::isinf),
    ("isnan", fx::isnan),
    ("log", fx::log),
    ("log10", fx::log10),
    ("log1p", fx::log1p),
    ("log2", fx::log2),
    ("logical_not", fx::logical_not),
    ("negative", fx::negative),
    ("real", fx::real),
    ("reciprocal", fx::reciprocal),
    ("rsqrt", fx::rsqrt),
    ("sigmoid", fx::sigmoid),
    ("sign", fx::sign),
    ("sin", fx::sin),
    ("sinh", fx::sinh),
    ("sqrt", fx::sqrt),
    ("square", fx::square),
    ("tan", fx::tan),
    ("tanh", fx::tanh),
    ("contiguous", fx::contiguous),
    ("zeros_like", fx::zeros_like),
    ("ones_like", fx::ones_like),
];

const BINARY: &[(&str, Binary)] = &[
    ("add", fx::add),
    ("arctan2", fx::arctan2),
    ("bitwise_and", fx::bitwise_and),
    ("bitwise_or", fx::bitwise_or),
    ("bitwise_xor", fx::bitwise_xor),
    ("divide", fx::divide),
    ("equal", fx::equal),
    ("floor_divide", fx::floor_divide),
    ("greater", fx::greater),
    ("greater_equal", fx::greater_equal),
    ("left_shift", fx::left_shift),
    ("less", fx::less),
    ("less_equal", fx::less_equal),
    ("logaddexp", fx::logaddexp),
    ("logical_and", fx::logical_and),
    ("logical_or", fx::logical_or),
    ("maximum", fx::maximum),
    ("minimum", fx::minimum),
    ("multiply", fx::multiply),
    ("not_equal", fx::not_equal),
    ("power", fx::power),
    ("remainder", fx::remainder),
    ("right_shift", fx::right_shift),
    ("subtract", fx::subtract),
];

proptest! {
    #![proptest_config(cfg(192))]

    /// Creation ops with random (often enormous) shapes, counts and ranges.
    #[test]
    fn sweep_creation(
        shape in big_shape(),
        small in shape(),
        dt in dtype(),
        value in finite_or_not(),
        start in finite_or_not(),
        stop in finite_or_not(),
        step in finite_or_not(),
        n in size(),
        m in prop::option::of(size()),
        k in offset(),
        like in spec(),
    ) {
        check("full", || fx::full(&shape, value, dt))?;
        check("zeros", || fx::zeros(&shape, dt))?;
        check("ones", || fx::ones(&small, dt))?;
        check("arange", || fx::arange(start, stop, step, dt))?;
        check("arange", || fx::arange(0.0, stop, 1.0, dt))?;
        check("linspace", || fx::linspace(start, stop, n, dt))?;
        check("eye", || fx::eye(n, m, k, dt))?;
        check("identity", || fx::identity(n, dt))?;
        check("tri", || fx::tri(n, m, k, dt))?;
        let a = build(&like)?;
        check("full_like", || fx::full_like(&a, value))?;
    }

    /// Unary ops, casts and views on every dtype.
    #[test]
    fn sweep_unary(s in spec(), dt in dtype(), decimals in prop_oneof![-4i32..4, Just(i32::MAX), Just(i32::MIN)]) {
        let a = build(&s)?;
        for (name, f) in UNARY {
            check(name, || f(&a))?;
        }
        check("round", || fx::round(&a, decimals))?;
        check("astype", || fx::astype(&a, dt))?;
        check("view", || fx::view(&a, dt))?;
        check("stop_gradient", || fx::stop_gradient(&a))?;
        check("negative", || -&a)?;
    }

    /// Binary and ternary ops, with equal, broadcastable and unrelated shapes.
    #[test]
    fn sweep_binary(
        sa in spec(),
        sb in spec(),
        sc in spec(),
        mode in any::<u8>(),
        mask in any::<u8>(),
        rtol in finite_or_not(),
        atol in finite_or_not(),
        nan in finite_or_not(),
        equal_nan in any::<bool>(),
    ) {
        let a = build(&sa)?;
        let b = build(&with_shape(&sb, related_shape(&sa.shape, mode, &sb.shape, mask)))?;
        let c = build(&with_shape(&sc, related_shape(&sa.shape, mode / 4, &sc.shape, mask / 3)))?;
        for (name, f) in BINARY {
            check(name, || f(&a, &b))?;
        }
        check("add", || &a + &b)?;
        check("add", || &a + 2.5)?;
        check("multiply", || &a * 3)?;
        check("left_shift", || fx::left_shift(&a, &Array::from(200)))?;
        check("power", || fx::power(&a, &Array::from(-1)))?;
        check("where", || fx::r#where(&a, &b, &c))?;
        check("clip", || fx::clip(&a, Some(&b), Some(&c)))?;
        check("clip", || fx::clip(&a, None, Some(&c)))?;
        check("clip", || fx::clip(&a, None, None))?;
        check("isclose", || fx::isclose(&a, &b, rtol, atol, equal_nan))?;
        check("allclose", || fx::allclose(&a, &b, rtol, atol, equal_nan))?;
        check("array_equal", || fx::array_equal(&a, &b, equal_nan))?;
        check("nan_to_num", || fx::nan_to_num(&a, nan, Some(rtol), None))?;
        check("broadcast_arrays", || fx::broadcast_arrays(&[a.clone(), b.clone(), c.clone()]))?;
    }

    /// Reductions, scans, softmax and sorting with random axes.
    #[test]
    fn sweep_reduce(
        s in spec(),
        ax in axes(),
        one in prop::option::weighted(0.85, axis()),
        keepdims in any::<bool>(),
        flags in any::<(bool, bool)>(),
        ddof in prop_oneof![-3i32..6, Just(i32::MAX), Just(i32::MIN)],
        kth in offset(),
        k in size(),
    ) {
        let a = build(&s)?;
        let axs = opt(&ax);
        check("sum", || fx::sum(&a, axs, keepdims))?;
        check("prod", || fx::prod(&a, axs, keepdims))?;
        check("mean", || fx::mean(&a, axs, keepdims))?;
        check("var", || fx::var(&a, axs, keepdims, ddof))?;
        check("std", || fx::std(&a, axs, keepdims, ddof))?;
        check("max", || fx::max(&a, axs, keepdims))?;
        check("min", || fx::min(&a, axs, keepdims))?;
        check("all", || fx::all(&a, axs, keepdims))?;
        check("any", || fx::any(&a, axs, keepdims))?;
        check("argmax", || fx::argmax(&a, one, keepdims))?;
        check("argmin", || fx::argmin(&a, one, keepdims))?;
        check("cumsum", || fx::cumsum(&a, one, flags.0, flags.1))?;
        check("cumprod", || fx::cumprod(&a, one, flags.0, flags.1))?;
        check("cummax", || fx::cummax(&a, one, flags.0, flags.1))?;
        check("cummin", || fx::cummin(&a, one, flags.0, flags.1))?;
        check("logsumexp", || fx::logsumexp(&a, axs, keepdims))?;
        check("softmax", || fx::softmax(&a, axs, flags.0))?;
        check("sort", || fx::sort(&a, one))?;
        check("argsort", || fx::argsort(&a, one))?;
        check("partition", || fx::partition(&a, kth, one))?;
        check("argpartition", || fx::argpartition(&a, kth, one))?;
        check("topk", || fx::topk(&a, k, one))?;
    }

    /// Fourier transforms and linalg with random lengths, axes and dtypes.
    #[test]
    fn sweep_fft_linalg(
        s in spec(),
        sb in spec(),
        n in prop::option::of(size()),
        lens in prop::option::of(prop::collection::vec(size(), 0..=4)),
        one in axis(),
        ax in axes(),
        keepdims in any::<bool>(),
        p in prop_oneof![Just(None), (-3i32..4).prop_map(|p| Some(fx::linalg::NormOrd::from(p))),
            Just(Some(fx::linalg::NormOrd::Fro)), Just(Some(fx::linalg::NormOrd::Nuc)),
            Just(Some(fx::linalg::NormOrd::P(f64::INFINITY))), Just(Some(fx::linalg::NormOrd::P(f64::NAN)))],
    ) {
        let a = build(&s)?;
        let axs = opt(&ax);
        let ls = lens.as_deref();
        type OneD = fn(&Array, Option<usize>, isize) -> Result<Array>;
        type ManyD = fn(&Array, Option<&[usize]>, Option<&[isize]>) -> Result<Array>;
        let one_d: [(&str, OneD); 4] = [
            ("fft", fx::fft::fft), ("ifft", fx::fft::ifft),
            ("rfft", fx::fft::rfft), ("irfft", fx::fft::irfft),
        ];
        for (name, f) in one_d {
            check(name, || f(&a, n, one))?;
        }
        let many_d: [(&str, ManyD); 8] = [
            ("fft2", fx::fft::fft2), ("ifft2", fx::fft::ifft2),
            ("rfft2", fx::fft::rfft2), ("irfft2", fx::fft::irfft2),
            ("fftn", fx::fft::fftn), ("ifftn", fx::fft::ifftn),
            ("rfftn", fx::fft::rfftn), ("irfftn", fx::fft::irfftn),
        ];
        for (name, f) in many_d {
            check(name, || f(&a, ls, axs))?;
        }
        // Singular-value norms fail in the SVD for non-finite matrices.
        check_as("norm", &["norm", "svd"], || fx::linalg::norm(&a, p, axs, keepdims))?;
        let b = build(&sb)?;
        check("cross", || fx::linalg::cross(&a, &b, one))?;
        check("inv", || fx::linalg::inv(&a))?;
        check("cholesky", || fx::linalg::cholesky(&a, keepdims))?;
        check_as("tri_inv", &["tri_inv", "inv"], || fx::linalg::tri_inv(&a, keepdims))?;
        check_as("solve_triangular", &["solve_triangular", "inv"], || {
            fx::linalg::solve_triangular(&a, &b, keepdims)
        })?;
        // A singular system fails in the inverse it is computed through.
        check_as("solve", &["solve", "inv"], || fx::linalg::solve(&a, &b))?;
        // The decompositions and what is built on them.
        check("qr", || fx::linalg::qr(&a).map(|(q, r)| vec![q, r]))?;
        check("svd", || fx::linalg::svd(&a, keepdims))?;
        check("eigh", || fx::linalg::eigh(&a, keepdims).map(|(w, v)| vec![w, v]))?;
        check_as("eigvalsh", &["eigvalsh", "eigh"], || fx::linalg::eigvalsh(&a, keepdims))?;
        check("eig", || fx::linalg::eig(&a).map(|(w, v)| vec![w, v]))?;
        check_as("eigvals", &["eigvals", "eig"], || fx::linalg::eigvals(&a))?;
        check("lu_factor", || fx::linalg::lu_factor(&a).map(|(l, p)| vec![l, p]))?;
        check_as("lu", &["lu", "lu_factor"], || fx::linalg::lu(&a).map(|(p, l, u)| vec![p, l, u]))?;
        check_as("pinv", &["pinv", "svd"], || fx::linalg::pinv(&a))?;
        check("det", || fx::linalg::det(&a))?;
        check("slogdet", || fx::linalg::slogdet(&a).map(|(s, l)| vec![s, l]))?;
        check_as("cholesky_inv", &["cholesky_inv", "inv"], || {
            fx::linalg::cholesky_inv(&a, keepdims)
        })?;
    }

    /// Reshaping, axis permutations, broadcasting, slicing.
    #[test]
    fn sweep_views(
        s in spec(),
        dims in reshape_dims(),
        a1 in axis(),
        a2 in axis(),
        ax in prop::collection::vec(axis(), 0..=5),
        perm in prop::option::weighted(0.8, prop::collection::vec(0usize..6, 0..=5)),
        target in prop_oneof![3 => shape(), 1 => big_shape()],
        starts in prop::collection::vec(offset(), 0..=5),
        stops in prop::collection::vec(offset(), 0..=5),
        steps in prop::collection::vec(prop_oneof![4 => -3isize..4, 1 => offset()], 0..=5),
        sq in axes(),
        idx in prop::collection::vec(
            prop_oneof![
                (offset(), offset(), offset()).prop_map(|(a, b, c)| SliceArg::range(Some(a), Some(b), c)),
                (prop::option::of(-6isize..6), prop::option::of(-6isize..6), -3isize..3)
                    .prop_map(|(a, b, c)| SliceArg::range(a, b, c)),
                offset().prop_map(SliceArg::Index),
                Just(SliceArg::NewAxis),
                Just(SliceArg::Ellipsis),
                Just(SliceArg::FULL),
            ],
            0..=5,
        ),
        offs in offset(),
    ) {
        let a = build(&s)?;
        check("reshape", || fx::reshape(&a, &dims))?;
        check("flatten", || fx::flatten(&a, a1, a2))?;
        check("unflatten", || fx::unflatten(&a, a1, &dims))?;
        check("squeeze", || fx::squeeze(&a, opt(&sq)))?;
        check("expand_dims", || fx::expand_dims(&a, &ax))?;
        check("transpose", || fx::transpose(&a, perm.as_deref()))?;
        check("swapaxes", || fx::swapaxes(&a, a1, a2))?;
        check("moveaxis", || fx::moveaxis(&a, a1, a2))?;
        check("broadcast_to", || fx::broadcast_to(&a, &target))?;
        check("slice", || fx::slice(&a, &starts, &stops, &steps))?;
        check("index", || a.index(&idx))?;
        check("diagonal", || fx::diagonal(&a, offs, a1, a2))?;
    }

    /// Joins, splits, tiling, padding, triangles, rolls, meshgrid.
    #[test]
    fn sweep_join(
        s in spec(),
        others in prop::collection::vec((spec(), any::<u8>(), any::<u8>()), 0..=3),
        a1 in axis(),
        sections in prop_oneof![
            size().prop_map(Sections::Count),
            prop::collection::vec(offset(), 0..=4).prop_map(Sections::Indices),
        ],
        reps in prop::collection::vec(size(), 0..=5),
        repeats in size(),
        rep_axis in prop::option::weighted(0.7, axis()),
        widths in prop::collection::vec((size(), size()), 0..=5),
        edge in any::<bool>(),
        fill in finite_or_not(),
        k in offset(),
        shifts in prop::collection::vec(offset(), 0..=4),
        roll_axes in axes(),
        sparse in any::<bool>(),
        indexing in prop::sample::select(vec!["xy", "ij", "", "xyz"]),
    ) {
        let a = build(&s)?;
        let mut arrays = vec![a.clone()];
        for (o, mode, mask) in &others {
            arrays.push(build(&with_shape(o, related_shape(&s.shape, *mode, &o.shape, *mask)))?);
        }
        check("concatenate", || fx::concatenate(&arrays, a1))?;
        check("stack", || fx::stack(&arrays, a1))?;
        check("split", || fx::split(&a, sections.clone(), a1))?;
        check("tile", || fx::tile(&a, &reps))?;
        check("repeat", || fx::repeat(&a, repeats, rep_axis))?;
        let mode = if edge { PadMode::Edge } else { PadMode::Constant(fill) };
        check("pad", || fx::pad(&a, &widths, mode))?;
        check("roll", || fx::roll(&a, &shifts, opt(&roll_axes)))?;
        check("tril", || fx::tril(&a, k))?;
        check("triu", || fx::triu(&a, k))?;
        check("diag", || fx::diag(&a, k))?;
        check("meshgrid", || fx::meshgrid(&arrays, sparse, indexing))?;
    }

    /// take / take_along_axis / put_along_axis / gather / scatter / at /
    /// slice_update with random index arrays (out of range, negative,
    /// extreme, non-integer dtypes).
    #[test]
    fn sweep_indexing(
        s in spec(),
        is in ispec(),
        is2 in ispec(),
        us in spec(),
        umode in any::<u8>(),
        one in prop::option::weighted(0.8, axis()),
        ax in prop::collection::vec(axis(), 0..=3),
        slice_sizes in prop::collection::vec(prop_oneof![4 => 0usize..4, 1 => size()], 0..=5),
        starts in prop::collection::vec(offset(), 0..=5),
        stops in prop::collection::vec(offset(), 0..=5),
        steps in prop::option::of(prop::collection::vec(prop_oneof![4 => -3isize..4, 1 => offset()], 0..=5)),
        nidx in 0usize..=3,
    ) {
        let a = build(&s)?;
        let i = build_idx(&is)?;
        let i2 = build_idx(&ISpec { shape: related_shape(&is.shape, umode, &is2.shape, umode / 4), ..is2.clone() })?;
        // Updates: either a shape derived from the index/array shapes or random.
        let upd_shape = match umode % 3 {
            0 => [is.shape.clone(), s.shape.iter().map(|_| 1).collect::<Vec<_>>()].concat(),
            1 => is.shape.clone(),
            _ => us.shape.clone(),
        };
        let u = build(&with_shape(&us, upd_shape))?;
        let idxs: Vec<Array> = [i.clone(), i2.clone(), i.clone()][..nidx].to_vec();
        check("take", || fx::take(&a, &i, one))?;
        check("take_along_axis", || fx::take_along_axis(&a, &i, one))?;
        check("put_along_axis", || fx::put_along_axis(&a, &i, &u, one))?;
        check("gather", || fx::gather(&a, &idxs, &ax, &slice_sizes))?;
        check("scatter", || fx::scatter(&a, &idxs, &u, &ax))?;
        check("scatter_add", || fx::scatter_add(&a, &idxs, &u, &ax))?;
        check("scatter_prod", || fx::scatter_prod(&a, &idxs, &u, &ax))?;
        check("scatter_max", || fx::scatter_max(&a, &idxs, &u, &ax))?;
        check("scatter_min", || fx::scatter_min(&a, &idxs, &u, &ax))?;
        check("slice_update", || fx::slice_update(&a, &u, &starts, &stops, steps.as_deref()))?;
        // `a.at(i).add(v)` is documented as scatter_add (and so on): errors
        // name `at` or that scatter (bool `subtract` names `subtract`).
        check_as("at", &["at", "scatter"], || a.at(idxs.clone())?.set(&u))?;
        check_as("at", &["at", "scatter_add"], || a.at(idxs.clone())?.add(&u))?;
        check_as("at", &["at", "scatter_add", "subtract"], || a.at(idxs.clone())?.subtract(&u))?;
        check_as("at", &["at", "scatter_prod"], || a.at(idxs.clone())?.multiply(&u))?;
        check_as("at", &["at", "scatter_max"], || a.at(idxs.clone())?.maximum(&u))?;
        check_as("at", &["at", "scatter_min"], || a.at(idxs.clone())?.minimum(&u))?;
    }

    /// matmul, addmm, inner, outer, tensordot, einsum, kron, conv1d, conv2d.
    #[test]
    fn sweep_linalg(
        sa in spec(),
        sb in spec(),
        sc in spec(),
        mode in any::<u8>(),
        inner_dim in dim(),
        td in prop_oneof![
            size().prop_map(TensordotAxes::Last),
            (prop::collection::vec(axis(), 0..=3), prop::collection::vec(axis(), 0..=3))
                .prop_map(|(a, b)| TensordotAxes::Pairs(a, b)),
        ],
        subs in prop_oneof![
            "[a-dA-Z.,>\\- ]{0,14}",
            ("[a-d]{0,4}", "[a-d]{0,4}", "[a-e]{0,4}").prop_map(|(a, b, c)| format!("{a},{b}->{c}")),
            ("[a-d]{0,4}", "[a-d]{0,4}").prop_map(|(a, b)| format!("...{a},{b}...")),
        ],
        alpha in finite_or_not(),
        beta in finite_or_not(),
        conv in (size(), size(), size(), size()),
        conv_shapes in (1usize..3, 0usize..6, 1usize..4, 1usize..4, 0usize..4),
    ) {
        let a = build(&sa)?;
        // b: [.., inner, n] to often fit a's last dim, or random.
        let b_shape = if mode % 2 == 0 {
            let k = sa.shape.last().copied().unwrap_or(inner_dim);
            let mut sh = sa.shape.clone();
            sh.truncate(sh.len().saturating_sub(2));
            sh.push(k);
            sh.push(inner_dim);
            sh
        } else {
            sb.shape.clone()
        };
        let b = build(&with_shape(&sb, b_shape))?;
        let c = build(&sc)?;
        check("matmul", || fx::matmul(&a, &b))?;
        check("addmm", || fx::addmm(&c, &a, &b, alpha as f32, beta as f32))?;
        check("inner", || fx::inner(&a, &b))?;
        check("outer", || fx::outer(&a, &b))?;
        check("tensordot", || fx::tensordot(&a, &b, td.clone()))?;
        check("einsum", || fx::einsum(&subs, &[a.clone(), b.clone()]))?;
        check("einsum", || fx::einsum(&subs, std::slice::from_ref(&a)))?;
        check("kron", || fx::kron(&a, &b))?;
        // Convolutions: channels-last input and weight, consistent or random.
        let (n, w, cin, cout, kw) = conv_shapes;
        let (stride, padding, dilation, groups) = conv;
        let (x1, w1, x2, w2) = if mode % 3 == 0 {
            (sa.shape.clone(), sb.shape.clone(), sa.shape.clone(), sb.shape.clone())
        } else {
            (vec![n, w, cin], vec![cout, kw, cin], vec![n, w, w, cin], vec![cout, kw, kw, cin])
        };
        let x1 = build(&with_shape(&sa, x1))?;
        let w1 = build(&with_shape(&sb, w1))?;
        check("conv1d", || fx::conv1d(&x1, &w1, stride, padding, dilation, groups))?;
        let x2 = build(&with_shape(&sa, x2))?;
        let w2 = build(&with_shape(&sb, w2))?;
        check("conv2d", || {
            fx::conv2d(&x2, &w2, (stride, 1), (padding, 0), (1, dilation), groups)
        })?;
    }
}

/// `v` cycled to `n` entries (`fill` when empty), or `v` itself when
/// `keep` (to keep wrong lengths in the sweep).
fn fit<T: Copy>(v: &[T], n: usize, fill: T, keep: bool) -> Vec<T> {
    if keep {
        return v.to_vec();
    }
    (0..n)
        .map(|i| if v.is_empty() { fill } else { v[i % v.len()] })
        .collect()
}

/// A valid axis of an `nd`-dim array from `x`, sometimes negative; `x` as is
/// (often invalid) when `raw`.
fn fit_axis(x: isize, nd: usize, raw: bool) -> isize {
    if raw || nd == 0 {
        return x;
    }
    let n = nd as isize;
    let v = x.rem_euclid(n);
    if x < 0 { v - n } else { v }
}

proptest! {
    #![proptest_config(cfg(256))]

    /// The view, indexing and contraction ops again, with arguments fitted
    /// to the array's shape most of the time (right lengths, valid axes,
    /// matching update shapes) so the kernels run on random data, views and
    /// indices; one case in five keeps the raw arguments.
    #[test]
    fn sweep_fitted(
        s in spec(),
        is in ispec(),
        us in spec(),
        raw in 0u8..5,
        x1 in axis(),
        x2 in axis(),
        starts in prop::collection::vec(offset(), 0..=5),
        stops in prop::collection::vec(offset(), 0..=5),
        steps in prop::collection::vec(prop_oneof![6 => -3isize..4, 1 => offset()], 0..=5),
        picks in prop::collection::vec(any::<u8>(), 0..=6),
        sizes in prop::collection::vec(prop_oneof![6 => 0usize..4, 1 => size()], 0..=5),
        labels in prop::collection::vec(0u8..5, 0..=8),
        conv in (prop_oneof![4 => 0usize..3, 1 => size()], prop_oneof![4 => 0usize..3, 1 => size()],
                 prop_oneof![4 => 0usize..3, 1 => size()], prop_oneof![4 => 0usize..3, 1 => size()]),
        cdims in (1usize..3, 0usize..6, 1usize..4, 1usize..4, 0usize..4),
    ) {
        let raw = raw == 0;
        let a = build(&s)?;
        let sh = s.shape.clone();
        let nd = sh.len();
        let (ax1, ax2) = (fit_axis(x1, nd, raw), fit_axis(x2, nd, raw));

        // Slicing with one entry per axis.
        let (b, e, k) = (fit(&starts, nd, 0, raw), fit(&stops, nd, isize::MAX, raw), fit(&steps, nd, 1, raw));
        check("slice", || fx::slice(&a, &b, &e, &k))?;
        // slice_update with an update of the slice's shape (or a broadcastable one).
        if let Ok(Ok(view)) = catch_unwind(AssertUnwindSafe(|| fx::slice(&a, &b, &e, &k))) {
            let ushape = if raw { us.shape.clone() } else { related_shape(view.shape(), picks.first().copied().unwrap_or(0) % 3, &us.shape, 0) };
            let u = build(&with_shape(&us, ushape))?;
            check("slice_update", || fx::slice_update(&a, &u, &b, &e, Some(&k)))?;
        }

        // reshape / unflatten with targets that hold the right number of elements.
        let mut dims: Vec<isize> = sh.iter().map(|&d| d as isize).collect();
        dims.reverse();
        if let Some(&p) = picks.first() {
            if !dims.is_empty() {
                let i = p as usize % dims.len();
                dims[i] = -1;
            }
        }
        check("reshape", || fx::reshape(&a, &dims))?;
        if nd > 0 {
            let d = sh[fit_axis(x1, nd, false).rem_euclid(nd as isize) as usize] as isize;
            let parts: Vec<isize> = match picks.get(1).copied().unwrap_or(0) % 4 {
                0 => vec![1, d, 1],
                1 => vec![-1, 1],
                2 => vec![d, -1],
                _ => vec![2, -1],
            };
            check("unflatten", || fx::unflatten(&a, ax1, &parts))?;
        }
        check("diagonal", || fx::diagonal(&a, steps.first().copied().unwrap_or(0), ax1, ax2))?;
        check("moveaxis", || fx::moveaxis(&a, ax1, ax2))?;
        check("swapaxes", || fx::swapaxes(&a, ax1, ax2))?;

        // take / take_along_axis / put_along_axis with index arrays of fitting rank.
        let i = build_idx(&is)?;
        check("take", || fx::take(&a, &i, Some(ax1)))?;
        if nd > 0 {
            let axn = fit_axis(x1, nd, false).rem_euclid(nd as isize) as usize;
            let mut ishape: Vec<usize> = sh.iter().enumerate()
                .map(|(d, &n)| if picks.get(d).is_some_and(|p| p % 3 == 0) { 1 } else { n })
                .collect();
            ishape[axn] = sizes.first().copied().unwrap_or(1).min(6);
            let ii = build_idx(&ISpec { shape: ishape.clone(), ..is.clone() })?;
            check("take_along_axis", || fx::take_along_axis(&a, &ii, Some(ax1)))?;
            let mut vshape = sh.clone();
            vshape[axn] = ishape[axn];
            let v = build(&with_shape(&us, if raw { us.shape.clone() } else { vshape }))?;
            check("put_along_axis", || fx::put_along_axis(&a, &ii, &v, Some(ax1)))?;
        }

        // gather / scatter: one index array per indexed axis, slice sizes that fit.
        let nidx = (picks.len() % 3).min(nd);
        let axes: Vec<isize> = (0..nidx).map(|j| fit_axis((j as isize * 2).wrapping_add(x2), nd, raw)).collect();
        let idxs: Vec<Array> = (0..nidx).map(|_| i.clone()).collect();
        let slice: Vec<usize> = if raw {
            sizes.clone()
        } else {
            sh.iter().enumerate().map(|(d, &n)| sizes.get(d).copied().unwrap_or(1).min(n)).collect()
        };
        check("gather", || fx::gather(&a, &idxs, &axes, &slice))?;
        let ushape = [is.shape.clone(), slice.clone()].concat();
        let u = build(&with_shape(&us, if raw { us.shape.clone() } else { ushape }))?;
        check("scatter", || fx::scatter(&a, &idxs, &u, &axes))?;
        check("scatter_add", || fx::scatter_add(&a, &idxs, &u, &axes))?;
        check("scatter_prod", || fx::scatter_prod(&a, &idxs, &u, &axes))?;
        check("scatter_max", || fx::scatter_max(&a, &idxs, &u, &axes))?;
        check("scatter_min", || fx::scatter_min(&a, &idxs, &u, &axes))?;
        let sel = [is.shape.clone(), sh[nidx.min(nd)..].to_vec()].concat();
        let v = build(&with_shape(&us, if raw { us.shape.clone() } else { sel }))?;
        check_as("at", &["at", "scatter"], || a.at(idxs.clone())?.set(&v))?;
        check_as("at", &["at", "scatter_add"], || a.at(idxs.clone())?.add(&v))?;
        check_as("at", &["at", "scatter_add", "subtract"], || a.at(idxs.clone())?.subtract(&v))?;
        check_as("at", &["at", "scatter_prod"], || a.at(idxs.clone())?.multiply(&v))?;
        check_as("at", &["at", "scatter_max"], || a.at(idxs.clone())?.maximum(&v))?;
        check_as("at", &["at", "scatter_min"], || a.at(idxs.clone())?.minimum(&v))?;

        // einsum with one label per axis (labels drawn from a small set, so
        // they repeat: traces, diagonals, broadcasting, contractions).
        let letters = |n: usize, off: usize| -> String {
            (0..n).map(|j| (b'a' + labels.get(j + off).copied().unwrap_or(j as u8) % 5) as char).collect()
        };
        let bshape = related_shape(&sh, picks.get(2).copied().unwrap_or(0), &us.shape, picks.get(3).copied().unwrap_or(0));
        let bb = build(&with_shape(&us, bshape.clone()))?;
        let (la, lb) = (letters(nd, 0), letters(bshape.len(), 3));
        let out: String = letters(labels.len() % 4, 5);
        check("einsum", || fx::einsum(&format!("{la}->{out}"), std::slice::from_ref(&a)))?;
        check("einsum", || fx::einsum(&format!("{la},{lb}"), &[a.clone(), bb.clone()]))?;
        check("einsum", || fx::einsum(&format!("{la},{lb}->{out}"), &[a.clone(), bb.clone()]))?;
        check("einsum", || fx::einsum(&format!("...{la},{lb}..."), &[a.clone(), bb.clone()]))?;

        // Convolutions with channels-last shapes that mostly fit.
        let (n, w, cin, cout, kw) = cdims;
        let (stride, padding, dilation, groups) = conv;
        let groups = if raw { groups } else { groups.clamp(1, 2) };
        let (cin, cout) = (cin.saturating_mul(groups), cout.saturating_mul(groups));
        let float = |sp: &Spec| {
            let floats = [DType::Float16, DType::BFloat16, DType::Float32, DType::Float64];
            if raw || floats.contains(&sp.dtype) {
                sp.clone()
            } else {
                Spec { dtype: DType::Float32, ..sp.clone() }
            }
        };
        let (s, us) = (float(&s), float(&us));
        let x1 = build(&with_shape(&s, vec![n, w, cin]))?;
        let w1 = build(&with_shape(&us, vec![cout, kw, cin / groups.max(1)]))?;
        check("conv1d", || fx::conv1d(&x1, &w1, stride, padding, dilation, groups))?;
        let x2 = build(&with_shape(&s, vec![n, w, w + 1, cin]))?;
        let w2 = build(&with_shape(&us, vec![cout, kw, kw, cin / groups.max(1)]))?;
        check("conv2d", || fx::conv2d(&x2, &w2, (stride, 1), (padding, 1), (1, dilation), groups))?;
    }
}

// ---------------------------------------------------------- hand-written cases

fn must_err<R: Outputs>(op: &str, f: impl FnOnce() -> Result<R>) {
    let r = catch_unwind(AssertUnwindSafe(f));
    match r {
        Err(p) => panic!("{op}: panicked: {}", panic_msg(&*p)),
        Ok(Ok(_)) => panic!("{op}: expected an error"),
        Ok(Err(e)) => {
            let s = e.to_string();
            assert!(s.starts_with(&format!("{op}: ")), "{op}: error {s:?}");
        }
    }
}

fn run(op: &str, f: impl FnOnce() -> Result<Array>) {
    if let Err(e) = check(op, f) {
        panic!("{e}");
    }
}

#[test]
fn fft_and_linalg_bad_input_names_the_op() {
    let a = fx::ones(&[2, 3], DType::Float32).unwrap();
    must_err("fft", || fx::fft::fft(&a, None, 2));
    must_err("fft", || fx::fft::fft(&a, Some(0), -1));
    must_err("fft", || fx::fft::fft(&a, Some(usize::MAX), -1));
    must_err("ifft", || fx::fft::ifft(&a, Some(1 << 62), 0));
    must_err("fftn", || fx::fft::fftn(&a, None, Some(&[1, -1])));
    must_err("fft2", || fx::fft::fft2(&a, Some(&[2, 2]), Some(&[0])));
    must_err("rfftn", || fx::fft::rfftn(&a, Some(&[1, 2, 3]), None));
    must_err("rfft", || {
        fx::fft::rfft(&a.astype(DType::Complex64)?, None, 0)
    });
    must_err("irfft2", || fx::fft::irfft2(&a, Some(&[0, 4]), None));
    must_err("norm", || {
        fx::linalg::norm(&a, None, Some(&[0, 1, 0]), false)
    });
    must_err("cross", || {
        fx::linalg::cross(&a, &fx::ones(&[2, 4], DType::Float32)?, -1)
    });
    must_err("cross", || {
        fx::linalg::cross(&a, &fx::ones(&[4, 3], DType::Float32)?, -1)
    });
}

#[test]
fn huge_sizes_are_errors_not_aborts() {
    let a = fx::ones(&[2, 3], DType::Float32).unwrap();
    must_err("repeat", || fx::repeat(&a, usize::MAX, None));
    must_err("repeat", || fx::repeat(&a, usize::MAX / 2, Some(0)));
    must_err("tile", || fx::tile(&a, &[usize::MAX, 2]));
    must_err("tile", || fx::tile(&a, &[1 << 40, 1 << 40]));
    must_err("full", || fx::full(&[usize::MAX, 2], 1.0, DType::Float32));
    must_err("full", || fx::full(&[1 << 32, 1 << 32], 1.0, DType::Int8));
    run("zeros", || {
        fx::zeros(&[usize::MAX, 0, usize::MAX], DType::Float32)
    });
    must_err("ones", || fx::ones(&[1 << 62, 1 << 3], DType::Float32));
    must_err("arange", || fx::arange(0.0, 1e300, 1.0, DType::Float32));
    must_err("arange", || {
        fx::arange(0.0, f64::INFINITY, 1.0, DType::Float32)
    });
    must_err("arange", || fx::arange(0.0, 1.0, 0.0, DType::Float32));
    must_err("arange", || fx::arange(0.0, 1.0, f64::NAN, DType::Float32));
    must_err("linspace", || {
        fx::linspace(0.0, 1.0, usize::MAX, DType::Float32)
    });
    must_err("eye", || fx::eye(usize::MAX, None, 0, DType::Float32));
    must_err("eye", || fx::eye(1 << 40, Some(1 << 40), 0, DType::Float32));
    must_err("tri", || fx::tri(usize::MAX, Some(3), 0, DType::Float32));
    must_err("identity", || fx::identity(1 << 33, DType::Float32));
    must_err("pad", || {
        fx::pad(&a, &[(usize::MAX, 1), (0, 0)], PadMode::Constant(0.0))
    });
    must_err("pad", || {
        fx::pad(&a, &[(1 << 40, 1 << 40), (1 << 40, 0)], PadMode::Edge)
    });
    must_err("broadcast_to", || fx::broadcast_to(&a, &[usize::MAX, 2, 3]));
    must_err("reshape", || fx::reshape(&a, &[isize::MAX, 2, 0]));
    must_err("topk", || fx::topk(&a, usize::MAX, Some(1)));
    must_err("conv1d", || {
        let x = fx::ones(&[1, 4, 1], DType::Float32)?;
        fx::conv1d(&x, &x, 1, usize::MAX, 1, 1)
    });
    must_err("conv1d", || {
        let x = fx::ones(&[1, 4, 1], DType::Float32)?;
        fx::conv1d(&x, &x, 1, 0, usize::MAX, 1)
    });
}

#[test]
fn extreme_axes_and_offsets() {
    let a = fx::ones(&[2, 3], DType::Float32).unwrap();
    must_err("sum", || fx::sum(&a, Some(&[isize::MIN]), false));
    must_err("sum", || fx::sum(&a, Some(&[0, -2]), false));
    must_err("expand_dims", || fx::expand_dims(&a, &[isize::MIN]));
    must_err("expand_dims", || fx::expand_dims(&a, &[0, 0]));
    must_err("swapaxes", || fx::swapaxes(&a, isize::MAX, 0));
    must_err("transpose", || fx::transpose(&a, Some(&[0, 0])));
    must_err("transpose", || fx::transpose(&a, Some(&[usize::MAX, 0])));
    must_err("slice", || fx::slice(&a, &[0, 0], &[2, 3], &[0, 1]));
    must_err("roll", || fx::roll(&a, &[1, 2, 3], Some(&[0, 1])));
    run("roll", || fx::roll(&a, &[isize::MIN], None));
    run("roll", || {
        fx::roll(&a, &[isize::MIN, isize::MAX], Some(&[0, 1]))
    });
    run("tril", || fx::tril(&a, isize::MIN));
    run("triu", || fx::triu(&a, isize::MAX));
    run("diagonal", || fx::diagonal(&a, isize::MIN, 0, 1));
    run("diagonal", || fx::diagonal(&a, isize::MAX, 1, 0));
    run("eye", || fx::eye(3, Some(2), isize::MIN, DType::Float32));
    run("tri", || fx::tri(3, Some(2), isize::MAX, DType::Int32));
    run("slice", || {
        fx::slice(
            &a,
            &[isize::MIN, isize::MAX],
            &[isize::MAX, isize::MIN],
            &[isize::MIN, isize::MAX],
        )
    });
    run("partition", || fx::partition(&a, -1, Some(1)));
    must_err("partition", || fx::partition(&a, isize::MIN, Some(1)));
    must_err("partition", || fx::partition(&a, 3, Some(1)));
}

#[test]
fn out_of_range_indices_fail_at_eval_with_the_op_name() {
    let a = fx::ones(&[2, 3], DType::Float32).unwrap();
    for v in [2i64, -3, i64::MIN, i64::MAX] {
        let i = Array::from_slice(&[v], &[1]).unwrap();
        let r = fx::take(&a, &i, Some(0)).unwrap();
        let e = r.eval().unwrap_err();
        assert!(e.to_string().starts_with("take: "), "{e}");
        let u = fx::zeros(&[1, 1, 3], DType::Float32).unwrap();
        let r = fx::scatter_add(&a, std::slice::from_ref(&i), &u, &[0]).unwrap();
        let e = r.eval().unwrap_err();
        assert!(e.to_string().starts_with("scatter_add: "), "{e}");
    }
}

/// Regressions for findings of the sweep.
#[test]
fn regressions() {
    let a = fx::ones(&[2, 3], DType::Float32).unwrap();
    // Errors of ops built on other ops name the op that was called.
    must_err("zeros", || fx::zeros(&[usize::MAX, 2], DType::Float32));
    must_err("ones", || fx::ones(&[1 << 62, 8], DType::Float32));
    must_err("identity", || fx::identity(1 << 40, DType::Float32));
    let z = Array::from_slice(&[Complex64::new(1.0, 0.0)], &[1]).unwrap();
    must_err("clip", || fx::clip(&a, Some(&z), None));
    must_err("clip", || fx::clip(&a, None, Some(&z)));
    must_err("clip", || {
        fx::clip(&a, Some(&fx::zeros(&[4], DType::Float32)?), None)
    });
    // A zero-size shape whose other dims overflow when multiplied: strides
    // would overflow (numpy: "array is too big").
    must_err("full", || {
        fx::full(&[2, 1 << 62, 5, 0], 1.0, DType::Float32)
    });
    must_err("reshape", || {
        fx::reshape(&fx::zeros(&[0], DType::Bool)?, &[0, 2, isize::MAX])
    });
    // eye/tri with a huge number of rows but no columns: empty, not a hang.
    run("eye", || fx::eye(1 << 58, Some(0), 0, DType::Float32));
    run("tri", || fx::tri(1 << 58, Some(0), 0, DType::Float32));
    // linspace checks its size.
    must_err("linspace", || {
        fx::linspace(0.0, 1.0, 1 << 63, DType::Float32)
    });
    // An empty axis split into an enormous number of parts.
    let e = fx::zeros(&[0, 2], DType::Float32).unwrap();
    must_err("split", || fx::split(&e, 1usize << 40, 0));
    assert_eq!(fx::split(&e, 3usize, 0).unwrap().len(), 3);
    // einsum: a size-1 axis broadcasts against a size-0 one.
    let x = fx::zeros(&[3, 0], DType::Float32).unwrap();
    let y = fx::zeros(&[3, 1], DType::Float32).unwrap();
    let r = fx::einsum("ij,ij->ij", &[x, y]).unwrap();
    assert_eq!(r.shape(), &[3, 0]);
    r.eval().unwrap();
    let r = fx::einsum(
        "ij,ij",
        &[
            fx::zeros(&[4, 0], DType::Float32).unwrap(),
            fx::ones(&[4, 1], DType::Float32).unwrap(),
        ],
    )
    .unwrap();
    assert_eq!(r.item::<f32>().unwrap(), 0.0);
    // Slices selecting at most one element with an extreme step.
    run("slice", || {
        fx::slice(&a, &[0, 0], &[1, 1], &[isize::MIN, isize::MAX])
    });
    run("index", || {
        a.index(&[SliceArg::range(Some(-1), None, isize::MIN)])
    });
    // Tiling / repeating an empty axis a huge number of times stays empty.
    let e = fx::zeros(&[0, 2], DType::Float32).unwrap();
    run("tile", || fx::tile(&e, &[1 << 62, 1]));
    run("repeat", || fx::repeat(&e, 1 << 62, Some(0)));
    run("repeat", || fx::repeat(&e, usize::MAX, None));
    // Reversed empty operands gave matmul a negative batch offset.
    let r = fx::zeros(&[5, 0, 1], DType::Float16).unwrap();
    let r = r
        .index(&[SliceArg::REVERSED, SliceArg::REVERSED, SliceArg::REVERSED])
        .unwrap();
    let one = fx::zeros(&[1], DType::Bool).unwrap();
    let c = fx::zeros(&[], DType::Bool).unwrap();
    run("matmul", || fx::matmul(&r, &one));
    run("addmm", || fx::addmm(&c, &r, &one, 1.0, 1.0));
    run("matmul", || fx::matmul(&fx::transpose(&r, None)?, &r));
    // conv: padding near isize::MAX with a huge stride overflowed the tap
    // index in the kernel.
    let x = fx::ones(&[1, 3, 2], DType::Float64).unwrap();
    let w = fx::ones(&[1, 1, 2], DType::Float64).unwrap();
    must_err("conv1d", || fx::conv1d(&x, &w, 1 << 62, 1 << 62, 1, 1));
    let x = fx::ones(&[1, 3, 3, 2], DType::Float64).unwrap();
    let w = fx::ones(&[1, 1, 1, 2], DType::Float64).unwrap();
    must_err("conv2d", || {
        fx::conv2d(&x, &w, (1 << 62, 1), (1 << 62, 0), (1, 1), 1)
    });
}

proptest! {
    #![proptest_config(cfg(192))]

    /// The fused kernels of `ferrox::fast` with random shapes, dtypes,
    /// masks, dims and offsets: an error naming the op, or a value.
    #[test]
    fn sweep_fast(
        qs in spec(),
        ks in spec(),
        vs in spec(),
        ms in spec(),
        dims in prop_oneof![4 => 0usize..9, 1 => size()],
        offset in prop_oneof![4 => -3i64..5, 1 => Just(i64::MAX), 1 => Just(i64::MIN)],
        flags in (any::<bool>(), any::<bool>()),
    ) {
        let (q, k, v, m) = (build(&qs)?, build(&ks)?, build(&vs)?, build(&ms)?);
        for mask in [fx::fast::AttentionMask::None, fx::fast::AttentionMask::Causal, fx::fast::AttentionMask::Array(&m)] {
            check("scaled_dot_product_attention", || fx::fast::scaled_dot_product_attention(&q, &k, &v, 0.5, mask, None))?;
            check("scaled_dot_product_attention", || fx::fast::scaled_dot_product_attention(&q, &q, &q, 0.5, mask, Some(&k)))?;
        }
        check("rms_norm", || fx::fast::rms_norm(&q, Some(&k), 1e-5))?;
        check("rms_norm", || fx::fast::rms_norm(&q, None, 1e-5))?;
        check("layer_norm", || fx::fast::layer_norm(&q, flags.0.then_some(&k), flags.1.then_some(&v), 1e-5))?;
        let base = flags.0.then_some(10000.0);
        let freqs = (!flags.0).then_some(&k);
        check("rope", || fx::fast::rope(&q, dims, flags.1, base, 1.0, fx::fast::RopeOffset::Scalar(offset), freqs))?;
        check("rope", || fx::fast::rope(&q, dims, flags.1, Some(10000.0), 1.0, fx::fast::RopeOffset::Array(&m), None))?;
        // A composite: a target out of range is take_along_axis's index error.
        check_as("cross_entropy", &["cross_entropy", "take_along_axis"], || fx::fast::cross_entropy(&q, &m))?;
    }
}

// ------------------------------------------------------------ quantization

fn quant_dim() -> BoxedStrategy<usize> {
    prop::sample::select(vec![0usize, 1, 2, 3, 4, 8, 16, 32, 48, 64, 128]).boxed()
}
fn quant_shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(quant_dim(), 0..=3)
}
fn opt_param() -> BoxedStrategy<Option<usize>> {
    prop_oneof![
        2 => Just(None),
        3 => prop::sample::select(vec![1usize, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 128]).prop_map(Some),
        1 => prop::sample::select(vec![0usize, 9, 33, 1 << 20, usize::MAX]).prop_map(Some),
    ]
    .boxed()
}
fn quant_mode() -> BoxedStrategy<&'static str> {
    prop::sample::select(vec![
        "affine", "affine", "mxfp4", "mxfp8", "nvfp4", "int4", "",
    ])
    .boxed()
}

proptest! {
    #![proptest_config(cfg(256))]

    /// quantize, dequantize, quantized_matmul and gather_qmm with random
    /// shapes, dtypes, group sizes, bits and modes; the packed operands
    /// are either quantize's own outputs or random arrays.
    #[test]
    fn sweep_quantized(
        sw in spec_of(quant_shape()),
        sx in spec_of(quant_shape()),
        sq in spec_of(quant_shape()),
        ss in spec_of(quant_shape()),
        gs in opt_param(),
        bits in opt_param(),
        mode in quant_mode(),
        transpose in any::<bool>(),
        own in any::<bool>(),
        si in ispec(),
    ) {
        let w = build(&sw)?;
        let x = build(&sx)?;
        check("quantize", || fx::quantize(&w, gs, bits, mode, None).map(|(a, b, c)| {
            let mut v = vec![a, b];
            v.extend(c);
            v
        }))?;
        let packed = if own {
            fx::quantize(&w, gs, bits, mode, None).ok()
        } else {
            None
        };
        let (wq, s, b) = match packed {
            Some((wq, s, b)) => (wq, s, b),
            None => {
                let s = build(&ss)?;
                (build(&sq)?, s.clone(), Some(s))
            }
        };
        let idx = build_idx(&si)?;
        check("dequantize", || fx::dequantize(&wq, &s, b.as_ref(), gs, bits, mode, None, None))?;
        check("dequantize", || fx::dequantize(&wq, &s, None, gs, bits, mode, None, Some(DType::Float16)))?;
        check("quantized_matmul", || {
            fx::quantized_matmul(&x, &wq, &s, b.as_ref(), transpose, gs, bits, mode)
        })?;
        check("quantized_matmul", || {
            fx::quantized_matmul(&w, &wq, &s, b.as_ref(), !transpose, gs, bits, mode)
        })?;
        check_as("gather_qmm", &["gather_qmm", "take"], || {
            fx::gather_qmm(&x, &wq, &s, b.as_ref(), None, Some(&idx), transpose, gs, bits, mode, false)
        })?;
        check_as("gather_qmm", &["gather_qmm", "take"], || {
            fx::gather_qmm(&x, &wq, &s, b.as_ref(), Some(&idx), None, transpose, gs, bits, mode, true)
        })?;
    }
}

/// Inputs the sweeps found once (each a panic or another op's error): they
/// stay fixed whatever seeds later runs draw.
#[test]
fn sweep_findings_stay_fixed() -> TestResult {
    // A float64 rope of an empty array (its reference reshaped with -1).
    let empty = fx::zeros(&[0, 0, 4], DType::Float64).expect("zeros");
    check("rope", || {
        fx::fast::rope(
            &empty,
            4,
            false,
            Some(10000.0),
            1.0,
            fx::fast::RopeOffset::Scalar(0),
            None,
        )
    })?;
    // Lengths whose product overflows, on an empty array.
    let lens = [1usize << 40, 1 << 40];
    for (name, f) in [
        (
            "fft2",
            fx::fft::fft2 as fn(&Array, Option<&[usize]>, Option<&[isize]>) -> Result<Array>,
        ),
        ("rfft2", fx::fft::rfft2),
    ] {
        check(name, || f(&empty, Some(&lens), None))?;
    }
    // A quantized product of an empty quantized batch
    // (also in mlx_quantized.rs, with its values).
    let w = fx::zeros(&[2, 0, 0], DType::Float16).expect("zeros");
    let (wq, s, b) = fx::quantize(&w, None, None, "affine", None).expect("quantize");
    check("quantized_matmul", || {
        fx::quantized_matmul(&w, &wq, &s, b.as_ref(), true, None, None, "affine")
    })
}

#[test]
fn quantization_rejects_what_mlx_rejects() {
    let w = fx::ones(&[4, 64], DType::Float32).unwrap();
    let cases: Vec<(&str, Result<Vec<Array>>)> = vec![
        (
            "group size 48",
            fx::quantize(&w, Some(48), Some(4), "affine", None).map(|r| vec![r.0]),
        ),
        (
            "7 bits",
            fx::quantize(&w, Some(64), Some(7), "affine", None).map(|r| vec![r.0]),
        ),
        (
            "rank 1",
            fx::quantize(
                &fx::ones(&[64], DType::Float32).unwrap(),
                None,
                None,
                "affine",
                None,
            )
            .map(|r| vec![r.0]),
        ),
        (
            "not divisible",
            fx::quantize(
                &fx::ones(&[2, 96], DType::Float32).unwrap(),
                Some(64),
                None,
                "affine",
                None,
            )
            .map(|r| vec![r.0]),
        ),
        (
            "int weights",
            fx::quantize(
                &fx::ones(&[2, 64], DType::Int32).unwrap(),
                None,
                None,
                "affine",
                None,
            )
            .map(|r| vec![r.0]),
        ),
        (
            "mode",
            fx::quantize(&w, None, None, "int4", None).map(|r| vec![r.0]),
        ),
        (
            "mxfp4 group",
            fx::quantize(&w, Some(64), None, "mxfp4", None).map(|r| vec![r.0]),
        ),
    ];
    for (what, r) in cases {
        let e = r.err().unwrap_or_else(|| panic!("{what}: accepted"));
        assert!(e.to_string().starts_with("quantize: "), "{what}: {e}");
    }
    let (wq, s, b) = fx::quantize(&w, Some(32), Some(4), "affine", None).unwrap();
    let b = b.unwrap();
    let x = fx::ones(&[2, 32], DType::Float32).unwrap();
    let e =
        fx::quantized_matmul(&x, &wq, &s, Some(&b), true, Some(32), Some(4), "affine").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("quantized_matmul: x has shape [2, 32]"),
        "{e}"
    );
    let e = fx::quantized_matmul(
        &fx::ones(&[2, 64], DType::Int32).unwrap(),
        &wq,
        &s.astype(DType::Int32).unwrap(),
        Some(&b.astype(DType::Int32).unwrap()),
        true,
        Some(32),
        Some(4),
        "affine",
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Dtype, "{e}");
    let e = fx::dequantize(
        &wq,
        &s.reshape(&[8]).unwrap(),
        Some(&b.reshape(&[8]).unwrap()),
        Some(32),
        Some(4),
        "affine",
        None,
        None,
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("dequantize: "), "{e}");
    let e = fx::dequantize(
        &wq.astype(DType::Float32).unwrap(),
        &s,
        Some(&b),
        Some(32),
        Some(4),
        "affine",
        None,
        None,
    )
    .unwrap_err();
    assert!(e.to_string().contains("uint32"), "{e}");
}
