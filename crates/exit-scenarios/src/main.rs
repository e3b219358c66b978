//! Exits the process at awkward moments (contract item 8). Each scenario
//! must end with status 0 and print nothing; `tests/exit.rs` runs every
//! scenario many times and checks exactly that.

use ferrox::*;
use std::time::Duration;

/// A chain of elementwise ops over 1M floats: tens of milliseconds of work.
fn heavy_graph() -> Result<Array> {
    let mut y = arange(0.0, (1 << 20) as f64, 1.0, DType::Float32)?;
    for _ in 0..40 {
        y = exp(&negative(&y)?)?;
        y = add(&y, &Array::from(1.0))?;
    }
    Ok(y)
}

fn pending_async_at_exit() -> Result<()> {
    let s = new_stream(Device::cpu());
    let outs: Vec<Array> = (0..4)
        .map(|_| with_stream(s, heavy_graph))
        .collect::<Result<_>>()?;
    async_eval(&outs)?;
    Ok(()) // return from main with the work still running
}

fn exit_from_a_non_main_thread() -> Result<()> {
    let y = heavy_graph()?;
    async_eval(&[y])?;
    std::thread::spawn(|| {
        if let Ok(z) = heavy_graph() {
            let _ = async_eval(&[z]);
        }
        std::thread::sleep(Duration::from_millis(5));
        std::process::exit(0);
    });
    // The main thread keeps evaluating until the worker ends the process.
    loop {
        heavy_graph()?.eval()?;
    }
}

fn streams_of_exited_threads() -> Result<()> {
    let handles: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(|| -> Result<Array> {
                let s = new_stream(Device::cpu());
                let y = with_stream(s, heavy_graph)?;
                async_eval(std::slice::from_ref(&y))?;
                Ok(y)
            })
        })
        .collect();
    let mut pending = vec![];
    for h in handles {
        if let Ok(Ok(y)) = h.join() {
            pending.push(y);
        }
    }
    // The creating threads are gone; their streams still have work. Exit.
    Ok(())
}

fn threads_evaluating_at_exit() -> Result<()> {
    for _ in 0..4 {
        std::thread::spawn(|| loop {
            if heavy_graph().and_then(|y| y.eval()).is_err() {
                return;
            }
        });
    }
    std::thread::sleep(Duration::from_millis(10));
    Ok(())
}

/// Threads that drew with their default random keys: some have exited,
/// others are still drawing while `main` returns.
fn threads_drawing_random_numbers_at_exit() -> Result<()> {
    let draw = || -> Result<()> {
        let u = random::uniform(0.0, 1.0, &[1 << 16], DType::Float32, None)?;
        let z = random::normal(&[1 << 16], DType::Float32, 0.0, 1.0, None)?;
        add(&u, &z)?.eval()
    };
    for _ in 0..8 {
        let _ = std::thread::spawn(draw).join();
    }
    for _ in 0..4 {
        std::thread::spawn(move || while draw().is_ok() {});
    }
    std::thread::sleep(Duration::from_millis(10));
    Ok(())
}

/// Returns right after parallel kernels, while the helper thread that ran
/// part of them is still watching for the next one (`team::LINGER`).
fn exit_while_helpers_linger() -> Result<()> {
    let x = arange(0.0, (1 << 22) as f64, 1.0, DType::Float32)?;
    for _ in 0..3 {
        exp(&negative(&x)?)?.eval()?;
    }
    Ok(())
}

fn main() {
    let scenario = std::env::args().nth(1).unwrap_or_default();
    let result = match scenario.as_str() {
        "pending-async" => pending_async_at_exit(),
        "exit-from-thread" => exit_from_a_non_main_thread(),
        "streams-of-exited-threads" => streams_of_exited_threads(),
        "threads-evaluating" => threads_evaluating_at_exit(),
        "threads-drawing-random" => threads_drawing_random_numbers_at_exit(),
        "helpers-lingering" => exit_while_helpers_linger(),
        other => {
            eprintln!("unknown scenario {other:?}");
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
