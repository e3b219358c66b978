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
use super::{OutSpec, Operand, Primitive};
use crate::array::{for_each_offset, Data};
use crate::backend::cpu::elementwise::binary;
use crate::dtype::{Category, Element};
use crate::runtime::memory::Pod;
use crate::{with_dtype, Array, Complex64, DType, Error, Result};
use half::{bf16, f16};

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
            Add, Subtract, Multiply, Divide, FloorDivide, Remainder, Power, Maximum, Minimum,
            ArcTan2, LogAddExp, Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual,
            LogicalAnd, LogicalOr, BitwiseAnd, BitwiseOr, BitwiseXor, LeftShift, RightShift,
        ]
    };

    /// The op's public name (MLX's).
    ///
    /// ```
    /// assert_eq!(ferrox::primitives::binary::BinaryOp::ArcTan2.name(), "arctan2");
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
    /// use ferrox::primitives::binary::{BinaryOp, DtypeRule};
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
    /// use ferrox::{DType, primitives::binary::BinaryOp};
    /// assert_eq!(BinaryOp::Divide.dtypes(DType::Int32)?, (DType::Float32, DType::Float32));
    /// assert_eq!(BinaryOp::Less.dtypes(DType::Int8)?, (DType::Int8, DType::Bool));
    /// assert!(BinaryOp::Less.dtypes(DType::Complex64).is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn dtypes(self, promoted: DType) -> Result<(DType, DType)> {
        let at_least_float = |d: DType| if d.is_inexact() { d } else { DType::Float32 };
        let not_complex = || -> Result<()> {
            if promoted == DType::Complex64 {
                return Err(Error::dtype(self.name(), "complex64 inputs are not supported"));
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

fn arith_kernel<T: Arith>(op: BinaryOp, a: &Operand<'_>, b: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    match op {
        BinaryOp::Add => binary(a, b, out, T::add),
        BinaryOp::Subtract => binary(a, b, out, T::sub),
        BinaryOp::Multiply => binary(a, b, out, T::mul),
        BinaryOp::Divide => binary(a, b, out, T::div),
        BinaryOp::Power => {
            reject_negative_exponents::<T>(b)?;
            binary(a, b, out, T::pow)
        }
        _ => Err(misrouted(op)),
    }
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

fn real_kernel<T: Real>(op: BinaryOp, a: &Operand<'_>, b: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
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

fn float_kernel<T: FloatMath>(op: BinaryOp, a: &Operand<'_>, b: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
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

fn bitwise_kernel<T: Bitwise>(op: BinaryOp, a: &Operand<'_>, b: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    match op {
        BinaryOp::BitwiseAnd | BinaryOp::LogicalAnd => binary(a, b, out, T::and),
        BinaryOp::BitwiseOr | BinaryOp::LogicalOr => binary(a, b, out, T::or),
        BinaryOp::BitwiseXor => binary(a, b, out, T::xor),
        _ => Err(misrouted(op)),
    }
}

fn shift_kernel<T: Shift>(op: BinaryOp, a: &Operand<'_>, b: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    match op {
        BinaryOp::LeftShift => binary(a, b, out, T::shl),
        BinaryOp::RightShift => binary(a, b, out, T::shr),
        _ => Err(misrouted(op)),
    }
}

fn misrouted(op: BinaryOp) -> Error {
    Error::runtime(op.name(), "internal error: op routed to the wrong kernel family")
}

impl Primitive for Binary {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let op = self.0;
        let [a, b] = inputs else {
            return Err(Error::runtime(op.name(), format!("expected 2 inputs, got {}", inputs.len())));
        };
        if a.dtype != b.dtype {
            return Err(Error::runtime(
                op.name(),
                format!("internal error: inputs have dtypes {} and {}", a.dtype, b.dtype),
            ));
        }
        match op.rule() {
            DtypeRule::Any | DtypeRule::AtLeastFloat => {
                with_dtype!(a.dtype, T => arith_kernel::<T>(op, a, b, out))
            }
            DtypeRule::Real | DtypeRule::Ordering => with_real!(a.dtype, op, T => real_kernel::<T>(op, a, b, out)),
            DtypeRule::RealAtLeastFloat => with_float!(a.dtype, op, T => float_kernel::<T>(op, a, b, out)),
            DtypeRule::Equality => with_dtype!(a.dtype, T => equality_kernel::<T>(op, a, b, out)),
            DtypeRule::Logical => with_dtypes!(a.dtype, op, T => bitwise_kernel::<T>(op, a, b, out), [Bool => bool]),
            DtypeRule::Bitwise => with_int!(a.dtype, op, T => bitwise_kernel::<T>(op, a, b, out), Bool),
            DtypeRule::Shift => with_int!(a.dtype, op, T => shift_kernel::<T>(op, a, b, out)),
        }
    }
    primitive_common!();
}

// ---------------------------------------------------------------------------
// Builders.
// ---------------------------------------------------------------------------

/// The dtype two operands compute in, honouring weak scalars.
///
/// ```
/// use ferrox::{Array, DType, primitives::binary::result_dtype};
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
/// use ferrox::{DType, primitives::binary::prepare};
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
/// use ferrox::{Array, primitives::binary::{build, BinaryOp}};
/// let a = Array::from_slice(&[1i32, 5], &[2])?;
/// let m = build(BinaryOp::Maximum, &a, &Array::from(3))?;
/// assert_eq!(m.to_vec::<i32>()?, vec![3, 5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn build(op: BinaryOp, a: &Array, b: &Array) -> Result<Array> {
    let shape = broadcast_shapes(op.name(), a.shape(), b.shape())?;
    let promoted = result_dtype(a, b);
    let (compute, output) = op.dtypes(promoted).map_err(|e| {
        Error::dtype(op.name(), format!("{} (inputs {} and {})", e.message(), a.dtype(), b.dtype()))
    })?;
    let inputs = vec![a.astype(compute)?, b.astype(compute)?];
    let out = Array::from_op(shape, output, Binary(op), inputs);
    if a.is_weak() && b.is_weak() {
        return Ok(crate::array::mark_weak(out));
    }
    Ok(out)
}

/// Checks that `dtype` is one of the categories an op accepts.
///
/// ```
/// use ferrox::{DType, primitives::binary::require};
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
