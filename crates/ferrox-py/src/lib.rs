//! `ferrox.core`: the Python module, modelled on `mlx.core`.
//!
//! Built by maturin (see `pyproject.toml`); the tests are Python tests in
//! `tests/`, run by `scripts/test-python.sh`.

mod array;
mod buffer;
mod compiled;
mod convert;
mod device;
mod errors;
mod fft;
mod gil;
mod implicit;
mod index;
mod linalg;
mod methods;
mod misc;
mod ops;
mod random;
mod transforms;
mod tree;

use pyo3::prelude::*;

/// The extension module `ferrox.core`.
#[pymodule]
fn core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<array::PyArr>()?;
    m.add_class::<array::AtBuilder>()?;
    m.add_class::<array::AtUpdate>()?;
    convert::register(m)?;
    device::register(m)?;
    ops::register(m)?;
    misc::register(m)?;
    transforms::register(m)?;
    compiled::register(m)?;
    random::register(m)?;
    fft::register(m)?;
    linalg::register(m)?;
    gil::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
