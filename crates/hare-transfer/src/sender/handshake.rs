//! The job handshake: the hello, and the receiver's welcome or refusal.

use std::time::Duration;

use quinn::VarInt;

use crate::channels::{ControlRead, ControlWrite};
use crate::error::{Result, TransferError};
use crate::protocol::{
    close, read_frame, write_frame, FilePlan, Job, LinkResult, Reverse, Striping, ToReceiver,
    ToSender, PROTOCOL_VERSION, REVERSE_VERSION,
};
use crate::quic_config::Link;

use super::control::message_type;
use super::opener::Opener;
use super::SendOptions;

/// Time the receiver has to answer the Hello.
const WELCOME_TIMEOUT: Duration = Duration::from_secs(30);

/// What the receiver granted.
pub(super) struct Welcome {
    /// Connection window granted.
    pub(super) granted: u64,
    /// Per-file plans (resume offsets).
    pub(super) plans: Vec<FilePlan>,
    /// What the receiver understands beyond version 1 (`protocol::feature`).
    pub(super) features: Vec<String>,
    /// The receiver's verdicts on the job's links.
    pub(super) links: Vec<LinkResult>,
    /// The receiver's software, for messages about what it lacks.
    pub(super) software: String,
    /// QUIC: the session further connections of the job join (`--connections`).
    pub(super) session: Option<[u8; 12]>,
}

/// Send the hello and wait for the answer; a refusal closes the connection and is an error.
/// Over TCP the session id of the welcome is stored in `opener` for the data connections.
#[allow(clippy::too_many_arguments)]
pub(super) async fn hello(
    ctl_r: &mut ControlRead,
    ctl_w: &mut ControlWrite,
    opener: &mut Opener,
    opts: &SendOptions,
    link: &Link,
    job: &Job,
    controller: &str,
) -> Result<Welcome> {
    write_frame(
        ctl_w,
        &ToReceiver::Hello {
            version: if opts.reverse {
                REVERSE_VERSION
            } else {
                PROTOCOL_VERSION
            },
            software: format!("hare-send {}", env!("CARGO_PKG_VERSION")),
            token: opts.token.clone(),
            job: job.clone(),
            window: link.connection_window(),
            fixed_window: !link.auto,
            controller: controller.to_owned(),
            interval_s: Some(opts.interval.as_secs_f64()),
            reverse: opts.reverse.then_some(Reverse {
                rate_bps: opts.rate,
            }),
            ends_bulk: !opts.reverse,
            striping: (opts.connections > 1).then_some(Striping {
                connections: opts.connections,
                chunk: opts.chunk,
                moves_bulk: true,
                tail_pieces: true,
            }),
        },
    )
    .await?;
    let answer: ToSender = match tokio::time::timeout(WELCOME_TIMEOUT, read_frame(ctl_r)).await {
        Ok(Ok(Some(m))) => m,
        Ok(Ok(None)) => {
            return Err(TransferError::Connection(
                "the receiver closed the connection before answering".into(),
            ))
        }
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            return Err(TransferError::Connection(
                "the receiver did not answer the job in time".into(),
            ))
        }
    };
    match answer {
        ToSender::Welcome {
            window,
            files,
            session,
            features,
            links,
            software,
            ..
        } => {
            let session = session
                .as_deref()
                .map(crate::protocol::parse_session)
                .transpose()?;
            if let (Opener::Tcp { session: s, .. }, Some(id)) = (&mut *opener, session) {
                *s = id;
            }
            Ok(Welcome {
                granted: window,
                plans: files,
                features,
                links,
                software,
                session,
            })
        }
        ToSender::Refuse { reason } => {
            if let Opener::Quic(c) = &*opener {
                c.close(VarInt::from_u32(close::REFUSED), b"refused");
            }
            // A receiver from before reverse mode refuses the hello by its version.
            if opts.reverse && reason.contains("protocol version") {
                return Err(TransferError::Refused(format!(
                    "the receiver does not know reverse mode (-r); upgrade hare-recv there (it says: {reason})"
                )));
            }
            Err(TransferError::Refused(reason))
        }
        other => Err(TransferError::Protocol(format!(
            "expected a welcome, got a `{}` message",
            message_type(&other)
        ))),
    }
}
