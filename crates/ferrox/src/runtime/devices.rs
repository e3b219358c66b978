//! What the machine offers: how many devices of a kind there are and what
//! they are. ferrox runs on the CPU only, so there is one CPU device and no
//! GPU.

use crate::graph::stream::{Device, DeviceType};

/// The number of devices of `kind`: one CPU (every core is one device;
/// work spreads over the cores inside a kernel).
///
/// ```
/// use ferrox::{device_count, DeviceType};
/// assert_eq!(device_count(DeviceType::Cpu), 1);
/// ```
pub fn device_count(kind: DeviceType) -> usize {
    match kind {
        DeviceType::Cpu => 1,
    }
}

/// One property of a device: text or a number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceProperty {
    /// A name (`device_name`, `architecture`).
    Text(String),
    /// A count or a size in bytes (`memory_size`, `cpu_count`).
    Number(u64),
}

/// The properties of `device`, MLX's keys: `device_name` (the processor's
/// model name where the system reports it), `architecture` (the
/// instruction set), `memory_size` (bytes of physical memory, where the
/// system reports it) and `cpu_count` (logical cores ferrox may use).
///
/// ```
/// use ferrox::{device_info, DeviceProperty};
/// let info = device_info(ferrox::Device::cpu());
/// assert!(info.iter().any(|(k, v)| k == "architecture" && *v == DeviceProperty::Text(std::env::consts::ARCH.into())));
/// ```
pub fn device_info(device: Device) -> Vec<(String, DeviceProperty)> {
    let _ = device;
    let mut info = vec![
        (
            "device_name".to_string(),
            DeviceProperty::Text(cpu_model().unwrap_or_else(|| "cpu".to_string())),
        ),
        (
            "architecture".to_string(),
            DeviceProperty::Text(std::env::consts::ARCH.to_string()),
        ),
        (
            "cpu_count".to_string(),
            DeviceProperty::Number(rayon::current_num_threads() as u64),
        ),
    ];
    if let Some(bytes) = crate::graph::pool::physical_memory() {
        info.push((
            "memory_size".to_string(),
            DeviceProperty::Number(bytes as u64),
        ));
    }
    info
}

/// The processor's model name from `/proc/cpuinfo` (Linux).
fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("model name"))?;
    let name = line.split_once(':')?.1.trim();
    (!name.is_empty()).then(|| name.to_string())
}
