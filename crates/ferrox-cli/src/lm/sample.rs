//! Choosing the next token from logits: greedy at temperature 0, else a
//! draw from the tempered softmax restricted to the top-p nucleus. Runs on
//! the host: the vocabulary is small and the draw must be reproducible
//! from the request's seed alone.

use crate::rng::SplitMix;

/// How to sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    /// 0 picks the most likely token; higher flattens the distribution.
    pub temperature: f32,
    /// Keep the smallest set of most likely tokens whose probability
    /// reaches `top_p` (1 keeps all).
    pub top_p: f32,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            temperature: 0.0,
            top_p: 1.0,
        }
    }
}

/// The token chosen from `logits` (one row) by `s`, drawing from `rng`.
///
/// ```
/// use ferrox_cli::{lm::sample::{Sampling, sample}, rng::SplitMix};
/// let logits = [0.0f32, 3.0, 1.0];
/// assert_eq!(sample(&logits, Sampling::default(), &mut SplitMix::new(0)), 1);
/// // top_p keeping only the best token is greedy too.
/// let s = Sampling { temperature: 1.0, top_p: 0.01 };
/// assert_eq!(sample(&logits, s, &mut SplitMix::new(9)), 1);
/// ```
pub fn sample(logits: &[f32], s: Sampling, rng: &mut SplitMix) -> i32 {
    let argmax = || {
        logits
            .iter()
            .enumerate()
            .fold((0, f32::NEG_INFINITY), |best, (i, &l)| {
                if l > best.1 { (i, l) } else { best }
            })
            .0 as i32
    };
    if s.temperature <= 0.0 || logits.is_empty() {
        return argmax();
    }
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut probs: Vec<(usize, f64)> = logits
        .iter()
        .enumerate()
        .map(|(i, &l)| (i, f64::from((l - max) / s.temperature).exp()))
        .collect();
    let total: f64 = probs.iter().map(|p| p.1).sum();
    if !total.is_finite() || total <= 0.0 {
        return argmax();
    }
    probs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let keep_mass = f64::from(s.top_p.clamp(0.0, 1.0)) * total;
    let mut kept = 0.0;
    let mut n = 0;
    for p in &probs {
        kept += p.1;
        n += 1;
        if kept >= keep_mass {
            break;
        }
    }
    let mut u = rng.unit() * kept;
    for p in &probs[..n] {
        if u < p.1 {
            return p.0 as i32;
        }
        u -= p.1;
    }
    probs[n - 1].0 as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_follow_the_tempered_distribution() {
        let logits = [0.0f32, (3.0f32).ln()]; // p = 1/4, 3/4
        let s = Sampling {
            temperature: 1.0,
            top_p: 1.0,
        };
        let mut rng = SplitMix::new(1);
        let ones = (0..4000)
            .filter(|_| sample(&logits, s, &mut rng) == 1)
            .count();
        assert!((2800..3200).contains(&ones), "{ones}");
    }

    #[test]
    fn the_same_seed_gives_the_same_tokens() {
        let logits: Vec<f32> = (0..50).map(|i| (i % 7) as f32 * 0.3).collect();
        let s = Sampling {
            temperature: 0.8,
            top_p: 0.9,
        };
        let draw = |seed| {
            let mut rng = SplitMix::new(seed);
            (0..20)
                .map(|_| sample(&logits, s, &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(4), draw(4));
        assert_ne!(draw(4), draw(5));
    }
}
