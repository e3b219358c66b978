//! [`SharedModule`]: one model served by many threads while another
//! thread swaps in new weights.
//!
//! The choice: **a forward pass sees one whole weight set.** The model
//! lives behind an `Arc` that is swapped as a whole. A reader takes a
//! snapshot (the read lock is held only to clone the `Arc`, never during
//! a forward pass) and runs on it with no lock held; an update clones the
//! current model (cheap: the arrays are shared, not copied), changes the
//! clone and swaps it in. A forward that started before the swap finishes
//! on the old set; every snapshot taken after it sees the new set; no
//! forward sees half of each. No thread copies the weights, and readers
//! never wait for a forward pass of another thread. Writers are
//! serialised among themselves so that no update is lost.

use crate::error::Result;
use crate::module::Module;
use crate::params::Params;
use std::sync::{Arc, Mutex, RwLock};

/// A model shared by threads, updated by whole weight sets.
///
/// ```
/// use ferrox_nn::{Forward, Module, SharedModule, layers::Linear};
/// let shared = SharedModule::new(Linear::new(2, 2, false)?);
/// let before = shared.snapshot();
/// let zero = before.parameters().map_named(|_, a| ferrox::zeros_like(a))?;
/// shared.update(&zero, true)?;
/// let x = ferrox::ones(&[1, 2], ferrox::DType::Float32)?;
/// assert_eq!(shared.snapshot().forward(&x)?.to_vec::<f32>()?, vec![0.0, 0.0]);
/// // A snapshot taken before the update still holds the old weights.
/// assert_ne!(before.forward(&x)?.to_vec::<f32>()?, vec![0.0, 0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub struct SharedModule<M> {
    current: RwLock<Arc<M>>,
    writer: Mutex<()>,
}

impl<M: Module + Clone> SharedModule<M> {
    /// Shares `model`.
    pub fn new(model: M) -> Self {
        SharedModule {
            current: RwLock::new(Arc::new(model)),
            writer: Mutex::new(()),
        }
    }

    /// The current model; it stays valid (and unchanged) however the
    /// shared model is updated afterwards.
    pub fn snapshot(&self) -> Arc<M> {
        // A poisoned lock still holds a whole model: nothing panics while
        // the write lock is held but the swap itself.
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Makes `model` the current model and returns the previous one.
    pub fn replace(&self, model: M) -> Arc<M> {
        let _w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        self.swap(Arc::new(model))
    }

    fn swap(&self, next: Arc<M>) -> Arc<M> {
        let mut cur = self.current.write().unwrap_or_else(|e| e.into_inner());
        std::mem::replace(&mut *cur, next)
    }

    /// Applies `change` to a copy of the current model and swaps the copy
    /// in; on an error nothing changes.
    pub fn modify(&self, change: impl FnOnce(&mut M) -> Result<()>) -> Result<()> {
        let _w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = (*self.snapshot()).clone();
        change(&mut next)?;
        self.swap(Arc::new(next));
        Ok(())
    }

    /// [`Module::update`] as one swap.
    pub fn update(&self, params: &Params, strict: bool) -> Result<()> {
        self.modify(|m| m.update(params, strict))
    }
}
