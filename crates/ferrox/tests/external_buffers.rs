//! `Array::from_external`: arrays that read a buffer owned outside ferrox
//! in place. The owner must be dropped exactly once, after the last array
//! or view reading it, on whichever thread that is; nothing may copy the
//! bytes when they are aligned, and everything else must copy them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use ferrox::{Array, DType};

mod common;

/// Bytes with a drop counter; `offset` shifts the start inside the buffer
/// (to make a misaligned one).
struct Owned {
    buf: Vec<u64>,
    offset: usize,
    len: usize,
    drops: Arc<AtomicUsize>,
}

impl AsRef<[u8]> for Owned {
    fn as_ref(&self) -> &[u8] {
        let all: &[u8] = bytemuck_bytes(&self.buf);
        &all[self.offset..self.offset + self.len]
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn bytemuck_bytes(v: &[u64]) -> &[u8] {
    // SAFETY: u64 has no padding and every byte of it is initialised; the
    // slice covers exactly the vector's elements and borrows from it.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

fn f32_owner(values: &[f32], offset: usize) -> (Owned, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    let len = values.len() * 4;
    let mut buf = vec![0u64; (offset + len).div_ceil(8)];
    // SAFETY: as in bytemuck_bytes, mutably; the vector is long enough.
    let bytes =
        unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), buf.len() * 8) };
    for (i, v) in values.iter().enumerate() {
        bytes[offset + 4 * i..offset + 4 * i + 4].copy_from_slice(&v.to_ne_bytes());
    }
    let owner = Owned {
        buf,
        offset,
        len,
        drops: drops.clone(),
    };
    (owner, drops)
}

fn data_ptr(a: &Array) -> *const u8 {
    let data = a.data().expect("evaluated");
    data.storage
        .as_slice::<u8>()
        .as_ptr()
        .wrapping_add(data.offset * a.itemsize())
}

#[test]
fn aligned_bytes_are_read_in_place_and_released_after_the_last_view() {
    let values: Vec<f32> = (0..12).map(|i| i as f32 * 0.5).collect();
    let (owner, drops) = f32_owner(&values, 0);
    let start = owner.as_ref().as_ptr();
    let a = Array::from_external(owner, &[3, 4], DType::Float32).expect("from_external");
    assert_eq!(data_ptr(&a), start, "the bytes were copied");
    assert_eq!(a.to_vec::<f32>().expect("read"), values);

    // A view (a transposed slice) shares the bytes and keeps them alive.
    let view = ferrox::transpose(&a, None).expect("transpose");
    let sliced = ferrox::slice(&view, &[1, 0], &[3, 3], &[1, 1]).expect("slice");
    let sum = ferrox::sum(&a, None, false).expect("sum");
    drop(a);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        0,
        "released while a view lives"
    );
    assert_eq!(sum.item::<f32>().expect("sum"), values.iter().sum::<f32>());
    assert_eq!(
        sliced.to_vec::<f32>().expect("slice"),
        vec![0.5, 2.5, 4.5, 1.0, 3.0, 5.0]
    );
    drop((view, sum));
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(sliced);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "released exactly once");
}

#[test]
fn misaligned_bytes_and_bools_are_copied_and_released_at_once() {
    let values = [1.0f32, 2.0, 3.0];
    let (owner, drops) = f32_owner(&values, 4);
    let start = owner.as_ref().as_ptr();
    assert_ne!(start as usize % 8, 0);
    let a = Array::from_external(owner, &[3], DType::Float32).expect("from_external");
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "a copy must not hold the owner"
    );
    assert_ne!(data_ptr(&a), start);
    assert_eq!(a.to_vec::<f32>().expect("read"), values);

    // Bool bytes other than 0 and 1 are normalised, so they are copied.
    let b = Array::from_external(vec![0u8, 7, 1, 255], &[4], DType::Bool).expect("bool");
    assert_eq!(b.to_vec::<bool>().expect("read"), [false, true, true, true]);
    let n = ferrox::sum(&b, None, false)
        .and_then(|s| s.item::<i32>())
        .expect("sum");
    assert_eq!(n, 3);
}

#[test]
fn a_wrong_length_is_an_error_naming_the_sizes_and_releases_the_owner() {
    let (owner, drops) = f32_owner(&[1.0, 2.0, 3.0], 0);
    let err = Array::from_external(owner, &[2, 2], DType::Float32).expect_err("12 bytes for 16");
    let msg = err.to_string();
    assert!(
        msg.contains("from_external") && msg.contains("12") && msg.contains("16"),
        "{msg}"
    );
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    // An empty buffer for an empty shape is fine.
    let e = Array::from_external(Vec::<u8>::new(), &[0, 3], DType::Float64).expect("empty");
    assert_eq!(e.shape(), &[0, 3]);
}

#[test]
fn transforms_and_compile_read_external_inputs() {
    let values: Vec<f32> = (0..8).map(|i| i as f32 - 3.0).collect();
    let (owner, drops) = f32_owner(&values, 0);
    let x = Array::from_external(owner, &[8], DType::Float32).expect("from_external");
    let f = |args: &[Array]| -> ferrox::Result<Vec<Array>> {
        let y = ferrox::multiply(&args[0], &args[0])?;
        Ok(vec![ferrox::sum(&y, None, false)?])
    };
    let g = ferrox::grad(f, &[0]);
    let dx = g(std::slice::from_ref(&x)).expect("grad");
    let want: Vec<f32> = values.iter().map(|v| 2.0 * v).collect();
    assert_eq!(dx[0].to_vec::<f32>().expect("read"), want);
    let compiled = ferrox::compile(f);
    for _ in 0..3 {
        let out = compiled.call(std::slice::from_ref(&x)).expect("compiled");
        let want: f32 = values.iter().map(|v| v * v).sum();
        assert_eq!(out[0].item::<f32>().expect("read"), want);
    }
    drop((x, dx, g, compiled));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn threads_read_one_external_array_and_the_last_one_releases_it() {
    const THREADS: usize = 8;
    let values: Vec<f32> = (0..4096).map(|i| (i % 17) as f32).collect();
    let want: f32 = values.iter().sum();
    let (owner, drops) = f32_owner(&values, 0);
    let x = Array::from_external(owner, &[64, 64], DType::Float32).expect("from_external");
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let (x, barrier) = (x.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..20 {
                    let s = ferrox::sum(&x, None, false).and_then(|s| s.item::<f32>());
                    assert_eq!(s.expect("sum"), want);
                }
                // Each thread drops its clone here; the main thread's goes first.
            })
        })
        .collect();
    drop(x);
    for h in handles {
        common::join_within(60, h);
    }
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}
