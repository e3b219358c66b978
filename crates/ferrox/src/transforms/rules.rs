//! Helpers shared by the primitives' transform rules.

use crate::{Array, Result};

/// Sums `g` down to `shape`, undoing numpy broadcasting: the cotangent of
/// a broadcast operand.
///
/// ```
/// use ferrox::*;
/// let g = ones(&[2, 3], DType::Float32)?;
/// let r = ferrox::transforms::rules::unbroadcast(&g, &[3])?;
/// assert_eq!(r.to_vec::<f32>()?, vec![2.0; 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn unbroadcast(g: &Array, shape: &[usize]) -> Result<Array> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let extra = g.ndim() - shape.len();
    let mut axes: Vec<isize> = (0..extra as isize).collect();
    for (i, &d) in shape.iter().enumerate() {
        if d == 1 && g.shape()[extra + i] != 1 {
            axes.push((extra + i) as isize);
        }
    }
    let s = crate::sum(g, Some(&axes), true)?;
    let target: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
    crate::reshape(&s, &target)
}

/// Moves every batched input's batch axis to the front and pads its rank
/// so that elementwise broadcasting lines examples up; unbatched inputs are
/// left alone (they broadcast from the right). Returns the inputs and the
/// output batch axis (`Some(0)`, or `None` if nothing is batched).
pub fn align_batch(
    inputs: &[Array],
    axes: &[Option<usize>],
) -> Result<(Vec<Array>, Option<usize>)> {
    let rank = inputs
        .iter()
        .zip(axes)
        .map(|(x, a)| x.ndim() - usize::from(a.is_some()))
        .max()
        .unwrap_or(0);
    if axes.iter().all(Option::is_none) {
        return Ok((inputs.to_vec(), None));
    }
    let mut out = Vec::with_capacity(inputs.len());
    for (x, a) in inputs.iter().zip(axes) {
        match a {
            None => out.push(x.clone()),
            Some(ax) => {
                let moved = crate::moveaxis(x, *ax as isize, 0)?;
                let example_rank = x.ndim() - 1;
                if example_rank < rank {
                    let mut shape: Vec<isize> = vec![moved.shape()[0] as isize];
                    shape.extend(std::iter::repeat_n(1, rank - example_rank));
                    shape.extend(moved.shape()[1..].iter().map(|&d| d as isize));
                    out.push(crate::reshape(&moved, &shape)?);
                } else {
                    out.push(moved);
                }
            }
        }
    }
    Ok((out, Some(0)))
}
