//! File jobs and trust end to end on loopback, in-process.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hare_transfer::identity::Fingerprint;
use hare_transfer::protocol::{self, FileEntry, Job, ToReceiver, ToSender};
use hare_transfer::testkit::{
    in_progress, recv_options, runtime as rt, seeded_bytes as bytes, send_options,
    BackgroundReceiver,
};
use hare_transfer::trust::Trust;
use hare_transfer::{send, stop_pair, SendJob, Stop, TransferError};

fn files_job(paths: Vec<PathBuf>) -> SendJob {
    SendJob::Files {
        paths,
        resume: false,
        force: false,
        parallel: 4,
    }
}

fn tree_equal(a: &Path, b: &Path) {
    for e in std::fs::read_dir(a).expect("read_dir") {
        let e = e.expect("entry");
        let other = b.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            tree_equal(&e.path(), &other);
        } else {
            assert_eq!(
                std::fs::read(e.path()).expect("src"),
                std::fs::read(&other).unwrap_or_default(),
                "{} differs",
                other.display()
            );
        }
    }
}

struct Fixture {
    _id: tempfile::TempDir,
    src: tempfile::TempDir,
    dst: tempfile::TempDir,
    recv: BackgroundReceiver,
}

fn fixture(token: Option<&str>) -> Fixture {
    let id = tempfile::tempdir().expect("tempdir");
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let mut ro = recv_options(id.path().into(), Some(dst.path().into()));
    ro.token = token.map(str::to_owned);
    if token.is_some() {
        // Token only: the test sender's certificate would let it in by itself.
        ro.allow.clear();
    }
    let recv = BackgroundReceiver::start(ro).expect("receiver");
    Fixture {
        _id: id,
        src,
        dst,
        recv,
    }
}

#[test]
fn empty_binary_and_tree_arrive_byte_identical() {
    let f = fixture(None);
    let s = f.src.path();
    std::fs::write(s.join("empty"), b"").expect("w");
    std::fs::write(s.join("binary.bin"), bytes(1, 3_000_001)).expect("w");
    std::fs::create_dir_all(s.join("tree/a/b")).expect("mkdir");
    std::fs::write(s.join("tree/top.txt"), b"top\n").expect("w");
    std::fs::write(s.join("tree/a/b/deep.bin"), bytes(2, 70_000)).expect("w");
    std::fs::write(s.join("tree/a/zero"), b"").expect("w");
    let job = files_job(vec![s.join("empty"), s.join("binary.bin"), s.join("tree")]);
    let outcome = rt()
        .block_on(send(
            send_options(f.recv.addr, f.recv.trust(), job),
            Stop::never(),
        ))
        .expect("send files");
    assert_eq!(outcome.files.len(), 5);
    assert!(outcome.files.iter().all(|r| r.ok), "{:?}", outcome.files);
    let total = 3_000_001 + 4 + 70_000;
    assert_eq!(outcome.run.summary.map(|s| s.bytes), Some(total));
    tree_equal(s, f.dst.path());
    // No temporary files left behind.
    assert!(hare_transfer::testkit::part_files(f.dst.path(), "binary.bin").is_empty());
}

#[test]
fn overwrite_is_refused_without_force() {
    let f = fixture(None);
    let p = f.src.path().join("doc.txt");
    std::fs::write(&p, b"new contents").expect("w");
    std::fs::write(f.dst.path().join("doc.txt"), b"old").expect("w");
    let err = rt()
        .block_on(send(
            send_options(f.recv.addr, f.recv.trust(), files_job(vec![p.clone()])),
            Stop::never(),
        ))
        .expect_err("must be refused");
    assert!(
        matches!(&err, TransferError::Refused(r) if r.contains("doc.txt: exists")),
        "{err}"
    );
    assert_eq!(
        std::fs::read(f.dst.path().join("doc.txt")).expect("r"),
        b"old"
    );
    let job = SendJob::Files {
        paths: vec![p],
        resume: false,
        force: true,
        parallel: 1,
    };
    let outcome = rt()
        .block_on(send(
            send_options(f.recv.addr, f.recv.trust(), job),
            Stop::never(),
        ))
        .expect("forced");
    assert!(outcome.files[0].ok);
    assert_eq!(
        std::fs::read(f.dst.path().join("doc.txt")).expect("r"),
        b"new contents"
    );
}

#[test]
fn wrong_pin_fails_with_a_clear_error() {
    let f = fixture(None);
    let p = f.src.path().join("x");
    std::fs::write(&p, b"x").expect("w");
    let wrong = Fingerprint([7; 32]);
    let err = rt()
        .block_on(send(
            send_options(f.recv.addr, Some(Trust::Pin(wrong)), files_job(vec![p])),
            Stop::never(),
        ))
        .expect_err("pin mismatch");
    match err {
        TransferError::PinMismatch { expected, actual } => {
            assert_eq!(expected, wrong.to_string());
            assert_eq!(Some(actual), f.recv.fingerprint.map(|f| f.to_string()));
        }
        other => panic!("expected a pin mismatch, got {other}"),
    }
    assert_eq!(std::fs::read_dir(f.dst.path()).expect("dir").count(), 0);
}

#[test]
fn cert_file_pins_like_the_fingerprint() {
    let f = fixture(None);
    let p = f.src.path().join("x");
    std::fs::write(&p, b"x").expect("w");
    let cert = f._id.path().join("cert.pem");
    let outcome = rt()
        .block_on(send(
            send_options(f.recv.addr, Some(Trust::CertFile(cert)), files_job(vec![p])),
            Stop::never(),
        ))
        .expect("cert pin works");
    assert!(outcome.files[0].ok);
}

#[test]
fn ca_file_trusts_a_ca_issued_receiver_by_name() {
    // A CA and a leaf for "localhost", as a site would issue them.
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("ca");
    let leaf_key = rcgen::KeyPair::generate().expect("key");
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .expect("params")
        .signed_by(&leaf_key, &ca, &ca_key)
        .expect("leaf");
    let id = tempfile::tempdir().expect("tempdir");
    std::fs::write(id.path().join("cert.pem"), leaf.pem()).expect("w");
    std::fs::write(id.path().join("key.pem"), leaf_key.serialize_pem()).expect("w");
    let ca_file = id.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).expect("w");
    let recv = BackgroundReceiver::start(recv_options(id.path().into(), None)).expect("receiver");
    let mut o = send_options(
        recv.addr,
        Some(Trust::Ca(ca_file.clone())),
        SendJob::Bulk {
            bytes: Some(1 << 16),
            seconds: None,
            streams: 1,
        },
    );
    o.server = format!("localhost:{}", recv.addr.port());
    let outcome = rt()
        .block_on(send(o.clone(), Stop::never()))
        .expect("CA-trusted send");
    assert_eq!(outcome.run.summary.map(|s| s.bytes), Some(1 << 16));
    // A different CA is not trusted.
    let other_key = rcgen::KeyPair::generate().expect("key");
    let mut other = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    other.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    std::fs::write(&ca_file, other.self_signed(&other_key).expect("ca").pem()).expect("w");
    assert!(rt().block_on(send(o, Stop::never())).is_err());
}

#[test]
fn missing_or_wrong_token_is_refused_and_the_right_one_works() {
    let f = fixture(Some("s3cret"));
    let p = f.src.path().join("t");
    std::fs::write(&p, b"token test").expect("w");
    let err = rt()
        .block_on(send(
            send_options(f.recv.addr, f.recv.trust(), files_job(vec![p.clone()])),
            Stop::never(),
        ))
        .expect_err("no token");
    assert!(
        matches!(&err, TransferError::Refused(r) if r.contains("token is required")),
        "{err}"
    );
    let mut o = send_options(f.recv.addr, f.recv.trust(), files_job(vec![p.clone()]));
    o.token = Some("guess".into());
    let err = rt()
        .block_on(send(o.clone(), Stop::never()))
        .expect_err("wrong token");
    assert!(
        matches!(&err, TransferError::Refused(r) if r.contains("wrong token")),
        "{err}"
    );
    assert!(
        !f.dst.path().join("t").exists(),
        "no data accepted without the token"
    );
    o.token = Some("s3cret".into());
    let outcome = rt().block_on(send(o, Stop::never())).expect("right token");
    assert!(outcome.files[0].ok);
}

#[test]
fn interrupted_transfer_leaves_no_final_file_and_resume_completes_it() {
    let f = fixture(None);
    let p = f.src.path().join("big.bin");
    let data = bytes(3, 2_000_000);
    std::fs::write(&p, &data).expect("w");
    let mut o = send_options(f.recv.addr, f.recv.trust(), files_job(vec![p.clone()]));
    o.rate = Some(4_000_000); // 4 Mbit/s: 2 MB take 4 s, we stop soon after data flows
                              // Stopped before the receiver's first interval: only its answer at the interrupt can
                              // give the summary's bytes.
    o.interval = Duration::from_secs(60);
    let (trigger, stop) = stop_pair();
    let watched = f.dst.path().to_path_buf();
    let outcome = rt()
        .block_on(async move {
            tokio::spawn(async move {
                // Stop once data is arriving (polled, at most 30 s), however slow the host.
                for _ in 0..600 {
                    if in_progress(&watched, "big.bin").iter().any(|f| f.1 > 0) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
                trigger.stop();
            });
            send(o, stop).await
        })
        .expect("an interrupted run still reports");
    assert!(outcome.interrupted);
    assert!(!outcome.files[0].ok);
    assert!(!outcome.run.summary.as_ref().is_some_and(|s| s.completed));
    // The summary says what the receiver had when asked at the interrupt, and the interval
    // lines add up to it.
    let said = outcome.run.summary.as_ref().map_or(0, |s| s.bytes);
    assert!(said > 0 && said < data.len() as u64, "summary bytes {said}");
    let lines: u64 = outcome.run.intervals.iter().map(|i| i.bytes).sum();
    assert_eq!(lines, said, "{:#?}", outcome.run.intervals);
    let final_path = f.dst.path().join("big.bin");
    let part = hare_transfer::testkit::test_sender_part(f.dst.path(), "big.bin");
    // The receiver notices the abort; wait for it to cut the partial file (bounded).
    let mut kept = 0;
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(100));
        kept = std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
        if kept > 0 {
            break;
        }
    }
    assert!(!final_path.exists(), "no file under the final name");
    assert!(
        kept > 0 && kept < data.len() as u64,
        "partial data kept: {kept}"
    );

    let job = SendJob::Files {
        paths: vec![p],
        resume: true,
        force: false,
        parallel: 1,
    };
    let outcome = rt()
        .block_on(send(
            send_options(f.recv.addr, f.recv.trust(), job),
            Stop::never(),
        ))
        .expect("resume");
    assert!(outcome.files[0].ok, "{:?}", outcome.files);
    let resumed = outcome.files[0].resumed_from;
    assert!(
        resumed > 0 && resumed <= kept,
        "resumed from {resumed}, kept {kept}"
    );
    assert_eq!(
        outcome.run.summary.map(|s| s.bytes),
        Some(data.len() as u64 - resumed)
    );
    assert_eq!(std::fs::read(&final_path).expect("final"), data);
    assert!(!part.exists());
}

#[test]
fn resume_with_a_corrupted_partial_starts_over() {
    let f = fixture(None);
    let p = f.src.path().join("c.bin");
    let data = bytes(4, 100_000);
    std::fs::write(&p, &data).expect("w");
    let mut wrong = data[..40_000].to_vec();
    wrong[10] ^= 0xff;
    std::fs::write(
        hare_transfer::testkit::test_sender_part(f.dst.path(), "c.bin"),
        wrong,
    )
    .expect("w");
    let job = SendJob::Files {
        paths: vec![p],
        resume: true,
        force: false,
        parallel: 1,
    };
    let outcome = rt()
        .block_on(send(
            send_options(f.recv.addr, f.recv.trust(), job),
            Stop::never(),
        ))
        .expect("resume");
    assert!(outcome.files[0].ok);
    assert_eq!(
        outcome.files[0].resumed_from, 0,
        "a prefix that does not match is resent"
    );
    assert_eq!(
        std::fs::read(f.dst.path().join("c.bin")).expect("final"),
        data
    );
}

/// A hand-made client: connects with the pinned identity and speaks the protocol directly.
async fn raw_hello(addr: std::net::SocketAddr, fp: Fingerprint, hello: &ToReceiver) -> ToSender {
    let crypto = hare_transfer::testkit::client_crypto(
        &Trust::Pin(fp),
        Some(&hare_transfer::testkit::test_sender()),
    )
    .expect("crypto");
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(crypto).expect("quic crypto");
    let ep = quinn::Endpoint::client("127.0.0.1:0".parse().expect("addr")).expect("endpoint");
    let conn = ep
        .connect_with(
            quinn::ClientConfig::new(Arc::new(crypto)),
            addr,
            "localhost",
        )
        .expect("connect")
        .await
        .expect("handshake");
    let (mut s, mut r) = conn.open_bi().await.expect("bi");
    protocol::write_frame(&mut s, hello).await.expect("hello");
    let answer = protocol::read_frame(&mut r)
        .await
        .expect("answer")
        .expect("a message");
    conn.close(0u32.into(), b"");
    answer
}

fn hello_with(files: Vec<FileEntry>) -> ToReceiver {
    ToReceiver::Hello {
        version: protocol::PROTOCOL_VERSION,
        software: "test".into(),
        token: None,
        job: Job::Files {
            files,
            resume: false,
            force: true,
            dirs: Vec::new(),
            links: Vec::new(),
            skip: None,
            dest: None,
        },
        window: 1 << 20,
        fixed_window: false,
        controller: "test".into(),
        interval_s: None,
        reverse: None,
        ends_bulk: false,
        striping: None,
    }
}

#[test]
fn traversal_and_absolute_names_are_rejected() {
    let f = fixture(None);
    let fp = f.recv.fingerprint.expect("quic");
    for name in [
        "../escape",
        "/etc/hare-test",
        "a/../../b",
        "ok/./x",
        "c\\..\\d",
    ] {
        let hello = hello_with(vec![FileEntry::new(name, 1)]);
        let answer = rt().block_on(raw_hello(f.recv.addr, fp, &hello));
        assert!(
            matches!(&answer, ToSender::Refuse { reason } if reason.contains(name)),
            "{name}: {answer:?}"
        );
    }
    assert_eq!(std::fs::read_dir(f.dst.path()).expect("dir").count(), 0);
    assert!(!f
        .dst
        .path()
        .parent()
        .expect("parent")
        .join("escape")
        .exists());
}

#[test]
fn receiver_survives_misbehaving_clients_and_bounds_jobs() {
    let f = fixture(None);
    let fp = f.recv.fingerprint.expect("quic");
    // Too large, too many streams, wrong version: refused with reasons.
    let huge = hello_with(vec![FileEntry::new("huge", u64::MAX)]);
    let a = rt().block_on(raw_hello(f.recv.addr, fp, &huge));
    assert!(
        matches!(&a, ToSender::Refuse { reason } if reason.contains("limit")),
        "{a:?}"
    );
    let streams = ToReceiver::Hello {
        version: protocol::PROTOCOL_VERSION,
        software: "test".into(),
        token: None,
        job: Job::Bulk {
            bytes: Some(1),
            seconds: None,
            streams: 10_000,
        },
        window: 1 << 20,
        fixed_window: false,
        controller: "test".into(),
        interval_s: None,
        reverse: None,
        ends_bulk: false,
        striping: None,
    };
    let a = rt().block_on(raw_hello(f.recv.addr, fp, &streams));
    assert!(
        matches!(&a, ToSender::Refuse { reason } if reason.contains("streams")),
        "{a:?}"
    );
    let old = ToReceiver::Hello {
        version: 99,
        software: "test".into(),
        token: None,
        job: Job::Bulk {
            bytes: Some(1),
            seconds: None,
            streams: 1,
        },
        window: 1 << 20,
        fixed_window: false,
        controller: "test".into(),
        interval_s: None,
        reverse: None,
        ends_bulk: false,
        striping: None,
    };
    let a = rt().block_on(raw_hello(f.recv.addr, fp, &old));
    assert!(
        matches!(&a, ToSender::Refuse { reason } if reason.contains("version 99")),
        "{a:?}"
    );

    // Garbage on the control stream, a client that vanishes mid-hello, a client that never
    // speaks: each ends its own connection only.
    rt().block_on(async {
        let crypto = hare_transfer::testkit::client_crypto(
            &Trust::Pin(fp),
            Some(&hare_transfer::testkit::test_sender()),
        )
        .expect("crypto");
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(crypto).expect("quic");
        let ep = quinn::Endpoint::client("127.0.0.1:0".parse().expect("addr")).expect("ep");
        let cfg = quinn::ClientConfig::new(Arc::new(crypto));
        let c1 = ep
            .connect_with(cfg.clone(), f.recv.addr, "localhost")
            .expect("c")
            .await
            .expect("hs");
        let (mut s, _r) = c1.open_bi().await.expect("bi");
        s.write_all(&u32::MAX.to_be_bytes()).await.expect("w");
        s.write_all(b"garbage").await.expect("w");
        let c2 = ep
            .connect_with(cfg.clone(), f.recv.addr, "localhost")
            .expect("c")
            .await
            .expect("hs");
        let (mut s2, _r2) = c2.open_bi().await.expect("bi");
        s2.write_all(&[0, 0]).await.expect("w");
        c2.close(0u32.into(), b"bye");
        // Data streams before a hello are not allowed at all.
        let c3 = ep
            .connect_with(cfg, f.recv.addr, "localhost")
            .expect("c")
            .await
            .expect("hs");
        let blocked = tokio::time::timeout(Duration::from_millis(300), c3.open_uni()).await;
        assert!(blocked.is_err(), "no data stream credit before the hello");
        tokio::time::sleep(Duration::from_millis(200)).await;
        let closed = tokio::time::timeout(Duration::from_secs(5), c1.closed()).await;
        assert!(closed.is_ok(), "the garbage client is disconnected");
    });

    // A well-behaved sender is still served.
    let p = f.src.path().join("after");
    std::fs::write(&p, b"still serving").expect("w");
    let outcome = rt()
        .block_on(send(
            send_options(f.recv.addr, f.recv.trust(), files_job(vec![p])),
            Stop::never(),
        ))
        .expect("served");
    assert!(outcome.files[0].ok);
}
