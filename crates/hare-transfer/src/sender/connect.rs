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

/// Connect to `addr` (`host` names it for TLS) as `opts` say; hare's controllers report to
/// `observer`.
pub(super) async fn connect(
    opts: &SendOptions,
    link: &Link,
    addr: SocketAddr,
    host: &str,
    observer: &Observer,
) -> Result<Connected> {
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
            let conn = match tokio::time::timeout(Duration::from_secs(15), connecting).await {
                Err(_) => {
                    return Err(TransferError::Connection(format!(
                        "{addr}: no answer (is hare-recv running there?)"
                    )))
                }
                Ok(Err(e)) => {
                    if let Some((expected, actual)) = pin_report.mismatch() {
                        return Err(TransferError::PinMismatch {
                            expected: expected.to_string(),
                            actual: actual.to_string(),
                        });
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
