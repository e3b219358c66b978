//! Random keys and draws. Keys are explicit arrays (threefry, MLX's bits);
//! a NULL key uses ferrox's default key, which is process-wide state made
//! safe for threads (and recorded by compile), never a per-thread one.

use ferrox::random;

use crate::array::{dtype_of, ferrox_array, ferrox_dtype, raw_slice, sizes};
use crate::error::{ferrox_error, ferrox_status, guard};
use crate::handle::{arg, check_slot, put};
use crate::stream::{ferrox_stream, stream_of};

fn key_of<'a>(
    key: Option<&'a ferrox_array>,
    op: &str,
) -> crate::error::CResult<Option<&'a ferrox::Array>> {
    match key {
        None => Ok(None),
        Some(_) => Ok(Some(&arg(key, op, "key")?.array)),
    }
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
