//! `/v1/completions` and `/v1/chat/completions`, whole or streamed as
//! server-sent events.
//!
//! Each request generates on its own blocking thread through the shared
//! [`Generator`]; the async side only moves text. A client that goes away
//! cancels its generation: a streamed one when the event channel closes, a
//! whole one when its handler future is dropped.

use super::App;
use super::error::ApiError;
use super::openai::{ChatRequest, CompletionRequest, OneOrMany, SamplingFields};
use super::utf8::Utf8Stream;
use crate::corpus::{decode, encode};
use crate::lm::generate::{Finish, Generation, Generator, Request};
use crate::lm::sample::Sampling;
use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio_stream::StreamExt;

/// Which route: the two differ only in the shape of their JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Completion,
    Chat,
}

/// At most this many tokens when a request gives no `max_tokens`.
const DEFAULT_MAX_TOKENS: usize = 64;

/// `POST /v1/completions`.
pub async fn completions(
    State(app): State<Arc<App>>,
    body: Result<Json<CompletionRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(req) = body?;
    let prompt = match req.prompt {
        OneOrMany::One(p) => p,
        OneOrMany::Many(mut v) if v.len() == 1 => v.remove(0),
        OneOrMany::Many(v) => {
            return Err(ApiError::bad_request(format!(
                "one prompt per request, got {}",
                v.len()
            )));
        }
    };
    generate(app, prompt, req.sampling, Route::Completion).await
}

/// `POST /v1/chat/completions`.
pub async fn chat_completions(
    State(app): State<Arc<App>>,
    body: Result<Json<ChatRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(req) = body?;
    let prompt = req.prompt()?;
    generate(app, prompt, req.sampling, Route::Chat).await
}

/// The generation request for `prompt` with the request's settings.
fn request(
    g: &Generator,
    prompt: &str,
    f: &SamplingFields,
    route: Route,
) -> Result<Request, ApiError> {
    let prompt = encode(prompt);
    let room = g.model().config.context.saturating_sub(prompt.len());
    let max_tokens = match f.max_tokens {
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        None => room.clamp(1, DEFAULT_MAX_TOKENS),
    };
    let mut stop: Vec<Vec<u8>> = f
        .stop
        .clone()
        .map(OneOrMany::into_vec)
        .unwrap_or_default()
        .into_iter()
        .map(String::into_bytes)
        .collect();
    if stop.len() > 4 {
        return Err(ApiError::bad_request(format!(
            "at most 4 stop sequences, got {}",
            stop.len()
        )));
    }
    // A chat turn of this model ends at the end of its line.
    if route == Route::Chat && f.stop.is_none() {
        stop.push(b"\n".to_vec());
    }
    let r = Request {
        prompt,
        max_tokens,
        sampling: Sampling {
            temperature: f.temperature.unwrap_or(0.0),
            top_p: f.top_p.unwrap_or(1.0),
        },
        seed: f.seed.unwrap_or(0),
        stop,
    };
    g.check(&r)?;
    Ok(r)
}

/// Sets a flag when dropped: a whole-response handler dropped by a
/// disconnect cancels its generation.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

async fn generate(
    app: Arc<App>,
    prompt: String,
    f: SamplingFields,
    route: Route,
) -> Result<Response, ApiError> {
    let g = app.generator.clone().ok_or_else(|| {
        ApiError::not_found("this server has no language model; it serves /v1/embeddings")
    })?;
    app.check_model(f.model.as_deref(), &app.model_id)?;
    let r = request(&g, &prompt, &f, route)?;
    let meta = Meta {
        id: app.next_id(if route == Route::Chat {
            "chatcmpl"
        } else {
            "cmpl"
        }),
        created: super::unix_time(),
        model: app.model_id.clone(),
        route,
        prompt_tokens: r.prompt.len(),
    };
    let permit = Arc::clone(&app.slots)
        .acquire_owned()
        .await
        .map_err(|_| ApiError::bad_request("the server is shutting down"))?;
    if f.stream {
        return Ok(stream(g, r, meta, permit));
    }
    let cancelled = Arc::new(AtomicBool::new(false));
    let _cancel = CancelOnDrop(Arc::clone(&cancelled));
    let out = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        g.generate(&r, |_| !cancelled.load(Ordering::Relaxed))
    })
    .await
    .map_err(|e| ApiError::from(crate::Error::Config(format!("generation failed: {e}"))))??;
    Ok(Json(meta.whole(&out)).into_response())
}

/// What every JSON object of a response repeats.
struct Meta {
    id: String,
    created: u64,
    model: String,
    route: Route,
    prompt_tokens: usize,
}

impl Meta {
    fn object(&self, chunk: bool) -> &'static str {
        match (self.route, chunk) {
            (Route::Completion, _) => "text_completion",
            (Route::Chat, false) => "chat.completion",
            (Route::Chat, true) => "chat.completion.chunk",
        }
    }

    fn usage(&self, completion: usize) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": self.prompt_tokens + completion,
        })
    }

    fn envelope(&self, chunk: bool, choice: Value, usage: Option<Value>) -> Value {
        let mut v = json!({
            "id": self.id,
            "object": self.object(chunk),
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        });
        if let Some(u) = usage {
            v["usage"] = u;
        }
        v
    }

    fn whole(&self, g: &Generation) -> Value {
        let text = decode(&g.tokens);
        let finish = g.finish.as_str();
        let choice = match self.route {
            Route::Completion => {
                json!({"index": 0, "text": text, "finish_reason": finish, "logprobs": null})
            }
            Route::Chat => json!({
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish,
            }),
        };
        self.envelope(false, choice, Some(self.usage(g.tokens.len())))
    }

    fn piece(&self, text: &str, first: bool) -> Value {
        let choice = match self.route {
            Route::Completion => json!({"index": 0, "text": text, "finish_reason": null}),
            Route::Chat if first => json!({
                "index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null
            }),
            Route::Chat => json!({"index": 0, "delta": {"content": text}, "finish_reason": null}),
        };
        self.envelope(true, choice, None)
    }

    fn last(&self, finish: Finish, tokens: usize) -> Value {
        let choice = match self.route {
            Route::Completion => json!({"index": 0, "text": "", "finish_reason": finish.as_str()}),
            Route::Chat => json!({"index": 0, "delta": {}, "finish_reason": finish.as_str()}),
        };
        self.envelope(true, choice, Some(self.usage(tokens)))
    }
}

/// A streamed response: one event per text piece, a last event with the
/// finish reason and usage, then `[DONE]`.
fn stream(
    g: Arc<Generator>,
    r: Request,
    meta: Meta,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<Value>(32);
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let mut text = Utf8Stream::default();
        let mut first = true;
        let out = g.generate(&r, |t| {
            let piece = text.push(t.clamp(0, 255) as u8);
            if piece.is_empty() {
                return !tx.is_closed();
            }
            let event = meta.piece(&piece, first);
            first = false;
            tx.blocking_send(event).is_ok()
        });
        let tail = match out {
            Ok(out) => {
                let rest = text.finish();
                if !rest.is_empty() {
                    let _ = tx.blocking_send(meta.piece(&rest, first));
                }
                meta.last(out.finish, out.tokens.len())
            }
            Err(e) => json!({"error": {"message": e.to_string(), "type": "invalid_request_error"}}),
        };
        // The client may be gone; nothing is left to tell it then.
        let _ = tx.blocking_send(tail);
    });
    let events = tokio_stream::wrappers::ReceiverStream::new(rx)
        .map(|v| Ok::<Event, Infallible>(Event::default().data(v.to_string())))
        .chain(tokio_stream::once(Ok(Event::default().data("[DONE]"))));
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}
