//! The end of a run: the last intervals, the summary, the close, and the file reports.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use hare_report::{Event, EventKind, Run, Summary};
use quinn::VarInt;

use crate::cpu::CpuClock;
use crate::error::Result;
use crate::intervals::Remote;
use crate::protocol::{close, feature, Job, LinkResult};
use crate::sendfiles::Source;

use super::opener::{lock, Opener};
use super::recorder::Recorder;
use super::run_loop::State;
use super::FileReport;
use crate::iperf_extra::IperfContext;

/// Fold the last ticks into the final lines, note what a timed job discarded and print the
/// summary. Returns the finished run.
pub(super) fn summarise(
    mut rec: Recorder,
    st: &mut State,
    job: &Job,
    sources: &[Source],
    t0: Instant,
    cpu: &CpuClock,
    written: &AtomicU64,
) -> Result<(Run, Option<crate::qlog::ConnectionQlog>)> {
    if let Some(m) = rec.log.printer().multi() {
        let _ = m.clear();
    }
    let sample = rec.sample();
    let end_s = t0.elapsed().as_secs_f64();
    // Ticks without a receiver interval (the job ended first) fold into the last lines, so
    // that the intervals' bytes and losses add up to the summary's. An interrupted file job
    // ends at what the receiver said it kept.
    let end = match (&st.done, st.kept) {
        (Some(d), _) => Some(Remote {
            start_s: 0.0,
            end_s: d.seconds,
            bytes: d.bytes,
            streams: d.streams.clone(),
        }),
        (None, Some(kept)) => Some(Remote {
            start_s: 0.0,
            end_s,
            bytes: kept.max(st.lines.printed()),
            streams: Vec::new(),
        }),
        (None, None) => None,
    };
    let total = end.as_ref().map_or(st.lines.printed(), |e| e.bytes);
    for line in st.lines.finish(sample, end, end_s) {
        rec.log.line(line);
    }
    if let Some(message) = st.closing_note.take() {
        rec.log.event(hare_report::Event {
            t_s: end_s,
            kind: hare_report::EventKind::Note { message },
        });
    }
    if let Some(d) = &st.done {
        rec.log.stream_totals(d.streams.clone());
    }
    // Only a run that reached its time discarded anything on purpose; a failed one says why.
    if let (
        Job::Bulk {
            seconds: Some(s), ..
        },
        None,
    ) = (job, &st.failure)
    {
        let discarded = written.load(Ordering::Relaxed).saturating_sub(total);
        if discarded > 0 {
            rec.log.event(Event {
                t_s: end_s,
                kind: EventKind::Note {
                    message: format!(
                        // Exact bytes: the other end says the same number.
                        "time is up at {s} s: {discarded} bytes written, not delivered, discarded"
                    ),
                },
            });
        }
    }
    if let Some(e) = &st.failure {
        rec.log.event(Event {
            t_s: end_s,
            kind: EventKind::Error {
                message: e.to_string(),
            },
        });
    }
    let (sent, lost, srtt, min_rtt) = rec.probe.totals();
    // Every file needs its own verdict: the reports also hold links and names left out.
    let judged: std::collections::HashSet<&str> =
        st.reports.iter().map(|r| r.name.as_str()).collect();
    let files_failed = st.reports.iter().any(|r| !r.ok)
        || sources
            .iter()
            .any(|s| !judged.contains(s.entry.name.as_str()));
    // A file job stopped by the user is incomplete; a bulk job stopped by the user is a
    // normal end (nuttcp-style).
    let stopped_files = st.interrupted && !sources.is_empty();
    let completed = st.failure.is_none() && st.done.is_some() && !stopped_files && !files_failed;
    let max_cwnd = rec.probe.max_cwnd();
    let run = rec.log.finish(Summary {
        bytes: total,
        seconds: end_s,
        sent_packets: sent,
        lost_packets: lost,
        srtt_ms: Some(srtt),
        min_rtt_ms: Some(min_rtt),
        cpu_sender_pct: cpu.percent(),
        cpu_receiver_pct: st.done.as_ref().and_then(|d| d.cpu_pct),
        slow_start_exit: rec.first_exit,
        max_cwnd_segments: Some(max_cwnd),
        valid: true,
        invalid_reasons: Vec::new(),
        completed,
    })?;
    Ok((run, rec.qlog))
}

/// The source address the kernel would use towards `remote` when `bound` is a wildcard
/// address: a UDP socket of the same family connected to it (connecting a UDP socket sends
/// nothing; it only runs the route lookup), or `None` if that fails or `bound` is specific.
fn route_source(
    bound: std::net::SocketAddr,
    remote: std::net::SocketAddr,
) -> Option<std::net::IpAddr> {
    if !bound.ip().is_unspecified() {
        return None;
    }
    let any: std::net::SocketAddr = match remote {
        std::net::SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        std::net::SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let probe = std::net::UdpSocket::bind(any).ok()?;
    probe.connect(remote).ok()?;
    Some(probe.local_addr().ok()?.ip())
}

/// What the iperf3-shaped document needs beyond the run: addresses, the test asked for, and
/// this process's CPU split into user and system time.
pub(super) fn iperf_context(
    opener: &Opener,
    endpoint: Option<&quinn::Endpoint>,
    remote: std::net::SocketAddr,
    job: &Job,
    streams: u16,
    cpu: &CpuClock,
) -> IperfContext {
    let local = match (opener, endpoint) {
        (Opener::Quic(c), Some(e)) => e.local_addr().ok().map(|mut a| {
            // quinn knows the local IP of server-side connections only; a client bound to the
            // wildcard address sends from the source the kernel's route to the peer picks.
            if let Some(ip) = c.local_ip().or_else(|| route_source(a, remote)) {
                a.set_ip(ip);
            }
            a
        }),
        _ => None,
    };
    let split = cpu.split_percent();
    IperfContext {
        local,
        remote: Some(remote),
        cpu_user_pct: split.map(|s| s.0),
        cpu_system_pct: split.map(|s| s.1),
        ..IperfContext::of_job(job, streams)
    }
}

/// Close the connection: code 0 (done) unless the user interrupted a file job.
pub(super) fn close_connection(opener: &Opener, interrupted_files: bool) {
    match opener {
        Opener::Quic(c) => {
            let code = if interrupted_files {
                close::INTERRUPTED
            } else {
                close::DONE
            };
            c.close(VarInt::from_u32(code), b"");
        }
        Opener::Tcp { sockets, .. } => {
            for (_, s) in lock(sockets).iter() {
                let _ = socket2::SockRef::from(&*s.stream).shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

/// Files whose names cannot travel were left out of the job: each is a failed file with its
/// reason, so the run does not count as complete.
pub(super) fn add_refused(reports: &mut Vec<FileReport>, refused: Vec<(String, String)>) {
    reports.extend(refused.into_iter().map(|(name, reason)| FileReport {
        name,
        ok: false,
        reason: Some(reason),
        resumed_from: 0,
        retries: 0,
        skipped: None,
        grew_to: None,
    }));
}

/// The report on each link of the job, from the receiver's welcome. A receiver that does not
/// take links (an older hare-recv ignores them) makes none: said once, and each is failed.
pub(super) fn link_reports(
    job: &Job,
    results: Vec<LinkResult>,
    features: &[String],
    software: &str,
) -> Vec<FileReport> {
    let Job::Files { links, .. } = job else {
        return Vec::new();
    };
    if links.is_empty() {
        return Vec::new();
    }
    let report = |name: &str, reason: Option<String>| FileReport {
        name: name.to_owned(),
        ok: reason.is_none(),
        reason,
        resumed_from: 0,
        retries: 0,
        skipped: None,
        grew_to: None,
    };
    if !features.iter().any(|f| f == feature::LINKS) {
        eprintln!(
            "hare-send: warning: the receiver ({}) does not take symbolic links: {} link(s) not made",
            crate::peer_log::clean(software, 100),
            links.len()
        );
        let why = || Some("link not made: the receiver does not take symbolic links".to_owned());
        return links.iter().map(|k| report(&k.name, why())).collect();
    }
    let mut by_index: std::collections::HashMap<u32, LinkResult> =
        results.into_iter().map(|r| (r.index, r)).collect();
    links
        .iter()
        .enumerate()
        .map(|(i, k)| match by_index.remove(&(i as u32)) {
            Some(r) => FileReport {
                skipped: r.skip,
                ..report(&k.name, r.reason.map(|r| format!("link: {r}")))
            },
            None => report(&k.name, Some("no verdict from the receiver".into())),
        })
        .collect()
}

/// The per-file reports, with a failed entry for every file that got no verdict.
pub(super) fn file_reports(
    mut reports: Vec<FileReport>,
    sources: &[Source],
    interrupted: bool,
) -> Vec<FileReport> {
    // A set of the names reported: a scan of the reports per source is quadratic, and with
    // 5,000 small files it took 8% of the job's CPU.
    let reported: std::collections::HashSet<String> =
        reports.iter().map(|r| r.name.clone()).collect();
    for s in sources {
        if !reported.contains(&s.entry.name) {
            reports.push(FileReport {
                name: s.entry.name.clone(),
                ok: false,
                reason: Some(if interrupted {
                    "interrupted".into()
                } else {
                    "no verdict".into()
                }),
                resumed_from: 0,
                retries: 0,
                skipped: None,
                grew_to: None,
            });
        }
    }
    reports
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::LinkEntry;

    fn job_with_links() -> Job {
        let link = |n: &str| LinkEntry {
            name: n.into(),
            target: "t".into(),
            mtime_ns: None,
        };
        Job::Files {
            files: Vec::new(),
            resume: false,
            force: false,
            dirs: Vec::new(),
            links: vec![link("a"), link("b"), link("c")],
            skip: None,
            dest: None,
        }
    }

    #[test]
    fn links_get_the_receivers_verdicts_or_fail_when_it_takes_none() {
        let results = vec![
            LinkResult {
                index: 0,
                reason: None,
                skip: None,
            },
            LinkResult {
                index: 1,
                reason: Some("exists".into()),
                skip: None,
            },
            LinkResult {
                index: 2,
                reason: None,
                skip: Some("up to date".into()),
            },
        ];
        let r = link_reports(&job_with_links(), results, &[feature::LINKS.into()], "x");
        assert!(r[0].ok && r[0].name == "a");
        assert_eq!(r[1].reason.as_deref(), Some("link: exists"));
        assert!(r[2].ok && r[2].skipped.as_deref() == Some("up to date"));
        // An older receiver ignores the links and says nothing of them.
        let r = link_reports(&job_with_links(), Vec::new(), &[], "hare-recv 0.0.9");
        assert!(r.iter().all(|f| !f.ok), "{r:?}");
        assert!(r.iter().all(|f| f
            .reason
            .as_deref()
            .is_some_and(|t| t.contains("does not take symbolic links"))));
    }
}
