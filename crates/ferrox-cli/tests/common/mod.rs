//! What the server tests share: a server with a tiny random model on an
//! ephemeral loopback port, and a watchdog.

use ferrox_cli::client::Client;
use ferrox_cli::lm::generate::Generator;
use ferrox_cli::lm::{Lm, LmConfig};
use ferrox_cli::server::{App, Server};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A server of a tiny seeded model, a client of it, and its generator.
pub fn start() -> Result<(Server, Client, Arc<Generator>), Box<dyn std::error::Error>> {
    ferrox::random::seed(42);
    let g = Arc::new(Generator::new(Lm::new(LmConfig::tiny())?)?);
    let app = Arc::new(App::new(Some(Arc::clone(&g)), "tiny", None, 16));
    let server = Server::start(app, "127.0.0.1:0".parse()?)?;
    let client = Client::new(server.addr(), Duration::from_secs(60));
    Ok((server, client, g))
}

/// Runs `f` on a thread and fails if it takes longer than `limit`.
pub fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(_) => panic!("watchdog: no result within {limit:?}"),
    }
}
