//! `ferrox demo`: train the language model on the built-in arithmetic
//! corpus, checkpoint and reload it, check what it learned on held-out
//! problems, then serve it in-process and measure 1 and 8 concurrent
//! clients. Every step checks its own result; a failed check is an error.

use crate::client::{Client, Streamed};
use crate::corpus::{self, Corpus, Problem};
use crate::error::{Error, Result};
use crate::lm::generate::{Generator, Request};
use crate::lm::sample::Sampling;
use crate::lm::train::{self, StepInfo, TrainConfig, TrainReport};
use crate::lm::{Lm, LmConfig, checkpoint};
use crate::server::{App, Server};
use ferrox::Array;
use ferrox_nn::Module;
use serde_json::json;
use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// The demo's settings.
#[derive(Clone, Debug)]
pub struct DemoOptions {
    /// The model.
    pub model: LmConfig,
    /// Training.
    pub train: TrainConfig,
    /// Train on this UTF-8 file instead of the arithmetic corpus.
    pub data: Option<PathBuf>,
    /// Where the checkpoint, the loss curve and the summary go.
    pub out: PathBuf,
    /// Held-out problems to check.
    pub eval_problems: usize,
    /// Concurrent clients of the second load phase.
    pub clients: usize,
    /// Streamed requests per client in each phase.
    pub requests_per_client: usize,
    /// Tokens per load request.
    pub max_tokens: usize,
    /// Show a progress bar.
    pub progress: bool,
}

impl DemoOptions {
    /// The full demo (a few minutes on 2 cores in a release build).
    pub fn full(out: PathBuf) -> DemoOptions {
        DemoOptions {
            model: LmConfig::demo(),
            train: TrainConfig::default(),
            data: None,
            out,
            eval_problems: 100,
            clients: 8,
            requests_per_client: 2,
            max_tokens: 48,
            progress: true,
        }
    }

    /// A shortened demo for tests: a tiny model, a few steps.
    pub fn quick(out: PathBuf) -> DemoOptions {
        DemoOptions {
            model: LmConfig::tiny(),
            train: TrainConfig {
                steps: 6,
                batch: 4,
                seq: 48,
                warmup: 2,
                ..TrainConfig::default()
            },
            eval_problems: 4,
            clients: 8,
            requests_per_client: 1,
            max_tokens: 6,
            progress: false,
            ..DemoOptions::full(out)
        }
    }
}

/// One load phase's measurements.
#[derive(Clone, Debug)]
pub struct LoadReport {
    /// Concurrent clients.
    pub clients: usize,
    /// Generated tokens in all.
    pub tokens: usize,
    /// Wall time of the phase.
    pub elapsed: Duration,
    /// Mean time to first token.
    pub time_to_first_token: Duration,
    /// Every request's text, by (client, request).
    pub texts: Vec<String>,
}

impl LoadReport {
    /// Generated tokens per second over the phase.
    pub fn tokens_per_s(&self) -> f64 {
        self.tokens as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// What the demo measured.
#[derive(Clone, Debug)]
pub struct DemoReport {
    /// Parameters of the model.
    pub parameters: usize,
    /// Training.
    pub train: TrainReport,
    /// Held-out problems answered exactly, of how many.
    pub exact: (usize, usize),
    /// The load phases (1 client, then `clients`).
    pub load: Vec<LoadReport>,
    /// Forward traces by tokens per call after the load.
    pub forward_traces: std::collections::BTreeMap<usize, usize>,
    /// Peak array memory (bytes).
    pub peak_array_memory: usize,
    /// Peak resident memory of the process (bytes; 0 if unknown).
    pub peak_resident: usize,
}

fn check(ok: bool, what: impl Into<String>) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::Config(format!("demo check failed: {}", what.into())))
    }
}

fn progress_bar(o: &DemoOptions) -> indicatif::ProgressBar {
    // One bar for a data-parallel job: process 0's.
    if !o.progress || !is_rank_zero() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(o.train.steps);
    let style = indicatif::ProgressStyle::with_template(
        "{spinner} train [{bar:30}] {pos}/{len} {msg} ETA {eta}",
    )
    .map(|s| s.progress_chars("=> "));
    if let Ok(style) = style {
        bar.set_style(style);
    }
    bar
}

/// Trains the model of `o` and writes the loss curve; returns the model
/// and the report.
pub fn train_model(o: &DemoOptions) -> Result<(Lm, train::TrainReport)> {
    std::fs::create_dir_all(&o.out)
        .map_err(|e| Error::io(format!("creating {}", o.out.display()), e))?;
    let window = o.train.seq + 1;
    let corpus = match &o.data {
        Some(path) => Corpus::from_file(path, window)?,
        None => Corpus::new(
            &corpus::arithmetic(
                o.train.seed,
                4_000_000.min(o.train.steps as usize * o.train.batch * window * 2 + 100_000),
            ),
            window,
        )?,
    };
    ferrox::random::seed(o.train.seed);
    let mut model = Lm::new(o.model.clone())?;
    let mut opt = train::optimizer(&o.train)?;
    let bar = progress_bar(o);
    let report = train::train(&mut model, &mut opt, &corpus, &o.train, |s: StepInfo| {
        bar.set_position(s.step);
        bar.set_message(format!(
            "loss {:.3}, {:.0} tokens/s",
            s.loss, s.tokens_per_s
        ));
    })?;
    bar.finish_and_clear();
    if !is_rank_zero() {
        // One checkpoint (and loss curve) per job: process 0 writes them.
        return Ok((model, report));
    }
    crate::plot::write_csv(&o.out.join("loss.csv"), &report.losses)?;
    crate::plot::write_png(
        &o.out.join("loss.png"),
        &report.losses,
        &format!("ferrox demo: {} parameters", model.num_parameters()),
    )?;
    let ckpt = o.out.join("model.safetensors");
    checkpoint::save(&ckpt, &model, Some(&opt), o.train.steps)?;
    Ok((model, report))
}

/// True for process 0 of a data-parallel job (and for a process alone).
pub fn is_rank_zero() -> bool {
    ferrox::distributed::init(false, "any").map_or(true, |g| g.rank() == 0)
}

/// Answers held-out problems greedily from two threads sharing `g`.
pub fn exact_answers(g: &Generator, problems: &[Problem]) -> Result<usize> {
    let answer = |p: &Problem| -> Result<bool> {
        let r = Request {
            prompt: corpus::encode(&p.prompt()),
            max_tokens: 6,
            sampling: Sampling::default(),
            seed: 0,
            stop: vec![b"\n".to_vec()],
        };
        let out = g.generate(&r, |_| true)?;
        Ok(corpus::decode(&out.tokens).trim_end() == p.answer())
    };
    let half = problems.len().div_ceil(2);
    std::thread::scope(|s| {
        let parts: Vec<_> = problems
            .chunks(half.max(1))
            .map(|chunk| s.spawn(move || chunk.iter().map(answer).collect::<Result<Vec<bool>>>()))
            .collect();
        let mut n = 0;
        for p in parts {
            let part = p
                .join()
                .map_err(|_| Error::Config("an evaluation thread panicked".into()))??;
            n += part.into_iter().filter(|&ok| ok).count();
        }
        Ok(n)
    })
}

/// The streamed completion the load phases send: a held-out prompt,
/// sampled with its own seed.
fn load_body(problems: &[Problem], i: usize, max_tokens: usize) -> serde_json::Value {
    let p = problems[i % problems.len()];
    json!({
        "prompt": p.prompt(),
        "max_tokens": max_tokens,
        "temperature": 0.8,
        "top_p": 0.95,
        "seed": i,
    })
}

/// `clients` barrier-started clients, each sending `per_client` streamed
/// completions one after another.
pub fn run_load(
    client: &Client,
    clients: usize,
    per_client: usize,
    problems: &[Problem],
    max_tokens: usize,
) -> Result<LoadReport> {
    let barrier = Arc::new(Barrier::new(clients + 1));
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let (client, barrier) = (client.clone(), Arc::clone(&barrier));
            let bodies: Vec<_> = (0..per_client)
                .map(|r| load_body(problems, c * per_client + r, max_tokens))
                .collect();
            std::thread::spawn(move || -> Result<Vec<Streamed>> {
                barrier.wait();
                bodies
                    .iter()
                    .map(|b| client.stream("/v1/completions", b, |_| true))
                    .collect()
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    let mut streams = Vec::new();
    for h in handles {
        streams.extend(
            h.join()
                .map_err(|_| Error::Config("a client thread panicked".into()))??,
        );
    }
    let elapsed = start.elapsed();
    for s in &streams {
        check(s.done, "a stream ended without [DONE]")?;
    }
    let ttft = streams
        .iter()
        .map(|s| s.time_to_first_token)
        .sum::<Duration>()
        / streams.len().max(1) as u32;
    Ok(LoadReport {
        clients,
        tokens: streams.iter().map(|s| s.completion_tokens).sum(),
        elapsed,
        time_to_first_token: ttft,
        texts: streams.into_iter().map(|s| s.text).collect(),
    })
}

/// The peak resident set of this process (`VmHWM`), where Linux tells.
pub fn peak_resident_bytes() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<usize>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

/// Runs the whole demo (see [the module docs](self)).
pub fn run(o: &DemoOptions) -> Result<DemoReport> {
    let (model, train) = train_model(o)?;
    check(
        train.traces == 1,
        format!("the training step traced {} times", train.traces),
    )?;
    let (first, last) = (train.losses[0].1, train.final_loss(10));
    check(
        last < first,
        format!("the loss went from {first} to {last}"),
    )?;

    // The checkpoint gives the same logits.
    let ckpt = checkpoint::load(&o.out.join("model.safetensors"))?;
    let probe = Array::from_slice(&corpus::encode("417+86=503\n12+3"), &[1, 15])?;
    check(
        model.forward(&probe)?.to_vec::<f32>()? == ckpt.model.forward(&probe)?.to_vec::<f32>()?,
        "the reloaded checkpoint gives different logits",
    )?;
    check(ckpt.step == o.train.steps, "the checkpoint's step")?;

    let generator = Arc::new(Generator::new(ckpt.model)?);
    let problems = corpus::held_out_problems(o.train.seed, o.eval_problems.max(1));
    let exact = exact_answers(&generator, &problems)?;

    let app = Arc::new(App::new(
        Some(Arc::clone(&generator)),
        "ferrox-demo",
        None,
        64,
    ));
    let server = Server::start(
        app,
        "127.0.0.1:0"
            .parse()
            .map_err(|_| Error::Config("address".into()))?,
    )?;
    let client = Client::new(server.addr(), Duration::from_secs(600));
    let health = client.get("/health")?;
    check(
        health.status == 200,
        format!("/health answered {}", health.status),
    )?;
    let n = o.clients * o.requests_per_client;
    let solo = run_load(&client, 1, n, &problems, o.max_tokens)?;
    let crowd = run_load(
        &client,
        o.clients,
        o.requests_per_client,
        &problems,
        o.max_tokens,
    )?;
    server.stop();
    // Request i has the same prompt and seed in both phases.
    check(
        solo.texts == crowd.texts,
        "requests gave different text beside other clients than alone",
    )?;
    Ok(DemoReport {
        parameters: model.num_parameters(),
        train,
        exact: (exact, problems.len()),
        load: vec![solo, crowd],
        forward_traces: generator.traces_by_length(),
        peak_array_memory: ferrox::get_peak_memory(),
        peak_resident: peak_resident_bytes(),
    })
}

impl DemoReport {
    /// The summary table (Markdown).
    pub fn table(&self) -> String {
        let mib = |b: usize| b as f64 / (1024.0 * 1024.0);
        let mut rows = vec![
            (
                "parameters".to_string(),
                format!("{:.2} M", self.parameters as f64 / 1e6),
            ),
            (
                "training tokens/s".into(),
                format!("{:.0}", self.train.tokens_per_s),
            ),
            (
                "training steps (traces)".into(),
                format!("{} ({})", self.train.losses.len(), self.train.traces),
            ),
            (
                "first step (trace + compile)".into(),
                format!("{:.2} s", self.train.first_step.as_secs_f64()),
            ),
            (
                "final loss (last 10 steps)".into(),
                format!("{:.3}", self.train.final_loss(10)),
            ),
            (
                "held-out problems answered exactly".into(),
                format!("{} of {}", self.exact.0, self.exact.1),
            ),
        ];
        let one = self.load.first().map_or(0.0, LoadReport::tokens_per_s);
        for l in &self.load {
            let ratio = if l.clients > 1 && one > 0.0 {
                format!(" ({:.2}x one client)", l.tokens_per_s() / one)
            } else {
                String::new()
            };
            rows.push((
                format!("generation tokens/s, {} client(s)", l.clients),
                format!("{:.0}{ratio}", l.tokens_per_s()),
            ));
            rows.push((
                format!("time to first token, {} client(s)", l.clients),
                format!("{:.1} ms", l.time_to_first_token.as_secs_f64() * 1e3),
            ));
        }
        let traces: Vec<String> = self
            .forward_traces
            .iter()
            .map(|(t, n)| format!("{t} tokens: {n}"))
            .collect();
        rows.push((
            "forward traces by tokens per call".into(),
            traces.join(", "),
        ));
        rows.push((
            "peak array memory".into(),
            format!("{:.1} MiB", mib(self.peak_array_memory)),
        ));
        rows.push((
            "peak resident memory".into(),
            format!("{:.1} MiB", mib(self.peak_resident)),
        ));
        let mut out = String::from("| measure | value |\n|---|---|\n");
        for (k, v) in rows {
            out.push_str(&format!("| {k} | {v} |\n"));
        }
        out
    }
}
