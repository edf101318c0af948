//! Over kernel TCP the end of a data connection does not tell a sender that finished from one
//! whose process died (its kernel closes the sockets alike): a bulk job from a sender whose
//! hello says `ends_bulk` is complete only with its `bulk-end`. Driven by a hand-made sender
//! speaking the protocol over plain sockets, so that each case is exact.

use std::time::Duration;

use hare_transfer::protocol::TCP_CONTROL_MAGIC;
use hare_transfer::protocol::{
    read_frame, write_frame, DataHeader, DataKind, Job, ToReceiver, ToSender, PROTOCOL_VERSION,
};
use hare_transfer::testkit::{recv_options, runtime, BackgroundReceiver};
use hare_transfer::TransferError;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// How the hand-made sender ends its one-stream bulk job after 64 KiB of payload.
#[derive(Debug, Clone, Copy)]
enum End {
    /// Says `bulk-end`, then waits for the receiver's `done`.
    BulkEnd,
    /// Closes both connections without a word, as a killed process's kernel does.
    Vanish,
}

/// One job against a fresh one-shot TCP receiver; the receiver's result.
fn job(ends_bulk: bool, end: End) -> Result<(), TransferError> {
    let id = tempfile::tempdir().expect("tempdir");
    let mut ro = recv_options(id.path().into(), None);
    ro.tcp = Some(hare_transfer::tcp::TcpOptions::default());
    ro.one_shot = true;
    let recv = BackgroundReceiver::start(ro).expect("tcp receiver");
    let addr = recv.addr;
    runtime().block_on(async move {
        let mut ctl = TcpStream::connect(addr).await.expect("control connection");
        ctl.write_all(TCP_CONTROL_MAGIC).await.expect("magic");
        let hello = ToReceiver::Hello {
            version: PROTOCOL_VERSION,
            software: "hand-made".into(),
            token: None,
            job: Job::Bulk {
                bytes: None,
                seconds: Some(30.0),
                streams: 1,
            },
            window: 1 << 20,
            fixed_window: false,
            controller: "test".into(),
            interval_s: None,
            reverse: None,
            ends_bulk,
            striping: None,
        };
        write_frame(&mut ctl, &hello).await.expect("hello");
        let welcome: Option<ToSender> = read_frame(&mut ctl).await.expect("welcome");
        let Some(ToSender::Welcome {
            session: Some(hex),
            features,
            ..
        }) = welcome
        else {
            panic!("no TCP welcome: {welcome:?}");
        };
        assert!(features.iter().any(|f| f == "bulk-end"), "{features:?}");
        let mut session = [0u8; 12];
        for (i, b) in session.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex session");
        }
        let mut data = TcpStream::connect(addr).await.expect("data connection");
        let header = DataHeader {
            kind: DataKind::Bulk,
            index: 0,
            offset: 0,
            session,
            attempt: 0,
        };
        data.write_all(&header.encode()).await.expect("header");
        data.write_all(&[7u8; 64 << 10]).await.expect("payload");
        data.shutdown().await.expect("data FIN");
        match end {
            End::BulkEnd => {
                let m = ToReceiver::BulkEnd {
                    bytes: 64 << 10,
                    stopped: false,
                };
                write_frame(&mut ctl, &m).await.expect("bulk-end");
                // The receiver's intervals, then its done.
                let done = tokio::time::timeout(Duration::from_secs(10), async {
                    loop {
                        match read_frame::<_, ToSender>(&mut ctl).await {
                            Ok(Some(ToSender::Done { bytes, .. })) => return Some(bytes),
                            Ok(Some(_)) => continue,
                            _ => return None,
                        }
                    }
                })
                .await;
                assert_eq!(done, Ok(Some(64 << 10)), "the receiver's done");
            }
            End::Vanish => {
                // Let the data connection's end reach the receiver first, as it may when a
                // process dies.
                tokio::time::sleep(Duration::from_millis(300)).await;
                drop(ctl);
            }
        }
        drop(data);
    });
    recv.join()
}

#[test]
fn a_bulk_job_ends_only_with_bulk_end_from_a_sender_that_says_it() {
    assert!(job(true, End::BulkEnd).is_ok());
    let vanished = job(true, End::Vanish).map_err(|e| e.to_string());
    assert_eq!(
        vanished,
        Err(
            "connection: the sender went away: it closed the connection before the job ended; \
             the sender is down or was stopped"
                .to_owned()
        )
    );
}

#[test]
fn an_older_sender_without_bulk_end_still_ends_its_job_with_its_streams() {
    // Its hello has no `ends_bulk`: the streams' end completes the job, as before.
    assert!(job(false, End::Vanish).is_ok());
}
