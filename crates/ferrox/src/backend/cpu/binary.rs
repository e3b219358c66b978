//! CPU kernels of the binary elementwise functions: the [`BinaryOp`]
//! selector and its kernel family ([`DtypeRule`]), the element functions,
//! per-dtype dispatch and the half-precision path.
//!
//! Element functions live in small traits, one per family of dtypes:
//! [`Arith`] (every dtype), [`Real`] (not complex), [`FloatMath`] (floats),
//! [`Bitwise`] (integers and bool) and [`Shift`] (integers). They are
//! `#[inline(always)]` and branch-light so that the contiguous and
//! scalar-operand fast paths of [`elementwise::binary`] vectorise. Half
//! types compute in `f32` and round once, as MLX does on the CPU.
//!
//! The semantics (numpy's, where MLX follows it) are listed in
//! [`crate::ops::binary`].
//!
//! [`elementwise::binary`]: crate::backend::cpu::elementwise::binary

use crate::backend::cpu::elementwise::{binary, binary_pair, out_storage};
use crate::backend::cpu::half::HalfBlock;
use crate::backend::cpu::parallel::{chunk_len, simd, worth_splitting};
use crate::dtype::{Category, Complex64, DType, Element};
use crate::error::{Error, Result};
use crate::graph::layout::{Data, for_each_offset};
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Pod;
use crate::with_dtype;
use half::{bf16, f16};
use rayon::prelude::*;

// ---------------------------------------------------------------------------
// The op table.
// ---------------------------------------------------------------------------

/// The binary elementwise operations.
#[allow(missing_docs)] // each variant is named after the public function
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
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
}

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
    /// `(floor_div(a, b), rem(a, b))`, bit for bit; floats share the one
    /// `fmod` both need.
    #[inline(always)]
    fn divmod(a: Self, b: Self) -> (Self, Self) {
        (Self::floor_div(a, b), Self::rem(a, b))
    }
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
        /// `floor_div` and `rem` above from one `fmod` (each step as there).
        #[inline(always)]
        fn divmod(a: Self, b: Self) -> (Self, Self) {
            let m = a % b;
            if b == 0.0 {
                return (a / b, m);
            }
            let mut div = (a - m) / b;
            let rem = if m == 0.0 {
                (0.0 as $t).copysign(b)
            } else if (b < 0.0) != (m < 0.0) {
                div -= 1.0;
                m + b
            } else {
                m
            };
            let quotient = if div != 0.0 {
                let f = div.floor();
                if div - f > 0.5 { f + 1.0 } else { f }
            } else {
                (0.0 as $t).copysign(a / b)
            };
            (quotient, rem)
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
        #[inline(always)]
        fn divmod(a: Self, b: Self) -> (Self, Self) {
            let (q, r) = f32::divmod(a.to_f32(), b.to_f32());
            (<$t>::from_f32(q), <$t>::from_f32(r))
        }
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
pub(crate) fn complex_div(a: Complex64, b: Complex64) -> Complex64 {
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
pub(crate) fn complex_pow(a: Complex64, b: Complex64) -> Complex64 {
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

/// The integer exponents a float power with a scalar exponent computes as
/// products ([`power_by_products`]) instead of a `powf` call per element.
/// Below -2 the reciprocal's rounding, raised to the power, would pass 2 ulp.
const PRODUCT_EXPONENTS: std::ops::RangeInclusive<i32> = -2..=4;

/// `e` as an exponent of [`power_by_products`]: an integer in
/// [`PRODUCT_EXPONENTS`] other than 0 and 1 (which `pow` already gets
/// exactly right at no extra cost worth saving).
pub(crate) fn small_integer_exponent(e: f64) -> Option<i32> {
    let n = e as i32;
    (n as f64 == e && PRODUCT_EXPONENTS.contains(&n) && !matches!(n, 0 | 1)).then_some(n)
}

/// The exponent of a `T ** e` that runs as products, if any: a
/// [`small_integer_exponent`] for f32 and f64. Halves reach this kernel
/// only when `half_kernel` declined; a product of halves rounds to half
/// each time, so of theirs only `x ** 2` (one product of two halves is
/// exact in f32, then rounded once) runs as products, the rest as `pow`
/// (computed in f32 and rounded once).
fn product_exponent<T: Element>(e: f64) -> Option<i32> {
    let n = small_integer_exponent(e)?;
    let single_rounding = matches!(T::DTYPE, DType::Float32 | DType::Float64) || n == 2;
    (T::DTYPE.is_float() && single_rounding).then_some(n)
}

/// `x ** N` as products of `x` (of `1 / x` for negative `N`), for `N` in
/// [`PRODUCT_EXPONENTS`]: what XLA (`integer_pow`) and torch do for small
/// integer exponents. A libm `powf` per element does not vectorise and cost
/// 44% of the tanh form of GELU (`x ** 3`); the products vectorise. Each
/// product rounds once: results are within 2 ulp of the true power
/// (correctly rounded for `N` = 2 and -1). Infinities, NaN and signed zeros
/// come out as `pow` gives them; starting from `1 / x` keeps gradual
/// underflow in `x ** -2` where `x * x` would overflow.
#[inline(always)]
pub(crate) fn power_by_products<T: Arith, const N: i32>(x: T) -> T {
    let base = if N < 0 {
        T::div(T::from_f64(1.0), x)
    } else {
        x
    };
    let square = T::mul(base, base);
    match N.unsigned_abs() {
        1 => base,
        2 => square,
        3 => T::mul(square, base),
        _ => T::mul(square, square),
    }
}

/// Evaluates `$body` with `$p` bound to `power_by_products::<$T, n>` for
/// the runtime exponent `n` (one of [`small_integer_exponent`]'s): each arm
/// is its own monomorphic loop, so the product form inlines and vectorises.
macro_rules! with_power_by_products {
    ($n:expr, $T:ty, |$p:ident| $body:expr) => {
        match $n {
            -2 => {
                let $p = power_by_products::<$T, -2>;
                $body
            }
            -1 => {
                let $p = power_by_products::<$T, -1>;
                $body
            }
            2 => {
                let $p = power_by_products::<$T, 2>;
                $body
            }
            3 => {
                let $p = power_by_products::<$T, 3>;
                $body
            }
            _ => {
                let $p = power_by_products::<$T, 4>;
                $body
            }
        }
    };
}

pub(crate) fn arith_kernel<T: Arith>(
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
            match scalar_value::<T>(b).and_then(|e| product_exponent::<T>(e.to_f64())) {
                Some(n) => {
                    with_power_by_products!(n, T, |p| binary(a, b, out, move |x, _: T| p(x)))
                }
                None => binary(a, b, out, T::pow),
            }
        }
        _ => Err(misrouted(op)),
    }
}

/// The value of a one-element operand.
pub(crate) fn scalar_value<T: Pod>(x: &Operand<'_>) -> Option<T> {
    if x.shape.iter().product::<usize>() != 1 {
        return None;
    }
    x.data.raw::<T>().get(x.data.offset).copied()
}

/// numpy raises for integer bases with negative integer exponents (the
/// result is not an integer); this is data-dependent, so it is checked here.
pub(crate) fn reject_negative_exponents<T: Arith>(b: &Operand<'_>) -> Result<()> {
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

pub(crate) fn real_kernel<T: Real>(
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

pub(crate) fn float_kernel<T: FloatMath>(
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

pub(crate) fn equality_kernel<T: Element + Pod>(
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

pub(crate) fn bitwise_kernel<T: Bitwise>(
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

pub(crate) fn shift_kernel<T: Shift>(
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

pub(crate) fn misrouted(op: BinaryOp) -> Error {
    Error::runtime(
        op.name(),
        "internal error: op routed to the wrong kernel family",
    )
}

/// Evaluates `op` on two operands of one dtype into the output `out`.
pub fn eval(op: BinaryOp, a: &Operand<'_>, b: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
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

/// Quotient and remainder in one pass: `floor_divide(a, b)` and
/// `remainder(a, b)` of operands of one real dtype (the results equal the
/// two ops' bit for bit).
pub fn divmod(a: &Operand<'_>, b: &Operand<'_>, outs: [OutSpec<'_>; 2]) -> Result<[Data; 2]> {
    if a.dtype != b.dtype {
        return Err(Error::runtime(
            "divmod",
            format!(
                "internal error: inputs have dtypes {} and {}",
                a.dtype, b.dtype
            ),
        ));
    }
    with_real!(a.dtype, BinaryOp::FloorDivide, T => {
        binary_pair(a, b, outs, T::divmod)
    })
}

// ---------------------------------------------------------------------------
// Half-precision fast path.
// ---------------------------------------------------------------------------

/// An output of the half fast path: the f32 result rounded to a half
/// type, or a bool.
pub(crate) trait HalfOut: Pod {
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
pub(crate) enum HalfLane<'a, H> {
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
pub(crate) fn half_zip<H: HalfBlock + Element, O: HalfOut>(
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
pub(crate) fn half_kernel<H: HalfBlock + Element>(
    op: BinaryOp,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: OutSpec<'_>,
) -> Option<Result<Data>> {
    use BinaryOp::*;
    if op == Power
        && let Some(n) = scalar_value::<H>(b).and_then(|e| small_integer_exponent(e.to_f64()))
    {
        // In f32, then rounded once to the half type.
        return with_power_by_products!(n, f32, |p| half_zip::<H, H>(a, b, out, move |x, _| p(x)));
    }
    match op {
        Add => half_zip::<H, H>(a, b, out, |x, y| x + y),
        Subtract => half_zip::<H, H>(a, b, out, |x, y| x - y),
        Multiply => half_zip::<H, H>(a, b, out, |x, y| x * y),
        Divide => half_zip::<H, H>(a, b, out, |x, y| x / y),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::math::accuracy::ulp_error;
    use proptest::prelude::*;

    fn powers_by_products_f32(x: f32) -> [(i32, f32); 5] {
        [
            (-2, power_by_products::<f32, -2>(x)),
            (-1, power_by_products::<f32, -1>(x)),
            (2, power_by_products::<f32, 2>(x)),
            (3, power_by_products::<f32, 3>(x)),
            (4, power_by_products::<f32, 4>(x)),
        ]
    }

    #[test]
    fn small_integer_exponents_are_the_integers_from_minus_2_to_4_but_0_and_1() {
        let accepted: Vec<i32> = (-10..=10)
            .filter_map(|n| small_integer_exponent(n as f64))
            .collect();
        assert_eq!(accepted, [-2, -1, 2, 3, 4]);
        for e in [2.5, -0.5, f64::NAN, f64::INFINITY, 1e10, -1e10] {
            assert_eq!(small_integer_exponent(e), None, "{e}");
        }
    }

    #[test]
    fn special_values_match_powf() {
        let specials = [
            0.0f32,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1.0,
            -1.0,
            f32::MAX,
            -f32::MAX,
            f32::MIN_POSITIVE,
            1e-45,
            -1e-45,
            1e20,
            -1e-20,
        ];
        for x in specials {
            for (n, got) in powers_by_products_f32(x) {
                let want = x.powf(n as f32);
                assert!(
                    ulp_error(got, (x as f64).powi(n)) <= 2.0
                        || got.to_bits() == want.to_bits()
                        || (got.is_nan() && want.is_nan()),
                    "{x} ** {n}: {got} vs powf {want}"
                );
                // Signs and classes agree with powf exactly.
                assert_eq!(got.is_nan(), want.is_nan(), "{x} ** {n}");
                assert_eq!(got.is_infinite(), want.is_infinite(), "{x} ** {n}");
                if !got.is_nan() {
                    assert_eq!(
                        got.is_sign_negative(),
                        want.is_sign_negative(),
                        "{x} ** {n}"
                    );
                }
            }
        }
    }

    proptest! {
        #[test]
        fn products_are_within_2_ulp_of_the_true_power(bits in any::<u32>()) {
            let x = f32::from_bits(bits);
            for (n, got) in powers_by_products_f32(x) {
                let want = (x as f64).powi(n);
                // Results in the subnormal range round to fewer bits at
                // each product; they stay within a few subnormal spacings.
                let bound = if want.abs() < f32::MIN_POSITIVE as f64 { 4.0 } else { 2.0 };
                let err = ulp_error(got, want);
                prop_assert!(err <= bound, "{x:e} ** {n}: {got:e} vs {want:e} ({err} ulp)");
            }
        }

        #[test]
        fn f64_products_are_within_2_ulp_of_powi(x in -1e30f64..1e30) {
            let close = |got: f64, n: i32| {
                let want = x.powi(n);
                want.is_nan() || ((got - want).abs() <= 4.0 * f64::EPSILON * want.abs())
            };
            prop_assert!(close(power_by_products::<f64, 3>(x), 3));
            prop_assert!(close(power_by_products::<f64, -2>(x), -2));
        }
    }
}
