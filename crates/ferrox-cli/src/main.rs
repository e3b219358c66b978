//! The `ferrox` command line: `demo`, `train`, `generate`, `serve`.
//!
//! Exit codes: 0 success, 1 an error (the message says what), 2 a usage
//! error (from the argument parser).

use clap::{Args, Parser, Subcommand};
use ferrox_cli::demo::{self, DemoOptions};
use ferrox_cli::error::{Error, Result};
use ferrox_cli::lm::generate::{Generator, Request};
use ferrox_cli::lm::sample::Sampling;
use ferrox_cli::lm::train::TrainConfig;
use ferrox_cli::lm::{LmConfig, checkpoint};
use ferrox_cli::server::{App, Embedder, Server};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Parser)]
#[command(
    name = "ferrox",
    version,
    about = "Train a small language model, generate from it and serve it"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train on the built-in arithmetic corpus, checkpoint, evaluate, then
    /// serve in-process to 1 and 8 concurrent clients and print a summary.
    Demo {
        #[command(flatten)]
        train: TrainArgs,
        /// A tiny model and a few steps (what CI runs).
        #[arg(long)]
        quick: bool,
        /// Where the checkpoint, loss curve and summary go.
        #[arg(long, default_value = "ferrox-demo")]
        out: PathBuf,
    },
    /// Train the model and write a checkpoint.
    Train {
        #[command(flatten)]
        train: TrainArgs,
        /// Where the checkpoint, loss curve and summary go.
        #[arg(long, default_value = "ferrox-train")]
        out: PathBuf,
        /// Write {"tokens_per_s", "final_loss", ...} to this file.
        #[arg(long)]
        summary_json: Option<PathBuf>,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Generate text from a checkpoint.
    Generate {
        /// The checkpoint.
        #[arg(long)]
        model: PathBuf,
        /// The prompt.
        #[arg(long)]
        prompt: String,
        /// The most tokens to generate.
        #[arg(long, default_value_t = 32)]
        max_tokens: usize,
        /// 0 is greedy.
        #[arg(long, default_value_t = 0.0)]
        temperature: f32,
        /// Nucleus mass.
        #[arg(long, default_value_t = 1.0)]
        top_p: f32,
        /// Seeds the draws.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Generate this many times (the first traces) and print timing
        /// statistics of the last run as JSON on stderr.
        #[arg(long, default_value_t = 1)]
        repeat: usize,
    },
    /// Serve a checkpoint and/or a sentence encoder over HTTP.
    Serve {
        /// A language-model checkpoint.
        #[arg(long)]
        model: Option<PathBuf>,
        /// A sentence-encoder directory (model.safetensors + tokenizer.json).
        #[arg(long)]
        embeddings: Option<PathBuf>,
        /// The address to listen on.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// The port (0 picks a free one).
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// Generations running at once (others wait).
        #[arg(long, default_value_t = 64)]
        max_concurrent: usize,
    },
}

#[derive(Args, Clone)]
struct TrainArgs {
    /// Optimizer steps.
    #[arg(long)]
    steps: Option<u64>,
    /// Sequences per step.
    #[arg(long)]
    batch: Option<usize>,
    /// Tokens per sequence.
    #[arg(long)]
    seq: Option<usize>,
    /// Peak learning rate.
    #[arg(long)]
    lr: Option<f64>,
    /// Seeds the model, the corpus and the batches.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Train on this UTF-8 text instead of the arithmetic corpus.
    #[arg(long)]
    data: Option<PathBuf>,
    /// A tiny model (2 layers, 32 wide) instead of the demo's, for tests.
    #[arg(long)]
    tiny: bool,
}

impl TrainArgs {
    fn apply(&self, mut t: TrainConfig) -> TrainConfig {
        t.steps = self.steps.unwrap_or(t.steps);
        t.batch = self.batch.unwrap_or(t.batch);
        t.seq = self.seq.unwrap_or(t.seq);
        t.lr = self.lr.unwrap_or(t.lr);
        t.warmup = t.warmup.min(t.steps / 4).max(1);
        t.seed = self.seed;
        t
    }
    fn options(&self, quick: bool, out: PathBuf) -> DemoOptions {
        let base = if quick {
            DemoOptions::quick(out)
        } else {
            DemoOptions::full(out)
        };
        DemoOptions {
            model: if self.tiny {
                LmConfig::tiny()
            } else {
                base.model.clone()
            },
            train: self.apply(base.train.clone()),
            data: self.data.clone(),
            ..base
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Demo { train, quick, out } => {
            let o = DemoOptions {
                progress: true,
                ..train.options(quick, out)
            };
            eprintln!(
                "ferrox demo: training a {}-layer, {}-wide byte-level transformer for {} steps ({} x {} tokens per step)",
                o.model.layers, o.model.dims, o.train.steps, o.train.batch, o.train.seq
            );
            let report = demo::run(&o)?;
            let table = report.table();
            println!("{table}");
            let summary = o.out.join("summary.md");
            std::fs::write(&summary, &table)
                .map_err(|e| Error::io(format!("writing {}", summary.display()), e))?;
            eprintln!(
                "wrote {}/model.safetensors, loss.png, loss.csv and summary.md",
                o.out.display()
            );
            Ok(())
        }
        Command::Train {
            train,
            out,
            summary_json,
            quiet,
        } => {
            let o = DemoOptions {
                progress: !quiet,
                ..train.options(false, out)
            };
            let (_, report) = demo::train_model(&o)?;
            let summary = serde_json::json!({
                "tokens_per_s": report.tokens_per_s,
                "final_loss": report.final_loss(10),
                "steps": report.losses.len(),
                "batch": o.train.batch,
                "seq": o.train.seq,
                "first_step_s": report.first_step.as_secs_f64(),
                "traces": report.traces,
            });
            if !demo::is_rank_zero() {
                return Ok(());
            }
            if let Some(path) = summary_json {
                std::fs::write(&path, summary.to_string())
                    .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
            }
            println!("{summary}");
            Ok(())
        }
        Command::Generate {
            model,
            prompt,
            max_tokens,
            temperature,
            top_p,
            seed,
            repeat,
        } => {
            let ckpt = checkpoint::load(&model)?;
            let g = Generator::new(ckpt.model)?;
            let r = Request {
                prompt: ferrox_cli::corpus::encode(&prompt),
                max_tokens,
                sampling: Sampling { temperature, top_p },
                seed,
                stop: vec![],
            };
            for _ in 1..repeat {
                g.generate(&r, |_| true)?;
            }
            let mut text = ferrox_cli::server::utf8::Utf8Stream::default();
            let mut stdout = std::io::stdout();
            print!("{prompt}");
            let out = g.generate(&r, |t| {
                let piece = text.push(t.clamp(0, 255) as u8);
                write!(stdout, "{piece}").is_ok() && stdout.flush().is_ok()
            })?;
            println!("{}", text.finish());
            if repeat > 1 {
                let decode = out
                    .elapsed
                    .saturating_sub(out.time_to_first_token)
                    .as_secs_f64();
                let stats = serde_json::json!({
                    "tokens": out.tokens.len(),
                    "time_to_first_token_ms": out.time_to_first_token.as_secs_f64() * 1e3,
                    "decode_tokens_per_s": out.tokens.len().saturating_sub(1) as f64 / decode.max(1e-9),
                    "traces": g.traces_by_length().values().sum::<usize>(),
                });
                eprintln!("{stats}");
            }
            Ok(())
        }
        Command::Serve {
            model,
            embeddings,
            host,
            port,
            max_concurrent,
        } => {
            if model.is_none() && embeddings.is_none() {
                return Err(Error::Config(
                    "serve needs --model CKPT, --embeddings DIR or both".into(),
                ));
            }
            let generator = match &model {
                Some(p) => Some(Arc::new(Generator::new(checkpoint::load(p)?.model)?)),
                None => None,
            };
            let embedder: Option<Arc<dyn Embedder>> = match &embeddings {
                Some(dir) => {
                    return Err(Error::Config(format!(
                        "--embeddings {}: not built yet",
                        dir.display()
                    )));
                }
                None => None,
            };
            let name = model.as_ref().and_then(|p| p.file_stem()).map_or_else(
                || "ferrox-lm".to_string(),
                |s| s.to_string_lossy().into_owned(),
            );
            let addr = format!("{host}:{port}")
                .parse()
                .map_err(|e| Error::Config(format!("--host {host} --port {port}: {e}")))?;
            let server = Server::start(
                Arc::new(App::new(generator, name, embedder, max_concurrent)),
                addr,
            )?;
            eprintln!("ferrox serving on http://{} (Ctrl-C stops)", server.addr());
            server.wait_for_ctrl_c()
        }
    }
}

fn main() {
    if let Err(e) = run(Cli::parse()) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
