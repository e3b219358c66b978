//! [`Linear`], [`Bilinear`] and [`Identity`].

use super::quantized::QuantSpec;
use crate::error::{Result, check_last_dim, check_positive, shape};
use crate::module::{Forward, Param};
use ferrox::{Array, DType};

/// Uniform values in `[-scale, scale)` (MLX's default initialisation of
/// linear and convolution layers), float32.
pub(crate) fn uniform_init(shape: &[usize], scale: f64) -> Result<Array> {
    ferrox::random::uniform(-scale, scale, shape, DType::Float32, None)
}

/// `y = x W^T + b`, with `W` of shape `[output_dims, input_dims]`.
///
/// Weight and bias start uniform in `±sqrt(1 / input_dims)`.
///
/// ```
/// use ferrox_nn::{Forward, Module, layers::Linear};
/// let l = Linear::new(3, 2, true)?;
/// let x = ferrox::ones(&[4, 3], ferrox::DType::Float32)?;
/// assert_eq!(l.forward(&x)?.shape(), &[4, 2]);
/// let e = l.forward(&ferrox::ones(&[4, 5], ferrox::DType::Float32)?).unwrap_err();
/// assert!(e.to_string().starts_with("Linear:"), "{e}");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Linear {
    /// `[output_dims, input_dims]`.
    pub weight: Param,
    /// `[output_dims]`, if the layer has a bias.
    pub bias: Option<Param>,
    /// The quantization scales, when quantized.
    pub scales: Option<Param>,
    /// The quantization biases, when quantized in the affine mode.
    pub biases: Option<Param>,
    /// How `weight` is quantized (`None`: a float weight).
    pub quant: Option<QuantSpec>,
}

impl Linear {
    /// A randomly initialised layer.
    pub fn new(input_dims: usize, output_dims: usize, bias: bool) -> Result<Linear> {
        check_positive("Linear", "input_dims", input_dims)?;
        check_positive("Linear", "output_dims", output_dims)?;
        let scale = (1.0 / input_dims as f64).sqrt();
        Ok(Linear {
            weight: Param::new(uniform_init(&[output_dims, input_dims], scale)?),
            bias: if bias {
                Some(Param::new(uniform_init(&[output_dims], scale)?))
            } else {
                None
            },
            scales: None,
            biases: None,
            quant: None,
        })
    }

    /// A layer with the given weight (`[out, in]`) and bias (`[out]`).
    ///
    /// ```
    /// let w = ferrox::ones(&[2, 3], ferrox::DType::Float32)?;
    /// assert!(ferrox_nn::layers::Linear::from_weights(w.clone(), None).is_ok());
    /// let b = ferrox::ones(&[3], ferrox::DType::Float32)?;
    /// assert!(ferrox_nn::layers::Linear::from_weights(w, Some(b)).is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn from_weights(weight: Array, bias: Option<Array>) -> Result<Linear> {
        if weight.ndim() != 2 {
            return Err(shape(
                "Linear",
                format!(
                    "weight must be [output_dims, input_dims], got shape {:?}",
                    weight.shape()
                ),
            ));
        }
        if let Some(b) = &bias {
            if b.shape() != [weight.shape()[0]] {
                return Err(shape(
                    "Linear",
                    format!(
                        "bias must have shape [{}], got {:?}",
                        weight.shape()[0],
                        b.shape()
                    ),
                ));
            }
        }
        Ok(Linear {
            weight: Param::new(weight),
            bias: bias.map(Param::new),
            scales: None,
            biases: None,
            quant: None,
        })
    }

    /// `input_dims`.
    pub fn input_dims(&self) -> usize {
        let packed = self.weight.shape()[1];
        match &self.quant {
            Some(q) => packed * 32 / q.bits,
            None => packed,
        }
    }

    /// `output_dims`.
    pub fn output_dims(&self) -> usize {
        self.weight.shape()[0]
    }
}

impl Forward for Linear {
    fn forward(&self, x: &Array) -> Result<Array> {
        check_last_dim("Linear", x, self.input_dims())?;
        if let Some(q) = &self.quant {
            let y = q.matmul(x, &self.weight, &self.scales, &self.biases, true)?;
            return match &self.bias {
                Some(b) => y + b.value(),
                None => Ok(y),
            };
        }
        let wt = self.weight.t()?;
        match &self.bias {
            Some(b) => ferrox::addmm(b, x, &wt, 1.0, 1.0),
            None => ferrox::matmul(x, &wt),
        }
    }
}
crate::impl_module!(Linear {
    weight,
    bias,
    scales,
    biases
});

/// `y_i = x1^T W_i x2 + b_i`, with `W` of shape
/// `[output_dims, input2_dims, input1_dims]`.
///
/// ```
/// use ferrox_nn::layers::Bilinear;
/// let b = Bilinear::new(2, 3, 4, true)?;
/// let x1 = ferrox::ones(&[5, 2], ferrox::DType::Float32)?;
/// let x2 = ferrox::ones(&[5, 3], ferrox::DType::Float32)?;
/// assert_eq!(b.forward(&x1, &x2)?.shape(), &[5, 4]);
/// assert!(b.forward(&x2, &x1).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Bilinear {
    /// `[output_dims, input2_dims, input1_dims]`.
    pub weight: Param,
    /// `[output_dims]`, if present.
    pub bias: Option<Param>,
}

impl Bilinear {
    /// A randomly initialised layer (uniform in `±sqrt(1 / input1_dims)`).
    pub fn new(
        input1_dims: usize,
        input2_dims: usize,
        output_dims: usize,
        bias: bool,
    ) -> Result<Bilinear> {
        for (what, n) in [
            ("input1_dims", input1_dims),
            ("input2_dims", input2_dims),
            ("output_dims", output_dims),
        ] {
            check_positive("Bilinear", what, n)?;
        }
        let scale = (1.0 / input1_dims as f64).sqrt();
        Ok(Bilinear {
            weight: Param::new(uniform_init(
                &[output_dims, input2_dims, input1_dims],
                scale,
            )?),
            bias: if bias {
                Some(Param::new(uniform_init(&[output_dims], scale)?))
            } else {
                None
            },
        })
    }

    /// Applies the layer to `x1` (`[..., input1_dims]`) and `x2`
    /// (`[..., input2_dims]`, the same leading shape).
    pub fn forward(&self, x1: &Array, x2: &Array) -> Result<Array> {
        let ws = self.weight.shape();
        let (out, in2, in1) = (ws[0], ws[1], ws[2]);
        check_last_dim("Bilinear", x1, in1)?;
        check_last_dim("Bilinear", x2, in2)?;
        let lead = &x1.shape()[..x1.ndim() - 1];
        if lead != &x2.shape()[..x2.ndim() - 1] {
            return Err(shape(
                "Bilinear",
                format!(
                    "x1 (shape {:?}) and x2 (shape {:?}) need the same leading shape",
                    x1.shape(),
                    x2.shape()
                ),
            ));
        }
        let x1 = x1.reshape(&[-1, in1 as isize])?;
        let x2 = x2.reshape(&[-1, 1, in2 as isize])?;
        // [n, out * in2] = x1 [n, in1] @ W^T, then per row [1, in2] @ [in2, out].
        let w = self.weight.reshape(&[(out * in2) as isize, in1 as isize])?;
        let y = ferrox::matmul(&x1, &w.t()?)?;
        let y = y
            .reshape(&[-1, out as isize, in2 as isize])?
            .swapaxes(-2, -1)?;
        let y = ferrox::matmul(&x2, &y)?.squeeze(Some(&[1]))?;
        let mut shape: Vec<isize> = lead.iter().map(|&d| d as isize).collect();
        shape.push(out as isize);
        let y = y.reshape(&shape)?;
        match &self.bias {
            Some(b) => &y + b.value(),
            None => Ok(y),
        }
    }
}
crate::impl_module!(Bilinear { weight, bias });

/// Returns its input.
///
/// ```
/// use ferrox_nn::{Forward, layers::Identity};
/// let x = ferrox::ones(&[2], ferrox::DType::Float32)?;
/// assert_eq!(Identity.forward(&x)?.id(), x.id());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Identity;

impl Forward for Identity {
    fn forward(&self, x: &Array) -> Result<Array> {
        Ok(x.clone())
    }
}
crate::impl_module!(Identity {});
