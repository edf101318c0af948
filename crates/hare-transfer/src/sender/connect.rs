//! Connecting: the QUIC handshake with the chosen trust (or the kernel-TCP control
//! connection with its controller set before `connect()`), up to an open control channel.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hare_cc::Observer;
use tokio::io::AsyncWriteExt;

use crate::cc::{kernel_tcp_name, QuicCc};
use crate::channels::{ControlRead, ControlWrite, TCP_CONTROL_MAGIC};
use crate::error::{Result, TransferError};
use crate::qlog::ConnectionQlog;
use crate::quic_config::{transport_with, Link};
use crate::tcp::{self, TcpOptions};

use super::opener::Opener;
use super::SendOptions;

/// An open connection with its control channel.
pub(super) struct Connected {
    pub(super) ctl_r: ControlRead,
    pub(super) ctl_w: ControlWrite,
    pub(super) opener: Opener,
    pub(super) endpoint: Option<quinn::Endpoint>,
    /// The controller as reported (`cubic@linux-6`, `kernel:cubic`).
    pub(super) controller: String,
    pub(super) profile: Option<String>,
    /// The kernel controller the TCP socket really runs.
    pub(super) kernel_cc: Option<String>,
    pub(super) qlog: Option<ConnectionQlog>,
}

/// After this long without an answer to the handshake the sender says so (at most 2 s after
/// it began, so that a user who got the address or port wrong learns it at once; scp and
/// iperf3 fail at once on a refused TCP connect, UDP gives no such signal).
pub(crate) const NO_ANSWER_NOTE: Duration = Duration::from_millis(1500);

/// `HOST:PORT` as the user would write it (an IPv6 literal in brackets).
fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The error of a handshake that got no answer within `limit`.
fn no_answer(shown: &str, limit: Duration) -> TransferError {
    TransferError::Connection(format!(
        "no answer from {shown} over UDP within {} s (--connect-timeout): is hare-recv \
         running there?",
        limit.as_secs_f64()
    ))
}

/// Wait for the handshake at most `limit`; after [`NO_ANSWER_NOTE`] without an answer, say
/// on stderr that none came yet. `Err`: no answer within `limit`.
async fn answered(
    connecting: quinn::Connecting,
    shown: &str,
    limit: Duration,
) -> Result<std::result::Result<quinn::Connection, quinn::ConnectionError>> {
    tokio::pin!(connecting);
    let first = NO_ANSWER_NOTE.min(limit);
    if let Ok(r) = tokio::time::timeout(first, &mut connecting).await {
        return Ok(r);
    }
    if first < limit {
        eprintln!("hare-send: no answer yet from {shown} over UDP: is hare-recv running there?");
        if let Ok(r) = tokio::time::timeout(limit - first, &mut connecting).await {
            return Ok(r);
        }
    }
    Err(no_answer(shown, limit))
}

/// The control channel on a connection the receiver dialled (the sender opens it, as when it
/// dials: the job protocol does not depend on who dialled).
async fn dialled(d: &super::Dialled, opts: &SendOptions) -> Result<Connected> {
    let cc = match &opts.cc {
        Some(s) => QuicCc::parse(s)?,
        None => QuicCc::default(),
    };
    let (send, recv) = d
        .conn
        .open_bi()
        .await
        .map_err(|e| TransferError::Connection(format!("opening the control stream: {e}")))?;
    let _ = send.set_priority(1);
    Ok(Connected {
        ctl_r: Box::new(recv),
        ctl_w: Box::new(send),
        opener: Opener::Quic(d.conn.clone()),
        endpoint: Some(d.endpoint.clone()),
        controller: cc.name(),
        profile: cc.profile(),
        kernel_cc: None,
        qlog: None,
    })
}

/// Connect to `addr` (`host` names it for TLS) as `opts` say; hare's controllers report to
/// `observer`.
pub(super) async fn connect(
    opts: &SendOptions,
    link: &Link,
    addr: SocketAddr,
    host: &str,
    observer: &Observer,
) -> Result<Connected> {
    if let Some(d) = &opts.via {
        return dialled(d, opts).await;
    }
    let mut qlog = None;
    let (ctl_r, ctl_w, opener, endpoint, controller, profile, kernel_cc): (
        ControlRead,
        ControlWrite,
        Opener,
        Option<quinn::Endpoint>,
        String,
        Option<String>,
        Option<String>,
    ) = match &opts.tcp {
        None => {
            let cc = match &opts.cc {
                Some(s) => QuicCc::parse(s)?,
                None => QuicCc::default(),
            };
            let trust = opts.trust.as_ref().ok_or_else(|| {
                TransferError::Trust(
                    "no trust given: pass --pin SHA256 (printed by hare-recv when it starts), --cert FILE or --ca FILE".into(),
                )
            })?;
            let (crypto, pin_report) =
                crate::trust::client_crypto_as(trust, opts.identity.as_deref())?;
            let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(crypto)
                .map_err(|e| TransferError::Config(e.to_string()))?;
            let mut transport = transport_with(link, cc.factory(observer));
            opts.liveness.apply(&mut transport);
            if let Some(dir) = &opts.qlog {
                let mut q = ConnectionQlog::create(dir, "sender", format!("hare-send to {addr}"))?;
                transport.qlog_stream(q.stream.take());
                qlog = Some(q);
            }
            let mut client = quinn::ClientConfig::new(Arc::new(crypto));
            client.transport_config(Arc::new(transport));
            let bind: SocketAddr = if addr.is_ipv6() {
                "[::]:0"
            } else {
                "0.0.0.0:0"
            }
            .parse()
            .map_err(|_| TransferError::Config("bind address".into()))?;
            let sock = crate::socket::bind_udp(bind)?;
            let endpoint = crate::socket::endpoint(
                sock,
                link.endpoint_config()?,
                None,
                link.max_udp_payload(),
            )?;
            let connecting = endpoint
                .connect_with(client, addr, host)
                .map_err(|e| TransferError::Connection(format!("{addr}: {e}")))?;
            let shown = host_port(host, addr.port());
            let conn = match answered(connecting, &shown, opts.liveness.connect_timeout).await {
                Err(e) => return Err(e),
                Ok(Err(e)) => {
                    if let Some((expected, actual)) = pin_report.mismatch() {
                        return Err(TransferError::PinMismatch {
                            expected: expected.to_string(),
                            actual: actual.to_string(),
                        });
                    }
                    if matches!(e, quinn::ConnectionError::TimedOut) {
                        // quinn's idle timeout ended a handshake that got no answer.
                        let l = &opts.liveness;
                        return Err(no_answer(&shown, l.idle_timeout.min(l.connect_timeout)));
                    }
                    let text = super::tls_text::tidy(&e.to_string());
                    return Err(TransferError::Connection(format!("{addr}: {text}")));
                }
                Ok(Ok(c)) => c,
            };
            let (send, recv) = conn.open_bi().await.map_err(|e| {
                TransferError::Connection(format!("opening the control stream: {e}"))
            })?;
            // Control messages (progress answers) must not queue behind bulk data.
            let _ = send.set_priority(1);
            (
                Box::new(recv),
                Box::new(send),
                Opener::Quic(conn),
                Some(endpoint),
                cc.name(),
                cc.profile(),
                None,
            )
        }
        Some(t) => {
            let name = kernel_tcp_name(opts.cc.as_deref().unwrap_or("cubic"))?;
            let topts = TcpOptions {
                cc: name.clone(),
                buffer: t.buffer,
                pacing_rate: t.pacing_rate,
                mss: link.mtu.map(|m| u32::from(m) - 12),
            };
            let mut s = tcp::connect(addr, &topts).await?;
            s.write_all(TCP_CONTROL_MAGIC)
                .await
                .map_err(|e| TransferError::Connection(format!("TCP control: {e}")))?;
            let actual = tcp::congestion_of(&s).unwrap_or_else(|| name.clone());
            let (r, w) = s.into_split();
            (
                Box::new(r),
                Box::new(w),
                Opener::Tcp {
                    addr,
                    opts: topts,
                    session: [0; 12],
                    sockets: Arc::default(),
                    given: None,
                },
                None,
                format!("kernel:{actual}"),
                None,
                Some(actual),
            )
        }
    };
    Ok(Connected {
        ctl_r,
        ctl_w,
        opener,
        endpoint,
        controller,
        profile,
        kernel_cc,
        qlog,
    })
}
