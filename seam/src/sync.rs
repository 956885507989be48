//! Locking that survives a panic elsewhere.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking it over from a holder that panicked. Every lock in
/// the host guards data that stays consistent between statements (lists,
/// maps, flags, an append-only file), so one failed call must not poison the
/// host for every call after it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
