//! Unit tests of the unary ops: dtype rules, error messages, strided and
//! broadcast inputs straight into the kernels, the SIMD tails and the
//! parallel path, half types against `f32`, and proptests against naive
//! loops.
#![allow(clippy::type_complexity)] // test code: kept as written

use super::dtypes::{Plan, output_dtype, plan};
use super::*;
use crate::backend::cpu::math;
use crate::backend::cpu::unary::element::{round_decimals, round_int_decimals};
use crate::dtype::{Complex64, DType};
use crate::error::ErrorKind;
use crate::graph::array::Array;
use crate::graph::layout::Data;
use half::{bf16, f16};
use proptest::prelude::*;

/// An op under test.
type OpFn = fn(&Array) -> crate::error::Result<Array>;
/// An op and its scalar reference (and tolerance).
type Check<T> = (OpFn, fn(T) -> T);
type CheckTol = (OpFn, fn(f64) -> f64, f64);

const ALL_OPS: [UnaryOp; 40] = {
    use UnaryOp::*;
    [
        Abs,
        Negative,
        Sign,
        Square,
        Sqrt,
        Rsqrt,
        Reciprocal,
        Exp,
        Expm1,
        Log,
        Log1p,
        Log2,
        Log10,
        Sin,
        Cos,
        Tan,
        ArcSin,
        ArcCos,
        ArcTan,
        Sinh,
        Cosh,
        Tanh,
        ArcSinh,
        ArcCosh,
        ArcTanh,
        Sigmoid,
        Erf,
        ErfInv,
        Floor,
        Ceil,
        Trunc,
        Round(2),
        LogicalNot,
        BitwiseInvert,
        IsNan,
        IsInf,
        IsFinite,
        Real,
        Imag,
        Conjugate,
    ]
};

fn f32s(a: &Array) -> Vec<f32> {
    a.to_vec::<f32>().unwrap()
}

/// Runs `Unary(op)` straight on `data` seen with `shape` (any strides).
fn eval_view(op: UnaryOp, data: &Data, shape: &[usize], dtype: DType) -> Data {
    let out_dtype = output_dtype(op, dtype).unwrap();
    let x = Operand { data, shape, dtype };
    Unary(op)
        .eval_cpu(
            &[x],
            OutSpec {
                shape,
                dtype: out_dtype,
            },
        )
        .unwrap()
}

#[test]
fn dtype_rules_follow_mlx() {
    use DType::*;
    let out = |op, d| match plan(op, d) {
        Ok(Plan::Node { output, .. }) => Some(output),
        Ok(Plan::Identity | Plan::Zeros) => Some(d),
        Ok(Plan::Constant(_)) => Some(Bool),
        Err(_) => None,
    };
    assert_eq!(out(UnaryOp::Exp, Int32), Some(Float32));
    assert_eq!(out(UnaryOp::Exp, Bool), Some(Float32));
    assert_eq!(out(UnaryOp::Exp, Float16), Some(Float16));
    assert_eq!(out(UnaryOp::Sqrt, UInt64), Some(Float32));
    assert_eq!(out(UnaryOp::Exp, Complex64), Some(Complex64));
    assert_eq!(out(UnaryOp::Abs, Complex64), Some(Float32));
    assert_eq!(out(UnaryOp::Real, Complex64), Some(Float32));
    assert_eq!(out(UnaryOp::Imag, Int8), Some(Int8));
    assert_eq!(out(UnaryOp::IsNan, Float64), Some(Bool));
    assert_eq!(out(UnaryOp::LogicalNot, Complex64), Some(Bool));
    assert_eq!(out(UnaryOp::Square, Bool), Some(Bool));
    assert_eq!(out(UnaryOp::Reciprocal, Int16), Some(Float32));
    assert_eq!(plan(UnaryOp::Floor, Int32).unwrap(), Plan::Identity);
    assert_eq!(plan(UnaryOp::Round(3), UInt8).unwrap(), Plan::Identity);
    assert_eq!(
        plan(UnaryOp::Round(-1), UInt8).unwrap(),
        Plan::Node {
            input: UInt8,
            output: UInt8
        }
    );
    assert_eq!(plan(UnaryOp::Abs, UInt16).unwrap(), Plan::Identity);
    assert_eq!(
        plan(UnaryOp::IsFinite, Int64).unwrap(),
        Plan::Constant(true)
    );
    assert_eq!(plan(UnaryOp::Conjugate, Float32).unwrap(), Plan::Identity);
    for op in [
        UnaryOp::Expm1,
        UnaryOp::Log1p,
        UnaryOp::Sigmoid,
        UnaryOp::Erf,
        UnaryOp::ErfInv,
        UnaryOp::Floor,
    ] {
        assert_eq!(out(op, Complex64), None, "{op:?}");
    }
    assert_eq!(out(UnaryOp::BitwiseInvert, Float32), None);
    assert_eq!(out(UnaryOp::Negative, Bool), None);
}

#[test]
fn every_op_and_dtype_either_builds_and_evaluates_or_errors_with_its_name() {
    for op in ALL_OPS {
        for dtype in DType::ALL {
            let a = crate::ops::creation::ones(&[3], dtype).unwrap();
            match build_op(op, &a) {
                Ok(y) => {
                    y.eval()
                        .unwrap_or_else(|e| panic!("{op:?} on {dtype}: {e}"));
                    if let Ok(Plan::Node { output, .. }) = plan(op, dtype) {
                        assert_eq!(y.dtype(), output);
                    }
                }
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::Dtype, "{op:?} on {dtype}");
                    assert!(e.to_string().starts_with(op.name()), "{e}");
                    assert!(
                        e.to_string().contains(dtype.name()) || op == UnaryOp::Negative,
                        "{e}"
                    );
                }
            }
        }
    }
}

fn build_op(op: UnaryOp, a: &Array) -> crate::error::Result<Array> {
    super::dtypes::build(op, a)
}

#[test]
fn errors_name_the_op_and_the_dtype() {
    let b = Array::scalar(true);
    let e = negative(&b).unwrap_err();
    assert_eq!(
        e.to_string(),
        "negative: not supported for bool, use logical_not instead"
    );
    let z = Array::scalar(Complex64::new(1.0, 1.0));
    assert_eq!(
        expm1(&z).unwrap_err().to_string(),
        "expm1: dtype complex64 is not supported"
    );
    assert_eq!(
        floor(&z).unwrap_err().to_string(),
        "floor: dtype complex64 is not supported"
    );
    let f = Array::scalar(1.5f32);
    assert_eq!(
        bitwise_invert(&f).unwrap_err().to_string(),
        "bitwise_invert: only integer and bool dtypes are supported, got float32"
    );
}

#[test]
fn kernels_reject_inconsistent_nodes_without_panicking() {
    let a = Array::from_slice(&[1i32, 2], &[2]).unwrap();
    let data = a.data().unwrap();
    let x = Operand {
        data: &data,
        shape: &[2],
        dtype: DType::Int32,
    };
    // exp on int32 would have been cast by the builder.
    let e = Unary(UnaryOp::Exp)
        .eval_cpu(
            &[x],
            OutSpec {
                shape: &[2],
                dtype: DType::Float32,
            },
        )
        .unwrap_err();
    assert!(e.to_string().starts_with("exp:"), "{e}");
    assert!(
        Unary(UnaryOp::Abs)
            .eval_cpu(
                &[],
                OutSpec {
                    shape: &[2],
                    dtype: DType::Int32
                }
            )
            .is_err()
    );
}

#[test]
fn identities_return_the_input() {
    let i = Array::from_slice(&[1i32, -2], &[2]).unwrap();
    for y in [floor(&i), ceil(&i), round(&i, 2), real(&i), conjugate(&i)] {
        assert_eq!(y.unwrap().id(), i.id());
    }
    let u = Array::from_slice(&[1u8], &[1]).unwrap();
    assert_eq!(abs(&u).unwrap().id(), u.id());
    assert_eq!(imag(&i).unwrap().to_vec::<i32>().unwrap(), vec![0, 0]);
    assert_eq!(
        isnan(&i).unwrap().to_vec::<bool>().unwrap(),
        vec![false, false]
    );
    assert_eq!(
        isfinite(&i).unwrap().to_vec::<bool>().unwrap(),
        vec![true, true]
    );
}

#[test]
fn neg_operator_and_methods_forward() {
    let a = Array::from_slice(&[1.0f32, -4.0], &[2]).unwrap();
    assert_eq!(f32s(&(-&a).unwrap()), vec![-1.0, 4.0]);
    assert_eq!(f32s(&a.abs().unwrap().sqrt().unwrap()), vec![1.0, 2.0]);
    assert!((-Array::scalar(true)).is_err());
}

/// A 2x3 f32 array and its transpose as a (3, 2) view with strides (1, 3),
/// plus the same values reversed as a view with stride -1.
fn strided_views() -> (Vec<f32>, Data) {
    let vals = vec![-2.5f32, -0.0, 0.3, 1.0, 7.25, f32::NAN];
    let a = Array::from_slice(&vals, &[2, 3]).unwrap();
    (vals, a.data().unwrap())
}

#[test]
fn transposed_and_reversed_inputs_match_contiguous_ones() {
    let (vals, data) = strided_views();
    let transposed = Data {
        storage: data.storage.clone(),
        strides: vec![1, 3],
        offset: 0,
    };
    let reversed = Data {
        storage: data.storage.clone(),
        strides: vec![-1],
        offset: 5,
    };
    let t_order: Vec<f32> = (0..3)
        .flat_map(|c| (0..2).map(move |r| (r, c)))
        .map(|(r, c)| vals[r * 3 + c])
        .collect();
    let r_order: Vec<f32> = vals.iter().rev().copied().collect();
    for op in [
        UnaryOp::Exp,
        UnaryOp::Sin,
        UnaryOp::Abs,
        UnaryOp::Round(1),
        UnaryOp::IsNan,
        UnaryOp::Tanh,
    ] {
        for (view, shape, order) in [
            (&transposed, vec![3, 2], &t_order),
            (&reversed, vec![6], &r_order),
        ] {
            let got = eval_view(op, view, &shape, DType::Float32);
            let contiguous = Array::from_slice(order, &shape).unwrap();
            let want = build_op(op, &contiguous).unwrap();
            let want_data = want.data().unwrap();
            let bytes = |d: &Data| d.storage.as_slice::<u8>()[..6 * want.itemsize()].to_vec();
            assert_eq!(bytes(&got), bytes(&want_data), "{op:?} {shape:?}");
        }
    }
}

#[test]
fn broadcast_input_with_zero_strides() {
    let a = Array::from_slice(&[0.5f32], &[1]).unwrap();
    let data = a.data().unwrap();
    let view = Data {
        storage: data.storage.clone(),
        strides: vec![0, 0],
        offset: 0,
    };
    let got = eval_view(UnaryOp::Exp, &view, &[4, 5], DType::Float32);
    assert_eq!(got.to_vec::<f32>(&[4, 5]), vec![math::exp_f32(0.5); 20]);
}

#[test]
fn transposed_views_through_the_graph() {
    let a = crate::ops::creation::arange(-3.0, 3.0, 0.5, DType::Float32)
        .unwrap()
        .reshape(&[3, 4])
        .unwrap();
    let t = crate::ops::views::transpose(&a, None).unwrap();
    let want: Vec<f32> = f32s(&crate::ops::views::contiguous(&t).unwrap())
        .iter()
        .map(|&v| math::tanh_f32(v))
        .collect();
    assert_eq!(f32s(&tanh(&t).unwrap()), want);
    let r = crate::ops::views::slice(&a, &[-1, -1], &[-4, -5], &[-1, -2]).unwrap();
    let want: Vec<f32> = f32s(&crate::ops::views::contiguous(&r).unwrap())
        .iter()
        .map(|&v| v.abs())
        .collect();
    assert_eq!(f32s(&abs(&r).unwrap()), want);
}

#[test]
fn simd_tails_and_the_parallel_path_match_the_element_functions() {
    let sizes: Vec<usize> = (1..=67).chain([65_536, 65_537, 200_003]).collect();
    for n in sizes {
        let vals: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 30.0).collect();
        let a = Array::from_slice(&vals, &[n]).unwrap();
        let checks: [Check<f32>; 5] = [
            (exp, math::exp_f32),
            (tanh, math::tanh_f32),
            (sin, math::sin_f32),
            (log1p, math::log1p_f32),
            (sigmoid, math::sigmoid_f32),
        ];
        for (op, f) in checks {
            let got = f32s(&op(&a).unwrap());
            let want: Vec<f32> = vals.iter().map(|&v| f(v)).collect();
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(g, w)| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())),
                "n = {n}"
            );
        }
    }
}

#[test]
fn huge_trig_arguments_take_the_full_reduction() {
    let vals = [1.0f32, 1e10, -3e38, 0.5];
    let a = Array::from_slice(&vals, &[4]).unwrap();
    let got = f32s(&sin(&a).unwrap());
    for (g, &v) in got.iter().zip(&vals) {
        assert_eq!(*g, (v as f64).sin() as f32, "{v}");
    }
    let got = f32s(&cos(&a).unwrap());
    for (g, &v) in got.iter().zip(&vals) {
        assert_eq!(*g, (v as f64).cos() as f32, "{v}");
    }
}

#[test]
fn half_types_compute_through_f32_with_one_rounding() {
    let vals: Vec<f32> = (0..2000).map(|i| (i as f32 - 1000.0) * 0.0173).collect();
    let h: Vec<f16> = vals.iter().map(|&v| f16::from_f32(v)).collect();
    let b: Vec<bf16> = vals.iter().map(|&v| bf16::from_f32(v)).collect();
    let ah = Array::from_slice(&h, &[2000]).unwrap();
    let ab = Array::from_slice(&b, &[2000]).unwrap();
    let checks: [Check<f64>; 6] = [
        (exp, f64::exp),
        (tanh, f64::tanh),
        (sin, f64::sin),
        (erf, math::erf_f64),
        (sqrt, f64::sqrt),
        (log, f64::ln),
    ];
    for (op, reference) in checks {
        let gh = op(&ah).unwrap().to_vec::<f16>().unwrap();
        let gb = op(&ab).unwrap().to_vec::<bf16>().unwrap();
        for i in 0..2000 {
            // Within one unit of the correctly rounded result (the f32
            // intermediate may round across a half-way point).
            let wh = reference(h[i].to_f64());
            let nearest = f16::from_f64(wh);
            let diff = (gh[i].to_bits() as i32 - nearest.to_bits() as i32).abs();
            assert!(
                diff <= 1 || (wh.is_nan() && gh[i].is_nan()),
                "f16 {i}: {} vs {nearest}",
                gh[i]
            );
            let wb = reference(b[i].to_f64());
            let nearest = bf16::from_f64(wb);
            let diff = (gb[i].to_bits() as i32 - nearest.to_bits() as i32).abs();
            assert!(
                diff <= 1 || (wb.is_nan() && gb[i].is_nan()),
                "bf16 {i}: {} vs {nearest}",
                gb[i]
            );
        }
    }
}

#[test]
fn rounding_to_decimals() {
    // As numpy (not Python's exact `round`): 2.675 * 100 rounds to 267.5.
    assert_eq!(round_decimals(2.675f64, 2), 2.68);
    assert_eq!(round_decimals(0.125f32, 2), 0.12);
    assert_eq!(round_decimals(-0.3f32, -1).to_bits(), (-0.0f32).to_bits());
    assert_eq!(round_decimals(1234.5f64, -2), 1200.0);
    assert_eq!(round_decimals(3e38f32, 5), 3e38); // numpy overflows to inf here
    assert_eq!(round_decimals(1.5f32, 400), 1.5);
    assert_eq!(round_decimals(1.5e300f64, -400), 0.0);
    assert!(round_decimals(f32::NAN, 3).is_nan());
    assert_eq!(
        round_decimals(f16::from_f32(700.0), 2),
        f16::from_f32(700.0)
    );
    assert_eq!(round_int_decimals(25i32, -1), 20);
    assert_eq!(round_int_decimals(35i32, -1), 40);
    assert_eq!(round_int_decimals(-25i32, -1), -20);
    assert_eq!(round_int_decimals(-26i64, -1), -30);
    assert_eq!(round_int_decimals(250u8, -2), 200);
    assert_eq!(round_int_decimals(127i8, -1), -126); // 130 wraps, as in numpy
    assert_eq!(round_int_decimals(i64::MAX, -30), 0);
    assert_eq!(
        round_int_decimals(u64::MAX, -19),
        10_000_000_000_000_000_000u64.wrapping_mul(2)
    );
}

#[test]
fn complex_ops_follow_numpy() {
    let z = Array::from_slice(&[Complex64::new(3.0, 4.0), Complex64::new(0.0, 0.0)], &[2]).unwrap();
    assert_eq!(abs(&z).unwrap().to_vec::<f32>().unwrap(), vec![5.0, 0.0]);
    let s = sign(&z).unwrap().to_vec::<Complex64>().unwrap();
    assert_eq!(s, vec![Complex64::new(0.6, 0.8), Complex64::new(0.0, 0.0)]);
    assert_eq!(
        logical_not(&z).unwrap().to_vec::<bool>().unwrap(),
        vec![false, true]
    );
    let r = reciprocal(&z).unwrap().to_vec::<Complex64>().unwrap();
    assert!((r[0] - Complex64::new(0.12, -0.16)).norm() < 1e-7);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn integer_ops_match_naive_loops(v in proptest::collection::vec(any::<i16>(), 0..80)) {
        let a = Array::from_slice(&v, &[v.len()]).unwrap();
        prop_assert_eq!(abs(&a).unwrap().to_vec::<i16>().unwrap(), v.iter().map(|x| x.wrapping_abs()).collect::<Vec<_>>());
        prop_assert_eq!(negative(&a).unwrap().to_vec::<i16>().unwrap(), v.iter().map(|x| x.wrapping_neg()).collect::<Vec<_>>());
        prop_assert_eq!(sign(&a).unwrap().to_vec::<i16>().unwrap(), v.iter().map(|x| x.signum()).collect::<Vec<_>>());
        prop_assert_eq!(square(&a).unwrap().to_vec::<i16>().unwrap(), v.iter().map(|x| x.wrapping_mul(*x)).collect::<Vec<_>>());
        prop_assert_eq!(bitwise_invert(&a).unwrap().to_vec::<i16>().unwrap(), v.iter().map(|x| !x).collect::<Vec<_>>());
        prop_assert_eq!(logical_not(&a).unwrap().to_vec::<bool>().unwrap(), v.iter().map(|x| *x == 0).collect::<Vec<_>>());
        prop_assert_eq!(round(&a, -2).unwrap().to_vec::<i16>().unwrap(), v.iter().map(|&x| round_int_decimals(x, -2)).collect::<Vec<_>>());
    }

    #[test]
    fn float_ops_match_naive_loops(v in proptest::collection::vec(-100.0f32..100.0, 0..80)) {
        let a = Array::from_slice(&v, &[v.len()]).unwrap();
        let checks: [CheckTol; 9] = [
            (exp, f64::exp, 1e-6),
            (log, f64::ln, 1e-6),
            (sqrt, f64::sqrt, 1e-7),
            (tanh, f64::tanh, 1e-6),
            (cos, f64::cos, 1e-6),
            (arctan, f64::atan, 1e-6),
            (floor, f64::floor, 0.0),
            (|x| round(x, 0), f64::round_ties_even, 0.0),
            (square, |x| x * x, 1e-7),
        ];
        for (op, reference, rtol) in checks {
            let got = f32s(&op(&a).unwrap());
            for (g, &x) in got.iter().zip(&v) {
                let w = reference(x as f64);
                prop_assert!(
                    (w.is_nan() && g.is_nan()) || (*g as f64 - w).abs() <= rtol * w.abs() + 1e-30 || *g == w as f32,
                    "{x}: got {g}, want {w}"
                );
            }
        }
    }
}
