//! A small hostile client built on quinn: it speaks the job protocol by hand, so tests can
//! send what hare-send never would (reserved names, colliding names, stalls, lies).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hare_transfer::identity::Fingerprint;
use hare_transfer::protocol::{
    self, DataHeader, DataKind, FileEntry, Job, ToReceiver, ToSender, PROTOCOL_VERSION,
};
use hare_transfer::trust::Trust;

/// One hostile connection with its control stream.
pub struct Hostile {
    pub ep: quinn::Endpoint,
    pub conn: quinn::Connection,
    pub send: quinn::SendStream,
    pub recv: quinn::RecvStream,
}

/// Connect to a receiver; `transport` lets a test shrink its own receive windows.
pub async fn connect(
    addr: SocketAddr,
    fp: Fingerprint,
    transport: Option<quinn::TransportConfig>,
) -> Hostile {
    let me = hare_transfer::testkit::test_sender();
    connect_as(addr, fp, transport, &me, [127, 0, 0, 1].into()).await
}

/// Connect from the local address `from` (any of 127.0.0.0/8), presenting `identity`.
pub async fn connect_as(
    addr: SocketAddr,
    fp: Fingerprint,
    transport: Option<quinn::TransportConfig>,
    identity: &hare_transfer::identity::Identity,
    from: std::net::IpAddr,
) -> Hostile {
    let crypto =
        hare_transfer::testkit::client_crypto(&Trust::Pin(fp), Some(identity)).expect("crypto");
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(crypto).expect("quic crypto");
    let mut cfg = quinn::ClientConfig::new(Arc::new(crypto));
    if let Some(t) = transport {
        cfg.transport_config(Arc::new(t));
    }
    let ep = quinn::Endpoint::client(SocketAddr::new(from, 0)).expect("endpoint");
    let conn = ep
        .connect_with(cfg, addr, "localhost")
        .expect("connect")
        .await
        .expect("handshake");
    let (send, recv) = conn.open_bi().await.expect("bi");
    Hostile {
        ep,
        conn,
        send,
        recv,
    }
}

/// A file job's hello.
pub fn files_hello(files: &[(&str, u64)], force: bool, token: Option<&str>) -> ToReceiver {
    ToReceiver::Hello {
        version: PROTOCOL_VERSION,
        software: "hostile".into(),
        token: token.map(str::to_owned),
        job: Job::Files {
            files: files.iter().map(|(n, s)| FileEntry::new(*n, *s)).collect(),
            resume: false,
            force,
            dirs: Vec::new(),
            links: Vec::new(),
            skip: None,
            dest: None,
        },
        window: 1 << 20,
        fixed_window: false,
        controller: "hostile".into(),
        interval_s: None,
        reverse: None,
        ends_bulk: false,
        striping: None,
    }
}

/// A file job's hello that asks to resume.
pub fn resume_hello(files: &[(&str, u64)]) -> ToReceiver {
    let mut h = files_hello(files, false, None);
    if let ToReceiver::Hello {
        job: Job::Files { resume, .. },
        ..
    } = &mut h
    {
        *resume = true;
    }
    h
}

impl Hostile {
    /// Send a control message.
    pub async fn say(&mut self, m: &ToReceiver) {
        protocol::write_frame(&mut self.send, m)
            .await
            .expect("control write");
    }

    /// The next control message (None: the stream ended or 10 s passed).
    pub async fn hear(&mut self) -> Option<ToSender> {
        tokio::time::timeout(
            Duration::from_secs(10),
            protocol::read_frame(&mut self.recv),
        )
        .await
        .ok()
        .and_then(Result::ok)
        .flatten()
    }

    /// Send a hello and return the answer.
    pub async fn hello(&mut self, m: &ToReceiver) -> Option<ToSender> {
        self.say(m).await;
        self.hear().await
    }

    /// Open file `index`'s data stream and write `data` at `offset`; `finish` ends it.
    pub async fn file_data(
        &self,
        index: u32,
        offset: u64,
        data: &[u8],
        finish: bool,
    ) -> quinn::SendStream {
        let mut s = self.conn.open_uni().await.expect("uni");
        let h = DataHeader {
            kind: DataKind::File,
            index,
            offset,
            session: [0; 12],
            attempt: 0,
        };
        s.write_all(&h.encode()).await.expect("header");
        s.write_all(data).await.expect("data");
        if finish {
            s.finish().expect("finish");
        }
        s
    }

    /// Open file `index`'s data stream for attempt `attempt` (a file sent again), write all of
    /// `data` from offset 0 and finish it.
    pub async fn file_attempt(&self, index: u32, attempt: u16, data: &[u8]) {
        let mut s = self.conn.open_uni().await.expect("uni");
        let h = DataHeader {
            kind: DataKind::File,
            index,
            offset: 0,
            session: [0; 12],
            attempt,
        };
        s.write_all(&h.encode()).await.expect("header");
        s.write_all(data).await.expect("data");
        s.finish().expect("finish");
    }

    /// The application close code and reason the receiver ended the connection with, waiting
    /// at most `limit`.
    pub async fn closed_within(&self, limit: Duration) -> Option<(u64, String)> {
        match tokio::time::timeout(limit, self.conn.closed()).await {
            Ok(quinn::ConnectionError::ApplicationClosed(c)) => Some((
                c.error_code.into_inner(),
                String::from_utf8_lossy(&c.reason).into_owned(),
            )),
            Ok(other) => Some((u64::MAX, other.to_string())),
            Err(_) => None,
        }
    }
}

/// Wait (at most 10 s, polling every 25 ms) until `cond` holds; panics naming `what`.
pub async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..400 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for {what}");
}
