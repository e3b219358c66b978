//! The `ferrox` program as a library: a small language model trained on a
//! generated corpus ([`lm`], [`corpus`], [`train`]), generation from it
//! with per-request key/value caches ([`generate`]), a sentence encoder
//! ([`embed`]), and an OpenAI-compatible HTTP server for both
//! ([`server`]). `src/main.rs` is the command line over these.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod embed;
pub mod error;
pub mod lm;

pub use error::{Error, Result};
