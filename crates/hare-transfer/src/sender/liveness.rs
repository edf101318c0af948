//! Noticing a silent path: a line at every tick while nothing was heard from the receiver,
//! and the words for how the connection ended.

use std::time::{Duration, Instant};

use quinn::ConnectionError;

use crate::protocol::close;
use crate::quic_config::Liveness;

/// Silence this long (with keep-alives going out) is reported: every ACK-eliciting packet we
/// send is answered within an RTT plus the peer's ACK delay, so a quiet second or more past
/// one keep-alive interval means the path or the receiver is not there.
fn threshold(l: &Liveness) -> Duration {
    (l.keep_alive + l.keep_alive / 2).max(Duration::from_secs(1))
}

/// Tracks when the receiver was last heard from (datagrams received on the connection).
#[derive(Debug)]
pub(super) struct Silence {
    liveness: Liveness,
    datagrams: u64,
    heard: Instant,
}

impl Silence {
    /// Start tracking at `now`.
    pub(super) fn new(liveness: Liveness, now: Instant) -> Self {
        Self {
            liveness,
            datagrams: 0,
            heard: now,
        }
    }

    /// Feed the connection's received-datagram count at `now`; returns the line to print
    /// when the receiver has been silent past the threshold.
    pub(super) fn check(&mut self, datagrams: u64, now: Instant) -> Option<String> {
        if datagrams != self.datagrams {
            self.datagrams = datagrams;
            self.heard = now;
            return None;
        }
        let quiet = now.saturating_duration_since(self.heard);
        (quiet >= threshold(&self.liveness)).then(|| {
            format!(
                "path silent: nothing heard from the receiver for {:.1} s (giving up after {} s, --idle-timeout)",
                quiet.as_secs_f64(),
                self.liveness.idle_timeout.as_secs_f64()
            )
        })
    }
}

/// How a QUIC connection ended, in the user's words: a silent path, the receiver's own
/// reason (by close code), or quinn's text.
pub(super) fn describe_close(e: &ConnectionError, liveness: &Liveness) -> String {
    match e {
        ConnectionError::TimedOut => format!(
            "the receiver went silent: nothing heard for {} s (--idle-timeout); the path or the receiver is down",
            liveness.idle_timeout.as_secs_f64()
        ),
        ConnectionError::ApplicationClosed(c) => {
            let reason = String::from_utf8_lossy(&c.reason);
            let what = match c.error_code.into_inner() {
                x if x == u64::from(close::DONE) => "the receiver closed the connection",
                x if x == u64::from(close::REFUSED) => "the receiver refused the job",
                x if x == u64::from(close::INTERRUPTED) => "the receiver was interrupted",
                x if x == u64::from(close::PROTOCOL) => "the receiver reports a protocol error",
                x if x == u64::from(close::BUSY) => "the receiver is busy or shutting down",
                x if x == u64::from(close::TIMEOUT) => "the receiver timed the job out",
                x if x == u64::from(close::ABORTED) => "the receiver aborted the job",
                _ => "the receiver closed the connection",
            };
            if reason.is_empty() {
                what.to_owned()
            } else {
                format!("{what}: {reason}")
            }
        }
        ConnectionError::Reset => "the receiver reset the connection (it restarted?)".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_is_reported_after_one_and_a_half_keep_alives() {
        let l = Liveness::default();
        let t = Instant::now();
        let mut s = Silence::new(l, t);
        assert_eq!(s.check(5, t + Duration::from_secs(1)), None);
        assert_eq!(s.check(5, t + Duration::from_millis(3900)), None);
        let line = s.check(5, t + Duration::from_secs(4));
        assert_eq!(
            line.as_deref(),
            Some("path silent: nothing heard from the receiver for 3.0 s (giving up after 10 s, --idle-timeout)")
        );
        assert_eq!(s.check(6, t + Duration::from_secs(5)), None);
    }

    #[test]
    fn timeouts_and_closes_have_their_own_words() {
        let l = Liveness::default();
        assert!(describe_close(&ConnectionError::TimedOut, &l).contains("went silent"));
        let closed = ConnectionError::ApplicationClosed(quinn::ApplicationClose {
            error_code: quinn::VarInt::from_u32(close::ABORTED),
            reason: bytes::Bytes::from_static(b"disk full"),
        });
        assert_eq!(
            describe_close(&closed, &l),
            "the receiver aborted the job: disk full"
        );
    }
}
