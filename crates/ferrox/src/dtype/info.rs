//! Dtype introspection: the category tree ([`DtypeCategory`],
//! [`issubdtype`]), the limits of a type ([`finfo`], [`iinfo`]) and the
//! promotion queries ([`result_type`], [`can_cast`]), as numpy and MLX
//! name them.

use super::{Category, DType};
use crate::error::{Error, Result};

/// The abstract dtype categories, numpy's tree: `generic` holds `bool` and
/// `number`; `number` holds `integer` (`signedinteger`, `unsignedinteger`)
/// and `inexact` (`floating`, `complexfloating`).
#[allow(missing_docs)] // each variant is named after what it denotes
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DtypeCategory {
    ComplexFloating,
    Floating,
    Inexact,
    SignedInteger,
    UnsignedInteger,
    Integer,
    Number,
    Generic,
}

impl DtypeCategory {
    /// Every category, leaves first (MLX's order).
    pub const ALL: [DtypeCategory; 8] = [
        DtypeCategory::ComplexFloating,
        DtypeCategory::Floating,
        DtypeCategory::Inexact,
        DtypeCategory::SignedInteger,
        DtypeCategory::UnsignedInteger,
        DtypeCategory::Integer,
        DtypeCategory::Number,
        DtypeCategory::Generic,
    ];

    /// The numpy spelling (`floating`, `signedinteger`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DtypeCategory::ComplexFloating => "complexfloating",
            DtypeCategory::Floating => "floating",
            DtypeCategory::Inexact => "inexact",
            DtypeCategory::SignedInteger => "signedinteger",
            DtypeCategory::UnsignedInteger => "unsignedinteger",
            DtypeCategory::Integer => "integer",
            DtypeCategory::Number => "number",
            DtypeCategory::Generic => "generic",
        }
    }

    /// The category directly above this one (`None` for `generic`).
    pub fn parent(self) -> Option<DtypeCategory> {
        use DtypeCategory::*;
        match self {
            ComplexFloating | Floating => Some(Inexact),
            SignedInteger | UnsignedInteger => Some(Integer),
            Inexact | Integer => Some(Number),
            Number => Some(Generic),
            Generic => None,
        }
    }

    /// True if `self` is `other` or lies below it.
    pub fn is_within(self, other: DtypeCategory) -> bool {
        let mut c = Some(self);
        while let Some(x) = c {
            if x == other {
                return true;
            }
            c = x.parent();
        }
        false
    }
}

/// The innermost category a dtype belongs to (`bool` is directly under
/// `generic`).
pub fn category_of(d: DType) -> DtypeCategory {
    match d.category() {
        Category::Bool => DtypeCategory::Generic,
        Category::Unsigned => DtypeCategory::UnsignedInteger,
        Category::Signed => DtypeCategory::SignedInteger,
        Category::Float => DtypeCategory::Floating,
        Category::Complex => DtypeCategory::ComplexFloating,
    }
}

/// A dtype or a category: the operands of [`issubdtype`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DtypeOrCategory {
    /// A concrete dtype.
    Dtype(DType),
    /// An abstract category.
    Category(DtypeCategory),
}

/// numpy's `issubdtype`: a dtype is a subtype of itself and of every
/// category above it; a category of every category above it; nothing is a
/// subtype of a different concrete dtype.
///
/// ```
/// use ferrox::dtype::{issubdtype, DtypeCategory::*, DtypeOrCategory::*};
/// use ferrox::DType;
/// assert!(issubdtype(Dtype(DType::Float16), Category(Inexact)));
/// assert!(issubdtype(Category(Floating), Category(Number)));
/// assert!(!issubdtype(Dtype(DType::Bool), Category(Number)));
/// assert!(!issubdtype(Dtype(DType::Float32), Dtype(DType::Float16)));
/// ```
pub fn issubdtype(a: DtypeOrCategory, b: DtypeOrCategory) -> bool {
    use DtypeOrCategory::*;
    match (a, b) {
        (Dtype(x), Dtype(y)) => x == y,
        (Dtype(x), Category(c)) => category_of(x).is_within(c),
        (Category(_), Dtype(_)) => false,
        (Category(x), Category(c)) => x.is_within(c),
    }
}

/// The limits of a floating point (or complex, by its float parts) dtype.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloatInfo {
    /// The dtype described (complex64 reports float32's limits).
    pub dtype: DType,
    /// Bits per value.
    pub bits: usize,
    /// The most negative finite value.
    pub min: f64,
    /// The largest finite value.
    pub max: f64,
    /// The gap between 1 and the next representable value.
    pub eps: f64,
    /// The smallest positive normal value.
    pub smallest_normal: f64,
}

/// The limits of a floating point dtype; complex64 gives float32's limits
/// (with `dtype` float32, as MLX); other dtypes are an error.
///
/// ```
/// let f = ferrox::dtype::finfo(ferrox::DType::Float16)?;
/// assert_eq!((f.max, f.eps), (65504.0, 2f64.powi(-10)));
/// assert!(ferrox::dtype::finfo(ferrox::DType::Int32).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn finfo(dtype: DType) -> Result<FloatInfo> {
    let (bits, max, eps, smallest_normal, d) = match dtype {
        DType::Float16 => (16, 65504.0, 2f64.powi(-10), 2f64.powi(-14), dtype),
        DType::BFloat16 => (
            16,
            half::bf16::MAX.to_f64(),
            2f64.powi(-7),
            2f64.powi(-126),
            dtype,
        ),
        DType::Float32 | DType::Complex64 => (
            32,
            f32::MAX as f64,
            f32::EPSILON as f64,
            f32::MIN_POSITIVE as f64,
            DType::Float32,
        ),
        DType::Float64 => (64, f64::MAX, f64::EPSILON, f64::MIN_POSITIVE, dtype),
        d => {
            return Err(Error::value(
                "finfo",
                format!("dtype {d} is not inexact (floating point or complex)"),
            ));
        }
    };
    Ok(FloatInfo {
        dtype: d,
        bits,
        min: -max,
        max,
        eps,
        smallest_normal,
    })
}

/// The limits of an integer dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntInfo {
    /// The dtype described.
    pub dtype: DType,
    /// Bits per value.
    pub bits: usize,
    /// The smallest value.
    pub min: i128,
    /// The largest value.
    pub max: i128,
}

/// The limits of an integer dtype; other dtypes are an error.
///
/// ```
/// let i = ferrox::dtype::iinfo(ferrox::DType::Int8)?;
/// assert_eq!((i.min, i.max), (-128, 127));
/// assert_eq!(ferrox::dtype::iinfo(ferrox::DType::UInt64)?.max, u64::MAX as i128);
/// assert!(ferrox::dtype::iinfo(ferrox::DType::Float32).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn iinfo(dtype: DType) -> Result<IntInfo> {
    let bits = dtype.size() * 8;
    let (min, max) = match dtype.category() {
        Category::Unsigned => (0, (1i128 << bits) - 1),
        Category::Signed => (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
        _ => {
            return Err(Error::value(
                "iinfo",
                format!("only integer dtypes have integer limits, got {dtype}"),
            ));
        }
    };
    Ok(IntInfo {
        dtype,
        bits,
        min,
        max,
    })
}

/// The dtype `dtypes` promote to together; an error for none.
///
/// ```
/// use ferrox::DType::*;
/// assert_eq!(ferrox::dtype::result_type(&[UInt8, Int8])?, Int16);
/// assert_eq!(ferrox::dtype::result_type(&[Int8, Float32])?, Float32);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn result_type(dtypes: &[DType]) -> Result<DType> {
    let (first, rest) = dtypes.split_first().ok_or_else(|| {
        Error::value(
            "result_type",
            "needs at least one array or dtype".to_string(),
        )
    })?;
    Ok(rest.iter().fold(*first, |acc, &d| DType::promote(acc, d)))
}

/// True when `from` promotes with `to` to `to` itself (MLX's rule: a cast
/// that type promotion would make anyway).
///
/// ```
/// use ferrox::DType::*;
/// assert!(ferrox::dtype::can_cast(Int32, Float32));
/// assert!(!ferrox::dtype::can_cast(Int32, Int8));
/// ```
pub fn can_cast(from: DType, to: DType) -> bool {
    DType::promote(from, to) == to
}
