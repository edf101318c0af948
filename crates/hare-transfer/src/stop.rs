//! Stopping a run from outside (Ctrl-C, SIGTERM or SIGHUP in the binaries, a test's
//! deadline), with what stopped it.

use tokio::sync::watch;

/// What a plain [`StopTrigger::stop`] is reported as.
pub const DEFAULT_STOP_REASON: &str = "Ctrl-C";

/// The side that asks a run to stop.
#[derive(Debug, Clone)]
pub struct StopTrigger(watch::Sender<Option<&'static str>>);

/// The side a run watches.
#[derive(Debug, Clone)]
pub struct Stop(watch::Receiver<Option<&'static str>>);

/// A connected trigger and watcher.
pub fn stop_pair() -> (StopTrigger, Stop) {
    let (tx, rx) = watch::channel(None);
    (StopTrigger(tx), Stop(rx))
}

impl StopTrigger {
    /// Ask the run to stop (idempotent), reported as [`DEFAULT_STOP_REASON`].
    pub fn stop(&self) {
        self.stop_because(DEFAULT_STOP_REASON);
    }

    /// True once a stop was asked for (by any trigger of the pair).
    pub fn is_triggered(&self) -> bool {
        self.0.borrow().is_some()
    }

    /// Ask the run to stop because of `reason` (`"SIGTERM"`); the first reason is kept.
    pub fn stop_because(&self, reason: &'static str) {
        self.0.send_if_modified(|r| {
            if r.is_none() {
                *r = Some(reason);
                true
            } else {
                false
            }
        });
    }
}

impl Stop {
    /// A watcher that never fires.
    pub fn never() -> Self {
        let (tx, rx) = watch::channel(None);
        // Keep the sender alive forever so `stopped` stays pending instead of erroring.
        std::mem::forget(tx);
        Self(rx)
    }

    /// True once a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        self.0.borrow().is_some()
    }

    /// What stopped the run (`"Ctrl-C"`, `"SIGTERM"`), once it was stopped.
    pub fn reason(&self) -> Option<&'static str> {
        *self.0.borrow()
    }

    /// Wait until a stop is asked for (never returns if the trigger is dropped unused).
    pub async fn stopped(&mut self) {
        loop {
            if self.0.borrow_and_update().is_some() {
                return;
            }
            if self.0.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_reason_is_kept() {
        let (t, s) = stop_pair();
        assert_eq!(s.reason(), None);
        t.stop_because("SIGTERM");
        t.stop();
        assert!(s.is_stopped());
        assert_eq!(s.reason(), Some("SIGTERM"));
    }
}
