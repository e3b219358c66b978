//! [`Module`]: a value holding named parameters, walked by [`Visit`].
//!
//! A layer is a plain struct whose parameters are [`Param`] fields and
//! whose sublayers are fields too (`Option`, `Vec` and `Box<dyn Layer>`
//! nest). [`impl_module!`](crate::impl_module) lists the fields once and
//! derives the walk; every other operation (`parameters`, `update`,
//! `freeze`, `train`, saving and loading) is a provided method of
//! [`Module`] built on that one walk, so a new layer writes no traversal
//! code.
//!
//! Parameters are immutable arrays: cloning a module is cheap (the arrays
//! are shared, never copied) and the transforms work on clones (see
//! [`crate::value_and_grad`]), so nothing a forward pass reads is ever
//! mutated in place. Updating swaps whole arrays.

use crate::error::{Result, value};
use crate::params::{Params, join_path};
use ferrox::{Array, DType};
use std::collections::{BTreeMap, BTreeSet};

/// One parameter: an array and whether gradients and optimizers skip it.
///
/// A *buffer* (a [`BatchNorm`](crate::layers::BatchNorm)'s running
/// statistics) is a parameter that stays frozen: `unfreeze` leaves it.
///
/// ```
/// use ferrox_nn::Param;
/// let mut p = Param::new(ferrox::ones(&[2], ferrox::DType::Float32)?);
/// assert_eq!(p.shape(), &[2]); // Param derefs to its Array
/// p.set_frozen(true);
/// assert!(p.is_frozen());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Param {
    value: Array,
    frozen: bool,
    buffer: bool,
}

impl Param {
    /// A trainable parameter.
    pub fn new(value: Array) -> Param {
        Param {
            value,
            frozen: false,
            buffer: false,
        }
    }
    /// A buffer: saved and loaded with the parameters, never trained.
    ///
    /// ```
    /// let mut b = ferrox_nn::Param::buffer(ferrox::zeros(&[2], ferrox::DType::Float32)?);
    /// b.set_frozen(false);
    /// assert!(b.is_frozen());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn buffer(value: Array) -> Param {
        Param {
            value,
            frozen: true,
            buffer: true,
        }
    }
    /// The array.
    pub fn value(&self) -> &Array {
        &self.value
    }
    /// Replaces the array.
    pub fn set(&mut self, value: Array) {
        self.value = value;
    }
    /// Whether transforms and optimizers skip this parameter.
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }
    /// Whether this is a buffer (always frozen; see [`Param::buffer`]).
    pub fn is_buffer(&self) -> bool {
        self.buffer
    }
    /// Freezes or unfreezes (a buffer stays frozen).
    pub fn set_frozen(&mut self, frozen: bool) {
        self.frozen = frozen || self.buffer;
    }
}

impl std::ops::Deref for Param {
    type Target = Array;
    fn deref(&self) -> &Array {
        &self.value
    }
}

/// A module's training flag (dropout and batch norm read it); a field of
/// this type is reached by [`Module::train`].
///
/// ```
/// let t = ferrox_nn::Training::default();
/// assert!(t.get());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Training(bool);

impl Default for Training {
    fn default() -> Self {
        Training(true)
    }
}

impl Training {
    /// Whether the module is in training mode.
    pub fn get(self) -> bool {
        self.0
    }
}

/// The dotted path of the field being visited.
///
/// ```
/// let mut p = ferrox_nn::module::Path::default();
/// p.scoped("layers", |p| p.scoped("0", |p| assert_eq!(p.as_str(), "layers.0")));
/// assert_eq!(p.as_str(), "");
/// ```
#[derive(Default, Debug)]
pub struct Path(String);

impl Path {
    /// The path as dotted text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// Runs `f` with `name` appended to the path.
    pub fn scoped<R>(&mut self, name: &str, f: impl FnOnce(&mut Path) -> R) -> R {
        let len = self.0.len();
        self.0 = join_path(&self.0, name);
        let r = f(self);
        self.0.truncate(len);
        r
    }
}

/// Reads the parameters of a walk ([`Visit::visit`]).
pub trait Visitor {
    /// Called for each parameter with its dotted path.
    fn param(&mut self, path: &str, p: &Param);
    /// Called for each training flag.
    fn training(&mut self, _training: bool) {}
}

/// Changes the parameters of a walk ([`Visit::visit_mut`]).
pub trait VisitorMut {
    /// Called for each parameter with its dotted path.
    fn param(&mut self, path: &str, p: &mut Param) -> Result<()>;
    /// Called for each training flag.
    fn training(&mut self, _training: &mut bool) {}
    /// Called with each module (as `Any`, for passes that change modules
    /// of a given type, as [`quantize`](crate::layers::quantize)) before
    /// its fields are visited.
    fn module(&mut self, _path: &str, _module: &mut dyn std::any::Any) -> Result<()> {
        Ok(())
    }
}

/// Something that holds parameters: a [`Param`], a [`Training`] flag, a
/// module, or an `Option`, `Vec` or `Box` of them.
pub trait Visit {
    /// Shows every parameter under `path` to `v`.
    fn visit(&self, path: &mut Path, v: &mut dyn Visitor);
    /// Shows every parameter under `path` to `v`, mutably.
    fn visit_mut(&mut self, path: &mut Path, v: &mut dyn VisitorMut) -> Result<()>;
}

impl Visit for Param {
    fn visit(&self, path: &mut Path, v: &mut dyn Visitor) {
        v.param(path.as_str(), self);
    }
    fn visit_mut(&mut self, path: &mut Path, v: &mut dyn VisitorMut) -> Result<()> {
        v.param(path.as_str(), self)
    }
}

impl Visit for Training {
    fn visit(&self, _: &mut Path, v: &mut dyn Visitor) {
        v.training(self.0);
    }
    fn visit_mut(&mut self, _: &mut Path, v: &mut dyn VisitorMut) -> Result<()> {
        v.training(&mut self.0);
        Ok(())
    }
}

impl<T: Visit> Visit for Option<T> {
    fn visit(&self, path: &mut Path, v: &mut dyn Visitor) {
        if let Some(t) = self {
            t.visit(path, v);
        }
    }
    fn visit_mut(&mut self, path: &mut Path, v: &mut dyn VisitorMut) -> Result<()> {
        match self {
            Some(t) => t.visit_mut(path, v),
            None => Ok(()),
        }
    }
}

impl<T: Visit> Visit for Vec<T> {
    fn visit(&self, path: &mut Path, v: &mut dyn Visitor) {
        for (i, t) in self.iter().enumerate() {
            path.scoped(&i.to_string(), |path| t.visit(path, v));
        }
    }
    fn visit_mut(&mut self, path: &mut Path, v: &mut dyn VisitorMut) -> Result<()> {
        for (i, t) in self.iter_mut().enumerate() {
            path.scoped(&i.to_string(), |path| t.visit_mut(path, v))?;
        }
        Ok(())
    }
}

impl<T: Visit + ?Sized> Visit for Box<T> {
    fn visit(&self, path: &mut Path, v: &mut dyn Visitor) {
        (**self).visit(path, v);
    }
    fn visit_mut(&mut self, path: &mut Path, v: &mut dyn VisitorMut) -> Result<()> {
        (**self).visit_mut(path, v)
    }
}

/// Implements [`Visit`] and [`Module`] for a struct from the list of its
/// parameter, flag and sublayer fields (each named as it is saved).
///
/// ```
/// use ferrox_nn::{impl_module, Module, Param, layers::Linear};
/// #[derive(Clone)]
/// struct Mlp { fc1: Linear, fc2: Linear, scale: Param }
/// impl_module!(Mlp { fc1, fc2, scale });
/// let m = Mlp {
///     fc1: Linear::new(4, 8, true)?,
///     fc2: Linear::new(8, 2, false)?,
///     scale: Param::new(ferrox::ones(&[2], ferrox::DType::Float32)?),
/// };
/// let names: Vec<String> = m.named_parameters().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["fc1.weight", "fc1.bias", "fc2.weight", "scale"]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[macro_export]
macro_rules! impl_module {
    ($ty:ty { $($field:ident),* $(,)? }) => {
        impl $crate::module::Visit for $ty {
            #[allow(unused_variables)]
            fn visit(&self, path: &mut $crate::module::Path, v: &mut dyn $crate::module::Visitor) {
                $(path.scoped(stringify!($field), |path| {
                    $crate::module::Visit::visit(&self.$field, path, v)
                });)*
            }
            #[allow(unused_variables)]
            fn visit_mut(
                &mut self,
                path: &mut $crate::module::Path,
                v: &mut dyn $crate::module::VisitorMut,
            ) -> $crate::error::Result<()> {
                v.module(path.as_str(), self)?;
                $(path.scoped(stringify!($field), |path| {
                    $crate::module::Visit::visit_mut(&mut self.$field, path, v)
                })?;)*
                Ok(())
            }
        }
        impl $crate::module::Module for $ty {}
    };
}

/// A layer's forward pass on one input (what [`Sequential`](crate::layers::Sequential)
/// chains). Layers with other inputs (attention, recurrent layers) have
/// their own `forward` methods.
pub trait Forward {
    /// Applies the layer to `x`.
    fn forward(&self, x: &Array) -> Result<Array>;
}

/// A module with a one-input forward pass, usable as `Box<dyn Layer>`.
///
/// ```
/// use ferrox_nn::{Layer, layers::{Linear, Relu}};
/// let layers: Vec<Box<dyn Layer>> = vec![Box::new(Linear::new(2, 3, true)?), Box::new(Relu)];
/// let copy = layers[0].clone();
/// let x = ferrox::ones(&[1, 2], ferrox::DType::Float32)?;
/// assert_eq!(copy.forward(&x)?.shape(), &[1, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub trait Layer: Module + Forward + 'static {
    /// A boxed clone.
    fn clone_layer(&self) -> Box<dyn Layer>;
}

impl<T: Module + Forward + Clone + 'static> Layer for T {
    fn clone_layer(&self) -> Box<dyn Layer> {
        Box::new(self.clone())
    }
}

impl Clone for Box<dyn Layer> {
    fn clone(&self) -> Self {
        // The inner layer's clone: `self.clone_layer()` would pick the
        // blanket impl for the box itself and recurse.
        (**self).clone_layer()
    }
}

impl Forward for Box<dyn Layer> {
    fn forward(&self, x: &Array) -> Result<Array> {
        (**self).forward(x)
    }
}

impl Module for Box<dyn Layer> {}

struct Collect<F: FnMut(&str, &Param)>(F);
impl<F: FnMut(&str, &Param)> Visitor for Collect<F> {
    fn param(&mut self, path: &str, p: &Param) {
        (self.0)(path, p)
    }
}

struct Change<F: FnMut(&str, &mut Param) -> Result<()>>(F);
impl<F: FnMut(&str, &mut Param) -> Result<()>> VisitorMut for Change<F> {
    fn param(&mut self, path: &str, p: &mut Param) -> Result<()> {
        (self.0)(path, p)
    }
}

/// Whether `pattern` names the parameter at `path`: the path itself, a
/// module above it (`layers.0` names `layers.0.weight`), or, like MLX's
/// `keys`, the parameter's own name in any module (`bias`).
fn matches(pattern: &str, path: &str) -> bool {
    path == pattern
        || path
            .strip_prefix(pattern)
            .is_some_and(|rest| rest.starts_with('.'))
        || path
            .strip_suffix(pattern)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// A tree of parameters with names: the base of every layer.
///
/// Every method is provided, built on the walk [`Visit`] gives; implement
/// it with [`impl_module!`](crate::impl_module). Modules are `Send + Sync`
/// (their arrays are): N threads may run one module's forward at once,
/// sharing its weights. To swap weights while other threads run, see
/// [`SharedModule`](crate::SharedModule).
///
/// ```
/// use ferrox_nn::{Module, layers::Linear};
/// let mut l = Linear::new(3, 2, true)?;
/// assert_eq!(l.num_parameters(), 8);
/// l.freeze(&["bias"], true)?;
/// let names: Vec<String> = l.trainable_parameters().named().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["weight"]);
/// let e = l.freeze(&["gamma"], true).unwrap_err();
/// assert!(e.to_string().contains("gamma"));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub trait Module: Visit + Send + Sync {
    /// Calls `f` with each parameter's dotted name, in walk order.
    fn for_each_param(&self, f: &mut dyn FnMut(&str, &Param)) {
        self.visit(&mut Path::default(), &mut Collect(f));
    }

    /// Calls `f` with each parameter's dotted name, mutably.
    fn for_each_param_mut(
        &mut self,
        f: &mut dyn FnMut(&str, &mut Param) -> Result<()>,
    ) -> Result<()> {
        self.visit_mut(&mut Path::default(), &mut Change(f))
    }

    /// Every parameter (frozen ones and buffers too) with its name, in
    /// walk order.
    fn named_parameters(&self) -> Vec<(String, Array)> {
        let mut out = Vec::new();
        self.for_each_param(&mut |n, p| out.push((n.to_string(), p.value().clone())));
        out
    }

    /// The trainable (not frozen) parameters with their names, in walk order.
    fn named_trainable_parameters(&self) -> Vec<(String, Array)> {
        let mut out = Vec::new();
        self.for_each_param(&mut |n, p| {
            if !p.is_frozen() {
                out.push((n.to_string(), p.value().clone()))
            }
        });
        out
    }

    /// Every parameter as a tree.
    fn parameters(&self) -> Params {
        // Names from a walk are unique and well formed, so this cannot
        // fail for modules built with `impl_module!`.
        Params::from_named(self.named_parameters()).unwrap_or_default()
    }

    /// The trainable parameters as a tree.
    fn trainable_parameters(&self) -> Params {
        Params::from_named(self.named_trainable_parameters()).unwrap_or_default()
    }

    /// A copy whose parameters (all of them, in [`named_parameters`]
    /// order) are `values`: how a compiled function rebuilds a model from
    /// its inputs.
    ///
    /// ```
    /// use ferrox_nn::{Module, layers::Linear};
    /// let a = Linear::new(2, 1, true)?;
    /// let zeros: Vec<_> = a.named_parameters().iter().map(|(_, p)| ferrox::zeros_like(p)).collect::<Result<_, _>>()?;
    /// let b = a.with_parameter_values(&zeros)?;
    /// assert_eq!(b.weight.to_vec::<f32>()?, [0.0, 0.0]);
    /// assert!(a.with_parameter_values(&zeros[..1]).is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    ///
    /// [`named_parameters`]: Module::named_parameters
    fn with_parameter_values(&self, values: &[Array]) -> Result<Self>
    where
        Self: Sized + Clone,
    {
        let mut copy = self.clone();
        let mut it = values.iter();
        copy.for_each_param_mut(&mut |n, p| {
            let a = it
                .next()
                .ok_or_else(|| value("Module", format!("no array for parameter {n}")))?;
            p.set(a.clone());
            Ok(())
        })?;
        Ok(copy)
    }

    /// The number of scalars in all parameters.
    fn num_parameters(&self) -> usize {
        self.named_parameters().iter().map(|(_, a)| a.size()).sum()
    }

    /// Replaces the parameters named in `params` (a tree or flat dotted
    /// names via [`Params::from_named`]). `strict`: a name the module does
    /// not have is an error (naming it); parameters not named are kept.
    /// Shapes are not checked (see [`load_named`](Module::load_named)).
    fn update(&mut self, params: &Params, strict: bool) -> Result<()> {
        self.update_named(&params.to_map(), strict)
    }

    /// [`update`](Module::update) from a flat map of dotted names.
    fn update_named(&mut self, named: &BTreeMap<String, Array>, strict: bool) -> Result<()> {
        let mut used = BTreeSet::new();
        self.for_each_param_mut(&mut |n, p| {
            if let Some(a) = named.get(n) {
                p.set(a.clone());
                used.insert(n.to_string());
            }
            Ok(())
        })?;
        if strict && used.len() < named.len() {
            let extra: Vec<&str> = named
                .keys()
                .filter(|k| !used.contains(*k))
                .map(String::as_str)
                .collect();
            return Err(value(
                "Module::update",
                format!("the module has no parameter named {}", extra.join(", ")),
            ));
        }
        Ok(())
    }

    /// Loads named weights, checking them first (nothing changes on an
    /// error). Every given weight that the module has must have its
    /// parameter's shape; `strict` also makes a weight the module lacks
    /// (extra) and a parameter without a weight (missing) errors. The
    /// message lists every offending name and shape.
    ///
    /// ```
    /// use ferrox_nn::{Module, layers::Linear};
    /// let mut l = Linear::new(3, 2, true)?;
    /// let w = [("weight".to_string(), ferrox::zeros(&[3, 2], ferrox::DType::Float32)?)].into();
    /// let e = l.load_named(&w, false).unwrap_err().to_string();
    /// assert!(e.contains("weight: expected shape [2, 3], got [3, 2]"), "{e}");
    /// let e = l.load_named(&Default::default(), true).unwrap_err().to_string();
    /// assert!(e.contains("missing 2 weights: bias, weight"), "{e}");
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    fn load_named(&mut self, weights: &BTreeMap<String, Array>, strict: bool) -> Result<()> {
        let mut have = BTreeMap::new();
        self.for_each_param(&mut |n, p| {
            have.insert(n.to_string(), p.shape().to_vec());
        });
        let mut problems = Vec::new();
        if strict {
            let extra: Vec<&str> = weights
                .keys()
                .filter(|k| !have.contains_key(*k))
                .map(String::as_str)
                .collect();
            if !extra.is_empty() {
                problems.push(format!(
                    "{} weights not in the model: {}",
                    extra.len(),
                    extra.join(", ")
                ));
            }
            let missing: Vec<&str> = have
                .keys()
                .filter(|k| !weights.contains_key(*k))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                problems.push(format!(
                    "missing {} weights: {}",
                    missing.len(),
                    missing.join(", ")
                ));
            }
        }
        for (n, a) in weights {
            if let Some(shape) = have.get(n) {
                if a.shape() != &shape[..] {
                    problems.push(format!(
                        "{n}: expected shape {shape:?}, got {:?}",
                        a.shape()
                    ));
                }
            }
        }
        if !problems.is_empty() {
            return Err(value("load_weights", problems.join("; ")));
        }
        self.update_named(weights, false)
    }

    /// Freezes the parameters that `names` match: a parameter's dotted
    /// path, a module path above it, or a parameter's own name in any
    /// module (`"bias"`). `strict`: a name that matches nothing is an error.
    fn freeze(&mut self, names: &[&str], strict: bool) -> Result<()> {
        set_frozen(self, names, strict, true)
    }

    /// Unfreezes what `names` match (see [`freeze`](Module::freeze));
    /// buffers stay frozen.
    fn unfreeze(&mut self, names: &[&str], strict: bool) -> Result<()> {
        set_frozen(self, names, strict, false)
    }

    /// Freezes every parameter.
    fn freeze_all(&mut self) {
        let _ = self.for_each_param_mut(&mut |_, p| {
            p.set_frozen(true);
            Ok(())
        });
    }

    /// Unfreezes every parameter (buffers stay frozen).
    fn unfreeze_all(&mut self) {
        let _ = self.for_each_param_mut(&mut |_, p| {
            p.set_frozen(false);
            Ok(())
        });
    }

    /// Sets training mode (`true`) or evaluation mode (`false`) on every
    /// sublayer.
    fn train(&mut self, training: bool) {
        struct SetFlag(bool);
        impl VisitorMut for SetFlag {
            fn param(&mut self, _: &str, _: &mut Param) -> Result<()> {
                Ok(())
            }
            fn training(&mut self, t: &mut bool) {
                *t = self.0;
            }
        }
        let _ = self.visit_mut(&mut Path::default(), &mut SetFlag(training));
    }

    /// Evaluation mode: `train(false)`.
    fn eval(&mut self) {
        self.train(false);
    }

    /// Whether the module is in training mode: the first training flag
    /// found, or `true` for a module without one (MLX's default).
    fn is_training(&self) -> bool {
        struct First(Option<bool>);
        impl Visitor for First {
            fn param(&mut self, _: &str, _: &Param) {}
            fn training(&mut self, t: bool) {
                self.0.get_or_insert(t);
            }
        }
        let mut first = First(None);
        self.visit(&mut Path::default(), &mut first);
        first.0.unwrap_or(true)
    }

    /// Casts every floating point parameter to `dtype` (a float dtype).
    fn set_dtype(&mut self, dtype: DType) -> Result<()> {
        if !dtype.is_float() {
            return Err(value(
                "Module::set_dtype",
                format!("expected a floating point dtype, got {dtype}"),
            ));
        }
        self.for_each_param_mut(&mut |_, p| {
            if p.dtype().is_float() {
                let cast = p.astype(dtype)?;
                p.set(cast);
            }
            Ok(())
        })
    }

    /// A copy whose trainable parameters are `leaves`, in the order of
    /// [`named_trainable_parameters`](Module::named_trainable_parameters).
    fn with_trainable(&self, leaves: &[Array]) -> Result<Self>
    where
        Self: Clone,
    {
        let mut copy = self.clone();
        let mut it = leaves.iter();
        copy.for_each_param_mut(&mut |n, p| {
            if !p.is_frozen() {
                let a = it.next().ok_or_else(|| {
                    value(
                        "Module::with_trainable",
                        format!("too few arrays: none left for {n}"),
                    )
                })?;
                p.set(a.clone());
            }
            Ok(())
        })?;
        if it.next().is_some() {
            return Err(value(
                "Module::with_trainable",
                format!(
                    "{} arrays given for fewer trainable parameters",
                    leaves.len()
                ),
            ));
        }
        Ok(copy)
    }
}

fn set_frozen<M: Module + ?Sized>(
    m: &mut M,
    names: &[&str],
    strict: bool,
    frozen: bool,
) -> Result<()> {
    let mut hit = vec![false; names.len()];
    m.for_each_param_mut(&mut |path, p| {
        for (i, pat) in names.iter().enumerate() {
            if matches(pat, path) {
                hit[i] = true;
                p.set_frozen(frozen);
            }
        }
        Ok(())
    })?;
    let unknown: Vec<&str> = names
        .iter()
        .zip(&hit)
        .filter(|(_, h)| !**h)
        .map(|(n, _)| *n)
        .collect();
    if strict && !unknown.is_empty() {
        let what = if frozen { "freeze" } else { "unfreeze" };
        return Err(value(
            &format!("Module::{what}"),
            format!("no parameter matches {}", unknown.join(", ")),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_paths_modules_and_own_names() {
        assert!(matches("layers.0.weight", "layers.0.weight"));
        assert!(matches("layers.0", "layers.0.weight"));
        assert!(!matches("layers.0", "layers.01.weight"));
        assert!(matches("bias", "layers.3.bias"));
        assert!(!matches("ias", "layers.3.bias"));
    }
}
