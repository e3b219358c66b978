//! [`MultiHeadAttention`], through ferrox's fused
//! `fast::scaled_dot_product_attention`.

use super::linear::Linear;
use crate::error::{Result, shape, value};
use crate::module::Forward;
use ferrox::fast::AttentionMask;
use ferrox::{Array, DType};

/// Multi-head attention: project queries, keys and values, attend per
/// head with scale `1 / sqrt(head_dims)`, project the heads back.
/// Inputs are `[B, T, features]`.
///
/// ```
/// use ferrox_nn::layers::MultiHeadAttention;
/// use ferrox::fast::AttentionMask;
/// let mha = MultiHeadAttention::new(8, 2, false)?;
/// let x = ferrox::random::normal(&[1, 5, 8], ferrox::DType::Float32, 0.0, 1.0, None)?;
/// let y = mha.forward(&x, &x, &x, AttentionMask::Causal)?;
/// assert_eq!(y.shape(), &[1, 5, 8]);
/// assert!(MultiHeadAttention::new(8, 3, false).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct MultiHeadAttention {
    /// Projects the queries.
    pub query_proj: Linear,
    /// Projects the keys.
    pub key_proj: Linear,
    /// Projects the values.
    pub value_proj: Linear,
    /// Projects the attended values.
    pub out_proj: Linear,
    /// Heads.
    pub num_heads: usize,
}

/// The input and output sizes of a [`MultiHeadAttention`] that differ
/// from its `dims` (MLX's optional arguments; `None` means `dims`, and
/// the value input defaults to the key input).
#[derive(Clone, Copy, Debug, Default)]
pub struct AttentionDims {
    /// Features of the queries.
    pub query_input_dims: Option<usize>,
    /// Features of the keys.
    pub key_input_dims: Option<usize>,
    /// Features of the values.
    pub value_input_dims: Option<usize>,
    /// Features of the projected values.
    pub value_dims: Option<usize>,
    /// Features of the output.
    pub value_output_dims: Option<usize>,
}

impl MultiHeadAttention {
    /// Attention over `dims` features in `num_heads` heads (`dims`
    /// divisible by `num_heads`); the projections have biases if `bias`
    /// (MLX's default: none).
    pub fn new(dims: usize, num_heads: usize, bias: bool) -> Result<MultiHeadAttention> {
        MultiHeadAttention::with_dims(dims, num_heads, AttentionDims::default(), bias)
    }

    /// As [`new`](Self::new) with other input and output sizes.
    pub fn with_dims(
        dims: usize,
        num_heads: usize,
        d: AttentionDims,
        bias: bool,
    ) -> Result<MultiHeadAttention> {
        if num_heads == 0 || dims % num_heads != 0 {
            return Err(value(
                "MultiHeadAttention",
                format!("dims {dims} must be divisible by num_heads {num_heads}"),
            ));
        }
        let q_in = d.query_input_dims.unwrap_or(dims);
        let k_in = d.key_input_dims.unwrap_or(dims);
        let v_in = d.value_input_dims.unwrap_or(k_in);
        let v_dims = d.value_dims.unwrap_or(dims);
        let v_out = d.value_output_dims.unwrap_or(dims);
        if v_dims % num_heads != 0 {
            return Err(value(
                "MultiHeadAttention",
                format!("value_dims {v_dims} must be divisible by num_heads {num_heads}"),
            ));
        }
        Ok(MultiHeadAttention {
            query_proj: Linear::new(q_in, dims, bias)?,
            key_proj: Linear::new(k_in, dims, bias)?,
            value_proj: Linear::new(v_in, v_dims, bias)?,
            out_proj: Linear::new(v_dims, v_out, bias)?,
            num_heads,
        })
    }

    /// `[B, T, H * d]` to `[B, H, T, d]`.
    fn heads(&self, x: &Array) -> Result<Array> {
        ferrox::unflatten(x, -1, &[self.num_heads as isize, -1])?.transpose(Some(&[0, 2, 1, 3]))
    }

    /// Attends from `queries` (`[B, T_q, q_in]`) to `keys` and `values`
    /// (`[B, T_kv, ...]`).
    pub fn forward(
        &self,
        queries: &Array,
        keys: &Array,
        values: &Array,
        mask: AttentionMask<'_>,
    ) -> Result<Array> {
        for (what, x) in [("queries", queries), ("keys", keys), ("values", values)] {
            if x.ndim() != 3 {
                return Err(shape(
                    "MultiHeadAttention",
                    format!("{what} must be [B, T, features], got shape {:?}", x.shape()),
                ));
            }
        }
        let q = self.heads(&self.query_proj.forward(queries)?)?;
        let k = self.heads(&self.key_proj.forward(keys)?)?;
        let v = self.heads(&self.value_proj.forward(values)?)?;
        let scale = (1.0 / q.shape()[3] as f64).sqrt() as f32;
        let o = ferrox::fast::scaled_dot_product_attention(&q, &k, &v, scale, mask, None)?;
        let o = o.transpose(Some(&[0, 2, 1, 3]))?.flatten(-2, -1)?;
        self.out_proj.forward(&o)
    }

    /// The additive causal mask `[n, n]`: 0 on and below the diagonal,
    /// the dtype's lowest value above it.
    ///
    /// ```
    /// let m = ferrox_nn::layers::MultiHeadAttention::create_additive_causal_mask(2, ferrox::DType::Float32)?;
    /// assert_eq!(m.to_vec::<f32>()?, vec![0.0, f32::MIN, 0.0, 0.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn create_additive_causal_mask(n: usize, dtype: DType) -> Result<Array> {
        let idx = ferrox::arange(0.0, n as f64, 1.0, DType::Int32)?;
        let above = ferrox::less(&idx.expand_dims(&[1])?, &idx.expand_dims(&[0])?)?;
        if !dtype.is_float() {
            return Err(value(
                "MultiHeadAttention",
                format!("a mask needs a float dtype, got {dtype}"),
            ));
        }
        let lowest = ferrox::full(&[], ferrox::dtype::finfo(dtype)?.min, dtype)?;
        ferrox::r#where(&above, &lowest, &ferrox::zeros(&[], dtype)?)
    }
}

crate::impl_module!(MultiHeadAttention {
    query_proj,
    key_proj,
    value_proj,
    out_proj
});
