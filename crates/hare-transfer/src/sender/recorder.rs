//! The run's record: the report log, the congestion probe and the qlog sidecar, with the
//! first slow-start exit kept for the summary.

use hare_report::{CcEvent, Event, EventKind, SlowStartExit};

use crate::qlog::ConnectionQlog;
use crate::report::RunLog;
use crate::sampler::Sample;

use super::probe::Probe;

/// What the run writes down as it goes.
pub(super) struct Recorder {
    /// Text, JSON lines and the final document.
    pub(super) log: RunLog,
    /// The congestion state of the connection.
    pub(super) probe: Probe,
    /// The qlog's controller sidecar, when asked for.
    pub(super) qlog: Option<ConnectionQlog>,
    /// The first slow-start exit, reported or observed.
    pub(super) first_exit: Option<SlowStartExit>,
}

impl Recorder {
    /// Sample the probe, recording the controller events it collected since the last one.
    pub(super) fn sample(&mut self) -> Sample {
        let (sample, events, raw) = self.probe.sample();
        self.record(events, raw);
        sample
    }

    /// Record the controller events collected so far, before a line said between samples.
    pub(super) fn events_so_far(&mut self) {
        let (events, raw) = self.probe.cc_events();
        self.record(events, raw);
    }

    fn record(&mut self, events: Vec<Event>, raw: Vec<CcEvent>) {
        if let Some(q) = self.qlog.as_mut() {
            q.cc_events(&raw);
        }
        for ev in events {
            if self.first_exit.is_none() {
                self.first_exit = slow_start_exit(&ev);
            }
            self.log.event(ev);
        }
    }
}

/// The slow-start exit an event reports, if it is one.
fn slow_start_exit(ev: &Event) -> Option<SlowStartExit> {
    match &ev.kind {
        EventKind::Cc {
            event: CcEvent::SlowStartExit { cwnd, reason, .. },
        } => Some(SlowStartExit {
            t_s: ev.t_s,
            cwnd_segments: *cwnd,
            reason: *reason,
        }),
        EventKind::SlowStartExitObserved {
            cwnd_segments,
            reason,
        } => Some(SlowStartExit {
            t_s: ev.t_s,
            cwnd_segments: *cwnd_segments,
            reason: *reason,
        }),
        _ => None,
    }
}
