//! Recurrent layers [`Rnn`], [`Gru`] and [`Lstm`] over `[B, T, features]`
//! (or `[T, features]`) inputs, unrolled over time. Parameter names are
//! MLX's (`Wxh`, `Whh`, `Wx`, `Wh`, `b`, `bhn`, `bias`), so the fields
//! keep MLX's capitals.

use super::linear::uniform_init;
use crate::error::{Result, check_last_dim, check_positive, check_rank, shape};
use crate::module::{Forward, Param};
use ferrox::Array;

/// Row `t` of the time axis (-2).
fn at_time(x: &Array, t: usize) -> Result<Array> {
    let nd = x.ndim();
    let mut start = vec![0isize; nd];
    let mut stop: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
    start[nd - 2] = t as isize;
    stop[nd - 2] = t as isize + 1;
    ferrox::slice(x, &start, &stop, &vec![1; nd])?.squeeze(Some(&[-2]))
}

/// `x @ w^T (+ b)`.
fn project(x: &Array, w: &Param, b: Option<&Param>) -> Result<Array> {
    match b {
        Some(b) => ferrox::addmm(b, x, &w.t()?, 1.0, 1.0),
        None => ferrox::matmul(x, &w.t()?),
    }
}

fn check_input(who: &str, x: &Array, input: usize) -> Result<()> {
    check_rank(who, x, &[2, 3])?;
    check_last_dim(who, x, input)
}

fn check_state(who: &str, what: &str, h: Option<&Array>, x: &Array, hidden: usize) -> Result<()> {
    if let Some(h) = h {
        let mut want = x.shape()[..x.ndim() - 2].to_vec();
        want.push(hidden);
        if h.shape() != &want[..] {
            return Err(shape(
                who,
                format!("{what} must have shape {want:?}, got {:?}", h.shape()),
            ));
        }
    }
    Ok(())
}

/// An Elman RNN: `h_t = f(x_t W_xh^T + h_{t-1} W_hh^T + b)` (default `f`
/// tanh). Returns every hidden state, `[..., T, hidden]`.
///
/// ```
/// use ferrox_nn::{Forward, layers::Rnn};
/// let rnn = Rnn::new(3, 4, true)?;
/// let x = ferrox::ones(&[2, 5, 3], ferrox::DType::Float32)?;
/// assert_eq!(rnn.forward(&x)?.shape(), &[2, 5, 4]);
/// assert!(rnn.forward(&ferrox::ones(&[2, 5, 2], ferrox::DType::Float32)?).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[allow(non_snake_case)]
#[derive(Clone, Debug)]
pub struct Rnn {
    /// `[hidden, input]`.
    pub Wxh: Param,
    /// `[hidden, hidden]`.
    pub Whh: Param,
    /// `[hidden]`, if present.
    pub bias: Option<Param>,
    /// The nonlinearity (default tanh).
    pub nonlinearity: fn(&Array) -> Result<Array>,
}

impl Rnn {
    /// A randomly initialised RNN (uniform in `±1/sqrt(hidden)`).
    pub fn new(input_size: usize, hidden_size: usize, bias: bool) -> Result<Rnn> {
        check_positive("RNN", "input_size", input_size)?;
        check_positive("RNN", "hidden_size", hidden_size)?;
        let s = 1.0 / (hidden_size as f64).sqrt();
        Ok(Rnn {
            Wxh: Param::new(uniform_init(&[hidden_size, input_size], s)?),
            Whh: Param::new(uniform_init(&[hidden_size, hidden_size], s)?),
            bias: if bias {
                Some(Param::new(uniform_init(&[hidden_size], s)?))
            } else {
                None
            },
            nonlinearity: ferrox::tanh,
        })
    }

    /// Every hidden state starting from `hidden` (`[..., hidden]`; zeros
    /// when `None`).
    pub fn forward_from(&self, x: &Array, hidden: Option<&Array>) -> Result<Array> {
        let (hs, input) = (self.Wxh.shape()[0], self.Wxh.shape()[1]);
        check_input("RNN", x, input)?;
        check_state("RNN", "hidden", hidden, x, hs)?;
        let x = project(x, &self.Wxh, self.bias.as_ref())?;
        let whh_t = self.Whh.t()?;
        let mut h = hidden.cloned();
        let mut all = Vec::new();
        for t in 0..x.shape()[x.ndim() - 2] {
            let xt = at_time(&x, t)?;
            let pre = match &h {
                Some(h) => ferrox::addmm(&xt, h, &whh_t, 1.0, 1.0)?,
                None => xt,
            };
            let next = (self.nonlinearity)(&pre)?;
            all.push(next.clone());
            h = Some(next);
        }
        ferrox::stack(&all, -2)
    }
}

impl Forward for Rnn {
    fn forward(&self, x: &Array) -> Result<Array> {
        self.forward_from(x, None)
    }
}
crate::impl_module!(Rnn { Wxh, Whh, bias });

/// A gated recurrent unit (gates r, z, n in that order in `Wx`/`Wh`; `bhn`
/// is the bias of the n gate's hidden projection). Returns every hidden
/// state.
///
/// ```
/// use ferrox_nn::{Forward, layers::Gru};
/// let gru = Gru::new(3, 4, true)?;
/// assert_eq!(gru.forward(&ferrox::ones(&[5, 3], ferrox::DType::Float32)?)?.shape(), &[5, 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[allow(non_snake_case)]
#[derive(Clone, Debug)]
pub struct Gru {
    /// `[3 * hidden, input]`.
    pub Wx: Param,
    /// `[3 * hidden, hidden]`.
    pub Wh: Param,
    /// `[3 * hidden]`, if present.
    pub b: Option<Param>,
    /// `[hidden]`, if present.
    pub bhn: Option<Param>,
}

impl Gru {
    /// A randomly initialised GRU.
    pub fn new(input_size: usize, hidden_size: usize, bias: bool) -> Result<Gru> {
        check_positive("GRU", "input_size", input_size)?;
        check_positive("GRU", "hidden_size", hidden_size)?;
        let s = 1.0 / (hidden_size as f64).sqrt();
        let h3 = 3 * hidden_size;
        Ok(Gru {
            Wx: Param::new(uniform_init(&[h3, input_size], s)?),
            Wh: Param::new(uniform_init(&[h3, hidden_size], s)?),
            b: if bias {
                Some(Param::new(uniform_init(&[h3], s)?))
            } else {
                None
            },
            bhn: if bias {
                Some(Param::new(uniform_init(&[hidden_size], s)?))
            } else {
                None
            },
        })
    }

    /// Every hidden state starting from `hidden` (zeros when `None`).
    pub fn forward_from(&self, x: &Array, hidden: Option<&Array>) -> Result<Array> {
        let (h3, input) = (self.Wx.shape()[0], self.Wx.shape()[1]);
        let hs = h3 / 3;
        check_input("GRU", x, input)?;
        check_state("GRU", "hidden", hidden, x, hs)?;
        let x = project(x, &self.Wx, self.b.as_ref())?;
        let split_at = |a: &Array| ferrox::split(a, vec![(2 * hs) as isize], -1);
        let parts = split_at(&x)?;
        let (x_rz, x_n) = (&parts[0], &parts[1]);
        let wh_t = self.Wh.t()?;
        let mut h = hidden.cloned();
        let mut all = Vec::new();
        for t in 0..x.shape()[x.ndim() - 2] {
            let mut rz = at_time(x_rz, t)?;
            let mut h_n = None;
            if let Some(h) = &h {
                let proj = split_at(&ferrox::matmul(h, &wh_t)?)?;
                rz = (rz + &proj[0])?;
                h_n = Some(match &self.bhn {
                    Some(b) => (&proj[1] + b.value())?,
                    None => proj[1].clone(),
                });
            }
            let gates = ferrox::split(&ferrox::sigmoid(&rz)?, 2usize, -1)?;
            let (r, z) = (&gates[0], &gates[1]);
            let mut n = at_time(x_n, t)?;
            match (&h_n, &self.bhn) {
                (Some(hn), _) => n = (n + (r * hn)?)?,
                (None, Some(b)) => n = (n + (r * b.value())?)?,
                (None, None) => {}
            }
            let n = ferrox::tanh(&n)?;
            let keep = ferrox::subtract(&1.0.into(), z)?;
            let next = match &h {
                Some(h) => ((keep * n)? + (z * h)?)?,
                None => (keep * n)?,
            };
            all.push(next.clone());
            h = Some(next);
        }
        ferrox::stack(&all, -2)
    }
}

impl Forward for Gru {
    fn forward(&self, x: &Array) -> Result<Array> {
        self.forward_from(x, None)
    }
}
crate::impl_module!(Gru { Wx, Wh, b, bhn });

/// A long short-term memory layer (gates i, f, g, o in `Wx`/`Wh`).
/// [`forward_from`](Lstm::forward_from) returns every hidden state and
/// every cell state; `forward` the hidden states.
///
/// ```
/// use ferrox_nn::layers::Lstm;
/// let lstm = Lstm::new(3, 4, true)?;
/// let (h, c) = lstm.forward_from(&ferrox::ones(&[2, 5, 3], ferrox::DType::Float32)?, None, None)?;
/// assert_eq!((h.shape(), c.shape()), (&[2usize, 5, 4][..], &[2usize, 5, 4][..]));
/// # Ok::<(), ferrox::Error>(())
/// ```
#[allow(non_snake_case)]
#[derive(Clone, Debug)]
pub struct Lstm {
    /// `[4 * hidden, input]`.
    pub Wx: Param,
    /// `[4 * hidden, hidden]`.
    pub Wh: Param,
    /// `[4 * hidden]`, if present.
    pub bias: Option<Param>,
}

impl Lstm {
    /// A randomly initialised LSTM.
    pub fn new(input_size: usize, hidden_size: usize, bias: bool) -> Result<Lstm> {
        check_positive("LSTM", "input_size", input_size)?;
        check_positive("LSTM", "hidden_size", hidden_size)?;
        let s = 1.0 / (hidden_size as f64).sqrt();
        let h4 = 4 * hidden_size;
        Ok(Lstm {
            Wx: Param::new(uniform_init(&[h4, input_size], s)?),
            Wh: Param::new(uniform_init(&[h4, hidden_size], s)?),
            bias: if bias {
                Some(Param::new(uniform_init(&[h4], s)?))
            } else {
                None
            },
        })
    }

    /// Every hidden and cell state, starting from `hidden` and `cell`
    /// (zeros when `None`).
    pub fn forward_from(
        &self,
        x: &Array,
        hidden: Option<&Array>,
        cell: Option<&Array>,
    ) -> Result<(Array, Array)> {
        let (h4, input) = (self.Wx.shape()[0], self.Wx.shape()[1]);
        check_input("LSTM", x, input)?;
        check_state("LSTM", "hidden", hidden, x, h4 / 4)?;
        check_state("LSTM", "cell", cell, x, h4 / 4)?;
        let x = project(x, &self.Wx, self.bias.as_ref())?;
        let wh_t = self.Wh.t()?;
        let (mut h, mut c) = (hidden.cloned(), cell.cloned());
        let (mut hs, mut cs) = (Vec::new(), Vec::new());
        for t in 0..x.shape()[x.ndim() - 2] {
            let mut ifgo = at_time(&x, t)?;
            if let Some(h) = &h {
                ifgo = ferrox::addmm(&ifgo, h, &wh_t, 1.0, 1.0)?;
            }
            let g4 = ferrox::split(&ifgo, 4usize, -1)?;
            let (i, f) = (ferrox::sigmoid(&g4[0])?, ferrox::sigmoid(&g4[1])?);
            let (g, o) = (ferrox::tanh(&g4[2])?, ferrox::sigmoid(&g4[3])?);
            let next_c = match &c {
                Some(c) => ((f * c)? + (&i * &g)?)?,
                None => (&i * &g)?,
            };
            let next_h = (o * ferrox::tanh(&next_c)?)?;
            hs.push(next_h.clone());
            cs.push(next_c.clone());
            h = Some(next_h);
            c = Some(next_c);
        }
        Ok((ferrox::stack(&hs, -2)?, ferrox::stack(&cs, -2)?))
    }
}

impl Forward for Lstm {
    fn forward(&self, x: &Array) -> Result<Array> {
        Ok(self.forward_from(x, None, None)?.0)
    }
}
crate::impl_module!(Lstm { Wx, Wh, bias });
