//! Each exit scenario, run as a subprocess 20 times, exits 0 and prints
//! nothing (contract item 8).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 20;

fn run_scenario(name: &str) {
    for i in 0..RUNS {
        let mut child = Command::new(env!("CARGO_BIN_EXE_exit-scenarios"))
            .arg(name)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        // Watchdog: a process that hangs at exit fails the test.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if child.try_wait().expect("wait").is_some() {
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("{name} run {i}: did not exit within 60 s");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let out = child.wait_with_output().expect("output");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name} run {i}: status {:?}, stderr {:?}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stdout.is_empty(),
            "{name} run {i}: stdout {:?}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            out.stderr.is_empty(),
            "{name} run {i}: stderr {:?}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn pending_async_work_at_exit() {
    run_scenario("pending-async");
}

#[test]
fn exit_from_a_non_main_thread() {
    run_scenario("exit-from-thread");
}

#[test]
fn streams_of_threads_that_exited() {
    run_scenario("streams-of-exited-threads");
}

#[test]
fn threads_evaluating_while_main_returns() {
    run_scenario("threads-evaluating");
}

#[test]
fn threads_drawing_random_numbers_while_main_returns() {
    run_scenario("threads-drawing-random");
}

#[test]
fn main_returning_while_helpers_linger() {
    run_scenario("helpers-lingering");
}
