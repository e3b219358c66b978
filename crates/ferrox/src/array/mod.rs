//! [`Array`]: a cheap-to-clone, thread-safe handle to a lazy graph node.

mod display;
mod layout;
mod node;

pub use layout::{Data, for_each_offset, is_row_contiguous, row_major_strides};
pub(crate) use node::Node;

use crate::dtype::{Element, ScalarKind};
use crate::primitives::Primitive;
use crate::runtime::cell::EvalCell;
use crate::runtime::memory::{Pod, Storage};
use crate::sync::RwLock;
use crate::{DType, Error, Result, Stream};
use std::sync::Arc;

/// A lazy n-dimensional array.
///
/// Cloning is an `Arc` clone. Ops build graph nodes; nothing computes until
/// [`Array::eval`], [`crate::eval`], [`Array::item`] or [`Array::to_vec`].
/// Arrays are `Send + Sync`: any thread may evaluate or read an array built
/// on any other, also after that thread has exited (contract item 1).
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
/// let b = (&a * 2.0)? ;
/// assert_eq!(b.to_vec::<f32>()?, vec![2.0, 4.0, 6.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone)]
pub struct Array(pub(crate) Arc<Node>);

// Compile-time proof of contract item 1.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Array>();
};

impl Array {
    /// An array holding `data` (row-major) with `shape`.
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[1i32, 2, 3, 4], &[2, 2])?;
    /// assert_eq!(a.shape(), &[2, 2]);
    /// assert!(ferrox::Array::from_slice(&[1i32, 2, 3], &[2, 2]).is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn from_slice<T: Element + Pod>(data: &[T], shape: &[usize]) -> Result<Array> {
        let n = checked_numel("array", shape)?;
        if n != data.len() {
            return Err(Error::shape(
                "array",
                format!(
                    "{} elements do not fill shape {:?} ({} elements)",
                    data.len(),
                    shape,
                    n
                ),
            ));
        }
        let mut storage = Storage::new(std::mem::size_of_val(data), false)?;
        storage.as_mut_slice::<T>().copy_from_slice(data);
        Ok(Array::from_data(
            Data::contiguous(storage, shape),
            shape.to_vec(),
            T::DTYPE,
        ))
    }

    /// A 0-d array holding `value`, strongly typed as `T`.
    ///
    /// ```
    /// let a = ferrox::Array::scalar(3u8);
    /// assert_eq!(a.dtype(), ferrox::DType::UInt8);
    /// assert_eq!(a.item::<u8>()?, 3);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn scalar<T: Element + Pod>(value: T) -> Array {
        Self::try_scalar(value, false).unwrap_or_else(|_| Self::unavailable(T::DTYPE))
    }

    /// A weakly typed scalar (MLX's Python scalars): in binary ops it adopts
    /// the other operand's dtype when the categories allow.
    ///
    /// ```
    /// use ferrox::*;
    /// let h = ones(&[2], DType::Float16)?;
    /// assert_eq!(multiply(&h, &Array::weak_f64(2.0))?.dtype(), DType::Float16);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn weak_f64(value: f64) -> Array {
        Self::try_scalar(value as f32, true).unwrap_or_else(|_| Self::unavailable(DType::Float32))
    }
    /// A weakly typed integer scalar (int32 unless combined with an array;
    /// int64 when the value does not fit int32, so that combined with a
    /// float array it keeps its value).
    ///
    /// ```
    /// use ferrox::*;
    /// let a = ones(&[2], DType::UInt8)?;
    /// assert_eq!(add(&a, &Array::weak_i64(1))?.dtype(), DType::UInt8);
    /// let f = ones(&[1], DType::Float32)?;
    /// assert_eq!(add(&f, &Array::weak_i64(3_000_000_000))?.to_vec::<f32>()?, vec![3e9]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn weak_i64(value: i64) -> Array {
        match i32::try_from(value) {
            Ok(v) => Self::try_scalar(v, true),
            Err(_) => Self::try_scalar(value, true),
        }
        .unwrap_or_else(|_| Self::unavailable(DType::Int32))
    }
    /// A weakly typed boolean scalar.
    ///
    /// ```
    /// assert!(ferrox::Array::weak_bool(true).is_weak());
    /// ```
    pub fn weak_bool(value: bool) -> Array {
        Self::try_scalar(value, true).unwrap_or_else(|_| Self::unavailable(DType::Bool))
    }

    fn try_scalar<T: Element + Pod>(value: T, weak: bool) -> Result<Array> {
        let mut storage = Storage::new(size_of::<T>(), T::DTYPE == DType::Bool)?;
        storage.as_mut_slice::<T>()[0] = value;
        let mut a = Array::from_data(Data::contiguous(storage, &[]), vec![], T::DTYPE);
        if weak {
            if let Some(node) = Arc::get_mut(&mut a.0) {
                node.weak = true;
            }
        }
        Ok(a)
    }

    /// A leaf whose evaluation reports an allocation failure (only built
    /// when a 1-element allocation failed, so constructors stay infallible).
    fn unavailable(dtype: DType) -> Array {
        let node = Node {
            id: node::next_id(),
            shape: vec![],
            dtype,
            stream: crate::current_stream(),
            weak: false,
            op: None,
            inputs: RwLock::new(vec![]),
            cell: EvalCell::pending(),
            traces: None,
        };
        let a = Array(Arc::new(node));
        if let crate::runtime::cell::Claimed::Mine(c) = a.0.cell.claim() {
            c.publish(Err(Error::new(
                crate::ErrorKind::Memory,
                "array",
                "out of memory",
            )));
        }
        a
    }

    /// Wraps evaluated data as a leaf array.
    pub(crate) fn from_data(data: Data, shape: Vec<usize>, dtype: DType) -> Array {
        Array(Arc::new(Node {
            id: node::next_id(),
            shape,
            dtype,
            stream: crate::current_stream(),
            weak: false,
            op: None,
            inputs: RwLock::new(vec![]),
            cell: EvalCell::ready(data),
            traces: None,
        }))
    }

    /// Builds an unevaluated node on the current stream. Ops call this after
    /// they validated their inputs and inferred `shape` and `dtype`.
    pub(crate) fn from_op(
        shape: Vec<usize>,
        dtype: DType,
        op: impl Primitive,
        inputs: Vec<Array>,
    ) -> Array {
        Self::from_op_arc(shape, dtype, Arc::new(op), inputs)
    }

    /// Builds a node computed by a user-supplied primitive: the way to add
    /// a custom kernel. The primitive must produce `shape` and `dtype`.
    ///
    /// ```
    /// use ferrox::{array::Data, primitives::{Operand, OutSpec, Primitive}, *};
    /// #[derive(Debug)]
    /// struct Twice;
    /// impl Primitive for Twice {
    ///     fn name(&self) -> &'static str { "twice" }
    ///     fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
    ///         ferrox::backend::cpu::elementwise::unary(&inputs[0], out, |v: f32| v * 2.0)
    ///     }
    ///     fn as_any(&self) -> &dyn std::any::Any { self }
    /// }
    /// let x = ones(&[3], DType::Float32)?;
    /// let y = Array::from_primitive(vec![3], DType::Float32, std::sync::Arc::new(Twice), vec![x]);
    /// assert_eq!(y.to_vec::<f32>()?, vec![2.0; 3]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn from_primitive(
        shape: Vec<usize>,
        dtype: DType,
        op: Arc<dyn Primitive>,
        inputs: Vec<Array>,
    ) -> Array {
        Self::from_op_arc(shape, dtype, op, inputs)
    }

    pub(crate) fn from_op_arc(
        shape: Vec<usize>,
        dtype: DType,
        op: Arc<dyn Primitive>,
        inputs: Vec<Array>,
    ) -> Array {
        let traces = crate::transforms::trace::union(inputs.iter().map(|i| &i.0.traces));
        Self::build(shape, dtype, op, inputs, traces)
    }

    pub(crate) fn build(
        shape: Vec<usize>,
        dtype: DType,
        op: Arc<dyn Primitive>,
        inputs: Vec<Array>,
        traces: crate::transforms::trace::TraceSet,
    ) -> Array {
        Array(Arc::new(Node {
            id: node::next_id(),
            shape,
            dtype,
            stream: crate::current_stream(),
            weak: false,
            op: Some(op),
            inputs: RwLock::new(inputs),
            cell: EvalCell::pending(),
            traces,
        }))
    }

    /// True if this array belongs to a live transform of `kind`, e.g. to
    /// choose a training path only when differentiated. The answer depends
    /// only on this array, never on the calling thread.
    ///
    /// ```
    /// use ferrox::{transforms::TraceKind, *};
    /// let x = ones(&[2], DType::Float32)?;
    /// assert!(!x.is_traced(TraceKind::Vjp));
    /// let (_, g) = vjp(|xs| {
    ///     assert!(xs[0].is_traced(TraceKind::Vjp));
    ///     Ok(vec![xs[0].clone()])
    /// }, &[x.clone()], &[ones(&[2], DType::Float32)?])?;
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn is_traced(&self, kind: crate::transforms::TraceKind) -> bool {
        self.0
            .traces
            .as_ref()
            .is_some_and(|s| s.iter().any(|t| t.kind() == kind && t.is_live()))
    }

    /// True if this array is being differentiated (vjp/grad or jvp).
    ///
    /// ```
    /// assert!(!ferrox::ones(&[1], ferrox::DType::Float32)?.is_differentiated());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn is_differentiated(&self) -> bool {
        self.0
            .traces
            .as_ref()
            .is_some_and(|s| s.iter().any(|t| t.kind().differentiates() && t.is_live()))
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.0.shape
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.0.shape.len()
    }
    /// Number of elements.
    pub fn size(&self) -> usize {
        self.0.shape.iter().product()
    }
    /// Bytes per element.
    pub fn itemsize(&self) -> usize {
        self.0.dtype.size()
    }
    /// Bytes of all elements.
    pub fn nbytes(&self) -> usize {
        self.size() * self.itemsize()
    }
    /// The stream this array's node was built on.
    pub fn stream(&self) -> Stream {
        self.0.stream
    }
    /// True for weakly typed scalars ([`Array::weak_f64`] and friends).
    pub fn is_weak(&self) -> bool {
        self.0.weak
    }
    /// The kind of a weak scalar, used by promotion.
    pub(crate) fn weak_kind(&self) -> Option<ScalarKind> {
        if !self.0.weak {
            return None;
        }
        Some(match self.dtype().category() {
            crate::dtype::Category::Bool => ScalarKind::Bool,
            crate::dtype::Category::Signed | crate::dtype::Category::Unsigned => ScalarKind::Int,
            crate::dtype::Category::Float => ScalarKind::Float,
            crate::dtype::Category::Complex => ScalarKind::Complex,
        })
    }
    /// A unique, never reused id of this node.
    pub fn id(&self) -> u64 {
        self.0.id
    }
    /// The primitive that computes this node (`None` for data leaves).
    pub fn primitive(&self) -> Option<&Arc<dyn Primitive>> {
        self.0.op.as_ref()
    }
    /// The node's inputs (empty once evaluated and detached).
    pub fn inputs(&self) -> Vec<Array> {
        self.0.inputs()
    }
    /// True once the value (or an evaluation error) is available.
    ///
    /// ```
    /// let a = ferrox::ones(&[2], ferrox::DType::Float32)?;
    /// assert!(!a.is_available());
    /// a.eval()?;
    /// assert!(a.is_available());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn is_available(&self) -> bool {
        self.0.cell.is_done()
    }

    /// Evaluates this array (see [`crate::eval`]).
    pub fn eval(&self) -> Result<()> {
        crate::eval(std::slice::from_ref(self))
    }

    /// Evaluates and returns the value's buffer and layout (element
    /// strides and offset into the shared, read-only storage): what a
    /// zero-copy export (numpy, the Python buffer protocol) needs. The
    /// storage stays alive as long as the returned `Data` does.
    ///
    /// ```
    /// let a = ferrox::arange(0.0, 6.0, 1.0, ferrox::DType::Float32)?.reshape(&[2, 3])?;
    /// let t = a.transpose(None)?;
    /// let d = t.data()?;
    /// assert_eq!(d.strides, vec![1, 3]);
    /// // t[1, 1] is at offset + 1 * 1 + 1 * 3, and equals a[1, 1].
    /// assert_eq!(d.storage.as_slice::<f32>()[d.offset + 1 + 3], 4.0);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn data(&self) -> Result<Data> {
        if let Some(r) = self.0.cell.get() {
            return r;
        }
        self.eval()?;
        self.0.cell.wait()
    }

    /// Evaluates and copies the elements out in row-major order. `T` must be
    /// the array's element type.
    ///
    /// ```
    /// let a = ferrox::arange(0.0, 3.0, 1.0, ferrox::DType::Float32)?;
    /// assert_eq!(a.to_vec::<f32>()?, vec![0.0, 1.0, 2.0]);
    /// assert!(a.to_vec::<i32>().is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn to_vec<T: Element + Pod>(&self) -> Result<Vec<T>> {
        self.check_element::<T>("to_vec")?;
        Ok(self.data()?.to_vec::<T>(self.shape()))
    }

    /// Evaluates a one-element array and returns its value.
    ///
    /// ```
    /// let s = ferrox::sum(&ferrox::ones(&[4], ferrox::DType::Float32)?, None, false)?;
    /// assert_eq!(s.item::<f32>()?, 4.0);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn item<T: Element + Pod>(&self) -> Result<T> {
        self.check_element::<T>("item")?;
        if self.size() != 1 {
            return Err(Error::value(
                "item",
                format!(
                    "can only convert an array of size 1, got shape {:?}",
                    self.shape()
                ),
            ));
        }
        let d = self.data()?;
        Ok(d.raw::<T>()[d.offset])
    }

    fn check_element<T: Element>(&self, op: &str) -> Result<()> {
        if T::DTYPE != self.dtype() {
            return Err(Error::dtype(
                op,
                format!(
                    "array has dtype {} but {} was requested; use astype first",
                    self.dtype(),
                    T::DTYPE
                ),
            ));
        }
        Ok(())
    }
}

/// Product of `shape`, or an error naming `op` if it overflows.
///
/// As in numpy, the product of the non-zero dimensions must fit too (with
/// room for 16-byte elements as `isize` byte offsets), even when another
/// dimension is 0: strides are products of dimensions and must not overflow.
pub(crate) fn checked_numel(op: &str, shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= isize::MAX as usize / 16)
        .map(|n| if shape.contains(&0) { 0 } else { n })
        .ok_or_else(|| Error::value(op, format!("shape {shape:?} has too many elements")))
}

impl From<f64> for Array {
    fn from(v: f64) -> Array {
        Array::weak_f64(v)
    }
}
impl From<f32> for Array {
    fn from(v: f32) -> Array {
        Array::weak_f64(v as f64)
    }
}
impl From<i32> for Array {
    fn from(v: i32) -> Array {
        Array::weak_i64(v as i64)
    }
}
impl From<i64> for Array {
    fn from(v: i64) -> Array {
        Array::weak_i64(v)
    }
}
impl From<bool> for Array {
    fn from(v: bool) -> Array {
        Array::weak_bool(v)
    }
}
impl From<&Array> for Array {
    fn from(a: &Array) -> Array {
        a.clone()
    }
}

/// Marks a freshly built node as a weak scalar result (weak op weak).
pub(crate) fn mark_weak(mut a: Array) -> Array {
    if let Some(n) = Arc::get_mut(&mut a.0) {
        n.weak = true;
    }
    a
}
