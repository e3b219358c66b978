//! Transform rules of ferrox::fft and ferrox::linalg: vjp and jvp against
//! finite differences, vmap against a loop.
//!
//! The transforms compute in single precision (complex64), so the checks
//! use a larger step than the f64 checks; the transforms are linear, so
//! the differences carry no truncation error.

#![allow(clippy::cloned_ref_to_slice_refs, clippy::type_complexity)] // test tables read best inline

mod common;

use common::checks::{Rng, check_derivatives_with, check_vmap_out};
use ferrox::linalg::{NormOrd, cross, norm};
use ferrox::*;

type F = fn(&[Array]) -> Result<Vec<Array>>;

/// Real and imaginary parts of a complex result, as real outputs.
fn parts(z: Array) -> Result<Vec<Array>> {
    Ok(vec![real(&z)?, imag(&z)?])
}

/// A generic complex vector (independent real and imaginary parts) of
/// length `m` along the last axis, from a real input of length >= 2m + 1
/// there: the first bins of its transform.
fn generic(x: &Array, m: usize) -> Result<Array> {
    let z = fft::fft(x, None, -1)?;
    let nd = z.ndim();
    let mut stop: Vec<isize> = z.shape().iter().map(|&d| d as isize).collect();
    stop[nd - 1] = m as isize;
    slice(&z, &vec![0; nd], &stop, &vec![1; nd])
}

fn fft_cases() -> Vec<(&'static str, F)> {
    vec![
        ("fft", |xs| parts(fft::fft(&xs[0], None, -1)?)),
        ("fft pad", |xs| parts(fft::fft(&xs[0], Some(9), -1)?)),
        ("fft crop axis 0", |xs| parts(fft::fft(&xs[0], Some(2), 0)?)),
        ("ifft of fft", |xs| {
            parts(fft::ifft(&generic(&xs[0], 4)?, Some(5), -1)?)
        }),
        ("fft of generic", |xs| {
            parts(fft::fft(&generic(&xs[0], 4)?, None, -1)?)
        }),
        ("fft2", |xs| parts(fft::fft2(&xs[0], Some(&[4, 5]), None)?)),
        ("ifftn", |xs| {
            parts(fft::ifftn(&xs[0], None, Some(&[1, 0]))?)
        }),
        ("rfft", |xs| parts(fft::rfft(&xs[0], None, -1)?)),
        ("rfft odd pad", |xs| parts(fft::rfft(&xs[0], Some(9), -1)?)),
        ("rfft axis 0", |xs| parts(fft::rfft(&xs[0], None, 0)?)),
        ("rfftn", |xs| parts(fft::rfftn(&xs[0], None, None)?)),
        ("rfft2 axes", |xs| {
            parts(fft::rfft2(&xs[0], Some(&[3, 6]), Some(&[1, 0]))?)
        }),
        ("irfft even", |xs| {
            Ok(vec![fft::irfft(&generic(&xs[0], 4)?, None, -1)?])
        }),
        ("irfft odd", |xs| {
            Ok(vec![fft::irfft(&generic(&xs[0], 4)?, Some(7), -1)?])
        }),
        ("irfft pad", |xs| {
            Ok(vec![fft::irfft(&generic(&xs[0], 4)?, Some(12), -1)?])
        }),
        ("irfft crop", |xs| {
            Ok(vec![fft::irfft(&generic(&xs[0], 4)?, Some(4), -1)?])
        }),
        ("irfftn", |xs| {
            Ok(vec![fft::irfftn(&generic(&xs[0], 3)?, None, None)?])
        }),
        ("irfft2 odd", |xs| {
            Ok(vec![fft::irfft2(
                &generic(&xs[0], 3)?,
                Some(&[2, 5]),
                None,
            )?])
        }),
        ("abs of fft", |xs| {
            Ok(vec![abs(&fft::fft(&xs[0], None, -1)?)?])
        }),
    ]
}

#[test]
fn fft_derivatives_match_finite_differences() {
    let mut rng = Rng::new(7);
    let x = rng.array(&[2, 9], -1.0, 1.0);
    for (i, (name, f)) in fft_cases().iter().enumerate() {
        let (eps, tol) = if name.starts_with("abs") {
            (1e-3, 1e-2)
        } else {
            (1e-2, 2e-3)
        };
        check_derivatives_with(name, f, &[x.clone()], i as u64, eps, tol);
    }
}

#[test]
fn fft_second_order_and_grad() {
    // d/dx sum(|fft(x)|^2) = 2 n x (Parseval).
    let x = Array::from_slice(&[0.5f64, -1.0, 2.0, 0.25, 1.5], &[5]).unwrap();
    let g = grad(
        |xs: &[Array]| {
            let y = fft::fft(&xs[0], None, -1)?;
            let a = abs(&y)?;
            Ok(vec![sum(&multiply(&a, &a)?, None, false)?])
        },
        &[0],
    )(&[x.clone()])
    .unwrap();
    let gv = g[0].to_vec::<f64>().unwrap();
    for (g, x) in gv.iter().zip(x.to_vec::<f64>().unwrap()) {
        assert!((g - 10.0 * x).abs() < 1e-4, "{g} vs {}", 10.0 * x);
    }
}

#[test]
fn fft_vmap_matches_a_loop() {
    let mut rng = Rng::new(8);
    let xb = rng.array(&[2, 3, 9], -1.0, 1.0);
    for (name, f) in fft_cases() {
        check_vmap_out(name, f, &[xb.clone()], &[Some(1)], 0);
        check_vmap_out(name, f, &[xb.clone()], &[Some(0)], 1);
    }
}

fn norm_cases() -> Vec<(&'static str, F)> {
    vec![
        ("norm default", |xs| {
            Ok(vec![norm(&xs[0], None, None, false)?])
        }),
        ("norm 2 axis", |xs| {
            Ok(vec![norm(&xs[0], None, Some(&[1]), true)?])
        }),
        ("norm 1", |xs| {
            Ok(vec![norm(
                &xs[0],
                Some(NormOrd::P(1.0)),
                Some(&[0]),
                false,
            )?])
        }),
        ("norm 3", |xs| {
            Ok(vec![norm(
                &xs[0],
                Some(NormOrd::P(3.0)),
                Some(&[-1]),
                false,
            )?])
        }),
        ("norm -1.5", |xs| {
            Ok(vec![norm(
                &xs[0],
                Some(NormOrd::P(-1.5)),
                Some(&[-1]),
                false,
            )?])
        }),
        ("norm inf", |xs| {
            Ok(vec![norm(
                &xs[0],
                Some(NormOrd::P(f64::INFINITY)),
                Some(&[1]),
                false,
            )?])
        }),
        ("norm fro", |xs| {
            Ok(vec![norm(
                &xs[0],
                Some(NormOrd::Fro),
                Some(&[0, 1]),
                false,
            )?])
        }),
        ("matrix norm 1", |xs| {
            Ok(vec![norm(
                &xs[0],
                Some(NormOrd::P(1.0)),
                Some(&[0, 1]),
                true,
            )?])
        }),
        ("matrix norm -inf", |xs| {
            Ok(vec![norm(
                &xs[0],
                Some(NormOrd::P(f64::NEG_INFINITY)),
                Some(&[1, 0]),
                false,
            )?])
        }),
        ("cross", |xs| {
            let b = multiply(&xs[0], &xs[0])?;
            Ok(vec![cross(&xs[0], &flip(&b)?, 0)?])
        }),
    ]
}

/// `x` reversed along its last axis (a view).
fn flip(x: &Array) -> Result<Array> {
    let nd = x.ndim();
    let mut start = vec![0isize; nd];
    let mut stop: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
    let mut step = vec![1isize; nd];
    start[nd - 1] = -1;
    stop[nd - 1] = -(x.shape()[nd - 1] as isize) - 1;
    step[nd - 1] = -1;
    slice(x, &start, &stop, &step)
}

#[test]
fn linalg_derivatives_and_vmap() {
    let mut rng = Rng::new(9);
    // Distinct magnitudes away from 0 so that max/min/abs are smooth.
    let x = Array::from_slice(&[0.9f64, -0.3, 0.55, -1.2, 0.7, 0.35], &[3, 2]).unwrap();
    for (i, (name, f)) in norm_cases().iter().enumerate() {
        check_derivatives_with(name, f, &[x.clone()], i as u64, 1e-6, 1e-5);
    }
    let xb = rng.array(&[3, 3, 2], 0.1, 1.0);
    for (name, f) in norm_cases() {
        check_vmap_out(name, f, &[xb.clone()], &[Some(0)], 0);
        check_vmap_out(name, f, &[xb.clone()], &[Some(2)], 0);
    }
}

/// A well-conditioned matrix (batch) from `x`: `x + 3 I`.
fn shifted_identity(x: &Array) -> Result<Array> {
    let n = x.shape()[x.ndim() - 1];
    add(
        x,
        &multiply(&eye(n, None, 0, DType::Float64)?, &Array::scalar(3.0f64))?,
    )
}

fn solver_cases() -> Vec<(&'static str, F)> {
    vec![
        ("inv", |xs| {
            Ok(vec![linalg::inv(&shifted_identity(&xs[0])?)?])
        }),
        ("inv of inv", |xs| {
            Ok(vec![linalg::inv(&linalg::inv(&shifted_identity(
                &xs[0],
            )?)?)?])
        }),
        ("solve vector", |xs| {
            let b = sum(&xs[0], Some(&[-1]), false)?;
            let b = reshape(&b, &[-1])?;
            let n = xs[0].shape()[xs[0].ndim() - 1] as isize;
            let b = slice(&b, &[0], &[n], &[1])?;
            Ok(vec![linalg::solve(&shifted_identity(&xs[0])?, &b)?])
        }),
        ("solve matrix", |xs| {
            Ok(vec![linalg::solve(&shifted_identity(&xs[0])?, &xs[0])?])
        }),
        ("cholesky of x x^T + 3 I", |xs| {
            let s = matmul(&xs[0], &swapaxes(&xs[0], -1, -2)?)?;
            Ok(vec![linalg::cholesky(&shifted_identity(&s)?, false)?])
        }),
        // Unsymmetric input: only the named triangle is read.
        ("cholesky lower", |xs| {
            Ok(vec![linalg::cholesky(&shifted_identity(&xs[0])?, false)?])
        }),
        ("cholesky upper", |xs| {
            Ok(vec![linalg::cholesky(&shifted_identity(&xs[0])?, true)?])
        }),
        ("tri_inv", |xs| {
            Ok(vec![linalg::tri_inv(&shifted_identity(&xs[0])?, false)?])
        }),
        ("solve_triangular upper", |xs| {
            Ok(vec![linalg::solve_triangular(
                &shifted_identity(&xs[0])?,
                &xs[0],
                true,
            )?])
        }),
    ]
}

#[test]
fn inv_and_solve_derivatives_and_vmap() {
    let mut rng = Rng::new(10);
    let x = rng.array(&[3, 3], -1.0, 1.0);
    for (i, (name, f)) in solver_cases().iter().enumerate() {
        check_derivatives_with(name, f, &[x.clone()], i as u64, 1e-6, 1e-5);
    }
    let xb = rng.array(&[3, 3, 3], -1.0, 1.0);
    for (name, f) in solver_cases() {
        check_vmap_out(name, f, &[xb.clone()], &[Some(0)], 0);
        check_vmap_out(name, f, &[xb.clone()], &[Some(2)], 1);
    }
}
