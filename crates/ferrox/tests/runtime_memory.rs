//! Memory accounting under concurrency. Alone in its own test binary so that
//! no other test allocates while the counters are compared.

mod common;

use common::{join_within, watchdog};
use ferrox::*;
use std::sync::Mutex;

/// The counters are process-wide: tests here take turns.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn memory_counters_are_exact_under_concurrent_evaluation() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    watchdog(60, || {
        // Warm the cache, then measure.
        let before = get_active_memory();
        let handles: Vec<_> = (0..8)
            .map(|i| {
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let x = full(&[50_000], i as f64, DType::Float32).unwrap();
                        let y = add(&x, &x).unwrap();
                        assert_eq!(y.to_vec::<f32>().unwrap()[0], 2.0 * i as f32);
                    }
                })
            })
            .collect();
        for h in handles {
            join_within(30, h);
        }
        assert!(get_peak_memory() >= before);
        assert_eq!(get_active_memory(), before, "every buffer was returned");
    });
}

#[test]
fn memory_limit_applies_backpressure_instead_of_failing() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    watchdog(60, || {
        let old = set_memory_limit(1 << 20);
        // Each result is 4 MB, far over the 1 MB limit: allocations wait
        // briefly for memory, then proceed; nothing fails.
        let x = full(&[1 << 20], 1.0, DType::Float32).unwrap();
        let y = add(&x, &x).unwrap();
        let r = y.to_vec::<f32>();
        set_memory_limit(old);
        assert_eq!(r.unwrap()[0], 2.0);
    });
}

#[test]
fn buffer_cache_reuses_and_clears() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    watchdog(60, || {
        clear_cache();
        let x = full(&[1 << 18], 3.0, DType::Float32).unwrap();
        x.eval().unwrap();
        drop(x);
        assert!(
            get_cache_memory() >= (1 << 20),
            "a freed 1 MB buffer is cached"
        );
        clear_cache();
        assert_eq!(get_cache_memory(), 0);
    });
}
