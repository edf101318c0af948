//! Many small files in one job (made durable in batches), and sparse files written sparse.

mod hostile;

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use hare_transfer::protocol::ToSender;
use hare_transfer::testkit::{recv_options, runtime as rt, send_options, BackgroundReceiver};
use hare_transfer::{send, SendJob, Stop};

fn receiver(dst: &std::path::Path, id: &std::path::Path) -> BackgroundReceiver {
    BackgroundReceiver::start(recv_options(id.into(), Some(dst.into()))).expect("receiver")
}

fn job(paths: Vec<std::path::PathBuf>) -> SendJob {
    SendJob::Files {
        paths,
        resume: false,
        force: false,
        parallel: 4,
    }
}

#[test]
fn five_thousand_small_files_arrive_byte_identical() {
    let (id, src, dst) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    let root = src.path().join("many");
    let mut total = 0u64;
    for i in 0..5000usize {
        let dir = root.join(format!("d{:02}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        // 0 to 2,047 bytes, a different content for each file.
        let data: Vec<u8> = (0..(i * 37) % 2048).map(|j| (i ^ j) as u8).collect();
        total += data.len() as u64;
        std::fs::write(dir.join(format!("f{i}")), data).expect("write");
    }
    let recv = receiver(dst.path(), id.path());
    let outcome = rt()
        .block_on(send(
            send_options(recv.addr, recv.trust(), job(vec![root.clone()])),
            Stop::never(),
        ))
        .expect("send");
    assert_eq!(outcome.files.len(), 5000);
    assert_eq!(outcome.failures().count(), 0);
    assert_eq!(outcome.run.summary.map(|s| s.bytes), Some(total));
    for i in 0..5000usize {
        let rel = format!("many/d{:02}/f{i}", i / 100);
        assert_eq!(
            std::fs::read(dst.path().join(&rel)).expect("received"),
            std::fs::read(src.path().join(&rel)).expect("source"),
            "{rel}"
        );
    }
    // Nothing but the tree: no temporary or partial files left.
    let entries = walk_count(&dst.path().join("many"));
    assert_eq!(entries, 5000 + 50);
}

fn walk_count(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| {
            let e = e.expect("entry");
            1 + if e.file_type().expect("type").is_dir() {
                walk_count(&e.path())
            } else {
                0
            }
        })
        .sum()
}

#[test]
fn a_sparse_file_arrives_sparse_with_the_same_bytes() {
    let (id, src, dst) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    // 64 MiB with 4 KiB of data at 1 MiB and 8 KiB at the end; the rest is holes.
    let p = src.path().join("sparse.img");
    let f = std::fs::File::create(&p).expect("create");
    let size = 64u64 << 20;
    f.set_len(size).expect("set_len");
    use std::os::unix::fs::FileExt;
    f.write_all_at(&[0xab; 4096], 1 << 20).expect("write");
    f.write_all_at(&[0xcd; 8192], size - 8192).expect("write");
    drop(f);
    // And a file whose last bytes are a hole.
    let q = src.path().join("tail-hole");
    let g = std::fs::File::create(&q).expect("create");
    g.write_all_at(b"head", 0).expect("write");
    g.set_len(1 << 20).expect("set_len");
    drop(g);
    let recv = receiver(dst.path(), id.path());
    let outcome = rt()
        .block_on(send(
            send_options(recv.addr, recv.trust(), job(vec![p.clone(), q.clone()])),
            Stop::never(),
        ))
        .expect("send");
    assert_eq!(outcome.failures().count(), 0, "{:?}", outcome.files);
    for (name, src_path) in [("sparse.img", &p), ("tail-hole", &q)] {
        let got = dst.path().join(name);
        let m = std::fs::metadata(&got).expect("metadata");
        let want = std::fs::metadata(src_path).expect("metadata");
        assert_eq!(m.len(), want.len(), "{name}");
        assert_eq!(
            blake3::hash(&std::fs::read(&got).expect("read")),
            blake3::hash(&std::fs::read(src_path).expect("read")),
            "{name}"
        );
        // Allocated 512-byte blocks: the data blocks (and file system rounding), far below
        // the size.
        let allocated = m.blocks() * 512;
        assert!(
            allocated <= 1 << 20,
            "{name}: {allocated} bytes allocated for {} bytes",
            m.len()
        );
    }
    let allocated = std::fs::metadata(dst.path().join("sparse.img"))
        .expect("m")
        .blocks()
        * 512;
    assert!(
        allocated >= 12 << 10,
        "the data blocks are there: {allocated}"
    );
}

/// On a long path a data stream's credit comes back a round trip after its last byte, so the
/// streams a job may hold open bound how many small files travel per round trip: a job of
/// many new files may open 512 at once (each left unfinished here, so no credit returns), and
/// its welcome lists no plan for files sent whole from byte 0.
#[test]
fn a_job_of_many_new_files_gets_512_streams_and_a_welcome_without_plans() {
    let (id, dst) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    let recv = receiver(dst.path(), id.path());
    let fp = recv.fingerprint.expect("quic");
    let names: Vec<String> = (0..600).map(|i| format!("f{i}")).collect();
    let files: Vec<(&str, u64)> = names.iter().map(|n| (n.as_str(), 4096)).collect();
    rt().block_on(async {
        let mut h = hostile::connect(recv.addr, fp, None).await;
        match h.hello(&hostile::files_hello(&files, false, None)).await {
            Some(ToSender::Welcome { files, .. }) => assert!(files.is_empty(), "{files:?}"),
            other => panic!("expected a welcome, got {other:?}"),
        }
        let mut open = Vec::new();
        for i in 0..512u32 {
            let opened = tokio::time::timeout(
                Duration::from_secs(10),
                h.file_data(i, 0, &[7u8; 100], false),
            )
            .await;
            open.push(opened.unwrap_or_else(|_| panic!("stream {i} could not be opened")));
        }
        // The 513th waits for a credit that none of the open streams gives back.
        let more = tokio::time::timeout(Duration::from_millis(500), h.conn.open_uni()).await;
        assert!(more.is_err(), "a 513th stream opened");
        drop(open);
    });
}
