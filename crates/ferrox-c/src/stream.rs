//! Devices, streams, evaluation and synchronisation.
//!
//! Streams are values in ferrox (an index on a device), so these handles
//! own no thread and no queue: freeing one never waits, and a stream made
//! on one thread may be used, synchronised and freed on any other.

use ferrox::{Device, DeviceType, Stream};

use crate::array::ferrox_vector_array;
use crate::error::{ferrox_error, ferrox_status, guard, CError};
use crate::handle::{arg, check_slot, free_handle, impl_handle, put};

/// A device kind: only [`FERROX_DEVICE_CPU`] exists today.
pub type ferrox_device_type = i32;
/// The host CPU.
pub const FERROX_DEVICE_CPU: ferrox_device_type = 0;

/// A device (a kind and an index). Free it with [`ferrox_device_free`].
pub struct ferrox_device {
    magic: u64,
    pub(crate) device: Device,
}
impl_handle!(ferrox_device, 0xfe77_0000_0000_de71);

/// An ordered queue of work on a device. Every op takes one (NULL means
/// the process-wide default stream of the default device). Free it with
/// [`ferrox_stream_free`]; freeing never waits for its work.
pub struct ferrox_stream {
    magic: u64,
    pub(crate) stream: Stream,
}
impl_handle!(ferrox_stream, 0xfe77_0000_0000_57e4);

fn device_handle(device: Device) -> ferrox_device {
    ferrox_device {
        magic: <ferrox_device as crate::handle::Handle>::MAGIC,
        device,
    }
}

fn stream_handle(stream: Stream) -> ferrox_stream {
    ferrox_stream {
        magic: <ferrox_stream as crate::handle::Handle>::MAGIC,
        stream,
    }
}

/// The stream an op runs on: `s`, or the default one for NULL.
pub(crate) fn stream_of(s: Option<&ferrox_stream>, op: &str) -> crate::error::CResult<Stream> {
    match s {
        None => Ok(ferrox::default_stream(ferrox::default_device())),
        Some(_) => Ok(arg(s, op, "s")?.stream),
    }
}

/// A device of `kind` and `index`.
#[no_mangle]
pub extern "C" fn ferrox_device_new(
    res: Option<&mut Option<Box<ferrox_device>>>,
    kind: ferrox_device_type,
    index: i32,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_device_new";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        if kind != FERROX_DEVICE_CPU {
            return Err(CError::invalid(
                OP,
                format!("unknown device kind {kind} (only FERROX_DEVICE_CPU = 0)"),
            ));
        }
        let count = ferrox::device_count(DeviceType::Cpu);
        let index = usize::try_from(index)
            .ok()
            .filter(|&i| i < count)
            .ok_or_else(|| {
                CError::invalid(
                    OP,
                    format!("device index {index} is out of range for {count} cpu devices"),
                )
            })?;
        put(
            res,
            device_handle(Device {
                kind: DeviceType::Cpu,
                index,
            }),
        );
        Ok(())
    })
}

/// The process-wide default device.
#[no_mangle]
pub extern "C" fn ferrox_default_device(
    res: Option<&mut Option<Box<ferrox_device>>>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_default_device";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        put(res, device_handle(ferrox::default_device()));
        Ok(())
    })
}

/// Makes `d` the default device, for every thread.
#[no_mangle]
pub extern "C" fn ferrox_set_default_device(
    d: Option<&ferrox_device>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_set_default_device";
    guard(OP, err, || {
        ferrox::set_default_device(arg(d, OP, "d")?.device);
        Ok(())
    })
}

/// The kind of `d` ([`FERROX_DEVICE_CPU`]); -1 if `d` is NULL or not live.
#[no_mangle]
pub extern "C" fn ferrox_device_type_of(d: Option<&ferrox_device>) -> ferrox_device_type {
    arg(d, "", "").map_or(-1, |_| FERROX_DEVICE_CPU)
}

/// The index of `d`; -1 if `d` is NULL or not live.
#[no_mangle]
pub extern "C" fn ferrox_device_index(d: Option<&ferrox_device>) -> i64 {
    arg(d, "", "").map_or(-1, |d| d.device.index as i64)
}

/// Frees a device handle. NULL is a no-op.
#[no_mangle]
pub extern "C" fn ferrox_device_free(d: Option<Box<ferrox_device>>) -> ferrox_status {
    free_handle("ferrox_device_free", d)
}

/// A new stream on `d` (NULL: the default device). It is a value: nothing
/// is started, and nothing needs tearing down at exit.
#[no_mangle]
pub extern "C" fn ferrox_stream_new(
    res: Option<&mut Option<Box<ferrox_stream>>>,
    d: Option<&ferrox_device>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_stream_new";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let device = match d {
            None => ferrox::default_device(),
            Some(_) => arg(d, OP, "d")?.device,
        };
        put(res, stream_handle(ferrox::new_stream(device)));
        Ok(())
    })
}

/// The process-wide default stream of `d` (NULL: the default device): the
/// same stream on every thread.
#[no_mangle]
pub extern "C" fn ferrox_default_stream(
    res: Option<&mut Option<Box<ferrox_stream>>>,
    d: Option<&ferrox_device>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_default_stream";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let device = match d {
            None => ferrox::default_device(),
            Some(_) => arg(d, OP, "d")?.device,
        };
        put(res, stream_handle(ferrox::default_stream(device)));
        Ok(())
    })
}

/// Makes `s` the default stream of its device, for every thread.
#[no_mangle]
pub extern "C" fn ferrox_set_default_stream(
    s: Option<&ferrox_stream>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_set_default_stream";
    guard(OP, err, || {
        ferrox::set_default_stream(arg(s, OP, "s")?.stream);
        Ok(())
    })
}

/// The process-unique index of `s` (0 is a device's default stream); -1
/// if `s` is NULL or not live.
#[no_mangle]
pub extern "C" fn ferrox_stream_index(s: Option<&ferrox_stream>) -> i64 {
    arg(s, "", "").map_or(-1, |s| s.stream.index as i64)
}

/// True when `a` and `b` name the same stream.
#[no_mangle]
pub extern "C" fn ferrox_stream_equal(
    a: Option<&ferrox_stream>,
    b: Option<&ferrox_stream>,
) -> bool {
    match (arg(a, "", ""), arg(b, "", "")) {
        (Ok(a), Ok(b)) => a.stream == b.stream,
        _ => false,
    }
}

/// Frees a stream handle; never waits for the stream's work. NULL is a
/// no-op.
#[no_mangle]
pub extern "C" fn ferrox_stream_free(s: Option<Box<ferrox_stream>>) -> ferrox_status {
    free_handle("ferrox_stream_free", s)
}

/// Waits until the work submitted to `s` (NULL: the default stream) is
/// done.
#[no_mangle]
pub extern "C" fn ferrox_synchronize(
    s: Option<&ferrox_stream>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_synchronize";
    guard(OP, err, || {
        ferrox::synchronize(stream_of(s, OP)?);
        Ok(())
    })
}

/// Waits until all submitted work on every stream is done.
#[no_mangle]
pub extern "C" fn ferrox_synchronize_all(
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    guard("ferrox_synchronize_all", err, || {
        ferrox::synchronize_all();
        Ok(())
    })
}

/// Evaluates every array of `outputs` and waits for them. Shared nodes are
/// computed once, also when other threads evaluate overlapping graphs.
#[no_mangle]
pub extern "C" fn ferrox_eval(
    outputs: Option<&ferrox_vector_array>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_eval";
    guard(OP, err, || {
        Ok(ferrox::eval(&arg(outputs, OP, "outputs")?.items())?)
    })
}

/// Starts evaluating every array of `outputs` and returns at once; a later
/// eval, read or [`ferrox_synchronize`], on any thread, waits for it.
#[no_mangle]
pub extern "C" fn ferrox_async_eval(
    outputs: Option<&ferrox_vector_array>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_async_eval";
    guard(OP, err, || {
        Ok(ferrox::async_eval(&arg(outputs, OP, "outputs")?.items())?)
    })
}
