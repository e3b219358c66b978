//! [`Sequential`]: layers applied in order.

use crate::error::Result;
use crate::module::{Forward, Layer};
use ferrox::Array;

/// Applies its layers in order; parameters are named `layers.0...`,
/// `layers.1...` as in MLX.
///
/// ```
/// use ferrox_nn::{Forward, Module, layers::{Linear, Relu, Sequential}};
/// let s = Sequential::new().push(Linear::new(2, 4, true)?).push(Relu).push(Linear::new(4, 1, false)?);
/// assert_eq!(s.forward(&ferrox::ones(&[3, 2], ferrox::DType::Float32)?)?.shape(), &[3, 1]);
/// let names: Vec<String> = s.named_parameters().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["layers.0.weight", "layers.0.bias", "layers.2.weight"]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct Sequential {
    /// The layers, first applied first.
    pub layers: Vec<Box<dyn Layer>>,
}

impl Sequential {
    /// An empty sequence (the identity).
    pub fn new() -> Sequential {
        Sequential::default()
    }

    /// The sequence with `layer` appended.
    pub fn push(mut self, layer: impl Layer) -> Sequential {
        self.layers.push(Box::new(layer));
        self
    }
}

impl Forward for Sequential {
    fn forward(&self, x: &Array) -> Result<Array> {
        self.layers.iter().try_fold(x.clone(), |x, l| l.forward(&x))
    }
}
crate::impl_module!(Sequential { layers });
