//! Deciding on a Hello: credentials first (cheap, before any slot or disk is touched), then
//! the job against the limits and the target directory.

use std::collections::HashMap;

use crate::identity::Fingerprint;
use crate::protocol::{
    FilePlan, Job, LinkResult, ToReceiver, MAX_STREAMS, PROTOCOL_VERSION, REVERSE_VERSION,
};
use crate::recvfile::{plan_file, Decision, Existing, FinalNames, Planned, Root, Target};
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
        /// The job's links, made at acceptance: one verdict each.
        links: Vec<LinkResult>,
        /// What the job does with files that exist (a file sent again is planned anew).
        existing: Existing,
        /// Where and for whom the files are written.
        target: Target,
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

/// How a file job sent over several QUIC connections cuts its ranges (the hello's striping,
/// when this receiver takes it), for the pieces a resumed file already holds.
fn ranges_of(opts: &RecvOptions, hello: &ToReceiver) -> Option<crate::protocol::Striping> {
    match hello {
        ToReceiver::Hello {
            striping: Some(st),
            reverse: None,
            ..
        } if opts.tcp.is_none() && st.chunk >= crate::protocol::MIN_CHUNK => Some(*st),
        _ => None,
    }
}

/// Check the job of a Hello that passed [`check_credentials`] against the limits and the
/// directory, and plan its files: the accepted job, the plans for the Welcome and the granted
/// connection window. `Err` is the reason to refuse.
pub(super) fn plan_job(
    opts: &RecvOptions,
    hello: &ToReceiver,
    names: &FinalNames,
    whose: &super::ctx::Whose,
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
        reverse_refusal(job)?;
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
            links,
            skip,
            dest,
        } => {
            let (files, dirs, links) = &super::dest::under(dest.as_deref(), files, dirs, links)?;
            let existing = Existing::of_job(*skip, *force);
            // Links are replaced wherever files may be.
            let force = &(existing != Existing::Refuse);
            let Some(dir) = &opts.dir else {
                return Err("this receiver takes no files (start it with --dir DIR)".into());
            };
            let root = Root::open(dir).map_err(|e| {
                format!("the receive directory cannot be opened: {}", os_reason(&e))
            })?;
            let target = Target {
                root: std::sync::Arc::new(root),
                owner: whose.owner,
                limits: crate::recvfile::EarlyLimits::for_window(opts.link.window),
                budget: whose.reorder.clone(),
                striping: ranges_of(opts, hello),
            };
            let root = &target.root;
            let entries = files.len() + dirs.len() + links.len();
            if entries > l.max_files {
                return Err(format!(
                    "{entries} files, directories and links exceed this receiver's limit of {}",
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
                match plan_file(&target, f, *resume, existing, names) {
                    Ok(Decision::Send(p)) => {
                        // A file sent whole from its start needs no plan (a sender takes a
                        // missing one so): a welcome of thousands of new files stays a few
                        // packets, not several round trips of a cold window.
                        let plan = p.plan(i as u32);
                        let whole = plan.have == 0
                            && plan.have_blake3.is_none()
                            && plan.have_ranges.is_empty();
                        if !whole {
                            plans.push(plan);
                        }
                        planned.insert(i as u32, *p);
                    }
                    Ok(Decision::Skip(why)) => plans.push(FilePlan {
                        index: i as u32,
                        have: 0,
                        have_blake3: None,
                        skip: Some(why),
                        have_ranges: Vec::new(),
                    }),
                    Err(r) => problems.push(format!("{}: {r}", f.name)),
                }
            }
            for d in dirs {
                if let Err(r) = crate::names::check_name(d) {
                    problems.push(format!("{d}: {r}"));
                }
            }
            for k in links {
                if !seen.insert(k.name.as_str()) {
                    problems.push(format!("{}: named twice", k.name));
                } else if let Err(r) = link_in_the_way(root, &k.name, *force) {
                    problems.push(format!("{}: {r}", k.name));
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
                root.make_dir(d)
                    .map_err(|w| format!("{d}: {}", w.reason()))?;
            }
            let need: u64 = planned.values().map(Planned::remaining).sum();
            crate::space::check_free(root, need)?;
            // --safe-links judges each link within the job's own tree: its destination.
            let tree = l.safe_links.then_some(dest.as_deref().unwrap_or(""));
            let links = make_links(root, links, (*force, *skip), tree);
            Ok((
                Accepted::Files {
                    count: planned.len(),
                    planned,
                    links,
                    existing,
                    target,
                },
                plans,
                grant,
            ))
        }
    }
}

/// A link's name is refused up front like a file's: a bad name, a link or a non-directory on
/// its way, a directory in its place, or (without `--force`) anything at all there.
fn link_in_the_way(root: &Root, name: &str, force: bool) -> Result<(), String> {
    let parent = match root.parent(name) {
        Ok(p) => p,
        Err(w) if w.is_missing() => return Ok(()),
        Err(w) => return Err(w.reason()),
    };
    match parent.stat(&parent.leaf) {
        Ok(Some(m)) if m.is_dir() => Err("exists as a directory".into()),
        Ok(Some(_)) if !force => Err("exists (the sender may overwrite it with --force)".into()),
        Ok(_) => Ok(()),
        Err(e) => Err(format!("cannot check: {}", os_reason(&e))),
    }
}

/// Make the job's links (after its directories, before any file data), then sync the file
/// system once so that their names are as durable as the files' (see `recvfile::batch`).
/// Under the job's skip rule, a link the receiver has already ([`crate::recvfile::link_skip`])
/// is left alone and reported as skipped.
fn make_links(
    root: &Root,
    links: &[crate::protocol::LinkEntry],
    (force, skip): (bool, Option<crate::protocol::SkipRule>),
    safe: Option<&str>,
) -> Vec<LinkResult> {
    let out: Vec<LinkResult> = links
        .iter()
        .enumerate()
        .map(
            |(i, k)| match skip.and_then(|r| crate::recvfile::link_skip(r, root, k)) {
                Some(why) => LinkResult {
                    index: i as u32,
                    reason: None,
                    skip: Some(why),
                },
                _ => LinkResult {
                    index: i as u32,
                    reason: crate::recvfile::make_link(root, k, force, safe).err(),
                    skip: None,
                },
            },
        )
        .collect();
    if out.iter().any(|r| r.reason.is_none() && r.skip.is_none()) {
        if let Err(e) = root.dir_file().and_then(|f| crate::recvfile::syncfs(&f)) {
            tracing::warn!("syncing {} after making links: {e}", root.path().display());
        }
    }
    out
}

/// An I/O error as a sender may read it.
fn os_reason(e: &std::io::Error) -> String {
    crate::recvfile::os_reason(e)
}

/// What this receiver cannot do in reverse mode; `Err` is the reason to refuse.
fn reverse_refusal(job: &Job) -> Result<(), String> {
    if let Job::Files { .. } = job {
        return Err(
            "reverse mode (-r) moves bulk data only; to get files from this host, run hare-recv \
             --dir on yours and hare-send here"
                .into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reverse_is_bulk_only() {
        let bulk = Job::Bulk {
            bytes: Some(1),
            seconds: None,
            streams: 1,
        };
        let files = Job::Files {
            files: Vec::new(),
            resume: false,
            force: false,
            dirs: Vec::new(),
            links: Vec::new(),
            skip: None,
            dest: None,
        };
        assert_eq!(reverse_refusal(&bulk), Ok(()));
        assert!(reverse_refusal(&files).is_err_and(|r| r.contains("bulk data only")));
    }
}
