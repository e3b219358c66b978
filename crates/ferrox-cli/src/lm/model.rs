//! A decoder-only transformer: token embedding, blocks of RoPE attention
//! and a SwiGLU feed-forward, each behind an RMSNorm and a residual, a
//! final RMSNorm and an output head tied to the embedding.
//!
//! Two forward passes share the blocks: [`Lm::forward`] (training: a
//! whole sequence, causal) and [`Lm::forward_cached`] (generation: new
//! tokens at a position given as an *array*, written into fixed-size
//! key/value caches). Because the position is an input and the caches
//! never change shape, one compiled trace serves every decode step of
//! every request, and one more per prompt-length bucket.

use super::config::LmConfig;
use crate::error::Result;
use ferrox::Result as ArrayResult;
use ferrox::fast::{self, AttentionMask, RopeOffset};
use ferrox::{Array, DType};
use ferrox_nn::Forward;
use ferrox_nn::layers::{Embedding, Linear, RmsNorm, silu};

/// One decoder block.
#[derive(Clone, Debug)]
pub struct Block {
    /// Norm before attention.
    pub attn_norm: RmsNorm,
    /// Query projection.
    pub wq: Linear,
    /// Key projection.
    pub wk: Linear,
    /// Value projection.
    pub wv: Linear,
    /// Output projection.
    pub wo: Linear,
    /// Norm before the feed-forward block.
    pub mlp_norm: RmsNorm,
    /// SwiGLU gate projection.
    pub gate: Linear,
    /// SwiGLU up projection.
    pub up: Linear,
    /// SwiGLU down projection.
    pub down: Linear,
}
ferrox_nn::impl_module!(Block {
    attn_norm,
    wq,
    wk,
    wv,
    wo,
    mlp_norm,
    gate,
    up,
    down
});

/// Where a forward pass's tokens sit: a whole sequence from 0, or new
/// tokens at an array position with the caches they extend.
enum Positions<'a> {
    Sequence,
    Cached { pos: &'a Array, mask: &'a Array },
}

impl Block {
    fn new(c: &LmConfig) -> Result<Block> {
        let kv = c.kv_heads * c.head_dims();
        let norm = || RmsNorm::new(c.dims, c.norm_eps);
        Ok(Block {
            attn_norm: norm()?,
            wq: Linear::new(c.dims, c.dims, false)?,
            wk: Linear::new(c.dims, kv, false)?,
            wv: Linear::new(c.dims, kv, false)?,
            wo: Linear::new(c.dims, c.dims, false)?,
            mlp_norm: norm()?,
            gate: Linear::new(c.dims, c.mlp_dims, false)?,
            up: Linear::new(c.dims, c.mlp_dims, false)?,
            down: Linear::new(c.mlp_dims, c.dims, false)?,
        })
    }

    /// `[B, T, heads * hd]` to `[B, heads, T, hd]`.
    fn heads(x: &Array, heads: usize, hd: usize) -> ArrayResult<Array> {
        let (b, t) = (x.shape()[0] as isize, x.shape()[1] as isize);
        x.reshape(&[b, t, heads as isize, hd as isize])?
            .transpose(Some(&[0, 2, 1, 3]))
    }

    /// The block on `x` (`[B, T, dims]`); with a cache, also the cache's
    /// new keys and values.
    fn forward(
        &self,
        c: &LmConfig,
        x: &Array,
        at: &Positions<'_>,
        cache: Option<(&Array, &Array)>,
    ) -> ArrayResult<(Array, Option<(Array, Array)>)> {
        let hd = c.head_dims();
        let (b, t) = (x.shape()[0] as isize, x.shape()[1] as isize);
        let h = self.attn_norm.forward(x)?;
        let rope = |a: Array| {
            let offset = match at {
                Positions::Sequence => RopeOffset::Scalar(0),
                Positions::Cached { pos, .. } => RopeOffset::Array(pos),
            };
            fast::rope(&a, hd, false, Some(c.rope_base), 1.0, offset, None)
        };
        let q = rope(Self::heads(&self.wq.forward(&h)?, c.heads, hd)?)?;
        let k = rope(Self::heads(&self.wk.forward(&h)?, c.kv_heads, hd)?)?;
        let v = Self::heads(&self.wv.forward(&h)?, c.kv_heads, hd)?;
        let scale = 1.0 / (hd as f32).sqrt();
        let (o, new_cache) = match (at, cache) {
            (Positions::Cached { pos, mask }, Some((ck, cv))) => {
                let k = ferrox::dynamic_slice_update(ck, &k, pos, &[2])?;
                let v = ferrox::dynamic_slice_update(cv, &v, pos, &[2])?;
                let o = fast::scaled_dot_product_attention(
                    &q,
                    &k,
                    &v,
                    scale,
                    AttentionMask::Array(mask),
                    None,
                )?;
                (o, Some((k, v)))
            }
            _ => (
                fast::scaled_dot_product_attention(&q, &k, &v, scale, AttentionMask::Causal, None)?,
                None,
            ),
        };
        let o = o
            .transpose(Some(&[0, 2, 1, 3]))?
            .reshape(&[b, t, c.dims as isize])?;
        let x = (x + self.wo.forward(&o)?)?;
        let h = self.mlp_norm.forward(&x)?;
        let ff = (silu(&self.gate.forward(&h)?)? * self.up.forward(&h)?)?;
        Ok(((&x + self.down.forward(&ff)?)?, new_cache))
    }
}

/// The language model: a sequence forward for training and a cached
/// forward for generation (see [`crate::lm`]).
///
/// ```
/// use ferrox_cli::lm::{Lm, LmConfig};
/// let m = Lm::new(LmConfig::tiny())?;
/// let tokens = ferrox::Array::from_slice(&[1i32, 2, 3, 4], &[1, 4])?;
/// assert_eq!(m.forward(&tokens)?.shape(), &[1, 4, 256]);
/// # Ok::<(), ferrox_cli::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Lm {
    /// The model's shape.
    pub config: LmConfig,
    /// Token embedding, also the output head (tied weights).
    pub embed: Embedding,
    /// The decoder blocks.
    pub blocks: Vec<Block>,
    /// The final norm.
    pub norm: RmsNorm,
}
ferrox_nn::impl_module!(Lm {
    embed,
    blocks,
    norm
});

impl Lm {
    /// A model with random weights (from the thread's random key; seed it
    /// with [`ferrox::random::seed`] for a reproducible model).
    pub fn new(config: LmConfig) -> Result<Lm> {
        config.validate()?;
        Ok(Lm {
            embed: Embedding::new(config.vocab, config.dims)?,
            blocks: (0..config.layers)
                .map(|_| Block::new(&config))
                .collect::<Result<_>>()?,
            norm: RmsNorm::new(config.dims, config.norm_eps)?,
            config,
        })
    }

    /// Next-token logits (`[B, T, vocab]`, float32) for every position of
    /// `tokens` (`[B, T]` integers), each seeing only earlier positions.
    pub fn forward(&self, tokens: &Array) -> ArrayResult<Array> {
        let mut x = self.embed.forward(tokens)?;
        for block in &self.blocks {
            x = block
                .forward(&self.config, &x, &Positions::Sequence, None)?
                .0;
        }
        self.embed.as_linear(&self.norm.forward(&x)?)
    }

    /// Empty key/value caches for a batch of `batch`: two arrays per block
    /// (`[batch, kv_heads, context, head_dims]`, keys then values).
    pub fn empty_cache(&self, batch: usize) -> ArrayResult<Vec<Array>> {
        let c = &self.config;
        let shape = [batch, c.kv_heads, c.context, c.head_dims()];
        let zero = ferrox::zeros(&shape, DType::Float32)?;
        Ok(vec![zero; 2 * c.layers])
    }

    /// Runs `tokens` (`[B, T]`) as positions `pos..pos + T` (`pos` an
    /// int32 scalar array) against `cache` (from [`Lm::empty_cache`] or a
    /// previous call) and returns the logits of position `pos + last`
    /// (`[B, vocab]`; `last` an int32 scalar array) and the new caches.
    ///
    /// Rows of `tokens` after `last` may be padding: their keys land in
    /// the cache past the sequence, where later calls overwrite them
    /// before any query can see them.
    pub fn forward_cached(
        &self,
        tokens: &Array,
        pos: &Array,
        last: &Array,
        cache: &[Array],
    ) -> ArrayResult<(Array, Vec<Array>)> {
        let c = &self.config;
        if cache.len() != 2 * c.layers {
            return Err(ferrox_nn::error::value(
                "Lm::forward_cached",
                format!("{} cache arrays for {} layers", cache.len(), c.layers),
            ));
        }
        let t = tokens.shape()[1];
        // Query i (at pos + i) sees key j when j <= pos + i.
        let keys = ferrox::arange(0.0, c.context as f64, 1.0, DType::Int32)?.reshape(&[1, -1])?;
        let queries =
            (ferrox::arange(0.0, t as f64, 1.0, DType::Int32)? + pos)?.reshape(&[-1, 1])?;
        let mask = ferrox::less_equal(&keys, &queries)?.reshape(&[1, 1, t as isize, -1])?;
        let at = Positions::Cached { pos, mask: &mask };
        let mut x = self.embed.forward(tokens)?;
        let mut new_cache = Vec::with_capacity(cache.len());
        for (block, kv) in self.blocks.iter().zip(cache.chunks(2)) {
            let (y, kv) = block.forward(c, &x, &at, Some((&kv[0], &kv[1])))?;
            x = y;
            if let Some((k, v)) = kv {
                new_cache.extend([k, v]);
            }
        }
        let row = ferrox::take(&x, last, Some(1))?;
        let logits = self.embed.as_linear(&self.norm.forward(&row)?)?;
        Ok((logits, new_cache))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrox_nn::Module;

    fn close(a: &[f32], b: &[f32], tol: f32) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol)
    }

    #[test]
    fn cached_prefill_and_decode_match_the_sequence_forward() -> Result<()> {
        ferrox::random::seed(3);
        let m = Lm::new(LmConfig::tiny())?;
        let seq: Vec<i32> = (0..9).map(|i| i * 37 % 256).collect();
        let full = m.forward(&Array::from_slice(&seq, &[1, 9])?)?;
        let full = full.to_vec::<f32>()?;
        let v = 256;
        // Prefill the first 5 tokens padded to 8, then decode one at a time.
        let mut padded = seq[..5].to_vec();
        padded.resize(8, 0);
        let (logits, mut cache) = m.forward_cached(
            &Array::from_slice(&padded, &[1, 8])?,
            &Array::scalar(0i32),
            &Array::scalar(4i32),
            &m.empty_cache(1)?,
        )?;
        assert!(close(&logits.to_vec::<f32>()?, &full[4 * v..5 * v], 1e-4));
        for (p, &tok) in seq.iter().enumerate().skip(5) {
            let (logits, next) = m.forward_cached(
                &Array::from_slice(&[tok], &[1, 1])?,
                &Array::scalar(p as i32),
                &Array::scalar(0i32),
                &cache,
            )?;
            cache = next;
            assert!(
                close(&logits.to_vec::<f32>()?, &full[p * v..(p + 1) * v], 1e-4),
                "position {p}"
            );
        }
        Ok(())
    }

    #[test]
    fn parameter_names_are_stable() -> Result<()> {
        let m = Lm::new(LmConfig::tiny())?;
        let names: Vec<String> = m.named_parameters().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names[0], "embed.weight");
        assert!(names.contains(&"blocks.1.down.weight".to_string()));
        assert_eq!(names.last().map(String::as_str), Some("norm.weight"));
        Ok(())
    }

    #[test]
    fn a_bad_config_is_an_error() {
        let c = LmConfig {
            heads: 3,
            ..LmConfig::tiny()
        };
        assert!(Lm::new(c).unwrap_err().to_string().contains("heads 3"));
    }
}
