//! Exported functions (MLX's `export_function`, `import_function`,
//! `exporter`): a traced function written to a file and run again without
//! its source.
//!
//! Export traces the function on placeholders shaped like the example
//! inputs, simplifies the tape (as `compile` does) and writes it as JSON
//! with the constants it captured, in a safetensors container (the format
//! is in `docs/files.md`, "Exported functions"). Import reads the file,
//! rebuilds every instruction *through its op's builder* (so parameters a
//! file could lie about are validated like user arguments), traces that
//! once per exported signature, and simplifies and fuses the result. The
//! [`ImportedFunction`] then only replays those tapes: clones share them,
//! any thread may call it, and nothing runs the original code.
//!
//! ```
//! use ferrox::io::function::{export_function, import_function, Kwargs};
//! use ferrox::{Array, DType};
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("f.fxfn");
//! let f = |xs: &[Array], _: &Kwargs| Ok(vec![ferrox::exp(&(&xs[0] * 2.0)?)?]);
//! let x = ferrox::ones(&[3], DType::Float32)?;
//! export_function(&path, f, &[x.clone()], &Kwargs::new(), false, "")?;
//! let g = import_function(&path)?;
//! let y = g.call(&[x], &Kwargs::new())?;
//! assert_eq!(y[0].to_vec::<f32>()?, vec![2f32.exp(); 3]);
//! # Ok::<(), ferrox::Error>(())
//! ```

mod registry;

use super::Arrays;
use super::atomic::write_atomic;
use super::source::Source;
use crate::compile::fuse::fuse;
use crate::compile::simplify::simplify;
use crate::compile::tape::{Ref, Tape};
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::graph::array::Array;
use crate::graph::outputs::output_index;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Keyword inputs by name (sorted: the order in a trace's signature).
pub type Kwargs = BTreeMap<String, Array>;

/// The `format` value of an exported function's program.
pub const FORMAT: &str = "ferrox.function";
/// The version of the program layout this build writes and reads.
pub const VERSION: u32 = 1;
/// The safetensors metadata key holding the program (JSON).
const PROGRAM_KEY: &str = "ferrox.function";
/// The safetensors metadata key holding the user's metadata string.
const METADATA_KEY: &str = "metadata";

// ------------------------------------------------------------------ format

/// One input or output: shape and dtype.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Spec {
    shape: Vec<usize>,
    dtype: DType,
}

/// Where an instruction's operand comes from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Operand {
    /// The i-th input of the trace (positional inputs, then keywords).
    Input(usize),
    /// Output `j` of instruction `k` (earlier in the list).
    Node(usize, usize),
    /// Constant array `c` (tensor `c{c}` of the file).
    Const(usize),
}

/// One node: its kind, parameters, operands and outputs.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Instr {
    /// The exportable kind (the registry's name).
    op: String,
    /// The primitive's name (for readers and error messages).
    name: String,
    params: serde_json::Value,
    inputs: Vec<Operand>,
    outputs: Vec<Spec>,
}

/// One trace: a signature and its program.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Trace {
    args: Vec<Spec>,
    kwargs: Vec<(String, Spec)>,
    instrs: Vec<Instr>,
    outputs: Vec<Operand>,
}

/// The whole program of a file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Program {
    format: String,
    version: u32,
    shapeless: bool,
    constants: usize,
    traces: Vec<Trace>,
}

fn spec_of(a: &Array) -> Spec {
    Spec {
        shape: a.shape().to_vec(),
        dtype: a.dtype(),
    }
}

// ------------------------------------------------------------------ export

/// A function that can be exported: positional and keyword arrays in,
/// arrays out.
pub type ExportFn = dyn Fn(&[Array], &Kwargs) -> Result<Vec<Array>> + Send + Sync;

/// Writes traces of one function to one file, one trace per call
/// (MLX's `exporter`): several input shapes, argument counts or keyword
/// sets in one file. The file is rewritten (atomically) after each call, so
/// it is complete whenever a call returned; constants shared by several
/// traces are stored once.
///
/// ```
/// use ferrox::io::function::{exporter, import_function, Kwargs};
/// use ferrox::{Array, DType};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("sum.fxfn");
/// let mut ex = exporter(&path, |xs: &[Array], _: &Kwargs| {
///     let mut s = xs[0].clone();
///     for x in &xs[1..] { s = (&s + x)?; }
///     Ok(vec![s])
/// }, false, "");
/// let one = ferrox::ones(&[2], DType::Float32)?;
/// ex.call(&[one.clone()], &Kwargs::new())?;
/// ex.call(&[one.clone(), one.clone()], &Kwargs::new())?;
/// ex.close();
/// assert!(ex.call(&[one.clone()], &Kwargs::new()).is_err());
/// let f = import_function(&path)?;
/// assert_eq!(f.traces(), 2);
/// assert_eq!(f.call(&[one.clone(), one], &Kwargs::new())?[0].to_vec::<f32>()?, vec![2.0; 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub struct FunctionExporter {
    path: PathBuf,
    fun: Arc<ExportFn>,
    program: Program,
    metadata: String,
    /// Constants by array id, in file order.
    constants: Vec<Array>,
    ids: HashMap<u64, usize>,
    closed: bool,
}

/// An exporter writing traces of `fun` to `path` (see [`FunctionExporter`]).
pub fn exporter(
    path: impl AsRef<Path>,
    fun: impl Fn(&[Array], &Kwargs) -> Result<Vec<Array>> + Send + Sync + 'static,
    shapeless: bool,
    metadata: &str,
) -> FunctionExporter {
    FunctionExporter::new(path.as_ref(), Arc::new(fun), shapeless, metadata)
}

/// Exports one trace of `fun` on inputs like `args` and `kwargs` to `path`
/// (see the [module docs](self)); `metadata` is stored as it is and read
/// back by [`ImportedFunction::metadata`].
pub fn export_function(
    path: impl AsRef<Path>,
    fun: impl Fn(&[Array], &Kwargs) -> Result<Vec<Array>> + Send + Sync + 'static,
    args: &[Array],
    kwargs: &Kwargs,
    shapeless: bool,
    metadata: &str,
) -> Result<()> {
    let mut ex = exporter(path, fun, shapeless, metadata);
    ex.call(args, kwargs)?;
    ex.close();
    Ok(())
}

impl FunctionExporter {
    /// An exporter of `fun` (shared, so a binding can keep its own handle).
    ///
    /// ```
    /// use ferrox::io::function::{FunctionExporter, Kwargs};
    /// let dir = tempfile::tempdir().unwrap();
    /// let f = std::sync::Arc::new(|xs: &[ferrox::Array], _: &Kwargs| Ok(xs.to_vec()));
    /// let ex = FunctionExporter::new(&dir.path().join("id.fxfn"), f, false, "");
    /// assert_eq!(ex.traces(), 0);
    /// ```
    pub fn new(path: &Path, fun: Arc<ExportFn>, shapeless: bool, metadata: &str) -> Self {
        FunctionExporter {
            path: path.to_path_buf(),
            fun,
            program: Program {
                format: FORMAT.to_string(),
                version: VERSION,
                shapeless,
                constants: 0,
                traces: Vec::new(),
            },
            metadata: metadata.to_string(),
            constants: Vec::new(),
            ids: HashMap::new(),
            closed: false,
        }
    }

    /// Traces the function on inputs like `args` and `kwargs`, adds the
    /// trace and rewrites the file. A signature already exported (same
    /// shapes — ranks when shapeless —, dtypes and keywords) is an error.
    pub fn call(&mut self, args: &[Array], kwargs: &Kwargs) -> Result<()> {
        if self.closed {
            return Err(Error::runtime(
                "export_function",
                "the exporter is closed: no more traces can be added",
            ));
        }
        let trace = self.trace(args, kwargs)?;
        let shapeless = self.program.shapeless;
        if let Some(old) = self
            .program
            .traces
            .iter()
            .find(|t| same_signature(t, &trace, shapeless))
        {
            return Err(Error::value(
                "export_function",
                format!(
                    "a trace with this signature was already exported ({} inputs, keywords {:?})",
                    old.args.len(),
                    old.kwargs.iter().map(|(k, _)| k).collect::<Vec<_>>()
                ),
            ));
        }
        self.program.traces.push(trace);
        self.program.constants = self.constants.len();
        if let Err(e) = self.write() {
            self.program.traces.pop();
            return Err(e);
        }
        Ok(())
    }

    /// Stops adding traces (the file is already complete).
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// Traces added so far.
    pub fn traces(&self) -> usize {
        self.program.traces.len()
    }

    fn trace(&mut self, args: &[Array], kwargs: &Kwargs) -> Result<Trace> {
        let names: Vec<String> = kwargs.keys().cloned().collect();
        let inputs: Vec<Array> = args.iter().chain(kwargs.values()).cloned().collect();
        let n = args.len();
        let fun = self.fun.clone();
        let tape = Tape::trace(&inputs, |xs| {
            let kw: Kwargs = names.iter().cloned().zip(xs[n..].iter().cloned()).collect();
            fun(&xs[..n], &kw)
        })?;
        let tape = simplify(tape);
        // Tape position -> (file instruction, output).
        let mut at: Vec<Option<(usize, usize)>> = Vec::with_capacity(tape.instrs.len());
        let mut instrs: Vec<Instr> = Vec::new();
        let mut operand = |r: &Ref, at: &[Option<(usize, usize)>]| -> Result<Operand> {
            Ok(match r {
                Ref::Input(i) => Operand::Input(*i),
                Ref::Node(k) => {
                    let (i, j) = at.get(*k).copied().flatten().ok_or_else(|| {
                        Error::runtime("export_function", "internal error: an unplaced node")
                    })?;
                    Operand::Node(i, j)
                }
                Ref::Const(a) => Operand::Const(self.constant(a)),
            })
        };
        for ins in &tape.instrs {
            if let Some(index) = output_index(ins.op.as_ref()) {
                let group = match ins.inputs.first() {
                    Some(r @ Ref::Node(_)) => operand(r, &at)?,
                    _ => Operand::Input(usize::MAX),
                };
                let Operand::Node(g, _) = group else {
                    return Err(Error::runtime(
                        "export_function",
                        "internal error: an output without its group",
                    ));
                };
                at.push(Some((g, index)));
                continue;
            }
            let (kind, params) = registry::describe(ins.op.as_ref())?;
            let inputs = ins
                .inputs
                .iter()
                .map(|r| operand(r, &at))
                .collect::<Result<Vec<_>>>()?;
            let outputs = match &ins.outputs {
                Some(specs) => specs
                    .iter()
                    .map(|(shape, dtype)| Spec {
                        shape: shape.clone(),
                        dtype: *dtype,
                    })
                    .collect(),
                None => vec![Spec {
                    shape: ins.shape.clone(),
                    dtype: ins.dtype,
                }],
            };
            at.push(Some((instrs.len(), 0)));
            instrs.push(Instr {
                op: kind.to_string(),
                name: ins.op.name().to_string(),
                params,
                inputs,
                outputs,
            });
        }
        let outputs = tape
            .outputs
            .iter()
            .map(|r| operand(r, &at))
            .collect::<Result<Vec<_>>>()?;
        Ok(Trace {
            args: args.iter().map(spec_of).collect(),
            kwargs: kwargs.iter().map(|(k, a)| (k.clone(), spec_of(a))).collect(),
            instrs,
            outputs,
        })
    }

    /// The index of constant `a`, adding it when new.
    fn constant(&mut self, a: &Array) -> usize {
        *self.ids.entry(a.id()).or_insert_with(|| {
            self.constants.push(a.clone());
            self.constants.len() - 1
        })
    }

    fn write(&self) -> Result<()> {
        let op = "export_function";
        let mut arrays = Arrays::new();
        for (i, c) in self.constants.iter().enumerate() {
            arrays.insert(format!("c{i}"), c.clone());
        }
        let program = serde_json::to_string(&self.program)
            .map_err(|e| Error::runtime(op, format!("program: {e}")))?;
        let meta = BTreeMap::from([
            (PROGRAM_KEY.to_string(), program),
            (METADATA_KEY.to_string(), self.metadata.clone()),
        ]);
        write_atomic(&self.path, op, |w| {
            super::safetensors::write(w, &arrays, Some(&meta))
        })
    }
}

fn same_signature(a: &Trace, b: &Trace, shapeless: bool) -> bool {
    let same = |x: &Spec, y: &Spec| {
        x.dtype == y.dtype
            && if shapeless {
                x.shape.len() == y.shape.len()
            } else {
                x.shape == y.shape
            }
    };
    a.args.len() == b.args.len()
        && a.kwargs.len() == b.kwargs.len()
        && a.args.iter().zip(&b.args).all(|(x, y)| same(x, y))
        && a
            .kwargs
            .iter()
            .zip(&b.kwargs)
            .all(|((n, x), (m, y))| n == m && same(x, y))
}

// ------------------------------------------------------------------ import

struct ImportedTrace {
    args: Vec<Spec>,
    kwargs: Vec<(String, Spec)>,
    tape: Tape,
}

struct Imported {
    traces: Vec<ImportedTrace>,
    shapeless: bool,
    metadata: String,
}

/// A function read back from a file (see the [module docs](self)). Cheap
/// to clone, `Send + Sync`: every clone and every thread replays the same
/// tapes, built once when the file was imported.
#[derive(Clone)]
pub struct ImportedFunction {
    inner: Arc<Imported>,
}

/// Imports the function exported to `path`.
pub fn import_function(path: impl AsRef<Path>) -> Result<ImportedFunction> {
    import_source(&Source::open(path.as_ref(), "import_function")?)
}

/// Imports an exported function from the bytes of its file (`name` names it
/// in errors).
///
/// ```
/// let e = ferrox::io::function::import_function_bytes(b"not a file", "<memory>");
/// assert!(e.is_err());
/// ```
pub fn import_function_bytes(bytes: &[u8], name: &str) -> Result<ImportedFunction> {
    import_source(&Source::from_bytes(bytes, name, "import_function")?)
}

fn import_source(src: &Source) -> Result<ImportedFunction> {
    let (arrays, meta) = super::safetensors::load_source(src)?;
    let bad = |msg: String| Error::value("import_function", format!("{}: {msg}", src.name));
    let program = meta.get(PROGRAM_KEY).ok_or_else(|| {
        bad("not an exported function (no program in the file's metadata)".into())
    })?;
    let version: serde_json::Value = serde_json::from_str(program)
        .map_err(|e| bad(format!("the program is not valid JSON: {e}")))?;
    if version.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(bad(format!("the program's format is not {FORMAT:?}")));
    }
    match version.get("version").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(VERSION) => {}
        other => {
            return Err(bad(format!(
                "unsupported version {} (this build reads version {VERSION})",
                other.map_or("missing".to_string(), |v| v.to_string())
            )));
        }
    }
    let program: Program =
        serde_json::from_value(version).map_err(|e| bad(format!("bad program: {e}")))?;
    let constants = (0..program.constants)
        .map(|i| {
            arrays
                .get(&format!("c{i}"))
                .cloned()
                .ok_or_else(|| bad(format!("constant c{i} is missing")))
        })
        .collect::<Result<Vec<_>>>()?;
    let traces = program
        .traces
        .into_iter()
        .enumerate()
        .map(|(t, trace)| {
            build_trace(trace, &constants).map_err(|e| {
                Error::new(
                    e.kind(),
                    "import_function",
                    format!("{}: trace {t}: {}", src.name, e),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ImportedFunction {
        inner: Arc::new(Imported {
            traces,
            shapeless: program.shapeless,
            metadata: meta.get(METADATA_KEY).cloned().unwrap_or_default(),
        }),
    })
}

/// Rebuilds one trace through the builders and compiles it.
fn build_trace(trace: Trace, constants: &[Array]) -> Result<ImportedTrace> {
    let specs: Vec<(Vec<usize>, DType)> = trace
        .args
        .iter()
        .chain(trace.kwargs.iter().map(|(_, s)| s))
        .map(|s| (s.shape.clone(), s.dtype))
        .collect();
    let tape = Tape::trace_specs(&specs, |xs| run_program(&trace, xs, constants))?;
    Ok(ImportedTrace {
        args: trace.args,
        kwargs: trace.kwargs,
        tape: fuse(simplify(tape)).isolate_ops(),
    })
}

/// Evaluates a program's instructions on `inputs` (lazily: builds nodes).
fn run_program(trace: &Trace, inputs: &[Array], constants: &[Array]) -> Result<Vec<Array>> {
    let mut values: Vec<Vec<Array>> = Vec::with_capacity(trace.instrs.len());
    let get = |o: &Operand, values: &[Vec<Array>]| -> Result<Array> {
        let found = match *o {
            Operand::Input(i) => inputs.get(i),
            Operand::Node(k, j) => values.get(k).and_then(|v| v.get(j)),
            Operand::Const(c) => constants.get(c),
        };
        found.cloned().ok_or_else(|| {
            Error::value(
                "import_function",
                format!("operand {o:?} refers to nothing"),
            )
        })
    };
    for (k, ins) in trace.instrs.iter().enumerate() {
        let args = ins
            .inputs
            .iter()
            .map(|o| get(o, &values))
            .collect::<Result<Vec<_>>>()?;
        let outs = registry::rebuild(&ins.op, &ins.params, &args).map_err(|e| {
            Error::new(
                e.kind(),
                "import_function",
                format!("instruction {k} ({}): {e}", ins.name),
            )
        })?;
        let got: Vec<Spec> = outs.iter().map(spec_of).collect();
        if got != ins.outputs {
            return Err(Error::value(
                "import_function",
                format!(
                    "instruction {k} ({}) gives {got:?} but the file says {:?}",
                    ins.name, ins.outputs
                ),
            ));
        }
        values.push(outs);
    }
    trace.outputs.iter().map(|o| get(o, &values)).collect()
}

impl ImportedFunction {
    /// Calls the function: `args` and `kwargs` must match one exported
    /// trace (same count, keyword names, dtypes, and shapes — ranks when
    /// exported shapeless); else a [`ErrorKind::Value`] error.
    pub fn call(&self, args: &[Array], kwargs: &Kwargs) -> Result<Vec<Array>> {
        let inner = &self.inner;
        let fits = |s: &Spec, a: &Array| {
            s.dtype == a.dtype()
                && if inner.shapeless {
                    s.shape.len() == a.ndim()
                } else {
                    s.shape == a.shape()
                }
        };
        let trace = inner.traces.iter().find(|t| {
            t.args.len() == args.len()
                && t.kwargs.len() == kwargs.len()
                && t.args.iter().zip(args).all(|(s, a)| fits(s, a))
                && t.kwargs
                    .iter()
                    .zip(kwargs)
                    .all(|((n, s), (m, a))| n == m && fits(s, a))
        });
        let Some(trace) = trace else {
            let shapes: Vec<String> = args
                .iter()
                .map(|a| format!("{:?} {}", a.shape(), a.dtype()))
                .chain(
                    kwargs
                        .iter()
                        .map(|(k, a)| format!("{k}={:?} {}", a.shape(), a.dtype())),
                )
                .collect();
            return Err(Error::new(
                ErrorKind::Value,
                "import_function",
                format!(
                    "no exported trace takes these inputs ({}); the file has {} trace(s)",
                    shapes.join(", "),
                    inner.traces.len()
                ),
            ));
        };
        let inputs: Vec<Array> = args.iter().chain(kwargs.values()).cloned().collect();
        trace.tape.replay(&inputs, inner.shapeless)
    }

    /// The metadata string stored with the function ("" when none).
    pub fn metadata(&self) -> &str {
        &self.inner.metadata
    }

    /// How many traces (signatures) the file holds.
    pub fn traces(&self) -> usize {
        self.inner.traces.len()
    }

    /// Whether the function was exported shapeless.
    pub fn shapeless(&self) -> bool {
        self.inner.shapeless
    }

    /// Instructions of each imported trace after simplification and
    /// fusion (for tests and diagnostics).
    pub fn op_names(&self) -> Vec<Vec<&'static str>> {
        self.inner.traces.iter().map(|t| t.tape.op_names()).collect()
    }
}

/// The kinds of primitive this build can export, sorted.
///
/// ```
/// assert!(ferrox::io::function::exportable_kinds().contains(&"matmul"));
/// ```
pub fn exportable_kinds() -> Vec<&'static str> {
    registry::kinds()
}
