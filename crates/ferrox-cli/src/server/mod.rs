//! The HTTP server: OpenAI-compatible routes over a shared [`Generator`]
//! and an optional sentence encoder, on axum and tokio.
//!
//! | route | what |
//! |---|---|
//! | `GET /health` | `{"status": "ok"}` |
//! | `GET /v1/models` | the served models |
//! | `POST /v1/completions` | text completion, whole or streamed (`"stream": true`) |
//! | `POST /v1/chat/completions` | chat completion, whole or streamed |
//! | `POST /v1/embeddings` | sentence embeddings (with an encoder) |
//!
//! There is no lock around the model: every request runs on its own
//! blocking thread through the one compiled forward, with its own cache.
//! A semaphore bounds how many generate at once (others wait their turn).
//! Bad requests are answered 4xx with a JSON message; the server goes on.

mod completions;
mod embeddings;
pub mod error;
pub mod openai;
pub mod utf8;

pub use embeddings::Embedder;

use crate::error::{Error, Result};
use crate::lm::generate::Generator;
use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::routing::{get, post};
use error::ApiError;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the routes share.
pub struct App {
    /// The language model, if one is served.
    pub generator: Option<Arc<Generator>>,
    /// Its name in `/v1/models` and responses.
    pub model_id: String,
    /// The sentence encoder, if one is served.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Bounds the generations running at once.
    pub slots: Arc<tokio::sync::Semaphore>,
    ids: AtomicU64,
}

impl App {
    /// Shared state for a server with at most `max_concurrent`
    /// generations at once.
    pub fn new(
        generator: Option<Arc<Generator>>,
        model_id: impl Into<String>,
        embedder: Option<Arc<dyn Embedder>>,
        max_concurrent: usize,
    ) -> App {
        App {
            generator,
            model_id: model_id.into(),
            embedder,
            slots: Arc::new(tokio::sync::Semaphore::new(max_concurrent.max(1))),
            ids: AtomicU64::new(0),
        }
    }

    fn next_id(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.ids.fetch_add(1, Ordering::Relaxed))
    }

    /// A request naming a model must name `served`.
    fn check_model(&self, asked: Option<&str>, served: &str) -> Result<(), ApiError> {
        match asked {
            Some(m) if m != served => Err(ApiError::not_found(format!(
                "model {m:?} is not served here (this server has {served:?})"
            ))),
            _ => Ok(()),
        }
    }
}

fn unix_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn models(State(app): State<Arc<App>>) -> Json<Value> {
    let mut data = Vec::new();
    if app.generator.is_some() {
        data.push(
            json!({"id": app.model_id, "object": "model", "created": 0, "owned_by": "ferrox"}),
        );
    }
    if let Some(e) = &app.embedder {
        data.push(json!({"id": e.name(), "object": "model", "created": 0, "owned_by": "ferrox"}));
    }
    Json(json!({"object": "list", "data": data}))
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("no route {}", uri.path()))
}

/// The routes over `app`.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/v1/models", get(models))
        .route("/v1/completions", post(completions::completions))
        .route("/v1/chat/completions", post(completions::chat_completions))
        .route("/v1/embeddings", post(embeddings::embeddings))
        .fallback(not_found)
        .with_state(app)
}

/// A server running on its own tokio runtime (its own threads), for the
/// demo, tests and `ferrox serve`.
pub struct Server {
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` (port 0 picks a free port) and starts serving `app`.
    pub fn start(app: Arc<App>, addr: SocketAddr) -> Result<Server> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ferrox-http")
            .enable_all()
            .build()
            .map_err(|e| Error::io("starting the server runtime", e))?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(addr))
            .map_err(|e| Error::io(format!("binding {addr}"), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("reading the bound address", e))?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("ferrox-server".into())
            .spawn(move || {
                let serve = axum::serve(listener, router(app)).with_graceful_shutdown(async {
                    let _ = rx.await;
                });
                if let Err(e) = runtime.block_on(async move { serve.await }) {
                    eprintln!("ferrox server: {e}");
                }
                // Streams still generating finish on their own; do not wait.
                runtime.shutdown_background();
            })
            .map_err(|e| Error::io("starting the server thread", e))?;
        Ok(Server {
            addr,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, lets open responses finish and waits for the
    /// server thread.
    pub fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Serves until the process is interrupted (Ctrl-C).
    pub fn wait_for_ctrl_c(self) -> Result<()> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::io("waiting for Ctrl-C", e))?;
        rt.block_on(tokio::signal::ctrl_c())
            .map_err(|e| Error::io("waiting for Ctrl-C", e))?;
        self.stop();
        Ok(())
    }
}

impl Drop for Server {
    /// Asks the server to stop; never waits for it.
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}
