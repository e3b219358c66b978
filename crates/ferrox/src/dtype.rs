//! Element types and MLX's type-promotion rules.

use crate::error::{Error, Result};
use half::{bf16, f16};
use std::fmt;

/// Single-precision complex number, the element type of [`DType::Complex64`].
pub type Complex64 = num_complex::Complex<f32>;

/// The element type of an array.
///
/// ```
/// use ferrox::DType;
/// assert_eq!(DType::Float16.size(), 2);
/// assert_eq!(DType::promote(DType::Int8, DType::UInt8), DType::Int16);
/// ```
#[allow(missing_docs)] // each variant is named after what it denotes
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    Int8,
    Int16,
    Int32,
    Int64,
    Float16,
    BFloat16,
    Float32,
    Float64,
    Complex64,
}

mod info;

/// A dtype is written by its name (`"float32"`), as in exported functions'
/// files (`docs/files.md`).
impl serde::Serialize for DType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for DType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<DType, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        DType::from_name(&name).map_err(serde::de::Error::custom)
    }
}
pub use info::{
    DtypeCategory, DtypeOrCategory, FloatInfo, IntInfo, can_cast, category_of, finfo, iinfo,
    issubdtype, result_type,
};

/// Coarse grouping of dtypes used by promotion and by op dtype checks.
#[allow(missing_docs)] // each variant is named after what it denotes
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    Bool,
    Unsigned,
    Signed,
    Float,
    Complex,
}

impl DType {
    /// Every dtype, in promotion order.
    pub const ALL: [DType; 14] = [
        DType::Bool,
        DType::UInt8,
        DType::UInt16,
        DType::UInt32,
        DType::UInt64,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::Float16,
        DType::BFloat16,
        DType::Float32,
        DType::Float64,
        DType::Complex64,
    ];

    /// Size of one element in bytes.
    ///
    /// ```
    /// assert_eq!(ferrox::DType::Complex64.size(), 8);
    /// ```
    pub fn size(self) -> usize {
        use DType::*;
        match self {
            Bool | UInt8 | Int8 => 1,
            UInt16 | Int16 | Float16 | BFloat16 => 2,
            UInt32 | Int32 | Float32 => 4,
            UInt64 | Int64 | Float64 | Complex64 => 8,
        }
    }

    /// The dtype's category.
    pub fn category(self) -> Category {
        use DType::*;
        match self {
            Bool => Category::Bool,
            UInt8 | UInt16 | UInt32 | UInt64 => Category::Unsigned,
            Int8 | Int16 | Int32 | Int64 => Category::Signed,
            Float16 | BFloat16 | Float32 | Float64 => Category::Float,
            Complex64 => Category::Complex,
        }
    }

    /// True for floating point (not complex) dtypes.
    pub fn is_float(self) -> bool {
        self.category() == Category::Float
    }
    /// True for signed and unsigned integers (not bool).
    pub fn is_integer(self) -> bool {
        matches!(self.category(), Category::Signed | Category::Unsigned)
    }
    /// True for floats and complex.
    pub fn is_inexact(self) -> bool {
        matches!(self.category(), Category::Float | Category::Complex)
    }

    /// The name numpy and MLX use (`float32`, `bool`, ...).
    pub fn name(self) -> &'static str {
        use DType::*;
        match self {
            Bool => "bool",
            UInt8 => "uint8",
            UInt16 => "uint16",
            UInt32 => "uint32",
            UInt64 => "uint64",
            Int8 => "int8",
            Int16 => "int16",
            Int32 => "int32",
            Int64 => "int64",
            Float16 => "float16",
            BFloat16 => "bfloat16",
            Float32 => "float32",
            Float64 => "float64",
            Complex64 => "complex64",
        }
    }

    /// Parses a dtype name as printed by [`DType::name`].
    ///
    /// ```
    /// assert_eq!(ferrox::DType::from_name("int16").unwrap(), ferrox::DType::Int16);
    /// assert!(ferrox::DType::from_name("int3").is_err());
    /// ```
    pub fn from_name(name: &str) -> Result<DType> {
        DType::ALL
            .iter()
            .copied()
            .find(|d| d.name() == name)
            .ok_or_else(|| Error::dtype("dtype", format!("unknown dtype name {name:?}")))
    }

    /// The dtype that two array dtypes promote to (MLX's table).
    ///
    /// ```
    /// use ferrox::DType::*;
    /// assert_eq!(ferrox::DType::promote(Float16, BFloat16), Float32);
    /// assert_eq!(ferrox::DType::promote(UInt64, Int8), Float32);
    /// assert_eq!(ferrox::DType::promote(Int32, Float16), Float16);
    /// ```
    pub fn promote(a: DType, b: DType) -> DType {
        use Category as C;
        use DType::*;
        if a == b {
            return a;
        }
        let (ca, cb) = (a.category(), b.category());
        match (ca, cb) {
            (C::Bool, _) => b,
            (_, C::Bool) => a,
            (C::Complex, _) | (_, C::Complex) => Complex64,
            (C::Float, C::Float) => match (a, b) {
                (Float16, BFloat16) | (BFloat16, Float16) => Float32,
                _ => {
                    if a.size() >= b.size() {
                        a
                    } else {
                        b
                    }
                }
            },
            (C::Float, _) => a,
            (_, C::Float) => b,
            (C::Unsigned, C::Unsigned) | (C::Signed, C::Signed) => {
                if a.size() >= b.size() {
                    a
                } else {
                    b
                }
            }
            (C::Unsigned, C::Signed) => promote_mixed_int(a, b),
            (C::Signed, C::Unsigned) => promote_mixed_int(b, a),
        }
    }

    /// The dtype of an op between an array of dtype `a` and a weakly typed
    /// scalar (a plain Rust or Python number): the scalar never widens the
    /// array within its category, so `float16 * 2.0` stays `float16`.
    ///
    /// ```
    /// use ferrox::{DType, dtype::ScalarKind};
    /// assert_eq!(DType::promote_weak(DType::Float16, ScalarKind::Float), DType::Float16);
    /// assert_eq!(DType::promote_weak(DType::Int8, ScalarKind::Float), DType::Float32);
    /// assert_eq!(DType::promote_weak(DType::Bool, ScalarKind::Int), DType::Int32);
    /// ```
    pub fn promote_weak(a: DType, s: ScalarKind) -> DType {
        match (a.category(), s) {
            (_, ScalarKind::Bool) => a,
            (Category::Bool, ScalarKind::Int) => DType::Int32,
            (Category::Bool | Category::Unsigned | Category::Signed, ScalarKind::Float) => {
                DType::Float32
            }
            (Category::Complex, _) | (_, ScalarKind::Int) | (_, ScalarKind::Float) => a,
            (_, ScalarKind::Complex) => DType::Complex64,
        }
    }
}

fn promote_mixed_int(unsigned: DType, signed: DType) -> DType {
    use DType::*;
    if unsigned == UInt64 {
        return Float32;
    }
    // A signed type strictly wider than the unsigned one holds both.
    if signed.size() > unsigned.size() {
        return signed;
    }
    match unsigned {
        UInt8 => Int16,
        UInt16 => Int32,
        _ => Int64,
    }
}

/// The kind of a weakly typed scalar (see [`DType::promote_weak`]).
#[allow(missing_docs)] // each variant is named after what it denotes
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarKind {
    Bool,
    Int,
    Float,
    Complex,
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that is the element type of one [`DType`].
///
/// Conversions through `f64` are used by generic (non-hot) code paths such
/// as `astype` between exotic pairs and printing.
///
/// ```
/// use ferrox::dtype::Element;
/// assert_eq!(<f32 as Element>::DTYPE, ferrox::DType::Float32);
/// assert_eq!(<i8 as Element>::from_f64(-3.0), -3i8);
/// ```
pub trait Element: Copy + Send + Sync + PartialEq + fmt::Debug + Default + 'static {
    /// The dtype this Rust type stores.
    const DTYPE: DType;
    /// Converts to `f64` (complex: the real part).
    fn to_f64(self) -> f64;
    /// Converts from `f64` with `as`-cast semantics (saturating for ints).
    fn from_f64(v: f64) -> Self;
    /// Converts to complex.
    fn to_c64(self) -> Complex64 {
        Complex64::new(self.to_f64() as f32, 0.0)
    }
    /// Converts from complex (drops the imaginary part for real types).
    fn from_c64(v: Complex64) -> Self {
        Self::from_f64(v.re as f64)
    }
    /// Converts to an integer exactly (integers), truncating (floats).
    fn to_i128(self) -> i128 {
        self.to_f64() as i128
    }
    /// Converts from an integer, wrapping like a C cast for integer types.
    fn from_i128(v: i128) -> Self {
        Self::from_f64(v as f64)
    }
}

macro_rules! impl_element_prim {
    ($($t:ty => $d:ident),*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            #[inline(always)]
            fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)]
            fn from_f64(v: f64) -> Self { v as $t }
        }
    )*};
}
impl_element_prim!(f32 => Float32, f64 => Float64);

macro_rules! impl_element_int {
    ($($t:ty => $d:ident),*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            #[inline(always)]
            fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)]
            fn from_f64(v: f64) -> Self { v as $t }
            #[inline(always)]
            fn to_i128(self) -> i128 { self as i128 }
            #[inline(always)]
            fn from_i128(v: i128) -> Self { v as $t }
        }
    )*};
}
impl_element_int!(u8 => UInt8, u16 => UInt16, u32 => UInt32, u64 => UInt64,
    i8 => Int8, i16 => Int16, i32 => Int32, i64 => Int64);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn to_i128(self) -> i128 {
        self as i128
    }
    fn from_i128(v: i128) -> Self {
        v != 0
    }
    fn from_c64(v: Complex64) -> Self {
        v.re != 0.0 || v.im != 0.0
    }
}
impl Element for f16 {
    const DTYPE: DType = DType::Float16;
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
}
impl Element for bf16 {
    const DTYPE: DType = DType::BFloat16;
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(v: f64) -> Self {
        bf16::from_f64(v)
    }
}
impl Element for Complex64 {
    const DTYPE: DType = DType::Complex64;
    fn to_f64(self) -> f64 {
        self.re as f64
    }
    fn from_f64(v: f64) -> Self {
        Complex64::new(v as f32, 0.0)
    }
    fn to_c64(self) -> Complex64 {
        self
    }
    fn from_c64(v: Complex64) -> Self {
        v
    }
}

/// Runs `$body` with `$T` bound to the Rust element type of `$dtype`.
///
/// The workhorse of kernel dispatch: one generic body, instantiated per dtype.
#[macro_export]
#[doc(hidden)]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {{
        use $crate::dtype::DType as __D;
        match $dtype {
            __D::Bool => {
                type $T = bool;
                $body
            }
            __D::UInt8 => {
                type $T = u8;
                $body
            }
            __D::UInt16 => {
                type $T = u16;
                $body
            }
            __D::UInt32 => {
                type $T = u32;
                $body
            }
            __D::UInt64 => {
                type $T = u64;
                $body
            }
            __D::Int8 => {
                type $T = i8;
                $body
            }
            __D::Int16 => {
                type $T = i16;
                $body
            }
            __D::Int32 => {
                type $T = i32;
                $body
            }
            __D::Int64 => {
                type $T = i64;
                $body
            }
            __D::Float16 => {
                type $T = half::f16;
                $body
            }
            __D::BFloat16 => {
                type $T = half::bf16;
                $body
            }
            __D::Float32 => {
                type $T = f32;
                $body
            }
            __D::Float64 => {
                type $T = f64;
                $body
            }
            __D::Complex64 => {
                type $T = $crate::dtype::Complex64;
                $body
            }
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_is_symmetric() {
        for a in DType::ALL {
            for b in DType::ALL {
                assert_eq!(DType::promote(a, b), DType::promote(b, a), "{a} {b}");
            }
        }
    }

    #[test]
    fn promotion_matches_mlx_table_samples() {
        use DType::*;
        let cases = [
            (UInt8, Int8, Int16),
            (UInt8, Int16, Int16),
            (UInt16, Int8, Int32),
            (UInt32, Int8, Int64),
            (UInt32, Int64, Int64),
            (UInt64, Int64, Float32),
            (Int64, Float16, Float16),
            (Float16, BFloat16, Float32),
            (Float64, Complex64, Complex64),
            (Bool, Int8, Int8),
        ];
        for (a, b, want) in cases {
            assert_eq!(DType::promote(a, b), want, "{a} {b}");
        }
    }
}
