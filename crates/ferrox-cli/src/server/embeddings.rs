//! `/v1/embeddings`: sentence embeddings from an [`Embedder`].

use super::App;
use super::error::ApiError;
use super::openai::EmbeddingRequest;
use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use serde_json::{Value, json};
use std::sync::Arc;

/// Texts per request at most.
const MAX_INPUTS: usize = 256;

/// A sentence encoder the server can serve.
pub trait Embedder: Send + Sync {
    /// Its name in `/v1/models`.
    fn name(&self) -> String;
    /// One unit-length vector per text, and the tokens used in all.
    fn embed(&self, texts: &[&str]) -> crate::Result<(Vec<Vec<f32>>, usize)>;
}

/// `POST /v1/embeddings`.
pub async fn embeddings(
    State(app): State<Arc<App>>,
    body: Result<Json<EmbeddingRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(req) = body?;
    let e = app.embedder.clone().ok_or_else(|| {
        ApiError::not_found("this server has no sentence encoder; start it with --embeddings DIR")
    })?;
    let name = e.name();
    app.check_model(req.model.as_deref(), &name)?;
    let texts = req.input.into_vec();
    if texts.is_empty() || texts.len() > MAX_INPUTS {
        return Err(ApiError::bad_request(format!(
            "input must hold 1 to {MAX_INPUTS} texts, got {}",
            texts.len()
        )));
    }
    let (vectors, tokens) = tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        e.embed(&refs)
    })
    .await
    .map_err(|e| ApiError::from(crate::Error::Embeddings(format!("the encoder failed: {e}"))))??;
    let data: Vec<Value> = vectors
        .into_iter()
        .enumerate()
        .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
        .collect();
    Ok(Json(json!({
        "object": "list",
        "data": data,
        "model": name,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    })))
}
