//! Pooling: [`MaxPool1d`], [`MaxPool2d`], [`MaxPool3d`], [`AvgPool1d`],
//! [`AvgPool2d`], [`AvgPool3d`] over channels-last `[N, spatial..., C]`.
//!
//! A window's values are gathered by one strided slice per kernel offset
//! (a 3x3 kernel: 9 slices) and reduced elementwise, so the derivative is
//! the slices' and no window array is materialised. Padding is `-inf`
//! for max pooling and 0 for average pooling (counted in the average, as
//! MLX does).

use crate::error::{Result, check_rank, value};
use crate::module::Forward;
use ferrox::{Array, PadMode};

/// How a window is reduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    /// The largest value.
    Max,
    /// The mean value.
    Avg,
}

/// A pooling layer over `N` spatial dimensions.
#[derive(Clone, Copy, Debug)]
pub struct Pool<const N: usize> {
    /// Max or average.
    pub kind: PoolKind,
    /// The window.
    pub kernel_size: [usize; N],
    /// Step between windows (MLX's default: the window).
    pub stride: [usize; N],
    /// Padding at both ends.
    pub padding: [usize; N],
}

impl<const N: usize> Pool<N> {
    fn who(&self) -> &'static str {
        match (self.kind, N) {
            (PoolKind::Max, 1) => "MaxPool1d",
            (PoolKind::Max, 2) => "MaxPool2d",
            (PoolKind::Max, 3) => "MaxPool3d",
            (PoolKind::Avg, 1) => "AvgPool1d",
            (PoolKind::Avg, 2) => "AvgPool2d",
            (PoolKind::Avg, 3) => "AvgPool3d",
            _ => "Pool",
        }
    }

    /// A pool with `kernel_size`, `stride` (`None`: the kernel) and `padding`.
    pub fn new(
        kind: PoolKind,
        kernel_size: [usize; N],
        stride: Option<[usize; N]>,
        padding: [usize; N],
    ) -> Result<Pool<N>> {
        let p = Pool {
            kind,
            kernel_size,
            stride: stride.unwrap_or(kernel_size),
            padding,
        };
        for (what, v) in [("kernel_size", &p.kernel_size), ("stride", &p.stride)] {
            if v.contains(&0) {
                return Err(value(
                    p.who(),
                    format!("{what} must be positive, got {v:?}"),
                ));
            }
        }
        Ok(p)
    }
}

impl<const N: usize> Forward for Pool<N> {
    fn forward(&self, x: &Array) -> Result<Array> {
        let who = self.who();
        check_rank(who, x, &[N + 2])?;
        let mut x = x.clone();
        if self.padding.iter().any(|&p| p > 0) {
            let fill = match self.kind {
                PoolKind::Max => f64::NEG_INFINITY,
                PoolKind::Avg => 0.0,
            };
            let mut widths = vec![(0, 0)];
            widths.extend(self.padding.iter().map(|&p| (p, p)));
            widths.push((0, 0));
            x = ferrox::pad(&x, &widths, PadMode::Constant(fill))?;
        }
        let shape = x.shape().to_vec();
        let mut out = Vec::with_capacity(N);
        for d in 0..N {
            let (size, k, s) = (shape[d + 1], self.kernel_size[d], self.stride[d]);
            if size < k {
                return Err(value(
                    who,
                    format!(
                        "the window {:?} is larger than the padded input {:?}",
                        self.kernel_size,
                        &shape[1..=N]
                    ),
                ));
            }
            out.push((size - k) / s + 1);
        }
        let nd = N + 2;
        let mut acc: Option<Array> = None;
        let taps: usize = self.kernel_size.iter().product();
        for tap in 0..taps {
            // The kernel offset of this tap, last dimension fastest.
            let mut rest = tap;
            let mut offset = [0usize; N];
            for d in (0..N).rev() {
                offset[d] = rest % self.kernel_size[d];
                rest /= self.kernel_size[d];
            }
            let mut start = vec![0isize; nd];
            let mut stop: Vec<isize> = shape.iter().map(|&v| v as isize).collect();
            let mut step = vec![1isize; nd];
            for d in 0..N {
                start[d + 1] = offset[d] as isize;
                stop[d + 1] = (offset[d] + self.stride[d] * (out[d] - 1) + 1) as isize;
                step[d + 1] = self.stride[d] as isize;
            }
            let v = ferrox::slice(&x, &start, &stop, &step)?;
            acc = Some(match (acc, self.kind) {
                (None, _) => v,
                (Some(a), PoolKind::Max) => ferrox::maximum(&a, &v)?,
                (Some(a), PoolKind::Avg) => (a + v)?,
            });
        }
        let acc = acc.ok_or_else(|| value(who, "an empty window"))?;
        match self.kind {
            PoolKind::Max => Ok(acc),
            PoolKind::Avg => acc / taps as f64,
        }
    }
}
crate::impl_module!(Pool<1> {});
crate::impl_module!(Pool<2> {});
crate::impl_module!(Pool<3> {});

macro_rules! pool_ctor {
    ($(#[$doc:meta])* $name:ident, $n:literal, $kind:ident) => {
        $(#[$doc])*
        pub struct $name;
        impl $name {
            /// The pool with `kernel_size`, `stride` (`None`: the kernel) and `padding`.
            #[allow(clippy::new_ret_no_self)]
            pub fn new(kernel_size: [usize; $n], stride: Option<[usize; $n]>, padding: [usize; $n]) -> Result<Pool<$n>> {
                Pool::new(PoolKind::$kind, kernel_size, stride, padding)
            }
        }
    };
}

pool_ctor!(
    /// Max pooling over `[N, L, C]`.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::MaxPool1d};
    /// let x = ferrox::Array::from_slice(&[1.0f32, 3.0, 2.0, 5.0], &[1, 4, 1])?;
    /// assert_eq!(MaxPool1d::new([2], None, [0])?.forward(&x)?.to_vec::<f32>()?, vec![3.0, 5.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    MaxPool1d, 1, Max);
pool_ctor!(
    /// Max pooling over `[N, H, W, C]`.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::MaxPool2d};
    /// let x = ferrox::arange(0.0, 16.0, 1.0, ferrox::DType::Float32)?.reshape(&[1, 4, 4, 1])?;
    /// let y = MaxPool2d::new([2, 2], None, [0, 0])?.forward(&x)?;
    /// assert_eq!(y.to_vec::<f32>()?, vec![5.0, 7.0, 13.0, 15.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    MaxPool2d, 2, Max);
pool_ctor!(
    /// Max pooling over `[N, D, H, W, C]`.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::MaxPool3d};
    /// let x = ferrox::ones(&[1, 2, 2, 2, 1], ferrox::DType::Float32)?;
    /// assert_eq!(MaxPool3d::new([2, 2, 2], None, [0, 0, 0])?.forward(&x)?.shape(), &[1, 1, 1, 1, 1]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    MaxPool3d, 3, Max);
pool_ctor!(
    /// Average pooling over `[N, L, C]`.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::AvgPool1d};
    /// let x = ferrox::Array::from_slice(&[1.0f32, 3.0, 2.0, 6.0], &[1, 4, 1])?;
    /// assert_eq!(AvgPool1d::new([2], None, [0])?.forward(&x)?.to_vec::<f32>()?, vec![2.0, 4.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    AvgPool1d, 1, Avg);
pool_ctor!(
    /// Average pooling over `[N, H, W, C]`.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::AvgPool2d};
    /// let x = ferrox::ones(&[1, 4, 4, 2], ferrox::DType::Float32)?;
    /// let y = AvgPool2d::new([3, 3], Some([1, 1]), [1, 1])?.forward(&x)?;
    /// assert_eq!(y.shape(), &[1, 4, 4, 2]);
    /// assert!((y.to_vec::<f32>()?[0] - 4.0 / 9.0).abs() < 1e-6); // corner: 4 of 9 are padding
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    AvgPool2d, 2, Avg);
pool_ctor!(
    /// Average pooling over `[N, D, H, W, C]`.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::AvgPool3d};
    /// let x = ferrox::ones(&[1, 2, 2, 2, 1], ferrox::DType::Float32)?;
    /// assert_eq!(AvgPool3d::new([2, 2, 2], None, [0, 0, 0])?.forward(&x)?.to_vec::<f32>()?, vec![1.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    AvgPool3d, 3, Avg);
