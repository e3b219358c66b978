//! The `ferrox` program as a library: a small language model trained on a
//! generated corpus ([`lm`], [`corpus`], [`lm::train`]), generation from it
//! with per-request key/value caches ([`lm::generate`]), a sentence encoder
//! ([`embed`]), and an OpenAI-compatible HTTP server for both
//! ([`server`]). `src/main.rs` is the command line over these.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod client;
pub mod corpus;
pub mod demo;
pub mod embed;
pub mod error;
pub mod lm;
pub mod plot;
pub mod rng;
pub mod server;

pub use error::{Error, Result};
