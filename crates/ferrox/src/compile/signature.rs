//! Call signatures: what a compiled function's trace depends on.

use crate::dtype::DType;
use crate::graph::array::Array;
use crate::graph::stream::Device;

/// A non-array argument that is part of the cache key: a Python scalar, a
/// string, `None`. Typed, so `Float(1.0)` and `Int(1)` are different keys,
/// and floats compare by bit pattern.
///
/// ```
/// use ferrox::compile::Constant;
/// assert_ne!(Constant::float(1.0), Constant::Int(1));
/// assert_eq!(Constant::float(0.5), Constant::float(0.5));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Constant {
    /// No value.
    None,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float, by bit pattern (see [`Constant::float`]).
    Float(u64),
    /// A string.
    Str(String),
}

impl Constant {
    /// A float constant.
    pub fn float(v: f64) -> Constant {
        Constant::Float(v.to_bits())
    }
    /// The value of a float constant.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Constant::Float(b) => Some(f64::from_bits(*b)),
            Constant::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
}

/// One array argument as the key sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct InputKey {
    /// `None` when shapeless (only the rank counts).
    shape: Option<Vec<usize>>,
    ndim: usize,
    dtype: DType,
    weak: bool,
}

/// The key of one trace: input shapes (ranks when shapeless), dtypes,
/// typed constants and the device. Not the stream: a replay runs on the
/// caller's stream.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Signature {
    inputs: Vec<InputKey>,
    constants: Vec<Constant>,
    device: Device,
}

impl Signature {
    pub(crate) fn of(args: &[Array], constants: &[Constant], shapeless: bool) -> Signature {
        Signature {
            inputs: args
                .iter()
                .map(|a| InputKey {
                    shape: (!shapeless).then(|| a.shape().to_vec()),
                    ndim: a.ndim(),
                    dtype: a.dtype(),
                    weak: a.is_weak(),
                })
                .collect(),
            constants: constants.to_vec(),
            device: crate::graph::stream::current_stream().device,
        }
    }
}
