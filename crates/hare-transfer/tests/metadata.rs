//! Metadata like rsync -a, safely: permission bits and modification times survive, nothing
//! arrives wider than its source, and set-user-ID bits never pass.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use hare_transfer::sendfiles::Keep;
use hare_transfer::testkit::{recv_options, runtime, send_options, BackgroundReceiver};
use hare_transfer::{send, SendJob, SendOutcome, Stop};

fn set(p: &Path, mode: u32, mtime_s: u64) {
    let f = std::fs::File::options().write(true).open(p).expect("open");
    f.set_times(
        std::fs::FileTimes::new().set_modified(UNIX_EPOCH + Duration::new(mtime_s, 123_456_789)),
    )
    .expect("times");
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn send_tree(src: &Path, dst: &Path, keep: Keep) -> SendOutcome {
    let id = tempfile::tempdir().expect("tempdir");
    let recv = BackgroundReceiver::start(recv_options(id.path().into(), Some(dst.into())))
        .expect("receiver");
    let job = SendJob::Files {
        paths: vec![src.to_path_buf()],
        resume: false,
        force: false,
        parallel: 4,
    };
    let mut o = send_options(recv.addr, recv.trust(), job);
    o.keep = keep;
    runtime()
        .block_on(send(o, Stop::never()))
        .expect("job runs")
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).expect("stat").permissions().mode() & 0o7777
}

#[test]
fn modes_and_mtimes_survive_and_are_never_widened() {
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let t = src.path().join("t");
    std::fs::create_dir(&t).expect("mkdir");
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let mut cases = vec![("private", 0o600), ("tool", 0o755), ("suid", 0o4755)];
    if root {
        // Only root can read a mode-000 file to send it.
        cases.push(("none", 0o000));
    }
    for (i, (name, m)) in cases.iter().enumerate() {
        std::fs::write(t.join(name), name.as_bytes()).expect("w");
        set(&t.join(name), *m, 1_600_000_000 + i as u64);
    }
    let out = send_tree(&t, dst.path(), Keep::default());
    assert!(out.files.iter().all(|f| f.ok), "{:?}", out.files);
    for (i, (name, m)) in cases.iter().enumerate() {
        let got = dst.path().join("t").join(name);
        assert_eq!(mode(&got), m & 0o777, "{name}");
        let md = std::fs::metadata(&got).expect("stat");
        assert_eq!(
            (md.mtime(), md.mtime_nsec()),
            (1_600_000_000 + i as i64, 123_456_789),
            "{name}"
        );
        assert_eq!(std::fs::read(&got).expect("read"), name.as_bytes());
    }
}

#[test]
fn no_perms_and_no_times_only_narrow() {
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let t = src.path().join("u");
    std::fs::create_dir(&t).expect("mkdir");
    std::fs::write(t.join("open"), b"o").expect("w");
    set(&t.join("open"), 0o777, 1_000_000_000);
    std::fs::write(t.join("private"), b"p").expect("w");
    set(&t.join("private"), 0o600, 1_000_000_000);
    let keep = Keep {
        perms: false,
        times: false,
        ..Keep::default()
    };
    let out = send_tree(&t, dst.path(), keep);
    assert!(out.files.iter().all(|f| f.ok), "{:?}", out.files);
    let umask = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .expect("Umask in /proc/self/status");
    assert_eq!(mode(&dst.path().join("u/open")), 0o777 & !umask);
    assert_eq!(mode(&dst.path().join("u/private")), 0o600, "never wider");
    let md = std::fs::metadata(dst.path().join("u/open")).expect("stat");
    assert!(
        md.mtime() > 1_700_000_000,
        "the time of writing, not the source's"
    );
}

#[test]
fn empty_directories_are_created() {
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let t = src.path().join("proj");
    std::fs::create_dir_all(t.join("build/cache")).expect("mkdir");
    std::fs::create_dir_all(t.join("logs")).expect("mkdir");
    std::fs::write(t.join("README"), b"r").expect("w");
    let out = send_tree(&t, dst.path(), Keep::default());
    assert!(out.files.iter().all(|f| f.ok), "{:?}", out.files);
    assert!(dst.path().join("proj/build/cache").is_dir());
    assert!(dst.path().join("proj/logs").is_dir());
    assert_eq!(
        std::fs::read(dst.path().join("proj/README")).expect("r"),
        b"r"
    );
    // A tree of nothing but empty directories is a job too.
    let only = src.path().join("skeleton");
    std::fs::create_dir_all(only.join("a/b")).expect("mkdir");
    let out = send_tree(&only, dst.path(), Keep::default());
    assert!(out.files.is_empty(), "{:?}", out.files);
    assert!(dst.path().join("skeleton/a/b").is_dir());
}
