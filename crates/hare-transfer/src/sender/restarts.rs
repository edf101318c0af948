//! The files waiting for the receiver to confirm a restart (`file-restart`): the file task
//! that asked waits here and the control reader fires it. Its own module so that the control
//! reader and the retry logic do not import each other.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

/// The files waiting for the receiver's `file-restart`, by index: the control reader fires
/// them.
#[derive(Clone, Default)]
pub(super) struct Restarts(Arc<Mutex<HashMap<u32, oneshot::Sender<()>>>>);

impl Restarts {
    fn lock(&self) -> MutexGuard<'_, HashMap<u32, oneshot::Sender<()>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait for the restart of `index` (registered before the retry is asked for).
    pub(super) fn expect(&self, index: u32) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.lock().insert(index, tx);
        rx
    }

    /// The receiver restarted `index`; false when no file waited for it.
    pub(super) fn fire(&self, index: u32) -> bool {
        self.lock()
            .remove(&index)
            .is_some_and(|tx| tx.send(()).is_ok())
    }
}
