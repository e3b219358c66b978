//! Learning-rate schedules (`mlx.optimizers.schedulers`): functions of the
//! step (a uint64 scalar) built from ops, so they also run inside a
//! compiled training step.

use super::Schedule;
use crate::error::{Result, value};
use ferrox::{Array, DType};
use std::sync::Arc;

fn steps_f32(step: &Array) -> Result<Array> {
    step.astype(DType::Float32)
}

fn check_steps(who: &str, what: &str, n: u64) -> Result<()> {
    if n < 1 {
        return Err(value(who, format!("{what} must be at least 1, got {n}")));
    }
    Ok(())
}

/// `init * decay_rate^step`.
///
/// ```
/// let s = ferrox_nn::optim::schedule::exponential_decay(0.1, 0.5);
/// let lr = s(&ferrox::Array::scalar(2u64))?.item::<f32>()?;
/// assert!((lr - 0.025).abs() < 1e-7);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn exponential_decay(init: f64, decay_rate: f64) -> Schedule {
    Arc::new(move |step: &Array| {
        let t = steps_f32(step)?;
        ferrox::power(&Array::scalar(decay_rate as f32), &t)? * init
    })
}

/// `init * decay_rate^(step / step_size)` (integer division).
///
/// ```
/// let s = ferrox_nn::optim::schedule::step_decay(0.1, 0.5, 10)?;
/// let lr = s(&ferrox::Array::scalar(25u64))?.item::<f32>()?;
/// assert!((lr - 0.025).abs() < 1e-7);
/// assert!(ferrox_nn::optim::schedule::step_decay(0.1, 0.5, 0).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn step_decay(init: f64, decay_rate: f64, step_size: u64) -> Result<Schedule> {
    check_steps("step_decay", "step_size", step_size)?;
    Ok(Arc::new(move |step: &Array| {
        let k = ferrox::floor_divide(step, &Array::scalar(step_size).astype(step.dtype())?)?;
        ferrox::power(&Array::scalar(decay_rate as f32), &steps_f32(&k)?)? * init
    }))
}

/// `end + (init - end) * (1 + cos(pi * min(step, decay_steps) / decay_steps)) / 2`.
///
/// ```
/// let s = ferrox_nn::optim::schedule::cosine_decay(0.1, 100, 0.0)?;
/// assert!((s(&ferrox::Array::scalar(50u64))?.item::<f32>()? - 0.05).abs() < 1e-6);
/// assert!(s(&ferrox::Array::scalar(500u64))?.item::<f32>()?.abs() < 1e-7);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn cosine_decay(init: f64, decay_steps: u64, end: f64) -> Result<Schedule> {
    check_steps("cosine_decay", "decay_steps", decay_steps)?;
    Ok(Arc::new(move |step: &Array| {
        let s = steps_f32(step)?.minimum(decay_steps as f64)?;
        let c = ferrox::cos(&(s * (std::f64::consts::PI / decay_steps as f64))?)?;
        let decay = ((c + 1.0)? * 0.5)?;
        (decay * (init - end))? + end
    }))
}

/// From `init` to `end` linearly over `steps` steps, then `end`.
///
/// ```
/// let s = ferrox_nn::optim::schedule::linear_schedule(0.0, 1.0, 10)?;
/// assert!((s(&ferrox::Array::scalar(3u64))?.item::<f32>()? - 0.3).abs() < 1e-6);
/// assert_eq!(s(&ferrox::Array::scalar(30u64))?.item::<f32>()?, 1.0);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn linear_schedule(init: f64, end: f64, steps: u64) -> Result<Schedule> {
    check_steps("linear_schedule", "steps", steps)?;
    Ok(Arc::new(move |step: &Array| {
        let s = steps_f32(step)?.minimum(steps as f64)?;
        (s * ((end - init) / steps as f64))? + init
    }))
}

/// `schedules[0]` until `boundaries[0]`, then `schedules[1]` (counting its
/// steps from that boundary), and so on.
///
/// ```
/// use ferrox_nn::optim::schedule::{join_schedules, linear_schedule, cosine_decay};
/// let warmup = linear_schedule(0.0, 0.1, 10)?;
/// let s = join_schedules(vec![warmup, cosine_decay(0.1, 100, 0.0)?], &[10])?;
/// assert!((s(&ferrox::Array::scalar(5u64))?.item::<f32>()? - 0.05).abs() < 1e-6);
/// assert!((s(&ferrox::Array::scalar(10u64))?.item::<f32>()? - 0.1).abs() < 1e-6);
/// assert!(join_schedules(vec![], &[]).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn join_schedules(schedules: Vec<Schedule>, boundaries: &[u64]) -> Result<Schedule> {
    if schedules.is_empty() {
        return Err(value("join_schedules", "needs at least one schedule"));
    }
    if schedules.len() != boundaries.len() + 1 {
        return Err(value(
            "join_schedules",
            format!(
                "{} boundaries given for {} schedules (needs {})",
                boundaries.len(),
                schedules.len(),
                schedules.len() - 1
            ),
        ));
    }
    let boundaries = boundaries.to_vec();
    Ok(Arc::new(move |step: &Array| {
        let mut out = schedules[0](step)?;
        for (&b, s) in boundaries.iter().zip(&schedules[1..]) {
            let bound = Array::scalar(b).astype(step.dtype())?;
            // max(step, b) - b: no unsigned wrap-around before the boundary.
            let local = ferrox::subtract(&ferrox::maximum(step, &bound)?, &bound)?;
            let before = ferrox::less(step, &bound)?;
            out = ferrox::r#where(&before, &out, &s(&local)?.astype(DType::Float32)?)?;
        }
        Ok(out)
    }))
}
