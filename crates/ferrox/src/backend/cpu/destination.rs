//! In-place outputs: a caller lends a kernel the bytes its result should
//! land in, so that the result is not computed into a fresh buffer and
//! then copied there.
//!
//! The fused engine lends each output chunk to the step that computes it
//! ([`lend`]); the kernel's [`out_storage`] call takes the loan
//! ([`take`]) when the sizes match and the bytes are aligned, and the
//! engine skips the copy when the step's result is the lent storage
//! ([`Storage::is_lent_at`]). Kernels need no change: one that allocates
//! its output through `out_storage` writes in place, any other result is
//! copied as before.
//!
//! The loan lives in a thread-local slot, set only for the duration of one
//! `eval_cpu` call on the lending thread. A kernel that runs rayon tasks
//! may, while it waits, execute another chunk's work on this thread; that
//! work lends its own chunks and restores the slot when it returns
//! (loans nest like the calls), so whoever takes a loan gets bytes that
//! outlive its call. A kernel that takes the loan for a scratch buffer
//! instead of its result is still correct: its result is copied over the
//! scratch.
//!
//! [`out_storage`]: crate::backend::cpu::elementwise::out_storage
//! [`Storage::is_lent_at`]: crate::graph::storage::Storage::is_lent_at

use crate::graph::storage::{EXTERNAL_ALIGN, Storage};
use std::cell::Cell;

/// A loan: the start and length of the lent bytes.
type Loan = Option<(*mut u8, usize)>;

thread_local! {
    static LOAN: Cell<Loan> = const { Cell::new(None) };
}

/// Runs `f` with `dst` lent to the first `out_storage` call of exactly
/// `dst.len()` bytes on this thread. The bytes must not be read through
/// `dst` while a storage taken from the loan is alive: the caller keeps
/// every result of `f` that may hold it until it has checked
/// `is_lent_at`, and drops them before using `dst` again.
pub(crate) fn lend<R>(dst: &mut [u8], f: impl FnOnce() -> R) -> R {
    let loan = (dst.as_mut_ptr(), dst.len());
    let outer = LOAN.with(|slot| slot.replace(Some(loan)));
    // Restored even if `f` unwinds, so a stale loan never outlives `dst`.
    struct Restore(Loan);
    impl Drop for Restore {
        fn drop(&mut self) {
            LOAN.with(|slot| slot.set(self.0));
        }
    }
    let _restore = Restore(outer);
    f()
}

/// The lent bytes as a storage, if a loan of exactly `len` bytes is open
/// on this thread; the loan is used up. Lent bytes that are not aligned
/// for every element type are not taken (the output is then allocated).
pub(crate) fn take(len: usize) -> Option<Storage> {
    let (ptr, lent_len) = LOAN.with(Cell::get)?;
    if lent_len != len || len == 0 || (ptr as usize) % EXTERNAL_ALIGN != 0 {
        return None;
    }
    LOAN.with(|slot| slot.set(None));
    // SAFETY: `lend` holds `&mut` to these `len` initialised bytes for the
    // whole of the call that reaches here, so nothing else touches them,
    // and its caller drops every storage taken from the loan before it
    // uses the bytes again (the contract of `lend`); the pointer is
    // aligned to EXTERNAL_ALIGN (checked above). The loan was cleared, so
    // no second storage aliases the bytes.
    Some(unsafe { Storage::lent(ptr, len) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loan_is_taken_once_at_its_size_and_restored_after_nesting() -> crate::Result<()> {
        let (mut outer, mut inner) = (Storage::new(32, true)?, Storage::new(16, true)?);
        let outer_bytes = outer.as_mut_slice::<u8>();
        let outer_ptr = outer_bytes.as_ptr();
        lend(outer_bytes, || {
            assert!(take(16).is_none(), "wrong size");
            lend(inner.as_mut_slice::<u8>(), || {
                let s = take(16).expect("the inner loan");
                assert!(take(16).is_none(), "used up");
                drop(s);
            });
            let s = take(32).expect("the outer loan is back");
            assert!(s.is_lent_at(outer_ptr));
        });
        assert!(take(32).is_none(), "no loan outside lend");
        Ok(())
    }
}
