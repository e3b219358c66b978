//! Outstanding asynchronous work per stream, and waiting for it.

use crate::graph::stream::Stream;
use crate::sync::{Condvar, Mutex, lock};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// Outstanding asynchronous work per stream, for [`synchronize`].
#[derive(Default)]
pub(crate) struct Pending {
    count: Mutex<usize>,
    done: Condvar,
}

fn pending_table() -> &'static Mutex<HashMap<Stream, Arc<Pending>>> {
    static T: OnceLock<Mutex<HashMap<Stream, Arc<Pending>>>> = OnceLock::new();
    T.get_or_init(|| Mutex::new(HashMap::new()))
}

pub(crate) fn pending(stream: Stream) -> Arc<Pending> {
    lock(pending_table()).entry(stream).or_default().clone()
}

impl Pending {
    pub(crate) fn add(&self) {
        *lock(&self.count) += 1;
    }
    pub(crate) fn finish(&self) {
        let mut c = lock(&self.count);
        *c = c.saturating_sub(1);
        if *c == 0 {
            self.done.notify_all();
        }
    }
    fn wait_idle(&self) {
        let mut c = lock(&self.count);
        while *c > 0 {
            c = match self.done.wait(c) {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
        }
    }
}

/// Waits until all work submitted with [`crate::async_eval`] on `stream`
/// has finished. Works from any thread.
///
/// ```
/// use ferrox::*;
/// let s = new_stream(Device::cpu());
/// let y = with_stream(s, || exp(&ones(&[4], DType::Float32)?))?;
/// async_eval(&[y.clone()])?;
/// synchronize(s);
/// assert!(y.is_available());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn synchronize(stream: Stream) {
    let p = lock(pending_table()).get(&stream).cloned();
    if let Some(p) = p {
        p.wait_idle();
    }
}

/// Waits for all asynchronous work on every stream.
///
/// ```
/// ferrox::synchronize_all();
/// ```
pub fn synchronize_all() {
    let all: Vec<Arc<Pending>> = lock(pending_table()).values().cloned().collect();
    for p in all {
        p.wait_idle();
    }
}
