//! 1,000 clients hanging up mid-stream: each cancels its generation and
//! array memory returns to its baseline. Its own test binary, so no other
//! test's arrays move the process-wide memory counter.

mod common;

use common::{TestResult, start, within};
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn aborted_streams_cancel_their_generation_and_free_their_memory() -> TestResult {
    let (server, client, _) = start()?;
    let body = json!({"prompt": "5+5=", "max_tokens": 50, "temperature": 0.5});
    // Warm up (traces), then take the baseline.
    client.stream("/v1/completions", &body, |_| true)?;
    let baseline = ferrox::get_active_memory();
    let start = Instant::now();
    let aborted = within(
        Duration::from_secs(600),
        move || -> Result<usize, String> {
            let mut n = 0;
            for _ in 0..1000 {
                // Hang up after the first event.
                let s = client
                    .stream("/v1/completions", &body, |_| false)
                    .map_err(|e| e.to_string())?;
                if !s.done {
                    n += 1;
                }
            }
            Ok(n)
        },
    )?;
    assert_eq!(aborted, 1000);
    // Cancelled generations end within a token or two; wait for them.
    let deadline = Instant::now() + Duration::from_secs(30);
    while ferrox::get_active_memory() > baseline && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        ferrox::get_active_memory() <= baseline,
        "active memory {} after 1000 aborted streams, baseline {baseline} ({:?})",
        ferrox::get_active_memory(),
        start.elapsed()
    );
    server.stop();
    Ok(())
}
