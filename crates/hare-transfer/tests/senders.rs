//! Sender authentication on loopback: mutual TLS with the sender's own certificate, judged by
//! fingerprint against the receiver's allow list, or a token; a receiver that writes files
//! will not start without either unless told `--open`.

use std::sync::Arc;

use hare_transfer::identity::ephemeral;
use hare_transfer::testkit::{recv_options, runtime as rt, send_options, BackgroundReceiver};
use hare_transfer::{send, Receiver, SendJob, Stop, TransferError};

fn files_job(path: std::path::PathBuf) -> SendJob {
    SendJob::Files {
        paths: vec![path],
        resume: false,
        force: false,
        parallel: 1,
    }
}

struct Dirs {
    id: tempfile::TempDir,
    src: tempfile::TempDir,
    dst: tempfile::TempDir,
}

fn dirs() -> Dirs {
    let d = Dirs {
        id: tempfile::tempdir().expect("tempdir"),
        src: tempfile::tempdir().expect("tempdir"),
        dst: tempfile::tempdir().expect("tempdir"),
    };
    std::fs::write(d.src.path().join("f.txt"), b"authenticated bytes\n").expect("w");
    d
}

#[test]
fn an_unknown_sender_is_refused_and_nothing_is_written() {
    let d = dirs();
    let recv =
        BackgroundReceiver::start(recv_options(d.id.path().into(), Some(d.dst.path().into())))
            .expect("receiver");
    let stranger = Arc::new(ephemeral(&[]).expect("identity"));
    for identity in [Some(stranger.clone()), None] {
        let mut o = send_options(
            recv.addr,
            recv.trust(),
            files_job(d.src.path().join("f.txt")),
        );
        o.identity = identity.clone();
        let err = rt().block_on(send(o, Stop::never())).expect_err("refused");
        let want = match &identity {
            Some(id) => format!(
                "sender certificate sha256 {} is not allowed",
                id.fingerprint
            ),
            None => "no sender certificate presented".to_owned(),
        };
        assert!(
            matches!(&err, TransferError::Refused(r) if r.contains(&want)),
            "{err}"
        );
    }
    assert_eq!(std::fs::read_dir(d.dst.path()).expect("dir").count(), 0);
}

#[test]
fn an_allowed_fingerprint_and_a_token_both_let_a_sender_in() {
    let d = dirs();
    let mut ro = recv_options(d.id.path().into(), Some(d.dst.path().into()));
    ro.token = Some("s3cret".into());
    let recv = BackgroundReceiver::start(ro).expect("receiver");
    // The allowed certificate (the test sender), no token.
    let o = send_options(
        recv.addr,
        recv.trust(),
        files_job(d.src.path().join("f.txt")),
    );
    let out = rt().block_on(send(o, Stop::never())).expect("allowed");
    assert!(out.files.iter().all(|f| f.ok), "{:?}", out.files);
    assert_eq!(
        std::fs::read(d.dst.path().join("f.txt")).expect("r"),
        b"authenticated bytes\n"
    );
    // An unknown certificate with the token.
    std::fs::write(d.src.path().join("g.txt"), b"token bytes").expect("w");
    let mut o = send_options(
        recv.addr,
        recv.trust(),
        files_job(d.src.path().join("g.txt")),
    );
    o.identity = Some(Arc::new(ephemeral(&[]).expect("identity")));
    o.token = Some("s3cret".into());
    let out = rt().block_on(send(o, Stop::never())).expect("token");
    assert!(out.files.iter().all(|f| f.ok), "{:?}", out.files);
    assert_eq!(
        std::fs::read(d.dst.path().join("g.txt")).expect("r"),
        b"token bytes"
    );
    // The same unknown certificate with a wrong token.
    std::fs::write(d.src.path().join("h.txt"), b"x").expect("w");
    let mut o = send_options(
        recv.addr,
        recv.trust(),
        files_job(d.src.path().join("h.txt")),
    );
    o.identity = Some(Arc::new(ephemeral(&[]).expect("identity")));
    o.token = Some("guess".into());
    let err = rt().block_on(send(o, Stop::never())).expect_err("refused");
    assert!(
        matches!(&err, TransferError::Refused(r) if r.contains("wrong token")),
        "{err}"
    );
    assert!(!d.dst.path().join("h.txt").exists());
}

#[test]
fn a_file_receiver_without_authorisation_starts_only_when_open() {
    let d = dirs();
    let mut ro = recv_options(d.id.path().into(), Some(d.dst.path().into()));
    ro.allow.clear();
    let err = rt()
        .block_on(async { Receiver::bind(ro.clone()).map(|_| ()) })
        .expect_err("no authorisation");
    assert!(err.to_string().contains("--open"), "{err}");
    // Bulk only: open is fine.
    let mut bulk = ro.clone();
    bulk.dir = None;
    rt().block_on(async { Receiver::bind(bulk).map(|_| ()) })
        .expect("a bulk receiver may be open");
    // Files over kernel TCP cannot be authenticated: --open or nothing.
    let mut tcp = ro.clone();
    tcp.tcp = Some(hare_transfer::tcp::TcpOptions::default());
    tcp.allow = vec![hare_transfer::testkit::test_sender().fingerprint];
    let err = rt()
        .block_on(async { Receiver::bind(tcp).map(|_| ()) })
        .expect_err("tcp files");
    assert!(err.to_string().contains("kernel TCP has no TLS"), "{err}");
    // --open: anyone may send.
    ro.open = true;
    let recv = BackgroundReceiver::start(ro).expect("open receiver");
    let mut o = send_options(
        recv.addr,
        recv.trust(),
        files_job(d.src.path().join("f.txt")),
    );
    o.identity = None;
    let out = rt().block_on(send(o, Stop::never())).expect("open");
    assert!(out.files.iter().all(|f| f.ok), "{:?}", out.files);
}
