//! Receiver-side failure reasons reach the sender as a kind in words: disk full, permission.

use std::path::Path;
use std::process::Command;

use hare_transfer::testkit::{recv_options, runtime as rt, send_options, BackgroundReceiver};
use hare_transfer::{send, SendJob, Stop};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A tmpfs mounted at `at` with `opts`, unmounted when dropped.
struct Mount(std::path::PathBuf);

impl Mount {
    fn tmpfs(at: &Path, opts: &str) -> Self {
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", opts, "tmpfs"])
            .arg(at)
            .status()
            .expect("run mount");
        assert!(st.success(), "mount tmpfs -o {opts}");
        Self(at.to_path_buf())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Send `file` to a receiver writing into `dst`; the one file's failure reason.
fn failure_of(file: &Path, dst: &Path) -> String {
    let id = tempfile::tempdir().expect("tempdir");
    let recv = BackgroundReceiver::start(recv_options(id.path().into(), Some(dst.into())))
        .expect("receiver");
    let job = SendJob::Files {
        paths: vec![file.to_path_buf()],
        resume: false,
        force: false,
        parallel: 1,
    };
    let outcome = rt()
        .block_on(send(
            send_options(recv.addr, recv.trust(), job),
            Stop::never(),
        ))
        .expect("the job runs; the file fails");
    assert_eq!(outcome.files.len(), 1);
    assert!(!outcome.files[0].ok);
    outcome.files[0].reason.clone().unwrap_or_default()
}

#[test]
fn disk_full_on_the_receiver_is_named() {
    assert!(
        is_root(),
        "this test mounts a tmpfs: run it as root (CI does)"
    );
    let src = tempfile::tempdir().expect("tempdir");
    let f = src.path().join("data.bin");
    std::fs::write(&f, vec![7u8; 10_000]).expect("write");
    let dst = tempfile::tempdir().expect("tempdir");
    // Space to spare but no inode left: the free-space check at the hello passes, creating
    // the file then fails with ENOSPC.
    let _m = Mount::tmpfs(dst.path(), "size=1m,nr_inodes=2");
    let mut n = 0;
    while std::fs::write(dst.path().join(format!("fill{n}")), b"").is_ok() {
        n += 1;
        assert!(n < 100, "inodes do not run out");
    }
    let reason = failure_of(&f, dst.path());
    assert!(
        reason.starts_with("disk full on the receiver: "),
        "{reason}"
    );
    assert!(reason.contains("No space left on device"), "{reason}");
}

#[test]
fn permission_denied_on_the_receiver_is_named() {
    let src = tempfile::tempdir().expect("tempdir");
    let f = src.path().join("data.bin");
    std::fs::write(&f, b"abc").expect("write");
    let dst = tempfile::tempdir().expect("tempdir");
    // Root writes through mode bits: a read-only mount denies it (EROFS); others get EACCES
    // from a directory without write permission.
    let _m;
    if is_root() {
        _m = Mount::tmpfs(dst.path(), "ro,size=1m");
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dst.path(), std::fs::Permissions::from_mode(0o555))
            .expect("chmod");
    }
    let reason = failure_of(&f, dst.path());
    assert!(
        reason.starts_with("permission denied on the receiver: "),
        "{reason}"
    );
    assert!(!dst.path().join("data.bin").exists());
}
