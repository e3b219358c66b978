//! The bounded pool that runs `async_eval` work.
//!
//! A fixed number of threads, started on first use and shared by the whole
//! process; no thread is ever created because a new caller thread appeared.
//! Workers are never joined: at process exit they are simply stopped by the
//! OS wherever they are, which is safe because they hold no resource whose
//! teardown matters (no files, no device handles), and because no `Drop` in
//! ferrox waits for them (contract item 8).

use crate::sync::{Condvar, Mutex, lock};
use std::collections::VecDeque;
use std::sync::OnceLock;

type Job = Box<dyn FnOnce() + Send + 'static>;

struct Queue {
    jobs: Mutex<VecDeque<Job>>,
    ready: Condvar,
}

fn queue() -> &'static Queue {
    static Q: OnceLock<Queue> = OnceLock::new();
    Q.get_or_init(|| {
        let n = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .clamp(2, 8);
        for i in 0..n {
            // A failed spawn leaves fewer workers; at least one is needed,
            // and `submit` runs the job inline if none could be started.
            let _ = std::thread::Builder::new()
                .name(format!("ferrox-async-{i}"))
                .spawn(work);
        }
        Queue {
            jobs: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
        }
    })
}

fn work() {
    let q = queue();
    loop {
        let job = {
            let mut jobs = lock(&q.jobs);
            loop {
                if let Some(j) = jobs.pop_front() {
                    break j;
                }
                jobs = match q.ready.wait(jobs) {
                    Ok(g) => g,
                    Err(p) => p.into_inner(),
                };
            }
        };
        // A panicking job must not take the worker down with it.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

/// Queues `job` to run on a worker.
pub(crate) fn submit(job: impl FnOnce() + Send + 'static) {
    let q = queue();
    lock(&q.jobs).push_back(Box::new(job));
    q.ready.notify_one();
}
