//! Reverse mode on the receiver (`hare-send -r`): the client that connected asks this side to
//! send its bulk job back over the same connection, so that a receiver behind a NAT or a
//! firewall can still send. The job is admitted like a forward one (credentials, limits);
//! then this side runs the sender's machinery ([`crate::sender::send_back`]).
//!
//! The controller that sends is this receiver's own `--cc`: quinn builds a connection's
//! congestion controller when the connection is accepted (`Incoming::accept_with` takes the
//! whole server configuration), before the hello that asks for reverse mode can arrive.

use std::time::Duration;

use crate::channels::{ControlRead, ControlWrite};
use crate::error::{Result, TransferError};
use crate::protocol::{Job, Reverse, ToReceiver};
use crate::report::Printer;
use crate::sender::SendBack;

use super::accept::Accepted;
use super::job::JobCtx;
use super::{logs, RecvOptions};

/// What this receiver cannot do in reverse mode; `Err` is the reason to refuse.
pub(super) fn check(opts: &RecvOptions, job: &Job) -> Result<(), String> {
    if opts.tcp.is_some() {
        return Err("reverse mode (-r) is not supported over kernel TCP; run it over QUIC".into());
    }
    if let Job::Files { .. } = job {
        return Err(
            "reverse mode (-r) moves bulk data only; to get files from this host, run hare-recv \
             --dir on yours and hare-send here"
                .into(),
        );
    }
    Ok(())
}

/// Send the admitted bulk job back to the client, then report to it.
#[allow(clippy::too_many_arguments)]
pub(super) async fn serve(
    ctx: &JobCtx,
    hello: &ToReceiver,
    reverse: &Reverse,
    accepted: Accepted,
    interval: Duration,
    printer: Printer,
    ctl_r: ControlRead,
    ctl_w: ControlWrite,
) -> Result<()> {
    let (Some(conn), Some((observer, cc_epoch))) = (ctx.conn.clone(), ctx.controller.clone())
    else {
        return Err(TransferError::Protocol(
            "reverse mode needs a QUIC connection".into(),
        ));
    };
    let Accepted::Bulk {
        bytes,
        seconds,
        streams,
    } = accepted
    else {
        return Err(TransferError::Protocol(
            "reverse mode moves bulk data only".into(),
        ));
    };
    let software = match hello {
        ToReceiver::Hello { software, .. } => logs::clean(software, 100),
        _ => String::new(),
    };
    let back = SendBack {
        conn,
        observer,
        cc_epoch,
        controller: ctx.opts.cc.name(),
        profile: ctx.opts.cc.profile(),
        job: Job::Bulk {
            bytes,
            seconds,
            streams,
        },
        rate: reverse.rate_bps,
        interval,
        peer: ctx.peer,
        peer_software: software,
        window: ctx.opts.link.window,
        printer,
        output: ctx.opts.output.clone(),
        write_timeout: ctx.opts.limits.write_timeout,
        stall_timeout: ctx.opts.limits.stall_timeout,
    };
    crate::sender::send_back(back, ctl_r, ctl_w).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reverse_is_bulk_over_quic_only() {
        let mut opts = crate::testkit::recv_options("/nonexistent".into(), None);
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
        };
        assert_eq!(check(&opts, &bulk), Ok(()));
        assert!(check(&opts, &files).is_err_and(|r| r.contains("bulk data only")));
        opts.tcp = Some(crate::tcp::TcpOptions::default());
        assert!(check(&opts, &bulk).is_err_and(|r| r.contains("kernel TCP")));
    }
}
