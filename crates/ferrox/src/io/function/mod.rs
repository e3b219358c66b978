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

/// The tape with its draws from the default key fixed to keys drawn now
/// from the exporting thread's default key, in order (as MLX exports
/// them): an exported file replays the numbers of its export, so
/// `seed(s)` before exporting and before calling the original function
/// gives the same numbers. A file has no per-call key input.
fn bake_key_draws(mut tape: Tape, args: usize) -> Result<Tape> {
    if tape.key_draws == 0 {
        return Ok(tape);
    }
    let keys = (0..tape.key_draws)
        .map(|_| crate::transforms::default_key::default_key())
        .collect::<Result<Vec<_>>>()?;
    let bake = |r: &mut Ref| {
        if let Ref::Input(i) = *r {
            if let Some(key) = i.checked_sub(args).and_then(|j| keys.get(j)) {
                *r = Ref::Const(key.clone());
            }
        }
    };
    for ins in &mut tape.instrs {
        ins.inputs.iter_mut().for_each(bake);
    }
    tape.outputs.iter_mut().for_each(bake);
    tape.key_draws = 0;
    Ok(tape)
}

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
        let tape = crate::graph::export::with_export_trace(|| {
            Tape::trace(&inputs, |xs| {
                let kw: Kwargs = names.iter().cloned().zip(xs[n..].iter().cloned()).collect();
                fun(&xs[..n], &kw)
            })
        })?;
        let tape = bake_key_draws(tape, inputs.len())?;
        let tape = simplify(tape);
        let mut enc = Encoder {
            ex: self,
            instrs: Vec::new(),
            memo: HashMap::new(),
            at: Vec::with_capacity(tape.instrs.len()),
        };
        for ins in &tape.instrs {
            if let Some(index) = output_index(ins.op.as_ref()) {
                let group = match ins.inputs.first() {
                    Some(r @ Ref::Node(_)) => enc.operand(r)?,
                    _ => Operand::Input(usize::MAX),
                };
                let Operand::Node(g, _) = group else {
                    return Err(Error::runtime(
                        "export_function",
                        "internal error: an output without its group",
                    ));
                };
                enc.at.push((g, index));
                continue;
            }
            let (kind, params) = registry::describe(ins.op.as_ref())?;
            let inputs = ins
                .inputs
                .iter()
                .map(|r| enc.operand(r))
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
            let k = enc.push(kind, ins.op.name(), params, inputs, outputs);
            enc.at.push((k, 0));
        }
        let outputs = tape
            .outputs
            .iter()
            .map(|r| enc.operand(r))
            .collect::<Result<Vec<_>>>()?;
        let instrs = enc.instrs;
        Ok(Trace {
            args: args.iter().map(spec_of).collect(),
            kwargs: kwargs
                .iter()
                .map(|(k, a)| (k.clone(), spec_of(a)))
                .collect(),
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

/// Builds one trace's instruction list.
struct Encoder<'a> {
    ex: &'a mut FunctionExporter,
    instrs: Vec<Instr>,
    /// Unevaluated captured arrays already encoded, by id.
    memo: HashMap<u64, Operand>,
    /// Tape position -> (file instruction, output).
    at: Vec<(usize, usize)>,
}

impl Encoder<'_> {
    fn push(
        &mut self,
        kind: &str,
        name: &str,
        params: serde_json::Value,
        inputs: Vec<Operand>,
        outputs: Vec<Spec>,
    ) -> usize {
        self.instrs.push(Instr {
            op: kind.to_string(),
            name: name.to_string(),
            params,
            inputs,
            outputs,
        });
        self.instrs.len() - 1
    }

    fn operand(&mut self, r: &Ref) -> Result<Operand> {
        Ok(match r {
            Ref::Input(i) => Operand::Input(*i),
            Ref::Node(k) => {
                let (i, j) = self.at.get(*k).copied().ok_or_else(|| {
                    Error::runtime("export_function", "internal error: an unplaced node")
                })?;
                Operand::Node(i, j)
            }
            Ref::Const(a) => self.captured(a),
        })
    }

    /// A captured array: an evaluated one is stored; an unevaluated one is
    /// exported as the graph that computes it (down to evaluated arrays),
    /// as far as its ops export, so `big + 0` costs an instruction, not a
    /// second copy of `big`. An op without an export is stored evaluated.
    fn captured(&mut self, a: &Array) -> Operand {
        if let Some(o) = self.memo.get(&a.id()) {
            return *o;
        }
        for n in pending_graph(a) {
            if self.memo.contains_key(&n.id()) {
                continue;
            }
            let Some(op) = n.primitive().cloned() else {
                continue;
            };
            let group = n
                .inputs()
                .first()
                .and_then(|g| self.memo.get(&g.id()).copied());
            let operand = match (output_index(op.as_ref()), group) {
                (Some(index), Some(Operand::Node(g, _))) => Operand::Node(g, index),
                (Some(_), _) => Operand::Const(self.ex.constant(&n)),
                (None, _) => match registry::describe(op.as_ref()) {
                    Ok((kind, params)) => {
                        let inputs = n
                            .inputs()
                            .iter()
                            .map(|i| match self.memo.get(&i.id()) {
                                Some(o) => *o,
                                None => Operand::Const(self.ex.constant(i)),
                            })
                            .collect();
                        let outputs = match n.output_specs() {
                            Some(specs) => specs
                                .iter()
                                .map(|(shape, dtype)| Spec {
                                    shape: shape.clone(),
                                    dtype: *dtype,
                                })
                                .collect(),
                            None => vec![spec_of(&n)],
                        };
                        Operand::Node(self.push(kind, op.name(), params, inputs, outputs), 0)
                    }
                    // A group node has no value of its own: its outputs
                    // are stored one by one instead.
                    Err(_) if n.output_specs().is_some() => continue,
                    Err(_) => Operand::Const(self.ex.constant(&n)),
                },
            };
            self.memo.insert(n.id(), operand);
        }
        match self.memo.get(&a.id()) {
            Some(o) => *o,
            None => Operand::Const(self.ex.constant(a)),
        }
    }
}

/// The unevaluated nodes that compute `a`, inputs first (iterative: deep
/// graphs do not overflow the stack). Evaluated arrays and leaves end it.
fn pending_graph(a: &Array) -> Vec<Array> {
    let lazy = |x: &Array| x.primitive().is_some() && !x.is_available();
    let mut order = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![(a.clone(), false)];
    while let Some((x, expanded)) = stack.pop() {
        if expanded {
            order.push(x);
            continue;
        }
        if !lazy(&x) || !seen.insert(x.id()) {
            continue;
        }
        let inputs = x.inputs();
        stack.push((x, true));
        for i in inputs.into_iter().rev() {
            if lazy(&i) && !seen.contains(&i.id()) {
                stack.push((i, false));
            }
        }
    }
    order
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
        && a.kwargs
            .iter()
            .zip(&b.kwargs)
            .all(|((n, x), (m, y))| n == m && same(x, y))
}

/// One trace of a function as data, for a callback instead of a file
/// (MLX's `export_function(callback, ...)`): named inputs, keyword names,
/// captured constants, outputs, and each instruction in order.
#[derive(Debug, Clone)]
pub struct TraceDescription {
    /// Inputs (positional, then keywords) as (name, shape, dtype).
    pub inputs: Vec<(String, Vec<usize>, DType)>,
    /// (keyword, the name of its input).
    pub keywords: Vec<(String, String)>,
    /// Stored constants by name.
    pub constants: Vec<(String, Array)>,
    /// The outputs, as (name, shape, dtype).
    pub outputs: Vec<(String, Vec<usize>, DType)>,
    /// The instructions, inputs first.
    pub primitives: Vec<PrimitiveDescription>,
}

/// One instruction of a [`TraceDescription`].
#[derive(Debug, Clone)]
pub struct PrimitiveDescription {
    /// The primitive's name (`"subtract"`, `"astype"`).
    pub name: String,
    /// Its exportable kind (`"binary"`, `"astype"`).
    pub kind: String,
    /// Its parameters, as in the file.
    pub params: serde_json::Value,
    /// The names of its operands.
    pub inputs: Vec<String>,
    /// Its outputs, as (name, shape, dtype).
    pub outputs: Vec<(String, Vec<usize>, DType)>,
}

/// Traces `fun` like [`export_function`] and returns the trace as data
/// instead of writing it.
///
/// ```
/// use ferrox::io::function::{describe_function, Kwargs};
/// let x = ferrox::ones(&[2], ferrox::DType::Float32)?;
/// let d = describe_function(|xs: &[ferrox::Array], _: &Kwargs| Ok(vec![ferrox::abs(&(&xs[0] - 1.0)?)?]),
///                           &[x], &Kwargs::new(), false)?;
/// let names: Vec<&str> = d.primitives.iter().map(|p| p.name.as_str()).collect();
/// assert_eq!(names, ["subtract", "abs"]);
/// assert_eq!(d.constants.len(), 1); // the scalar 1.0
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn describe_function(
    fun: impl Fn(&[Array], &Kwargs) -> Result<Vec<Array>> + Send + Sync + 'static,
    args: &[Array],
    kwargs: &Kwargs,
    shapeless: bool,
) -> Result<TraceDescription> {
    let mut ex = FunctionExporter::new(Path::new(""), Arc::new(fun), shapeless, "");
    let trace = ex.trace(args, kwargs)?;
    let name = |o: &Operand| match *o {
        Operand::Input(i) => format!("i{i}"),
        Operand::Node(k, j) => format!("n{k}_{j}"),
        Operand::Const(c) => format!("c{c}"),
    };
    let specs = trace.args.iter().chain(trace.kwargs.iter().map(|(_, s)| s));
    let outputs = trace
        .outputs
        .iter()
        .map(|o| {
            let (shape, dtype) = match *o {
                Operand::Input(i) => specs.clone().nth(i).map(|s| (s.shape.clone(), s.dtype)),
                Operand::Node(k, j) => trace
                    .instrs
                    .get(k)
                    .and_then(|ins| ins.outputs.get(j))
                    .map(|s| (s.shape.clone(), s.dtype)),
                Operand::Const(c) => ex.constants.get(c).map(|a| (a.shape().to_vec(), a.dtype())),
            }
            .unwrap_or((vec![], DType::Float32));
            (name(o), shape, dtype)
        })
        .collect();
    Ok(TraceDescription {
        inputs: specs
            .clone()
            .enumerate()
            .map(|(i, s)| (format!("i{i}"), s.shape.clone(), s.dtype))
            .collect(),
        keywords: trace
            .kwargs
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.clone(), format!("i{}", trace.args.len() + i)))
            .collect(),
        constants: ex
            .constants
            .iter()
            .enumerate()
            .map(|(i, a)| (format!("c{i}"), a.clone()))
            .collect(),
        outputs,
        primitives: trace
            .instrs
            .iter()
            .enumerate()
            .map(|(k, ins)| PrimitiveDescription {
                name: ins.name.clone(),
                kind: ins.op.clone(),
                params: ins.params.clone(),
                inputs: ins.inputs.iter().map(name).collect(),
                outputs: ins
                    .outputs
                    .iter()
                    .enumerate()
                    .map(|(j, s)| (format!("n{k}_{j}"), s.shape.clone(), s.dtype))
                    .collect(),
            })
            .collect(),
    })
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
        self.inner
            .traces
            .iter()
            .map(|t| t.tape.op_names())
            .collect()
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
