//! Distributed collectives (mlx-c's `distributed` set): a group handle and
//! the ops on it. Collectives are lazy ops like any other; evaluating them
//! communicates. A process launched alone (no `mpirun`, or a build without
//! the `mpi` feature) has the group of itself, where every collective is
//! the identity. Any thread may use a group; see docs/distributed.md.

use std::ffi::c_char;

use ferrox::distributed::{self, Group};
use ferrox::DType;

use crate::array::{dtype_of, ferrox_array, ferrox_dtype, opt_str, raw_slice, raw_str, sizes};
use crate::error::{ferrox_error, ferrox_status, guard, CResult};
use crate::handle::{arg, check_slot, free_handle, impl_handle, opt_arg, put, Handle, Slot};
use crate::ops::respond;
use crate::stream::ferrox_stream;

/// A group of processes (mlx-c's `mlx_distributed_group`). Free it with
/// [`ferrox_distributed_group_free`]; the group lives while any op built on
/// it does.
pub struct ferrox_distributed_group {
    magic: u64,
    group: Group,
}
impl_handle!(ferrox_distributed_group, 0xfe77_0000_0000_d157);

impl ferrox_distributed_group {
    fn new(group: Group) -> ferrox_distributed_group {
        ferrox_distributed_group {
            magic: <Self as Handle>::MAGIC,
            group,
        }
    }
}

fn group_of<'a>(h: Option<&'a ferrox_distributed_group>, op: &str) -> CResult<Option<&'a Group>> {
    Ok(opt_arg(h, op, "group")?.map(|g| &g.group))
}

/// Whether `backend` (`"any"` or `"mpi"`) can be used in this build.
///
/// # Safety
/// `backend` is NULL (false) or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ferrox_distributed_is_available(backend: *const c_char) -> bool {
    // SAFETY: forwarded from the caller.
    unsafe { raw_str(backend, "ferrox_distributed_is_available", "backend") }
        .is_ok_and(distributed::is_available)
}

/// Starts the backend (once per process) and writes the group of every
/// process of the job to `*res`. `backend` is `"any"` (NULL) or `"mpi"`;
/// with `strict`, a backend that cannot start is an error instead of the
/// group of this process alone.
///
/// # Safety
/// `backend` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ferrox_distributed_init(
    res: Slot<'_, ferrox_distributed_group>,
    strict: bool,
    backend: *const c_char,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_distributed_init";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        let backend = unsafe { opt_str(backend, OP, "backend") }?.unwrap_or("any");
        put(
            res,
            ferrox_distributed_group::new(distributed::init(strict, backend)?),
        );
        Ok(())
    })
}

/// This process's rank in `group` (-1 for NULL or a dead handle).
#[no_mangle]
pub extern "C" fn ferrox_distributed_group_rank(group: Option<&ferrox_distributed_group>) -> i32 {
    arg(group, "", "").map_or(-1, |g| i32::try_from(g.group.rank()).unwrap_or(i32::MAX))
}

/// The number of processes in `group` (-1 for NULL or a dead handle).
#[no_mangle]
pub extern "C" fn ferrox_distributed_group_size(group: Option<&ferrox_distributed_group>) -> i32 {
    arg(group, "", "").map_or(-1, |g| i32::try_from(g.group.size()).unwrap_or(i32::MAX))
}

/// Splits `group`: processes passing the same `color` (not negative) form
/// a new group, ranked by `key` (negative: keep this group's order). A
/// collective: every process of the group calls it.
#[no_mangle]
pub extern "C" fn ferrox_distributed_group_split(
    res: Slot<'_, ferrox_distributed_group>,
    group: Option<&ferrox_distributed_group>,
    color: i32,
    key: i32,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_distributed_group_split";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let g = &arg(group, OP, "group")?.group;
        let split = g.split(color, (key >= 0).then_some(key))?;
        put(res, ferrox_distributed_group::new(split));
        Ok(())
    })
}

/// Frees a group handle. NULL is a no-op.
#[no_mangle]
pub extern "C" fn ferrox_distributed_group_free(
    group: Option<Box<ferrox_distributed_group>>,
) -> ferrox_status {
    free_handle("ferrox_distributed_group_free", group)
}

/// The body of the one-array collectives: `f(x, group)` on stream `s`.
fn collective(
    op: &'static str,
    res: Slot<'_, ferrox_array>,
    x: Option<&ferrox_array>,
    group: Option<&ferrox_distributed_group>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
    f: fn(&ferrox::Array, Option<&Group>) -> ferrox::Result<ferrox::Array>,
) -> ferrox_status {
    respond(op, res, s, err, ferrox_array::new, || {
        Ok(f(&arg(x, op, "x")?.array, group_of(group, op)?)?)
    })
}

/// The elementwise sum of `x` over every process of the group. `group` NULL is the job's group (after
/// `ferrox_distributed_init`; else this process alone).
#[no_mangle]
pub extern "C" fn ferrox_distributed_all_sum(
    res: Slot<'_, ferrox_array>,
    x: Option<&ferrox_array>,
    group: Option<&ferrox_distributed_group>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    collective(
        "ferrox_distributed_all_sum",
        res,
        x,
        group,
        s,
        err,
        distributed::all_sum,
    )
}

/// The elementwise maximum of `x` over the group. `group` NULL is the job's group (after
/// `ferrox_distributed_init`; else this process alone).
#[no_mangle]
pub extern "C" fn ferrox_distributed_all_max(
    res: Slot<'_, ferrox_array>,
    x: Option<&ferrox_array>,
    group: Option<&ferrox_distributed_group>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    collective(
        "ferrox_distributed_all_max",
        res,
        x,
        group,
        s,
        err,
        distributed::all_max,
    )
}

/// The elementwise minimum of `x` over the group. `group` NULL is the job's group (after
/// `ferrox_distributed_init`; else this process alone).
#[no_mangle]
pub extern "C" fn ferrox_distributed_all_min(
    res: Slot<'_, ferrox_array>,
    x: Option<&ferrox_array>,
    group: Option<&ferrox_distributed_group>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    collective(
        "ferrox_distributed_all_min",
        res,
        x,
        group,
        s,
        err,
        distributed::all_min,
    )
}

/// Every process's `x`, concatenated along the first axis in rank order. `group` NULL is the job's group (after
/// `ferrox_distributed_init`; else this process alone).
#[no_mangle]
pub extern "C" fn ferrox_distributed_all_gather(
    res: Slot<'_, ferrox_array>,
    x: Option<&ferrox_array>,
    group: Option<&ferrox_distributed_group>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    collective(
        "ferrox_distributed_all_gather",
        res,
        x,
        group,
        s,
        err,
        distributed::all_gather,
    )
}

/// The sum over the group, of which this process keeps its rank's slice of the first axis. `group` NULL is the job's group (after
/// `ferrox_distributed_init`; else this process alone).
#[no_mangle]
pub extern "C" fn ferrox_distributed_sum_scatter(
    res: Slot<'_, ferrox_array>,
    x: Option<&ferrox_array>,
    group: Option<&ferrox_distributed_group>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    collective(
        "ferrox_distributed_sum_scatter",
        res,
        x,
        group,
        s,
        err,
        distributed::sum_scatter,
    )
}

/// Sends `x` to rank `dst`; the result (`x` itself) is what to evaluate
/// to make the send happen.
#[no_mangle]
pub extern "C" fn ferrox_distributed_send(
    res: Slot<'_, ferrox_array>,
    x: Option<&ferrox_array>,
    dst: i32,
    group: Option<&ferrox_distributed_group>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_distributed_send";
    respond(OP, res, s, err, ferrox_array::new, || {
        Ok(distributed::send(
            &arg(x, OP, "x")?.array,
            dst.into(),
            group_of(group, OP)?,
        )?)
    })
}

/// An array of `shape` and `dtype` received from rank `src`.
///
/// # Safety
/// `shape` points to `shape_num` int32s (NULL if 0).
#[no_mangle]
pub unsafe extern "C" fn ferrox_distributed_recv(
    res: Slot<'_, ferrox_array>,
    shape: *const i32,
    shape_num: usize,
    dtype: ferrox_dtype,
    src: i32,
    group: Option<&ferrox_distributed_group>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_distributed_recv";
    respond(OP, res, s, err, ferrox_array::new, || {
        // SAFETY: the caller passes `shape_num` int32s.
        let shape = sizes(
            unsafe { raw_slice(shape, shape_num, OP, "shape") }?,
            OP,
            "shape",
        )?;
        let dtype: DType = dtype_of(dtype, OP)?;
        Ok(distributed::recv(
            &shape,
            dtype,
            src.into(),
            group_of(group, OP)?,
        )?)
    })
}

/// An array like `x` (shape and dtype) received from rank `src`.
#[no_mangle]
pub extern "C" fn ferrox_distributed_recv_like(
    res: Slot<'_, ferrox_array>,
    x: Option<&ferrox_array>,
    src: i32,
    group: Option<&ferrox_distributed_group>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_distributed_recv_like";
    respond(OP, res, s, err, ferrox_array::new, || {
        Ok(distributed::recv_like(
            &arg(x, OP, "x")?.array,
            src.into(),
            group_of(group, OP)?,
        )?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_process_has_identity_collectives_and_a_clear_error_for_bad_backends() {
        let mut g: Option<Box<ferrox_distributed_group>> = None;
        // SAFETY: a NUL-terminated literal.
        let st = unsafe { ferrox_distributed_init(Some(&mut g), false, c"any".as_ptr(), None) };
        assert_eq!(st, crate::error::FERROX_OK);
        assert_eq!(ferrox_distributed_group_size(g.as_deref()), 1);
        assert_eq!(ferrox_distributed_group_rank(g.as_deref()), 0);
        let x = ferrox_array::new(
            ferrox::Array::from_slice(&[1.0f32, 2.0], &[2])
                .unwrap_or_else(|_| ferrox::Array::scalar(0f32)),
        );
        let mut r: Option<Box<ferrox_array>> = None;
        assert_eq!(
            ferrox_distributed_all_sum(Some(&mut r), Some(&x), g.as_deref(), None, None),
            0
        );
        let v = r
            .as_ref()
            .map(|h| h.array.to_vec::<f32>().unwrap_or_default());
        assert_eq!(v, Some(vec![1.0, 2.0]));
        let mut e: Option<Box<ferrox_error>> = None;
        let mut g2: Option<Box<ferrox_distributed_group>> = None;
        // SAFETY: a NUL-terminated literal.
        let st =
            unsafe { ferrox_distributed_init(Some(&mut g2), true, c"nccl".as_ptr(), Some(&mut e)) };
        assert_ne!(st, crate::error::FERROX_OK);
        assert!(e.map(|e| e.message()).unwrap_or_default().contains("nccl"));
        // SAFETY: a NUL-terminated literal and NULL.
        assert!(unsafe { ferrox_distributed_is_available(c"any".as_ptr()) });
        // SAFETY: NULL is allowed.
        assert!(!unsafe { ferrox_distributed_is_available(std::ptr::null()) });
    }
}
