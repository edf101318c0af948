//! Jobs over several QUIC connections (the sender's `-C N`): the job's first connection
//! registers a session, named in its welcome; each further connection names it in a `join`
//! and, once let in, hands its data streams to that job. Only the sender that holds the job
//! may join it (the same certificate, when it showed one; the session itself is known only to
//! the job's peer, through its TLS connection), at most the number of connections the hello
//! announced, and the job's limits stay the job's: a joined connection takes no job slot and
//! ends with its job.

use std::sync::atomic::Ordering;

use tokio::sync::watch;

use crate::channels::{ControlRead, ControlWrite};
use crate::error::{Result, TransferError};
use crate::protocol::{read_frame, write_frame, ToReceiver, ToSender};

use super::ctx::JobCtx;
use super::sessions::{Slot, TakeOver};
use super::streams::accept_quic_streams;
use super::REFUSE_TIMEOUT;

/// Serve a connection whose first frame was a `join`: let it into its job, then keep it
/// until the job or the connection ends.
pub(super) async fn serve_join(
    mut ctx: JobCtx,
    (session, number, token): (&str, u16, Option<&str>),
    (mut ctl_r, mut out): (ControlRead, ControlWrite),
) -> Result<()> {
    let Some(conn) = ctx.conn.clone() else {
        return Err(TransferError::Protocol("a join over kernel TCP".into()));
    };
    let taken = crate::protocol::parse_session(session)
        .map_err(|_| "a malformed session".to_owned())
        .and_then(|id| ctx.joins.take(&id, (ctx.peer_cert, token, number)));
    let (slot, mut ended) = match taken {
        Ok(t) => t,
        Err(reason) => {
            let m = ToSender::Refuse {
                reason: reason.clone(),
            };
            let _ = tokio::time::timeout(REFUSE_TIMEOUT, write_frame(&mut out, &m)).await;
            return Err(TransferError::Refused(format!("join refused: {reason}")));
        }
    };
    // Let in: it holds no pre-authentication place any more, and no job of its own.
    ctx.preauth = None;
    ctx.joined.store(true, std::sync::atomic::Ordering::Relaxed);
    crate::quic_config::open_receive_window(&conn, &slot.link, slot.grant);
    conn.set_max_concurrent_uni_streams(quinn::VarInt::from_u32(slot.streams));
    let joined = ToSender::Joined { connection: number };
    tokio::time::timeout(
        ctx.opts.limits.write_timeout,
        write_frame(&mut out, &joined),
    )
    .await
    .map_err(|_| TransferError::Timeout("the joining sender did not read".into()))??;
    tokio::spawn(accept_quic_streams(
        (conn.clone(), number),
        slot.data_tx.clone(),
    ));
    slot.joined_open.fetch_add(1, Ordering::Relaxed);
    let _open = OpenCount(slot.joined_open.clone());
    // Until the sender moves the job's control channel here, or stops reading this stream.
    let moved = tokio::select! {
        _ = ended.changed() => {
            job_over(&conn);
            return Ok(());
        }
        _ = conn.closed() => return Ok(()),
        m = read_frame::<_, ToReceiver>(&mut ctl_r) => {
            matches!(m, Ok(Some(ToReceiver::TakeOver { connection })) if connection == number)
        }
    };
    if !moved {
        wait_end(&conn, &mut ended).await;
        return Ok(());
    }
    hand_over(
        &slot,
        TakeOver {
            control: (ctl_r, out),
            conn: conn.clone(),
            number,
        },
    )
    .await;
    // The job's verdicts and its `done` go over this connection now: at the job's end it
    // is closed as a job's first connection is, once the sender has read them (bounded).
    tokio::select! {
        _ = ended.changed() => {}
        _ = conn.closed() => {}
    }
    Ok(())
}

/// Give the job its control channel's new stream (a job that ended meanwhile drops it).
async fn hand_over(slot: &Slot, t: TakeOver) {
    let _ = slot.take_over.send(t).await;
}

async fn wait_end(conn: &quinn::Connection, ended: &mut watch::Receiver<()>) {
    tokio::select! {
        _ = ended.changed() => job_over(conn),
        _ = conn.closed() => {}
    }
}

/// The job's verdicts went out (over whichever connection carried its control channel):
/// nothing on this one is waited for, and its streams must end now so that the job's files
/// are free.
fn job_over(conn: &quinn::Connection) {
    conn.close(
        quinn::VarInt::from_u32(crate::protocol::close::DONE),
        b"job over",
    );
}

/// Counts a joined connection as open while it lives.
struct OpenCount(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for OpenCount {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
