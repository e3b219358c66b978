//! Normalisation layers: [`LayerNorm`] and [`RmsNorm`] (ferrox's fused
//! `fast` kernels), [`GroupNorm`], [`InstanceNorm`] and [`BatchNorm`].

use crate::error::{Result, check_last_dim, check_positive, shape, value};
use crate::module::{Forward, Module, Param, Path, Training, Visit, Visitor, VisitorMut};
use ferrox::{Array, DType};
use std::sync::RwLock;

fn ones(n: usize) -> Result<Param> {
    Ok(Param::new(ferrox::ones(&[n], DType::Float32)?))
}
fn zeros(n: usize) -> Result<Param> {
    Ok(Param::new(ferrox::zeros(&[n], DType::Float32)?))
}

/// `weight * x + bias` when the layer is affine.
fn affine(x: Array, weight: &Option<Param>, bias: &Option<Param>) -> Result<Array> {
    let x = match weight {
        Some(w) => (w.value() * &x)?,
        None => x,
    };
    match bias {
        Some(b) => &x + b.value(),
        None => Ok(x),
    }
}

/// `(x - mean) * rsqrt(var + eps)` over `axes`.
fn standardize(x: &Array, axes: &[isize], eps: f64) -> Result<Array> {
    let mean = x.mean(Some(axes), true)?;
    let var = x.var(Some(axes), true, 0)?;
    (x - &mean)? * ferrox::rsqrt(&(var + eps)?)?
}

/// Layer normalisation over the last axis, `ferrox::fast::layer_norm`.
///
/// ```
/// use ferrox_nn::{Forward, layers::LayerNorm};
/// let ln = LayerNorm::new(2, 1e-5, true, true)?;
/// let x = ferrox::Array::from_slice(&[1.0f32, 3.0], &[1, 2])?;
/// let y = ln.forward(&x)?.to_vec::<f32>()?;
/// assert!((y[0] + 1.0).abs() < 1e-4 && (y[1] - 1.0).abs() < 1e-4);
/// assert!(ln.forward(&ferrox::ones(&[1, 3], ferrox::DType::Float32)?).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct LayerNorm {
    /// `[dims]`, when affine.
    pub weight: Option<Param>,
    /// `[dims]`, when affine with a bias.
    pub bias: Option<Param>,
    /// Added to the variance.
    pub eps: f32,
    /// Features normalised.
    pub dims: usize,
}

impl LayerNorm {
    /// A layer norm over `dims` features (MLX's defaults: eps 1e-5,
    /// affine, with bias).
    pub fn new(dims: usize, eps: f32, affine: bool, bias: bool) -> Result<LayerNorm> {
        check_positive("LayerNorm", "dims", dims)?;
        Ok(LayerNorm {
            weight: if affine { Some(ones(dims)?) } else { None },
            bias: if affine && bias {
                Some(zeros(dims)?)
            } else {
                None
            },
            eps,
            dims,
        })
    }
}

impl Forward for LayerNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        check_last_dim("LayerNorm", x, self.dims)?;
        ferrox::fast::layer_norm(
            x,
            self.weight.as_ref().map(Param::value),
            self.bias.as_ref().map(Param::value),
            self.eps,
        )
    }
}
crate::impl_module!(LayerNorm { weight, bias });

/// Root-mean-square normalisation over the last axis,
/// `ferrox::fast::rms_norm`.
///
/// ```
/// use ferrox_nn::{Forward, layers::RmsNorm};
/// let n = RmsNorm::new(2, 0.0)?;
/// let x = ferrox::Array::from_slice(&[3.0f32, 4.0], &[1, 2])?;
/// let y = n.forward(&x)?.to_vec::<f32>()?;
/// assert!((y[0] - 3.0 / 12.5f32.sqrt()).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct RmsNorm {
    /// `[dims]`.
    pub weight: Param,
    /// Added to the mean square.
    pub eps: f32,
}

impl RmsNorm {
    /// An RMS norm over `dims` features (MLX's default eps: 1e-5).
    pub fn new(dims: usize, eps: f32) -> Result<RmsNorm> {
        check_positive("RMSNorm", "dims", dims)?;
        Ok(RmsNorm {
            weight: ones(dims)?,
            eps,
        })
    }
}

impl Forward for RmsNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        check_last_dim("RMSNorm", x, self.weight.shape()[0])?;
        ferrox::fast::rms_norm(x, Some(&self.weight), self.eps)
    }
}
crate::impl_module!(RmsNorm { weight });

/// Group normalisation: the `dims` channels (last axis) split into
/// `num_groups` groups, each normalised over the spatial axes and its
/// channels. `pytorch_compatible` groups consecutive channels as PyTorch
/// does (through `fast::layer_norm`); otherwise channel `c` is in group
/// `c % num_groups`, as MLX's default.
///
/// ```
/// use ferrox_nn::{Forward, layers::GroupNorm};
/// let g = GroupNorm::new(2, 4, 1e-5, true, true)?;
/// let x = ferrox::random::normal(&[2, 3, 4], ferrox::DType::Float32, 0.0, 1.0, None)?;
/// assert_eq!(g.forward(&x)?.shape(), &[2, 3, 4]);
/// assert!(GroupNorm::new(3, 4, 1e-5, true, false).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct GroupNorm {
    /// `[dims]`, when affine.
    pub weight: Option<Param>,
    /// `[dims]`, when affine.
    pub bias: Option<Param>,
    /// Groups of channels.
    pub num_groups: usize,
    /// Channels.
    pub dims: usize,
    /// Added to the variance.
    pub eps: f32,
    /// PyTorch's grouping of channels.
    pub pytorch_compatible: bool,
}

impl GroupNorm {
    /// A group norm (MLX's defaults: eps 1e-5, affine, not PyTorch-compatible).
    pub fn new(
        num_groups: usize,
        dims: usize,
        eps: f32,
        affine: bool,
        pytorch_compatible: bool,
    ) -> Result<GroupNorm> {
        check_positive("GroupNorm", "num_groups", num_groups)?;
        check_positive("GroupNorm", "dims", dims)?;
        if dims % num_groups != 0 {
            return Err(value(
                "GroupNorm",
                format!("dims {dims} is not divisible by num_groups {num_groups}"),
            ));
        }
        Ok(GroupNorm {
            weight: if affine { Some(ones(dims)?) } else { None },
            bias: if affine { Some(zeros(dims)?) } else { None },
            num_groups,
            dims,
            eps,
            pytorch_compatible,
        })
    }
}

impl Forward for GroupNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        check_last_dim("GroupNorm", x, self.dims)?;
        if x.ndim() < 2 {
            return Err(shape(
                "GroupNorm",
                format!("expected [N, ..., C], got shape {:?}", x.shape()),
            ));
        }
        let (b, g) = (x.shape()[0] as isize, self.num_groups as isize);
        let gs = (self.dims / self.num_groups) as isize;
        let y = if self.pytorch_compatible {
            let t = x.reshape(&[b, -1, g, gs])?.transpose(Some(&[0, 2, 1, 3]))?;
            let t = t.reshape(&[b, g, -1])?;
            let t = ferrox::fast::layer_norm(&t, None, None, self.eps)?;
            let rest = t.shape()[2] as isize / gs;
            t.reshape(&[b, g, rest, gs])?
                .transpose(Some(&[0, 2, 1, 3]))?
        } else {
            standardize(&x.reshape(&[b, -1, g])?, &[1], self.eps as f64)?
        };
        let shape: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
        affine(y.reshape(&shape)?, &self.weight, &self.bias)
    }
}
crate::impl_module!(GroupNorm { weight, bias });

/// Instance normalisation: each channel (last axis) of each example
/// normalised over the spatial axes (`[N, ..., C]`, rank 3 or more).
///
/// ```
/// use ferrox_nn::{Forward, layers::InstanceNorm};
/// let n = InstanceNorm::new(3, 1e-5, false)?;
/// let x = ferrox::random::normal(&[2, 5, 3], ferrox::DType::Float32, 0.0, 1.0, None)?;
/// assert_eq!(n.forward(&x)?.shape(), &[2, 5, 3]);
/// assert!(n.forward(&ferrox::ones(&[2, 3], ferrox::DType::Float32)?).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct InstanceNorm {
    /// `[dims]`, when affine.
    pub weight: Option<Param>,
    /// `[dims]`, when affine.
    pub bias: Option<Param>,
    /// Channels.
    pub dims: usize,
    /// Added to the variance.
    pub eps: f32,
}

impl InstanceNorm {
    /// An instance norm (MLX's defaults: eps 1e-5, not affine).
    pub fn new(dims: usize, eps: f32, affine: bool) -> Result<InstanceNorm> {
        check_positive("InstanceNorm", "dims", dims)?;
        Ok(InstanceNorm {
            weight: if affine { Some(ones(dims)?) } else { None },
            bias: if affine { Some(zeros(dims)?) } else { None },
            dims,
            eps,
        })
    }
}

impl Forward for InstanceNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        if x.ndim() < 3 {
            return Err(shape(
                "InstanceNorm",
                format!(
                    "expected an input [N, ..., C] of rank 3 or more, got shape {:?}",
                    x.shape()
                ),
            ));
        }
        check_last_dim("InstanceNorm", x, self.dims)?;
        let axes: Vec<isize> = (1..x.ndim() as isize - 1).collect();
        affine(
            standardize(x, &axes, self.eps as f64)?,
            &self.weight,
            &self.bias,
        )
    }
}
crate::impl_module!(InstanceNorm { weight, bias });

/// The running statistics of a [`BatchNorm`].
#[derive(Clone, Debug)]
struct RunningStats {
    mean: Param,
    var: Param,
}

/// Batch normalisation over every axis but the last (`[N, C]`,
/// `[N, L, C]` or `[N, H, W, C]`).
///
/// In training mode it normalises with the batch's statistics and, when
/// it tracks running statistics, updates them (`running_mean`,
/// `running_var`, buffers saved with the weights) as
/// `(1 - momentum) * running + momentum * batch` (unbiased variance). In
/// evaluation mode it uses the running statistics.
///
/// The running statistics sit behind a lock so that the forward pass can
/// update them through `&self`, as MLX's does; a forward pass reads them
/// once. Serving threads should use evaluation mode (no writes); two
/// threads training one `BatchNorm` at once each apply their update, in
/// some order.
///
/// ```
/// use ferrox_nn::{Forward, Module, layers::BatchNorm};
/// let mut bn = BatchNorm::new(2, 1e-5, 0.1, true, true)?;
/// let x = ferrox::Array::from_slice(&[0.0f32, 10.0, 2.0, 30.0], &[2, 2])?;
/// bn.forward(&x)?;
/// let named = bn.parameters();
/// let m = named.get("running_mean").unwrap().to_vec::<f32>()?;
/// assert!((m[0] - 0.1).abs() < 1e-6 && (m[1] - 2.0).abs() < 1e-5);
/// // Buffers are never trainable.
/// bn.unfreeze_all();
/// assert_eq!(bn.trainable_parameters().named().len(), 2);
/// bn.eval();
/// assert_eq!(bn.forward(&x)?.shape(), &[2, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug)]
pub struct BatchNorm {
    /// `[num_features]`, when affine.
    pub weight: Option<Param>,
    /// `[num_features]`, when affine.
    pub bias: Option<Param>,
    stats: RwLock<Option<RunningStats>>,
    /// Channels.
    pub num_features: usize,
    /// Added to the variance.
    pub eps: f64,
    /// Weight of the batch in the running statistics.
    pub momentum: f64,
    /// Training or evaluation mode.
    pub training: Training,
}

impl Clone for BatchNorm {
    fn clone(&self) -> Self {
        BatchNorm {
            weight: self.weight.clone(),
            bias: self.bias.clone(),
            stats: RwLock::new(self.read_stats()),
            num_features: self.num_features,
            eps: self.eps,
            momentum: self.momentum,
            training: self.training,
        }
    }
}

impl BatchNorm {
    /// A batch norm (MLX's defaults: eps 1e-5, momentum 0.1, affine,
    /// tracking running statistics).
    pub fn new(
        num_features: usize,
        eps: f64,
        momentum: f64,
        affine: bool,
        track_running_stats: bool,
    ) -> Result<BatchNorm> {
        check_positive("BatchNorm", "num_features", num_features)?;
        let stats = if track_running_stats {
            Some(RunningStats {
                mean: Param::buffer(ferrox::zeros(&[num_features], DType::Float32)?),
                var: Param::buffer(ferrox::ones(&[num_features], DType::Float32)?),
            })
        } else {
            None
        };
        Ok(BatchNorm {
            weight: if affine {
                Some(ones(num_features)?)
            } else {
                None
            },
            bias: if affine {
                Some(zeros(num_features)?)
            } else {
                None
            },
            stats: RwLock::new(stats),
            num_features,
            eps,
            momentum,
            training: Training::default(),
        })
    }

    fn read_stats(&self) -> Option<RunningStats> {
        self.stats.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Forward for BatchNorm {
    fn forward(&self, x: &Array) -> Result<Array> {
        let who = "BatchNorm";
        if !(2..=4).contains(&x.ndim()) {
            return Err(shape(
                who,
                format!(
                    "expected an input of rank 2, 3 or 4, got shape {:?}",
                    x.shape()
                ),
            ));
        }
        check_last_dim(who, x, self.num_features)?;
        let training = self.training.get();
        let per_channel: usize = x.shape()[..x.ndim() - 1].iter().product();
        if training && per_channel < 2 {
            return Err(value(
                who,
                format!(
                    "training needs more than one value per channel, got shape {:?}",
                    x.shape()
                ),
            ));
        }
        let axes: Vec<isize> = (0..x.ndim() as isize - 1).collect();
        let (mut mean, mut var) = (x.mean(Some(&axes), false)?, x.var(Some(&axes), false, 0)?);
        if let Some(stats) = self.read_stats() {
            if training {
                let mu = self.momentum;
                let unbiased = x.var(Some(&axes), false, 1)?;
                let new_mean = ((stats.mean.value() * (1.0 - mu))? + (&mean * mu)?)?;
                let new_var = ((stats.var.value() * (1.0 - mu))? + (&unbiased * mu)?)?;
                let mut guard = self.stats.write().unwrap_or_else(|e| e.into_inner());
                if let Some(s) = guard.as_mut() {
                    s.mean.set(new_mean);
                    s.var.set(new_var);
                }
            } else {
                mean = stats.mean.value().clone();
                var = stats.var.value().clone();
            }
        }
        let y = ((x - &mean)? * ferrox::rsqrt(&(var + self.eps)?)?)?;
        affine(y, &self.weight, &self.bias)
    }
}

impl Visit for BatchNorm {
    fn visit(&self, path: &mut Path, v: &mut dyn Visitor) {
        path.scoped("weight", |p| self.weight.visit(p, v));
        path.scoped("bias", |p| self.bias.visit(p, v));
        let stats = self.stats.read().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = stats.as_ref() {
            path.scoped("running_mean", |p| s.mean.visit(p, v));
            path.scoped("running_var", |p| s.var.visit(p, v));
        }
        self.training.visit(path, v);
    }
    fn visit_mut(&mut self, path: &mut Path, v: &mut dyn VisitorMut) -> Result<()> {
        path.scoped("weight", |p| self.weight.visit_mut(p, v))?;
        path.scoped("bias", |p| self.bias.visit_mut(p, v))?;
        let stats = self.stats.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = stats.as_mut() {
            path.scoped("running_mean", |p| s.mean.visit_mut(p, v))?;
            path.scoped("running_var", |p| s.var.visit_mut(p, v))?;
        }
        self.training.visit_mut(path, v)
    }
}
impl Module for BatchNorm {}
