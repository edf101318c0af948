//! Planning a job: the options checked and turned into the job the hello will carry, before
//! any packet is sent.

use std::time::Duration;

use crate::error::{Result, TransferError};
use crate::protocol::{Job, SkipRule, MAX_CONNECTIONS, MAX_STREAMS, MIN_CHUNK};
use crate::quic_config::Link;
use crate::sendfiles::{gather, Source};

use super::{SendJob, SendOptions};

/// Longest `-T`: one day, as iperf3's `-t` (its `MAX_TIME`), far beyond any benchmark and
/// small enough that every deadline derived from it is representable.
pub const MAX_SECONDS: f64 = 86_400.0;

/// A checked job.
pub(super) struct Plan {
    /// Bulk streams, or files in flight at once.
    pub(super) streams: u16,
    /// `-w` and `--mtu` with `streams` filled in.
    pub(super) link: Link,
    /// The files to send, in job order (empty for bulk).
    pub(super) sources: Vec<Source>,
    /// Files left out of the job because their names cannot travel: (name, reason).
    pub(super) refused: Vec<(String, String)>,
    /// What the hello asks for.
    pub(super) job: Job,
}

/// Check `opts` and gather the files: every error here is the user's, found before connecting.
pub(super) fn plan(opts: &SendOptions) -> Result<Plan> {
    let streams = match &opts.job {
        SendJob::Bulk { streams, .. } => *streams,
        SendJob::Files { parallel, .. } => *parallel,
    };
    if streams == 0 || streams > MAX_STREAMS {
        return Err(TransferError::Usage(format!(
            "-P {streams}: must be 1 to {MAX_STREAMS}"
        )));
    }
    check_connections(opts)?;
    let link = Link {
        streams,
        ..opts.link
    };
    link.validate()?;
    opts.liveness.validate()?;
    if opts.interval < Duration::from_millis(100) {
        return Err(TransferError::Usage("-i must be at least 0.1 s".into()));
    }
    let (sources, refused, job) = match &opts.job {
        SendJob::Bulk {
            bytes,
            seconds,
            streams,
        } => (
            Vec::new(),
            Vec::new(),
            // With several connections each carries `-P` streams.
            bulk_job(*bytes, *seconds, streams * opts.connections.max(1))?,
        ),
        SendJob::Files {
            paths,
            resume,
            force,
            ..
        } => {
            let crate::sendfiles::Gathered {
                sources,
                warnings,
                refused,
                empty_dirs: dirs,
                links,
            } = gather(paths, opts.keep)?;
            for w in warnings {
                eprintln!("hare-send: warning: {w}");
            }
            if sources.is_empty() && dirs.is_empty() && links.is_empty() {
                let why: Vec<String> = refused.iter().map(|(n, r)| format!("{n}: {r}")).collect();
                return Err(TransferError::Usage(if why.is_empty() {
                    "no files to send".into()
                } else {
                    format!("no file can be sent: {}", why.join("; "))
                }));
            }
            let mut sources = sources;
            if opts.skip == Some(SkipRule::Checksum) {
                digest_all(&mut sources)?;
            }
            let files = sources.iter().map(|s| s.entry.clone()).collect();
            let job = Job::Files {
                files,
                resume: *resume,
                force: *force,
                dirs,
                links,
                skip: if *force { None } else { opts.skip },
                dest: opts.dest.clone(),
            };
            (sources, refused, job)
        }
    };
    Ok(Plan {
        streams,
        link,
        sources,
        refused,
        job,
    })
}

/// `-C` and `--chunk`: several connections only over QUIC, for a job this side sends, and
/// at most [`MAX_STREAMS`] bulk streams over all of them.
fn check_connections(opts: &SendOptions) -> Result<()> {
    let n = opts.connections;
    if n == 0 || n > MAX_CONNECTIONS {
        return Err(TransferError::Usage(format!(
            "-C {n}: must be 1 to {MAX_CONNECTIONS}"
        )));
    }
    if n == 1 {
        return Ok(());
    }
    if opts.tcp.is_some() {
        return Err(TransferError::Usage(
            "-C is for QUIC: --tcp already opens one kernel TCP connection per stream (use -P)"
                .into(),
        ));
    }
    if opts.reverse {
        return Err(TransferError::Usage(
            "-C carries jobs this side sends; it does not work with -r".into(),
        ));
    }
    if let SendJob::Bulk { streams, .. } = &opts.job {
        if u32::from(*streams) * u32::from(n) > u32::from(MAX_STREAMS) {
            return Err(TransferError::Usage(format!(
                "-P {streams} x -C {n}: at most {MAX_STREAMS} bulk streams in all"
            )));
        }
    }
    if opts.chunk < MIN_CHUNK {
        return Err(TransferError::Usage(format!(
            "--chunk {}: must be at least {MIN_CHUNK} bytes",
            opts.chunk
        )));
    }
    Ok(())
}

/// `--checksum`: the BLAKE3 of every file, sent in the hello for the receiver to compare
/// (rsync's `-c` likewise reads every file first).
fn digest_all(sources: &mut [Source]) -> Result<()> {
    for s in sources.iter_mut() {
        let (h, n) = crate::sendfiles::prefix_hash(&s.path, s.entry.size)
            .map_err(|e| TransferError::Usage(format!("--checksum: {e}")))?;
        if n != s.entry.size {
            return Err(TransferError::Usage(format!(
                "--checksum: {} changed while it was read ({n} of {} bytes)",
                s.path.display(),
                s.entry.size
            )));
        }
        s.entry.blake3 = Some(h.finalize().to_hex().to_string());
    }
    Ok(())
}

fn bulk_job(bytes: Option<u64>, seconds: Option<f64>, streams: u16) -> Result<Job> {
    if bytes.is_some() == seconds.is_some() {
        return Err(TransferError::Usage(
            "give exactly one of -n SIZE or -T SECONDS".into(),
        ));
    }
    if let Some(s) = seconds {
        if !(s.is_finite() && s > 0.0 && s <= MAX_SECONDS) {
            return Err(TransferError::Usage(format!(
                "-T {}: must be more than 0 and at most {MAX_SECONDS} seconds",
                short_number(s)
            )));
        }
    }
    Ok(Job::Bulk {
        bytes,
        seconds,
        streams,
    })
}

/// A number as a user would write it: `1e300`, not three hundred digits.
pub(crate) fn short_number(v: f64) -> String {
    if v.is_finite() && v.abs() >= 1e9 {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// The job in a few words, for the first line of the report.
pub(super) fn describe(job: &Job) -> String {
    match job {
        Job::Bulk {
            bytes: Some(b),
            streams,
            ..
        } => format!("bulk {b} bytes over {streams} stream(s)"),
        Job::Bulk {
            seconds, streams, ..
        } => format!("bulk {} s over {streams} stream(s)", seconds.unwrap_or(0.0)),
        Job::Files { files, links, .. } => {
            let total: u64 = files.iter().map(|f| f.size).sum();
            let links = match links.len() {
                0 => String::new(),
                n => format!(", {n} link(s)"),
            };
            format!("{} file(s), {total} bytes{links}", files.len())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_jobs_are_checked() {
        assert!(bulk_job(Some(1), None, 1).is_ok());
        assert!(bulk_job(None, Some(0.5), 1).is_ok());
        assert!(bulk_job(None, Some(MAX_SECONDS), 1).is_ok());
        for s in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e300, MAX_SECONDS + 1.0] {
            assert!(bulk_job(None, Some(s), 1).is_err(), "-T {s}");
        }
        assert!(bulk_job(Some(1), Some(1.0), 1).is_err());
        assert!(bulk_job(None, None, 1).is_err());
    }
}
