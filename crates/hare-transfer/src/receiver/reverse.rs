//! Reverse mode on the receiver (`hare-send -r`): the client that connected asks this side to
//! send its bulk job back over the same connection, so that a receiver behind a NAT or a
//! firewall can still send. The job is admitted like a forward one (credentials, limits);
//! then this side runs the sender's machinery ([`crate::sender::send_back`]).
//!
//! The controller that sends is this receiver's own `--cc`: quinn builds a connection's
//! congestion controller when the connection is accepted (`Incoming::accept_with` takes the
//! whole server configuration), before the hello that asks for reverse mode can arrive; over
//! kernel TCP the data connections the client opens inherit the listening socket's
//! `TCP_CONGESTION`, set from the same `--cc`.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::channels::{ControlRead, ControlWrite, DataIn};
use crate::error::{Result, TransferError};
use crate::protocol::{DataHeader, DataKind, Job, Reverse, ToReceiver};
use crate::report::Printer;
use crate::sender::{BackPath, SendBack};

use super::accept::Accepted;
use super::ctx::JobCtx;
use super::logs;

/// Where a kernel-TCP job's data connections arrive, with their headers.
type DataRx = mpsc::Receiver<(DataHeader, DataIn)>;

/// Kernel TCP: the job's data connections, which the client opens after the welcome (one per
/// stream, each named by its header), all within `limit`.
async fn tcp_streams(
    mut data_rx: DataRx,
    streams: u16,
    limit: Duration,
) -> Result<HashMap<u32, tokio::net::TcpStream>> {
    let deadline = tokio::time::Instant::now() + limit;
    let mut got = HashMap::new();
    while got.len() < usize::from(streams) {
        let next = tokio::time::timeout_at(deadline, data_rx.recv()).await;
        let (h, input) = match next {
            Ok(Some(d)) => d,
            Ok(None) => return Err(TransferError::Connection("the client went away".into())),
            Err(_) => {
                return Err(TransferError::Timeout(format!(
                    "{} of {streams} data connections within {} s",
                    got.len(),
                    limit.as_secs()
                )))
            }
        };
        let fresh = !got.contains_key(&h.index);
        match input {
            DataIn::Tcp(s, _)
                if h.kind == DataKind::Bulk && h.index < u32::from(streams) && fresh =>
            {
                got.insert(h.index, s);
            }
            _ => {
                return Err(TransferError::Protocol(format!(
                    "unexpected data connection (bulk stream number {})",
                    h.index
                )))
            }
        }
    }
    Ok(got)
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
    (ctl_r, ctl_w, data_rx): (ControlRead, ControlWrite, DataRx),
) -> Result<()> {
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
    let (path, controller) = match (ctx.conn.clone(), ctx.controller.clone()) {
        (Some(conn), Some(cc)) => {
            // A sender's send window is its `-w` x streams (as hare-send's forward), within
            // the memory bound this receiver puts on a connection's window.
            let link = crate::quic_config::Link {
                streams,
                ..ctx.opts.link
            };
            let max = ctx
                .opts
                .limits
                .max_window
                .max(crate::quic_config::MIN_WINDOW);
            conn.set_send_window(link.connection_window().min(max));
            let path = BackPath::Quic {
                conn,
                observer: cc.observer,
                cc_epoch: cc.epoch,
                qlog: cc.qlog,
            };
            (path, ctx.opts.cc.name())
        }
        _ => {
            let limit = ctx.opts.limits.hello_timeout;
            let streams = tcp_streams(data_rx, streams, limit).await?;
            let cc = streams.values().next().and_then(crate::tcp::congestion_of);
            let label = format!("kernel:{}", cc.unwrap_or_else(|| "unknown".into()));
            (BackPath::Tcp(streams), label)
        }
    };
    let back = SendBack {
        path,
        controller,
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
