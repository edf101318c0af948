//! Serving QUIC: one fresh server configuration (controller observer, qlog) per connection,
//! and no data streams before the job is accepted.

use std::sync::Arc;
use std::time::Duration;

use hare_cc::Observer;
use hare_report::Transport;
use quinn::VarInt;
use tokio::sync::{mpsc, Semaphore};

use crate::channels::{read_quic_header, DataIn};
use crate::error::{Result, TransferError};
use crate::protocol::{close, DataHeader};
use crate::qlog::ConnectionQlog;
use crate::quic_config::transport_with;
use crate::recvfile::FinalNames;
use crate::stop::Stop;

use super::job::{run_job, JobCtx};
use super::{RecvOptions, HEADER_TIMEOUT, HELLO_TIMEOUT};

pub(super) async fn serve_quic(
    opts: Arc<RecvOptions>,
    endpoint: quinn::Endpoint,
    crypto: Arc<quinn::crypto::rustls::QuicServerConfig>,
    mut stop: Stop,
) -> Result<()> {
    let slots = Arc::new(Semaphore::new(opts.limits.max_conns.max(1)));
    let names = FinalNames::default();
    let result = loop {
        let incoming = tokio::select! {
            i = endpoint.accept() => match i {
                Some(i) => i,
                None => break Ok(()),
            },
            _ = stop.stopped() => break Ok(()),
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            tracing::warn!(peer = %incoming.remote_address(), "busy: refusing a connection");
            incoming.refuse();
            continue;
        };
        let opts2 = opts.clone();
        let crypto = crypto.clone();
        let names = names.clone();
        let fut = async move {
            let r = quic_connection(opts2, crypto, incoming, names).await;
            drop(permit);
            r
        };
        if opts.one_shot {
            let r = tokio::select! {
                r = fut => r,
                _ = stop.stopped() => Err(TransferError::Interrupted),
            };
            break r;
        }
        tokio::spawn(async move {
            if let Err(e) = fut.await {
                tracing::info!("connection ended: {e}");
            }
        });
    };
    endpoint.close(VarInt::from_u32(close::BUSY), b"receiver shutting down");
    let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
    result
}

async fn quic_connection(
    opts: Arc<RecvOptions>,
    crypto: Arc<quinn::crypto::rustls::QuicServerConfig>,
    incoming: quinn::Incoming,
    names: FinalNames,
) -> Result<()> {
    let peer = incoming.remote_address();
    let observer = Observer::new();
    let mut qlog = match &opts.qlog {
        Some(dir) => Some(ConnectionQlog::create(
            dir,
            "receiver",
            format!("hare-recv from {peer}"),
        )?),
        None => None,
    };
    let mut transport = transport_with(&opts.link, opts.cc.factory(&observer));
    // Nothing but the control stream until the Hello is accepted.
    transport
        .max_concurrent_uni_streams(VarInt::from_u32(0))
        .max_concurrent_bidi_streams(VarInt::from_u32(1));
    if let Some(q) = qlog.as_mut() {
        transport.qlog_stream(q.stream.take());
    }
    let mut sc = quinn::ServerConfig::with_crypto(crypto);
    sc.transport_config(Arc::new(transport));
    let connecting = incoming
        .accept_with(Arc::new(sc))
        .map_err(|e| TransferError::Connection(format!("{peer}: {e}")))?;
    let conn = tokio::time::timeout(HELLO_TIMEOUT, connecting)
        .await
        .map_err(|_| TransferError::Connection(format!("{peer}: handshake timed out")))?
        .map_err(|e| TransferError::Connection(format!("{peer}: handshake: {e}")))?;
    let (send, recv) = tokio::time::timeout(HELLO_TIMEOUT, conn.accept_bi())
        .await
        .map_err(|_| TransferError::Protocol(format!("{peer}: no control stream")))?
        .map_err(|e| TransferError::Connection(format!("{peer}: {e}")))?;
    let (data_tx, data_rx) = mpsc::channel(64);
    let ctx = JobCtx {
        opts: opts.clone(),
        peer,
        transport: Transport::Quic,
        conn: Some(conn.clone()),
        data_tx: Some(data_tx),
        session: None,
        names,
    };
    let res = run_job(ctx, Box::new(recv), Box::new(send), data_rx).await;
    if let Some(q) = qlog.as_mut() {
        q.cc_events(
            &observer
                .drain_all()
                .into_iter()
                .map(|(_, e)| e)
                .collect::<Vec<_>>(),
        );
    }
    match &res {
        Ok(()) | Err(TransferError::FilesFailed { .. }) => {
            // Every verdict and the final `done` are on their way: closing now would discard
            // them. The sender closes once it has read them; wait for that briefly.
            let _ = tokio::time::timeout(Duration::from_secs(5), conn.closed()).await;
        }
        Err(TransferError::Refused(r)) => {
            let _ = tokio::time::timeout(Duration::from_secs(2), conn.closed()).await;
            conn.close(VarInt::from_u32(close::REFUSED), r.as_bytes());
        }
        Err(e) => conn.close(VarInt::from_u32(close::PROTOCOL), e.to_string().as_bytes()),
    }
    res
}

/// Accept data streams once the job is accepted and hand them (with their header) to the job.
pub(super) async fn accept_quic_streams(
    conn: quinn::Connection,
    tx: mpsc::Sender<(DataHeader, DataIn)>,
) {
    while let Ok(mut s) = conn.accept_uni().await {
        let tx = tx.clone();
        tokio::spawn(async move {
            if let Ok(Ok(h)) = tokio::time::timeout(HEADER_TIMEOUT, read_quic_header(&mut s)).await
            {
                let _ = tx.send((h, DataIn::Quic(s))).await;
            } else {
                let _ = s.stop(VarInt::from_u32(close::PROTOCOL));
            }
        });
    }
}
