//! Errors: ferrox's [`Error`] with the layer, loss or optimizer as its op.
//!
//! Every check in this crate returns an `Err` whose message starts with
//! the name of the layer (`Linear: ...`) and shows the offending values;
//! nothing a caller passes in panics.

pub use ferrox::{Error, ErrorKind, Result};

/// A [`ErrorKind::Value`] error raised by `who`.
///
/// ```
/// let e = ferrox_nn::error::value("Dropout", "p must be in [0, 1), got 1.5");
/// assert_eq!(e.to_string(), "Dropout: p must be in [0, 1), got 1.5");
/// ```
pub fn value(who: &str, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Value, who, message)
}

/// A [`ErrorKind::Shape`] error raised by `who`.
///
/// ```
/// let e = ferrox_nn::error::shape("Linear", "input has 3 features, the layer 4");
/// assert_eq!(e.kind(), ferrox::ErrorKind::Shape);
/// ```
pub fn shape(who: &str, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Shape, who, message)
}

/// Checks that `x`'s last dimension is `dims`, naming `who` otherwise.
///
/// ```
/// let x = ferrox::zeros(&[2, 3], ferrox::DType::Float32)?;
/// assert!(ferrox_nn::error::check_last_dim("Linear", &x, 3).is_ok());
/// let e = ferrox_nn::error::check_last_dim("Linear", &x, 4).unwrap_err();
/// assert!(e.to_string().contains("[2, 3]"));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn check_last_dim(who: &str, x: &ferrox::Array, dims: usize) -> Result<()> {
    match x.shape().last() {
        Some(&d) if d == dims => Ok(()),
        _ => Err(shape(
            who,
            format!(
                "expected an input whose last dimension is {dims}, got shape {:?}",
                x.shape()
            ),
        )),
    }
}

/// Checks that `x` has a rank in `ranks`, naming `who` otherwise.
///
/// ```
/// let x = ferrox::zeros(&[2, 3], ferrox::DType::Float32)?;
/// assert!(ferrox_nn::error::check_rank("Conv1d", &x, &[3]).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn check_rank(who: &str, x: &ferrox::Array, ranks: &[usize]) -> Result<()> {
    if ranks.contains(&x.ndim()) {
        return Ok(());
    }
    Err(shape(
        who,
        format!(
            "expected an input of rank {}, got shape {:?}",
            ranks
                .iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(" or "),
            x.shape()
        ),
    ))
}

/// Checks that a size argument is positive.
///
/// ```
/// assert!(ferrox_nn::error::check_positive("Linear", "input_dims", 0).is_err());
/// ```
pub fn check_positive(who: &str, what: &str, n: usize) -> Result<()> {
    if n == 0 {
        return Err(value(who, format!("{what} must be positive, got 0")));
    }
    Ok(())
}
