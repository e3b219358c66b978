//! Custom GPU kernels from source (`mlx.core.fast.metal_kernel` and
//! `cuda_kernel`): a kernel described by its source, names and launch
//! shape, called like an op.
//!
//! This build has no GPU back-end, so a kernel can never run here. What it
//! can do is what a CPU build of MLX does: describe the kernel, and record
//! a call of it in an exported function (inside an export's trace only,
//! see [`in_export_trace`]) so that a build with the back-end can import
//! and run it. A call outside an export is an error naming the missing
//! back-end, and a call that asks for the CPU is an error too (these
//! kernels only run on the GPU). A recorded node fails the same way when
//! evaluated, so an imported function holding one raises on call.
//!
//! [`in_export_trace`]: crate::graph::export::in_export_trace

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::export::in_export_trace;
use crate::graph::layout::Data;
use crate::graph::outputs::not_single;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use serde::{Deserialize, Serialize};

/// The back-end a custom kernel's source is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelBackend {
    /// Metal Shading Language (`metal_kernel`).
    Metal,
    /// CUDA C++ (`cuda_kernel`).
    Cuda,
}

impl KernelBackend {
    /// The op name errors carry (MLX's tags).
    fn op(self) -> &'static str {
        match self {
            KernelBackend::Metal => "metal_kernel",
            KernelBackend::Cuda => "cuda_kernel",
        }
    }

    fn missing(self) -> Error {
        let what = match self {
            KernelBackend::Metal => "No Metal back-end.",
            KernelBackend::Cuda => "No CUDA back-end.",
        };
        Error::runtime(self.op(), what)
    }
}

/// A template argument of a kernel (`template=[("T", mx.float32), ...]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TemplateArg {
    /// An integer constant.
    Int(i64),
    /// A boolean constant.
    Bool(bool),
    /// A type.
    Dtype(DType),
}

/// Where a call asks the kernel to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelPlacement {
    /// No device named: the GPU, as MLX defaults these kernels.
    Default,
    /// The GPU, named explicitly.
    Gpu,
    /// The CPU (or one of its streams): always refused.
    Cpu,
}

/// A custom kernel: its source and the names its source uses. Built by
/// [`metal_kernel`] or [`cuda_kernel`]; [`CustomKernel::call`] launches it.
///
/// ```
/// use ferrox::fast::custom_kernel::*;
/// let k = metal_kernel("copy", &["a"], &["out"], "out[0] = a[0];", "", true, false, None)?;
/// assert_eq!(k.name(), "copy");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomKernel {
    backend: KernelBackend,
    name: String,
    input_names: Vec<String>,
    output_names: Vec<String>,
    source: String,
    header: String,
    ensure_row_contiguous: bool,
    atomic_outputs: bool,
    /// Metal's math mode (`safe`, `relaxed` or `fast`), when given.
    math_mode: Option<String>,
    /// Dynamic shared memory per block, in bytes (CUDA; 0 for Metal).
    shared_memory: usize,
}

/// How one call launches a kernel: its outputs, grid and template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelLaunch {
    /// Shape of each output, in `output_names` order.
    pub output_shapes: Vec<Vec<usize>>,
    /// Dtype of each output.
    pub output_dtypes: Vec<DType>,
    /// Threads in the grid, per dimension.
    pub grid: [usize; 3],
    /// Threads per threadgroup (block), per dimension.
    pub threadgroup: [usize; 3],
    /// Template arguments, by name.
    pub template: Vec<(String, TemplateArg)>,
    /// The value every output starts from (uninitialised when `None`).
    pub init_value: Option<f32>,
}

/// A Metal kernel from source (MLX's `mx.fast.metal_kernel`). `math_mode`
/// is `"safe"`, `"relaxed"` or `"fast"` (MLX's `compile_options`).
///
/// ```
/// use ferrox::fast::custom_kernel::metal_kernel;
/// assert!(metal_kernel("k", &["a"], &[], "", "", true, false, None).is_err());
/// assert!(metal_kernel("k", &["a"], &["o"], "", "", true, false, Some("exact")).is_err());
/// ```
#[allow(clippy::too_many_arguments)]
pub fn metal_kernel(
    name: &str,
    input_names: &[&str],
    output_names: &[&str],
    source: &str,
    header: &str,
    ensure_row_contiguous: bool,
    atomic_outputs: bool,
    math_mode: Option<&str>,
) -> Result<CustomKernel> {
    if let Some(mode) = math_mode {
        if !matches!(mode, "safe" | "relaxed" | "fast") {
            return Err(Error::value(
                "metal_kernel",
                format!("Expected math_mode to be 'safe', 'relaxed', or 'fast', got {mode:?}."),
            ));
        }
    }
    CustomKernel::new(
        KernelBackend::Metal,
        name,
        input_names,
        output_names,
        source,
        header,
        ensure_row_contiguous,
        atomic_outputs,
        math_mode.map(str::to_string),
        0,
    )
}

/// A CUDA kernel from source (MLX's `mx.fast.cuda_kernel`), with
/// `shared_memory` bytes of dynamic shared memory per block.
///
/// ```
/// use ferrox::fast::custom_kernel::cuda_kernel;
/// let k = cuda_kernel("k", &["a"], &["o"], "o[0] = a[0];", "", true, 0)?;
/// assert_eq!(k.output_names(), ["o".to_string()]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn cuda_kernel(
    name: &str,
    input_names: &[&str],
    output_names: &[&str],
    source: &str,
    header: &str,
    ensure_row_contiguous: bool,
    shared_memory: usize,
) -> Result<CustomKernel> {
    CustomKernel::new(
        KernelBackend::Cuda,
        name,
        input_names,
        output_names,
        source,
        header,
        ensure_row_contiguous,
        false,
        None,
        shared_memory,
    )
}

impl CustomKernel {
    #[allow(clippy::too_many_arguments)]
    fn new(
        backend: KernelBackend,
        name: &str,
        input_names: &[&str],
        output_names: &[&str],
        source: &str,
        header: &str,
        ensure_row_contiguous: bool,
        atomic_outputs: bool,
        math_mode: Option<String>,
        shared_memory: usize,
    ) -> Result<CustomKernel> {
        if output_names.is_empty() {
            return Err(Error::value(
                backend.op(),
                "Must specify at least one output.",
            ));
        }
        Ok(CustomKernel {
            backend,
            name: name.to_string(),
            input_names: input_names.iter().map(|s| s.to_string()).collect(),
            output_names: output_names.iter().map(|s| s.to_string()).collect(),
            source: source.to_string(),
            header: header.to_string(),
            ensure_row_contiguous,
            atomic_outputs,
            math_mode,
            shared_memory,
        })
    }

    /// The kernel's source: its header, then its body.
    ///
    /// ```
    /// let k = ferrox::fast::custom_kernel::cuda_kernel("id", &[], &["o"], "o[0] = 1;", "// h", true, 0)?;
    /// assert_eq!(k.source(), "// h\no[0] = 1;");
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn source(&self) -> String {
        if self.header.is_empty() {
            self.source.clone()
        } else {
            format!("{}\n{}", self.header, self.source)
        }
    }

    /// The kernel's name.
    ///
    /// ```
    /// let k = ferrox::fast::custom_kernel::cuda_kernel("id", &[], &["o"], "", "", true, 0)?;
    /// assert_eq!(k.name(), "id");
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The output names, in order.
    ///
    /// ```
    /// let k = ferrox::fast::custom_kernel::cuda_kernel("id", &[], &["o", "p"], "", "", true, 0)?;
    /// assert_eq!(k.output_names().len(), 2);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn output_names(&self) -> &[String] {
        &self.output_names
    }

    /// Launches the kernel on `inputs`; the outputs are lazy arrays shaped
    /// as `launch` says. Checks the argument counts, then the placement:
    /// the CPU is refused ("Only supports the GPU."), and without a GPU
    /// back-end (always, in this build) the call is an error unless it is
    /// part of an export's trace, where it is recorded for the importer.
    ///
    /// ```
    /// use ferrox::fast::custom_kernel::*;
    /// use ferrox::graph::export::with_export_trace;
    /// let k = metal_kernel("copy", &["a"], &["out"], "out[0] = a[0];", "", true, false, None)?;
    /// let a = ferrox::zeros(&[4], ferrox::DType::Float32)?;
    /// let launch = KernelLaunch {
    ///     output_shapes: vec![vec![4]],
    ///     output_dtypes: vec![ferrox::DType::Float32],
    ///     grid: [4, 1, 1],
    ///     threadgroup: [4, 1, 1],
    ///     template: vec![],
    ///     init_value: None,
    /// };
    /// let e = k.call(&[a.clone()], &launch, KernelPlacement::Default).unwrap_err();
    /// assert!(e.to_string().contains("No Metal back-end"));
    /// let out = with_export_trace(|| k.call(&[a.clone()], &launch, KernelPlacement::Gpu))?;
    /// assert_eq!(out[0].shape(), &[4]);
    /// assert!(out[0].eval().is_err());
    /// assert!(with_export_trace(|| k.call(&[a], &launch, KernelPlacement::Cpu)).is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn call(
        &self,
        inputs: &[Array],
        launch: &KernelLaunch,
        placement: KernelPlacement,
    ) -> Result<Vec<Array>> {
        let op = self.backend.op();
        let count = |what: &str, got: usize, want: usize| {
            if got == want {
                Ok(())
            } else {
                Err(Error::value(
                    op,
                    format!("Expected `{what}` to have size {want} but got size {got}."),
                ))
            }
        };
        count("inputs", inputs.len(), self.input_names.len())?;
        count(
            "output_shapes",
            launch.output_shapes.len(),
            self.output_names.len(),
        )?;
        count(
            "output_dtypes",
            launch.output_dtypes.len(),
            self.output_names.len(),
        )?;
        if !in_export_trace() {
            return Err(self.backend.missing());
        }
        if placement == KernelPlacement::Cpu {
            return Err(Error::value(op, "Only supports the GPU."));
        }
        for shape in &launch.output_shapes {
            crate::graph::layout::checked_numel(op, shape)?;
        }
        Ok(self.node(inputs, launch))
    }

    /// The kernel's node on `inputs` (no placement check: an import
    /// records what the exporter recorded).
    fn node(&self, inputs: &[Array], launch: &KernelLaunch) -> Vec<Array> {
        let outputs = launch
            .output_shapes
            .iter()
            .cloned()
            .zip(launch.output_dtypes.iter().copied())
            .collect();
        let call = KernelCall {
            kernel: self.clone(),
            launch: launch.clone(),
        };
        Array::from_op_multi(outputs, call, inputs.to_vec())
    }
}

/// The primitive of one launch of a [`CustomKernel`]: the kernel and its
/// launch. Evaluating it is an error (no GPU back-end in this build); it
/// exists to be exported.
///
/// ```
/// use ferrox::fast::custom_kernel::*;
/// let k = cuda_kernel("k", &[], &["o"], "", "", true, 0)?;
/// let launch = KernelLaunch {
///     output_shapes: vec![vec![2]],
///     output_dtypes: vec![ferrox::DType::Int32],
///     grid: [2, 1, 1],
///     threadgroup: [2, 1, 1],
///     template: vec![("N".into(), TemplateArg::Int(2))],
///     init_value: Some(0.0),
/// };
/// let out = ferrox::graph::export::with_export_trace(|| k.call(&[], &launch, KernelPlacement::Default))?;
/// assert!(out[0].eval().unwrap_err().to_string().contains("No CUDA back-end"));
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelCall {
    kernel: CustomKernel,
    launch: KernelLaunch,
}

impl crate::graph::export::Exportable for KernelCall {
    const KIND: &'static str = "custom_kernel";
    fn rebuild_multi(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        let k = &self.kernel;
        let op = k.backend.op();
        let consistent = inputs.len() == k.input_names.len()
            && self.launch.output_shapes.len() == k.output_names.len()
            && self.launch.output_dtypes.len() == k.output_names.len();
        if !consistent {
            return Err(crate::graph::export::wrong_inputs(op, inputs.len()));
        }
        for shape in &self.launch.output_shapes {
            crate::graph::layout::checked_numel(op, shape)?;
        }
        Ok(k.node(inputs, &self.launch))
    }
}

impl Primitive for KernelCall {
    fn name(&self) -> &'static str {
        self.kernel.backend.op()
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        Err(not_single(self.name()))
    }
    fn eval_cpu_multi(&self, _inputs: &[Operand<'_>], _outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
        Err(self.kernel.backend.missing())
    }
    /// A kernel's output shapes are the ones its launch declares, whatever
    /// the input shapes (custom kernels have no shape inference), so a
    /// shapeless replay keeps them.
    fn output_shapes(&self, _input_shapes: &[&[usize]]) -> Option<Result<Vec<Vec<usize>>>> {
        Some(Ok(self.launch.output_shapes.clone()))
    }
    crate::primitive_common!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::export::with_export_trace;

    fn launch(n: usize) -> KernelLaunch {
        KernelLaunch {
            output_shapes: vec![vec![n]],
            output_dtypes: vec![DType::Float32],
            grid: [n, 1, 1],
            threadgroup: [n.min(256), 1, 1],
            template: vec![("T".into(), TemplateArg::Dtype(DType::Float32))],
            init_value: None,
        }
    }

    fn copy_kernel() -> CustomKernel {
        metal_kernel(
            "copy",
            &["a"],
            &["out"],
            "uint i = thread_position_in_grid.x; out[i] = a[i];",
            "",
            true,
            false,
            Some("safe"),
        )
        .expect("kernel")
    }

    #[test]
    fn argument_counts_are_checked_before_the_back_end() {
        let k = copy_kernel();
        let e = k
            .call(&[], &launch(2), KernelPlacement::Default)
            .expect_err("no inputs");
        assert!(
            e.to_string()
                .contains("`inputs` to have size 1 but got size 0")
        );
        let mut two = launch(2);
        two.output_dtypes.push(DType::Int32);
        let a = crate::ops::creation::zeros(&[2], DType::Float32).expect("zeros");
        let e = k
            .call(&[a], &two, KernelPlacement::Default)
            .expect_err("dtypes");
        assert!(e.to_string().contains("output_dtypes"));
    }

    #[test]
    fn a_recorded_launch_keeps_its_outputs_and_fails_to_run() {
        let k = copy_kernel();
        let a = crate::ops::creation::zeros(&[3], DType::Float32).expect("zeros");
        let outs =
            with_export_trace(|| k.call(&[a], &launch(3), KernelPlacement::Gpu)).expect("recorded");
        assert_eq!(outs.len(), 1);
        assert_eq!(outs[0].dtype(), DType::Float32);
        let e = outs[0].eval().expect_err("no back-end");
        assert_eq!(e.kind(), crate::error::ErrorKind::Runtime);
        assert!(e.to_string().contains("No Metal back-end."));
    }

    #[test]
    fn an_absurd_output_shape_is_an_error() {
        let k = copy_kernel();
        let a = crate::ops::creation::zeros(&[3], DType::Float32).expect("zeros");
        let mut huge = launch(3);
        huge.output_shapes = vec![vec![usize::MAX, 4]];
        let r = with_export_trace(|| k.call(&[a], &huge, KernelPlacement::Default));
        assert!(r.is_err());
    }
}
