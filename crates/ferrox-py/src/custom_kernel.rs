//! `ferrox.core.fast.metal_kernel` and `cuda_kernel`: custom GPU kernels
//! from source, with mlx.core.fast's signatures. This build has no GPU
//! back-end: a kernel call is recorded only inside `export_function` (for a
//! build that has one), and raises RuntimeError ("No Metal back-end.")
//! anywhere else, as on a CPU build of MLX.

use crate::array::PyArr;
use crate::convert::{dtype_of, to_array};
use crate::device::names_gpu;
use crate::errors::OrPy;
use ferrox::fast::custom_kernel::{self, CustomKernel, KernelLaunch, KernelPlacement, TemplateArg};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt};

type Any<'py> = Bound<'py, PyAny>;

/// A custom kernel, called with keywords (what ``metal_kernel`` and
/// ``cuda_kernel`` return).
///
/// __call__(*, inputs, output_shapes, output_dtypes, grid, threadgroup, template=None, init_value=None, verbose=False, stream=None) -> list[array]
///
/// ``inputs`` are arrays or scalars, one per input name; ``output_shapes``
/// and ``output_dtypes`` give one entry per output name; ``grid`` and
/// ``threadgroup`` are 3-tuples of threads; ``template`` is a list of
/// ``(name, bool | int | Dtype)``; ``init_value`` fills the outputs before
/// the kernel runs. Only the GPU is accepted as ``stream``.
#[pyclass(name = "CustomKernel", module = "ferrox.core.fast", frozen)]
pub struct PyCustomKernel(CustomKernel);

fn template_of(items: Option<Vec<(String, Any<'_>)>>) -> PyResult<Vec<(String, TemplateArg)>> {
    items
        .unwrap_or_default()
        .into_iter()
        .map(|(name, v)| {
            let arg = if v.is_instance_of::<PyBool>() {
                TemplateArg::Bool(v.extract()?)
            } else if v.is_instance_of::<PyInt>() {
                TemplateArg::Int(v.extract()?)
            } else if let Ok(d) = dtype_of(&v) {
                TemplateArg::Dtype(d)
            } else {
                return Err(PyTypeError::new_err(format!(
                    "custom kernel: template argument {name:?} must be a bool, int or Dtype, got {}",
                    v.get_type().name()?
                )));
            };
            Ok((name, arg))
        })
        .collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[pymethods]
impl PyCustomKernel {
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (*, inputs, output_shapes, output_dtypes, grid, threadgroup, template = None, init_value = None, verbose = false, stream = None))]
    fn __call__(
        &self,
        py: Python<'_>,
        inputs: Vec<Any<'_>>,
        output_shapes: Vec<Vec<usize>>,
        output_dtypes: Vec<Any<'_>>,
        grid: (usize, usize, usize),
        threadgroup: (usize, usize, usize),
        template: Option<Vec<(String, Any<'_>)>>,
        init_value: Option<f32>,
        verbose: bool,
        stream: Option<&Any<'_>>,
    ) -> PyResult<Vec<PyArr>> {
        let inputs = inputs.iter().map(to_array).collect::<PyResult<Vec<_>>>()?;
        let launch = KernelLaunch {
            output_shapes,
            output_dtypes: output_dtypes
                .iter()
                .map(dtype_of)
                .collect::<PyResult<_>>()?,
            grid: [grid.0, grid.1, grid.2],
            threadgroup: [threadgroup.0, threadgroup.1, threadgroup.2],
            template: template_of(template)?,
            init_value,
        };
        let placement = match stream {
            Some(s) if !s.is_none() => {
                if names_gpu(s)? {
                    KernelPlacement::Gpu
                } else {
                    KernelPlacement::Cpu
                }
            }
            _ => KernelPlacement::Default,
        };
        if verbose {
            let text = format!(
                "Source of kernel `{}`:\n```\n{}\n```",
                self.0.name(),
                self.0.source()
            );
            py.import("builtins")?.call_method1("print", (text,))?;
        }
        let outs = self.0.call(&inputs, &launch, placement).py()?;
        Ok(outs.into_iter().map(PyArr::new).collect())
    }

    fn __repr__(&self) -> String {
        format!("CustomKernel({:?})", self.0.name())
    }
}

/// metal_kernel(name: str, input_names: Sequence[str], output_names: Sequence[str], source: str, header: str = "", ensure_row_contiguous: bool = True, atomic_outputs: bool = False, compile_options: dict | None = None) -> CustomKernel
///
/// A custom Metal kernel from the body of its source. The returned kernel
/// is called with keywords (see ``CustomKernel``). This build has no Metal
/// back-end: a call raises RuntimeError, except inside ``export_function``,
/// where it is recorded for a build that can run it. ``compile_options``
/// may hold ``math_mode`` (``"safe"``, ``"relaxed"`` or ``"fast"``).
///
/// Example:
///     >>> import ferrox.core as mx
///     >>> k = mx.fast.metal_kernel("copy", ["a"], ["out"], "out[0] = a[0];")
///     >>> k
///     CustomKernel("copy")
#[pyfunction]
#[pyo3(signature = (name, input_names, output_names, source, header = String::new(), ensure_row_contiguous = true, atomic_outputs = false, compile_options = None))]
#[allow(clippy::too_many_arguments)]
fn metal_kernel(
    name: &str,
    input_names: Vec<String>,
    output_names: Vec<String>,
    source: &str,
    header: String,
    ensure_row_contiguous: bool,
    atomic_outputs: bool,
    compile_options: Option<&Any<'_>>,
) -> PyResult<PyCustomKernel> {
    let mut math_mode = None;
    if let Some(opts) = compile_options.filter(|o| !o.is_none()) {
        let opts = opts.cast::<PyDict>().map_err(|_| {
            PyValueError::new_err("metal_kernel: Expected `compile_options` to be a dict.")
        })?;
        for (k, v) in opts.iter() {
            let key: String = k.extract()?;
            if key != "math_mode" {
                return Err(PyValueError::new_err(format!(
                    "metal_kernel: Unknown compile option `{key}`."
                )));
            }
            math_mode = Some(v.extract::<String>()?);
        }
    }
    custom_kernel::metal_kernel(
        name,
        &strs(&input_names),
        &strs(&output_names),
        source,
        &header,
        ensure_row_contiguous,
        atomic_outputs,
        math_mode.as_deref(),
    )
    .py()
    .map(PyCustomKernel)
}

/// cuda_kernel(name: str, input_names: Sequence[str], output_names: Sequence[str], source: str, header: str = "", ensure_row_contiguous: bool = True, shared_memory: int = 0) -> CustomKernel
///
/// A custom CUDA kernel from the body of its source, called with keywords
/// as ``metal_kernel``'s kernels are. This build has no CUDA back-end: a
/// call raises RuntimeError, except inside ``export_function``.
///
/// Example:
///     >>> import ferrox.core as mx
///     >>> mx.fast.cuda_kernel("copy", ["a"], ["out"], "out[0] = a[0];")
///     CustomKernel("copy")
#[pyfunction]
#[pyo3(signature = (name, input_names, output_names, source, header = String::new(), ensure_row_contiguous = true, shared_memory = 0))]
fn cuda_kernel(
    name: &str,
    input_names: Vec<String>,
    output_names: Vec<String>,
    source: &str,
    header: String,
    ensure_row_contiguous: bool,
    shared_memory: usize,
) -> PyResult<PyCustomKernel> {
    custom_kernel::cuda_kernel(
        name,
        &strs(&input_names),
        &strs(&output_names),
        source,
        &header,
        ensure_row_contiguous,
        shared_memory,
    )
    .py()
    .map(PyCustomKernel)
}

/// Adds the kernel constructors to `ferrox.core.fast`.
pub fn register(fast: &Bound<'_, PyModule>) -> PyResult<()> {
    fast.add_class::<PyCustomKernel>()?;
    fast.add_function(wrap_pyfunction!(metal_kernel, fast)?)?;
    fast.add_function(wrap_pyfunction!(cuda_kernel, fast)?)?;
    Ok(())
}
