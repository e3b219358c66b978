//! Generation: a prompt is run once through the model (padded to a length
//! bucket), then one token at a time, each step through the same compiled
//! forward with a per-request key/value cache.
//!
//! One [`Generator`] serves any number of threads at once: they share its
//! model (weights are never copied) and its compiled forward (one trace per
//! input shape, made by whichever thread needs it first); each request owns
//! only its cache and its random stream. Nothing depends on which other
//! requests run, so a seed gives the same text alone or beside others.

use super::model::Lm;
use super::sample::{Sampling, sample};
use crate::error::{Error, Result};
use crate::rng::SplitMix;
use ferrox::sync::{Mutex, lock};
use ferrox::{Array, CompiledFn};
use ferrox_nn::Module;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a request asks for.
#[derive(Clone, Debug)]
pub struct Request {
    /// The prompt's tokens.
    pub prompt: Vec<i32>,
    /// The most tokens to generate.
    pub max_tokens: usize,
    /// How to pick tokens.
    pub sampling: Sampling,
    /// Seeds the draws.
    pub seed: u64,
    /// Generation ends when one of these byte strings has been produced
    /// (it is kept in the output).
    pub stop: Vec<Vec<u8>>,
}

/// Why generation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// A stop sequence was produced.
    Stop,
    /// `max_tokens` were produced.
    Length,
    /// The consumer asked to stop (a client went away).
    Cancelled,
}

impl Finish {
    /// OpenAI's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Finish::Stop => "stop",
            Finish::Length => "length",
            Finish::Cancelled => "cancelled",
        }
    }
}

/// The result of [`Generator::generate`].
#[derive(Clone, Debug)]
pub struct Generation {
    /// The generated tokens.
    pub tokens: Vec<i32>,
    /// Why it ended.
    pub finish: Finish,
    /// From the call to the first token.
    pub time_to_first_token: Duration,
    /// The whole call.
    pub elapsed: Duration,
}

/// Serves generation from one model to many threads (see [the module
/// docs](self)).
pub struct Generator {
    model: Arc<Lm>,
    weights: Vec<Array>,
    forward: CompiledFn,
    empty_cache: Vec<Array>,
    traces_by_length: Arc<Mutex<BTreeMap<usize, usize>>>,
}

/// The smallest prompt bucket.
const MIN_BUCKET: usize = 8;

impl Generator {
    /// A generator for `model`.
    pub fn new(model: Lm) -> Result<Generator> {
        let template = model.clone();
        let weights: Vec<Array> = model
            .named_parameters()
            .into_iter()
            .map(|(_, a)| a)
            .collect();
        let n = weights.len();
        let traces_by_length = Arc::new(Mutex::new(BTreeMap::new()));
        let counts = Arc::clone(&traces_by_length);
        // Weights are inputs, not constants: the trace is independent of
        // their values, and the closure runs only while tracing.
        let forward = ferrox::compile(move |xs: &[Array]| {
            let m = template.with_parameter_values(&xs[..n])?;
            let (tokens, pos, last) = (&xs[n], &xs[n + 1], &xs[n + 2]);
            *lock(&counts).entry(tokens.shape()[1]).or_insert(0) += 1;
            let (logits, cache) = m.forward_cached(tokens, pos, last, &xs[n + 3..])?;
            let mut outs = vec![logits];
            outs.extend(cache);
            Ok(outs)
        });
        Ok(Generator {
            empty_cache: model.empty_cache(1)?,
            model: Arc::new(model),
            weights,
            forward,
            traces_by_length,
        })
    }

    /// The model.
    pub fn model(&self) -> &Lm {
        &self.model
    }

    /// The prompt bucket of a prompt of `len` tokens.
    pub fn bucket(&self, len: usize) -> usize {
        len.max(MIN_BUCKET)
            .next_power_of_two()
            .min(self.model.config.context)
    }

    /// Traces made so far, by the number of tokens per call (1 is the
    /// decode step; others are prompt buckets).
    pub fn traces_by_length(&self) -> BTreeMap<usize, usize> {
        lock(&self.traces_by_length).clone()
    }

    /// Checks a request fits the model.
    pub fn check(&self, r: &Request) -> Result<()> {
        let context = self.model.config.context;
        if r.prompt.is_empty() {
            return Err(Error::BadRequest("the prompt is empty".into()));
        }
        if let Some(t) = r
            .prompt
            .iter()
            .find(|&&t| t < 0 || t as usize >= self.model.config.vocab)
        {
            return Err(Error::BadRequest(format!(
                "token {t} is outside the vocabulary of {}",
                self.model.config.vocab
            )));
        }
        if r.max_tokens == 0 {
            return Err(Error::BadRequest("max_tokens must be at least 1".into()));
        }
        if r.prompt.len() + r.max_tokens > context {
            return Err(Error::BadRequest(format!(
                "the prompt ({} tokens) and max_tokens ({}) exceed the context of {context} tokens",
                r.prompt.len(),
                r.max_tokens
            )));
        }
        if !(r.sampling.temperature.is_finite() && r.sampling.temperature >= 0.0) {
            return Err(Error::BadRequest(format!(
                "temperature must be a number >= 0, got {}",
                r.sampling.temperature
            )));
        }
        if !(r.sampling.top_p > 0.0 && r.sampling.top_p <= 1.0) {
            return Err(Error::BadRequest(format!(
                "top_p must be in (0, 1], got {}",
                r.sampling.top_p
            )));
        }
        Ok(())
    }

    /// One call of the shared compiled forward: `tokens` (`[B, T]`, int32)
    /// at positions `pos..pos + T` against `cache` (from
    /// [`Lm::empty_cache`]`(B)` or a previous call). Returns the logits of
    /// position `pos + last` of every row (`B * vocab` values, row-major)
    /// and the new cache. [`Generator::generate`] calls it with `B = 1`.
    ///
    /// ```no_run
    /// # fn main() -> ferrox_cli::Result<()> {
    /// use ferrox::Array;
    /// use ferrox_cli::lm::generate::Generator;
    /// use ferrox_cli::lm::{Lm, LmConfig};
    /// let g = Generator::new(Lm::new(LmConfig::tiny())?)?;
    /// let cache = g.model().empty_cache(2)?;
    /// let prompt = Array::from_slice(&[1i32, 2, 3, 4], &[2, 2])?;
    /// let (logits, _cache) = g.forward_step(prompt, 0, 1, &cache)?;
    /// assert_eq!(logits.len(), 2 * 256);
    /// # Ok(())
    /// # }
    /// ```
    pub fn forward_step(
        &self,
        tokens: Array,
        pos: usize,
        last: usize,
        cache: &[Array],
    ) -> Result<(Vec<f32>, Vec<Array>)> {
        let mut args = self.weights.clone();
        args.extend([
            tokens,
            Array::scalar(pos as i32),
            Array::scalar(last as i32),
        ]);
        args.extend_from_slice(cache);
        let outs = self.forward.call(&args)?;
        // One evaluation for the logits and every cache.
        ferrox::eval(&outs)?;
        let mut outs = outs.into_iter();
        let logits = outs
            .next()
            .ok_or_else(|| Error::Config("the forward returned nothing".into()))?;
        let cache: Vec<Array> = outs.collect();
        Ok((logits.to_vec::<f32>()?, cache))
    }

    /// Generates for `r`, handing each token to `on_token` as it is made;
    /// `on_token` returning `false` cancels.
    pub fn generate(
        &self,
        r: &Request,
        mut on_token: impl FnMut(i32) -> bool,
    ) -> Result<Generation> {
        self.check(r)?;
        let start = Instant::now();
        let len = r.prompt.len();
        let bucket = self.bucket(len);
        let mut padded = r.prompt.clone();
        padded.resize(bucket, 0);
        let tokens = Array::from_slice(&padded, &[1, bucket])?;
        let (mut logits, mut cache) = self.forward_step(tokens, 0, len - 1, &self.empty_cache)?;
        let mut rng = SplitMix::new(r.seed);
        let mut out = Vec::with_capacity(r.max_tokens);
        let mut first = None;
        let finish = loop {
            let t = sample(&logits, r.sampling, &mut rng);
            out.push(t);
            first.get_or_insert_with(|| start.elapsed());
            if !on_token(t) {
                break Finish::Cancelled;
            }
            if ends_with_stop(&out, &r.stop) {
                break Finish::Stop;
            }
            if out.len() == r.max_tokens {
                break Finish::Length;
            }
            let pos = len + out.len() - 1;
            (logits, cache) =
                self.forward_step(Array::from_slice(&[t], &[1, 1])?, pos, 0, &cache)?;
        };
        Ok(Generation {
            tokens: out,
            finish,
            time_to_first_token: first.unwrap_or_default(),
            elapsed: start.elapsed(),
        })
    }
}

fn ends_with_stop(tokens: &[i32], stops: &[Vec<u8>]) -> bool {
    stops.iter().any(|s| {
        !s.is_empty()
            && tokens.len() >= s.len()
            && tokens[tokens.len() - s.len()..]
                .iter()
                .zip(s)
                .all(|(&t, &b)| t == i32::from(b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lm::LmConfig;

    fn request(prompt: &str, seed: u64) -> Request {
        Request {
            prompt: crate::corpus::encode(prompt),
            max_tokens: 12,
            sampling: Sampling {
                temperature: 0.9,
                top_p: 0.95,
            },
            seed,
            stop: vec![],
        }
    }

    #[test]
    fn greedy_generation_matches_the_uncached_model() -> Result<()> {
        ferrox::random::seed(11);
        let model = Lm::new(LmConfig::tiny())?;
        let g = Generator::new(model.clone())?;
        let mut r = request("12+34=", 0);
        r.sampling = Sampling::default();
        let out = g.generate(&r, |_| true)?;
        let mut seq = r.prompt.clone();
        for &t in &out.tokens {
            let logits = model.forward(&Array::from_slice(&seq, &[1, seq.len()])?)?;
            let row = logits.to_vec::<f32>()?;
            let last = &row[(seq.len() - 1) * 256..];
            assert_eq!(t, sample(last, Sampling::default(), &mut SplitMix::new(0)));
            seq.push(t);
        }
        assert_eq!(out.finish, Finish::Length);
        // One trace for the prompt bucket and one for the decode step.
        assert_eq!(g.traces_by_length(), BTreeMap::from([(1, 1), (8, 1)]));
        Ok(())
    }

    #[test]
    fn threads_share_traces_and_seeds_are_reproducible() -> Result<()> {
        ferrox::random::seed(12);
        let g = Arc::new(Generator::new(Lm::new(LmConfig::tiny())?)?);
        let alone = g.generate(&request("7+8=", 3), |_| true)?.tokens;
        let barrier = Arc::new(std::sync::Barrier::new(4));
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let (g, barrier) = (Arc::clone(&g), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    barrier.wait();
                    g.generate(&request("7+8=", if i == 0 { 3 } else { 100 + i }), |_| true)
                        .map(|o| o.tokens)
                })
            })
            .collect();
        let outs: Vec<Vec<i32>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| Error::Config("a thread panicked".into()))?
            })
            .collect::<Result<_>>()?;
        assert_eq!(outs[0], alone);
        assert_eq!(g.traces_by_length(), BTreeMap::from([(1, 1), (8, 1)]));
        Ok(())
    }

    #[test]
    fn stop_sequences_cancellation_and_bad_requests() -> Result<()> {
        let g = Generator::new(Lm::new(LmConfig::tiny())?)?;
        let mut seen = 0;
        let out = g.generate(&request("1+1=", 0), |_| {
            seen += 1;
            seen < 3
        })?;
        assert_eq!((out.finish, out.tokens.len()), (Finish::Cancelled, 3));
        let first = g.generate(&request("1+1=", 0), |_| true)?.tokens[0];
        let mut r = request("1+1=", 0);
        r.stop = vec![vec![first as u8]];
        assert_eq!(g.generate(&r, |_| true)?.finish, Finish::Stop);
        let mut long = request("1+1=", 0);
        long.max_tokens = 1_000_000;
        assert!(
            g.generate(&long, |_| true)
                .unwrap_err()
                .to_string()
                .contains("context")
        );
        assert!(g.generate(&request("", 0), |_| true).is_err());
        let mut hot = request("1", 0);
        hot.sampling.temperature = f32::NAN;
        assert!(g.generate(&hot, |_| true).is_err());
        Ok(())
    }
}
