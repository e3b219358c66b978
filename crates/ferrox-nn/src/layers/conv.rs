//! Convolutions in MLX's channels-last layout: [`Conv1d`], [`Conv2d`],
//! [`Conv3d`] (`[N, spatial..., C_in]` with weight
//! `[C_out, kernel..., C_in / groups]`) and their transposes
//! [`ConvTranspose1d`], [`ConvTranspose2d`], [`ConvTranspose3d`] (weight
//! `[C_out, kernel..., C_in]`).

use super::linear::uniform_init;
use crate::error::{Result, check_last_dim, check_positive, check_rank, value};
use crate::module::{Forward, Param};
use ferrox::{Array, ConvGeneralParams, DType};

/// The settings of a convolution over `N` spatial dimensions.
///
/// ```
/// let o = ferrox_nn::layers::ConvOptions::<2> { padding: [1, 1], ..Default::default() };
/// assert_eq!((o.stride, o.groups, o.bias), ([1, 1], 1, true));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ConvOptions<const N: usize> {
    /// Step between windows (default 1).
    pub stride: [usize; N],
    /// Zeros added at both ends (default 0).
    pub padding: [usize; N],
    /// Step between kernel taps (default 1).
    pub dilation: [usize; N],
    /// Channel groups (default 1; transposed convolutions take 1 only).
    pub groups: usize,
    /// Extra rows at the end of a transposed convolution's output
    /// (default 0; less than the stride or the dilation).
    pub output_padding: [usize; N],
    /// Whether the layer has a bias (default true).
    pub bias: bool,
}

impl<const N: usize> Default for ConvOptions<N> {
    fn default() -> Self {
        ConvOptions {
            stride: [1; N],
            padding: [0; N],
            dilation: [1; N],
            groups: 1,
            output_padding: [0; N],
            bias: true,
        }
    }
}

fn make_weight<const N: usize>(
    who: &str,
    in_channels: usize,
    out_channels: usize,
    kernel: [usize; N],
    o: &ConvOptions<N>,
    transposed: bool,
) -> Result<(Param, Option<Param>)> {
    check_positive(who, "in_channels", in_channels)?;
    check_positive(who, "out_channels", out_channels)?;
    check_positive(who, "groups", o.groups)?;
    for (what, v) in [
        ("kernel_size", &kernel),
        ("stride", &o.stride),
        ("dilation", &o.dilation),
    ] {
        if v.contains(&0) {
            return Err(value(who, format!("{what} must be positive, got {v:?}")));
        }
    }
    if in_channels % o.groups != 0 || out_channels % o.groups != 0 {
        return Err(value(
            who,
            format!(
                "in_channels {in_channels} and out_channels {out_channels} must be divisible by groups {}",
                o.groups
            ),
        ));
    }
    if transposed && o.groups != 1 {
        return Err(value(who, format!("groups must be 1, got {}", o.groups)));
    }
    let fan: usize = in_channels * kernel.iter().product::<usize>();
    let scale = (1.0 / fan as f64).sqrt();
    let mut shape = vec![out_channels];
    shape.extend(kernel);
    shape.push(if transposed {
        in_channels
    } else {
        in_channels / o.groups
    });
    let w = Param::new(uniform_init(&shape, scale)?);
    let b = if o.bias {
        Some(Param::new(ferrox::zeros(&[out_channels], DType::Float32)?))
    } else {
        None
    };
    Ok((w, b))
}

fn add_bias(y: Array, bias: &Option<Param>) -> Result<Array> {
    match bias {
        Some(b) => y + b.value(),
        None => Ok(y),
    }
}

/// A convolution over `N` spatial dimensions (see [`Conv1d`], [`Conv2d`],
/// [`Conv3d`]).
#[derive(Clone, Debug)]
pub struct Conv<const N: usize> {
    /// `[C_out, kernel..., C_in / groups]`.
    pub weight: Param,
    /// `[C_out]`, if present.
    pub bias: Option<Param>,
    /// The settings.
    pub options: ConvOptions<N>,
}

/// 1-D convolution over `[N, L, C_in]`.
///
/// ```
/// use ferrox_nn::{Forward, layers::{Conv1d, ConvOptions}};
/// let c = Conv1d::new(2, 4, [3], ConvOptions { padding: [1], ..Default::default() })?;
/// assert_eq!(c.forward(&ferrox::ones(&[1, 5, 2], ferrox::DType::Float32)?)?.shape(), &[1, 5, 4]);
/// assert!(c.forward(&ferrox::ones(&[1, 5, 3], ferrox::DType::Float32)?).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type Conv1d = Conv<1>;
/// 2-D convolution over `[N, H, W, C_in]`.
///
/// ```
/// use ferrox_nn::{Forward, layers::{Conv2d, ConvOptions}};
/// let c = Conv2d::new(3, 8, [3, 3], ConvOptions { stride: [2, 2], ..Default::default() })?;
/// assert_eq!(c.forward(&ferrox::ones(&[2, 7, 7, 3], ferrox::DType::Float32)?)?.shape(), &[2, 3, 3, 8]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type Conv2d = Conv<2>;
/// 3-D convolution over `[N, D, H, W, C_in]`.
///
/// ```
/// use ferrox_nn::{Forward, layers::{Conv3d, ConvOptions}};
/// let c = Conv3d::new(1, 2, [2, 2, 2], ConvOptions::default())?;
/// assert_eq!(c.forward(&ferrox::ones(&[1, 3, 3, 3, 1], ferrox::DType::Float32)?)?.shape(), &[1, 2, 2, 2, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type Conv3d = Conv<3>;

impl<const N: usize> Conv<N> {
    /// A randomly initialised convolution (weight uniform in
    /// `±1/sqrt(C_in * kernel volume)`, bias zero).
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: [usize; N],
        options: ConvOptions<N>,
    ) -> Result<Conv<N>> {
        let (weight, bias) = make_weight(
            name(N, false),
            in_channels,
            out_channels,
            kernel_size,
            &options,
            false,
        )?;
        Ok(Conv {
            weight,
            bias,
            options,
        })
    }
}

fn name(n: usize, transposed: bool) -> &'static str {
    match (n, transposed) {
        (1, false) => "Conv1d",
        (2, false) => "Conv2d",
        (3, false) => "Conv3d",
        (1, true) => "ConvTranspose1d",
        (2, true) => "ConvTranspose2d",
        (3, true) => "ConvTranspose3d",
        _ => "Conv",
    }
}

impl<const N: usize> Forward for Conv<N> {
    fn forward(&self, x: &Array) -> Result<Array> {
        let who = name(N, false);
        check_rank(who, x, &[N + 2])?;
        check_last_dim(who, x, self.weight.shape()[N + 1] * self.options.groups)?;
        let o = &self.options;
        let pad: Vec<isize> = o.padding.iter().map(|&p| p as isize).collect();
        let p = ConvGeneralParams {
            stride: &o.stride,
            padding_lo: &pad,
            padding_hi: &pad,
            kernel_dilation: &o.dilation,
            input_dilation: &[],
            groups: o.groups,
            flip: false,
        };
        add_bias(ferrox::conv_general(x, &self.weight, &p)?, &self.bias)
    }
}
crate::impl_module!(Conv<1> { weight, bias });
crate::impl_module!(Conv<2> { weight, bias });
crate::impl_module!(Conv<3> { weight, bias });

/// A transposed convolution over `N` spatial dimensions (see
/// [`ConvTranspose1d`], [`ConvTranspose2d`], [`ConvTranspose3d`]).
#[derive(Clone, Debug)]
pub struct ConvTranspose<const N: usize> {
    /// `[C_out, kernel..., C_in]`.
    pub weight: Param,
    /// `[C_out]`, if present.
    pub bias: Option<Param>,
    /// The settings.
    pub options: ConvOptions<N>,
}

/// 1-D transposed convolution over `[N, L, C_in]`.
///
/// ```
/// use ferrox_nn::{Forward, layers::{ConvTranspose1d, ConvOptions}};
/// let c = ConvTranspose1d::new(2, 3, [3], ConvOptions { stride: [2], ..Default::default() })?;
/// assert_eq!(c.forward(&ferrox::ones(&[1, 4, 2], ferrox::DType::Float32)?)?.shape(), &[1, 9, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type ConvTranspose1d = ConvTranspose<1>;
/// 2-D transposed convolution over `[N, H, W, C_in]`.
///
/// ```
/// use ferrox_nn::{Forward, layers::{ConvTranspose2d, ConvOptions}};
/// let c = ConvTranspose2d::new(2, 3, [2, 2], ConvOptions { stride: [2, 2], ..Default::default() })?;
/// assert_eq!(c.forward(&ferrox::ones(&[1, 3, 3, 2], ferrox::DType::Float32)?)?.shape(), &[1, 6, 6, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type ConvTranspose2d = ConvTranspose<2>;
/// 3-D transposed convolution over `[N, D, H, W, C_in]`.
///
/// ```
/// use ferrox_nn::{Forward, layers::{ConvTranspose3d, ConvOptions}};
/// let c = ConvTranspose3d::new(1, 1, [2, 2, 2], ConvOptions::default())?;
/// assert_eq!(c.forward(&ferrox::ones(&[1, 2, 2, 2, 1], ferrox::DType::Float32)?)?.shape(), &[1, 3, 3, 3, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type ConvTranspose3d = ConvTranspose<3>;

impl<const N: usize> ConvTranspose<N> {
    /// A randomly initialised transposed convolution.
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: [usize; N],
        options: ConvOptions<N>,
    ) -> Result<ConvTranspose<N>> {
        let (weight, bias) = make_weight(
            name(N, true),
            in_channels,
            out_channels,
            kernel_size,
            &options,
            true,
        )?;
        Ok(ConvTranspose {
            weight,
            bias,
            options,
        })
    }
}

impl<const N: usize> Forward for ConvTranspose<N> {
    fn forward(&self, x: &Array) -> Result<Array> {
        let who = name(N, true);
        check_rank(who, x, &[N + 2])?;
        check_last_dim(who, x, self.weight.shape()[N + 1])?;
        let o = &self.options;
        let y = ferrox::conv_transpose(
            x,
            &self.weight,
            &o.stride,
            &o.padding,
            &o.dilation,
            &o.output_padding,
            1,
        )?;
        add_bias(y, &self.bias)
    }
}
crate::impl_module!(ConvTranspose<1> { weight, bias });
crate::impl_module!(ConvTranspose<2> { weight, bias });
crate::impl_module!(ConvTranspose<3> { weight, bias });
