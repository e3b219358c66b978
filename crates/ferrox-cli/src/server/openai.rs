//! The request bodies of the OpenAI-compatible routes and their checks.

use super::error::ApiError;
use serde::Deserialize;

/// One string or several (`"stop": "\n"` or `"stop": ["\n", "."]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// One string.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl OneOrMany {
    /// The strings.
    pub fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

/// The sampling fields shared by completions and chat completions.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SamplingFields {
    /// The most tokens to generate (default: up to 64, within the context).
    pub max_tokens: Option<u64>,
    /// Sampling temperature (default 0: greedy).
    pub temperature: Option<f32>,
    /// Nucleus mass (default 1).
    pub top_p: Option<f32>,
    /// Seeds the draws (default 0).
    pub seed: Option<u64>,
    /// Stop sequences.
    pub stop: Option<OneOrMany>,
    /// Stream server-sent events.
    #[serde(default)]
    pub stream: bool,
    /// The model name (must be the served one when given).
    pub model: Option<String>,
}

/// `POST /v1/completions`.
#[derive(Clone, Debug, Deserialize)]
pub struct CompletionRequest {
    /// The prompt (one string).
    pub prompt: OneOrMany,
    /// Sampling and streaming.
    #[serde(flatten)]
    pub sampling: SamplingFields,
}

/// One chat message.
#[derive(Clone, Debug, Deserialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

/// `POST /v1/chat/completions`.
#[derive(Clone, Debug, Deserialize)]
pub struct ChatRequest {
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Sampling and streaming.
    #[serde(flatten)]
    pub sampling: SamplingFields,
}

impl ChatRequest {
    /// The prompt of a byte-level model without a chat template: the
    /// messages' contents, one per line.
    pub fn prompt(&self) -> Result<String, ApiError> {
        if self.messages.is_empty() {
            return Err(ApiError::bad_request("messages must not be empty"));
        }
        if let Some(m) = self
            .messages
            .iter()
            .find(|m| !matches!(m.role.as_str(), "system" | "user" | "assistant"))
        {
            return Err(ApiError::bad_request(format!(
                "unknown message role {:?} (system, user or assistant)",
                m.role
            )));
        }
        Ok(self
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n"))
    }
}

/// `POST /v1/embeddings`.
#[derive(Clone, Debug, Deserialize)]
pub struct EmbeddingRequest {
    /// The texts.
    pub input: OneOrMany,
    /// The model name (must be the served one when given).
    pub model: Option<String>,
}
