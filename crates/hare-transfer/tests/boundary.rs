//! The receiver's trust boundary against a sender that holds a valid credential: it can make
//! its own job fail, never make another job's verified file wrong, reach anything outside the
//! receive directory, learn whether a path exists there, or get past the receiver's limits.
//! Each test keeps a canary tree outside the receive directory and checks it is unchanged.

mod hostile;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use hare_transfer::protocol::{Job, LinkEntry, ToReceiver, ToSender};
use hare_transfer::receiver::Limits;
use hare_transfer::testkit::{
    in_progress, part_files, recv_options, runtime as rt, seeded_bytes as bytes, send_options,
    test_sender, test_sender_part, BackgroundReceiver,
};
use hare_transfer::{send, SendJob, Stop};
use hostile::{connect, connect_as, files_hello, resume_hello, wait_for};

/// Files outside the receive directory, with their digests and modification times.
struct Canary {
    dir: tempfile::TempDir,
    state: BTreeMap<PathBuf, (blake3::Hash, SystemTime)>,
}

impl Canary {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("canary");
        let d = dir.path();
        std::fs::write(d.join("passwd"), b"root:x:0:0").expect("w");
        std::fs::write(d.join("victim"), bytes(9, 50_000)).expect("w");
        // What a part file of `victim` for the test sender would be called there.
        let part = test_sender_part(d, "victim");
        std::fs::write(part, bytes(10, 30_000)).expect("w");
        std::fs::create_dir(d.join("sub")).expect("mkdir");
        std::fs::write(d.join("sub/f"), b"f").expect("w");
        let mut c = Self {
            dir,
            state: BTreeMap::new(),
        };
        c.state = c.read();
        c
    }

    fn read(&self) -> BTreeMap<PathBuf, (blake3::Hash, SystemTime)> {
        let mut out = BTreeMap::new();
        let mut todo = vec![self.dir.path().to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).expect("ls").flatten() {
                let m = e.metadata().expect("stat");
                if m.is_dir() {
                    todo.push(e.path());
                }
                let data = if m.is_file() {
                    std::fs::read(e.path()).expect("r")
                } else {
                    Vec::new()
                };
                let t = m.modified().expect("mtime");
                out.insert(e.path(), (blake3::hash(&data), t));
            }
        }
        out
    }

    fn unchanged(&self) {
        assert_eq!(self.read(), self.state, "the canary tree outside changed");
    }
}

fn receiver(dst: &Path, limits: Limits) -> (tempfile::TempDir, BackgroundReceiver) {
    let id = tempfile::tempdir().expect("tempdir");
    let mut o = recv_options(id.path().into(), Some(dst.into()));
    o.limits = limits;
    o.allow.push(other_sender().fingerprint);
    (id, BackgroundReceiver::start(o).expect("receiver"))
}

/// A second authorised sender.
fn other_sender() -> std::sync::Arc<hare_transfer::identity::Identity> {
    static ID: std::sync::OnceLock<std::sync::Arc<hare_transfer::identity::Identity>> =
        std::sync::OnceLock::new();
    ID.get_or_init(|| std::sync::Arc::new(hare_transfer::identity::ephemeral(&[]).expect("id")))
        .clone()
}

/// Ask the receiver to take file 0 again at `size` bytes, and return its verdict.
async fn retry_at(h: &mut hostile::Hostile, size: u64) -> (bool, String) {
    h.say(&ToReceiver::FileRetry {
        index: 0,
        reason: "changed while being sent".into(),
        size,
        mode: None,
        mtime_ns: None,
        attempt: Some(1),
    })
    .await;
    verdict(h).await
}

fn refusal(a: &Option<ToSender>) -> String {
    match a {
        Some(ToSender::Refuse { reason }) => reason.clone(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn plans(a: &Option<ToSender>) -> Vec<hare_transfer::protocol::FilePlan> {
    match a {
        Some(ToSender::Welcome { files, .. }) => files.clone(),
        other => panic!("expected a welcome, got {other:?}"),
    }
}

/// What the receiver keeps of file `index` to resume from: its plan's bytes and digest (a
/// file sent whole from its start has no plan).
fn kept_of(plans: &[hare_transfer::protocol::FilePlan], index: u32) -> (u64, Option<String>) {
    plans
        .iter()
        .find(|p| p.index == index)
        .map_or((0, None), |p| (p.have, p.have_blake3.clone()))
}

/// The receiver's verdict on one file, skipping interval messages.
async fn verdict(h: &mut hostile::Hostile) -> (bool, String) {
    loop {
        match h.hear().await {
            Some(ToSender::FileResult { ok, reason, .. }) => {
                return (ok, reason.unwrap_or_default())
            }
            Some(ToSender::Interval { .. }) => continue,
            other => panic!("expected a verdict, got {other:?}"),
        }
    }
}

#[test]
fn a_resume_that_aliases_a_live_part_file_cannot_change_the_verified_file() {
    let canary = Canary::new();
    let (src, dst) = (
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
    );
    let (_id, r) = receiver(dst.path(), Limits::default());
    let data = bytes(1, 6_000_000);
    let p = src.path().join("big.bin");
    std::fs::write(&p, &data).expect("w");
    let job = SendJob::Files {
        paths: vec![p],
        resume: false,
        force: false,
        parallel: 1,
    };
    let mut honest = send_options(r.addr, r.trust(), job);
    honest.rate = Some(24_000_000);
    let d = dst.path().to_path_buf();
    let fp = r.fingerprint.expect("quic");
    let attack = async {
        wait_for("the honest transfer", || {
            !in_progress(&d, "big.bin").is_empty()
        })
        .await;
        let live = in_progress(&d, "big.bin").remove(0).0;
        let tag = live
            .strip_prefix(".big.bin.")
            .and_then(|n| n.strip_suffix(".hare-part"))
            .expect("a part name")
            .to_owned();
        // The alias of last week's attack: the name whose resume file was the live one.
        let alias = format!("big.bin.{tag}");
        let mut h = connect(r.addr, fp, None).await;
        let a = h.hello(&resume_hello(&[(&alias, 6_000_000)])).await;
        assert_eq!(kept_of(&plans(&a), 0).0, 0, "the alias reaches no partial");
        let mut s = h.file_data(0, 0, &vec![0xEE; 1 << 20], false).await;
        s.write_all(&[0; 4096]).await.expect("more");
        tokio::time::sleep(Duration::from_millis(300)).await;
        h.conn.close(2u32.into(), b"bye");
        // Names in the receiver's own namespace are refused outright.
        for name in [live.clone(), format!("sub/{live}")] {
            let mut h = connect(r.addr, fp, None).await;
            let a = h.hello(&resume_hello(&[(&name, 10)])).await;
            assert!(refusal(&a).contains("temporary files"), "{name}");
        }
    };
    let (outcome, ()) = rt().block_on(async { tokio::join!(send(honest, Stop::never()), attack) });
    let outcome = outcome.expect("honest sender");
    assert!(outcome.files.iter().all(|f| f.ok), "{:?}", outcome.files);
    assert_eq!(std::fs::read(dst.path().join("big.bin")).expect("r"), data);
    assert!(part_files(dst.path(), "big.bin").is_empty());
    canary.unchanged();
}

fn links_hello(links: Vec<LinkEntry>, dirs: Vec<String>) -> ToReceiver {
    let mut h = files_hello(&[], false, None);
    if let ToReceiver::Hello {
        job: Job::Files {
            links: l, dirs: d, ..
        },
        ..
    } = &mut h
    {
        *l = links;
        *d = dirs;
    }
    h
}

#[test]
fn a_link_made_by_one_job_is_no_way_out_for_the_next() {
    let canary = Canary::new();
    let dst = tempfile::tempdir().expect("t");
    let (_id, r) = receiver(dst.path(), Limits::default());
    let fp = r.fingerprint.expect("quic");
    let outside = canary.dir.path().to_string_lossy().into_owned();
    rt().block_on(async {
        let mut h = connect(r.addr, fp, None).await;
        let link = LinkEntry {
            name: "lnk".into(),
            target: outside.clone(),
            mtime_ns: None,
        };
        let a = h.hello(&links_hello(vec![link], Vec::new())).await;
        match &a {
            Some(ToSender::Welcome { links, .. }) => assert_eq!(links[0].reason, None),
            other => panic!("{other:?}"),
        }
        // An existing and a missing path behind it get the same answer: no oracle.
        let mut answers = Vec::new();
        for (name, resume) in [
            ("lnk/passwd", false),
            ("lnk/no-such-file", false),
            ("lnk/victim", true),
            ("lnk/sub/f", true),
        ] {
            let mut h = connect(r.addr, fp, None).await;
            let hello = if resume {
                resume_hello(&[(name, 0)])
            } else {
                files_hello(&[(name, 5)], true, None)
            };
            let reason = refusal(&h.hello(&hello).await);
            answers.push(reason.replacen(name, "NAME", 1));
        }
        assert!(
            answers
                .iter()
                .all(|a| a == "NAME: lnk is a symbolic link; not followed"),
            "{answers:?}"
        );
        // Directories and links are never made through it either.
        let mut h = connect(r.addr, fp, None).await;
        let reason = refusal(
            &h.hello(&links_hello(Vec::new(), vec!["lnk/new".into()]))
                .await,
        );
        assert_eq!(reason, "lnk/new: lnk is a symbolic link; not followed");
        let mut h = connect(r.addr, fp, None).await;
        let inner = LinkEntry {
            name: "lnk/planted".into(),
            target: "x".into(),
            mtime_ns: None,
        };
        let reason = refusal(&h.hello(&links_hello(vec![inner], Vec::new())).await);
        assert_eq!(reason, "lnk/planted: lnk is a symbolic link; not followed");
    });
    canary.unchanged();
}

#[test]
fn a_file_sent_again_passes_the_same_limits_as_its_hello() {
    let canary = Canary::new();
    let dst = tempfile::tempdir().expect("t");
    let limits = Limits {
        max_job_bytes: 10 << 20,
        ..Limits::default()
    };
    let (_id, r) = receiver(dst.path(), limits);
    let fp = r.fingerprint.expect("quic");
    rt().block_on(async {
        for size in [100 << 20, (1u64 << 63) - 1] {
            let mut h = connect(r.addr, fp, None).await;
            let a = h
                .hello(&files_hello(&[("r.bin", 1 << 20)], false, None))
                .await;
            plans(&a);
            let (ok, reason) = retry_at(&mut h, size).await;
            assert!(!ok);
            assert!(
                reason.contains("over this receiver's limit of 10485760 bytes (--max-size)"),
                "{reason}"
            );
            // Data for it is no longer taken.
            let _s = h.file_data(0, 0, &[1; 4096], true).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    // A retry within --max-size but beyond the free space is refused for that.
    let (_id2, r) = receiver(dst.path(), Limits::default());
    let fp = r.fingerprint.expect("quic");
    rt().block_on(async {
        let mut h = connect(r.addr, fp, None).await;
        let a = h
            .hello(&files_hello(&[("s.bin", 1 << 20)], false, None))
            .await;
        plans(&a);
        let (ok, reason) = retry_at(&mut h, 1 << 40).await;
        assert!(!ok);
        assert!(
            reason.contains("s.bin: not enough free space: 1.00 TiB needed"),
            "{reason}"
        );
    });
    let stored: u64 = std::fs::read_dir(dst.path())
        .expect("ls")
        .flatten()
        .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
        .sum();
    assert!(stored < 1 << 20, "{stored} bytes stored");
    canary.unchanged();
}

#[test]
fn another_senders_resume_learns_nothing_and_touches_nothing() {
    let dst = tempfile::tempdir().expect("t");
    let (_id, r) = receiver(dst.path(), Limits::default());
    let fp = r.fingerprint.expect("quic");
    let prefix = bytes(3, 3 << 19);
    let part = test_sender_part(dst.path(), "doc.bin");
    let d = dst.path().to_path_buf();
    rt().block_on(async {
        // The first sender leaves 1 MiB of doc.bin behind.
        let mut a = connect(r.addr, fp, None).await;
        plans(
            &a.hello(&files_hello(&[("doc.bin", 4 << 20)], false, None))
                .await,
        );
        let _s = a.file_data(0, 0, &prefix, false).await;
        wait_for("the prefix", || {
            in_progress(&d, "doc.bin").first().is_some_and(|f| f.1 > 0)
        })
        .await;
        a.conn.close(2u32.into(), b"bye");
        wait_for("the kept partial", || {
            part.exists() && in_progress(&d, "doc.bin").is_empty()
        })
        .await;
        let kept = std::fs::read(&part).expect("kept");
        assert!(!kept.is_empty() && prefix.starts_with(&kept));
        // Another sender's resume of the same name: a fresh start, nothing told.
        let other = other_sender();
        let mut b = connect_as(r.addr, fp, None, &other, [127, 0, 0, 1].into()).await;
        let plan = plans(&b.hello(&resume_hello(&[("doc.bin", 4 << 20)])).await);
        assert_eq!(kept_of(&plan, 0), (0, None));
        b.conn.close(2u32.into(), b"bye");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(std::fs::read(&part).expect("still kept"), kept);
        // The owner's resume finds it.
        let mut a = connect(r.addr, fp, None).await;
        let plan = plans(&a.hello(&resume_hello(&[("doc.bin", 4 << 20)])).await);
        assert_eq!(plan[0].have, kept.len() as u64);
        assert_eq!(
            plan[0].have_blake3.as_deref(),
            Some(blake3::hash(&prefix[..kept.len()]).to_hex().as_str())
        );
    });
    assert!(!dst.path().join("doc.bin").exists());
    let _ = test_sender();
}

#[test]
fn a_job_that_trickles_loses_its_slot_naming_the_rule() {
    let dst = tempfile::tempdir().expect("t");
    let limits = Limits {
        min_progress: 4096,
        min_progress_window: Duration::from_secs(2),
        ..Limits::default()
    };
    let (_id, r) = receiver(dst.path(), limits);
    let fp = r.fingerprint.expect("quic");
    rt().block_on(async {
        let mut h = connect(r.addr, fp, None).await;
        plans(
            &h.hello(&files_hello(&[("slow.bin", 1 << 20)], false, None))
                .await,
        );
        let mut s = h.file_data(0, 0, &[7; 10], false).await;
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_millis(700)).await;
            let _ = s.write_all(&[7]).await;
        }
        let (code, reason) = h
            .closed_within(Duration::from_secs(10))
            .await
            .expect("closed");
        assert_eq!(code, 5, "{reason}");
        assert!(
            reason.contains("below this receiver's minimum of 4.00 KiB per 2 s (--min-rate)"),
            "{reason}"
        );
    });
}

#[test]
fn a_flood_from_a_few_addresses_leaves_room_for_another() {
    let dst = tempfile::tempdir().expect("t");
    let limits = Limits {
        max_preauth: 8,
        max_preauth_per_peer: 4,
        ..Limits::default()
    };
    let (_id, r) = receiver(dst.path(), limits);
    let fp = r.fingerprint.expect("quic");
    let me = test_sender();
    rt().block_on(async {
        let mut flood = Vec::new();
        for ip in [[127, 0, 0, 2], [127, 0, 0, 3]] {
            for _ in 0..4 {
                flood.push(connect_as(r.addr, fp, None, &me, ip.into()).await);
            }
        }
        let t0 = Instant::now();
        let mut h = connect_as(r.addr, fp, None, &me, [127, 0, 0, 4].into()).await;
        plans(&h.hello(&files_hello(&[("ok.bin", 3)], false, None)).await);
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        let mut told = 0;
        for f in &flood {
            if let Some((code, reason)) = f.closed_within(Duration::from_millis(200)).await {
                assert_eq!(code, 4, "{reason}");
                assert!(reason.contains("crowded"), "{reason}");
                told += 1;
            }
        }
        assert_eq!(told, 1, "one flooder gave its place");
    });
}

#[test]
fn a_control_frame_cut_short_is_a_protocol_error() {
    let dst = tempfile::tempdir().expect("t");
    let (_id, r) = receiver(dst.path(), Limits::default());
    let fp = r.fingerprint.expect("quic");
    rt().block_on(async {
        // Before the hello: a length, part of a body, then the stream ends; after the
        // welcome: half a length.
        for (welcomed, cut) in [(false, &[0u8, 0, 0, 50, b'{'][..]), (true, &[0u8, 0][..])] {
            let mut h = connect(r.addr, fp, None).await;
            if welcomed {
                plans(&h.hello(&files_hello(&[("c.bin", 3)], false, None)).await);
            }
            h.send.write_all(cut).await.expect("w");
            h.send.finish().expect("finish");
            let (code, reason) = h
                .closed_within(Duration::from_secs(10))
                .await
                .expect("closed");
            assert_eq!(code, 3, "{reason}");
            assert!(reason.contains("ended inside a frame"), "{reason}");
        }
    });
}
