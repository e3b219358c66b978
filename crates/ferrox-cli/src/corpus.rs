//! Training text: the built-in arithmetic corpus (generated, so the demo
//! needs no data files and can check what the model learned) or any UTF-8
//! file, as bytes (the tokenizer is the identity on bytes).
//!
//! One problem in ten is held out, chosen by a hash of `(a, b)` (the first
//! output of [`SplitMix`] seeded with `a * 1000 + b`, modulo 10, is 0): the
//! training stream never contains them, so answering them is
//! generalisation, not recall. A hash rather than a digit rule, so no digit
//! pattern is missing from training.

use crate::error::{Error, Result};
pub use crate::rng::SplitMix;
use ferrox::Array;

/// One addition problem `a+b=` with its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Problem {
    /// First operand.
    pub a: u32,
    /// Second operand.
    pub b: u32,
}

impl Problem {
    /// Whether the problem is held out of training.
    pub fn held_out(self) -> bool {
        SplitMix::new(u64::from(self.a) * 1000 + u64::from(self.b)).next_u64() % 10 == 0
    }
    /// The prompt, `"a+b="`.
    pub fn prompt(self) -> String {
        format!("{}+{}=", self.a, self.b)
    }
    /// The answer, `"a+b"` as digits.
    pub fn answer(self) -> String {
        (self.a + self.b).to_string()
    }
}

/// Operands are below this (two-digit sums: learnable in the demo's few
/// minutes of training).
pub const OPERAND_LIMIT: u32 = 100;

/// The arithmetic corpus: a stream of training problems (`41+86=127\n`),
/// never a held-out one.
///
/// ```
/// let text = ferrox_cli::corpus::arithmetic(7, 200); // "41+86=127\n..."
/// let line = text.lines().next().unwrap();
/// let (sum, answer) = line.split_once('=').unwrap();
/// let (a, b) = sum.split_once('+').unwrap();
/// assert_eq!(a.parse::<u32>().unwrap() + b.parse::<u32>().unwrap(), answer.parse::<u32>().unwrap());
/// ```
pub fn arithmetic(seed: u64, min_bytes: usize) -> String {
    let mut rng = SplitMix::new(seed);
    let mut text = String::with_capacity(min_bytes + 16);
    while text.len() < min_bytes {
        let p = random_problem(&mut rng);
        if !p.held_out() {
            text.push_str(&p.prompt());
            text.push_str(&p.answer());
            text.push('\n');
        }
    }
    text
}

fn random_problem(rng: &mut SplitMix) -> Problem {
    let limit = u64::from(OPERAND_LIMIT);
    Problem {
        a: rng.below(limit) as u32,
        b: rng.below(limit) as u32,
    }
}

/// `n` distinct held-out problems, in a fixed order for `seed`.
pub fn held_out_problems(seed: u64, n: usize) -> Vec<Problem> {
    let mut rng = SplitMix::new(seed ^ 0x5EED);
    let mut out: Vec<Problem> = Vec::with_capacity(n);
    // About a tenth of the OPERAND_LIMIT^2 problems are held out; ask for
    // at most half of them so the loop ends quickly.
    let limit = (OPERAND_LIMIT as usize).pow(2) / 20;
    while out.len() < n.min(limit) {
        let p = random_problem(&mut rng);
        if p.held_out() && !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// Training text as bytes, with the offsets of its line starts (windows
/// begin there, so a model sees whole problems).
#[derive(Clone, Debug)]
pub struct Corpus {
    bytes: Vec<u8>,
    starts: Vec<usize>,
}

impl Corpus {
    /// A corpus of `text`, for windows of `window` bytes.
    pub fn new(text: &str, window: usize) -> Result<Corpus> {
        let bytes = text.as_bytes().to_vec();
        if bytes.len() <= window {
            return Err(Error::Config(format!(
                "the training text has {} bytes; it needs more than the window of {window}",
                bytes.len()
            )));
        }
        let mut starts = vec![0];
        starts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|&(i, &b)| b == b'\n' && i + 1 + window <= bytes.len())
                .map(|(i, _)| i + 1),
        );
        Ok(Corpus { bytes, starts })
    }

    /// Reads a UTF-8 file as a corpus.
    pub fn from_file(path: &std::path::Path, window: usize) -> Result<Corpus> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading training text {}", path.display()), e))?;
        Corpus::new(&text, window)
    }

    /// A batch of `batch` windows of `seq + 1` bytes from random line
    /// starts: the inputs (`[batch, seq]`, int32) and the targets (the same
    /// windows shifted by one).
    pub fn batch(&self, rng: &mut SplitMix, batch: usize, seq: usize) -> Result<(Array, Array)> {
        let mut inputs = Vec::with_capacity(batch * seq);
        let mut targets = Vec::with_capacity(batch * seq);
        for _ in 0..batch {
            let mut s = self.starts[rng.below(self.starts.len() as u64) as usize];
            if s + seq + 1 > self.bytes.len() {
                s = 0;
            }
            let w = &self.bytes[s..s + seq + 1];
            inputs.extend(w[..seq].iter().map(|&b| i32::from(b)));
            targets.extend(w[1..].iter().map(|&b| i32::from(b)));
        }
        Ok((
            Array::from_slice(&inputs, &[batch, seq])?,
            Array::from_slice(&targets, &[batch, seq])?,
        ))
    }
}

/// Bytes to token ids.
pub fn encode(text: &str) -> Vec<i32> {
    text.bytes().map(i32::from).collect()
}

/// Token ids to text (ids outside a byte and invalid UTF-8 are replaced).
pub fn decode(tokens: &[i32]) -> String {
    let bytes: Vec<u8> = tokens.iter().map(|&t| t.clamp(0, 255) as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_never_holds_a_held_out_problem() {
        let text = arithmetic(1, 20_000);
        for line in text.lines() {
            let (sum, _) = line.split_once('=').expect("a line has '='");
            let (a, b) = sum.split_once('+').expect("a line has '+'");
            let p = Problem {
                a: a.parse().expect("a number"),
                b: b.parse().expect("a number"),
            };
            assert!(!p.held_out(), "{line}");
        }
        assert!(held_out_problems(1, 50).iter().all(|p| p.held_out()));
    }

    #[test]
    fn batches_are_shifted_windows_from_line_starts() -> Result<()> {
        let c = Corpus::new(&arithmetic(2, 5_000), 33)?;
        let (x, y) = c.batch(&mut SplitMix::new(0), 4, 32)?;
        let (x, y) = (x.to_vec::<i32>()?, y.to_vec::<i32>()?);
        for r in 0..4 {
            assert_eq!(&x[r * 32 + 1..(r + 1) * 32], &y[r * 32..(r + 1) * 32 - 1]);
            assert!((i32::from(b'0')..=i32::from(b'9')).contains(&x[r * 32]));
        }
        assert!(Corpus::new("short", 33).is_err());
        Ok(())
    }

    #[test]
    fn bytes_round_trip() {
        assert_eq!(decode(&encode("12+3=15\né")), "12+3=15\né");
    }
}
