//! `hare-send SRC... host:DEST` over a real ssh: the test starts `sshd` on 127.0.0.1 with
//! generated host and user keys and reaches it with `-e "ssh -F FILE"`. It needs sshd
//! (openssh-server) and root (a login as this user); under CI it fails when they are missing.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A private sshd and the client configuration that reaches it as `testhost`.
struct Sshd {
    dir: tempfile::TempDir,
    child: Child,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// sshd on a free loopback port, or `None` (outside CI) when it cannot run here.
fn sshd() -> Option<Sshd> {
    let sshd = Path::new("/usr/sbin/sshd");
    let root = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
    };
    if !sshd.exists() || !root {
        let why = format!("sshd present: {}, root: {root}", sshd.exists());
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs sshd and root: {why}"
        );
        eprintln!("skipped outside CI: {why}");
        return None;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    for k in ["host_key", "user_key"] {
        let ok = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", ""])
            .arg("-f")
            .arg(d.join(k))
            .status()
            .expect("ssh-keygen");
        assert!(ok.success());
    }
    std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).expect("keys");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let conf = format!(
        "Port {port}\nListenAddress 127.0.0.1\nHostKey {0}/host_key\nAuthorizedKeysFile \
         {0}/authorized_keys\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
         UsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\nPidFile {0}/sshd.pid\n",
        d.display()
    );
    std::fs::write(d.join("sshd_config"), conf).expect("w");
    let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
    let client = format!(
        "Host testhost\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile \
         {}/user_key\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile \
         /dev/null\n  LogLevel ERROR\n  BatchMode yes\n",
        d.display()
    );
    std::fs::write(d.join("ssh_config"), client).expect("w");
    // sshd's privilege separation directory (Debian makes it at boot).
    let _ = std::fs::create_dir_all("/run/sshd");
    let child = Command::new(sshd)
        .args(["-D", "-e", "-f"])
        .arg(d.join("sshd_config"))
        .stderr(Stdio::null())
        .spawn()
        .expect("sshd");
    let s = Sshd { dir, child };
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("sshd did not start");
}

impl Sshd {
    fn rsh(&self) -> String {
        format!("ssh -F {}", self.dir.path().join("ssh_config").display())
    }
}

/// The directory of the hare binaries (hare-recv is built beside hare-send by `cargo test
/// --workspace`).
fn bin_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_hare-send"))
        .parent()
        .expect("bin dir")
        .to_path_buf();
    assert!(
        dir.join("hare-recv").exists(),
        "hare-recv is not built beside hare-send: run cargo test --workspace"
    );
    dir
}

fn hare_send(s: &Sshd, id: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hare-send"));
    c.arg("-e")
        .arg(s.rsh())
        .env("HARE_SEND_IDENTITY", id)
        .env_remove("HARE_RSH")
        .stdin(Stdio::null());
    c
}

fn run(c: &mut Command) -> Output {
    c.output().expect("run hare-send")
}

/// A tree with modes, times, a link and an empty directory.
fn tree(root: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(root.join("sub/empty")).expect("mkdir");
    std::fs::write(root.join("a.bin"), vec![7u8; 3_000_000]).expect("w");
    std::fs::write(root.join("sub/run.sh"), b"#!/bin/sh\n").expect("w");
    std::fs::set_permissions(
        root.join("sub/run.sh"),
        std::fs::Permissions::from_mode(0o750),
    )
    .expect("chmod");
    std::os::unix::fs::symlink("run.sh", root.join("sub/link")).expect("ln");
}

/// [`tree`] and a 24 MB file whose every 4099 bytes differ from the next (a range at a
/// wrong offset shows), for jobs over several connections.
fn tree_with_big(root: &Path) {
    tree(root);
    let big: Vec<u8> = (0..24_000_000u32).map(|i| (i / 4099) as u8).collect();
    std::fs::write(root.join("big.bin"), &big).expect("w");
}

fn same(a: &Path, b: &Path) {
    use std::os::unix::fs::MetadataExt;
    for e in std::fs::read_dir(a).expect("ls").flatten() {
        let (m, o) = (e.path(), b.join(e.file_name()));
        let (ma, mb) = (
            std::fs::symlink_metadata(&m).expect("src"),
            std::fs::symlink_metadata(&o).unwrap_or_else(|_| panic!("{o:?} missing")),
        );
        assert_eq!(ma.mode(), mb.mode(), "{o:?}");
        if ma.is_dir() {
            same(&m, &o);
        } else if ma.file_type().is_symlink() {
            assert_eq!(std::fs::read_link(&m).ok(), std::fs::read_link(&o).ok());
        } else {
            assert_eq!(ma.mtime_nsec(), mb.mtime_nsec(), "{o:?}");
            assert_eq!(std::fs::read(&m).ok(), std::fs::read(&o).ok(), "{o:?}");
        }
    }
}

#[test]
fn a_tree_goes_to_absolute_and_home_paths_and_a_rerun_moves_nothing() {
    let Some(s) = sshd() else { return };
    let bins = bin_dir();
    let (src, id, abs) = (
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
    );
    tree(&src.path().join("t"));
    let home_rel = format!("hare-ssh-test-{}", std::process::id());
    let home = PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into()));
    for dest in [
        format!("testhost:{}/in", abs.path().display()),
        format!("testhost:{home_rel}"),
    ] {
        let out = run(hare_send(&s, id.path())
            .args(["--links", "--remote-bin"])
            .arg(&bins)
            .arg(src.path().join("t"))
            .arg(&dest));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{dest}: {err}");
    }
    same(&src.path().join("t"), &abs.path().join("in/t"));
    same(&src.path().join("t"), &home.join(&home_rel).join("t"));
    let out = run(hare_send(&s, id.path())
        .args(["--links", "--remote-bin"])
        .arg(&bins)
        .arg(src.path().join("t"))
        .arg(format!("testhost:{}/in", abs.path().display())));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The two files and the link (the same target) are up to date: nothing is made again.
    assert!(
        err.contains("3 of 3 file(s) already on the receiver, not sent (3 up to date)"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(home.join(&home_rel));
}

#[test]
fn a_remote_without_hare_is_named_and_a_killed_one_ends_the_run() {
    let Some(s) = sshd() else { return };
    let (src, id, dst) = (
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
    );
    let f = src.path().join("big.bin");
    std::fs::write(&f, vec![1u8; 40_000_000]).expect("w");
    let out = run(hare_send(&s, id.path())
        .args(["--remote-bin", "/nonexistent"])
        .arg(&f)
        .arg("testhost:x"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("testhost has no `/nonexistent/hare-recv`: install hare there"),
        "{err}"
    );
    // The remote is killed (SIGKILL) mid-run: the local side ends within 5 s, saying why.
    let bins = bin_dir();
    let mut child = hare_send(&s, id.path())
        .args(["-q", "-R", "40m", "--remote-bin"])
        .arg(&bins)
        .arg(&f)
        .arg(format!("testhost:{}", dst.path().display()))
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pattern = format!(
        "^{}/hare-recv --ssh-serve --dir {}",
        bins.display(),
        dst.path().display()
    );
    for _ in 0..200 {
        if !hare_send_parts(dst.path()).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let killed = Command::new("pkill")
        .args(["-9", "-f", &pattern])
        .status()
        .expect("pkill");
    assert!(killed.success(), "the remote hare-recv was running");
    let t0 = Instant::now();
    let out = loop {
        if let Ok(Some(_)) = child.try_wait() {
            break child.wait_with_output().expect("output");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the local side outlived the remote"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("the ssh session to testhost ended"), "{err}");
}

/// The part files in `dir`.
fn hare_send_parts(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".hare-part"))
        .collect()
}

/// `hare-recv host:SRC DEST`: the remote hare-send is started through ssh and this side
/// dials it; the tree arrives whole, and a rerun sends nothing.
#[test]
fn a_tree_is_pulled_and_a_rerun_moves_nothing() {
    let Some(s) = sshd() else { return };
    let bins = bin_dir();
    let (src, dst) = (
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
    );
    tree(&src.path().join("t"));
    let pull = || {
        let mut c = Command::new(bins.join("hare-recv"));
        c.arg("-e")
            .arg(s.rsh())
            .arg("--links")
            .arg("--remote-bin")
            .arg(&bins)
            .arg(format!("testhost:{}", src.path().join("t").display()))
            .arg(dst.path().join("in"))
            .env_remove("HARE_RSH")
            .stdin(Stdio::null());
        run(&mut c)
    };
    let out = pull();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    same(&src.path().join("t"), &dst.path().join("in/t"));
    let out = pull();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("0 file(s)") && text.contains("0.0000 MB"),
        "{text}"
    );
}

/// Fetch options reach the remote hare-send: a file changed on the remote with its size and
/// modification time kept is up to date by the quick check, and fetched again with
/// `--checksum`.
#[test]
fn a_pull_hands_its_skip_rule_to_the_remote_sender() {
    let Some(s) = sshd() else { return };
    let bins = bin_dir();
    let (src, dst) = (
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
    );
    let file = src.path().join("f.bin");
    std::fs::write(&file, vec![1u8; 100_000]).expect("w");
    let pull = |extra: &[&str]| {
        let mut c = Command::new(bins.join("hare-recv"));
        c.arg("-e")
            .arg(s.rsh())
            .arg("--remote-bin")
            .arg(&bins)
            .args(extra)
            .arg(format!("testhost:{}", file.display()))
            .arg(dst.path())
            .env_remove("HARE_RSH")
            .stdin(Stdio::null());
        let out = run(&mut c);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let got = dst.path().join("f.bin");
    pull(&[]);
    assert_eq!(std::fs::read(&got).expect("fetched"), vec![1u8; 100_000]);
    let mtime = std::fs::metadata(&file)
        .and_then(|m| m.modified())
        .expect("mtime");
    std::fs::write(&file, vec![2u8; 100_000]).expect("rewrite");
    let f = std::fs::File::options()
        .write(true)
        .open(&file)
        .expect("open");
    f.set_modified(mtime).expect("keep the mtime");
    drop(f);
    pull(&[]);
    assert_eq!(
        std::fs::read(&got).expect("kept"),
        vec![1u8; 100_000],
        "same size and mtime: up to date by the quick check"
    );
    pull(&["--checksum"]);
    assert_eq!(
        std::fs::read(&got).expect("fetched again"),
        vec![2u8; 100_000]
    );
}

/// `--remote-ports`: the remote binds a port of the range, both ways; a range with no free
/// port is named in the error.
#[test]
fn the_remote_binds_a_port_of_the_range_given() {
    let Some(s) = sshd() else { return };
    let bins = bin_dir();
    let (src, id, dst) = (
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
    );
    let file = src.path().join("f.bin");
    std::fs::write(&file, vec![5u8; 50_000]).expect("w");
    let held = std::net::UdpSocket::bind("0.0.0.0:0").expect("hold a port");
    let busy = held.local_addr().expect("addr").port();
    let free = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port();
    let push = |range: String| {
        run(hare_send(&s, id.path())
            .args(["--remote-ports", &range, "--remote-bin"])
            .arg(&bins)
            .arg(&file)
            .arg(format!("testhost:{}", dst.path().display())))
    };
    let out = push(busy.to_string());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("no free UDP port in {busy}-{busy}")),
        "{err}"
    );
    let out = push(free.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(dst.path().join("f.bin")).expect("sent"),
        vec![5u8; 50_000]
    );
    let pulled = tempfile::tempdir().expect("t");
    let mut c = Command::new(bins.join("hare-recv"));
    c.arg("-e")
        .arg(s.rsh())
        .args(["--remote-ports", &format!("{busy}-{busy}"), "--remote-bin"])
        .arg(&bins)
        .arg(format!("testhost:{}", file.display()))
        .arg(pulled.path())
        .env_remove("HARE_RSH")
        .stdin(Stdio::null());
    let out = run(&mut c);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("no free UDP port in {busy}-{busy}")),
        "{err}"
    );
    drop(held);
}

/// `-C 3` over ssh: the remote hare-recv takes the job's further connections on its one
/// port; a big file travels as ranges and arrives whole.
#[test]
fn a_push_over_ssh_spreads_over_three_connections() {
    let Some(s) = sshd() else { return };
    let bins = bin_dir();
    let (src, id, dst) = (
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
    );
    let root = src.path().join("t");
    tree_with_big(&root);
    let out = run(hare_send(&s, id.path())
        .args(["--links", "-C", "3", "--chunk", "1m", "--remote-bin"])
        .arg(&bins)
        .arg(&root)
        .arg(format!("testhost:{}", dst.path().display())));
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}");
    assert!(text.contains("connections: 3 ("), "{text}");
    // The numbered lines are the connections, and add up to the [SUM].
    assert!(text.contains("[  3]") && !text.contains("[  4]"), "{text}");
    same(&root, &dst.path().join("t"));
}

/// `hare-recv -C 3 host:SRC DEST`: the remote hare-send listens, this side dials the job's
/// three connections, and a big file arrives whole over all of them.
#[test]
fn a_pull_over_ssh_spreads_over_three_connections() {
    let Some(s) = sshd() else { return };
    let bins = bin_dir();
    let (src, dst) = (
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
    );
    let root = src.path().join("t");
    tree_with_big(&root);
    let mut c = Command::new(bins.join("hare-recv"));
    c.arg("-e")
        .arg(s.rsh())
        .args(["--links", "-C", "3", "--remote-bin"])
        .arg(&bins)
        .arg(format!("testhost:{}", root.display()))
        .arg(dst.path().join("in"))
        .env_remove("HARE_RSH")
        .stdin(Stdio::null());
    let out = run(&mut c);
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}\n{text}");
    // The receiver's numbered lines are the connections.
    assert!(text.contains("[  3]") && !text.contains("[  4]"), "{text}");
    same(&root, &dst.path().join("in/t"));
}
