//! The hare-recv binary with an in-process sender on loopback.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hare_transfer::identity::Fingerprint;
use hare_transfer::testkit::{screen_pieces, send_options};
use hare_transfer::trust::Trust;
use hare_transfer::{send, SendJob, Stop, TransferError};

#[path = "../../../crates/hare-transfer/tests/hostile/mod.rs"]
mod hostile;

struct Recv {
    child: Child,
    addr: std::net::SocketAddr,
    fingerprint: String,
    /// Every later line of stdout and stderr.
    lines: std::sync::mpsc::Receiver<String>,
}

impl Drop for Recv {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start hare-recv and read its listening address and fingerprint from stdout.
fn start(args: &[&str], env: &[(&str, &str)]) -> Recv {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hare-recv"));
    cmd.args(["--listen", "127.0.0.1:0"])
        .args(args)
        .env_remove("HARE_TOKEN");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hare-recv");
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().expect("stdout");
    let err = child.stderr.take().expect("stderr");
    let tx2 = tx.clone();
    std::thread::spawn(move || forward(out, tx));
    std::thread::spawn(move || forward(err, tx2));
    let (mut addr, mut fp) = (None, None);
    let t = Instant::now();
    // Kernel TCP has no certificate to print.
    let tcp = args.contains(&"--tcp");
    while (addr.is_none() || (fp.is_none() && !tcp)) && t.elapsed() < Duration::from_secs(20) {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(20)) else {
            break;
        };
        if let Some(r) = line.strip_prefix("hare-recv: listening on ") {
            addr = r.split_whitespace().next().and_then(|a| a.parse().ok());
        }
        if let Some(r) = line.strip_prefix("hare-recv: certificate sha256 ") {
            fp = Some(r.trim().to_owned());
        }
    }
    Recv {
        child,
        addr: addr.expect("listening line"),
        fingerprint: if tcp {
            String::new()
        } else {
            fp.expect("fingerprint line")
        },
        lines: rx,
    }
}

/// Send the lines of `r` to `tx` (at most 1000, so a runaway child cannot fill memory).
fn forward(r: impl std::io::Read, tx: std::sync::mpsc::Sender<String>) {
    for line in BufReader::new(r).lines().take(1000) {
        let Ok(line) = line else { break };
        let _ = tx.send(line);
    }
}

fn wait_exit(r: &mut Recv) -> Option<i32> {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(30) {
        if let Ok(Some(s)) = r.child.try_wait() {
            return s.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// The fingerprint of the in-process test sender, for `--allow`.
fn allowed() -> String {
    hare_transfer::testkit::test_sender()
        .fingerprint
        .to_string()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn first_start_makes_a_private_identity_and_one_shot_serves_files() {
    let state = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let id_dir = state.path().join("hare");
    let id = id_dir.to_str().expect("utf8");
    let mut r = start(
        &[
            "--identity",
            id,
            "--dir",
            dst.path().to_str().expect("utf8"),
            "--allow",
            &allowed(),
            "--one-shot",
            "-q",
        ],
        &[],
    );
    let mode = std::fs::metadata(id_dir.join("key.pem"))
        .expect("key")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "key file is private");
    let pinned = Fingerprint::of_pem_file(&id_dir.join("cert.pem")).expect("cert");
    assert_eq!(
        r.fingerprint,
        pinned.to_string(),
        "printed fingerprint is the certificate's"
    );

    let src = tempfile::tempdir().expect("tempdir");
    std::fs::write(src.path().join("hello.txt"), b"hello over QUIC\n").expect("w");
    let job = SendJob::Files {
        paths: vec![src.path().join("hello.txt")],
        resume: false,
        force: false,
        parallel: 1,
    };
    let outcome = rt()
        .block_on(send(
            send_options(r.addr, Some(Trust::Pin(pinned)), job),
            Stop::never(),
        ))
        .expect("send");
    assert!(outcome.files[0].ok);
    assert_eq!(
        std::fs::read(dst.path().join("hello.txt")).expect("r"),
        b"hello over QUIC\n"
    );
    assert_eq!(wait_exit(&mut r), Some(0), "one-shot exits after the job");

    // A second start reuses the identity: same fingerprint, no new key.
    let r2 = start(&["--identity", id], &[]);
    assert_eq!(r2.fingerprint, pinned.to_string());
}

#[test]
fn token_from_the_environment_is_required() {
    let state = tempfile::tempdir().expect("tempdir");
    let id = state.path().join("id");
    let mut r = start(
        &["--identity", id.to_str().expect("utf8"), "--one-shot", "-q"],
        &[("HARE_TOKEN", "open sesame")],
    );
    let pin: Fingerprint = r.fingerprint.parse().expect("pin");
    let job = SendJob::Bulk {
        bytes: Some(1 << 20),
        seconds: None,
        streams: 1,
    };
    let err = rt()
        .block_on(send(
            send_options(r.addr, Some(Trust::Pin(pin)), job),
            Stop::never(),
        ))
        .expect_err("refused");
    assert!(
        matches!(&err, TransferError::Refused(m) if m.contains("token")),
        "{err}"
    );
    assert_eq!(
        wait_exit(&mut r),
        Some(5),
        "the one-shot job refused the sender"
    );
}

#[test]
fn a_newline_in_a_refused_name_cannot_forge_a_log_line() {
    let state = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let r = start(
        &[
            "--identity",
            state.path().join("id").to_str().expect("utf8"),
            "--dir",
            dst.path().to_str().expect("utf8"),
            "--allow",
            &allowed(),
        ],
        &[],
    );
    let pin: Fingerprint = r.fingerprint.parse().expect("pin");
    let forged = "hare-recv: 10.9.9.9:1: job done";
    let name = format!("x\n{forged}\u{1b}[2J");
    let answer = rt().block_on(async {
        let mut h = hostile::connect(r.addr, pin, None).await;
        h.hello(&hostile::files_hello(&[(&name, 1)], false, None))
            .await
    });
    assert!(
        matches!(&answer, Some(hare_transfer::protocol::ToSender::Refuse { reason }) if reason.contains("forbidden character")),
        "{answer:?}"
    );
    // The refusal is logged once, on one line, with the peer and the name escaped.
    let mut seen = Vec::new();
    while let Ok(l) = r.lines.recv_timeout(Duration::from_secs(3)) {
        let done = l.contains("refused");
        seen.push(l);
        if done {
            break;
        }
    }
    let refused: Vec<_> = seen.iter().filter(|l| l.contains("refused")).collect();
    assert_eq!(refused.len(), 1, "{seen:?}");
    assert!(
        refused[0].starts_with("hare-recv: 127.0.0.1:")
            && refused[0].contains("refused: x\\u{a}hare-recv: 10.9.9.9:1: job done\\u{1b}[2J"),
        "{seen:?}"
    );
    assert!(!seen.iter().any(|l| l.starts_with(forged)), "{seen:?}");
    assert!(!seen.iter().any(|l| l.contains('\u{1b}')), "{seen:?}");
}

/// A receiver killed mid-run (SIGKILL: no close, the path goes silent) is reported by the
/// sender as a silent receiver within its `--idle-timeout`, with "path silent" notes before.
/// Run `opts` against `r` and kill `r` (SIGKILL) 1.5 s in: the run's result, when it ended
/// and when the receiver was dead.
fn send_and_kill(
    opts: hare_transfer::SendOptions,
    r: &mut Recv,
) -> (
    hare_transfer::Result<hare_transfer::SendOutcome>,
    Instant,
    Instant,
) {
    send_and_kill_when(opts, r, || true)
}

/// As [`send_and_kill`], the kill waiting (at most 30 s past its 1.5 s) until `ready` holds,
/// so that a loaded machine's slower start does not kill the receiver before the job is where
/// a test needs it.
fn send_and_kill_when(
    opts: hare_transfer::SendOptions,
    r: &mut Recv,
    ready: impl Fn() -> bool + Sync,
) -> (
    hare_transfer::Result<hare_transfer::SendOutcome>,
    Instant,
    Instant,
) {
    let rt = rt();
    std::thread::scope(|s| {
        let killer = s.spawn(|| {
            std::thread::sleep(Duration::from_millis(1500));
            let deadline = Instant::now() + Duration::from_secs(30);
            while !ready() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = r.child.kill();
            let _ = r.child.wait();
            Instant::now()
        });
        let res = rt.block_on(send(opts, Stop::never()));
        (res, Instant::now(), killer.join().expect("killer"))
    })
}

#[test]
fn a_killed_receiver_is_reported_within_the_idle_timeout() {
    let state = tempfile::tempdir().expect("tempdir");
    let id = state.path().join("id");
    let mut r = start(&["--identity", id.to_str().expect("utf8"), "-q"], &[]);
    let pin: Fingerprint = r.fingerprint.parse().expect("pin");
    let job = SendJob::Bulk {
        bytes: None,
        seconds: Some(60.0),
        streams: 1,
    };
    let mut opts = send_options(r.addr, Some(Trust::Pin(pin)), job);
    opts.rate = Some(20_000_000);
    opts.liveness = hare_transfer::quic_config::Liveness {
        idle_timeout: Duration::from_secs(3),
        keep_alive: Duration::from_millis(500),
        ..Default::default()
    };
    let jsonl = state.path().join("run.jsonl");
    opts.output.jsonl = Some(jsonl.clone());
    let (res, ended, killed_at) = send_and_kill(opts, &mut r);
    let err = res.expect_err("the receiver is gone");
    assert!(
        matches!(&err, TransferError::Connection(m) if m.contains("went silent") && m.contains("3 s")),
        "{err}"
    );
    let waited = ended.duration_since(killed_at);
    // The idle timeout, plus at most one tick of slack.
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    let log = std::fs::read_to_string(&jsonl).expect("jsonl");
    assert!(
        log.contains("path silent: nothing heard from the receiver"),
        "{log}"
    );
}

/// Kernel TCP: the run ended at once (no idle timeout to wait for) as a receiver that went
/// away, in the QUIC path's terms, with the OS cause once at the end, and with the QUIC
/// path's status for a lost connection (6).
fn assert_receiver_went_away(
    run: (
        hare_transfer::Result<hare_transfer::SendOutcome>,
        Instant,
        Instant,
    ),
) {
    let (res, ended, killed_at) = run;
    let err = res.expect_err("the receiver is gone");
    // Which one the kernel says depends on what was in flight: a FIN, a reset, or a write
    // after the reset.
    let head = "the receiver went away: ";
    let said = [
        format!("{head}it closed the connection before the job ended; the receiver is down or was stopped"),
        format!("{head}its connection broke; the receiver is down or was stopped: Connection reset by peer (os error 104)"),
        format!("{head}its connection broke; the receiver is down or was stopped: Broken pipe (os error 32)"),
    ];
    assert!(
        matches!(&err, TransferError::Connection(m) if said.contains(m)),
        "{err}"
    );
    assert_eq!(hare_transfer::exit::ExitKind::of(&err).code(), 6);
    let waited = ended.duration_since(killed_at);
    assert!(waited < Duration::from_secs(2), "{waited:?}");
}

/// Reverse mode over kernel TCP: a hare-recv killed while it sends is said at once as a
/// receiver that went away.
#[test]
fn a_killed_reverse_tcp_sender_is_a_receiver_that_went_away() {
    let mut r = start(&["--tcp", "-q"], &[]);
    let job = SendJob::Bulk {
        bytes: None,
        seconds: Some(30.0),
        streams: 2,
    };
    let mut opts = send_options(r.addr, None, job);
    opts.reverse = true;
    opts.identity = None;
    opts.tcp = Some(hare_transfer::TcpSendOptions::default());
    opts.rate = Some(50_000_000);
    opts.interval = Duration::from_millis(100);
    assert_receiver_went_away(send_and_kill(opts, &mut r));
}

/// Forward over kernel TCP (`--tcp`): a hare-recv killed while it receives a bulk job or a
/// file is said the same way, whichever of the control reader, its writer or a data write
/// hears it first.
#[test]
fn a_killed_forward_tcp_receiver_is_a_receiver_that_went_away() {
    let src = tempfile::tempdir().expect("tempdir");
    let file = src.path().join("big.bin");
    // 8 MB at 20 Mbit/s: 3.2 s, still on its way when the receiver dies at 1.5 s.
    std::fs::write(&file, vec![7u8; 8_000_000]).expect("w");
    let bulk = SendJob::Bulk {
        bytes: None,
        seconds: Some(30.0),
        streams: 2,
    };
    let files = SendJob::Files {
        paths: vec![file],
        resume: false,
        force: false,
        parallel: 1,
    };
    for job in [bulk, files] {
        let dst = tempfile::tempdir().expect("tempdir");
        let dir = dst.path().to_str().expect("utf8");
        let mut r = start(&["--tcp", "-q", "--dir", dir, "--open"], &[]);
        let mut opts = send_options(r.addr, None, job);
        opts.identity = None;
        opts.tcp = Some(hare_transfer::TcpSendOptions::default());
        opts.rate = Some(20_000_000);
        opts.interval = Duration::from_millis(100);
        assert_receiver_went_away(send_and_kill(opts, &mut r));
    }
}

/// A port in use: the OS error is said once, not once per layer.
#[test]
fn a_busy_port_says_its_cause_once() {
    let busy = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
    let addr = busy.local_addr().expect("addr").to_string();
    let state = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_hare-recv"))
        .args(["--listen", &addr, "--identity"])
        .arg(state.path().join("id"))
        .env_remove("HARE_TOKEN")
        .output()
        .expect("hare-recv");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("Address already in use").count(), 1, "{err}");
}

/// Bad arguments exit 2 (clap's status, and hare-recv's own checks), and a receiver stopped
/// by SIGTERM while it serves exits 0: a server asked to stop.
#[test]
fn bad_arguments_exit_2_and_sigterm_ends_the_receiver_with_0() {
    let state = tempfile::tempdir().expect("tempdir");
    let id = state.path().join("id");
    for args in [
        &["--no-such-option"][..],
        &["-i", "0"],
        &["--max-size", "lots"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_hare-recv"))
            .args(args)
            .arg("--identity")
            .arg(&id)
            .env_remove("HARE_TOKEN")
            .output()
            .expect("hare-recv");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    }
    let mut r = start(&["--identity", id.to_str().expect("utf8")], &[]);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(r.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("signal");
    assert_eq!(wait_exit(&mut r), Some(0));
}

/// A one-shot job in which a file fails exits 3: here a file below a link the same job made,
/// which the receiver never writes through.
#[test]
fn a_one_shot_job_with_a_failed_file_exits_3() {
    let state = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let id = state.path().join("id");
    let dst_s = dst.path().to_str().expect("utf8");
    let mut r = start(
        &[
            "--identity",
            id.to_str().expect("utf8"),
            "--dir",
            dst_s,
            "--allow",
            &allowed(),
            "--one-shot",
            "-q",
        ],
        &[],
    );
    let pin: Fingerprint = r.fingerprint.parse().expect("pin");
    let src = tempfile::tempdir().expect("tempdir");
    let (a, b) = (src.path().join("a"), src.path().join("b"));
    std::fs::create_dir_all(b.join("d")).expect("mkdir");
    std::fs::create_dir_all(&a).expect("mkdir");
    std::os::unix::fs::symlink("/tmp", a.join("d")).expect("ln");
    std::fs::write(b.join("d/x"), b"x").expect("w");
    let job = SendJob::Files {
        paths: vec![a.join("d"), b.join("d")],
        resume: false,
        force: false,
        parallel: 1,
    };
    let mut o = send_options(r.addr, Some(Trust::Pin(pin)), job);
    o.keep.links = hare_transfer::sendfiles::Links::Keep;
    let outcome = rt().block_on(send(o, Stop::never())).expect("send");
    assert_eq!(outcome.failures().count(), 1, "{:?}", outcome.files);
    assert_eq!(wait_exit(&mut r), Some(3), "files failed");
}

/// Not a test of its own: the sender process that
/// `a_killed_sender_is_said_as_a_sender_that_went_away` starts and then SIGKILLs (a sender
/// in this process could not be killed without the receiver hearing a close).
#[test]
#[ignore = "run as a child process by a_killed_sender_is_said_as_a_sender_that_went_away"]
fn sender_process_for_the_kill_test() {
    let Some(addr) = std::env::var("HARE_TEST_SEND_TO")
        .ok()
        .and_then(|a| a.parse().ok())
    else {
        return;
    };
    let pin = std::env::var("HARE_TEST_SEND_PIN")
        .ok()
        .and_then(|p| p.parse::<Fingerprint>().ok());
    let job = SendJob::Bulk {
        bytes: None,
        seconds: Some(60.0),
        streams: 1,
    };
    let mut opts = send_options(addr, pin.map(Trust::Pin), job);
    if pin.is_none() {
        opts.identity = None;
        opts.tcp = Some(hare_transfer::TcpSendOptions::default());
    }
    opts.rate = Some(20_000_000);
    // The connection's idle timeout is the smaller of the two ends': the receiver gives a
    // silent sender up after 2 s instead of its own 30.
    opts.liveness = hare_transfer::quic_config::Liveness {
        idle_timeout: Duration::from_secs(2),
        keep_alive: Duration::from_millis(500),
        ..Default::default()
    };
    let _ = rt().block_on(send(opts, Stop::never()));
}

/// A sender SIGKILLed in the middle of a bulk job: hare-recv says the sender went away (QUIC:
/// went silent until the idle timeout; kernel TCP: its kernel closed the connection), not
/// "reading the control channel: connection lost", and says it once.
#[test]
fn a_killed_sender_is_said_as_a_sender_that_went_away() {
    let state = tempfile::tempdir().expect("tempdir");
    let id = state.path().join("id");
    let quic = ["--identity", id.to_str().expect("utf8")];
    for (args, expected) in [
        (
            &quic[..],
            "error: connection: the sender went silent: nothing heard from it within the idle \
             timeout; the path or the sender is down",
        ),
        // Its kernel closes the sockets (or resets the one with unread data): either way the
        // sender went away.
        (&["--tcp"][..], "error: connection: the sender went away: "),
    ] {
        let r = start(args, &[]);
        let mut child = Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", "sender_process_for_the_kill_test", "--ignored"])
            .env("HARE_TEST_SEND_TO", r.addr.to_string())
            .env("HARE_TEST_SEND_PIN", &r.fingerprint)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sender process");
        // The job is under way once the receiver prints its first line about it.
        let t = Instant::now();
        let mut seen = Vec::new();
        while !seen.iter().any(|l: &String| l.contains("bulk"))
            && t.elapsed() < Duration::from_secs(20)
        {
            if let Ok(line) = r.lines.recv_timeout(Duration::from_millis(200)) {
                seen.push(line);
            }
        }
        assert!(
            seen.iter().any(|l| l.contains("bulk")),
            "no job began: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(1000));
        child.kill().expect("SIGKILL the sender");
        let _ = child.wait();
        let killed = Instant::now();
        let mut said = None;
        while said.is_none() && killed.elapsed() < Duration::from_secs(15) {
            if let Ok(line) = r.lines.recv_timeout(Duration::from_millis(200)) {
                if line.contains("error:") {
                    said = Some((line, killed.elapsed()));
                } else {
                    seen.push(line);
                }
            }
        }
        let (line, after) = said.unwrap_or_else(|| panic!("{args:?}: nothing said: {seen:?}"));
        assert!(line.contains(expected), "{args:?}: {line}");
        assert!(
            line.contains("the path or the sender is down")
                || line.contains("the sender is down or was stopped"),
            "{line}"
        );
        assert!(!line.contains("connection lost"), "{line}");
        // QUIC: the 2 s idle timeout the sender asked for; TCP: at once.
        assert!(
            after < Duration::from_secs(6),
            "{args:?}: said {after:?} after the kill"
        );
        // Said once: no log line repeats the cause after the job's report.
        let mut later = Vec::new();
        while let Ok(l) = r.lines.recv_timeout(Duration::from_millis(500)) {
            later.push(l);
        }
        assert!(
            !later.iter().any(|l| l.contains("the sender went")),
            "{args:?}: said again: {later:?}"
        );
    }
}

/// A sender stopped by its user (Ctrl-C) in the middle of a bulk job: the job ends with what
/// arrived, as nuttcp's does, and hare-recv says that the sender stopped it early.
#[test]
fn a_sender_stopped_early_is_said_by_the_receiver() {
    for tcp in [false, true] {
        let state = tempfile::tempdir().expect("tempdir");
        let id = state.path().join("id");
        let args: &[&str] = if tcp {
            &["--tcp"]
        } else {
            &["--identity", id.to_str().expect("utf8")]
        };
        let r = start(args, &[]);
        let job = SendJob::Bulk {
            bytes: None,
            seconds: Some(30.0),
            streams: 2,
        };
        let trust = (!tcp).then(|| Trust::Pin(r.fingerprint.parse().expect("pin")));
        let mut opts = send_options(r.addr, trust, job);
        if tcp {
            opts.identity = None;
            opts.tcp = Some(hare_transfer::TcpSendOptions::default());
        }
        opts.rate = Some(20_000_000);
        let (trigger, stop) = hare_transfer::stop_pair();
        let rt = rt();
        let outcome = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(1200));
                trigger.stop_because("Ctrl-C");
            });
            rt.block_on(send(opts, stop))
        });
        assert!(outcome.is_ok(), "tcp {tcp}: {outcome:?}");
        let t = Instant::now();
        let mut lines = Vec::new();
        while t.elapsed() < Duration::from_secs(10) {
            match r.lines.recv_timeout(Duration::from_millis(300)) {
                Ok(l) => lines.push(l),
                Err(_) if lines.iter().any(|l| l.contains(" %RX ")) => break,
                Err(_) => {}
            }
        }
        let said: Vec<_> = lines
            .iter()
            .filter(|l| l.contains("the sender was stopped before the job's end (interrupted)"))
            .collect();
        assert_eq!(said.len(), 1, "tcp {tcp}: {lines:?}");
        assert!(
            !lines.iter().any(|l| l.contains("error:")),
            "tcp {tcp}: {lines:?}"
        );
    }
}

/// A receiver killed with -9 in the middle of a file leaves its part file; restarted on the
/// same directory, it offers the recorded prefix to the same sender's `--resume`, which says
/// from which byte it resumed, and the file arrives whole.
#[test]
fn a_partial_left_by_a_killed_receiver_is_resumed_after_its_restart() {
    let state = tempfile::tempdir().expect("tempdir");
    let (src, dst) = (
        tempfile::tempdir().expect("t"),
        tempfile::tempdir().expect("t"),
    );
    let id = state.path().join("id");
    let args = |id: &std::path::Path| {
        [
            "--identity".to_owned(),
            id.to_string_lossy().into_owned(),
            "--dir".to_owned(),
            dst.path().to_string_lossy().into_owned(),
            "--allow".to_owned(),
            allowed(),
            "-q".to_owned(),
        ]
    };
    let a = args(&id);
    let mut r = start(&a.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
    let pin: Fingerprint = r.fingerprint.parse().expect("pin");
    let data = hare_transfer::testkit::seeded_bytes(11, 40 << 20);
    let file = src.path().join("big.bin");
    std::fs::write(&file, &data).expect("w");
    let job = |resume| SendJob::Files {
        paths: vec![file.clone()],
        resume,
        force: false,
        parallel: 1,
    };
    let mut opts = send_options(r.addr, Some(Trust::Pin(pin)), job(false));
    opts.rate = Some(100_000_000);
    opts.liveness = hare_transfer::quic_config::Liveness {
        idle_timeout: Duration::from_secs(2),
        keep_alive: Duration::from_millis(500),
        ..Default::default()
    };
    let part = hare_transfer::testkit::test_sender_part(dst.path(), "big.bin");
    // Killed once the part file holds more than the first recorded prefix (every 8 MiB).
    let past_first_prefix = || std::fs::metadata(&part).is_ok_and(|m| m.len() > 9 << 20);
    let (res, _, _) = send_and_kill_when(opts, &mut r, past_first_prefix);
    assert!(res.is_err() || res.is_ok_and(|o| o.files.iter().any(|f| !f.ok)));
    assert!(part.exists(), "the dead receiver's part file is there");
    let r = start(&a.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
    let mut opts = send_options(r.addr, Some(Trust::Pin(pin)), job(true));
    let jsonl = state.path().join("resume.jsonl");
    opts.output.jsonl = Some(jsonl.clone());
    let out = rt().block_on(send(opts, Stop::never())).expect("resumed");
    let f = &out.files[0];
    assert!(f.ok, "{f:?}");
    assert!(f.resumed_from >= 8 << 20, "resumed from {}", f.resumed_from);
    assert_eq!(
        std::fs::read(dst.path().join("big.bin")).expect("final"),
        data
    );
    assert!(!part.exists());
    let log = std::fs::read_to_string(&jsonl).expect("jsonl");
    let said = format!(
        "big.bin: resuming at byte {} of {}",
        f.resumed_from,
        data.len()
    );
    assert!(log.contains(&said), "{log}");
}

/// Two jobs at once: while they overlap, each line says whose it is (`[PEER #ID]`); a job
/// alone prints nuttcp's lines as they are.
#[test]
fn overlapping_jobs_tag_their_lines() {
    let state = tempfile::tempdir().expect("tempdir");
    let id = state.path().join("id");
    let a = [
        "--identity".to_owned(),
        id.to_string_lossy().into_owned(),
        "--allow".to_owned(),
        allowed(),
        "-i".to_owned(),
        "0.5".to_owned(),
    ];
    let r = start(&a.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
    let pin: Fingerprint = r.fingerprint.parse().expect("pin");
    let bulk = |secs: f64| {
        let job = SendJob::Bulk {
            bytes: None,
            seconds: Some(secs),
            streams: 1,
        };
        let mut o = send_options(r.addr, Some(Trust::Pin(pin)), job);
        o.rate = Some(5_000_000);
        o
    };
    rt().block_on(async {
        let (x, y) = tokio::join!(
            send(bulk(2.0), Stop::never()),
            send(bulk(2.0), Stop::never())
        );
        x.expect("first");
        y.expect("second");
    });
    let lines: Vec<String> = r.lines.try_iter().collect();
    let tagged = |id: &str| {
        lines
            .iter()
            .any(|l| l.starts_with("[127.0.0.1:") && l.contains(&format!(" #{id}] ")))
    };
    assert!(tagged("1") && tagged("2"), "{lines:#?}");
    // Alone, a job's lines carry no tag.
    rt().block_on(send(bulk(1.0), Stop::never()))
        .expect("third");
    std::thread::sleep(Duration::from_millis(200));
    let later: Vec<String> = r.lines.try_iter().collect();
    assert!(later.iter().any(|l| l.contains("Mbps")), "{later:#?}");
    assert!(!later.iter().any(|l| l.starts_with('[')), "{later:#?}");
}

/// Start a one-shot hare-recv on a pseudo-terminal `columns` wide (stdout and stderr), serve
/// one bulk job of two streams from the in-process sender, and return everything the
/// terminal showed, with its control sequences left out, cut at every `\r` and `\n`.
fn one_shot_on_a_terminal(columns: u16) -> Vec<String> {
    use std::io::Read;
    let state = tempfile::tempdir().expect("tempdir");
    let id = state.path().join("id");
    let pty = hare_transfer::testkit::terminal_of(columns);
    let out = pty.slave.try_clone().expect("dup");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hare-recv"))
        .args(["--listen", "127.0.0.1:0", "--one-shot", "--identity"])
        .arg(&id)
        .env_remove("HARE_TOKEN")
        .env_remove("COLUMNS")
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(pty.slave))
        .spawn()
        .expect("spawn hare-recv");
    // Only the child holds the terminal's other end now: reading ends (EIO) when it exits.
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let (mut master, mut buf) = (std::fs::File::from(pty.master), [0u8; 4096]);
        let mut total = 0;
        // At most 8 MiB, so a runaway child cannot fill memory.
        while total < 8 << 20 {
            match master.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    total += n;
                    let _ = tx.send(buf[..n].to_vec());
                }
            }
        }
    });
    let mut all = Vec::new();
    let t = Instant::now();
    let addr = loop {
        assert!(t.elapsed() < Duration::from_secs(20), "no listening line");
        if let Ok(chunk) = rx.recv_timeout(Duration::from_millis(200)) {
            all.extend(chunk);
        }
        let text = String::from_utf8_lossy(&all).into_owned();
        let found = text.lines().find_map(|l| {
            l.strip_prefix("hare-recv: listening on ")
                .and_then(|r| r.split_whitespace().next()?.parse().ok())
        });
        if let Some(a) = found {
            break a;
        }
    };
    let pin = Fingerprint::of_pem_file(&id.join("cert.pem")).expect("cert");
    let job = SendJob::Bulk {
        bytes: None,
        seconds: Some(2.0),
        streams: 2,
    };
    let mut opts = send_options(addr, Some(Trust::Pin(pin)), job);
    opts.rate = Some(40_000_000);
    rt().block_on(send(opts, Stop::never())).expect("send");
    let status = (0..1500).find_map(|_| {
        std::thread::sleep(Duration::from_millis(20));
        child.try_wait().expect("wait")
    });
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert_eq!(status.and_then(|s| s.code()), Some(0), "one-shot exits 0");
    while let Ok(chunk) = rx.recv_timeout(Duration::from_secs(2)) {
        all.extend(chunk);
    }
    screen_pieces(&String::from_utf8_lossy(&all))
}

/// No line the receiver prints wraps on a terminal 60 or 100 columns wide: its start-up
/// lines (the fingerprint in two halves when 64 digits do not fit), the job's header and
/// units, the intervals (per stream and `[SUM]`) and the summary.
#[test]
fn every_receiver_line_fits_terminals_of_60_and_100_columns() {
    for columns in [60u16, 100] {
        let pieces = one_shot_on_a_terminal(columns);
        let width = usize::from(columns);
        for p in &pieces {
            assert!(p.chars().count() <= width, "{width}: {p:?} in {pieces:#?}");
        }
        let has = |f: &dyn Fn(&str) -> bool| pieces.iter().any(|p| f(p));
        assert!(has(&|p| p.starts_with("hare-recv: certificate sha256")));
        assert!(
            has(&|p| p.contains("units: MB and MiB = 2^20 bytes")),
            "{pieces:#?}"
        );
        assert!(has(&|p| p.starts_with("[  2]")), "{pieces:#?}");
        let sums = pieces.iter().filter(|p| p.starts_with("[SUM]")).count();
        assert!(sums >= 2, "interval and summary [SUM] lines: {pieces:#?}");
        assert!(
            has(&|p| p.starts_with("[SUM]") && p.contains("RX")),
            "{pieces:#?}"
        );
        if width < 100 {
            assert!(
                has(&|p| p.ends_with("MB     s     Mbps    srtt ms")),
                "{pieces:#?}"
            );
        }
    }
}

/// `--help` states the report's units once: MB (and MiB) as nuttcp's 2^20 bytes, Mbps as
/// 10^6 bit/s.
#[test]
fn help_states_the_units() {
    let out = Command::new(env!("CARGO_BIN_EXE_hare-recv"))
        .arg("--help")
        .output()
        .expect("hare-recv --help");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Units of the report: MB, MiB = 2^20 bytes (as nuttcp), Mbps = 10^6 bit/s"),
        "{text}"
    );
}
