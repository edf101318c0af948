//! Self-validation of an emulator run: was the emulator, not the path model, the bottleneck?
//!
//! A run is INVALID when the 99th percentile of per-packet lateness exceeds 1 ms, when any
//! packet was dropped that the path model did not drop (delay-line overflow, a send the
//! output refused, TUN device drops, UDP receive-buffer errors in the namespaces, per-socket
//! drops of the sockets involved), or when the emulator thread used 95% of a core or more
//! (it was saturated). The verdict goes into the run's report ([`EmulatorRun::apply_to`]) and
//! summaries leave invalid runs out.

use hare_link::{LossModel, PathConfig};
use hare_report::{Event, EventKind, Summary};
use serde::{Deserialize, Serialize};

use crate::emulation_loop::EngineReport;

/// Lateness p99 above this makes a run invalid.
pub const MAX_P99_LATENESS_NS: u64 = 1_000_000;
/// Emulator CPU at or above this share of one core makes a run invalid (it was saturated).
pub const MAX_CPU_PCT: f64 = 95.0;

/// How the emulator was attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Loopback UDP relay (no privileges).
    Relay,
    /// Two network namespaces joined through two TUN devices (root).
    Namespace,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Relay => "relay",
            Mode::Namespace => "namespace",
        })
    }
}

/// Packets lost somewhere the path model did not decide it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnintendedDrop {
    /// Where (e.g. `forward delay-line overflow`, `receiver ns Udp RcvbufErrors`).
    pub source: String,
    /// How many.
    pub count: u64,
}

impl UnintendedDrop {
    /// The engine's own unintended drops in both directions: delay-line overflows, and the
    /// `send` / `receive` errors of its input and output (named by what they are in each
    /// mode: socket or TUN).
    pub fn of_engine(engine: &EngineReport, send: &str, receive: &str) -> Vec<UnintendedDrop> {
        let mut out = Vec::new();
        for (d, what) in [(&engine.forward, "forward"), (&engine.reverse, "reverse")] {
            for (source, count) in [
                ("delay-line overflow", d.ring_overflows),
                (send, d.send_errors),
                (receive, d.recv_errors),
            ] {
                out.push(UnintendedDrop {
                    source: format!("{what} {source}"),
                    count,
                });
            }
        }
        out
    }
}

/// Everything the emulator knows about one run, with its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmulatorRun {
    /// Relay or namespace mode.
    pub mode: Mode,
    /// The emulated path.
    pub path: PathConfig,
    /// The loop's own counters and lateness.
    pub engine: EngineReport,
    /// Unintended drops found (only sources with a non-zero count).
    pub unintended: Vec<UnintendedDrop>,
    /// Facts reported but not judged (e.g. machine-wide counters another user may move).
    pub notes: Vec<String>,
    /// The verdict.
    pub valid: bool,
    /// Why the run is invalid (empty when valid).
    pub invalid_reasons: Vec<String>,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl EmulatorRun {
    /// Judges a run from the loop's report and the unintended drops found.
    pub fn judge(
        mode: Mode,
        path: PathConfig,
        engine: EngineReport,
        unintended: Vec<UnintendedDrop>,
        notes: Vec<String>,
    ) -> EmulatorRun {
        let unintended: Vec<UnintendedDrop> =
            unintended.into_iter().filter(|d| d.count > 0).collect();
        let mut reasons = Vec::new();
        let l = engine.lateness;
        if l.p99_ns > MAX_P99_LATENESS_NS {
            reasons.push(format!(
                "emulator lateness p99 {:.3} ms > {:.3} ms (p50 {:.3} ms, max {:.3} ms over {} packets)",
                ms(l.p99_ns),
                ms(MAX_P99_LATENESS_NS),
                ms(l.p50_ns),
                ms(l.max_ns),
                l.count
            ));
        }
        for d in &unintended {
            reasons.push(format!("unintended drops: {} x {}", d.count, d.source));
        }
        let cpu = engine.cpu_pct();
        // Over a very short run thread start-up dominates the ratio: judge from 0.5 s on.
        if cpu >= MAX_CPU_PCT && engine.wall_ns >= 500_000_000 {
            reasons.push(format!(
                "emulator thread saturated: {cpu:.1}% of a core (>= {MAX_CPU_PCT}%)"
            ));
        }
        EmulatorRun {
            mode,
            path,
            valid: reasons.is_empty(),
            invalid_reasons: reasons,
            engine,
            unintended,
            notes,
        }
    }

    /// Marks a transfer's summary: invalid if the emulator run was, with its reasons added.
    pub fn apply_to(&self, summary: &mut Summary) {
        if !self.valid {
            summary.valid = false;
            summary
                .invalid_reasons
                .extend(self.invalid_reasons.iter().cloned());
        }
    }

    /// One line: verdict, lateness, drops by the model and unintended, CPU.
    pub fn line(&self) -> String {
        let l = self.engine.lateness;
        let f = &self.engine.forward.link;
        let r = &self.engine.reverse.link;
        format!(
            "emulator ({}): {} | lateness p50 {:.3} ms p99 {:.3} ms max {:.3} ms ({} pkts) | \
             model drops fwd {}/{} rev {}/{} | unintended {} | cpu {:.1}%",
            self.mode,
            if self.valid { "VALID" } else { "INVALID" },
            ms(l.p50_ns),
            ms(l.p99_ns),
            ms(l.max_ns),
            l.count,
            f.dropped.total(),
            f.offered_packets,
            r.dropped.total(),
            r.offered_packets,
            self.unintended.iter().map(|d| d.count).sum::<u64>(),
            self.engine.cpu_pct()
        )
    }

    /// Report events: the self-check line as a note, and (when invalid) each reason.
    pub fn events(&self, t_s: f64) -> Vec<Event> {
        let mut out = vec![Event {
            t_s,
            kind: EventKind::Note {
                message: self.line(),
            },
        }];
        for r in &self.invalid_reasons {
            out.push(Event {
                t_s,
                kind: EventKind::Note {
                    message: format!("INVALID: {r}"),
                },
            });
        }
        out
    }
}

/// The path's scheduled changes as report events (loss episodes and blackouts starting and
/// ending), at their link times minus `offset_s` (the transfer's start on the link clock).
pub fn path_events(path: &PathConfig, offset_s: f64) -> Vec<Event> {
    let mut out = Vec::new();
    for (dir, link) in [("forward", &path.forward), ("reverse", &path.reverse)] {
        for m in &link.loss {
            let (from, to, what) = match m {
                LossModel::Episode {
                    from, to, one_in, ..
                } => (*from, *to, format!("{dir} loss episode 1 in {one_in}")),
                LossModel::Blackout { from, to } => (*from, *to, format!("{dir} blackout")),
                _ => continue,
            };
            out.push(Event {
                t_s: from.0 as f64 / 1e9 - offset_s,
                kind: EventKind::Path {
                    what: format!("{what} starts"),
                },
            });
            out.push(Event {
                t_s: to.0 as f64 / 1e9 - offset_s,
                kind: EventKind::Path {
                    what: format!("{what} ends"),
                },
            });
        }
    }
    out.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lateness::LatenessSummary;
    use hare_link::{BitRate, TimeSpan};

    fn path() -> PathConfig {
        PathConfig::symmetric(BitRate(100_000_000), TimeSpan(80_000_000), None)
    }

    #[test]
    fn clean_run_is_valid_and_leaves_summary_alone() {
        let mut e = EngineReport {
            wall_ns: 1_000_000_000,
            cpu_ns: 200_000_000,
            ..Default::default()
        };
        e.lateness = LatenessSummary {
            count: 10,
            p99_ns: 1_000_000,
            ..Default::default()
        };
        let run = EmulatorRun::judge(
            Mode::Relay,
            path(),
            e,
            vec![UnintendedDrop {
                source: "x".into(),
                count: 0,
            }],
            vec![],
        );
        assert!(run.valid, "{:?}", run.invalid_reasons);
        assert!(run.unintended.is_empty());
        let mut s = Summary {
            valid: true,
            ..Default::default()
        };
        run.apply_to(&mut s);
        assert!(s.valid);
        assert!(s.invalid_reasons.is_empty());
    }

    #[test]
    fn late_lossy_or_saturated_runs_are_invalid() {
        let mut e = EngineReport {
            wall_ns: 1_000_000_000,
            cpu_ns: 960_000_000,
            ..Default::default()
        };
        e.lateness.p99_ns = 1_000_001;
        let run = EmulatorRun::judge(
            Mode::Namespace,
            path(),
            e,
            vec![UnintendedDrop {
                source: "forward delay-line overflow".into(),
                count: 3,
            }],
            vec![],
        );
        assert!(!run.valid);
        assert_eq!(run.invalid_reasons.len(), 3);
        assert!(run.invalid_reasons[1].contains("3 x forward delay-line overflow"));
        let mut s = Summary {
            valid: true,
            ..Default::default()
        };
        run.apply_to(&mut s);
        assert!(!s.valid);
        assert_eq!(s.invalid_reasons.len(), 3);
        assert_eq!(run.events(1.0).len(), 4);
    }

    #[test]
    fn path_events_in_time_order() {
        let mut p = path();
        p.forward.loss = vec![
            LossModel::Blackout {
                from: TimeSpan(12_000_000_000),
                to: TimeSpan(15_000_000_000),
            },
            LossModel::Episode {
                from: TimeSpan(5_000_000_000),
                to: TimeSpan(10_000_000_000),
                one_in: 100,
                random: false,
            },
        ];
        let ev = path_events(&p, 1.0);
        let times: Vec<f64> = ev.iter().map(|e| e.t_s).collect();
        assert_eq!(times, vec![4.0, 9.0, 11.0, 14.0]);
    }
}
