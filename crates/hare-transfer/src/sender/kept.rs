//! What the receiver kept of a file job the user interrupted. A file job stops at once on
//! Ctrl-C (its files cannot complete), before the receiver's final count: without asking,
//! the summary could only say the intervals printed so far, nothing at all for a job shorter
//! than one interval. So the sender asks for the receiver's byte count (`progress-request`)
//! and waits for the answer a bounded time, about one round trip; the data keep flowing
//! meanwhile and the receiver keeps all of it for a rerun. A second Ctrl-C leaves at once.

use std::time::Duration;

use tokio::sync::mpsc;

use super::control::Ctl;
use super::opener::Opener;
use super::recorder::Recorder;
use super::run_loop::State;
use crate::protocol::ToReceiver;

/// The longest wait for the answer, whatever the round trip (a receiver that does not
/// answer costs the user this much after Ctrl-C; one that answers, its round trip).
const LONGEST_WAIT: Duration = Duration::from_secs(3);
/// Added to two smoothed round trips for the receiver's own turn (a busy host).
const SLACK: Duration = Duration::from_secs(1);
/// The request's number (one per job).
const SEQ: u64 = 1;

/// Ask the receiver how many payload bytes it has received; `None` when it did not answer
/// in time or the channel is gone. Receiver intervals that arrive meanwhile are printed.
pub(super) async fn ask(
    out: &mpsc::Sender<ToReceiver>,
    ctl_rx: &mut mpsc::Receiver<Ctl>,
    opener: &Opener,
    rec: &mut Recorder,
    st: &mut State,
) -> Option<u64> {
    let srtt = match opener {
        Opener::Quic(c) => c.rtt(),
        Opener::Tcp { .. } => Duration::from_millis(250),
    };
    let wait = (2 * srtt + SLACK).min(LONGEST_WAIT);
    // The request too is bounded: a control writer held up by the peer's flow control
    // must not hold up the user's Ctrl-C.
    let answer = async {
        out.send(ToReceiver::ProgressRequest { seq: SEQ })
            .await
            .ok()?;
        while let Some(m) = ctl_rx.recv().await {
            match m {
                Ctl::Progress(seq, bytes) if seq == SEQ => return Some(bytes),
                Ctl::Interval(index, remote) => {
                    for line in st.lines.received(index, remote) {
                        rec.log.line(line);
                    }
                }
                Ctl::Closed(_) => return None,
                _ => {}
            }
        }
        None
    };
    tokio::time::timeout(wait, answer).await.ok().flatten()
}
