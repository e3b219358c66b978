//! Random keys and draws. Keys are explicit arrays (threefry, MLX's bits);
//! a NULL key splits the calling thread's default key (two words, seeded
//! from the process seed and the thread's order, reset by
//! [`ferrox_random_seed`]; compile records it as implicit state). A caller
//! whose work hops threads and must be reproducible passes explicit keys.

use ferrox::random;

use crate::array::{dtype_of, ferrox_array, ferrox_dtype, raw_slice, sizes};
use crate::error::{ferrox_error, ferrox_status, guard, CError, CResult};
use crate::handle::{arg, check_slot, opt_arg, put, Slot};
use crate::ops::{opt_sizes, respond};
use crate::stream::{ferrox_stream, stream_of};

fn key_of<'a>(
    key: Option<&'a ferrox_array>,
    op: &str,
) -> crate::error::CResult<Option<&'a ferrox::Array>> {
    Ok(opt_arg(key, op, "key")?.map(|k| &k.array))
}

/// A key (a uint32 array of shape `[2]`) from `seed`.
#[no_mangle]
pub extern "C" fn ferrox_random_key(
    res: Option<&mut Option<Box<ferrox_array>>>,
    seed: u64,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_random_key";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        put(res, ferrox_array::new(random::key(seed)?));
        Ok(())
    })
}

/// Splits `key` into `num` new keys (shape `[num, 2]`).
#[no_mangle]
pub extern "C" fn ferrox_random_split(
    res: Option<&mut Option<Box<ferrox_array>>>,
    key: Option<&ferrox_array>,
    num: i32,
    s: Option<&ferrox_stream>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_random_split";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let key = &arg(key, OP, "key")?.array;
        let num = usize::try_from(num).map_err(|_| {
            crate::error::CError::invalid(OP, format!("num must not be negative, got {num}"))
        })?;
        let out = ferrox::with_stream(stream_of(s, OP)?, || random::split(key, num))?;
        put(res, ferrox_array::new(out));
        Ok(())
    })
}

/// Uniform samples on `[low, high)` (arrays broadcasting to `shape`) of a
/// float `dtype`, from `key` (NULL: the default key).
///
/// # Safety
/// `shape` points to `shape_num` int32s.
#[no_mangle]
pub unsafe extern "C" fn ferrox_random_uniform(
    res: Option<&mut Option<Box<ferrox_array>>>,
    low: Option<&ferrox_array>,
    high: Option<&ferrox_array>,
    shape: *const i32,
    shape_num: usize,
    dtype: ferrox_dtype,
    key: Option<&ferrox_array>,
    s: Option<&ferrox_stream>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_random_uniform";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let (lo, hi) = (
            arg(low, OP, "low")?.array.clone(),
            arg(high, OP, "high")?.array.clone(),
        );
        // SAFETY: the caller passes `shape_num` int32s.
        let shape = sizes(
            unsafe { raw_slice(shape, shape_num, OP, "shape") }?,
            OP,
            "shape",
        )?;
        let dtype = dtype_of(dtype, OP)?;
        let key = key_of(key, OP)?;
        let out = ferrox::with_stream(stream_of(s, OP)?, || {
            random::uniform(lo, hi, &shape, dtype, key)
        })?;
        put(res, ferrox_array::new(out));
        Ok(())
    })
}

/// Normal samples with mean `loc` and standard deviation `scale`, of
/// `shape` and a float `dtype`, from `key` (NULL: the default key).
///
/// # Safety
/// `shape` points to `shape_num` int32s.
#[no_mangle]
pub unsafe extern "C" fn ferrox_random_normal(
    res: Option<&mut Option<Box<ferrox_array>>>,
    shape: *const i32,
    shape_num: usize,
    dtype: ferrox_dtype,
    loc: f32,
    scale: f32,
    key: Option<&ferrox_array>,
    s: Option<&ferrox_stream>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_random_normal";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        // SAFETY: the caller passes `shape_num` int32s.
        let shape = sizes(
            unsafe { raw_slice(shape, shape_num, OP, "shape") }?,
            OP,
            "shape",
        )?;
        let dtype = dtype_of(dtype, OP)?;
        let key = key_of(key, OP)?;
        let out = ferrox::with_stream(stream_of(s, OP)?, || {
            random::normal(&shape, dtype, loc, scale, key)
        })?;
        put(res, ferrox_array::new(out));
        Ok(())
    })
}

/// `p[..n]` as a required shape (NULL only when `n` is 0).
///
/// # Safety
/// `p` is NULL or points to `n` int32s.
unsafe fn shape_of(p: *const i32, n: usize, op: &str) -> CResult<Vec<usize>> {
    // SAFETY: forwarded from the caller.
    sizes(unsafe { raw_slice(p, n, op, "shape") }?, op, "shape")
}

/// Resets the calling thread's default key to the key of `seed`, so its
/// following draws without a key equal MLX's after `mx.random.seed(seed)`.
/// Other threads' default keys are unchanged.
#[no_mangle]
pub extern "C" fn ferrox_random_seed(
    seed: u64,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    guard("ferrox_random_seed", err, || {
        ferrox::random::seed(seed);
        Ok(())
    })
}

/// Random bits: unsigned integers of `width` bytes (1, 2 or 4) and `shape`,
/// from `key` (NULL: the default key).
///
/// # Safety
/// `shape` points to `shape_num` int32s (NULL if 0).
#[no_mangle]
pub unsafe extern "C" fn ferrox_random_bits(
    res: Slot<'_, ferrox_array>,
    shape: *const i32,
    shape_num: usize,
    width: i32,
    key: Option<&ferrox_array>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_random_bits";
    respond(OP, res, s, err, ferrox_array::new, || {
        // SAFETY: the caller passes `shape_num` int32s.
        let shape = unsafe { shape_of(shape, shape_num, OP) }?;
        let width = usize::try_from(width)
            .map_err(|_| CError::invalid(OP, format!("width must not be negative, got {width}")))?;
        Ok(random::bits(&shape, width, key_of(key, OP)?)?)
    })
}

/// Integers uniform on `[low, high)` (arrays broadcasting to `shape`) of
/// an integer `dtype`, from `key` (NULL: the default key).
///
/// # Safety
/// `shape` points to `shape_num` int32s (NULL if 0).
#[no_mangle]
pub unsafe extern "C" fn ferrox_random_randint(
    res: Slot<'_, ferrox_array>,
    low: Option<&ferrox_array>,
    high: Option<&ferrox_array>,
    shape: *const i32,
    shape_num: usize,
    dtype: ferrox_dtype,
    key: Option<&ferrox_array>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_random_randint";
    respond(OP, res, s, err, ferrox_array::new, || {
        // SAFETY: the caller passes `shape_num` int32s.
        let shape = unsafe { shape_of(shape, shape_num, OP) }?;
        let (lo, hi) = (
            arg(low, OP, "low")?.array.clone(),
            arg(high, OP, "high")?.array.clone(),
        );
        Ok(random::randint(
            lo,
            hi,
            &shape,
            dtype_of(dtype, OP)?,
            key_of(key, OP)?,
        )?)
    })
}

/// Booleans that are true with probability `p` (an array broadcasting to
/// `shape`; NULL `shape`: `p`'s shape), from `key` (NULL: the default key).
///
/// # Safety
/// `shape` is NULL or points to `shape_num` int32s.
#[no_mangle]
pub unsafe extern "C" fn ferrox_random_bernoulli(
    res: Slot<'_, ferrox_array>,
    p: Option<&ferrox_array>,
    shape: *const i32,
    shape_num: usize,
    key: Option<&ferrox_array>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_random_bernoulli";
    respond(OP, res, s, err, ferrox_array::new, || {
        // SAFETY: the caller passes NULL or `shape_num` int32s.
        let shape = unsafe { opt_sizes(shape, shape_num, OP, "shape") }?;
        let p = arg(p, OP, "p")?.array.clone();
        Ok(random::bernoulli(p, shape.as_deref(), key_of(key, OP)?)?)
    })
}

/// Indices drawn from the categorical distribution with unnormalised
/// log-probabilities `logits` along `axis`: `shape` (NULL: the logits'
/// shape without `axis`) or, when `num_samples` is not negative, that many
/// samples per distribution. From `key` (NULL: the default key).
///
/// # Safety
/// `shape` is NULL or points to `shape_num` int32s.
#[no_mangle]
pub unsafe extern "C" fn ferrox_random_categorical(
    res: Slot<'_, ferrox_array>,
    logits: Option<&ferrox_array>,
    axis: i32,
    shape: *const i32,
    shape_num: usize,
    num_samples: i32,
    key: Option<&ferrox_array>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_random_categorical";
    respond(OP, res, s, err, ferrox_array::new, || {
        // SAFETY: the caller passes NULL or `shape_num` int32s.
        let shape = unsafe { opt_sizes(shape, shape_num, OP, "shape") }?;
        let logits = &arg(logits, OP, "logits")?.array;
        let n = usize::try_from(num_samples).ok();
        Ok(random::categorical(
            logits,
            axis as isize,
            shape.as_deref(),
            n,
            key_of(key, OP)?,
        )?)
    })
}

/// Standard Gumbel samples of `shape` and a float `dtype`, from `key`
/// (NULL: the default key).
///
/// # Safety
/// `shape` points to `shape_num` int32s (NULL if 0).
#[no_mangle]
pub unsafe extern "C" fn ferrox_random_gumbel(
    res: Slot<'_, ferrox_array>,
    shape: *const i32,
    shape_num: usize,
    dtype: ferrox_dtype,
    key: Option<&ferrox_array>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_random_gumbel";
    respond(OP, res, s, err, ferrox_array::new, || {
        // SAFETY: the caller passes `shape_num` int32s.
        let shape = unsafe { shape_of(shape, shape_num, OP) }?;
        Ok(random::gumbel(
            &shape,
            dtype_of(dtype, OP)?,
            key_of(key, OP)?,
        )?)
    })
}

/// Laplace samples with location `loc` and scale `scale`, of `shape` and a
/// float `dtype`, from `key` (NULL: the default key).
///
/// # Safety
/// `shape` points to `shape_num` int32s (NULL if 0).
#[no_mangle]
pub unsafe extern "C" fn ferrox_random_laplace(
    res: Slot<'_, ferrox_array>,
    shape: *const i32,
    shape_num: usize,
    dtype: ferrox_dtype,
    loc: f32,
    scale: f32,
    key: Option<&ferrox_array>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_random_laplace";
    respond(OP, res, s, err, ferrox_array::new, || {
        // SAFETY: the caller passes `shape_num` int32s.
        let shape = unsafe { shape_of(shape, shape_num, OP) }?;
        Ok(random::laplace(
            &shape,
            dtype_of(dtype, OP)?,
            loc,
            scale,
            key_of(key, OP)?,
        )?)
    })
}

/// Normal samples truncated to `[lower, upper]` (arrays broadcasting to
/// `shape`; NULL `shape`: their broadcast shape), of a float `dtype`, from
/// `key` (NULL: the default key).
///
/// # Safety
/// `shape` is NULL or points to `shape_num` int32s.
#[no_mangle]
pub unsafe extern "C" fn ferrox_random_truncated_normal(
    res: Slot<'_, ferrox_array>,
    lower: Option<&ferrox_array>,
    upper: Option<&ferrox_array>,
    shape: *const i32,
    shape_num: usize,
    dtype: ferrox_dtype,
    key: Option<&ferrox_array>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_random_truncated_normal";
    respond(OP, res, s, err, ferrox_array::new, || {
        // SAFETY: the caller passes NULL or `shape_num` int32s.
        let shape = unsafe { opt_sizes(shape, shape_num, OP, "shape") }?;
        let (lo, hi) = (
            arg(lower, OP, "lower")?.array.clone(),
            arg(upper, OP, "upper")?.array.clone(),
        );
        Ok(random::truncated_normal(
            lo,
            hi,
            shape.as_deref(),
            dtype_of(dtype, OP)?,
            key_of(key, OP)?,
        )?)
    })
}

/// Samples of the multivariate normal with `mean` (`[..., n]`) and
/// covariance `cov` (`[..., n, n]`), `shape` draws of a float `dtype`, from
/// `key` (NULL: the default key).
///
/// # Safety
/// `shape` points to `shape_num` int32s (NULL if 0).
#[no_mangle]
pub unsafe extern "C" fn ferrox_random_multivariate_normal(
    res: Slot<'_, ferrox_array>,
    mean: Option<&ferrox_array>,
    cov: Option<&ferrox_array>,
    shape: *const i32,
    shape_num: usize,
    dtype: ferrox_dtype,
    key: Option<&ferrox_array>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_random_multivariate_normal";
    respond(OP, res, s, err, ferrox_array::new, || {
        // SAFETY: the caller passes `shape_num` int32s.
        let shape = unsafe { shape_of(shape, shape_num, OP) }?;
        let (m, c) = (&arg(mean, OP, "mean")?.array, &arg(cov, OP, "cov")?.array);
        Ok(random::multivariate_normal(
            m,
            c,
            &shape,
            dtype_of(dtype, OP)?,
            key_of(key, OP)?,
        )?)
    })
}

/// `x` shuffled along `axis`, from `key` (NULL: the default key).
#[no_mangle]
pub extern "C" fn ferrox_random_permutation(
    res: Slot<'_, ferrox_array>,
    x: Option<&ferrox_array>,
    axis: i32,
    key: Option<&ferrox_array>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_random_permutation";
    respond(OP, res, s, err, ferrox_array::new, || {
        let x = &arg(x, OP, "x")?.array;
        Ok(random::permutation_of(x, axis as isize, key_of(key, OP)?)?)
    })
}

/// A random ordering of `0..n`, from `key` (NULL: the default key).
#[no_mangle]
pub extern "C" fn ferrox_random_permutation_arange(
    res: Slot<'_, ferrox_array>,
    n: i32,
    key: Option<&ferrox_array>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_random_permutation_arange";
    respond(OP, res, s, err, ferrox_array::new, || {
        let n = usize::try_from(n)
            .map_err(|_| CError::invalid(OP, format!("n must not be negative, got {n}")))?;
        Ok(random::permutation(n, key_of(key, OP)?)?)
    })
}
