//! The job's control channel moving to a joined connection (`take-over`): the sender lost
//! the job's first connection and continues on the stream one of the others joined on.

use hare_report::{Event, EventKind};
use tokio::sync::mpsc;

use super::{Ctl, Out, Running};
use crate::error::TransferError;
use crate::protocol::ToSender;
use crate::receiver::sessions::TakeOver;
use crate::report::RunLog;

/// The next stream handed over, when the job takes any (never, otherwise).
pub(super) async fn next_take_over(rx: &mut Option<mpsc::Receiver<TakeOver>>) -> Option<TakeOver> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

impl Running {
    /// Continue the control channel on `t`: read it from now on, and say again every
    /// verdict said so far and every restart the sender has not answered with data (what
    /// was in flight on the lost connection may never have arrived; the sender takes each
    /// once). The new control reader.
    pub(super) async fn take_over(
        &mut self,
        t: TakeOver,
        out: &mut Out,
        log: &mut RunLog,
    ) -> Result<mpsc::Receiver<Ctl>, TransferError> {
        let (r, w) = t.control;
        let was_lost = out.lost.as_ref().map(|(_, why)| why.to_string());
        out.moved(w);
        self.took_over = true;
        self.srtt = Some(t.conn);
        let why = was_lost.map_or_else(String::new, |w| format!(" ({w})"));
        log.event(Event {
            t_s: self.t0.elapsed().as_secs_f64(),
            kind: EventKind::Note {
                message: format!(
                    "connection 0 was lost{why}: the job's control channel continues on \
                     connection {}",
                    t.number
                ),
            },
        });
        let ctl_rx = super::super::spawn_control_reader(r);
        for m in self.said.clone() {
            out.send(&m).await?;
        }
        let restarts: Vec<u32> = self
            .planned
            .keys()
            .filter(|i| self.again.count.contains_key(i))
            .copied()
            .collect();
        for index in restarts {
            out.send(&ToSender::FileRestart { index }).await?;
        }
        Ok(ctl_rx)
    }
}
