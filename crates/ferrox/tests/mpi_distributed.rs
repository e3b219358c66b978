//! The distributed ops across processes: run by scripts/test-mpi.sh under
//! `mpirun -np 2` and `-np 4` (its own `main`, not libtest's threads, so
//! every rank runs the same checks in the same order).
//!
//! Every rank builds its inputs from its rank, and checks each result
//! against a reference computed locally from every rank's inputs. A
//! watchdog ends the process if a check hangs; `mpirun` itself runs under
//! `timeout` in the script.
//!
//! `mpi_distributed die` is the failure scenario: rank 1 kills itself
//! while rank 0 waits in an `all_sum`; the script asserts that the job
//! ends (with an error) well within its timeout.

use ferrox::distributed::{self as dist, Group};
use ferrox::{Array, DType, Result};
use std::sync::{Arc, Barrier};
use std::time::Duration;

fn fail(op: &str, what: &str) -> ferrox::Error {
    ferrox::Error::new(ferrox::ErrorKind::Runtime, op, what)
}

fn check(cond: bool, what: &str) -> Result<()> {
    if cond {
        Ok(())
    } else {
        Err(fail("mpi_distributed", what))
    }
}

fn same(a: &Array, b: &Array, what: &str) -> Result<()> {
    let eq = ferrox::array_equal(a, b, true)?.item::<bool>()?;
    if !eq {
        eprintln!("{what}: got {a} expected {b}");
    }
    check(eq, what)
}

/// Rank `r`'s input of `dtype`: small values, exact in every dtype.
fn input(r: usize, dtype: DType, shape: &[usize]) -> Result<Array> {
    let n: usize = shape.iter().product();
    let vals: Vec<f32> = (0..n).map(|i| ((i * 3 + r * 5) % 7) as f32).collect();
    let x = Array::from_slice(&vals, shape)?;
    if dtype == DType::Bool {
        return ferrox::equal(
            &ferrox::remainder(&x, &Array::scalar(2.0f32))?,
            &Array::scalar(0.0f32),
        );
    }
    x.astype(dtype)
}

fn collectives_on_every_dtype(g: &Group) -> Result<()> {
    let (r, n) = (g.rank(), g.size());
    for dtype in DType::ALL {
        let shape = [2 * n, 3];
        let x = input(r, dtype, &shape)?;
        let all: Vec<Array> = (0..n)
            .map(|k| input(k, dtype, &shape))
            .collect::<Result<_>>()?;
        let (mut sum, mut max, mut min) = (all[0].clone(), all[0].clone(), all[0].clone());
        for a in &all[1..] {
            sum = if dtype == DType::Bool {
                ferrox::logical_or(&sum, a)?
            } else {
                ferrox::add(&sum, a)?
            };
            if dtype != DType::Complex64 {
                max = ferrox::maximum(&max, a)?;
                min = ferrox::minimum(&min, a)?;
            }
        }
        same(
            &dist::all_sum(&x, Some(g))?,
            &sum,
            &format!("all_sum {dtype}"),
        )?;
        if dtype != DType::Complex64 {
            same(
                &dist::all_max(&x, Some(g))?,
                &max,
                &format!("all_max {dtype}"),
            )?;
            same(
                &dist::all_min(&x, Some(g))?,
                &min,
                &format!("all_min {dtype}"),
            )?;
        }
        let gathered = ferrox::concatenate(&all, 0)?;
        same(
            &dist::all_gather(&x, Some(g))?,
            &gathered,
            &format!("all_gather {dtype}"),
        )?;
        let mine = ferrox::slice(
            &sum,
            &[2 * r as isize, 0],
            &[2 * r as isize + 2, 3],
            &[1, 1],
        )?;
        same(
            &dist::sum_scatter(&x, Some(g))?,
            &mine,
            &format!("sum_scatter {dtype}"),
        )?;
    }
    // Complex max/min: ordered as (real, imaginary) pairs.
    let z = input(r, DType::Float32, &[4])?.astype(DType::Complex64)?;
    let zmax = dist::all_max(&z, Some(g))?;
    let rmax = (0..n)
        .map(|k| input(k, DType::Float32, &[4]))
        .try_fold(None::<Array>, |acc, a| -> Result<Option<Array>> {
            let a = a?;
            Ok(Some(match acc {
                None => a,
                Some(m) => ferrox::maximum(&m, &a)?,
            }))
        })?
        .ok_or_else(|| fail("t", "empty"))?;
    same(&ferrox::real(&zmax)?, &rmax, "all_max complex64")?;
    // Scalars gather into a vector.
    let s = Array::from_slice(&[r as i32], &[])?;
    let want: Vec<i32> = (0..n as i32).collect();
    check(
        dist::all_gather(&s, Some(g))?.to_vec::<i32>()? == want,
        "all_gather of a scalar",
    )?;
    Ok(())
}

fn split_groups(g: &Group) -> Result<()> {
    let (r, n) = (g.rank(), g.size());
    // Two colors; inside each the order is reversed by the key.
    let color = (r % 2) as i32;
    let sub = g.split(color, Some((n - r) as i32))?;
    let members: Vec<usize> = (0..n).filter(|k| k % 2 == r % 2).collect();
    check(sub.size() == members.len(), "split size")?;
    let pos = members
        .iter()
        .rev()
        .position(|&k| k == r)
        .unwrap_or(usize::MAX);
    check(sub.rank() == pos, "split rank ordered by key")?;
    let x = Array::from_slice(&[r as f32], &[1])?;
    let s = dist::all_sum(&x, Some(&sub))?.to_vec::<f32>()?;
    check(
        s == vec![members.iter().sum::<usize>() as f32],
        "all_sum on a split group",
    )?;
    Ok(())
}

fn send_recv_ring(g: &Group) -> Result<()> {
    let (r, n) = (g.rank(), g.size());
    let next = ((r + 1) % n) as i64;
    let prev = ((r + n - 1) % n) as i64;
    // 1 MiB: past any eager limit, so a wrong order would deadlock.
    let len = 1 << 18;
    let mine = ferrox::full(&[len], r as f64, DType::Float32)?;
    let sent = dist::send(&mine, next, Some(g))?;
    let got = dist::recv_like(&mine, prev, Some(g))?;
    if r % 2 == 0 {
        sent.eval()?;
        got.eval()?;
    } else {
        got.eval()?;
        sent.eval()?;
    }
    let v = got.to_vec::<f32>()?;
    check(
        v.len() == len && v.iter().all(|&e| e == prev as f32),
        "ring recv",
    )?;
    // Every dtype through a pair exchange (0 <-> 1).
    if r < 2 {
        let peer = 1 - r as i64;
        for dtype in DType::ALL {
            let x = input(r, dtype, &[5])?;
            let want = input(peer as usize, dtype, &[5])?;
            let (s, rv) = (
                dist::send(&x, peer, Some(g))?,
                dist::recv(&[5], dtype, peer, Some(g))?,
            );
            if r == 0 {
                s.eval()?;
                rv.eval()?;
            } else {
                rv.eval()?;
                s.eval()?;
            }
            same(&rv, &want, &format!("send/recv {dtype}"))?;
        }
    }
    Ok(())
}

fn four_threads_with_own_groups(g: &Group) -> Result<()> {
    let (r, n) = (g.rank(), g.size());
    // Created one after the other, in the same order on every rank.
    let groups: Vec<Group> = (0..4).map(|_| g.duplicate()).collect::<Result<_>>()?;
    let barrier = Arc::new(Barrier::new(4));
    let handles: Vec<_> = groups
        .into_iter()
        .enumerate()
        .map(|(t, sub)| {
            let barrier = barrier.clone();
            std::thread::spawn(move || -> Result<()> {
                barrier.wait();
                for it in 0..25 {
                    let x = ferrox::full(&[1000], (r * 10 + t + it) as f64, DType::Float32)?;
                    let want = (0..n).map(|k| (k * 10 + t + it) as f32).sum::<f32>();
                    let y = dist::all_sum(&x, Some(&sub))?.to_vec::<f32>()?;
                    check(y.iter().all(|&v| v == want), "threaded all_sum")?;
                    let gth = dist::all_gather(&Array::from_slice(&[t as i64], &[1])?, Some(&sub))?;
                    check(
                        gth.to_vec::<i64>()? == vec![t as i64; n],
                        "threaded all_gather",
                    )?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| fail("thread", "panicked"))??;
    }
    Ok(())
}

fn concurrent_use_of_one_group_is_an_error(g: &Group) -> Result<()> {
    let r = g.rank();
    let sub = g.duplicate()?;
    let x = ferrox::ones(&[4], DType::Float32)?;
    if r == 0 {
        // Rank 0's first thread waits in the all_sum (rank 1 joins late);
        // meanwhile a second thread's operation on the same group fails.
        let (s1, x1) = (sub.clone(), x.clone());
        let first = std::thread::spawn(move || dist::all_sum(&x1, Some(&s1))?.to_vec::<f32>());
        std::thread::sleep(Duration::from_millis(300));
        let e = dist::all_gather(&x, Some(&sub))?.eval().err();
        let msg = e.map(|e| e.to_string()).unwrap_or_default();
        check(
            msg.starts_with("all_gather: another thread"),
            "concurrent use error",
        )?;
        let v = first.join().map_err(|_| fail("thread", "panicked"))??;
        check(v == vec![g.size() as f32; 4], "the first thread's all_sum")?;
    } else {
        std::thread::sleep(Duration::from_millis(1200));
        let v = dist::all_sum(&x, Some(&sub))?.to_vec::<f32>()?;
        check(v == vec![g.size() as f32; 4], "late all_sum")?;
    }
    Ok(())
}

fn compiled_step_with_all_sum(g: &Group) -> Result<()> {
    let (r, n) = (g.rank(), g.size());
    let world = g.clone();
    let step = ferrox::compile(move |a: &[Array]| {
        let s = dist::all_sum(
            &ferrox::multiply(&a[0], &Array::scalar(2.0f32))?,
            Some(&world),
        )?;
        Ok(vec![ferrox::add(&s, &a[1])?])
    });
    for it in 0..3 {
        let x = ferrox::full(&[3], (r + it) as f64, DType::Float32)?;
        let b = ferrox::ones(&[3], DType::Float32)?;
        let y = step.call(&[x, b])?[0].to_vec::<f32>()?;
        let want = 2.0 * (0..n).map(|k| (k + it) as f32).sum::<f32>() + 1.0;
        check(y == vec![want; 3], "compiled all_sum")?;
    }
    Ok(())
}

fn gradients_through_collectives(g: &Group) -> Result<()> {
    let (r, n) = (g.rank(), g.size());
    let world = g.clone();
    // loss = sum(all_sum(x) * x): with MLX's rule (the all_sum's vjp is the
    // identity) the gradient is all_sum(x) + x.
    let grad = ferrox::grad(
        move |a: &[Array]| {
            let s = dist::all_sum(&a[0], Some(&world))?;
            Ok(vec![ferrox::sum(
                &ferrox::multiply(&s, &a[0])?,
                None,
                false,
            )?])
        },
        &[0],
    );
    let x = ferrox::full(&[2], (r + 1) as f64, DType::Float32)?;
    let gx = grad(&[x])?[0].to_vec::<f32>()?;
    let total = (1..=n).sum::<usize>() as f32;
    check(
        gx == vec![total + (r + 1) as f32; 2],
        "grad through all_sum",
    )?;
    // The data-parallel pattern: local gradients averaged with all_sum.
    let avg = ferrox::divide(
        &dist::all_sum(&ferrox::full(&[2], r as f64, DType::Float32)?, Some(g))?,
        &Array::scalar(n as f32),
    )?;
    let want = (0..n).sum::<usize>() as f32 / n as f32;
    check(avg.to_vec::<f32>()? == vec![want; 2], "averaged gradients")?;
    // Through all_gather: each rank's block of the cotangent.
    let world = g.clone();
    let grad = ferrox::grad(
        move |a: &[Array]| {
            let all = dist::all_gather(&a[0], Some(&world))?;
            let w = ferrox::arange(0.0, (2 * n) as f64, 1.0, DType::Float32)?;
            Ok(vec![ferrox::sum(
                &ferrox::multiply(&all, &w)?,
                None,
                false,
            )?])
        },
        &[0],
    );
    let gx = grad(&[ferrox::ones(&[2], DType::Float32)?])?[0].to_vec::<f32>()?;
    check(
        gx == vec![(2 * r) as f32, (2 * r + 1) as f32],
        "grad through all_gather",
    )?;
    Ok(())
}

fn die(g: &Group) -> Result<()> {
    if g.rank() == 1 {
        std::thread::sleep(Duration::from_millis(500));
        // An abrupt end, as a crash or the OOM killer would do.
        std::process::abort();
    }
    let x = ferrox::ones(&[4], DType::Float32)?;
    dist::all_sum(&x, Some(g))?.eval()?;
    // Never reached on a live job: rank 1 is gone.
    Ok(())
}

/// One named check, run by every rank.
type Check = fn(&Group) -> Result<()>;

fn main() {
    // The watchdog: a hang fails instead of waiting for mpirun's timeout.
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(120));
        eprintln!("mpi_distributed: watchdog: still running after 120 s");
        std::process::exit(3);
    });
    let g = match dist::init(false, "any") {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    if g.size() == 1 {
        println!("mpi_distributed: a group of size 1 (not under mpirun): nothing to check");
        return;
    }
    let mode = std::env::args().nth(1).unwrap_or_default();
    let checks: Vec<(&str, Check)> = if mode == "die" {
        vec![("die", die)]
    } else {
        vec![
            ("collectives_on_every_dtype", collectives_on_every_dtype),
            ("split_groups", split_groups),
            ("send_recv_ring", send_recv_ring),
            ("four_threads_with_own_groups", four_threads_with_own_groups),
            (
                "concurrent_use_of_one_group_is_an_error",
                concurrent_use_of_one_group_is_an_error,
            ),
            ("compiled_step_with_all_sum", compiled_step_with_all_sum),
            (
                "gradients_through_collectives",
                gradients_through_collectives,
            ),
        ]
    };
    let mut failed = 0;
    for (name, f) in &checks {
        match f(&g) {
            Ok(()) => {
                if g.rank() == 0 {
                    println!("ok {name} (np {})", g.size());
                }
            }
            Err(e) => {
                failed += 1;
                println!("FAILED {name} on rank {}: {e}", g.rank());
            }
        }
    }
    if failed > 0 {
        std::process::exit(1);
    }
    if g.rank() == 0 {
        println!(
            "mpi_distributed: {} checks passed on {} processes",
            checks.len(),
            g.size()
        );
    }
}
