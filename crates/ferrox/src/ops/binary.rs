//! Binary elementwise ops with numpy broadcasting and MLX type promotion.
//!
//! Every op here is one [`Binary`] primitive parameterised by a [`BinaryOp`].
//! The builder ([`build`]) broadcasts the shapes, promotes the dtypes
//! (weak scalars adopt the array's dtype, see [`result_dtype`]), applies the
//! op's dtype rule ([`DtypeRule`]) and casts both inputs to one compute
//! dtype, so a kernel only ever sees two operands of the same element type.
//!
//! Element functions live in small traits, one per family of dtypes:
//! [`Arith`] (every dtype), [`Real`] (not complex), [`FloatMath`] (floats),
//! [`Bitwise`] (integers and bool) and [`Shift`] (integers). They are
//! `#[inline(always)]` and branch-light so that the contiguous and
//! scalar-operand fast paths of [`elementwise::binary`] vectorise. Half
//! types compute in `f32` and round once, as MLX does on the CPU.
//!
//! Semantics follow numpy where MLX does:
//! - integer `divide` computes in float32 (MLX's `at_least_float`);
//! - `floor_divide`/`remainder` floor towards negative infinity, so the
//!   remainder has the divisor's sign; integer division by zero gives 0;
//!   float `floor_divide` uses numpy's `divmod` algorithm (`1 // 0.1 == 9`);
//! - integer `power` is exact repeated squaring (wrapping on overflow); a
//!   negative integer exponent is a [`crate::ErrorKind::Value`] error when
//!   the kernel runs, as numpy raises (MLX would loop forever);
//! - `maximum`/`minimum` propagate NaN; comparisons with NaN are false
//!   except `not_equal`;
//! - shifts by at least the bit width (or by a negative amount) give 0, or
//!   the sign fill for `right_shift` of a negative value; bool shifts
//!   compute in uint8 (MLX).
//!
//! [`elementwise::binary`]: crate::backend::cpu::elementwise::binary

use super::shape_rules::broadcast_shapes;
use crate::backend::cpu::elementwise::{binary, out_storage};
use crate::backend::cpu::parallel::{chunk_len, simd, worth_splitting};
use crate::dtype::{Category, Element};
use crate::graph::layout::{Data, for_each_offset};
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::runtime::memory::Pod;
use crate::{Array, Complex64, DType, Error, Result, with_dtype};
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use rayon::prelude::*;

// ---------------------------------------------------------------------------
// The op table.
// ---------------------------------------------------------------------------

/// The binary elementwise operations.
#[allow(missing_docs)] // each variant is named after the public function
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    FloorDivide,
    Remainder,
    Power,
    Maximum,
    Minimum,
    ArcTan2,
    LogAddExp,
    Equal,
    NotEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
    LogicalAnd,
    LogicalOr,
    BitwiseAnd,
    BitwiseOr,
    BitwiseXor,
    LeftShift,
    RightShift,
}

/// Which dtypes an op accepts and which dtype it computes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DtypeRule {
    /// Every dtype; computes in the promoted dtype.
    Any,
    /// Every dtype; bool and integers compute in float32.
    AtLeastFloat,
    /// Every dtype but complex; computes in the promoted dtype.
    Real,
    /// Every dtype but complex; bool and integers compute in float32.
    RealAtLeastFloat,
    /// Every dtype; bool output.
    Equality,
    /// Every dtype but complex; bool output.
    Ordering,
    /// Inputs are cast to bool; bool output.
    Logical,
    /// Integers and bool.
    Bitwise,
    /// Integers; bool computes in uint8.
    Shift,
}

impl BinaryOp {
    /// Every op, in declaration order.
    pub const ALL: [BinaryOp; 24] = {
        use BinaryOp::*;
        [
            Add,
            Subtract,
            Multiply,
            Divide,
            FloorDivide,
            Remainder,
            Power,
            Maximum,
            Minimum,
            ArcTan2,
            LogAddExp,
            Equal,
            NotEqual,
            Less,
            LessEqual,
            Greater,
            GreaterEqual,
            LogicalAnd,
            LogicalOr,
            BitwiseAnd,
            BitwiseOr,
            BitwiseXor,
            LeftShift,
            RightShift,
        ]
    };

    /// The op's public name (MLX's).
    ///
    /// ```
    /// assert_eq!(ferrox::ops::binary::BinaryOp::ArcTan2.name(), "arctan2");
    /// ```
    pub fn name(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Add => "add",
            Subtract => "subtract",
            Multiply => "multiply",
            Divide => "divide",
            FloorDivide => "floor_divide",
            Remainder => "remainder",
            Power => "power",
            Maximum => "maximum",
            Minimum => "minimum",
            ArcTan2 => "arctan2",
            LogAddExp => "logaddexp",
            Equal => "equal",
            NotEqual => "not_equal",
            Less => "less",
            LessEqual => "less_equal",
            Greater => "greater",
            GreaterEqual => "greater_equal",
            LogicalAnd => "logical_and",
            LogicalOr => "logical_or",
            BitwiseAnd => "bitwise_and",
            BitwiseOr => "bitwise_or",
            BitwiseXor => "bitwise_xor",
            LeftShift => "left_shift",
            RightShift => "right_shift",
        }
    }

    /// The op's dtype rule.
    ///
    /// ```
    /// use ferrox::ops::binary::{BinaryOp, DtypeRule};
    /// assert_eq!(BinaryOp::Less.rule(), DtypeRule::Ordering);
    /// ```
    pub fn rule(self) -> DtypeRule {
        use BinaryOp::*;
        match self {
            Add | Subtract | Multiply | Power => DtypeRule::Any,
            Divide => DtypeRule::AtLeastFloat,
            FloorDivide | Remainder | Maximum | Minimum => DtypeRule::Real,
            ArcTan2 | LogAddExp => DtypeRule::RealAtLeastFloat,
            Equal | NotEqual => DtypeRule::Equality,
            Less | LessEqual | Greater | GreaterEqual => DtypeRule::Ordering,
            LogicalAnd | LogicalOr => DtypeRule::Logical,
            BitwiseAnd | BitwiseOr | BitwiseXor => DtypeRule::Bitwise,
            LeftShift | RightShift => DtypeRule::Shift,
        }
    }

    /// The dtype the op computes in and the dtype it outputs, given the
    /// promoted dtype of its operands; an error if the op rejects it.
    ///
    /// ```
    /// use ferrox::{DType, ops::binary::BinaryOp};
    /// assert_eq!(BinaryOp::Divide.dtypes(DType::Int32)?, (DType::Float32, DType::Float32));
    /// assert_eq!(BinaryOp::Less.dtypes(DType::Int8)?, (DType::Int8, DType::Bool));
    /// assert!(BinaryOp::Less.dtypes(DType::Complex64).is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn dtypes(self, promoted: DType) -> Result<(DType, DType)> {
        let at_least_float = |d: DType| if d.is_inexact() { d } else { DType::Float32 };
        let not_complex = || -> Result<()> {
            if promoted == DType::Complex64 {
                return Err(Error::dtype(
                    self.name(),
                    "complex64 inputs are not supported",
                ));
            }
            Ok(())
        };
        let compute = match self.rule() {
            DtypeRule::Any | DtypeRule::Equality => promoted,
            DtypeRule::AtLeastFloat => at_least_float(promoted),
            DtypeRule::Real | DtypeRule::Ordering => {
                not_complex()?;
                promoted
            }
            DtypeRule::RealAtLeastFloat => {
                not_complex()?;
                at_least_float(promoted)
            }
            DtypeRule::Logical => DType::Bool,
            DtypeRule::Bitwise | DtypeRule::Shift => {
                if !(promoted.is_integer() || promoted == DType::Bool) {
                    return Err(Error::dtype(
                        self.name(),
                        format!("only integer and bool inputs are supported, got {promoted}"),
                    ));
                }
                if promoted == DType::Bool && self.rule() == DtypeRule::Shift {
                    DType::UInt8
                } else {
                    promoted
                }
            }
        };
        let output = match self.rule() {
            DtypeRule::Equality | DtypeRule::Ordering | DtypeRule::Logical => DType::Bool,
            _ => compute,
        };
        Ok((compute, output))
    }
}

/// A binary elementwise primitive; both inputs have the compute dtype of
/// the op (see [`BinaryOp::dtypes`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Binary(pub BinaryOp);

// ---------------------------------------------------------------------------
// Element functions.
// ---------------------------------------------------------------------------

/// Arithmetic defined on every dtype.
pub trait Arith: Element + Pod {
    /// a + b (wrapping for integers, `or` for bool).
    fn add(a: Self, b: Self) -> Self;
    /// a - b (wrapping for integers, `xor` for bool).
    fn sub(a: Self, b: Self) -> Self;
    /// a * b (wrapping for integers, `and` for bool).
    fn mul(a: Self, b: Self) -> Self;
    /// a / b; integer division by zero gives 0.
    fn div(a: Self, b: Self) -> Self;
    /// a ** b. Integers: repeated squaring, wrapping; the kernel rejects
    /// negative exponents before calling this (see [`Arith::is_negative`]).
    fn pow(a: Self, b: Self) -> Self;
    /// True for negative signed integers: exponents `pow` does not accept.
    #[inline(always)]
    fn is_negative(self) -> bool {
        false
    }
}

/// Ordered arithmetic: every dtype but complex.
pub trait Real: Arith {
    /// Division rounded towards negative infinity; integers by zero give 0.
    fn floor_div(a: Self, b: Self) -> Self;
    /// Remainder with the divisor's sign; integers by zero give 0.
    fn rem(a: Self, b: Self) -> Self;
    /// The larger value; NaN if either is NaN.
    fn max(a: Self, b: Self) -> Self;
    /// The smaller value; NaN if either is NaN.
    fn min(a: Self, b: Self) -> Self;
    /// a < b (false if either is NaN).
    fn lt(a: Self, b: Self) -> bool;
    /// a <= b (false if either is NaN).
    fn le(a: Self, b: Self) -> bool;
}

/// Transcendental binary functions of floats.
pub trait FloatMath: Real {
    /// The angle of the point (b, a): `atan2(a, b)`.
    fn atan2(a: Self, b: Self) -> Self;
    /// `log(exp(a) + exp(b))` without overflow.
    fn logaddexp(a: Self, b: Self) -> Self;
}

/// Bitwise logic on integers and bool.
pub trait Bitwise: Element + Pod {
    /// a & b.
    fn and(a: Self, b: Self) -> Self;
    /// a | b.
    fn or(a: Self, b: Self) -> Self;
    /// a ^ b.
    fn xor(a: Self, b: Self) -> Self;
}

/// Shifts on integers.
pub trait Shift: Bitwise {
    /// a << b; 0 when b is negative or at least the bit width.
    fn shl(a: Self, b: Self) -> Self;
    /// a >> b (arithmetic for signed types); 0 or -1 (the sign fill) when
    /// b is negative or at least the bit width.
    fn shr(a: Self, b: Self) -> Self;
}

/// `base ** exp` by repeated squaring, wrapping on overflow; `exp <= 0`
/// gives 1 (negative exponents are rejected before kernels run).
macro_rules! int_pow {
    ($t:ty, $a:expr, $b:expr) => {{
        let (mut base, mut exp, mut acc): ($t, $t, $t) = ($a, $b, 1);
        while exp > 0 {
            if exp & 1 == 1 {
                acc = acc.wrapping_mul(base);
            }
            exp >>= 1;
            base = base.wrapping_mul(base);
        }
        acc
    }};
}

macro_rules! int_common {
    ($t:ty) => {
        impl Bitwise for $t {
            #[inline(always)]
            fn and(a: Self, b: Self) -> Self {
                a & b
            }
            #[inline(always)]
            fn or(a: Self, b: Self) -> Self {
                a | b
            }
            #[inline(always)]
            fn xor(a: Self, b: Self) -> Self {
                a ^ b
            }
        }
    };
}

macro_rules! signed_int {($($t:ty),*) => {$(
    impl Arith for $t {
        #[inline(always)] fn add(a: Self, b: Self) -> Self { a.wrapping_add(b) }
        #[inline(always)] fn sub(a: Self, b: Self) -> Self { a.wrapping_sub(b) }
        #[inline(always)] fn mul(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
        #[inline(always)] fn div(a: Self, b: Self) -> Self { if b == 0 { 0 } else { a.wrapping_div(b) } }
        #[inline(always)] fn pow(a: Self, b: Self) -> Self { int_pow!($t, a, b) }
        #[inline(always)] fn is_negative(self) -> bool { self < 0 }
    }
    impl Real for $t {
        #[inline(always)]
        fn floor_div(a: Self, b: Self) -> Self {
            if b == 0 {
                return 0;
            }
            // MIN / -1 wraps to MIN (numpy's result); its remainder is 0.
            let q = a.wrapping_div(b);
            if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) { q.wrapping_sub(1) } else { q }
        }
        #[inline(always)]
        fn rem(a: Self, b: Self) -> Self {
            if b == 0 {
                return 0;
            }
            let r = a.wrapping_rem(b);
            if r != 0 && ((r < 0) != (b < 0)) { r.wrapping_add(b) } else { r }
        }
        #[inline(always)] fn max(a: Self, b: Self) -> Self { Ord::max(a, b) }
        #[inline(always)] fn min(a: Self, b: Self) -> Self { Ord::min(a, b) }
        #[inline(always)] fn lt(a: Self, b: Self) -> bool { a < b }
        #[inline(always)] fn le(a: Self, b: Self) -> bool { a <= b }
    }
    int_common!($t);
    impl Shift for $t {
        // `b as u64` maps negative shifts to huge ones, as numpy does.
        #[inline(always)]
        fn shl(a: Self, b: Self) -> Self {
            if (b as u64) < <$t>::BITS as u64 { a << b } else { 0 }
        }
        #[inline(always)]
        fn shr(a: Self, b: Self) -> Self {
            if (b as u64) < <$t>::BITS as u64 { a >> b } else if a < 0 { -1 } else { 0 }
        }
    }
)*}}
signed_int!(i8, i16, i32, i64);

macro_rules! unsigned_int {($($t:ty),*) => {$(
    impl Arith for $t {
        #[inline(always)] fn add(a: Self, b: Self) -> Self { a.wrapping_add(b) }
        #[inline(always)] fn sub(a: Self, b: Self) -> Self { a.wrapping_sub(b) }
        #[inline(always)] fn mul(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
        #[inline(always)] fn div(a: Self, b: Self) -> Self { if b == 0 { 0 } else { a / b } }
        #[inline(always)] fn pow(a: Self, b: Self) -> Self { int_pow!($t, a, b) }
    }
    impl Real for $t {
        #[inline(always)] fn floor_div(a: Self, b: Self) -> Self { if b == 0 { 0 } else { a / b } }
        #[inline(always)] fn rem(a: Self, b: Self) -> Self { if b == 0 { 0 } else { a % b } }
        #[inline(always)] fn max(a: Self, b: Self) -> Self { Ord::max(a, b) }
        #[inline(always)] fn min(a: Self, b: Self) -> Self { Ord::min(a, b) }
        #[inline(always)] fn lt(a: Self, b: Self) -> bool { a < b }
        #[inline(always)] fn le(a: Self, b: Self) -> bool { a <= b }
    }
    int_common!($t);
    impl Shift for $t {
        #[inline(always)]
        fn shl(a: Self, b: Self) -> Self {
            if (b as u64) < <$t>::BITS as u64 { a << b } else { 0 }
        }
        #[inline(always)]
        fn shr(a: Self, b: Self) -> Self {
            if (b as u64) < <$t>::BITS as u64 { a >> b } else { 0 }
        }
    }
)*}}
unsigned_int!(u8, u16, u32, u64);

macro_rules! float {($($t:ty),*) => {$(
    impl Arith for $t {
        #[inline(always)] fn add(a: Self, b: Self) -> Self { a + b }
        #[inline(always)] fn sub(a: Self, b: Self) -> Self { a - b }
        #[inline(always)] fn mul(a: Self, b: Self) -> Self { a * b }
        #[inline(always)] fn div(a: Self, b: Self) -> Self { a / b }
        #[inline(always)] fn pow(a: Self, b: Self) -> Self { a.powf(b) }
    }
    impl Real for $t {
        /// numpy's `npy_floor_divide`: floor of the exact quotient, which
        /// `(a / b).floor()` misses when the division rounds up.
        #[inline(always)]
        fn floor_div(a: Self, b: Self) -> Self {
            if b == 0.0 {
                return a / b;
            }
            let m = a % b;
            let mut div = (a - m) / b;
            if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
                div -= 1.0;
            }
            if div != 0.0 {
                let f = div.floor();
                if div - f > 0.5 { f + 1.0 } else { f }
            } else {
                (0.0 as $t).copysign(a / b)
            }
        }
        /// numpy's `npy_remainder`: `fmod` moved to the divisor's sign.
        #[inline(always)]
        fn rem(a: Self, b: Self) -> Self {
            let m = a % b;
            if b == 0.0 {
                return m;
            }
            if m != 0.0 {
                if (b < 0.0) != (m < 0.0) { m + b } else { m }
            } else {
                (0.0 as $t).copysign(b)
            }
        }
        #[inline(always)] fn max(a: Self, b: Self) -> Self { if a >= b || a.is_nan() { a } else { b } }
        #[inline(always)] fn min(a: Self, b: Self) -> Self { if a <= b || a.is_nan() { a } else { b } }
        #[inline(always)] fn lt(a: Self, b: Self) -> bool { a < b }
        #[inline(always)] fn le(a: Self, b: Self) -> bool { a <= b }
    }
    impl FloatMath for $t {
        #[inline(always)] fn atan2(a: Self, b: Self) -> Self { a.atan2(b) }
        /// numpy's `npy_logaddexp`: equal inputs (incl. infinities of one
        /// sign) short-cut; otherwise the larger plus `log1p(exp(-|d|))`.
        #[inline(always)]
        fn logaddexp(a: Self, b: Self) -> Self {
            if a == b {
                return a + std::f64::consts::LN_2 as $t;
            }
            let d = a - b;
            if d > 0.0 {
                a + (-d).exp().ln_1p()
            } else if d <= 0.0 {
                b + d.exp().ln_1p()
            } else {
                d // NaN
            }
        }
    }
)*}}
float!(f32, f64);

macro_rules! half_float {($($t:ty),*) => {$(
    // Computed in f32 and rounded once, as MLX does on the CPU.
    impl Arith for $t {
        #[inline(always)] fn add(a: Self, b: Self) -> Self { <$t>::from_f32(a.to_f32() + b.to_f32()) }
        #[inline(always)] fn sub(a: Self, b: Self) -> Self { <$t>::from_f32(a.to_f32() - b.to_f32()) }
        #[inline(always)] fn mul(a: Self, b: Self) -> Self { <$t>::from_f32(a.to_f32() * b.to_f32()) }
        #[inline(always)] fn div(a: Self, b: Self) -> Self { <$t>::from_f32(a.to_f32() / b.to_f32()) }
        #[inline(always)] fn pow(a: Self, b: Self) -> Self { <$t>::from_f32(a.to_f32().powf(b.to_f32())) }
    }
    impl Real for $t {
        #[inline(always)]
        fn floor_div(a: Self, b: Self) -> Self { <$t>::from_f32(f32::floor_div(a.to_f32(), b.to_f32())) }
        #[inline(always)]
        fn rem(a: Self, b: Self) -> Self { <$t>::from_f32(f32::rem(a.to_f32(), b.to_f32())) }
        // Selecting an input keeps its bits: no rounding.
        #[inline(always)]
        fn max(a: Self, b: Self) -> Self { if a.to_f32() >= b.to_f32() || a.is_nan() { a } else { b } }
        #[inline(always)]
        fn min(a: Self, b: Self) -> Self { if a.to_f32() <= b.to_f32() || a.is_nan() { a } else { b } }
        #[inline(always)] fn lt(a: Self, b: Self) -> bool { a.to_f32() < b.to_f32() }
        #[inline(always)] fn le(a: Self, b: Self) -> bool { a.to_f32() <= b.to_f32() }
    }
    impl FloatMath for $t {
        #[inline(always)]
        fn atan2(a: Self, b: Self) -> Self { <$t>::from_f32(a.to_f32().atan2(b.to_f32())) }
        #[inline(always)]
        fn logaddexp(a: Self, b: Self) -> Self { <$t>::from_f32(f32::logaddexp(a.to_f32(), b.to_f32())) }
    }
)*}}
half_float!(f16, bf16);

impl Arith for bool {
    #[inline(always)]
    fn add(a: Self, b: Self) -> Self {
        a | b
    }
    #[inline(always)]
    fn sub(a: Self, b: Self) -> Self {
        a ^ b
    }
    #[inline(always)]
    fn mul(a: Self, b: Self) -> Self {
        a & b
    }
    #[inline(always)]
    fn div(a: Self, b: Self) -> Self {
        a & b
    }
    /// `a ** b` on {0, 1}: 1 when b is 0, else a.
    #[inline(always)]
    fn pow(a: Self, b: Self) -> Self {
        a | !b
    }
}

impl Real for bool {
    #[inline(always)]
    fn floor_div(a: Self, b: Self) -> Self {
        a & b
    }
    /// `a % 1 == 0` and division by zero gives 0.
    #[inline(always)]
    fn rem(_a: Self, _b: Self) -> Self {
        false
    }
    #[inline(always)]
    fn max(a: Self, b: Self) -> Self {
        a | b
    }
    #[inline(always)]
    fn min(a: Self, b: Self) -> Self {
        a & b
    }
    #[inline(always)]
    fn lt(a: Self, b: Self) -> bool {
        !a & b
    }
    #[inline(always)]
    fn le(a: Self, b: Self) -> bool {
        !a | b
    }
}

impl Bitwise for bool {
    #[inline(always)]
    fn and(a: Self, b: Self) -> Self {
        a & b
    }
    #[inline(always)]
    fn or(a: Self, b: Self) -> Self {
        a | b
    }
    #[inline(always)]
    fn xor(a: Self, b: Self) -> Self {
        a ^ b
    }
}

impl Arith for Complex64 {
    #[inline(always)]
    fn add(a: Self, b: Self) -> Self {
        a + b
    }
    #[inline(always)]
    fn sub(a: Self, b: Self) -> Self {
        a - b
    }
    #[inline(always)]
    fn mul(a: Self, b: Self) -> Self {
        a * b
    }
    #[inline(always)]
    fn div(a: Self, b: Self) -> Self {
        complex_div(a, b)
    }
    #[inline(always)]
    fn pow(a: Self, b: Self) -> Self {
        complex_pow(a, b)
    }
}

/// Complex division by Smith's algorithm (numpy's): scales by the larger
/// component of `b`, so `|b|^2` cannot overflow or underflow. Division by
/// zero gives infinities and NaNs as the real division does.
#[inline(always)]
fn complex_div(a: Complex64, b: Complex64) -> Complex64 {
    let (br_abs, bi_abs) = (b.re.abs(), b.im.abs());
    if br_abs >= bi_abs {
        if br_abs == 0.0 && bi_abs == 0.0 {
            return Complex64::new(a.re / br_abs, a.im / bi_abs);
        }
        let rat = b.im / b.re;
        let scl = 1.0 / (b.re + b.im * rat);
        Complex64::new((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl)
    } else {
        let rat = b.re / b.im;
        let scl = 1.0 / (b.im + b.re * rat);
        Complex64::new((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl)
    }
}

/// Complex power as numpy computes it: exact special cases for a zero
/// exponent or base, repeated squaring for small integer exponents (more
/// accurate than `exp(b log a)`), the principal value otherwise.
fn complex_pow(a: Complex64, b: Complex64) -> Complex64 {
    let one = Complex64::new(1.0, 0.0);
    if b.re == 0.0 && b.im == 0.0 {
        return one;
    }
    if a.re == 0.0 && a.im == 0.0 {
        return if b.re > 0.0 && b.im == 0.0 {
            Complex64::new(0.0, 0.0)
        } else {
            Complex64::new(f32::NAN, f32::NAN)
        };
    }
    if b.im == 0.0 && b.re == b.re.trunc() && b.re.abs() < 100.0 {
        let n = b.re as i32;
        let mut k = n.unsigned_abs();
        let (mut p, mut acc) = (a, one);
        loop {
            if k & 1 == 1 {
                acc *= p;
            }
            k >>= 1;
            if k == 0 {
                break;
            }
            p *= p;
        }
        return if n < 0 { complex_div(one, acc) } else { acc };
    }
    a.powc(b)
}

// ---------------------------------------------------------------------------
// Kernels.
// ---------------------------------------------------------------------------

/// Runs `$body` with `$T` bound to the element type of `$dtype` when it is
/// one of the listed dtypes, else returns a dtype error for `$op`.
macro_rules! with_dtypes {
    ($dtype:expr, $op:expr, $T:ident => $body:expr, [$($D:ident => $t:ty),* $(,)?]) => {
        match $dtype {
            $(DType::$D => { type $T = $t; $body })*
            #[allow(unreachable_patterns)]
            other => Err(Error::dtype($op.name(), format!("no kernel for dtype {other}"))),
        }
    };
}

/// `with_dtypes!` over every dtype but complex.
macro_rules! with_real {
    ($dtype:expr, $op:expr, $T:ident => $body:expr) => {
        with_dtypes!($dtype, $op, $T => $body, [
            Bool => bool, UInt8 => u8, UInt16 => u16, UInt32 => u32, UInt64 => u64,
            Int8 => i8, Int16 => i16, Int32 => i32, Int64 => i64,
            Float16 => f16, BFloat16 => bf16, Float32 => f32, Float64 => f64,
        ])
    };
}

/// `with_dtypes!` over the floating point dtypes.
macro_rules! with_float {
    ($dtype:expr, $op:expr, $T:ident => $body:expr) => {
        with_dtypes!($dtype, $op, $T => $body,
            [Float16 => f16, BFloat16 => bf16, Float32 => f32, Float64 => f64])
    };
}

/// `with_dtypes!` over the integer dtypes, with bool when `$bool` is given.
macro_rules! with_int {
    ($dtype:expr, $op:expr, $T:ident => $body:expr $(, $bool:ident)?) => {
        with_dtypes!($dtype, $op, $T => $body, [
            $($bool => bool,)?
            UInt8 => u8, UInt16 => u16, UInt32 => u32, UInt64 => u64,
            Int8 => i8, Int16 => i16, Int32 => i32, Int64 => i64,
        ])
    };
}

fn arith_kernel<T: Arith>(
    op: BinaryOp,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    match op {
        BinaryOp::Add => binary(a, b, out, T::add),
        BinaryOp::Subtract => binary(a, b, out, T::sub),
        BinaryOp::Multiply => binary(a, b, out, T::mul),
        BinaryOp::Divide => binary(a, b, out, T::div),
        BinaryOp::Power => {
            reject_negative_exponents::<T>(b)?;
            if T::DTYPE.is_float() && scalar_value::<T>(b).is_some_and(|e| e.to_f64() == 2.0) {
                // `x ** 2` is common; one correctly rounded product equals
                // the correctly rounded power, at a fraction of the cost.
                return binary(a, b, out, |x: T, _: T| T::mul(x, x));
            }
            binary(a, b, out, T::pow)
        }
        _ => Err(misrouted(op)),
    }
}

/// The value of a one-element operand.
fn scalar_value<T: Pod>(x: &Operand<'_>) -> Option<T> {
    if x.shape.iter().product::<usize>() != 1 {
        return None;
    }
    x.data.raw::<T>().get(x.data.offset).copied()
}

/// numpy raises for integer bases with negative integer exponents (the
/// result is not an integer); this is data-dependent, so it is checked here.
fn reject_negative_exponents<T: Arith>(b: &Operand<'_>) -> Result<()> {
    if T::DTYPE.category() != Category::Signed {
        return Ok(());
    }
    let raw = b.data.raw::<T>();
    let mut negative = None;
    for_each_offset(b.shape, &b.data.strides, b.data.offset, |o| {
        if negative.is_none() && raw[o].is_negative() {
            negative = Some(raw[o]);
        }
    });
    match negative {
        None => Ok(()),
        Some(e) => Err(Error::value(
            "power",
            format!("integers to negative integer powers are not allowed (exponent {e:?})"),
        )),
    }
}

fn real_kernel<T: Real>(
    op: BinaryOp,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    match op {
        BinaryOp::FloorDivide => binary(a, b, out, T::floor_div),
        BinaryOp::Remainder => binary(a, b, out, T::rem),
        BinaryOp::Maximum => binary(a, b, out, T::max),
        BinaryOp::Minimum => binary(a, b, out, T::min),
        BinaryOp::Less => binary(a, b, out, T::lt),
        BinaryOp::LessEqual => binary(a, b, out, T::le),
        BinaryOp::Greater => binary(a, b, out, |x: T, y: T| T::lt(y, x)),
        BinaryOp::GreaterEqual => binary(a, b, out, |x: T, y: T| T::le(y, x)),
        _ => Err(misrouted(op)),
    }
}

fn float_kernel<T: FloatMath>(
    op: BinaryOp,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    match op {
        BinaryOp::ArcTan2 => binary(a, b, out, T::atan2),
        BinaryOp::LogAddExp => binary(a, b, out, T::logaddexp),
        _ => Err(misrouted(op)),
    }
}

fn equality_kernel<T: Element + Pod>(
    op: BinaryOp,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    match op {
        BinaryOp::Equal => binary(a, b, out, |x: T, y: T| x == y),
        BinaryOp::NotEqual => binary(a, b, out, |x: T, y: T| x != y),
        _ => Err(misrouted(op)),
    }
}

fn bitwise_kernel<T: Bitwise>(
    op: BinaryOp,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    match op {
        BinaryOp::BitwiseAnd | BinaryOp::LogicalAnd => binary(a, b, out, T::and),
        BinaryOp::BitwiseOr | BinaryOp::LogicalOr => binary(a, b, out, T::or),
        BinaryOp::BitwiseXor => binary(a, b, out, T::xor),
        _ => Err(misrouted(op)),
    }
}

fn shift_kernel<T: Shift>(
    op: BinaryOp,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    match op {
        BinaryOp::LeftShift => binary(a, b, out, T::shl),
        BinaryOp::RightShift => binary(a, b, out, T::shr),
        _ => Err(misrouted(op)),
    }
}

fn misrouted(op: BinaryOp) -> Error {
    Error::runtime(
        op.name(),
        "internal error: op routed to the wrong kernel family",
    )
}

impl Primitive for Binary {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let op = self.0;
        let [a, b] = inputs else {
            return Err(Error::runtime(
                op.name(),
                format!("expected 2 inputs, got {}", inputs.len()),
            ));
        };
        if a.dtype != b.dtype {
            return Err(Error::runtime(
                op.name(),
                format!(
                    "internal error: inputs have dtypes {} and {}",
                    a.dtype, b.dtype
                ),
            ));
        }
        let half = match a.dtype {
            DType::Float16 => half_kernel::<f16>(op, a, b, out),
            DType::BFloat16 => half_kernel::<bf16>(op, a, b, out),
            _ => None,
        };
        if let Some(result) = half {
            return result;
        }
        match op.rule() {
            DtypeRule::Any | DtypeRule::AtLeastFloat => {
                with_dtype!(a.dtype, T => arith_kernel::<T>(op, a, b, out))
            }
            DtypeRule::Real | DtypeRule::Ordering => {
                with_real!(a.dtype, op, T => real_kernel::<T>(op, a, b, out))
            }
            DtypeRule::RealAtLeastFloat => {
                with_float!(a.dtype, op, T => float_kernel::<T>(op, a, b, out))
            }
            DtypeRule::Equality => with_dtype!(a.dtype, T => equality_kernel::<T>(op, a, b, out)),
            DtypeRule::Logical => {
                with_dtypes!(a.dtype, op, T => bitwise_kernel::<T>(op, a, b, out), [Bool => bool])
            }
            DtypeRule::Bitwise => {
                with_int!(a.dtype, op, T => bitwise_kernel::<T>(op, a, b, out), Bool)
            }
            DtypeRule::Shift => with_int!(a.dtype, op, T => shift_kernel::<T>(op, a, b, out)),
        }
    }
    fn vjp(
        &self,
        primals: &[Array],
        cotangent: &Array,
        output: &Array,
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        super::binary_derivatives::vjp(self.0, primals, cotangent, output, argnums)
    }
    fn jvp(&self, primals: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        super::binary_derivatives::jvp(self.0, primals, tangents, output)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        super::binary_derivatives::vmap(self.0, inputs, axes)
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        match input_shapes {
            [a, b] => Some(broadcast_shapes(self.0.name(), a, b)),
            _ => None,
        }
    }
    crate::primitive_common!();
}

// ---------------------------------------------------------------------------
// Half-precision fast path.
// ---------------------------------------------------------------------------

/// f16 and bf16 converted to and from f32 a block at a time.
///
/// The half crate's per-element `to_f32`/`from_f32` check the CPU's
/// features on every call and cannot vectorise (f16 `add` ran about 30x
/// slower than f32 through them); its slice conversions check once and use
/// F16C. Results are identical: either way each element is computed in f32
/// and rounded once.
pub(crate) trait HalfBlock: Pod {
    /// `dst[i] = src[i] as f32`.
    fn widen(src: &[Self], dst: &mut [f32]);
    /// `dst[i] = round(src[i])`.
    fn narrow(src: &[f32], dst: &mut [Self]);
}

impl HalfBlock for f16 {
    fn widen(src: &[Self], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst);
    }
    fn narrow(src: &[f32], dst: &mut [Self]) {
        dst.convert_from_f32_slice(src);
    }
}

impl HalfBlock for bf16 {
    fn widen(src: &[Self], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst);
    }
    fn narrow(src: &[f32], dst: &mut [Self]) {
        dst.convert_from_f32_slice(src);
    }
}

/// An output of the half fast path: the f32 result rounded to a half
/// type, or a bool.
trait HalfOut: Pod {
    /// What the f32 function returns.
    type Acc: Copy + Default + Send + Sync;
    /// Writes a block of results.
    fn store(src: &[Self::Acc], dst: &mut [Self]);
}

impl<H: HalfBlock> HalfOut for H {
    type Acc = f32;
    fn store(src: &[f32], dst: &mut [Self]) {
        H::narrow(src, dst);
    }
}

impl HalfOut for bool {
    type Acc = bool;
    fn store(src: &[bool], dst: &mut [Self]) {
        dst.copy_from_slice(src);
    }
}

/// An operand of the half fast path: the whole output's worth of
/// contiguous elements, or one element.
#[derive(Clone, Copy)]
enum HalfLane<'a, H> {
    Slice(&'a [H]),
    Splat(f32),
}

impl<'a, H: HalfBlock + Element> HalfLane<'a, H> {
    fn of(x: &Operand<'a>, out_shape: &[usize]) -> Option<Self> {
        if let Some(v) = scalar_value::<H>(x) {
            return Some(HalfLane::Splat(v.to_f64() as f32));
        }
        if x.shape != out_shape {
            return None;
        }
        x.data.as_contiguous::<H>(x.shape).map(HalfLane::Slice)
    }

    /// Elements `start..start + dst.len()` as f32.
    fn widen_into(self, start: usize, dst: &mut [f32]) {
        match self {
            HalfLane::Slice(s) => H::widen(&s[start..start + dst.len()], dst),
            HalfLane::Splat(v) => dst.fill(v),
        }
    }
}

/// Elements per conversion block: three f32 blocks stay in L1.
const HALF_BLOCK: usize = 512;

/// `f` over two half-precision operands, computed in f32 block by block;
/// `None` when an operand is neither contiguous nor a single element.
fn half_zip<H: HalfBlock + Element, O: HalfOut>(
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: OutSpec<'_>,
    f: impl Fn(f32, f32) -> O::Acc + Copy + Send + Sync,
) -> Option<Result<Data>> {
    let (la, lb) = (
        HalfLane::<H>::of(a, out.shape)?,
        HalfLane::<H>::of(b, out.shape)?,
    );
    let mut storage = match out_storage(out) {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    let dst = storage.as_mut_slice::<O>();
    let run = |start: usize, dst: &mut [O]| {
        let (mut xa, mut xb) = ([0f32; HALF_BLOCK], [0f32; HALF_BLOCK]);
        let mut r = [O::Acc::default(); HALF_BLOCK];
        for (k, d) in dst.chunks_mut(HALF_BLOCK).enumerate() {
            let len = d.len();
            la.widen_into(start + k * HALF_BLOCK, &mut xa[..len]);
            lb.widen_into(start + k * HALF_BLOCK, &mut xb[..len]);
            simd(|| {
                for ((o, &p), &q) in r[..len].iter_mut().zip(&xa[..len]).zip(&xb[..len]) {
                    *o = f(p, q);
                }
            });
            O::store(&r[..len], d);
        }
    };
    if worth_splitting(dst.len()) {
        let c = chunk_len(dst.len());
        dst.par_chunks_mut(c)
            .enumerate()
            .for_each(|(k, d)| run(k * c, d));
    } else {
        run(0, dst);
    }
    Some(Ok(Data::contiguous(storage, out.shape)))
}

/// The f16/bf16 kernels of the ops that compute in f32, or `None` to use
/// the generic (per-element) path.
fn half_kernel<H: HalfBlock + Element>(
    op: BinaryOp,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: OutSpec<'_>,
) -> Option<Result<Data>> {
    use BinaryOp::*;
    let squares = op == Power && scalar_value::<H>(b).is_some_and(|e| e.to_f64() == 2.0);
    match op {
        Add => half_zip::<H, H>(a, b, out, |x, y| x + y),
        Subtract => half_zip::<H, H>(a, b, out, |x, y| x - y),
        Multiply => half_zip::<H, H>(a, b, out, |x, y| x * y),
        Divide => half_zip::<H, H>(a, b, out, |x, y| x / y),
        Power if squares => half_zip::<H, H>(a, b, out, |x, _| x * x),
        Power => half_zip::<H, H>(a, b, out, f32::powf),
        FloorDivide => half_zip::<H, H>(a, b, out, <f32 as Real>::floor_div),
        Remainder => half_zip::<H, H>(a, b, out, <f32 as Real>::rem),
        // Selecting an input converts back exactly.
        Maximum => half_zip::<H, H>(a, b, out, <f32 as Real>::max),
        Minimum => half_zip::<H, H>(a, b, out, <f32 as Real>::min),
        ArcTan2 => half_zip::<H, H>(a, b, out, f32::atan2),
        LogAddExp => half_zip::<H, H>(a, b, out, <f32 as FloatMath>::logaddexp),
        Equal => half_zip::<H, bool>(a, b, out, |x, y| x == y),
        NotEqual => half_zip::<H, bool>(a, b, out, |x, y| x != y),
        Less => half_zip::<H, bool>(a, b, out, |x, y| x < y),
        LessEqual => half_zip::<H, bool>(a, b, out, |x, y| x <= y),
        Greater => half_zip::<H, bool>(a, b, out, |x, y| x > y),
        GreaterEqual => half_zip::<H, bool>(a, b, out, |x, y| x >= y),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// Builders.
// ---------------------------------------------------------------------------

/// The dtype two operands compute in, honouring weak scalars.
///
/// ```
/// use ferrox::{Array, DType, ops::binary::result_dtype};
/// let a = ferrox::ones(&[2], DType::Int8)?;
/// assert_eq!(result_dtype(&a, &Array::from(2.5)), DType::Float32);
/// assert_eq!(result_dtype(&a, &Array::from(2)), DType::Int8);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn result_dtype(a: &Array, b: &Array) -> DType {
    match (a.weak_kind(), b.weak_kind()) {
        (Some(k), None) => DType::promote_weak(b.dtype(), k),
        (None, Some(k)) => DType::promote_weak(a.dtype(), k),
        _ => DType::promote(a.dtype(), b.dtype()),
    }
}

/// Promotes and broadcasts `a` and `b`, returning them cast to the common
/// dtype together with the output shape.
///
/// ```
/// use ferrox::{DType, ops::binary::prepare};
/// let a = ferrox::ones(&[3, 1], DType::Int8)?;
/// let b = ferrox::ones(&[4], DType::Float16)?;
/// let (a, b, shape, dtype) = prepare("add", &a, &b)?;
/// assert_eq!((shape, dtype, a.dtype(), b.dtype()), (vec![3, 4], DType::Float16, dtype, dtype));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn prepare(op: &str, a: &Array, b: &Array) -> Result<(Array, Array, Vec<usize>, DType)> {
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let dtype = result_dtype(a, b);
    Ok((a.astype(dtype)?, b.astype(dtype)?, shape, dtype))
}

/// Builds the node for `op(a, b)`: broadcasts, promotes, checks the op's
/// dtype rule and casts both inputs to the compute dtype. Two weak scalars
/// give a weak scalar.
///
/// ```
/// use ferrox::{Array, ops::binary::{build, BinaryOp}};
/// let a = Array::from_slice(&[1i32, 5], &[2])?;
/// let m = build(BinaryOp::Maximum, &a, &Array::from(3))?;
/// assert_eq!(m.to_vec::<i32>()?, vec![3, 5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn build(op: BinaryOp, a: &Array, b: &Array) -> Result<Array> {
    let shape = broadcast_shapes(op.name(), a.shape(), b.shape())?;
    let promoted = result_dtype(a, b);
    let (compute, output) = op.dtypes(promoted).map_err(|e| {
        Error::dtype(
            op.name(),
            format!("{} (inputs {} and {})", e.message(), a.dtype(), b.dtype()),
        )
    })?;
    let inputs = vec![a.astype(compute)?, b.astype(compute)?];
    let out = Array::from_op(shape, output, Binary(op), inputs);
    if a.is_weak() && b.is_weak() {
        return Ok(crate::graph::array::mark_weak(out));
    }
    Ok(out)
}

/// Checks that `dtype` is one of the categories an op accepts.
///
/// ```
/// use ferrox::{DType, ops::binary::require};
/// assert!(require("sqrt", DType::Int8, DType::Int8.is_inexact(), "a float dtype").is_err());
/// ```
pub fn require(op: &str, dtype: DType, ok: bool, what: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::dtype(op, format!("expected {what}, got {dtype}")))
    }
}

/// Elementwise `a + b`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
/// assert_eq!(ferrox::add(&a, &a)?.to_vec::<i32>()?, vec![2, 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn add(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Add, a, b)
}

/// Elementwise `a - b`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
/// assert_eq!(ferrox::subtract(&a, &a)?.to_vec::<i32>()?, vec![0, 0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn subtract(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Subtract, a, b)
}

/// Elementwise `a * b`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.5f32, 2.0], &[2])?;
/// assert_eq!(ferrox::multiply(&a, &a)?.to_vec::<f32>()?, vec![2.25, 4.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn multiply(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Multiply, a, b)
}

/// Elementwise true division; bool and integer inputs give float32.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 3], &[2])?;
/// assert_eq!(ferrox::divide(&a, &ferrox::Array::from(2))?.to_vec::<f32>()?, vec![0.5, 1.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn divide(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Divide, a, b)
}

/// Elementwise division rounded towards negative infinity (Python's `//`).
/// Integers keep their dtype and give 0 when dividing by zero. Complex
/// inputs are a dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[7i32, -7, 7], &[3])?;
/// let b = ferrox::Array::from_slice(&[2i32, 2, 0], &[3])?;
/// assert_eq!(ferrox::floor_divide(&a, &b)?.to_vec::<i32>()?, vec![3, -4, 0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn floor_divide(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::FloorDivide, a, b)
}

/// Elementwise remainder with the sign of the divisor (Python's `%`).
/// Integer remainders by zero are 0; complex inputs are a dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[7i32, -7, 7], &[3])?;
/// let b = ferrox::Array::from_slice(&[3i32, 3, -3], &[3])?;
/// assert_eq!(ferrox::remainder(&a, &b)?.to_vec::<i32>()?, vec![1, 2, -2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn remainder(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Remainder, a, b)
}

/// Elementwise `a ** b` in the promoted dtype. Integer powers are exact
/// (wrapping on overflow); a negative exponent with an integer dtype makes
/// evaluation fail with a value error, as numpy raises.
///
/// ```
/// let a = ferrox::Array::from_slice(&[2i32, 3], &[2])?;
/// assert_eq!(ferrox::power(&a, &ferrox::Array::from(3))?.to_vec::<i32>()?, vec![8, 27]);
/// let neg = ferrox::power(&a, &ferrox::Array::from(-1))?;
/// assert!(neg.eval().is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn power(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Power, a, b)
}

/// Elementwise maximum; NaN if either input is NaN. Complex inputs are a
/// dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, f32::NAN, 5.0], &[3])?;
/// let m = ferrox::maximum(&a, &ferrox::Array::from(2.0))?.to_vec::<f32>()?;
/// assert_eq!((m[0], m[1].is_nan(), m[2]), (2.0, true, 5.0));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn maximum(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Maximum, a, b)
}

/// Elementwise minimum; NaN if either input is NaN. Complex inputs are a
/// dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 5], &[2])?;
/// assert_eq!(ferrox::minimum(&a, &ferrox::Array::from(2))?.to_vec::<i32>()?, vec![1, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn minimum(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Minimum, a, b)
}

/// Elementwise `atan2(a, b)`: the angle of the point `(b, a)`, in
/// `[-pi, pi]`. Bool and integer inputs give float32; complex inputs are a
/// dtype error.
///
/// ```
/// let y = ferrox::Array::from_slice(&[1.0f32], &[1])?;
/// let x = ferrox::Array::from_slice(&[-1.0f32], &[1])?;
/// let t = ferrox::arctan2(&y, &x)?.to_vec::<f32>()?;
/// assert!((t[0] - 3.0 * std::f32::consts::FRAC_PI_4).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn arctan2(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::ArcTan2, a, b)
}

/// Elementwise `log(exp(a) + exp(b))`, computed without overflow. Bool and
/// integer inputs give float32; complex inputs are a dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1000.0f32, 0.0], &[2])?;
/// let l = ferrox::logaddexp(&a, &a)?.to_vec::<f32>()?;
/// assert!((l[0] - (1000.0 + std::f32::consts::LN_2)).abs() < 1e-3);
/// assert!((l[1] - std::f32::consts::LN_2).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn logaddexp(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::LogAddExp, a, b)
}

/// Elementwise `a == b` (bool output; NaN is unequal to everything).
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, f32::NAN], &[2])?;
/// assert_eq!(ferrox::equal(&a, &a)?.to_vec::<bool>()?, vec![true, false]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn equal(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Equal, a, b)
}

/// Elementwise `a != b` (bool output; true where either is NaN).
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, f32::NAN], &[2])?;
/// assert_eq!(ferrox::not_equal(&a, &a)?.to_vec::<bool>()?, vec![false, true]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn not_equal(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::NotEqual, a, b)
}

/// Elementwise `a < b` (bool output; false where either is NaN). Complex
/// inputs are a dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3], &[3])?;
/// assert_eq!(ferrox::less(&a, &ferrox::Array::from(2))?.to_vec::<bool>()?, vec![true, false, false]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn less(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Less, a, b)
}

/// Elementwise `a <= b` (bool output; false where either is NaN). Complex
/// inputs are a dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3], &[3])?;
/// assert_eq!(ferrox::less_equal(&a, &ferrox::Array::from(2))?.to_vec::<bool>()?, vec![true, true, false]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn less_equal(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::LessEqual, a, b)
}

/// Elementwise `a > b` (bool output; false where either is NaN). Complex
/// inputs are a dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3], &[3])?;
/// assert_eq!(ferrox::greater(&a, &ferrox::Array::from(2))?.to_vec::<bool>()?, vec![false, false, true]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn greater(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Greater, a, b)
}

/// Elementwise `a >= b` (bool output; false where either is NaN). Complex
/// inputs are a dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3], &[3])?;
/// assert_eq!(ferrox::greater_equal(&a, &ferrox::Array::from(2))?.to_vec::<bool>()?, vec![false, true, true]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn greater_equal(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::GreaterEqual, a, b)
}

/// Elementwise logical and; inputs of any dtype are cast to bool first
/// (non-zero is true).
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32, 2.0, 3.0], &[3])?;
/// let b = ferrox::Array::from_slice(&[true, false, true], &[3])?;
/// assert_eq!(ferrox::logical_and(&a, &b)?.to_vec::<bool>()?, vec![false, false, true]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn logical_and(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::LogicalAnd, a, b)
}

/// Elementwise logical or; inputs of any dtype are cast to bool first
/// (non-zero is true).
///
/// ```
/// let a = ferrox::Array::from_slice(&[0i32, 0, 7], &[3])?;
/// let b = ferrox::Array::from_slice(&[true, false, false], &[3])?;
/// assert_eq!(ferrox::logical_or(&a, &b)?.to_vec::<bool>()?, vec![true, false, true]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn logical_or(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::LogicalOr, a, b)
}

/// Elementwise bitwise and of integers or bools; other dtypes are a dtype
/// error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0b1100u8, 0b1010], &[2])?;
/// assert_eq!(ferrox::bitwise_and(&a, &ferrox::Array::from(0b0110))?.to_vec::<u8>()?, vec![0b0100, 0b0010]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn bitwise_and(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::BitwiseAnd, a, b)
}

/// Elementwise bitwise or of integers or bools; other dtypes are a dtype
/// error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0b1100u8, 0b1010], &[2])?;
/// assert_eq!(ferrox::bitwise_or(&a, &ferrox::Array::from(0b0110))?.to_vec::<u8>()?, vec![0b1110, 0b1110]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn bitwise_or(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::BitwiseOr, a, b)
}

/// Elementwise bitwise exclusive or of integers or bools; other dtypes are
/// a dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0b1100u8, 0b1010], &[2])?;
/// assert_eq!(ferrox::bitwise_xor(&a, &ferrox::Array::from(0b0110))?.to_vec::<u8>()?, vec![0b1010, 0b1100]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn bitwise_xor(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::BitwiseXor, a, b)
}

/// Elementwise `a << b` of integers (bools compute in uint8). Shifting by
/// the bit width or more, or by a negative amount, gives 0.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i8, 1, 1], &[3])?;
/// let b = ferrox::Array::from_slice(&[3i8, 8, -1], &[3])?;
/// assert_eq!(ferrox::left_shift(&a, &b)?.to_vec::<i8>()?, vec![8, 0, 0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn left_shift(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::LeftShift, a, b)
}

/// Elementwise `a >> b` of integers, arithmetic for signed dtypes (bools
/// compute in uint8). Shifting by the bit width or more, or by a negative
/// amount, gives 0, or -1 for negative signed values.
///
/// ```
/// let a = ferrox::Array::from_slice(&[-16i32, -16, 16], &[3])?;
/// let b = ferrox::Array::from_slice(&[2i32, 40, 40], &[3])?;
/// assert_eq!(ferrox::right_shift(&a, &b)?.to_vec::<i32>()?, vec![-4, -1, 0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn right_shift(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::RightShift, a, b)
}

// ---------------------------------------------------------------------------
// Operators and methods.
// ---------------------------------------------------------------------------

macro_rules! operator {
    ($tr:ident, $m:ident, $f:ident) => {
        impl<R: Into<Array>> std::ops::$tr<R> for &Array {
            type Output = Result<Array>;
            fn $m(self, rhs: R) -> Result<Array> {
                $f(self, &rhs.into())
            }
        }
        impl<R: Into<Array>> std::ops::$tr<R> for Array {
            type Output = Result<Array>;
            fn $m(self, rhs: R) -> Result<Array> {
                $f(&self, &rhs.into())
            }
        }
    };
}
operator!(Add, add, add);
operator!(Sub, sub, subtract);
operator!(Mul, mul, multiply);
operator!(Div, div, divide);
operator!(Rem, rem, remainder);
operator!(BitAnd, bitand, bitwise_and);
operator!(BitOr, bitor, bitwise_or);
operator!(BitXor, bitxor, bitwise_xor);
operator!(Shl, shl, left_shift);
operator!(Shr, shr, right_shift);

/// Defines `Array::$name(&self, other: impl Into<Array>)` forwarding to the
/// free function of the same name.
macro_rules! method {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub fn $name(&self, other: impl Into<Array>) -> Result<Array> {
            $name(self, &other.into())
        }
    };
}

impl Array {
    method!(
        /// Method form of [`floor_divide`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[-7i32], &[1])?;
        /// assert_eq!(a.floor_divide(2)?.to_vec::<i32>()?, vec![-4]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        floor_divide
    );
    method!(
        /// Method form of [`remainder`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[-7i32], &[1])?;
        /// assert_eq!(a.remainder(2)?.to_vec::<i32>()?, vec![1]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        remainder
    );
    method!(
        /// Method form of [`power`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[3.0f32], &[1])?;
        /// assert_eq!(a.power(2.0)?.to_vec::<f32>()?, vec![9.0]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        power
    );
    method!(
        /// Method form of [`maximum`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[-1.0f32, 2.0], &[2])?;
        /// assert_eq!(a.maximum(0.0)?.to_vec::<f32>()?, vec![0.0, 2.0]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        maximum
    );
    method!(
        /// Method form of [`minimum`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[-1.0f32, 2.0], &[2])?;
        /// assert_eq!(a.minimum(0.0)?.to_vec::<f32>()?, vec![-1.0, 0.0]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        minimum
    );
    method!(
        /// Method form of [`arctan2`] (`self` is the y coordinate).
        ///
        /// ```
        /// let y = ferrox::Array::from_slice(&[0.0f32], &[1])?;
        /// assert_eq!(y.arctan2(1.0)?.to_vec::<f32>()?, vec![0.0]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        arctan2
    );
    method!(
        /// Method form of [`logaddexp`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[f32::NEG_INFINITY], &[1])?;
        /// assert_eq!(a.logaddexp(0.0)?.to_vec::<f32>()?, vec![0.0]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        logaddexp
    );
    method!(
        /// Method form of [`equal`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
        /// assert_eq!(a.equal(2)?.to_vec::<bool>()?, vec![false, true]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        equal
    );
    method!(
        /// Method form of [`not_equal`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
        /// assert_eq!(a.not_equal(2)?.to_vec::<bool>()?, vec![true, false]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        not_equal
    );
    method!(
        /// Method form of [`less`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
        /// assert_eq!(a.less(2)?.to_vec::<bool>()?, vec![true, false]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        less
    );
    method!(
        /// Method form of [`less_equal`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[1i32, 3], &[2])?;
        /// assert_eq!(a.less_equal(2)?.to_vec::<bool>()?, vec![true, false]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        less_equal
    );
    method!(
        /// Method form of [`greater`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[1i32, 3], &[2])?;
        /// assert_eq!(a.greater(2)?.to_vec::<bool>()?, vec![false, true]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        greater
    );
    method!(
        /// Method form of [`greater_equal`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
        /// assert_eq!(a.greater_equal(2)?.to_vec::<bool>()?, vec![false, true]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        greater_equal
    );
    method!(
        /// Method form of [`logical_and`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[true, false], &[2])?;
        /// assert_eq!(a.logical_and(true)?.to_vec::<bool>()?, vec![true, false]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        logical_and
    );
    method!(
        /// Method form of [`logical_or`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[true, false], &[2])?;
        /// assert_eq!(a.logical_or(false)?.to_vec::<bool>()?, vec![true, false]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        logical_or
    );
    method!(
        /// Method form of [`bitwise_and`] (also the `&` operator).
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[6u8], &[1])?;
        /// assert_eq!(a.bitwise_and(3)?.to_vec::<u8>()?, vec![2]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        bitwise_and
    );
    method!(
        /// Method form of [`bitwise_or`] (also the `|` operator).
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[6u8], &[1])?;
        /// assert_eq!(a.bitwise_or(3)?.to_vec::<u8>()?, vec![7]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        bitwise_or
    );
    method!(
        /// Method form of [`bitwise_xor`] (also the `^` operator).
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[6u8], &[1])?;
        /// assert_eq!(a.bitwise_xor(3)?.to_vec::<u8>()?, vec![5]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        bitwise_xor
    );
    method!(
        /// Method form of [`left_shift`] (also the `<<` operator).
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[3u8], &[1])?;
        /// assert_eq!(a.left_shift(2)?.to_vec::<u8>()?, vec![12]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        left_shift
    );
    method!(
        /// Method form of [`right_shift`] (also the `>>` operator).
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[12u8], &[1])?;
        /// assert_eq!(a.right_shift(2)?.to_vec::<u8>()?, vec![3]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        right_shift
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorKind, Stream};
    use proptest::prelude::*;

    fn arr<T: Element + Pod>(v: &[T], shape: &[usize]) -> Array {
        Array::from_slice(v, shape).unwrap()
    }

    // ----- promotion ---------------------------------------------------------

    #[test]
    fn weak_scalars_adopt_the_array_dtype() {
        let h = arr(&[half::f16::from_f32(1.5)], &[1]);
        assert_eq!((&h * 2.0).unwrap().dtype(), DType::Float16);
        let i8s = arr(&[1i8], &[1]);
        let r = (&i8s + 2.5).unwrap();
        assert_eq!(r.dtype(), DType::Float32);
        assert_eq!(r.to_vec::<f32>().unwrap(), vec![3.5]);
        let u = arr(&[255u8], &[1]);
        let r = (&u + 1).unwrap();
        assert_eq!(r.dtype(), DType::UInt8);
        assert_eq!(r.to_vec::<u8>().unwrap(), vec![0]);
        assert_eq!(less(&u, &Array::from(300)).unwrap().dtype(), DType::Bool);
    }

    #[test]
    fn two_weak_scalars_give_a_weak_scalar() {
        let s = add(&Array::from(1), &Array::from(2)).unwrap();
        assert!(s.is_weak());
        let h = arr(&[half::f16::ONE], &[1]);
        assert_eq!(multiply(&h, &s).unwrap().dtype(), DType::Float16);
        assert!(!add(&h, &Array::from(1.0)).unwrap().is_weak());
    }

    #[test]
    fn output_dtypes_follow_the_rules() {
        use DType::*;
        let cases = [
            (BinaryOp::Divide, Int8, Float32),
            (BinaryOp::Divide, Float16, Float16),
            (BinaryOp::ArcTan2, Bool, Float32),
            (BinaryOp::LogAddExp, UInt64, Float32),
            (BinaryOp::FloorDivide, Int16, Int16),
            (BinaryOp::Equal, Complex64, Bool),
            (BinaryOp::LogicalOr, Float32, Bool),
            (BinaryOp::LeftShift, Bool, UInt8),
            (BinaryOp::BitwiseXor, Bool, Bool),
            (BinaryOp::Power, Complex64, Complex64),
        ];
        for (op, dtype, want) in cases {
            let a = crate::zeros(&[2], dtype).unwrap();
            assert_eq!(
                build(op, &a, &a).unwrap().dtype(),
                want,
                "{op:?} on {dtype}"
            );
        }
    }

    #[test]
    fn unsupported_dtypes_are_dtype_errors_naming_the_op() {
        use DType::*;
        let rejected = [
            (BinaryOp::Remainder, Complex64),
            (BinaryOp::FloorDivide, Complex64),
            (BinaryOp::Maximum, Complex64),
            (BinaryOp::Less, Complex64),
            (BinaryOp::GreaterEqual, Complex64),
            (BinaryOp::ArcTan2, Complex64),
            (BinaryOp::LogAddExp, Complex64),
            (BinaryOp::BitwiseAnd, Float32),
            (BinaryOp::BitwiseOr, Float16),
            (BinaryOp::BitwiseXor, Complex64),
            (BinaryOp::LeftShift, Float64),
            (BinaryOp::RightShift, BFloat16),
        ];
        for (op, dtype) in rejected {
            let a = crate::zeros(&[2], dtype).unwrap();
            let e = build(op, &a, &a).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Dtype, "{op:?} {dtype}");
            assert_eq!(e.op(), op.name());
            assert!(e.message().contains(dtype.name()), "{e}");
        }
        // Every dtype is accepted by the ops that take every dtype.
        for dtype in DType::ALL {
            let a = crate::zeros(&[2], dtype).unwrap();
            for op in [
                BinaryOp::Add,
                BinaryOp::Multiply,
                BinaryOp::Divide,
                BinaryOp::Power,
                BinaryOp::Equal,
            ] {
                build(op, &a, &a).unwrap().eval().unwrap();
            }
        }
    }

    #[test]
    fn mismatched_shapes_are_shape_errors() {
        let a = crate::zeros(&[3], DType::Float32).unwrap();
        let b = crate::zeros(&[4], DType::Float32).unwrap();
        for op in BinaryOp::ALL {
            let e = build(op, &a, &b).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Shape);
            assert_eq!(
                e.to_string(),
                format!(
                    "{}: shapes [3] and [4] cannot be broadcast together",
                    op.name()
                )
            );
        }
    }

    #[test]
    fn every_op_on_every_accepted_dtype_evaluates() {
        for op in BinaryOp::ALL {
            for dtype in DType::ALL {
                let a = crate::ones(&[2, 3], dtype).unwrap();
                let b = crate::ones(&[3], dtype).unwrap();
                if let Ok(r) = build(op, &a, &b) {
                    assert_eq!(r.shape(), &[2, 3]);
                    r.eval().unwrap_or_else(|e| panic!("{op:?} {dtype}: {e}"));
                }
            }
        }
    }

    // ----- integer semantics -----------------------------------------------

    #[test]
    fn integer_division_by_zero_gives_zero() {
        let a = arr(&[7i32, -7, 0, i32::MIN], &[4]);
        let z = arr(&[0i32; 4], &[4]);
        assert_eq!(
            floor_divide(&a, &z).unwrap().to_vec::<i32>().unwrap(),
            vec![0; 4]
        );
        assert_eq!(
            remainder(&a, &z).unwrap().to_vec::<i32>().unwrap(),
            vec![0; 4]
        );
        let u = arr(&[7u8, 0], &[2]);
        let uz = arr(&[0u8, 0], &[2]);
        assert_eq!(
            floor_divide(&u, &uz).unwrap().to_vec::<u8>().unwrap(),
            vec![0, 0]
        );
        assert_eq!(
            remainder(&u, &uz).unwrap().to_vec::<u8>().unwrap(),
            vec![0, 0]
        );
    }

    #[test]
    fn floor_division_and_remainder_follow_python() {
        for a in -9i32..=9 {
            for b in [-4i32, -3, -1, 1, 2, 5] {
                let (q, r) = (i32::floor_div(a, b), i32::rem(a, b));
                let (fq, fr) = (
                    (a as f64 / b as f64).floor() as i32,
                    a - b * ((a as f64 / b as f64).floor() as i32),
                );
                assert_eq!((q, r), (fq, fr), "{a} // {b}");
                assert!(r == 0 || (r < 0) == (b < 0));
            }
        }
        // MIN // -1 wraps like numpy; the remainder is 0.
        assert_eq!(i8::floor_div(i8::MIN, -1), i8::MIN);
        assert_eq!(i8::rem(i8::MIN, -1), 0);
    }

    #[test]
    fn float_floor_division_and_remainder_follow_numpy() {
        assert_eq!(f64::floor_div(1.0, 0.1), 9.0);
        assert!((f64::rem(1.0, 0.1) - 0.09999999999999995).abs() < 1e-17);
        assert_eq!(f32::floor_div(-7.0, 2.0), -4.0);
        assert_eq!(f32::rem(-7.0, 2.0), 1.0);
        assert_eq!(f32::rem(7.0, -2.0), -1.0);
        // Zero remainders take the divisor's sign.
        assert!(f32::rem(4.0, -2.0).is_sign_negative());
        assert!(f32::rem(-4.0, 2.0).is_sign_positive());
        // Division by zero: inf/nan like true division; remainder is nan.
        assert_eq!(f32::floor_div(1.0, 0.0), f32::INFINITY);
        assert!(f32::floor_div(0.0, 0.0).is_nan());
        assert!(f32::rem(1.0, 0.0).is_nan());
        assert_eq!(f64::rem(-1.0, f64::INFINITY), f64::INFINITY);
        assert!(f64::floor_div(f64::NAN, 2.0).is_nan());
        let h = half::f16::from_f32;
        assert_eq!(<f16 as Real>::rem(h(-7.0), h(2.0)), h(1.0));
    }

    #[test]
    fn integer_powers_are_exact_and_wrap() {
        let a = arr(&[2i64, -3, 0, 7], &[4]);
        let b = arr(&[10i64, 3, 0, 0], &[4]);
        assert_eq!(
            power(&a, &b).unwrap().to_vec::<i64>().unwrap(),
            vec![1024, -27, 1, 1]
        );
        assert_eq!(<i8 as Arith>::pow(3, 5), 3i8.wrapping_pow(5));
        assert_eq!(<u64 as Arith>::pow(3, 40), 3u64.wrapping_pow(40));
        assert_eq!(<i32 as Arith>::pow(-1, i32::MAX), -1);
        let bools = arr(&[false, false, true, true], &[4]);
        let exps = arr(&[false, true, false, true], &[4]);
        assert_eq!(
            power(&bools, &exps).unwrap().to_vec::<bool>().unwrap(),
            vec![true, false, true, true]
        );
    }

    #[test]
    fn negative_integer_exponents_fail_at_eval() {
        let a = arr(&[2i32, 3], &[2]);
        let b = arr(&[1i32, -2], &[2]);
        let e = power(&a, &b).unwrap().eval().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Value);
        assert_eq!(
            e.to_string(),
            "power: integers to negative integer powers are not allowed (exponent -2)"
        );
        // Unsigned and float exponents are fine.
        let f = power(&a, &Array::from(-1.0)).unwrap();
        assert_eq!(f.to_vec::<f32>().unwrap(), vec![0.5, 1.0 / 3.0]);
    }

    #[test]
    fn shifts_never_overflow() {
        let a = arr(&[1i8, 1, -128, -5, 5, 64], &[6]);
        let b = arr(&[7i8, 8, 1, 100, -1, 1], &[6]);
        assert_eq!(
            left_shift(&a, &b).unwrap().to_vec::<i8>().unwrap(),
            vec![-128, 0, 0, 0, 0, -128]
        );
        assert_eq!(
            right_shift(&a, &b).unwrap().to_vec::<i8>().unwrap(),
            vec![0, 0, -64, -1, 0, 32]
        );
        let u = arr(&[0x80u64, 1], &[2]);
        let s = arr(&[63u64, 64], &[2]);
        assert_eq!(
            left_shift(&u, &s).unwrap().to_vec::<u64>().unwrap(),
            vec![0, 0]
        );
        assert_eq!(
            right_shift(&u, &s).unwrap().to_vec::<u64>().unwrap(),
            vec![0, 0]
        );
        let t = arr(&[true], &[1]);
        let r = left_shift(&t, &t).unwrap();
        assert_eq!(
            (r.dtype(), r.to_vec::<u8>().unwrap()),
            (DType::UInt8, vec![2])
        );
    }

    #[test]
    fn bitwise_ops_on_bool_and_ints() {
        let a = arr(&[true, true, false], &[3]);
        let b = arr(&[true, false, false], &[3]);
        assert_eq!(
            (&a & &b).unwrap().to_vec::<bool>().unwrap(),
            vec![true, false, false]
        );
        assert_eq!(
            (&a | &b).unwrap().to_vec::<bool>().unwrap(),
            vec![true, true, false]
        );
        assert_eq!(
            (&a ^ &b).unwrap().to_vec::<bool>().unwrap(),
            vec![false, true, false]
        );
        let i = arr(&[-1i16, 0x0f0f], &[2]);
        assert_eq!(
            (&i & 0xff).unwrap().to_vec::<i16>().unwrap(),
            vec![0xff, 0x0f]
        );
        assert_eq!(
            (i.clone() ^ -1).unwrap().to_vec::<i16>().unwrap(),
            vec![0, !0x0f0f]
        );
        assert_eq!(
            (&i << 4).unwrap().to_vec::<i16>().unwrap(),
            vec![-16, 0x0f0f << 4]
        );
        assert_eq!((&i >> 4).unwrap().to_vec::<i16>().unwrap(), vec![-1, 0xf0]);
        assert_eq!(
            (&i % 7).unwrap().to_vec::<i16>().unwrap(),
            vec![6, 0x0f0f % 7]
        );
    }

    // ----- floats --------------------------------------------------------------

    #[test]
    fn nan_propagates_through_maximum_and_minimum() {
        let nan = f32::NAN;
        let a = arr(&[nan, 1.0, 2.0, nan], &[4]);
        let b = arr(&[1.0, nan, 1.0, nan], &[4]);
        let mx = maximum(&a, &b).unwrap().to_vec::<f32>().unwrap();
        let mn = minimum(&a, &b).unwrap().to_vec::<f32>().unwrap();
        assert!(mx[0].is_nan() && mx[1].is_nan() && mx[3].is_nan() && mx[2] == 2.0);
        assert!(mn[0].is_nan() && mn[1].is_nan() && mn[3].is_nan() && mn[2] == 1.0);
        let h = half::bf16::from_f32;
        assert!(<bf16 as Real>::max(h(1.0), half::bf16::NAN).is_nan());
        assert!(<bf16 as Real>::min(half::bf16::NAN, h(1.0)).is_nan());
    }

    #[test]
    fn comparisons_with_nan_are_false_except_not_equal() {
        let a = arr(&[f64::NAN], &[1]);
        for op in [
            BinaryOp::Equal,
            BinaryOp::Less,
            BinaryOp::LessEqual,
            BinaryOp::Greater,
            BinaryOp::GreaterEqual,
        ] {
            assert_eq!(
                build(op, &a, &a).unwrap().to_vec::<bool>().unwrap(),
                vec![false],
                "{op:?}"
            );
        }
        assert_eq!(
            not_equal(&a, &a).unwrap().to_vec::<bool>().unwrap(),
            vec![true]
        );
        let h = arr(&[half::f16::from_f32(1.0), half::f16::NAN], &[2]);
        assert_eq!(
            greater_equal(&h, &Array::from(1.0))
                .unwrap()
                .to_vec::<bool>()
                .unwrap(),
            vec![true, false]
        );
    }

    #[test]
    fn logaddexp_is_stable() {
        assert_eq!(f32::logaddexp(f32::INFINITY, f32::INFINITY), f32::INFINITY);
        assert_eq!(
            f32::logaddexp(f32::NEG_INFINITY, f32::NEG_INFINITY),
            f32::NEG_INFINITY
        );
        assert_eq!(f32::logaddexp(f32::NEG_INFINITY, 3.0), 3.0);
        assert_eq!(f64::logaddexp(1e300, 0.0), 1e300);
        assert!(f32::logaddexp(f32::NAN, 1.0).is_nan());
        assert!(
            (f64::logaddexp(-1000.0, -1000.0) - (-1000.0 + std::f64::consts::LN_2)).abs() < 1e-12
        );
    }

    #[test]
    fn complex_arithmetic_and_powers() {
        let c = Complex64::new;
        assert_eq!(complex_pow(c(0.0, 0.0), c(0.0, 0.0)), c(1.0, 0.0));
        assert_eq!(complex_pow(c(0.0, 0.0), c(2.0, 0.0)), c(0.0, 0.0));
        assert!(complex_pow(c(0.0, 0.0), c(-1.0, 0.0)).re.is_nan());
        assert_eq!(complex_pow(c(0.0, 2.0), c(2.0, 0.0)), c(-4.0, 0.0));
        assert_eq!(complex_pow(c(1.0, 1.0), c(-2.0, 0.0)), c(0.0, -0.5));
        let p = complex_pow(c(1.0, 1.0), c(0.5, 0.0));
        assert!((p.re - 1.098_684_1).abs() < 1e-6 && (p.im - 0.455_089_86).abs() < 1e-6);
        // Smith's division is exact where the naive formula overflows.
        let q = complex_div(c(1e30, 1e30), c(1e30, 1e30));
        assert_eq!(q, c(1.0, 0.0));
        let z = complex_div(c(1.0, 1.0), c(0.0, 0.0));
        assert!(z.re.is_infinite() && z.im.is_infinite());
        let a = arr(&[c(1.0, 2.0)], &[1]);
        assert_eq!(equal(&a, &a).unwrap().to_vec::<bool>().unwrap(), vec![true]);
        assert_eq!(
            (&a * &a).unwrap().to_vec::<Complex64>().unwrap(),
            vec![c(-3.0, 4.0)]
        );
    }

    // ----- layouts -------------------------------------------------------------

    /// `values` (row-major, `shape`) stored with its axes permuted by `perm`
    /// (the storage holds the permuted array contiguously) and read back
    /// through permuted strides.
    fn permuted<T: Pod>(values: &[T], shape: &[usize], perm: &[usize]) -> Data {
        let nd = shape.len();
        let pshape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        let pstrides = crate::graph::layout::row_major_strides(&pshape);
        let mut strides = vec![0isize; nd];
        for k in 0..nd {
            strides[perm[k]] = pstrides[k];
        }
        let mut storage =
            crate::runtime::memory::Storage::new(std::mem::size_of_val(values), false).unwrap();
        let dst = storage.as_mut_slice::<T>();
        let logical = crate::graph::layout::row_major_strides(shape);
        for (i, &v) in values.iter().enumerate() {
            let mut off = 0isize;
            let mut rest = i as isize;
            for d in 0..nd {
                let idx = rest / logical[d];
                rest %= logical[d];
                off += idx * strides[d];
            }
            dst[off as usize] = v;
        }
        Data {
            storage: Arc::new(storage),
            strides,
            offset: 0,
        }
    }

    /// `values` stored back to front and read through negative strides.
    fn reversed<T: Pod>(values: &[T], shape: &[usize]) -> Data {
        let mut storage =
            crate::runtime::memory::Storage::new(std::mem::size_of_val(values), false).unwrap();
        for (d, &v) in storage.as_mut_slice::<T>().iter_mut().rev().zip(values) {
            *d = v;
        }
        let strides = crate::graph::layout::row_major_strides(shape)
            .iter()
            .map(|s| -s)
            .collect();
        Data {
            storage: Arc::new(storage),
            strides,
            offset: values.len().saturating_sub(1),
        }
    }

    use std::sync::Arc;

    fn eval_op<T: Pod>(
        op: BinaryOp,
        a: (&Data, &[usize]),
        b: (&Data, &[usize]),
        dtype: DType,
        out: DType,
    ) -> Vec<T> {
        let shape = broadcast_shapes("test", a.1, b.1).unwrap();
        let ops = [
            Operand {
                data: a.0,
                shape: a.1,
                dtype,
            },
            Operand {
                data: b.0,
                shape: b.1,
                dtype,
            },
        ];
        Binary(op)
            .eval_cpu(
                &ops,
                OutSpec {
                    shape: &shape,
                    dtype: out,
                },
            )
            .unwrap()
            .to_vec::<T>(&shape)
    }

    /// Bit patterns, so that NaNs compare equal to themselves.
    fn bits(v: Vec<f32>) -> Vec<u32> {
        v.into_iter().map(f32::to_bits).collect()
    }

    #[test]
    fn non_contiguous_operands_match_contiguous_ones() {
        let shape = [2usize, 3, 4];
        let a: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 5.0).collect();
        let b: Vec<f32> = (0..24).map(|i| (i * 7 % 11) as f32 - 4.0).collect();
        let contiguous = |v: &[f32]| {
            Data::contiguous(
                {
                    let mut s = crate::runtime::memory::Storage::new(v.len() * 4, false).unwrap();
                    s.as_mut_slice::<f32>().copy_from_slice(v);
                    s
                },
                &shape,
            )
        };
        let (ca, cb) = (contiguous(&a), contiguous(&b));
        for op in [
            BinaryOp::Subtract,
            BinaryOp::Remainder,
            BinaryOp::Maximum,
            BinaryOp::ArcTan2,
        ] {
            let want = bits(eval_op::<f32>(
                op,
                (&ca, &shape),
                (&cb, &shape),
                DType::Float32,
                DType::Float32,
            ));
            let pa = permuted(&a, &shape, &[2, 0, 1]);
            let rb = reversed(&b, &shape);
            let got = eval_op::<f32>(
                op,
                (&pa, &shape),
                (&rb, &shape),
                DType::Float32,
                DType::Float32,
            );
            assert_eq!(bits(got), want, "{op:?}");
            let got = eval_op::<f32>(
                op,
                (&ca, &shape),
                (&pa_for(&b, &shape), &shape),
                DType::Float32,
                DType::Float32,
            );
            assert_eq!(bits(got), want, "{op:?} (b permuted)");
        }
        let lt = eval_op::<bool>(
            BinaryOp::Less,
            (&permuted(&a, &shape, &[1, 2, 0]), &shape),
            (&cb, &shape),
            DType::Float32,
            DType::Bool,
        );
        let want: Vec<bool> = a.iter().zip(&b).map(|(x, y)| x < y).collect();
        assert_eq!(lt, want);
    }

    fn pa_for(v: &[f32], shape: &[usize]) -> Data {
        permuted(v, shape, &[2, 1, 0])
    }

    /// NaN-aware bit equality of two half results.
    fn same_half<H: Element>(x: H, y: H) -> bool {
        let (a, b) = (x.to_f64(), y.to_f64());
        (a.is_nan() && b.is_nan()) || (a == b && a.is_sign_negative() == b.is_sign_negative())
    }

    fn half_fast_path_matches_element_path<H: HalfBlock + Element>() {
        // Large enough to split over cores; specials included.
        let n = 70_001;
        let specials = [
            f64::NAN,
            f64::INFINITY,
            -f64::INFINITY,
            0.0,
            -0.0,
            65504.0,
            1e-7,
        ];
        let va: Vec<H> = (0..n)
            .map(|i| {
                H::from_f64(if i < 7 {
                    specials[i]
                } else {
                    ((i * 37 % 1001) as f64 - 500.0) / 16.0
                })
            })
            .collect();
        let vb: Vec<H> = (0..n)
            .map(|i| {
                H::from_f64(if (7..14).contains(&i) {
                    specials[i - 7]
                } else {
                    ((i * 91 % 997) as f64 - 498.0) / 32.0
                })
            })
            .collect();
        let shape = [n];
        let contiguous = |v: &[H], shape: &[usize]| {
            let mut s =
                crate::runtime::memory::Storage::new(std::mem::size_of_val(v), false).unwrap();
            s.as_mut_slice::<H>().copy_from_slice(v);
            Data::contiguous(s, shape)
        };
        let (ca, cb) = (contiguous(&va, &shape), contiguous(&vb, &shape));
        let (ra, rb) = (reversed(&va, &shape), reversed(&vb, &shape));
        let scalar = contiguous(&[H::from_f64(2.0)], &[]);
        let dtype = H::DTYPE;
        for op in BinaryOp::ALL {
            let Ok((compute, output)) = op.dtypes(dtype) else {
                continue;
            };
            if compute != dtype {
                continue;
            }
            let run = |a: &Data, b: &Data, b_shape: &[usize]| {
                let ops = [
                    Operand {
                        data: a,
                        shape: &shape,
                        dtype,
                    },
                    Operand {
                        data: b,
                        shape: b_shape,
                        dtype,
                    },
                ];
                Binary(op)
                    .eval_cpu(
                        &ops,
                        OutSpec {
                            shape: &shape,
                            dtype: output,
                        },
                    )
                    .unwrap()
            };
            let pairs = [
                (run(&ca, &cb, &shape), run(&ra, &rb, &shape)),
                (run(&ca, &scalar, &[]), run(&ra, &scalar, &[])),
            ];
            for (fast, slow) in pairs {
                if output == DType::Bool {
                    assert_eq!(
                        fast.to_vec::<bool>(&shape),
                        slow.to_vec::<bool>(&shape),
                        "{op:?} {dtype}"
                    );
                } else {
                    let (f, s) = (fast.to_vec::<H>(&shape), slow.to_vec::<H>(&shape));
                    for i in 0..n {
                        assert!(
                            same_half(f[i], s[i]),
                            "{op:?} {dtype} at {i}: {:?} vs {:?}",
                            f[i],
                            s[i]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn half_fast_paths_match_the_element_path() {
        half_fast_path_matches_element_path::<f16>();
        half_fast_path_matches_element_path::<bf16>();
    }

    #[test]
    fn squaring_matches_pow() {
        let v = [
            0.0f32,
            -0.0,
            1.5,
            -3.25,
            f32::NAN,
            f32::INFINITY,
            -f32::INFINITY,
            1e20,
            1e-30,
            3.0e19,
        ];
        let sq = power(&arr(&v, &[10]), &Array::from(2.0))
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        for (x, y) in v.iter().zip(&sq) {
            let p = x.powf(2.0);
            assert!(
                p.to_bits() == y.to_bits() || (p.is_nan() && y.is_nan()),
                "{x}"
            );
        }
        let h = arr(&[f16::from_f32(3.0), f16::from_f32(300.0)], &[2]);
        let sq = power(&h, &Array::from(2.0))
            .unwrap()
            .to_vec::<f16>()
            .unwrap();
        assert_eq!(sq, vec![f16::from_f32(9.0), f16::INFINITY]);
    }

    #[test]
    fn scalar_operand_on_either_side() {
        let a = arr(&[1.0f32, 2.0, 4.0], &[3]);
        let two = arr(&[2.0f32], &[]);
        assert_eq!(
            divide(&a, &two).unwrap().to_vec::<f32>().unwrap(),
            vec![0.5, 1.0, 2.0]
        );
        assert_eq!(
            divide(&two, &a).unwrap().to_vec::<f32>().unwrap(),
            vec![2.0, 1.0, 0.5]
        );
        let one_elem = arr(&[2.0f32], &[1, 1]);
        assert_eq!(subtract(&one_elem, &a).unwrap().shape(), &[1, 3]);
        assert_eq!(
            subtract(&one_elem, &a).unwrap().to_vec::<f32>().unwrap(),
            vec![1.0, 0.0, -2.0]
        );
        let empty = crate::zeros(&[0, 3], DType::Float32).unwrap();
        assert_eq!(
            add(&empty, &a).unwrap().to_vec::<f32>().unwrap(),
            Vec::<f32>::new()
        );
        assert_eq!(add(&empty, &two).unwrap().shape(), &[0, 3]);
    }

    #[test]
    fn nodes_go_to_the_current_stream() {
        let s: Stream = crate::new_stream(crate::default_device());
        let a = arr(&[1i32], &[1]);
        let r = crate::with_stream(s, || maximum(&a, &a)).unwrap();
        assert_eq!(r.stream(), s);
    }

    // ----- property tests --------------------------------------------------------

    fn unravel(mut k: usize, shape: &[usize]) -> Vec<usize> {
        let mut idx = vec![0; shape.len()];
        for d in (0..shape.len()).rev() {
            idx[d] = k % shape[d];
            k /= shape[d];
        }
        idx
    }

    /// Flat index into `shape` of the output index `idx` (broadcast rules).
    fn broadcast_index(idx: &[usize], shape: &[usize]) -> usize {
        let pad = idx.len() - shape.len();
        shape.iter().enumerate().fold(0, |acc, (d, &n)| {
            acc * n + if n == 1 { 0 } else { idx[pad + d] }
        })
    }

    fn naive<T: Copy, O>(
        a: &[T],
        sa: &[usize],
        b: &[T],
        sb: &[usize],
        f: impl Fn(T, T) -> O,
    ) -> (Vec<usize>, Vec<O>) {
        let shape = broadcast_shapes("naive", sa, sb).unwrap();
        let n: usize = shape.iter().product();
        let out = (0..n)
            .map(|k| {
                let idx = unravel(k, &shape);
                f(a[broadcast_index(&idx, sa)], b[broadcast_index(&idx, sb)])
            })
            .collect();
        (shape, out)
    }

    /// A shape and a second shape that broadcasts with it (dims dropped
    /// from the front or replaced by 1, on either side).
    fn broadcast_pair() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
        prop::collection::vec((0usize..4, 0u8..4, 0u8..4), 0..4).prop_flat_map(|dims| {
            let a: Vec<usize> = dims
                .iter()
                .map(|&(d, m, _)| if m == 0 { 1 } else { d })
                .collect();
            let b: Vec<usize> = dims
                .iter()
                .map(|&(d, _, m)| if m == 0 { 1 } else { d })
                .collect();
            (0..=b.len()).prop_map(move |drop| (a.clone(), b[drop..].to_vec()))
        })
    }

    fn values_i32(n: usize) -> impl Strategy<Value = Vec<i32>> {
        prop::collection::vec(-20i32..20, n)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn broadcast_general_path_matches_naive_loop(
            (sa, sb, va, vb) in broadcast_pair().prop_flat_map(|(sa, sb)| {
                let (na, nb) = (sa.iter().product::<usize>(), sb.iter().product::<usize>());
                (Just(sa), Just(sb), values_i32(na), values_i32(nb))
            })
        ) {
            let (a, b) = (arr(&va, &sa), arr(&vb, &sb));
            let (shape, want) = naive(&va, &sa, &vb, &sb, i32::rem);
            let got = remainder(&a, &b).unwrap();
            prop_assert_eq!(got.shape(), &shape[..]);
            prop_assert_eq!(got.to_vec::<i32>().unwrap(), want);
            let (_, want) = naive(&va, &sa, &vb, &sb, |x, y| x.wrapping_sub(y));
            prop_assert_eq!(subtract(&a, &b).unwrap().to_vec::<i32>().unwrap(), want);
            let (_, want) = naive(&va, &sa, &vb, &sb, |x, y| x <= y);
            prop_assert_eq!(less_equal(&a, &b).unwrap().to_vec::<bool>().unwrap(), want);
            let (fa, fb): (Vec<f32>, Vec<f32>) = (va.iter().map(|&x| x as f32 / 4.0).collect(), vb.iter().map(|&x| x as f32 / 4.0).collect());
            let (_, want) = naive(&fa, &sa, &fb, &sb, <f32 as Real>::max);
            prop_assert_eq!(maximum(&arr(&fa, &sa), &arr(&fb, &sb)).unwrap().to_vec::<f32>().unwrap(), want);
        }

        #[test]
        fn permuted_operands_match_naive_loop(
            (shape, perm, va, vb) in prop::collection::vec(1usize..4, 1..4).prop_flat_map(|shape| {
                let n = shape.iter().product::<usize>();
                let nd = shape.len();
                (Just(shape), Just((0..nd).collect::<Vec<_>>()).prop_shuffle(), values_i32(n), values_i32(n))
            })
        ) {
            let pa = permuted(&va, &shape, &perm);
            let rb = reversed(&vb, &shape);
            for op in [BinaryOp::FloorDivide, BinaryOp::Multiply, BinaryOp::BitwiseXor] {
                let f = match op {
                    BinaryOp::FloorDivide => i32::floor_div,
                    BinaryOp::Multiply => i32::mul,
                    _ => i32::xor,
                };
                let (_, want) = naive(&va, &shape, &vb, &shape, f);
                prop_assert_eq!(eval_op::<i32>(op, (&pa, &shape), (&rb, &shape), DType::Int32, DType::Int32), want);
            }
        }

        #[test]
        fn large_contiguous_and_scalar_paths_match_naive_loop(n in 0usize..70_000, s in -5i32..5) {
            let va: Vec<i32> = (0..n as i32).map(|i| i.wrapping_mul(2_654_435_761u32 as i32) >> 20).collect();
            let a = arr(&va, &[n]);
            let want: Vec<i32> = va.iter().map(|&x| i32::floor_div(x, s)).collect();
            prop_assert_eq!(floor_divide(&a, &Array::from(s)).unwrap().to_vec::<i32>().unwrap(), want);
            let want: Vec<i32> = va.iter().map(|&x| i32::rem(s, x)).collect();
            prop_assert_eq!(remainder(&Array::from(s), &a).unwrap().to_vec::<i32>().unwrap(), want);
            let want: Vec<bool> = va.iter().zip(va.iter().rev()).map(|(&x, &y)| x > y).collect();
            let rev = arr(&va.iter().rev().copied().collect::<Vec<_>>(), &[n]);
            prop_assert_eq!(greater(&a, &rev).unwrap().to_vec::<bool>().unwrap(), want);
        }
    }
}
