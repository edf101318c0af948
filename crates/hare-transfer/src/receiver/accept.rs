//! Deciding on a Hello: credentials first (cheap, before any slot or disk is touched), then
//! the job against the limits and the target directory.

use std::collections::HashMap;

use crate::identity::Fingerprint;
use crate::protocol::{FilePlan, Job, ToReceiver, MAX_STREAMS, PROTOCOL_VERSION, REVERSE_VERSION};
use crate::recvfile::{plan_file, FinalNames, Planned};
use crate::senders::Authorisation;

use super::RecvOptions;

/// An accepted job.
pub(super) enum Accepted {
    Bulk {
        bytes: Option<u64>,
        seconds: Option<f64>,
        streams: u16,
    },
    Files {
        planned: HashMap<u32, Planned>,
        count: usize,
    },
}

/// The checks that come before anything else: a Hello, of this version, from an authorised
/// sender (an allowed certificate `peer` or the token). `Err` is the reason to refuse.
pub(super) fn check_credentials(
    opts: &RecvOptions,
    peer: Option<Fingerprint>,
    hello: &ToReceiver,
) -> Result<(), String> {
    let ToReceiver::Hello { version, token, .. } = hello else {
        return Err("the first message must be a hello".into());
    };
    if *version != PROTOCOL_VERSION && *version != REVERSE_VERSION {
        return Err(format!(
            "protocol version {version} not supported (this receiver speaks {PROTOCOL_VERSION} \
             and {REVERSE_VERSION})"
        ));
    }
    // Kernel TCP has no TLS, hence no sender certificate: there only the token counts.
    Authorisation {
        allow: match opts.tcp {
            Some(_) => Vec::new(),
            None => opts.allow.clone(),
        },
        token: opts.token.clone(),
    }
    .check(peer, token.as_deref())
}

/// Check the job of a Hello that passed [`check_credentials`] against the limits and the
/// directory, and plan its files: the accepted job, the plans for the Welcome and the granted
/// connection window. `Err` is the reason to refuse.
pub(super) fn plan_job(
    opts: &RecvOptions,
    hello: &ToReceiver,
    names: &FinalNames,
) -> Result<(Accepted, Vec<FilePlan>, u64), String> {
    let ToReceiver::Hello {
        job,
        window,
        reverse,
        ..
    } = hello
    else {
        return Err("the first message must be a hello".into());
    };
    if reverse.is_some() {
        super::reverse::check(job)?;
    }
    let l = &opts.limits;
    let grant = (*window).clamp(crate::quic_config::MIN_WINDOW, l.max_window);
    match job {
        Job::Bulk {
            bytes,
            seconds,
            streams,
        } => {
            if *streams == 0 || *streams > MAX_STREAMS {
                return Err(format!("streams must be 1 to {MAX_STREAMS}"));
            }
            match (bytes, seconds) {
                (Some(b), None) if *b <= l.max_job_bytes => {}
                (Some(b), None) => {
                    return Err(format!(
                        "{b} bytes exceeds this receiver's limit of {}",
                        l.max_job_bytes
                    ))
                }
                (None, Some(s)) if s.is_finite() && *s > 0.0 && *s <= l.max_seconds => {}
                (None, Some(s)) => {
                    return Err(format!(
                        "duration {s} s outside this receiver's limit of (0, {}] s",
                        l.max_seconds
                    ))
                }
                _ => return Err("a bulk job needs exactly one of bytes or seconds".into()),
            }
            Ok((
                Accepted::Bulk {
                    bytes: *bytes,
                    seconds: *seconds,
                    streams: *streams,
                },
                Vec::new(),
                grant,
            ))
        }
        Job::Files {
            files,
            resume,
            force,
            dirs,
        } => {
            let Some(dir) = &opts.dir else {
                return Err("this receiver takes no files (start it with --dir DIR)".into());
            };
            if files.len() + dirs.len() > l.max_files {
                return Err(format!(
                    "{} files and directories exceed this receiver's limit of {}",
                    files.len() + dirs.len(),
                    l.max_files
                ));
            }
            let total = files.iter().try_fold(0u64, |a, f| a.checked_add(f.size));
            match total {
                Some(t) if t <= l.max_job_bytes => {}
                _ => {
                    return Err(format!(
                        "total size exceeds this receiver's limit of {} bytes",
                        l.max_job_bytes
                    ))
                }
            }
            let mut seen = std::collections::HashSet::new();
            let mut planned = HashMap::new();
            let mut plans = Vec::new();
            let mut problems = Vec::new();
            for (i, f) in files.iter().enumerate() {
                if !seen.insert(f.name.as_str()) {
                    problems.push(format!("{}: named twice", f.name));
                    continue;
                }
                match plan_file(dir, f, *resume, *force, names) {
                    Ok(p) => {
                        plans.push(p.plan(i as u32));
                        planned.insert(i as u32, p);
                    }
                    Err(r) => problems.push(format!("{}: {r}", f.name)),
                }
            }
            for d in dirs {
                if let Err(r) = crate::names::check_name(d) {
                    problems.push(format!("{d}: {r}"));
                }
            }
            if !problems.is_empty() {
                let more = problems.len().saturating_sub(5);
                let mut reason = problems.into_iter().take(5).collect::<Vec<_>>().join("; ");
                if more > 0 {
                    reason.push_str(&format!("; and {more} more"));
                }
                return Err(reason);
            }
            // Only an accepted job touches the directory tree.
            for d in dirs {
                make_dir(dir, d).map_err(|r| format!("{d}: {r}"))?;
            }
            let need: u64 = planned.values().map(Planned::remaining).sum();
            match crate::space::available_bytes(dir) {
                Ok(avail) if avail >= need => {}
                Ok(avail) => {
                    return Err(format!(
                        "not enough free space: {need} bytes needed, {avail} available"
                    ))
                }
                Err(e) => return Err(e.to_string()),
            }
            Ok((
                Accepted::Files {
                    count: files.len(),
                    planned,
                },
                plans,
                grant,
            ))
        }
    }
}

/// Create the empty directory `name` under `dir` (and its parents), never through a symbolic
/// link ([`crate::names::safe_create_parents`]); one that exists is fine.
fn make_dir(dir: &std::path::Path, name: &str) -> Result<(), String> {
    let path = crate::names::final_path(dir, name)?;
    crate::names::safe_create_parents(dir, name).map_err(|e| e.to_string())?;
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_dir() => Ok(()),
        Ok(_) => Err("exists and is not a directory".into()),
        Err(_) => std::fs::create_dir(&path).map_err(|e| format!("cannot create: {e}")),
    }
}
