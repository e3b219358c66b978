//! [`Embedding`]: a table of vectors looked up by integer index.

use super::quantized::QuantSpec;
use crate::error::{Result, check_last_dim, check_positive, value};
use crate::module::{Forward, Param};
use ferrox::{Array, DType};

/// A `[num_embeddings, dims]` table; `forward` maps integer indices of
/// any shape to their rows (shape `[..., dims]`).
///
/// The table starts normal with standard deviation `sqrt(1 / dims)`.
///
/// ```
/// use ferrox_nn::{Forward, layers::Embedding};
/// let e = Embedding::new(10, 4)?;
/// let idx = ferrox::Array::from_slice(&[1u32, 2, 9], &[3])?;
/// assert_eq!(e.forward(&idx)?.shape(), &[3, 4]);
/// let x = ferrox::ones(&[2, 4], ferrox::DType::Float32)?;
/// assert_eq!(e.as_linear(&x)?.shape(), &[2, 10]);
/// assert!(e.forward(&ferrox::ones(&[2], ferrox::DType::Float32)?).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Embedding {
    /// `[num_embeddings, dims]` (packed when quantized).
    pub weight: Param,
    /// The quantization scales, when quantized.
    pub scales: Option<Param>,
    /// The quantization biases, when quantized in the affine mode.
    pub biases: Option<Param>,
    /// How `weight` is quantized (`None`: a float table).
    pub quant: Option<QuantSpec>,
}

impl Embedding {
    /// A randomly initialised table.
    pub fn new(num_embeddings: usize, dims: usize) -> Result<Embedding> {
        check_positive("Embedding", "num_embeddings", num_embeddings)?;
        check_positive("Embedding", "dims", dims)?;
        let scale = (1.0 / dims as f64).sqrt();
        let w = ferrox::random::normal(&[num_embeddings, dims], DType::Float32, 0.0, scale, None)?;
        Ok(Embedding {
            weight: Param::new(w),
            scales: None,
            biases: None,
            quant: None,
        })
    }

    /// `x @ weight^T`: scores against every embedding (a tied output
    /// projection).
    pub fn as_linear(&self, x: &Array) -> Result<Array> {
        check_last_dim("Embedding", x, self.dims())?;
        match &self.quant {
            Some(q) => q.matmul(x, &self.weight, &self.scales, &self.biases, true),
            None => ferrox::matmul(x, &self.weight.t()?),
        }
    }

    /// The features of an embedding.
    pub fn dims(&self) -> usize {
        let packed = self.weight.shape()[1];
        match &self.quant {
            Some(q) => packed * 32 / q.bits,
            None => packed,
        }
    }
}

impl Forward for Embedding {
    fn forward(&self, x: &Array) -> Result<Array> {
        if !x.dtype().is_integer() {
            return Err(value(
                "Embedding",
                format!("indices must be integers, got {}", x.dtype()),
            ));
        }
        let rows = |p: &Param| ferrox::take(p, x, Some(0));
        match &self.quant {
            None => rows(&self.weight),
            Some(q) => {
                let (s, b) = (
                    self.scales.as_ref().map(rows).transpose()?,
                    self.biases.as_ref().map(rows).transpose()?,
                );
                q.dequantize(&rows(&self.weight)?, s.as_ref(), b.as_ref())
            }
        }
    }
}
crate::impl_module!(Embedding {
    weight,
    scales,
    biases
});
