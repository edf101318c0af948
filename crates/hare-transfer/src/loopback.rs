//! A [`Receiver`] on a background thread with its own current-thread runtime, and quiet
//! options for both ends on loopback: what the many-small-files benchmark runs, and what the
//! tests build on (re-exported by `testkit`, under the `testkit` feature).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::cc::QuicCc;
use crate::error::{Result, TransferError};
use crate::identity::{Fingerprint, Identity};
use crate::quic_config::{Link, DEFAULT_WINDOW};
use crate::receiver::{Limits, Receiver, RecvOptions};
use crate::report::OutputOptions;
use crate::sender::{SendJob, SendOptions};
use crate::stop::{stop_pair, StopTrigger};
use crate::trust::Trust;

/// A receiver serving on its own thread until stopped or dropped.
#[derive(Debug)]
pub struct BackgroundReceiver {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its certificate fingerprint (QUIC).
    pub fingerprint: Option<Fingerprint>,
    trigger: StopTrigger,
    handle: Option<JoinHandle<Result<()>>>,
}

impl BackgroundReceiver {
    /// Bind and start serving.
    pub fn start(opts: RecvOptions) -> Result<Self> {
        let (trigger, stop) = stop_pair();
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = std::thread::spawn(move || -> Result<()> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| TransferError::io("starting a runtime", e))?;
            rt.block_on(async move {
                let r = match Receiver::bind(opts) {
                    Ok(r) => r,
                    Err(e) => {
                        let msg = e.to_string();
                        let _ = tx.send(Err(e));
                        return Err(TransferError::Config(msg));
                    }
                };
                let _ = tx.send(Ok((r.local_addr(), r.fingerprint())));
                r.run(stop).await
            })
        });
        let (addr, fingerprint) = rx
            .recv_timeout(Duration::from_secs(20))
            .map_err(|_| TransferError::Config("the receiver did not start".into()))??;
        Ok(Self {
            addr,
            fingerprint,
            trigger,
            handle: Some(handle),
        })
    }

    /// The trust a sender needs for this receiver.
    pub fn trust(&self) -> Option<Trust> {
        self.fingerprint.map(Trust::Pin)
    }

    /// Wait for a one-shot receiver to finish by itself and return its result.
    #[cfg(feature = "testkit")]
    pub fn join(mut self) -> Result<()> {
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(TransferError::Config("the receiver thread panicked".into())),
            None => Ok(()),
        }
    }

    /// Stop serving and return the serving loop's result.
    #[cfg(feature = "testkit")]
    pub fn stop(self) -> Result<()> {
        self.trigger.stop();
        self.join()
    }
}

impl Drop for BackgroundReceiver {
    fn drop(&mut self) {
        self.trigger.stop();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The sender identity every test sender of this process presents (made in memory once);
/// [`recv_options`] allows it.
pub fn test_sender() -> Arc<Identity> {
    static ID: OnceLock<Arc<Identity>> = OnceLock::new();
    ID.get_or_init(|| {
        Arc::new(
            crate::identity::ephemeral(&[])
                .unwrap_or_else(|e| panic!("a test sender identity: {e}")),
        )
    })
    .clone()
}

/// Quiet receiver options on `127.0.0.1:0` that allow [`test_sender`].
pub fn recv_options(identity_dir: PathBuf, dir: Option<PathBuf>) -> RecvOptions {
    RecvOptions {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        identity_dir,
        names: Vec::new(),
        token: None,
        allow: vec![test_sender().fingerprint],
        open: false,
        dir,
        partial_owner: None,
        link: Link::fixed(DEFAULT_WINDOW),
        cc: QuicCc::default(),
        qlog: None,
        interval: Duration::from_secs(1),
        limits: Limits::default(),
        one_shot: false,
        output: OutputOptions {
            quiet: true,
            ..OutputOptions::default()
        },
        tcp: None,
    }
}

/// Quiet sender options for `job` to `addr`, presenting [`test_sender`].
pub fn send_options(addr: SocketAddr, trust: Option<Trust>, job: SendJob) -> SendOptions {
    SendOptions {
        server: addr.to_string(),
        trust,
        identity: Some(test_sender()),
        token: None,
        keep: crate::sendfiles::Keep::default(),
        job,
        skip: None,
        dest: None,
        link: Link::fixed(DEFAULT_WINDOW),
        cc: None,
        qlog: None,
        interval: Duration::from_secs(1),
        rate: None,
        output: OutputOptions {
            quiet: true,
            ..OutputOptions::default()
        },
        tcp: None,
        liveness: Default::default(),
        reverse: false,
        retries: crate::sender::DEFAULT_RETRIES,
        via: None,
        connections: 1,
        chunk: crate::sender::DEFAULT_CHUNK,
    }
}
