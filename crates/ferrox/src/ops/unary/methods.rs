//! Method forms of the unary ops that MLX's `array` has as methods.

use super::builders;
use crate::error::Result;
use crate::graph::array::Array;

impl Array {
    /// Method form of [`abs`](crate::abs).
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[-2i32], &[1])?;
    /// assert_eq!(a.abs()?.to_vec::<i32>()?, vec![2]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn abs(&self) -> Result<Array> {
        builders::abs(self)
    }

    /// Method form of [`square`](crate::square).
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[3.0f32], &[1])?;
    /// assert_eq!(a.square()?.to_vec::<f32>()?, vec![9.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn square(&self) -> Result<Array> {
        builders::square(self)
    }

    /// Method form of [`sqrt`](crate::sqrt).
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[9.0f32], &[1])?;
    /// assert_eq!(a.sqrt()?.to_vec::<f32>()?, vec![3.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn sqrt(&self) -> Result<Array> {
        builders::sqrt(self)
    }

    /// Method form of [`rsqrt`](crate::rsqrt).
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[4.0f32], &[1])?;
    /// assert_eq!(a.rsqrt()?.to_vec::<f32>()?, vec![0.5]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn rsqrt(&self) -> Result<Array> {
        builders::rsqrt(self)
    }

    /// Method form of [`reciprocal`](crate::reciprocal).
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[4.0f32], &[1])?;
    /// assert_eq!(a.reciprocal()?.to_vec::<f32>()?, vec![0.25]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn reciprocal(&self) -> Result<Array> {
        builders::reciprocal(self)
    }

    /// Method form of [`exp`](crate::exp).
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[0.0f32], &[1])?;
    /// assert_eq!(a.exp()?.to_vec::<f32>()?, vec![1.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn exp(&self) -> Result<Array> {
        builders::exp(self)
    }

    /// Method form of [`log`](crate::log).
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[1.0f32], &[1])?;
    /// assert_eq!(a.log()?.to_vec::<f32>()?, vec![0.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn log(&self) -> Result<Array> {
        builders::log(self)
    }

    /// Method form of [`log2`](crate::log2).
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[4.0f32], &[1])?;
    /// assert_eq!(a.log2()?.to_vec::<f32>()?, vec![2.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn log2(&self) -> Result<Array> {
        builders::log2(self)
    }

    /// Method form of [`log10`](crate::log10).
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[100.0f32], &[1])?;
    /// assert_eq!(a.log10()?.to_vec::<f32>()?, vec![2.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn log10(&self) -> Result<Array> {
        builders::log10(self)
    }

    /// Method form of [`log1p`](crate::log1p).
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[0.0f32], &[1])?;
    /// assert_eq!(a.log1p()?.to_vec::<f32>()?, vec![0.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn log1p(&self) -> Result<Array> {
        builders::log1p(self)
    }

    /// Method form of [`sin`](crate::sin).
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[0.0f32], &[1])?;
    /// assert_eq!(a.sin()?.to_vec::<f32>()?, vec![0.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn sin(&self) -> Result<Array> {
        builders::sin(self)
    }

    /// Method form of [`cos`](crate::cos).
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[0.0f32], &[1])?;
    /// assert_eq!(a.cos()?.to_vec::<f32>()?, vec![1.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn cos(&self) -> Result<Array> {
        builders::cos(self)
    }

    /// Method form of [`conjugate`](crate::conjugate).
    ///
    /// ```
    /// let z = ferrox::Array::from_slice(&[ferrox::Complex64::new(0.0, 1.0)], &[1])?;
    /// assert_eq!(z.conj()?.to_vec::<ferrox::Complex64>()?, vec![ferrox::Complex64::new(0.0, -1.0)]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn conj(&self) -> Result<Array> {
        builders::conjugate(self)
    }

    /// Method form of [`real`](crate::real).
    ///
    /// ```
    /// let z = ferrox::Array::from_slice(&[ferrox::Complex64::new(3.0, 1.0)], &[1])?;
    /// assert_eq!(z.real()?.to_vec::<f32>()?, vec![3.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn real(&self) -> Result<Array> {
        builders::real(self)
    }

    /// Method form of [`imag`](crate::imag).
    ///
    /// ```
    /// let z = ferrox::Array::from_slice(&[ferrox::Complex64::new(3.0, 1.0)], &[1])?;
    /// assert_eq!(z.imag()?.to_vec::<f32>()?, vec![1.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn imag(&self) -> Result<Array> {
        builders::imag(self)
    }

    /// Method form of [`round`](crate::round).
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[1.25f32], &[1])?;
    /// assert_eq!(a.round(1)?.to_vec::<f32>()?, vec![1.2]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn round(&self, decimals: i32) -> Result<Array> {
        builders::round(self, decimals)
    }
}
