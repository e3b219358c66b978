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
fn an_allocation_larger_than_the_memory_limit_fails_at_once() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    watchdog(60, || {
        let old = set_memory_limit(1 << 20);
        // A 4 MB result can never fit a 1 MB limit: a Memory error, without
        // waiting for frees that cannot make room.
        let x = full(&[1 << 20], 1.0, DType::Float32).unwrap();
        let start = std::time::Instant::now();
        let r = x.to_vec::<f32>();
        let took = start.elapsed();
        set_memory_limit(old);
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Memory);
        assert!(
            e.to_string().contains("memory limit of 1048576 bytes"),
            "{e}"
        );
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    });
}

#[test]
fn an_allocation_over_the_limit_that_fits_alone_proceeds() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    watchdog(60, || {
        // 3 MB held, 2 MB more under a 4 MB limit: over the limit, but the
        // allocation fits on its own and no other evaluation could free
        // memory, so it proceeds.
        let held = full(&[3 << 18], 1.0, DType::Float32).unwrap();
        held.eval().unwrap();
        let old = set_memory_limit(get_active_memory() + (1 << 20));
        let x = full(&[1 << 19], 2.0, DType::Float32).unwrap();
        let r = x.to_vec::<f32>();
        set_memory_limit(old);
        assert_eq!(r.unwrap()[0], 2.0);
        drop(held);
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

#[test]
fn a_reset_peak_is_zero_until_the_next_allocation() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let held = full(&[4096], 1.0, DType::Float32).unwrap();
    held.eval().unwrap();
    reset_peak_memory();
    assert_eq!(
        get_peak_memory(),
        0,
        "a live buffer is not a new allocation"
    );
    let small = full(&[8], 2.0, DType::Float32).unwrap();
    small.eval().unwrap();
    assert!(get_peak_memory() >= get_active_memory());
    assert!(get_peak_memory() >= 4096 * 4, "the held buffer is active");
    drop((held, small));
}
