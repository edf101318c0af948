//! Reruns finish the job, as rsync's do: files the receiver has are skipped by its quick check
//! (or `--checksum`, `--ignore-existing`, `--update`), changed ones replace what is there,
//! partial ones resume; and a file that grows while it is read is delivered at its listed
//! size.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hare_transfer::testkit::{
    in_progress, recv_options, runtime as rt, seeded_bytes as bytes, send_options,
    send_until_part_holds, BackgroundReceiver,
};
use hare_transfer::SkipRule;
use hare_transfer::{send, SendJob, SendOptions, SendOutcome, Stop};

struct Fixture {
    _id: tempfile::TempDir,
    src: tempfile::TempDir,
    dst: tempfile::TempDir,
    recv: BackgroundReceiver,
}

fn fixture() -> Fixture {
    let id = tempfile::tempdir().expect("tempdir");
    let (src, dst) = (
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
    );
    let recv = BackgroundReceiver::start(recv_options(id.path().into(), Some(dst.path().into())))
        .expect("receiver");
    Fixture {
        _id: id,
        src,
        dst,
        recv,
    }
}

impl Fixture {
    /// A rerunnable job of `paths`, as hare-send sends it by default (resume, quick check).
    fn job(&self, paths: Vec<PathBuf>, skip: Option<SkipRule>) -> SendOptions {
        let job = SendJob::Files {
            paths,
            resume: true,
            force: false,
            parallel: 4,
        };
        let mut o = send_options(self.recv.addr, self.recv.trust(), job);
        o.skip = skip;
        o
    }

    fn run(&self, o: SendOptions) -> SendOutcome {
        rt().block_on(send(o, Stop::never())).expect("send")
    }
}

/// A tree of 20 files, 5.2 MB in all.
fn tree(root: &Path) -> u64 {
    let mut total = 0;
    for i in 0..20u64 {
        let dir = root.join(format!("d{}", i % 3));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let data = bytes(i, 10_000 + 26_000 * i as usize);
        total += data.len() as u64;
        std::fs::write(dir.join(format!("f{i}.bin")), data).expect("w");
    }
    total
}

fn sent(o: &SendOutcome) -> u64 {
    o.run.summary.as_ref().map_or(0, |s| s.bytes)
}

fn same_tree(a: &Path, b: &Path) {
    for e in std::fs::read_dir(a).expect("ls").flatten() {
        let other = b.join(e.file_name());
        if e.path().is_dir() {
            same_tree(&e.path(), &other);
        } else {
            assert_eq!(
                std::fs::read(e.path()).ok(),
                std::fs::read(&other).ok(),
                "{other:?}"
            );
        }
    }
}

#[test]
fn a_rerun_of_a_complete_tree_moves_almost_nothing() {
    let f = fixture();
    let root = f.src.path().join("tree");
    let total = tree(&root);
    let first = f.run(f.job(vec![root.clone()], Some(SkipRule::Quick)));
    assert!(first.files.iter().all(|r| r.ok && r.skipped.is_none()));
    assert_eq!(sent(&first), total);
    let again = f.run(f.job(vec![root.clone()], Some(SkipRule::Quick)));
    assert!(
        again
            .files
            .iter()
            .all(|r| r.ok && r.skipped.as_deref() == Some("up to date")),
        "{:?}",
        again.files
    );
    assert!(
        sent(&again) * 100 < total,
        "{} of {total} bytes",
        sent(&again)
    );
    same_tree(&root, &f.dst.path().join("tree"));
}

#[test]
fn an_interrupted_rerun_moves_only_what_is_missing() {
    let f = fixture();
    let root = f.src.path().join("t");
    std::fs::create_dir(&root).expect("mkdir");
    let small = bytes(1, 100_000);
    std::fs::write(root.join("a-small.bin"), &small).expect("w");
    let big = bytes(2, 3_000_000);
    std::fs::write(root.join("big.bin"), &big).expect("w");
    let mut o = f.job(vec![root.clone()], Some(SkipRule::Quick));
    o.rate = Some(8_000_000);
    let cut = send_until_part_holds(o, (f.dst.path().join("t"), "big.bin"), 1_000_000)
        .expect("an interrupted run still reports");
    assert!(cut.interrupted);
    assert!(
        f.dst.path().join("t/a-small.bin").exists(),
        "the small file landed"
    );
    let again = f.run(f.job(vec![root.clone()], Some(SkipRule::Quick)));
    let by = |n: &str| again.files.iter().find(|r| r.name == n).cloned().expect(n);
    assert_eq!(by("t/a-small.bin").skipped.as_deref(), Some("up to date"));
    let resumed = by("t/big.bin").resumed_from;
    assert!(resumed >= 1_000_000, "resumed from {resumed}");
    assert_eq!(sent(&again), big.len() as u64 - resumed);
    same_tree(&root, &f.dst.path().join("t"));
}

#[test]
fn each_rule_skips_what_it_says_and_replaces_the_rest() {
    let f = fixture();
    let (a, b) = (f.src.path().join("a"), f.src.path().join("b"));
    std::fs::write(&a, bytes(3, 5000)).expect("w");
    std::fs::write(&b, bytes(4, 5000)).expect("w");
    f.run(f.job(vec![a.clone(), b.clone()], Some(SkipRule::Quick)));
    let (ra, rb) = (f.dst.path().join("a"), f.dst.path().join("b"));
    let set_mtime = |p: &Path, secs: u64| {
        let t = std::time::UNIX_EPOCH + Duration::from_secs(secs);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(p)
            .expect("open");
        file.set_modified(t).expect("mtime");
    };
    // The receiver's `a` differs (same size, other time): the quick check replaces it.
    std::fs::write(&ra, bytes(5, 5000)).expect("w");
    let o = f.run(f.job(vec![a.clone()], Some(SkipRule::Quick)));
    assert_eq!(o.files[0].skipped, None);
    assert_eq!(std::fs::read(&ra).ok(), std::fs::read(&a).ok());
    // Same bytes, another time: the quick check sends it, --checksum does not.
    set_mtime(&ra, 1_000_000);
    let o = f.run(f.job(vec![a.clone()], Some(SkipRule::Checksum)));
    assert_eq!(
        o.files[0].skipped.as_deref(),
        Some("up to date (same BLAKE3)")
    );
    // --ignore-existing keeps whatever is there.
    std::fs::write(&rb, b"theirs").expect("w");
    let o = f.run(f.job(vec![b.clone()], Some(SkipRule::IgnoreExisting)));
    assert_eq!(
        o.files[0].skipped.as_deref(),
        Some("exists on the receiver (--ignore-existing)")
    );
    assert_eq!(std::fs::read(&rb).expect("r"), b"theirs");
    // --update keeps a newer copy and replaces an older one.
    set_mtime(&rb, 4_000_000_000);
    let o = f.run(f.job(vec![b.clone()], Some(SkipRule::Update)));
    assert_eq!(
        o.files[0].skipped.as_deref(),
        Some("newer on the receiver (--update)")
    );
    set_mtime(&rb, 1_000_000);
    let o = f.run(f.job(vec![b.clone()], Some(SkipRule::Update)));
    assert_eq!(o.files[0].skipped, None);
    assert_eq!(std::fs::read(&rb).ok(), std::fs::read(&b).ok());
}

#[test]
fn a_file_that_grows_while_read_arrives_at_its_listed_size() {
    let f = fixture();
    let p = f.src.path().join("live.log");
    let first = bytes(6, 1_500_000);
    std::fs::write(&p, &first).expect("w");
    let mut o = f.job(vec![p.clone()], Some(SkipRule::Quick));
    o.rate = Some(8_000_000);
    let watched = f.dst.path().to_path_buf();
    let appender = p.clone();
    let out = rt()
        .block_on(async move {
            tokio::spawn(async move {
                for _ in 0..600 {
                    if in_progress(&watched, "live.log").iter().any(|p| p.1 > 0) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                use std::io::Write;
                let mut w = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&appender)
                    .expect("open");
                w.write_all(&[b'x'; 4096]).expect("append");
            });
            send(o, Stop::never()).await
        })
        .expect("send");
    let r = &out.files[0];
    assert!(r.ok && r.retries == 0, "{r:?}");
    assert_eq!(r.grew_to, Some(first.len() as u64 + 4096));
    assert_eq!(
        std::fs::read(f.dst.path().join("live.log")).expect("r"),
        first
    );
}
