//! Quantized layers and the [`quantize`] pass.
//!
//! A quantized [`Linear`] or [`Embedding`] is the same type holding its
//! weight packed by `ferrox::quantize` (`weight`, `scales`, `biases`: the
//! names of MLX's `QuantizedLinear` and `QuantizedEmbedding`, so their
//! weight files load) and a [`QuantSpec`]; its forward pass calls
//! `quantized_matmul` on the packed weight. Keeping one type means a pass
//! can quantize a model of any type in place: [`quantize`] walks the
//! model and converts every `Linear` and `Embedding` it accepts.
//! The packed arrays are buffers: never trained, always saved.

use super::{Embedding, Linear};
use crate::error::{Result, value};
use crate::module::{Module, Param, Path, VisitorMut};
use ferrox::{Array, QuantMode};

/// How a weight is quantized.
///
/// ```
/// let s = ferrox_nn::layers::QuantSpec { group_size: 64, bits: 4, mode: ferrox::QuantMode::Affine };
/// assert_eq!(s.mode.name(), "affine");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuantSpec {
    /// Elements per scale.
    pub group_size: usize,
    /// Bits per element.
    pub bits: usize,
    /// The quantization mode.
    pub mode: QuantMode,
}

/// A quantized linear layer: a [`Linear`] whose weight is packed.
pub type QuantizedLinear = Linear;
/// A quantized embedding: an [`Embedding`] whose table is packed.
pub type QuantizedEmbedding = Embedding;

impl QuantSpec {
    /// Packs `w` (`[rows, K]`): returns the packed weight, scales and
    /// biases, and the spec with the defaults of `mode` filled in.
    fn pack(
        w: &Array,
        group_size: Option<usize>,
        bits: Option<usize>,
        mode: &str,
    ) -> Result<(Param, Param, Option<Param>, QuantSpec)> {
        let qmode = QuantMode::parse("quantize", mode)?;
        let (wq, scales, biases) = ferrox::quantize(w, group_size, bits, mode, None)?;
        let k = w.shape()[w.ndim() - 1];
        let spec = QuantSpec {
            group_size: k / scales.shape()[scales.ndim() - 1],
            bits: wq.shape()[wq.ndim() - 1] * 32 / k,
            mode: qmode,
        };
        Ok((
            Param::buffer(wq),
            Param::buffer(scales),
            biases.map(Param::buffer),
            spec,
        ))
    }

    /// `x @ w^T` (or `x @ w`) for the packed `w`.
    pub(crate) fn matmul(
        &self,
        x: &Array,
        w: &Array,
        scales: &Option<Param>,
        biases: &Option<Param>,
        transpose: bool,
    ) -> Result<Array> {
        let s = scales
            .as_ref()
            .ok_or_else(|| value("QuantizedLinear", "a quantized layer without scales"))?;
        ferrox::quantized_matmul(
            x,
            w,
            s,
            biases.as_ref().map(Param::value),
            transpose,
            Some(self.group_size),
            Some(self.bits),
            self.mode.name(),
        )
    }

    /// Unpacks rows of a packed table.
    pub(crate) fn dequantize(
        &self,
        w: &Array,
        scales: Option<&Array>,
        biases: Option<&Array>,
    ) -> Result<Array> {
        let s = scales
            .ok_or_else(|| value("QuantizedEmbedding", "a quantized table without scales"))?;
        ferrox::dequantize(
            w,
            s,
            biases,
            Some(self.group_size),
            Some(self.bits),
            self.mode.name(),
            None,
            None,
        )
    }
}

impl Linear {
    /// This layer with its weight quantized (MLX's `to_quantized`;
    /// `None` takes the mode's defaults: affine 64 and 4).
    ///
    /// ```
    /// use ferrox_nn::{Forward, Module, layers::Linear};
    /// let l = Linear::new(64, 8, true)?;
    /// let q = l.to_quantized(Some(32), Some(8), "affine")?;
    /// let x = ferrox::random::normal(&[2, 64], ferrox::DType::Float32, 0.0, 1.0, None)?;
    /// let (a, b) = (l.forward(&x)?.to_vec::<f32>()?, q.forward(&x)?.to_vec::<f32>()?);
    /// assert!(a.iter().zip(&b).all(|(u, v)| (u - v).abs() < 0.05));
    /// let names: Vec<String> = q.named_parameters().into_iter().map(|(n, _)| n).collect();
    /// assert_eq!(names, ["weight", "bias", "scales", "biases"]);
    /// assert_eq!(q.trainable_parameters().named().len(), 1); // the bias
    /// assert!(Linear::new(10, 2, false)?.to_quantized(None, None, "affine").is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn to_quantized(
        &self,
        group_size: Option<usize>,
        bits: Option<usize>,
        mode: &str,
    ) -> Result<QuantizedLinear> {
        if self.quant.is_some() {
            return Err(value(
                "Linear::to_quantized",
                "the layer is already quantized",
            ));
        }
        let (weight, scales, biases, spec) = QuantSpec::pack(&self.weight, group_size, bits, mode)?;
        Ok(Linear {
            weight,
            bias: self.bias.clone(),
            scales: Some(scales),
            biases,
            quant: Some(spec),
        })
    }
}

impl Embedding {
    /// This table quantized (MLX's `to_quantized`).
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Embedding};
    /// let e = Embedding::new(10, 64)?.to_quantized(None, None, "affine")?;
    /// let idx = ferrox::Array::from_slice(&[3u32, 7], &[2])?;
    /// assert_eq!(e.forward(&idx)?.shape(), &[2, 64]);
    /// assert_eq!(e.as_linear(&ferrox::ones(&[1, 64], ferrox::DType::Float32)?)?.shape(), &[1, 10]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn to_quantized(
        &self,
        group_size: Option<usize>,
        bits: Option<usize>,
        mode: &str,
    ) -> Result<QuantizedEmbedding> {
        if self.quant.is_some() {
            return Err(value(
                "Embedding::to_quantized",
                "the table is already quantized",
            ));
        }
        let (weight, scales, biases, spec) = QuantSpec::pack(&self.weight, group_size, bits, mode)?;
        Ok(Embedding {
            weight,
            scales: Some(scales),
            biases,
            quant: Some(spec),
        })
    }
}

/// Chooses which layers [`quantize`] converts, from a layer's dotted path
/// and its weight.
pub type QuantPredicate<'a> = &'a dyn Fn(&str, &Array) -> bool;

/// Quantizes, in place, every [`Linear`] and [`Embedding`] of `model`
/// that `predicate` accepts (all, for `None`) and whose input dimension
/// the group size divides (MLX's `nn.quantize`); returns how many layers
/// it converted.
///
/// ```
/// use ferrox_nn::{Forward, Module, layers::{quantize, Linear, Relu, Sequential}};
/// let mut m = Sequential::new().push(Linear::new(64, 64, true)?).push(Relu).push(Linear::new(64, 3, true)?);
/// let n = quantize(&mut m, Some(64), Some(4), "affine", None)?;
/// assert_eq!(n, 2);
/// assert_eq!(m.forward(&ferrox::ones(&[1, 64], ferrox::DType::Float32)?)?.shape(), &[1, 3]);
/// // Only the biases stay trainable.
/// assert_eq!(m.trainable_parameters().named().len(), 2);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn quantize<M: Module + ?Sized>(
    model: &mut M,
    group_size: Option<usize>,
    bits: Option<usize>,
    mode: &str,
    predicate: Option<QuantPredicate<'_>>,
) -> Result<usize> {
    struct Pass<'a> {
        group_size: Option<usize>,
        bits: Option<usize>,
        mode: &'a str,
        predicate: Option<QuantPredicate<'a>>,
        count: usize,
    }
    impl Pass<'_> {
        fn wants(&self, path: &str, w: &Array) -> bool {
            let gs = self
                .group_size
                .unwrap_or(if self.mode == "affine" { 64 } else { 32 });
            w.shape().last().is_some_and(|&k| k % gs == 0)
                && self.predicate.is_none_or(|p| p(path, w))
        }
    }
    impl VisitorMut for Pass<'_> {
        fn param(&mut self, _: &str, _: &mut Param) -> Result<()> {
            Ok(())
        }
        fn module(&mut self, path: &str, m: &mut dyn std::any::Any) -> Result<()> {
            if let Some(l) = m.downcast_mut::<Linear>() {
                if l.quant.is_none() && self.wants(path, &l.weight) {
                    *l = l.to_quantized(self.group_size, self.bits, self.mode)?;
                    self.count += 1;
                }
            } else if let Some(e) = m.downcast_mut::<Embedding>() {
                if e.quant.is_none() && self.wants(path, &e.weight) {
                    *e = e.to_quantized(self.group_size, self.bits, self.mode)?;
                    self.count += 1;
                }
            }
            Ok(())
        }
    }
    let mut pass = Pass {
        group_size,
        bits,
        mode,
        predicate,
        count: 0,
    };
    model.visit_mut(&mut Path::default(), &mut pass)?;
    Ok(pass.count)
}
