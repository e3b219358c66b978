//! `ferrox.core`: the Python module, modelled on `mlx.core`.
//!
//! Built by maturin (see `pyproject.toml`); the tests are Python tests in
//! `tests/`, run by `scripts/test-python.sh`.

// Bindings take the parameters mlx.core's signatures have.
#![allow(clippy::too_many_arguments)]

mod array;
mod buffer;
mod compiled;
mod composites;
mod conv;
mod convert;
mod custom_kernel;
mod device;
mod distributed;
mod dtypes;
mod errors;
mod export;
mod fast;
mod fft;
mod gil;
mod implicit;
mod index;
mod io;
mod linalg;
mod methods;
mod misc;
mod ops;
mod quantized;
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
    errors::register(m)?;
    device::register(m)?;
    dtypes::register(m)?;
    ops::register(m)?;
    composites::register(m)?;
    conv::register(m)?;
    misc::register(m)?;
    transforms::register(m)?;
    compiled::register(m)?;
    quantized::register(m)?;
    random::register(m)?;
    fft::register(m)?;
    distributed::register(m)?;
    fast::register(m)?;
    linalg::register(m)?;
    m.add("matrix_norm", m.getattr("linalg")?.getattr("norm")?)?;
    io::register(m)?;
    export::register(m)?;
    gil::register(m)?;
    register_aliases_and_constants(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// mlx.core's second names of functions (array-API spellings) and its
/// constants. An alias is the same function object as its first name.
fn register_aliases_and_constants(m: &Bound<'_, PyModule>) -> PyResult<()> {
    const ALIASES: [(&str, &str); 16] = [
        ("acos", "arccos"),
        ("asin", "arcsin"),
        ("atan", "arctan"),
        ("acosh", "arccosh"),
        ("asinh", "arcsinh"),
        ("atanh", "arctanh"),
        ("atan2", "arctan2"),
        ("pow", "power"),
        ("concat", "concatenate"),
        ("permute_dims", "transpose"),
        ("bitwise_left_shift", "left_shift"),
        ("bitwise_right_shift", "right_shift"),
        ("cumulative_sum", "cumsum"),
        ("cumulative_prod", "cumprod"),
        ("empty", "zeros"),
        ("empty_like", "zeros_like"),
    ];
    for (alias, name) in ALIASES {
        m.add(alias, m.getattr(name)?)?;
    }
    m.add("pi", std::f64::consts::PI)?;
    m.add("e", std::f64::consts::E)?;
    m.add("euler_gamma", 0.577_215_664_901_532_9_f64)?;
    m.add("inf", f64::INFINITY)?;
    m.add("nan", f64::NAN)?;
    m.add("newaxis", m.py().None())?;
    Ok(())
}
