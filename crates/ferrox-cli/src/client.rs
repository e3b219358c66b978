//! A small blocking client of the server's routes (ureq): the demo's load
//! generator and the tests' driver.

use crate::error::{Error, Result};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// A client of one server.
#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
    base: String,
}

/// A response: status and JSON body.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
}

/// What a streamed completion delivered.
#[derive(Clone, Debug, Default)]
pub struct Streamed {
    /// The text of every piece, joined.
    pub text: String,
    /// The finish reason of the last event.
    pub finish: Option<String>,
    /// Generated tokens, from the usage of the last event.
    pub completion_tokens: usize,
    /// From sending the request to the first piece of text.
    pub time_to_first_token: Duration,
    /// The whole request.
    pub elapsed: Duration,
    /// Whether the stream ended with `[DONE]`.
    pub done: bool,
}

fn http(what: &str, e: impl std::fmt::Display) -> Error {
    Error::io(what.to_string(), std::io::Error::other(e.to_string()))
}

impl Client {
    /// A client of the server at `addr`; requests time out after `timeout`.
    pub fn new(addr: SocketAddr, timeout: Duration) -> Client {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .build();
        Client {
            agent: config.into(),
            base: format!("http://{addr}"),
        }
    }

    fn reply(what: &str, mut r: ureq::http::Response<ureq::Body>) -> Result<Reply> {
        let status = r.status().as_u16();
        let text = r.body_mut().read_to_string().map_err(|e| http(what, e))?;
        Ok(Reply {
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
        })
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> Result<Reply> {
        let r = self
            .agent
            .get(format!("{}{path}", self.base))
            .call()
            .map_err(|e| http(path, e))?;
        Self::reply(path, r)
    }

    /// `POST path` with a raw body (to test malformed requests).
    pub fn post_raw(&self, path: &str, body: &str) -> Result<Reply> {
        let r = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .send(body)
            .map_err(|e| http(path, e))?;
        Self::reply(path, r)
    }

    /// `POST path` with a JSON body.
    pub fn post(&self, path: &str, body: &Value) -> Result<Reply> {
        self.post_raw(path, &body.to_string())
    }

    /// A streamed completion on `path` (`body` gets `"stream": true`);
    /// `keep_going` is asked after each event and may hang up early.
    pub fn stream(
        &self,
        path: &str,
        body: &Value,
        mut keep_going: impl FnMut(&Streamed) -> bool,
    ) -> Result<Streamed> {
        let mut body = body.clone();
        body["stream"] = Value::Bool(true);
        let start = Instant::now();
        let r = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .send(body.to_string())
            .map_err(|e| http(path, e))?;
        if r.status().as_u16() != 200 {
            let reply = Self::reply(path, r)?;
            return Err(Error::BadRequest(format!(
                "{path} answered {}: {}",
                reply.status, reply.body
            )));
        }
        let mut out = Streamed::default();
        let reader = BufReader::new(r.into_body().into_reader());
        for line in reader.lines() {
            let line = line.map_err(|e| Error::io(format!("reading {path}"), e))?;
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            if data == "[DONE]" {
                out.done = true;
                break;
            }
            let v: Value = serde_json::from_str(data).map_err(|e| {
                Error::BadRequest(format!("{path} sent an event that is not JSON: {e}"))
            })?;
            if let Some(e) = v.get("error") {
                return Err(Error::BadRequest(format!("{path} streamed an error: {e}")));
            }
            let choice = &v["choices"][0];
            let piece = choice["text"]
                .as_str()
                .or_else(|| choice["delta"]["content"].as_str())
                .unwrap_or("");
            if !piece.is_empty() && out.text.is_empty() {
                out.time_to_first_token = start.elapsed();
            }
            out.text.push_str(piece);
            if let Some(f) = choice["finish_reason"].as_str() {
                out.finish = Some(f.to_string());
            }
            if let Some(n) = v["usage"]["completion_tokens"].as_u64() {
                out.completion_tokens = n as usize;
            }
            if !keep_going(&out) {
                break;
            }
        }
        out.elapsed = start.elapsed();
        Ok(out)
    }
}
