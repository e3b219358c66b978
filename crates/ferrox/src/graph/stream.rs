//! Devices and streams as plain values, and the scope that picks the
//! stream a new node is placed on (every node records one when it is built,
//! which is why this is graph state, not runtime state).
//!
//! A [`Stream`] is a name for an ordered queue of work on a device; it owns
//! no thread. The default stream of a device is process-wide, and the default
//! device is a process-wide setting. A thread (or a scope within it) may opt
//! into another stream with [`with_stream`]; nothing is created because a new
//! thread calls in (contract item 7).

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The kind of a device. Only the CPU exists today.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceType {
    /// The host CPU.
    Cpu,
}

/// A device: a kind and an index.
///
/// ```
/// let d = ferrox::Device::cpu();
/// assert_eq!(d, ferrox::default_device());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Device {
    /// The device kind.
    pub kind: DeviceType,
    /// Which device of that kind.
    pub index: usize,
}

impl Device {
    /// The CPU.
    pub const fn cpu() -> Device {
        Device {
            kind: DeviceType::Cpu,
            index: 0,
        }
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            DeviceType::Cpu => write!(f, "Device(cpu, {})", self.index),
        }
    }
}

/// An ordered queue of work on a device, as a value.
///
/// ```
/// let s = ferrox::new_stream(ferrox::Device::cpu());
/// assert_ne!(s, ferrox::default_stream(ferrox::Device::cpu()));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stream {
    /// The device the stream runs on.
    pub device: Device,
    /// Process-unique index; 0 is the device's default stream.
    pub index: usize,
}

impl std::fmt::Display for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stream({}, {})", self.device, self.index)
    }
}

static DEFAULT_DEVICE_INDEX: AtomicUsize = AtomicUsize::new(0);
static NEXT_STREAM: AtomicUsize = AtomicUsize::new(1);
static DEFAULT_STREAM_INDEX: AtomicUsize = AtomicUsize::new(0);

/// The process-wide default device.
///
/// ```
/// assert_eq!(ferrox::default_device(), ferrox::Device::cpu());
/// ```
pub fn default_device() -> Device {
    Device {
        kind: DeviceType::Cpu,
        index: DEFAULT_DEVICE_INDEX.load(Ordering::Relaxed),
    }
}

/// Sets the process-wide default device (visible to every thread).
///
/// ```
/// ferrox::set_default_device(ferrox::Device::cpu());
/// ```
pub fn set_default_device(device: Device) {
    DEFAULT_DEVICE_INDEX.store(device.index, Ordering::Relaxed);
}

/// The process-wide default stream of `device`: the same value on every
/// thread (stream 0 unless [`set_default_stream`] chose another).
///
/// ```
/// let d = ferrox::Device::cpu();
/// let s = std::thread::spawn(move || ferrox::default_stream(d)).join().unwrap();
/// assert_eq!(s, ferrox::default_stream(d));
/// ```
pub fn default_stream(device: Device) -> Stream {
    Stream {
        device,
        index: DEFAULT_STREAM_INDEX.load(Ordering::Relaxed),
    }
}

/// Makes `stream` the default stream of its device, for every thread (a
/// process-wide setting, like [`set_default_device`]; MLX keeps it per
/// thread). Ops built outside any [`with_stream`] scope go to it.
///
/// ```
/// let s = ferrox::new_stream(ferrox::Device::cpu());
/// let old = ferrox::default_stream(s.device);
/// ferrox::set_default_stream(s);
/// assert_eq!(ferrox::default_stream(s.device), s);
/// ferrox::set_default_stream(old);
/// ```
pub fn set_default_stream(stream: Stream) {
    DEFAULT_STREAM_INDEX.store(stream.index, Ordering::Relaxed);
}

/// A new stream on `device`. Streams are values: this allocates an index and
/// nothing else.
///
/// ```
/// let a = ferrox::new_stream(ferrox::Device::cpu());
/// let b = ferrox::new_stream(ferrox::Device::cpu());
/// assert_ne!(a.index, b.index);
/// ```
pub fn new_stream(device: Device) -> Stream {
    Stream {
        device,
        index: NEXT_STREAM.fetch_add(1, Ordering::Relaxed),
    }
}

thread_local! {
    // The explicit, opt-in stream of the current scope. `None` (the initial
    // value) means "the default stream of the default device"; it is a
    // plain Copy value, not a resource, and needs no teardown.
    static SCOPED: Cell<Option<Stream>> = const { Cell::new(None) };
}

/// The stream new ops go to: the innermost [`with_stream`] scope on this
/// thread, else the default stream of the default device.
///
/// ```
/// let s = ferrox::new_stream(ferrox::Device::cpu());
/// ferrox::with_stream(s, || assert_eq!(ferrox::current_stream(), s));
/// assert_eq!(ferrox::current_stream(), ferrox::default_stream(ferrox::default_device()));
/// ```
pub fn current_stream() -> Stream {
    SCOPED
        .try_with(|c| c.get())
        .ok()
        .flatten()
        .unwrap_or_else(|| default_stream(default_device()))
}

/// Runs `f` with `stream` as the stream for every op built inside it (MLX's
/// `with mx.stream(s):`). Scopes nest and are restored on unwind.
///
/// ```
/// use ferrox::*;
/// let s = new_stream(Device::cpu());
/// let y = with_stream(s, || add(&ones(&[2], DType::Float32)?, &ones(&[2], DType::Float32)?))?;
/// assert_eq!(y.stream(), s);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn with_stream<R>(stream: Stream, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Stream>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0;
            let _ = SCOPED.try_with(|c| c.set(prev));
        }
    }
    let prev = SCOPED.with(|c| c.replace(Some(stream)));
    let _restore = Restore(prev);
    f()
}
