//! Stopping a run from outside (Ctrl-C in the binaries, a test's deadline).

use tokio::sync::watch;

/// The side that asks a run to stop.
#[derive(Debug, Clone)]
pub struct StopTrigger(watch::Sender<bool>);

/// The side a run watches.
#[derive(Debug, Clone)]
pub struct Stop(watch::Receiver<bool>);

/// A connected trigger and watcher.
pub fn stop_pair() -> (StopTrigger, Stop) {
    let (tx, rx) = watch::channel(false);
    (StopTrigger(tx), Stop(rx))
}

impl StopTrigger {
    /// Ask the run to stop (idempotent).
    pub fn stop(&self) {
        let _ = self.0.send(true);
    }
}

impl Stop {
    /// A watcher that never fires.
    pub fn never() -> Self {
        let (tx, rx) = watch::channel(false);
        // Keep the sender alive forever so `stopped` stays pending instead of erroring.
        std::mem::forget(tx);
        Self(rx)
    }

    /// True once a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        *self.0.borrow()
    }

    /// Wait until a stop is asked for (never returns if the trigger is dropped unused).
    pub async fn stopped(&mut self) {
        loop {
            if *self.0.borrow_and_update() {
                return;
            }
            if self.0.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}
