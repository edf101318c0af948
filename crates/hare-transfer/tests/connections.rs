//! One job over several QUIC connections (`-C N`): a big file travels as ranges written in
//! place, a tree spreads over the connections, a connection cut off mid-job hands its ranges
//! to the others (a bulk stream continues on another), and a connection that is not the
//! job's own cannot join it.

mod hostile;
mod relay;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use hare_report::EventKind;
use hare_transfer::protocol::{Striping, ToReceiver, ToSender};
use hare_transfer::testkit::{
    recv_options, runtime as rt, seeded_bytes as bytes, send_options, send_until_part_holds,
    BackgroundReceiver,
};
use hare_transfer::{send, SendJob, SendOptions, SendOutcome, Stop};

struct Fixture {
    _id: tempfile::TempDir,
    src: tempfile::TempDir,
    dst: tempfile::TempDir,
    recv: BackgroundReceiver,
}

fn fixture(token: Option<&str>) -> Fixture {
    fixture_with(|o| o.token = token.map(str::to_owned))
}

/// A receiver with its options as `tune` leaves them.
fn fixture_with(tune: impl FnOnce(&mut hare_transfer::RecvOptions)) -> Fixture {
    let id = tempfile::tempdir().expect("tempdir");
    let (src, dst) = (
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
    );
    let mut o = recv_options(id.path().into(), Some(dst.path().into()));
    tune(&mut o);
    let recv = BackgroundReceiver::start(o).expect("receiver");
    Fixture {
        _id: id,
        src,
        dst,
        recv,
    }
}

/// A job of `paths` over `n` connections.
fn job(to: std::net::SocketAddr, f: &Fixture, paths: Vec<PathBuf>, n: u16) -> SendOptions {
    let job = SendJob::Files {
        paths,
        resume: true,
        force: false,
        parallel: 4,
    };
    let mut o = send_options(to, f.recv.trust(), job);
    o.connections = n;
    o
}

fn run(o: SendOptions) -> SendOutcome {
    let out = rt().block_on(send(o, Stop::never())).expect("send");
    assert!(
        out.failures().next().is_none(),
        "{:?}",
        out.failures().collect::<Vec<_>>()
    );
    out
}

/// Run again what was just interrupted, as a user would: until the receiver has let the
/// interrupted job go (it learns of the end from the closed connections; bounded).
fn rerun(o: impl Fn() -> SendOptions) -> SendOutcome {
    let t0 = std::time::Instant::now();
    for _ in 0..50 {
        match rt().block_on(send(o(), Stop::never())) {
            Err(hare_transfer::TransferError::Refused(r)) if r.contains("right now") => {
                std::thread::sleep(Duration::from_millis(100));
            }
            r => {
                eprintln!("rerun after {:?}", t0.elapsed());
                return r.expect("rerun");
            }
        }
    }
    panic!("the interrupted job kept its names for 5 s");
}

/// The shares line of a run over several connections: each connection's percentage.
fn shares(o: &SendOutcome) -> Vec<f64> {
    let line = o
        .run
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Note { message } if message.starts_with("connections:") => {
                Some(message.clone())
            }
            _ => None,
        })
        .expect("a connections line");
    let (_, list) = line.split_once("sent: ").expect("shares");
    list.trim_end_matches(')')
        .split(", ")
        .map(|p| {
            let (_, pct) = p.split_once(": ").expect("i: x%");
            pct.trim_end_matches('%')
                .parse::<f64>()
                .expect("a percentage")
        })
        .collect()
}

/// A file of `mib` MiB whose every MiB is different (its number in its first 8 bytes), so
/// that a range written at the wrong offset shows.
fn big_file(path: &Path, mib: u64) {
    let block = bytes(7, 1 << 20);
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    for i in 0..mib {
        let mut b = block.clone();
        b[..8].copy_from_slice(&i.to_be_bytes());
        w.write_all(&b).expect("write");
    }
    w.flush().expect("flush");
}

fn same_file(a: &Path, b: &Path) -> bool {
    let digest = |p: &Path| {
        let mut h = blake3::Hasher::new();
        let mut f = std::fs::File::open(p).expect("open");
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = f.read(&mut buf).expect("read");
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
        h.finalize()
    };
    digest(a) == digest(b)
}

/// Nothing but `names` in `dir` (no range files, no part files left).
fn only(dir: &Path, names: &[&str]) {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    assert_eq!(found, names, "what the receive directory holds");
}

#[test]
fn a_one_gib_file_over_four_connections_arrives_whole() {
    let f = fixture(None);
    let p = f.src.path().join("big.bin");
    big_file(&p, 1024);
    let out = run(job(f.recv.addr, &f, vec![p.clone()], 4));
    assert!(same_file(&p, &f.dst.path().join("big.bin")));
    // Written in place into the one temporary file, then renamed: nothing else is left.
    only(f.dst.path(), &["big.bin"]);
    let s = shares(&out);
    assert_eq!(s.len(), 4, "{s:?}");
    assert!(
        s.iter().all(|&x| x > 5.0),
        "every connection carried ranges: {s:?}"
    );
}

#[test]
fn a_tree_over_three_connections_arrives_whole() {
    let f = fixture(None);
    let root = f.src.path().join("tree");
    for i in 0..12u64 {
        let dir = root.join(format!("d{}", i % 3));
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(
            dir.join(format!("f{i}")),
            bytes(i, 1000 + 700_000 * i as usize),
        )
        .expect("w");
    }
    big_file(&root.join("d0/big"), 24);
    let out = run(job(f.recv.addr, &f, vec![root.clone()], 3));
    for i in 0..12u64 {
        let rel = format!("tree/d{}/f{i}", i % 3);
        assert!(
            same_file(&f.src.path().join(&rel), &f.dst.path().join(&rel)),
            "{rel}"
        );
    }
    assert!(same_file(
        &root.join("d0/big"),
        &f.dst.path().join("tree/d0/big")
    ));
    assert_eq!(shares(&out).len(), 3);
    // A rerun with everything in place moves nothing and says nothing of its connections.
    let mut o = job(f.recv.addr, &f, vec![root.clone()], 3);
    o.skip = Some(hare_transfer::SkipRule::Quick);
    let again = run(o);
    assert_eq!(again.run.summary.as_ref().map(|s| s.bytes), Some(0));
    assert!(
        !again.run.events.iter().any(|e| matches!(&e.kind,
            EventKind::Note { message } if message.starts_with("connections:"))),
        "{:#?}",
        again.run.events
    );
}

/// A 96 MiB file over three connections, every one through a relay that blackholes
/// connection `cut` (in order of appearance) once `after` bytes of it went through, both
/// ways; the file must arrive whole.
fn big_file_with_a_cut(cut: usize, after: u64) -> SendOutcome {
    let f = fixture(None);
    let p = f.src.path().join("big.bin");
    big_file(&p, 96);
    let relay = relay::Relay::start(f.recv.addr, Some((cut, after)));
    let out = run(quick_to_notice(job(relay.addr, &f, vec![p.clone()], 3)));
    assert!(relay.cut_happened(), "the relay cut connection {cut}");
    assert!(same_file(&p, &f.dst.path().join("big.bin")));
    only(f.dst.path(), &["big.bin"]);
    assert_eq!(shares(&out).len(), 3);
    out
}

/// A bulk job of `size` (`-n`) or `seconds` (`-T`) in one stream per connection over three
/// connections, through a relay that blackholes connection `cut` once `after` bytes of it
/// went through: the stream it carried continues on another connection, which the sender
/// says, and the job succeeds.
fn bulk_with_a_cut(
    cut: usize,
    after: u64,
    (size, seconds): (Option<u64>, Option<f64>),
) -> SendOutcome {
    let f = fixture(None);
    let relay = relay::Relay::start(f.recv.addr, Some((cut, after)));
    let bulk = SendJob::Bulk {
        bytes: size,
        seconds,
        streams: 1,
    };
    let mut o = quick_to_notice(send_options(relay.addr, f.recv.trust(), bulk));
    o.connections = 3;
    let out = run(o);
    assert!(relay.cut_happened(), "the relay cut connection {cut}");
    let said = out.run.events.iter().any(|e| {
        matches!(&e.kind, EventKind::Note { message }
            if message.contains("it continues on another from byte"))
    });
    assert!(said, "the continuation is said: {:?}", out.run.events);
    out
}

/// [`bulk_with_a_cut`] of 64 MiB: exactly that arrives.
fn sized_bulk_with_a_cut(cut: usize, after: u64) {
    let out = bulk_with_a_cut(cut, after, (Some(64 << 20), None));
    assert_eq!(out.run.summary.as_ref().map(|s| s.bytes), Some(64 << 20));
}

#[test]
fn a_bulk_stream_whose_connection_is_cut_off_continues_on_another() {
    sized_bulk_with_a_cut(1, 1 << 20);
}

#[test]
fn a_timed_bulk_job_keeps_its_streams_when_a_connection_is_cut_off() {
    let out = bulk_with_a_cut(1, 1 << 20, (None, Some(4.0)));
    let ran = out.run.summary.as_ref().map_or(0.0, |s| s.seconds);
    assert!(ran >= 3.9, "the job ran its time: {ran} s");
}

#[test]
fn a_bulk_job_whose_first_connection_is_cut_off_completes() {
    // Connection 0 carries the control channel too: it moves, and the stream continues.
    sized_bulk_with_a_cut(0, 4 << 20);
}

#[test]
fn a_listening_sender_of_three_connections_listens_on_a_port_for_each() {
    let f = fixture(None);
    let bulk = SendJob::Bulk {
        bytes: Some(1),
        seconds: None,
        streams: 1,
    };
    let mut o = send_options(f.recv.addr, f.recv.trust(), bulk);
    o.connections = 3;
    rt().block_on(async {
        let l = hare_transfer::sender::Listening::bind(&o, 1, &[]).expect("bind");
        let mut ports = l.further_ports();
        assert_eq!(ports.len(), 2, "{ports:?}");
        ports.push(l.port().expect("port"));
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 3, "three distinct ports: {ports:?}");
        // A range of one port: the further connections share it.
        let held = std::net::UdpSocket::bind("0.0.0.0:0").expect("probe");
        let free = held.local_addr().expect("addr").port();
        drop(held);
        let one = hare_transfer::sender::Listening::bind(&o, 1, &[free]).expect("bind one");
        assert_eq!(one.port().expect("port"), free);
        assert!(one.further_ports().is_empty());
    });
}

/// A lost connection noticed within 2 s.
fn quick_to_notice(mut o: SendOptions) -> SendOptions {
    o.liveness.idle_timeout = Duration::from_secs(2);
    o.liveness.keep_alive = Duration::from_millis(500);
    o
}

#[test]
fn a_connection_cut_off_mid_job_hands_its_ranges_to_the_others() {
    // A joined connection (the second to appear), cut early: it joins while the job already
    // runs on connection 0.
    big_file_with_a_cut(1, 1 << 20);
}

#[test]
fn a_job_whose_first_connection_is_cut_off_moves_its_control_channel_and_completes() {
    // Connection 0, which carries the job's control channel: the sender moves the channel
    // to a further connection.
    let out = big_file_with_a_cut(0, 8 << 20);
    let moved = out.run.events.iter().any(|e| {
        matches!(&e.kind, EventKind::Note { message }
            if message.contains("control channel continues on connection"))
    });
    assert!(moved, "the move is said: {:?}", out.run.events);
}

#[test]
fn a_tree_whose_connections_are_cut_off_one_by_one_arrives_whole() {
    // A further connection joins while the job already runs on connection 0: cut early.
    for (cut, after) in [(0, 4 << 20), (1, 256 << 10)] {
        let f = fixture(None);
        let root = f.src.path().join("tree");
        // Small files (each one range) and one of several chunks, 12 MB in all.
        for i in 0..200u64 {
            let dir = root.join(format!("d{}", i % 5));
            std::fs::create_dir_all(&dir).expect("mkdir");
            let size = 1 + 20_000 * (i as usize % 7);
            std::fs::write(dir.join(format!("f{i}")), bytes(i, size)).expect("w");
        }
        big_file(&root.join("d0/big"), 12);
        let relay = relay::Relay::start(f.recv.addr, Some((cut, after)));
        let out = run(quick_to_notice(job(relay.addr, &f, vec![root.clone()], 3)));
        assert!(relay.cut_happened(), "connection {cut} was cut");
        for i in 0..200u64 {
            let rel = format!("tree/d{}/f{i}", i % 5);
            let same = same_file(&f.src.path().join(&rel), &f.dst.path().join(&rel));
            assert!(same, "{rel} after connection {cut} was cut");
        }
        let big = same_file(&root.join("d0/big"), &f.dst.path().join("tree/d0/big"));
        assert!(big, "d0/big after connection {cut} was cut");
        assert_eq!(out.files.len(), 201);
    }
}

/// A job's first connection, by hand: a one-file job that says it will take two
/// connections; the welcome's session.
async fn striped_job(
    f: &Fixture,
    fp: hare_transfer::identity::Fingerprint,
    token: Option<&str>,
) -> (hostile::Hostile, String) {
    let mut h = hostile::connect(f.recv.addr, fp, None).await;
    let mut hello = hostile::files_hello(&[("x.bin", 1 << 20)], false, token);
    if let ToReceiver::Hello { striping, .. } = &mut hello {
        *striping = Some(Striping {
            connections: 2,
            chunk: 1 << 16,
            moves_bulk: false,
            tail_pieces: false,
        });
    }
    match h.hello(&hello).await {
        Some(ToSender::Welcome {
            session: Some(s), ..
        }) => (h, s),
        other => panic!("no welcome with a session: {other:?}"),
    }
}

/// Try to join `session` as `who`; the receiver's answer.
async fn join_as(
    f: &Fixture,
    fp: hare_transfer::identity::Fingerprint,
    who: &hare_transfer::identity::Identity,
    (session, token): (&str, Option<&str>),
) -> Option<ToSender> {
    join_kept(f, fp, who, (session, token)).await.1
}

/// Join `session` as `who` as connection 1: the connection, and the receiver's answer.
async fn join_kept(
    f: &Fixture,
    fp: hare_transfer::identity::Fingerprint,
    who: &hare_transfer::identity::Identity,
    (session, token): (&str, Option<&str>),
) -> (hostile::Hostile, Option<ToSender>) {
    let mut j = hostile::connect_as(f.recv.addr, fp, None, who, [127, 0, 0, 1].into()).await;
    let answer = j
        .hello(&ToReceiver::Join {
            session: session.to_owned(),
            connection: 1,
            token: token.map(str::to_owned),
        })
        .await;
    (j, answer)
}

/// The next verdict on the control stream of `h`, past interval messages.
async fn verdict_on(h: &mut hostile::Hostile) -> Option<ToSender> {
    loop {
        match h.hear().await {
            Some(ToSender::Interval { .. }) => continue,
            other => return other,
        }
    }
}

#[test]
fn after_a_take_over_a_repeated_digest_cannot_change_the_verdict() {
    let f = fixture(None);
    let fp = f.recv.fingerprint.expect("quic");
    let me = hare_transfer::testkit::test_sender();
    let data = bytes(3, 1 << 20);
    let digest = blake3::hash(&data).to_hex().to_string();
    rt().block_on(async {
        let (_first, session) = striped_job(&f, fp, None).await;
        let (mut j, answer) = join_kept(&f, fp, &me, (&session, None)).await;
        assert!(matches!(answer, Some(ToSender::Joined { connection: 1 })));
        // The job's control channel moves onto connection 1's stream, though connection 0
        // still lives: the receiver reads the job's messages there from now on.
        j.say(&ToReceiver::TakeOver { connection: 1 }).await;
        j.file_data(0, 0, &data, true).await;
        j.say(&ToReceiver::FileDone {
            index: 0,
            blake3: digest,
        })
        .await;
        // Said "again" with other bytes' digest: the first digest stands.
        j.say(&ToReceiver::FileDone {
            index: 0,
            blake3: blake3::hash(b"other bytes").to_hex().to_string(),
        })
        .await;
        match verdict_on(&mut j).await {
            Some(ToSender::FileResult { index: 0, ok, .. }) => assert!(ok),
            other => panic!("expected the verdict on the new stream, got {other:?}"),
        }
        assert!(matches!(
            verdict_on(&mut j).await,
            Some(ToSender::Done { .. })
        ));
    });
    let got = std::fs::read(f.dst.path().join("x.bin")).expect("x.bin");
    assert!(
        got == data,
        "x.bin holds the bytes whose digest was said first"
    );
}

fn refused(answer: Option<ToSender>, why: &str) {
    match answer {
        Some(ToSender::Refuse { reason }) => assert!(reason.contains(why), "{reason}"),
        other => panic!("expected a refusal ({why}), got {other:?}"),
    }
}

#[test]
fn a_bulk_stream_continued_where_it_was_not_lost_ends_the_job() {
    let f = fixture(None);
    let fp = f.recv.fingerprint.expect("quic");
    rt().block_on(async {
        let mut h = hostile::connect(f.recv.addr, fp, None).await;
        let mut hello = hostile::files_hello(&[], false, None);
        if let ToReceiver::Hello { job, striping, .. } = &mut hello {
            *job = hare_transfer::protocol::Job::Bulk {
                bytes: Some(1 << 20),
                seconds: None,
                streams: 2,
            };
            *striping = Some(Striping {
                connections: 2,
                chunk: 1 << 20,
                moves_bulk: true,
                tail_pieces: false,
            });
        }
        assert!(matches!(
            h.hello(&hello).await,
            Some(ToSender::Welcome { .. })
        ));
        // A continuation of stream 0 that no `bulk-lost` asked for.
        let mut s = h.conn.open_uni().await.expect("uni");
        let header = hare_transfer::protocol::DataHeader {
            kind: hare_transfer::protocol::DataKind::Bulk,
            index: 0,
            offset: 4096,
            session: [0; 12],
            attempt: 1,
        };
        s.write_all(&header.encode()).await.expect("header");
        s.write_all(&[0u8; 4096]).await.expect("data");
        let (_, why) = h
            .closed_within(Duration::from_secs(10))
            .await
            .expect("closed");
        assert!(why.contains("where it was not lost"), "{why}");
    });
}

#[test]
fn only_the_jobs_own_sender_joins_it_and_only_as_often_as_it_said() {
    let f = fixture(Some("job-token"));
    let fp = f.recv.fingerprint.expect("quic");
    let me = hare_transfer::testkit::test_sender();
    let stranger = hare_transfer::identity::ephemeral(&[]).expect("identity");
    rt().block_on(async {
        let (_job, session) = striped_job(&f, fp, Some("job-token")).await;
        let tok = Some("job-token");
        refused(
            join_as(&f, fp, &stranger, (&session, tok)).await,
            "another sender",
        );
        refused(
            join_as(&f, fp, &me, (&session, Some("guess"))).await,
            "token",
        );
        refused(
            join_as(&f, fp, &me, ("00112233445566778899aabb", tok)).await,
            "no such job",
        );
        assert!(matches!(
            join_as(&f, fp, &me, (&session, tok)).await,
            Some(ToSender::Joined { connection: 1 })
        ));
        // Two connections were announced: a third is one too many.
        refused(
            join_as(&f, fp, &me, (&session, tok)).await,
            "all the connections",
        );
        // A take-over moves a job's control channel only on a stream that joined the job.
        let mut h =
            hostile::connect_as(f.recv.addr, fp, None, &stranger, [127, 0, 0, 1].into()).await;
        refused(
            h.hello(&ToReceiver::TakeOver { connection: 1 }).await,
            "the first message must be a hello",
        );
    });
    // Nothing of the job reached the directory.
    only(f.dst.path(), &[]);
}

#[test]
fn an_interrupted_job_of_ranges_reruns_only_what_is_missing() {
    let f = fixture(None);
    let p = f.src.path().join("big.bin");
    big_file(&p, 64);
    let size = 64u64 << 20;
    let with_chunk = |o: SendOptions| SendOptions {
        chunk: 1 << 20,
        ..o
    };
    // One connection goes silent early: its range holds the in-order frontier back while
    // the others deliver whole ranges beyond it; then the user stops the run.
    let relay = relay::Relay::start(f.recv.addr, Some((1, 2 << 20)));
    let mut o = with_chunk(job(relay.addr, &f, vec![p.clone()], 4));
    // The relay may drop the closing packets (it runs unoptimised, beside four connections
    // at full speed): the receiver then ends the job at the idle timeout, kept short here.
    o.liveness.idle_timeout = Duration::from_secs(2);
    o.liveness.keep_alive = Duration::from_millis(500);
    let cut = send_until_part_holds(o, (f.dst.path().into(), "big.bin"), 32 << 20)
        .expect("an interrupted run still reports");
    assert!(cut.interrupted);
    let again = rerun(|| with_chunk(job(f.recv.addr, &f, vec![p.clone()], 4)));
    let resumed = again.files[0].resumed_from;
    let moved = again.run.summary.as_ref().map_or(0, |s| s.bytes);
    eprintln!("rerun: prefix {resumed}, moved {moved} of {size}");
    // Whole ranges beyond the in-order prefix were kept and not sent again.
    assert!(
        moved + (4 << 20) <= size - resumed,
        "moved {moved} of the {} beyond the prefix {resumed}",
        size - resumed
    );
    assert!(same_file(&p, &f.dst.path().join("big.bin")));
    only(f.dst.path(), &["big.bin"]);
}

#[test]
fn connections_that_cannot_join_leave_the_job_to_the_others() {
    // One place for connections still in their handshake: of five joins at once, some are
    // turned away before it.
    let f = fixture_with(|o| o.limits.max_preauth_per_peer = 1);
    let p = f.src.path().join("big.bin");
    big_file(&p, 32);
    let out = run(job(f.recv.addr, &f, vec![p.clone()], 6));
    let n = shares(&out).len();
    assert!((1..6).contains(&n), "{n} connections: none was turned away");
    assert!(same_file(&p, &f.dst.path().join("big.bin")));
}

#[test]
fn a_file_the_receiver_gives_up_fails_with_its_reason_not_the_connections() {
    // The receiver holds at most 1 MiB out of order: ranges over four connections overrun it
    // and the receiver gives the file up, stopping its streams.
    let f = fixture_with(|o| o.limits.max_reorder_bytes = 1 << 20);
    let p = f.src.path().join("big.bin");
    big_file(&p, 64);
    let mut o = job(f.recv.addr, &f, vec![p], 4);
    o.chunk = 1 << 20;
    let out = rt().block_on(send(o, Stop::never())).expect("the job runs");
    let failed: Vec<_> = out.failures().collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    let why = failed[0].reason.clone().unwrap_or_default();
    assert!(why.contains("out of order"), "{why}");
}
