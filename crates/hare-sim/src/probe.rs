//! The sender's part of a [`Sample`]: what the report reads from the sending connection and
//! its controller at one instant.

use hare_cc::observer::Observer;
use hare_report::Phase;
use quinn_proto::Connection;

use crate::report::{self, Sample};
use crate::tap::{finite_ssthresh, reported_window, TapHandle};
use hare_cc_records::phase_record;

/// Where the sender's state is read from.
#[derive(Clone)]
pub(crate) struct Probe {
    pub tap: TapHandle,
    /// hare-cc's observer of the sender's controller (`None` for quinn's built-ins).
    pub observer: Option<Observer>,
    /// The sender is the unpaced one (its `window()` is a send gate).
    pub unpaced: bool,
}

impl Probe {
    /// The sample at `now_ns` of everything but the receiver's byte count (left 0).
    pub fn sender(&self, conn: &Connection, fc_limited: u64, now_ns: u64) -> Sample {
        let (in_flight, mss) = {
            let t = self.tap.lock();
            (t.in_flight, t.mss.max(1))
        };
        let stats = conn.stats();
        let cc = conn.congestion_state();
        let cwnd_bytes = reported_window(cc, self.unpaced);
        let ssthresh_bytes = finite_ssthresh(cc.metrics().ssthresh);
        let phase = match &self.observer {
            Some(obs) => obs
                .latest()
                .and_then(|(_, snap)| snap.phase.and_then(phase_record)),
            // quinn's built-ins: slow start while cwnd < ssthresh (infinite at first).
            None => Some(match ssthresh_bytes {
                Some(s) if cwnd_bytes >= s => Phase::CongestionAvoidance,
                _ => Phase::SlowStart,
            }),
        };
        Sample {
            now_ns,
            bytes: 0,
            lost: stats.path.lost_packets,
            sent: stats.path.sent_packets,
            fc_limited,
            cwnd_bytes,
            mss,
            ssthresh_bytes,
            in_flight,
            srtt_ms: report::ms(conn.rtt()),
            min_rtt_ms: report::ms(stats.path.min_rtt),
            phase,
        }
    }
}
