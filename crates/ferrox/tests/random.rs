//! ferrox::random: Threefry known answers, determinism, statistics with
//! fixed keys, transforms (vmap over keys, compile, grad) and the per-thread
//! default key.

mod common;

use common::{join_within, watchdog};
use ferrox::random::{self, threefry2x32};
use ferrox::*;
use std::sync::{Arc, Barrier};

fn k(seed: u64) -> Array {
    random::key(seed).unwrap()
}

fn f64s(a: &Array) -> Vec<f64> {
    a.astype(DType::Float64).unwrap().to_vec::<f64>().unwrap()
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (m, v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n)
}

/// The Kolmogorov–Smirnov distance between the sample and `cdf`.
fn ks(v: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len() as f64;
    s.iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = cdf(x);
            (f - i as f64 / n).abs().max((f - (i + 1) as f64 / n).abs())
        })
        .fold(0.0, f64::max)
}

/// erf to about 1e-7 (Abramowitz & Stegun 7.1.26), enough for KS tests.
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    y.copysign(x)
}

fn normal_cdf(x: f64) -> f64 {
    0.5 * (1.0 + erf(x / std::f64::consts::SQRT_2))
}

#[test]
fn threefry_matches_the_random123_known_answers() {
    assert_eq!(threefry2x32([0, 0], [0, 0]), [0x6b20_0159, 0x99ba_4efe]);
    assert_eq!(
        threefry2x32([u32::MAX; 2], [u32::MAX; 2]),
        [0x1cb9_96fc, 0xbb00_2be7]
    );
    assert_eq!(
        threefry2x32([0x1319_8a2e, 0x0370_7344], [0x243f_6a88, 0x85a3_08d3]),
        [0xc492_3a9c, 0x483d_f7a0]
    );
}

#[test]
fn bits_pair_words_half_the_output_apart() -> Result<()> {
    // Six words: the block at counter [j, j + 3] gives words j and j + 3.
    let b = random::bits(&[6], 4, Some(&k(0x1_0000_0002)))?.to_vec::<u32>()?;
    for j in 0..3u32 {
        let [x, y] = threefry2x32([1, 2], [j, j + 3]);
        assert_eq!([b[j as usize], b[j as usize + 3]], [x, y]);
    }
    // mlx: split(key(42)).
    assert_eq!(
        random::split(&k(42), 2)?.to_vec::<u32>()?,
        [2_465_931_498, 3_679_230_171, 255_383_827, 267_815_257]
    );
    Ok(())
}

/// The bytes of `key`'s output of `bytes` bytes, one word at a time: `w`
/// words, pairs `[i, i + c]` for `i < w / 2` (`c = w - w / 2`), the middle
/// word of an odd count from the counter `[w / 2, 0]`.
fn naive_bytes(key: [u32; 2], bytes: usize) -> Vec<u8> {
    let w = bytes.div_ceil(4);
    let (h, c) = (w / 2, w - w / 2);
    let word = |i: usize| -> u32 {
        if i < h {
            threefry2x32(key, [i as u32, (i + c) as u32])[0]
        } else if i >= c {
            threefry2x32(key, [(i - c) as u32, i as u32])[1]
        } else {
            threefry2x32(key, [h as u32, 0])[0]
        }
    };
    let mut out: Vec<u8> = (0..w).flat_map(|i| word(i).to_le_bytes()).collect();
    out.truncate(bytes);
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    #[test]
    fn bits_equal_the_naive_word_layout(
        seed in proptest::prelude::any::<u64>(),
        shape in proptest::collection::vec(0usize..7, 0..4),
        width in proptest::sample::select(vec![1usize, 2, 4, 8]),
    ) {
        let b = random::bits(&shape, width, Some(&k(seed))).unwrap();
        let n: usize = shape.iter().product();
        let want = naive_bytes([(seed >> 32) as u32, seed as u32], n * width);
        let got: Vec<u8> = match width {
            1 => b.to_vec::<u8>().unwrap(),
            2 => b.to_vec::<u16>().unwrap().iter().flat_map(|v| v.to_le_bytes()).collect(),
            4 => b.to_vec::<u32>().unwrap().iter().flat_map(|v| v.to_le_bytes()).collect(),
            _ => b.to_vec::<u64>().unwrap().iter().flat_map(|v| v.to_le_bytes()).collect(),
        };
        proptest::prop_assert_eq!(b.shape(), shape.as_slice());
        proptest::prop_assert_eq!(got, want);
    }
}

#[test]
fn empty_draws_have_empty_shapes() -> Result<()> {
    let key = k(0);
    assert_eq!(
        random::uniform(0.0, 1.0, &[0, 3], DType::Float32, Some(&key))?.to_vec::<f32>()?,
        Vec::<f32>::new()
    );
    assert_eq!(
        random::permutation(0, Some(&key))?.to_vec::<u32>()?,
        Vec::<u32>::new()
    );
    assert_eq!(random::split(&key, 0)?.shape(), &[0, 2]);
    assert_eq!(
        random::randint(0, 3, &[0], DType::Int32, Some(&key))?.size(),
        0
    );
    Ok(())
}

#[test]
fn same_key_same_bits_and_different_keys_differ() -> Result<()> {
    let a = random::bits(&[1000], 4, Some(&k(1)))?.to_vec::<u32>()?;
    let b = random::bits(&[1000], 4, Some(&k(1)))?.to_vec::<u32>()?;
    let c = random::bits(&[1000], 4, Some(&k(2)))?.to_vec::<u32>()?;
    assert_eq!(a, b);
    assert_ne!(a, c);
    let ks = random::split(&k(1), 4)?;
    assert_eq!(ks.shape(), &[4, 2]);
    let kv = ks.to_vec::<u32>()?;
    let mut draws = vec![a];
    for i in 0..4 {
        let ki = Array::from_slice(&kv[2 * i..2 * i + 2], &[2])?;
        draws.push(random::bits(&[1000], 4, Some(&ki))?.to_vec::<u32>()?);
    }
    for i in 0..draws.len() {
        for j in i + 1..draws.len() {
            assert_ne!(draws[i], draws[j], "draws {i} and {j}");
        }
    }
    // As in MLX, split(key, n) is not a prefix of split(key, n + 1): the
    // layout of the words depends on how many there are.
    assert_ne!(random::split(&k(1), 3)?.to_vec::<u32>()?, kv[..6]);
    Ok(())
}

#[test]
fn seeded_default_draws_are_mlx_draws() -> Result<()> {
    // mlx: mx.random.seed(42); mx.random.normal((4,)).
    random::seed(42);
    let z = random::normal(&[4], DType::Float32, 0.0, 1.0, None)?.to_vec::<f32>()?;
    assert_eq!(z, [-0.567_550_06, 0.885_630_85, -0.932_060_4, 1.464_116_6]);
    Ok(())
}

#[test]
fn uniform_has_the_moments_and_cdf_of_uniform() -> Result<()> {
    let n = 1 << 20;
    let u = f64s(&random::uniform(
        0.0,
        1.0,
        &[n],
        DType::Float32,
        Some(&k(11)),
    )?);
    let (m, v) = mean_var(&u);
    assert!((m - 0.5).abs() < 2e-3, "mean {m}");
    assert!((v - 1.0 / 12.0).abs() < 1e-3, "variance {v}");
    let d = ks(&u, |x| x.clamp(0.0, 1.0));
    assert!(d < 2.0 / (n as f64).sqrt(), "KS {d}");
    // Scaled bounds.
    let s = f64s(&random::uniform(
        -3.0,
        5.0,
        &[n],
        DType::Float64,
        Some(&k(12)),
    )?);
    let d = ks(&s, |x| ((x + 3.0) / 8.0).clamp(0.0, 1.0));
    assert!(d < 2.0 / (n as f64).sqrt(), "KS {d}");
    Ok(())
}

#[test]
fn uniform_stays_in_low_high_for_every_float_dtype() -> Result<()> {
    // As in MLX, `(high - low) * u + low` is not clamped: bounds where it
    // rounds up to `high` (the `true` cases) reach `high`.
    let cases: &[(f64, f64, DType, bool)] = &[
        (1000.0, 1001.0, DType::Float16, true),
        (1.0, 2.0, DType::Float16, true),
        (-1.0, 0.0, DType::Float16, false),
        (250.0, 251.0, DType::BFloat16, true),
        (-2.0, 3.0, DType::BFloat16, false),
        (1.0, 2.0, DType::Float32, false),
        (16_777_216.0, 16_777_218.0, DType::Float32, true),
        (1.0, 2.0, DType::Float64, false),
        (0.0, 1.0, DType::Float64, false),
    ];
    for &(lo, hi, dt, reaches_high) in cases {
        let lo_a = Array::scalar(lo).astype(dt)?;
        let hi_a = Array::scalar(hi).astype(dt)?;
        let u = random::uniform(&lo_a, &hi_a, &[1 << 16], dt, Some(&k(13)))?;
        assert_eq!(u.dtype(), dt);
        let v = f64s(&u);
        let (min, max) = v
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        assert!(
            min >= lo && (max < hi || (reaches_high && max == hi)),
            "{dt}: [{min}, {max}] not in [{lo}, {hi})"
        );
    }
    // Array bounds broadcast against the shape.
    let lo = Array::from_slice(&[0.0f32, 10.0, 100.0], &[3])?;
    let u = random::uniform(&lo, &(&lo + 1.0)?, &[500, 3], DType::Float32, Some(&k(14)))?;
    for row in u.to_vec::<f32>()?.chunks(3) {
        assert!((0.0..1.0).contains(&row[0]) && (10.0..11.0).contains(&row[1]));
        assert!((100.0..101.0).contains(&row[2]));
    }
    // low == high gives low.
    let same = random::uniform(2.0, 2.0, &[10], DType::Float32, Some(&k(1)))?;
    assert_eq!(same.to_vec::<f32>()?, vec![2.0; 10]);
    Ok(())
}

#[test]
fn normal_has_the_moments_and_cdf_of_a_normal() -> Result<()> {
    let n = 1 << 20;
    let z = f64s(&random::normal(
        &[n],
        DType::Float32,
        0.0,
        1.0,
        Some(&k(21)),
    )?);
    let (m, v) = mean_var(&z);
    assert!(m.abs() < 4e-3, "mean {m}");
    assert!((v - 1.0).abs() < 6e-3, "variance {v}");
    assert!(z.iter().all(|x| x.is_finite()));
    let d = ks(&z, normal_cdf);
    assert!(d < 2.0 / (n as f64).sqrt(), "KS {d}");
    let y = f64s(&random::normal(
        &[n],
        DType::Float64,
        3.0,
        2.0,
        Some(&k(22)),
    )?);
    let d = ks(&y, |x| normal_cdf((x - 3.0) / 2.0));
    assert!(d < 2.0 / (n as f64).sqrt(), "KS {d}");
    for dt in [DType::Float16, DType::BFloat16] {
        let h = random::normal(&[1 << 14], dt, 0.0, 1.0, Some(&k(23)))?;
        assert_eq!(h.dtype(), dt);
        let (m, v) = mean_var(&f64s(&h));
        assert!(m.abs() < 0.05 && (v - 1.0).abs() < 0.05, "{dt}: {m} {v}");
    }
    Ok(())
}

#[test]
fn randint_covers_its_range_and_stays_inside() -> Result<()> {
    let r = random::randint(-5, 5, &[100_000], DType::Int32, Some(&k(31)))?.to_vec::<i32>()?;
    let mut counts = [0usize; 10];
    for &x in &r {
        assert!((-5..5).contains(&x), "{x}");
        counts[(x + 5) as usize] += 1;
    }
    for c in counts {
        assert!((9_000..11_000).contains(&c), "{counts:?}");
    }
    let b = random::randint(0, 256, &[10_000], DType::UInt8, Some(&k(32)))?.to_vec::<u8>()?;
    let mut seen = [false; 256];
    b.iter().for_each(|&x| seen[x as usize] = true);
    assert!(seen.iter().all(|&s| s));
    // The whole int64 range is reachable without overflow (to float32's
    // resolution, as in MLX).
    let lo = Array::scalar(i64::MIN);
    let hi = Array::scalar(i64::MAX);
    let w = random::randint(&lo, &hi, &[1000], DType::Int64, Some(&k(33)))?.to_vec::<i64>()?;
    assert!(w.iter().any(|&x| x < 0) && w.iter().any(|&x| x > 0));
    // Array bounds.
    let lo = Array::from_slice(&[0i32, 100], &[2])?;
    let hi = Array::from_slice(&[3i32, 102], &[2])?;
    let v = random::randint(&lo, &hi, &[1000, 2], DType::Int32, Some(&k(34)))?.to_vec::<i32>()?;
    for p in v.chunks(2) {
        assert!((0..3).contains(&p[0]) && (100..102).contains(&p[1]));
    }
    Ok(())
}

#[test]
fn bernoulli_frequency_matches_p() -> Result<()> {
    let n = 1 << 20;
    let b = random::bernoulli(0.3, Some(&[n]), Some(&k(41)))?.to_vec::<bool>()?;
    let f = b.iter().filter(|&&x| x).count() as f64 / n as f64;
    assert!((f - 0.3).abs() < 3e-3, "{f}");
    let p = Array::from_slice(&[0.0f32, 1.0, 0.5], &[3])?;
    let b = random::bernoulli(&p, Some(&[1000, 3]), Some(&k(42)))?.to_vec::<bool>()?;
    for row in b.chunks(3) {
        assert!(!row[0] && row[1]);
    }
    assert_eq!(random::bernoulli(&p, None, Some(&k(1)))?.shape(), &[3]);
    Ok(())
}

#[test]
fn categorical_frequencies_match_softmax() -> Result<()> {
    let logits = [1.0f32, 2.0, 0.5, -1.0];
    let l = Array::from_slice(&logits, &[4])?;
    let n = 200_000;
    let s = random::categorical(&l, 0, Some(&[n]), None, Some(&k(51)))?;
    assert_eq!(s.dtype(), DType::UInt32);
    let mut counts = [0usize; 4];
    for c in s.to_vec::<u32>()? {
        counts[c as usize] += 1;
    }
    let z: f64 = logits.iter().map(|&x| f64::from(x).exp()).sum();
    for (i, &c) in counts.iter().enumerate() {
        let p = f64::from(logits[i]).exp() / z;
        let f = c as f64 / n as f64;
        assert!((f - p).abs() < 0.01, "class {i}: {f} vs {p}");
    }
    // Batched distributions along axis 0, with num_samples.
    let l2 = Array::from_slice(
        &[0.0f32, f32::NEG_INFINITY, f32::NEG_INFINITY, 0.0],
        &[2, 2],
    )?;
    let s = random::categorical(&l2, 0, None, Some(100), Some(&k(52)))?;
    assert_eq!(s.shape(), &[2, 100]);
    let v = s.to_vec::<u32>()?;
    assert!(v[..100].iter().all(|&c| c == 0) && v[100..].iter().all(|&c| c == 1));
    assert_eq!(
        random::categorical(&l2, -1, None, None, Some(&k(1)))?.shape(),
        &[2]
    );
    Ok(())
}

#[test]
fn truncated_normal_stays_within_its_bounds() -> Result<()> {
    let n = 1 << 18;
    for dt in [DType::Float32, DType::Float16, DType::Float64] {
        let t = f64s(&random::truncated_normal(
            -1.0,
            2.0,
            Some(&[n]),
            dt,
            Some(&k(61)),
        )?);
        assert!(t.iter().all(|&x| (-1.0..=2.0).contains(&x)), "{dt}");
    }
    let t = f64s(&random::truncated_normal(
        -1.5,
        1.5,
        Some(&[n]),
        DType::Float32,
        Some(&k(62)),
    )?);
    let (m, _) = mean_var(&t);
    assert!(m.abs() < 0.01, "{m}");
    let z = normal_cdf(1.5) - normal_cdf(-1.5);
    let d = ks(&t, |x| (normal_cdf(x) - normal_cdf(-1.5)) / z);
    assert!(d < 2.0 / (n as f64).sqrt(), "KS {d}");
    // Far in one tail.
    let far = f64s(&random::truncated_normal(
        4.0,
        5.0,
        Some(&[1000]),
        DType::Float32,
        Some(&k(63)),
    )?);
    assert!(far.iter().all(|&x| (4.0..=5.0).contains(&x)));
    Ok(())
}

#[test]
fn multivariate_normal_has_the_mean_and_covariance_asked_for() -> Result<()> {
    let mean = Array::from_slice(&[1.0f32, -2.0, 0.5], &[3])?;
    let c = [2.0f32, 0.6, -0.3, 0.6, 1.0, 0.2, -0.3, 0.2, 0.5];
    let cov = Array::from_slice(&c, &[3, 3])?;
    let n = 200_000;
    let x = random::multivariate_normal(&mean, &cov, &[n], DType::Float32, Some(&k(101)))?;
    assert_eq!(x.shape(), &[n, 3]);
    let v = f64s(&x);
    let m: Vec<f64> = (0..3)
        .map(|j| v.iter().skip(j).step_by(3).sum::<f64>() / n as f64)
        .collect();
    for (j, want) in [1.0, -2.0, 0.5].iter().enumerate() {
        assert!((m[j] - want).abs() < 0.02, "mean {m:?}");
    }
    for a in 0..3 {
        for b in 0..3 {
            let s: f64 = v
                .chunks(3)
                .map(|r| (r[a] - m[a]) * (r[b] - m[b]))
                .sum::<f64>()
                / n as f64;
            assert!(
                (s - f64::from(c[3 * a + b])).abs() < 0.03,
                "cov[{a}][{b}] = {s}"
            );
        }
    }
    // Batched means, a singular covariance, and a failing one.
    let means = Array::from_slice(&[0.0f64, 0.0, 10.0, 10.0], &[2, 2])?;
    let singular = Array::from_slice(&[1.0f64, 1.0, 1.0, 1.0], &[2, 2])?;
    let y = random::multivariate_normal(&means, &singular, &[], DType::Float64, Some(&k(102)))?;
    assert_eq!(y.shape(), &[2, 2]);
    let y = y.to_vec::<f64>()?;
    assert!(
        (y[0] - y[1]).abs() < 1e-9 && (y[2] - y[3]).abs() < 1e-9,
        "{y:?}"
    );
    let indefinite = Array::from_slice(&[1.0f32, 2.0, 2.0, 1.0], &[2, 2])?;
    let m2 = Array::from_slice(&[0.0f32, 0.0], &[2])?;
    let e = random::multivariate_normal(&m2, &indefinite, &[4], DType::Float32, Some(&k(1)))?
        .eval()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("multivariate_normal") && e.contains("semi-definite"),
        "{e}"
    );
    let e = random::multivariate_normal(&m2, &cov, &[4], DType::Float32, Some(&k(1)))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("multivariate_normal:") && e.contains("[3, 3]"),
        "{e}"
    );
    Ok(())
}

#[test]
fn gumbel_has_the_mean_of_a_gumbel() -> Result<()> {
    let g = f64s(&random::gumbel(&[1 << 20], DType::Float32, Some(&k(71)))?);
    assert!(g.iter().all(|x| x.is_finite()));
    let (m, v) = mean_var(&g);
    assert!((m - 0.577_215_66).abs() < 5e-3, "{m}");
    let pi2_6 = std::f64::consts::PI.powi(2) / 6.0;
    assert!((v - pi2_6).abs() < 2e-2, "{v}");
    Ok(())
}

#[test]
fn permutation_is_a_permutation() -> Result<()> {
    let p = random::permutation(1000, Some(&k(81)))?.to_vec::<u32>()?;
    let mut s = p.clone();
    s.sort();
    assert_eq!(s, (0..1000).collect::<Vec<_>>());
    assert_ne!(p, (0..1000).collect::<Vec<_>>());
    let x = arange(0.0, 12.0, 1.0, DType::Float32)?.reshape(&[3, 4])?;
    let y = random::permutation_of(&x, 1, Some(&k(82)))?.to_vec::<f32>()?;
    // Columns move together: every row is the first row plus 4 * row.
    for r in 1..3 {
        for c in 0..4 {
            assert_eq!(y[4 * r + c], y[c] + 4.0 * r as f32);
        }
    }
    Ok(())
}

#[test]
fn vmap_over_split_keys_equals_a_loop() -> Result<()> {
    let keys = random::split(&k(91), 5)?;
    let kv = keys.to_vec::<u32>()?;
    let samplers: Vec<fn(&Array) -> Result<Array>> = vec![
        |k| random::uniform(0.0, 1.0, &[7], DType::Float32, Some(k)),
        |k| random::normal(&[2, 3], DType::Float16, 0.0, 1.0, Some(k)),
        |k| random::randint(0, 10, &[4], DType::Int32, Some(k)),
        |k| random::bernoulli(0.5, Some(&[6]), Some(k)),
        |k| random::gumbel(&[3], DType::Float32, Some(k)),
        |k| random::truncated_normal(-1.0, 1.0, Some(&[3]), DType::Float32, Some(k)),
        |k| random::permutation(8, Some(k)),
        |k| {
            let l = Array::from_slice(&[0.1f32, 0.5, 0.2, 1.0, 0.0, -1.0], &[2, 3])?;
            random::categorical(&l, -1, None, Some(4), Some(k))
        },
        |k| random::split(k, 3),
        |k| {
            let mean = Array::from_slice(&[0.0f32, 1.0], &[2])?;
            let cov = Array::from_slice(&[1.0f32, 0.3, 0.3, 0.5], &[2, 2])?;
            random::multivariate_normal(&mean, &cov, &[3], DType::Float32, Some(k))
        },
    ];
    for (i, f) in samplers.into_iter().enumerate() {
        let batched = vmap(move |xs| Ok(vec![f(&xs[0])?]), &[Some(0)], &[Some(0)])(
            std::slice::from_ref(&keys),
        )?;
        let batched = batched[0].astype(DType::Float64)?.to_vec::<f64>()?;
        let mut looped = vec![];
        for j in 0..5 {
            let kj = Array::from_slice(&kv[2 * j..2 * j + 2], &[2])?;
            looped.extend(f(&kj)?.astype(DType::Float64)?.to_vec::<f64>()?);
        }
        assert_eq!(batched, looped, "sampler {i}");
    }
    // Keys batched along their last axis.
    let kt = keys.transpose(None)?;
    let b = vmap(
        |xs| Ok(vec![random::bits(&[3], 4, Some(&xs[0]))?]),
        &[Some(1)],
        &[Some(0)],
    )(&[kt])?;
    assert_eq!(
        b[0].to_vec::<u32>()?,
        random::bits(&[3], 4, Some(&keys))?.to_vec::<u32>()?
    );
    Ok(())
}

#[test]
fn compiled_sampling_with_a_key_equals_uncompiled_bitwise() -> Result<()> {
    let f = |xs: &[Array]| -> Result<Vec<Array>> {
        let ks = random::split(&xs[0], 2)?;
        let k0 = take(&ks, &Array::scalar(0u32), Some(0))?;
        let k1 = take(&ks, &Array::scalar(1u32), Some(0))?;
        let u = random::uniform(-1.0, 1.0, &[64], DType::Float32, Some(&k0))?;
        let z = random::normal(&[64], DType::Float32, 0.0, 2.0, Some(&k1))?;
        let r = random::randint(0, 7, &[64], DType::Int32, Some(&k1))?;
        Ok(vec![add(&multiply(&u, &z)?, &xs[1])?, r])
    };
    let cf = compile(f);
    let x = ones(&[64], DType::Float32)?;
    for seed in [0u64, 1, 99] {
        let key = k(seed);
        let want = f(&[key.clone(), x.clone()])?;
        let got = cf.call(&[key, x.clone()])?;
        for (a, b) in want.iter().zip(&got) {
            assert!(array_equal(a, b, false)?.item::<bool>()?, "seed {seed}");
        }
    }
    Ok(())
}

/// Draws of the default key inside `compile`: fresh numbers at every call,
/// the same numbers as the uncompiled function after the same seed (the
/// draws take the calling thread's keys in order, and tracing draws none),
/// one trace shared by threads that each draw from their own key.
#[test]
fn compiled_draws_without_a_key_follow_the_callers_default_key() -> Result<()> {
    let f = |xs: &[Array]| -> Result<Vec<Array>> {
        let u = random::uniform(0.0, 1.0, &[8], DType::Float32, None)?;
        let n = random::normal(&[8], DType::Float32, 0.0, 1.0, None)?;
        Ok(vec![add(&multiply(&u, &xs[0])?, &n)?])
    };
    let cf = compile(f);
    let x = full(&[8], 2.0, DType::Float32)?;
    let run = |g: &dyn Fn() -> Result<Vec<Array>>| -> Result<Vec<f32>> { g()?[0].to_vec::<f32>() };
    let (a, b) = (
        run(&|| cf.call(std::slice::from_ref(&x)))?,
        run(&|| cf.call(std::slice::from_ref(&x)))?,
    );
    assert_ne!(a, b, "two calls drew the same numbers");
    for s in [3u64, 4] {
        random::seed(s);
        let compiled = run(&|| cf.call(std::slice::from_ref(&x)))?;
        let after_compiled = random::current_key()?.to_vec::<u32>()?;
        random::seed(s);
        let plain = run(&|| f(std::slice::from_ref(&x)))?;
        assert_eq!(compiled, plain, "seed {s}");
        assert_eq!(after_compiled, random::current_key()?.to_vec::<u32>()?);
    }
    // Tracing draws nothing: a fresh function's first call after seed(s)
    // equals the uncompiled draw after seed(s).
    let fresh = compile(f);
    random::seed(9);
    let first = run(&|| fresh.call(std::slice::from_ref(&x)))?;
    random::seed(9);
    assert_eq!(first, run(&|| f(std::slice::from_ref(&x)))?);
    // Threads share the trace and draw from their own keys.
    let barrier = Arc::new(Barrier::new(4));
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            let (cf, x, barrier) = (cf.clone(), x.clone(), barrier.clone());
            std::thread::spawn(move || -> Result<(Vec<f32>, Vec<f32>)> {
                random::seed(100 + t % 2);
                barrier.wait();
                let got = cf.call(std::slice::from_ref(&x))?[0].to_vec::<f32>()?;
                random::seed(100 + t % 2);
                Ok((got, f(&[x])?[0].to_vec::<f32>()?))
            })
        })
        .collect();
    let results: Vec<_> = handles
        .into_iter()
        .map(|h| join_within(60, h))
        .collect::<Result<_>>()?;
    for (got, want) in &results {
        assert_eq!(got, want);
    }
    assert_eq!(results[0].0, results[2].0);
    assert_ne!(results[0].0, results[1].0);
    assert_eq!(cf.traces(), 1);
    Ok(())
}

#[test]
fn gradients_flow_around_random_draws() -> Result<()> {
    // d/dx sum(x * noise) = noise; the key gets a zero cotangent.
    let key = k(5);
    let noise = random::normal(&[4], DType::Float32, 0.0, 1.0, Some(&key))?;
    let g = grad(
        |xs: &[Array]| {
            let n = random::normal(&[4], DType::Float32, 0.0, 1.0, Some(&xs[1]))?;
            Ok(vec![sum(&multiply(&xs[0], &n)?, None, false)?])
        },
        &[0, 1],
    );
    let gs = g(&[ones(&[4], DType::Float32)?, key.clone()])?;
    assert_eq!(gs[0].to_vec::<f32>()?, noise.to_vec::<f32>()?);
    assert_eq!(gs[1].shape(), &[2]);
    // Forward mode: the tangent of x * noise along ones is the noise.
    let (_, t) = jvp(
        move |xs: &[Array]| {
            let n = random::normal(&[4], DType::Float32, 0.0, 1.0, Some(&key))?;
            Ok(vec![multiply(&xs[0], &n)?])
        },
        &[ones(&[4], DType::Float32)?],
        &[ones(&[4], DType::Float32)?],
    )?;
    assert_eq!(t[0].to_vec::<f32>()?, noise.to_vec::<f32>()?);
    Ok(())
}

#[test]
fn bad_input_is_an_error_naming_the_op_and_values() -> Result<()> {
    let key = k(0);
    let msg = |r: Result<Array>| r.err().map(|e| e.to_string()).unwrap_or_default();
    let m = msg(random::uniform(3.0, 1.0, &[2], DType::Float32, Some(&key)));
    assert!(
        m.starts_with("uniform:") && m.contains('3') && m.contains('1'),
        "{m}"
    );
    let m = msg(random::uniform(0.0, 1.0, &[2], DType::Int32, Some(&key)));
    assert!(m.starts_with("uniform:") && m.contains("int32"), "{m}");
    let fkey = zeros(&[2], DType::Float32)?;
    let m = msg(random::normal(&[2], DType::Float32, 0.0, 1.0, Some(&fkey)));
    assert!(m.starts_with("normal:") && m.contains("uint32"), "{m}");
    let k3 = zeros(&[3], DType::UInt32)?;
    let m = msg(random::gumbel(&[2], DType::Float32, Some(&k3)));
    assert!(m.starts_with("gumbel:") && m.contains("[3]"), "{m}");
    let m = msg(random::randint(0, 300, &[2], DType::UInt8, Some(&key)));
    assert!(m.starts_with("randint:") && m.contains("300"), "{m}");
    let m = msg(random::bernoulli(0, None, Some(&key)));
    assert!(m.starts_with("bernoulli:") && m.contains("int32"), "{m}");
    let m = msg(random::multivariate_normal(
        &zeros(&[2], DType::Float32)?,
        &eye(2, None, 0, DType::Float32)?,
        &[],
        DType::Float16,
        Some(&key),
    ));
    assert!(
        m.starts_with("multivariate_normal:") && m.contains("float16"),
        "{m}"
    );
    let m = msg(random::bernoulli(-0.5, None, Some(&key)));
    assert!(m.starts_with("bernoulli:") && m.contains("-0.5"), "{m}");
    let m = msg(random::bernoulli(
        0.5,
        Some(&[]),
        Some(&random::split(&key, 2)?),
    ));
    assert!(m.starts_with("bernoulli:") && m.contains("[2, 2]"), "{m}");
    let l = ones(&[3], DType::Float32)?;
    let m = msg(random::categorical(&l, 2, None, None, Some(&key)));
    assert!(m.starts_with("categorical:") && m.contains('2'), "{m}");
    let m = msg(random::categorical(&l, 0, Some(&[2]), Some(2), Some(&key)));
    assert!(m.starts_with("categorical:"), "{m}");
    let m = msg(random::permutation_of(
        &Array::scalar(1.0f32),
        0,
        Some(&key),
    ));
    assert!(m.starts_with("permutation:"), "{m}");
    let m = msg(random::uniform(
        0.0,
        Array::from_slice(&[1.0f32, 2.0], &[2])?,
        &[3],
        DType::Float32,
        Some(&key),
    ));
    assert!(m.starts_with("uniform:") && m.contains("[3]"), "{m}");
    // Empty intervals are not errors: they give the lower bound, as in MLX.
    let low = random::randint(5, 1, &[2], DType::Int32, Some(&key))?;
    assert_eq!(low.to_vec::<i32>()?, [5, 5]);
    let low = random::truncated_normal(2.0, 1.0, None, DType::Float32, Some(&key))?;
    assert_eq!(low.to_vec::<f32>()?, [2.0]);
    let m = msg(random::bits(&[2], 3, Some(&key)));
    assert!(m.starts_with("bits:") && m.contains('3'), "{m}");
    Ok(())
}

#[test]
fn default_draws_after_seed_are_draws_with_split_keys() -> Result<()> {
    let row = |ks: &Array, i: u32| take(ks, &Array::scalar(i), Some(0));
    random::seed(3);
    let a = random::bits(&[4], 4, None)?.to_vec::<u32>()?;
    let b = random::bits(&[4], 4, None)?.to_vec::<u32>()?;
    let ks = random::split(&k(3), 2)?;
    let want_a = random::bits(&[4], 4, Some(&row(&ks, 1)?))?.to_vec::<u32>()?;
    let next = random::split(&row(&ks, 0)?, 2)?;
    let want_b = random::bits(&[4], 4, Some(&row(&next, 1)?))?.to_vec::<u32>()?;
    assert_eq!((a, b), (want_a, want_b));
    Ok(())
}

/// Each of two barrier-started threads draws with the default key.
fn two_threads(seed: Option<u64>) -> [Vec<f32>; 2] {
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                if let Some(s) = seed {
                    random::seed(s);
                }
                let a = random::uniform(0.0, 1.0, &[8], DType::Float32, None).unwrap();
                let b = random::normal(&[8], DType::Float32, 0.0, 1.0, None).unwrap();
                let mut v = a.to_vec::<f32>().unwrap();
                v.extend(b.to_vec::<f32>().unwrap());
                v
            })
        })
        .collect();
    let mut out = handles.into_iter().map(|h| join_within(60, h));
    [out.next().unwrap(), out.next().unwrap()]
}

#[test]
fn fresh_threads_draw_different_numbers() {
    watchdog(120, || {
        for _ in 0..5 {
            let [a, b] = two_threads(None);
            assert_ne!(a, b);
        }
    });
}

#[test]
fn seeded_threads_draw_the_same_numbers() {
    watchdog(120, || {
        for _ in 0..5 {
            let [a, b] = two_threads(Some(7));
            assert_eq!(a, b);
            // Successive draws on one thread differ.
            assert_ne!(a[..8], a[8..]);
        }
        // Seeding one thread leaves another thread's key alone.
        random::seed(7);
        let here = random::uniform(0.0, 1.0, &[8], DType::Float32, None).unwrap();
        let [a, _] = two_threads(Some(7));
        assert_eq!(here.to_vec::<f32>().unwrap(), a[..8]);
    });
}
