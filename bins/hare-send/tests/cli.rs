//! The hare-send binary against an in-process receiver on loopback.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use hare_transfer::identity::Fingerprint;

use hare_transfer::testkit::{
    in_progress, part_for, recv_options, screen_pieces, BackgroundReceiver,
};

fn hare_send() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hare-send"));
    // A terminal's width is the pseudo-terminal's, not the one running the tests.
    c.env_remove("HARE_PIN")
        .env_remove("HARE_TOKEN")
        .env_remove("COLUMNS")
        .env("HARE_SEND_IDENTITY", &sender_identity().0)
        .stdin(Stdio::null());
    c
}

/// Wait for a child with a deadline; kill it if it overstays.
fn wait_bounded(mut child: Child, limit: Duration) -> Output {
    let t = Instant::now();
    while t.elapsed() < limit {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if !matches!(child.try_wait(), Ok(Some(_))) {
        let _ = child.kill();
    }
    child.wait_with_output().expect("child output")
}

fn run(cmd: &mut Command) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hare-send");
    wait_bounded(child, Duration::from_secs(60))
}

/// The identity directory the hare-send binary uses in these tests (kept in the target
/// directory and made once), and its fingerprint.
fn sender_identity() -> &'static (std::path::PathBuf, Fingerprint) {
    static ID: OnceLock<(std::path::PathBuf, Fingerprint)> = OnceLock::new();
    ID.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hare-send-identity");
        let id = hare_transfer::identity::load_or_create(&dir, &[]).expect("sender identity");
        (dir, id.fingerprint)
    })
}

fn receiver(dir: Option<&Path>) -> (tempfile::TempDir, BackgroundReceiver) {
    let id = tempfile::tempdir().expect("tempdir");
    let mut o = recv_options(id.path().into(), dir.map(Into::into));
    o.allow = vec![sender_identity().1];
    let r = BackgroundReceiver::start(o).expect("receiver");
    (id, r)
}

#[test]
fn bulk_with_json_on_stdout_reports_the_bytes_sent() {
    let (_id, r) = receiver(None);
    let fp = r.fingerprint.expect("fingerprint").to_string();
    let out = run(hare_send().args([
        "-n",
        "4m",
        "-i",
        "0.2",
        "--json",
        "-",
        "--pin",
        &fp,
        &r.addr.to_string(),
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is pure JSON");
    assert_eq!(v["end"]["sum_received"]["bytes"].as_u64(), Some(4 << 20));
    assert_eq!(v["end"]["hare"]["bytes"].as_u64(), Some(4 << 20));
    let ivs = v["intervals"].as_array().expect("intervals");
    assert_eq!(
        ivs.iter()
            .filter_map(|i| i["sum"]["bytes"].as_u64())
            .sum::<u64>(),
        4 << 20
    );
    assert_eq!(v["start"]["hare"]["interval_s"].as_f64(), Some(0.2));
    // The fields iperf3 readers look for, with iperf3's names and units.
    let c = &v["start"]["connected"][0];
    assert_eq!(c["remote_host"].as_str(), Some("127.0.0.1"));
    assert_eq!(c["remote_port"].as_u64(), Some(u64::from(r.addr.port())));
    assert!(c["local_port"].as_u64().is_some_and(|p| p > 0), "{c}");
    // The address the packets leave from (the route's source), not the wildcard bound to.
    assert_eq!(c["local_host"].as_str(), Some("127.0.0.1"), "{c}");
    assert!(v["start"]["timestamp"]["timesecs"]
        .as_u64()
        .is_some_and(|t| t > 1_700_000_000));
    assert!(v["start"]["timestamp"]["time"]
        .as_str()
        .is_some_and(|t| t.ends_with(" GMT")));
    let test = &v["start"]["test_start"];
    assert_eq!(test["num_streams"].as_u64(), Some(1));
    assert_eq!(test["bytes"].as_u64(), Some(4 << 20));
    assert_eq!(test["reverse"].as_u64(), Some(0));
    let streams = v["end"]["streams"].as_array().expect("end.streams");
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0]["receiver"]["bytes"].as_u64(), Some(4 << 20));
    assert_eq!(streams[0]["sender"]["sender"].as_bool(), Some(true));
    // As iperf3 writes it: every `sender` flag says whether this host sent.
    assert_eq!(v["end"]["sum_received"]["sender"].as_bool(), Some(true));
    assert_eq!(streams[0]["receiver"]["sender"].as_bool(), Some(true));
    let cpu = &v["end"]["cpu_utilization_percent"];
    for key in ["host_total", "host_user", "host_system", "remote_total"] {
        assert!(cpu[key].as_f64().is_some(), "{key}: {cpu}");
    }
}

#[test]
fn text_report_has_nuttcp_lines_and_a_summary() {
    let (_id, r) = receiver(None);
    let fp = r.fingerprint.expect("fingerprint").to_string();
    let out = run(hare_send().args(["-T", "1.2", "-i", "0.5", "--pin", &fp, &r.addr.to_string()]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" MB / ") && l.contains(" Mbps"))
        .collect();
    assert!(lines.len() >= 3, "{text}");
    assert!(
        lines[0].contains(" lost  cwnd "),
        "sender lines carry cwnd: {text}"
    );
    assert!(
        lines[lines.len() - 1].contains("%TX"),
        "summary with CPU: {text}"
    );
}

#[test]
fn wrong_pin_exits_nonzero_and_says_so() {
    let (_id, r) = receiver(None);
    let out = run(hare_send().args(["-n", "1m", "--pin", &"ab".repeat(32), &r.addr.to_string()]));
    assert_eq!(out.status.code(), Some(5), "authentication failed");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("certificate pin mismatch"), "{err}");
}

#[test]
fn nobody_listening_is_said_within_two_seconds_then_given_up() {
    // A loopback UDP port with nothing behind it: bound, then closed again.
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("free port")
        .port();
    let pin = "00".repeat(32);
    let t = Instant::now();
    let child = hare_send()
        .args(["-n", "1m", "--connect-timeout", "3", "--pin", &pin])
        .arg(format!("127.0.0.1:{port}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hare-send");
    let out = wait_bounded(child, Duration::from_secs(20));
    let took = t.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    let note = format!(
        "hare-send: no answer yet from 127.0.0.1:{port} over UDP: is hare-recv running there?"
    );
    assert!(err.contains(&note), "{err}");
    assert!(
        err.contains(&format!(
            "no answer from 127.0.0.1:{port} over UDP within 3 s (--connect-timeout)"
        )),
        "{err}"
    );
    // Given up at the connect timeout, not at the idle timeout or later.
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(8),
        "{took:?}"
    );
}

#[test]
fn no_trust_is_a_usage_error() {
    let out = run(hare_send().args(["-n", "1m", "127.0.0.1:9"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no trust given"));
}

/// Send `file` slowly (`-R 4m`) to `r`, which writes into `dst`, and stop hare-send with
/// `signal` once data is arriving (polled, at most 30 s, however slow the host).
fn interrupted_file_send(
    file: &Path,
    dst: &Path,
    r: &BackgroundReceiver,
    signal: nix::sys::signal::Signal,
) -> Output {
    let fp = r.fingerprint.expect("fingerprint").to_string();
    let child = hare_send()
        .args(["-R", "4m", "-q", "--pin", &fp])
        .arg(file)
        .arg(r.addr.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    for _ in 0..600 {
        if in_progress(dst, name).iter().any(|f| f.1 > 0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).expect("signal");
    wait_bounded(child, Duration::from_secs(30))
}

#[test]
fn ctrl_c_aborts_a_file_and_resume_completes_it() {
    let dst = tempfile::tempdir().expect("tempdir");
    let (_id, r) = receiver(Some(dst.path()));
    let fp = r.fingerprint.expect("fingerprint").to_string();
    let src = tempfile::tempdir().expect("tempdir");
    let file = src.path().join("movie.bin");
    let data: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(&file, &data).expect("write");
    let part = part_for(dst.path(), "movie.bin", &sender_identity().1);
    let out = interrupted_file_send(&file, dst.path(), &r, nix::sys::signal::Signal::SIGINT);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let said = "hare-send: interrupted: 1 of 1 file(s) not confirmed by the receiver; it keeps \
                what it has. To finish, run the same command again:\n  ";
    let printed = stderr
        .split_once(said)
        .and_then(|(_, rest)| rest.lines().next())
        .unwrap_or_else(|| panic!("{stderr}"))
        .to_owned();
    assert!(
        !dst.path().join("movie.bin").exists(),
        "no file under the final name"
    );

    // Give the receiver a moment to notice and keep the partial data (bounded).
    for _ in 0..50 {
        if std::fs::metadata(&part)
            .map(|m| m.len() > 0)
            .unwrap_or(false)
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // The command exactly as printed (the shell's environment, here the identity, as before).
    let words = shell_words(&printed);
    assert_eq!(words[0], env!("CARGO_BIN_EXE_hare-send"), "{printed}");
    let out = run(hare_send().args(&words[1..]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(dst.path().join("movie.bin")).expect("final file"),
        data
    );
    assert!(!part.exists(), "the partial was used and is gone");
    let _ = fp;
}

/// Words of a command line as hare-send quotes it: plain words, or single-quoted ones with
/// `'\''` for a quote inside.
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut cur, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            '\\' if !quoted => cur.extend(chars.next()),
            ' ' if !quoted => {
                if any || !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            c => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        words.push(cur);
    }
    words
}

#[test]
fn printed_commands_split_back_into_their_words() {
    assert_eq!(
        shell_words(r"hare-send 'my photos' 'it'\''s' host:"),
        vec!["hare-send", "my photos", "it's", "host:"]
    );
}

#[test]
fn ctrl_c_ends_a_timed_bulk_run_cleanly_with_a_summary() {
    signal_ends_a_timed_bulk_run(nix::sys::signal::Signal::SIGINT, "Ctrl-C");
}

#[test]
fn sigterm_and_sighup_end_a_timed_bulk_run_like_ctrl_c() {
    signal_ends_a_timed_bulk_run(nix::sys::signal::Signal::SIGTERM, "SIGTERM");
    signal_ends_a_timed_bulk_run(nix::sys::signal::Signal::SIGHUP, "SIGHUP");
}

/// A 60 s bulk run at 50 Mbit/s (`extra` first) with JSON on stdout, returned (with the
/// directory of its JSON lines) once its
/// JSON lines report the first interval that carried data (polled, at most 30 s), so that a
/// signal sent next lands mid-run.
fn timed_run_with_data(
    extra: &[&str],
    fp: &str,
    addr: std::net::SocketAddr,
) -> (Child, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let jsonl = dir.path().join("run.jsonl");
    let child = hare_send()
        .args(extra)
        .args([
            "-T", "60", "-R", "50m", "-i", "0.2", "--json", "-", "--pin", fp,
        ])
        .arg("--jsonl")
        .arg(&jsonl)
        .arg(addr.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    for _ in 0..600 {
        let text = std::fs::read_to_string(&jsonl).unwrap_or_default();
        let data = text
            .lines()
            .any(|l| l.contains("\"type\":\"interval\"") && !l.contains("\"bytes\":0,"));
        if data {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // The directory stays while the run writes its JSON lines into it.
    (child, dir)
}

/// `signal` before `-T` is up: the run drains, prints its summary, exits 0 and notes why.
fn signal_ends_a_timed_bulk_run(signal: nix::sys::signal::Signal, name: &str) {
    let (_id, r) = receiver(None);
    let fp = r.fingerprint.expect("fingerprint").to_string();
    let (child, _dir) = timed_run_with_data(&[], &fp, r.addr);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).expect("signal");
    let out = wait_bounded(child, Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let secs = v["end"]["hare"]["seconds"].as_f64().expect("seconds");
    assert!(secs < 30.0, "stopped early: {secs}");
    let bytes = v["end"]["hare"]["bytes"].as_u64().expect("bytes");
    // Some data, and far below 60 s worth at 50 Mbit/s (375 MB).
    assert!(bytes > 0 && bytes < 200_000_000, "{bytes}");
    let noted = v["events"]
        .as_array()
        .expect("events")
        .iter()
        .any(|e| e["kind"]["message"].as_str() == Some(&format!("interrupted ({name})")));
    assert!(noted, "{name}");
}

#[test]
fn kernel_tcp_cubic_bulk() {
    let id = tempfile::tempdir().expect("tempdir");
    let mut o = recv_options(id.path().into(), None);
    o.tcp = Some(hare_transfer::tcp::TcpOptions {
        cc: "cubic".into(),
        ..Default::default()
    });
    let r = BackgroundReceiver::start(o).expect("tcp receiver");
    let out = run(hare_send().args([
        "--tcp",
        "--cc",
        "cubic",
        "-n",
        "8m",
        "--json",
        "-",
        &r.addr.to_string(),
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["end"]["hare"]["bytes"].as_u64(), Some(8 << 20));
    assert_eq!(v["start"]["congestion_used"].as_str(), Some("kernel:cubic"));
    assert_eq!(v["start"]["test_start"]["protocol"].as_str(), Some("TCP"));
}

/// Every bad value is refused before connecting: exit status 2 (a source that cannot be read:
/// 1; never a panic's 101), one line naming the option, its cause said once, and no Rust
/// debug text.
#[test]
fn bad_option_values_are_refused_with_their_cause_once() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["-R", "0.0001", "-n", "1m"],
            "-R 0.0001 is below 1 bit/s (give 0 for no limit)",
        ),
        (&["-R", "fast", "-n", "1m"], "-R fast"),
        (
            &["-T", "1e300"],
            "-T 1e300: must be more than 0 and at most 86400 seconds",
        ),
        (&["-T", "0"], "-T 0: must be more than 0"),
        (&["-T", "nan"], "-T NaN: must be more than 0"),
        (&["-P", "0", "-n", "1m"], "-P 0: must be 1 to 128"),
        (&["-w", "0", "-n", "1m"], "-w 0 is below the minimum"),
        (
            &["-i", "0", "-n", "1m"],
            "-i must be between 0.1 and 3600 seconds",
        ),
        (
            &["--idle-timeout", "0", "-n", "1m"],
            "--idle-timeout 0: must be 1 to 3600 seconds",
        ),
        (
            &["--idle-timeout", "1e300", "-n", "1m"],
            "--idle-timeout 1e300: not a number of seconds",
        ),
        (
            &["--keep-alive", "20", "-n", "1m"],
            "--keep-alive 20: must be at least 0.1 s and below --idle-timeout (10 s)",
        ),
        (
            &["--tcp", "--pin", "00", "-n", "1m"],
            "--pin (or HARE_PIN) cannot be honoured with --tcp",
        ),
        (
            &["--tcp", "--cert", "c.pem", "-n", "1m"],
            "--cert cannot be honoured with --tcp",
        ),
        (
            &["--tcp", "--qlog", "q", "-n", "1m"],
            "--qlog cannot be honoured with --tcp",
        ),
        (&["--pin", "00", "-n", "1m"], "bad pin `00`"),
        // The host given before the files: the "file" does not exist.
        (
            &["--pin", &"a".repeat(64), "127.0.0.1", "/nonexistent/x"],
            "No such file or directory (os error 2)",
        ),
        (
            &["--ca", "/nonexistent/ca.pem", "-n", "1m"],
            "No such file or directory (os error 2)",
        ),
    ];
    for (args, expect) in cases {
        let mut cmd = hare_send();
        cmd.args(*args);
        if !args.contains(&"/nonexistent/x") {
            cmd.arg("127.0.0.1:9");
        }
        let out = run(&mut cmd);
        let err = String::from_utf8_lossy(&out.stderr);
        let status = if args.contains(&"/nonexistent/x") {
            1
        } else {
            2
        };
        assert_eq!(out.status.code(), Some(status), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        for debug in ["Some(", "DnsName(", "Os {", "kind:"] {
            assert!(!err.contains(debug), "{args:?}: {err}");
        }
        // The cause appears once even when it is an OS error.
        if let Some(at) = err.find("(os error") {
            assert!(!err[at + 1..].contains("(os error"), "{args:?}: {err}");
        }
    }
}

/// `-R 0` (and `0k`) is "no limit", as iperf3's `-b 0`.
#[test]
fn rate_zero_is_no_limit() {
    let (_id, r) = receiver(None);
    let fp = r.fingerprint.expect("fingerprint").to_string();
    for zero in ["0", "0k"] {
        let out = run(hare_send().args([
            "-R",
            zero,
            "-n",
            "2m",
            "--json",
            "-",
            "--pin",
            &fp,
            &r.addr.to_string(),
        ]));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(v["end"]["sum_received"]["bytes"].as_u64(), Some(2 << 20));
    }
}

/// `-P 3`: each interval and the summary print one line per stream, then a `[SUM]` line whose
/// bytes are theirs added up (compared in the printed MB, four decimals).
#[test]
fn parallel_streams_print_per_stream_lines_and_a_sum() {
    let (_id, r) = receiver(None);
    let fp = r.fingerprint.expect("fingerprint").to_string();
    let out = run(hare_send().args([
        "-n",
        "24m",
        "-P",
        "3",
        "-i",
        "0.2",
        "--pin",
        &fp,
        &r.addr.to_string(),
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mb = |l: &str| -> f64 {
        let body = &l[5..];
        body.split_whitespace()
            .next()
            .and_then(|w| w.parse().ok())
            .expect("MB")
    };
    let lines: Vec<&str> = text.lines().filter(|l| l.contains(" MB / ")).collect();
    let sums: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("[SUM]"))
        .collect();
    assert!(sums.len() >= 2, "interval and summary [SUM] lines: {text}");
    for &i in &sums {
        assert!(i >= 3, "{text}");
        let streams = &lines[i - 3..i];
        for (k, l) in streams.iter().enumerate() {
            assert!(l.starts_with(&format!("[{:3}]", k + 1)), "{text}");
        }
        let added: f64 = streams.iter().map(|l| mb(l)).sum();
        assert!((added - mb(lines[i])).abs() < 0.0003, "{text}");
    }
    let last = lines[lines.len() - 1];
    assert!(last.starts_with("[SUM]") && last.contains("%TX"), "{text}");
    assert!((mb(last) - 24.0).abs() < 1e-9, "{text}");
}

/// scp's order (`hare-send HOST FILE`) gets one hint that the receiver goes last.
#[test]
fn host_named_first_is_told_to_go_last() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("data.bin");
    std::fs::write(&file, b"x").expect("file");
    let out = run(hare_send().current_dir(dir.path()).args([
        "--pin",
        &"ab".repeat(32),
        "127.0.0.1",
        "data.bin",
    ]));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("goes last"), "{err}");
    assert_eq!(err.matches("127.0.0.1").count(), 1, "{err}");
    assert!(!err.contains("No such file"), "{err}");
}

/// `-r` from the command line: the receiver sends, SIGTERM here ends the run with a summary
/// (exit 0), the JSON says reverse and carries the sender's report; files are refused.
#[test]
fn reverse_mode_runs_stops_on_sigterm_and_refuses_files() {
    let (_id, r) = receiver(None);
    let fp = r.fingerprint.expect("fingerprint").to_string();
    let (child, _dir) = timed_run_with_data(&["-r"], &fp, r.addr);
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("signal");
    let out = wait_bounded(child, Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["start"]["test_start"]["reverse"], 1);
    let bytes = v["end"]["sum_received"]["bytes"].as_u64().expect("bytes");
    assert!(bytes > 0 && bytes < 200_000_000, "{bytes}");
    assert_eq!(v["end"]["sum_sent"]["bytes"].as_u64(), Some(bytes));
    let said = |prefix: &str| {
        v["events"].as_array().expect("events").iter().any(|e| {
            e["kind"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with(prefix))
        })
    };
    assert!(said("interrupted (SIGTERM)"));
    // The sender's report came back and names its controller.
    assert!(said("the receiver's cubic@linux-6:"), "{v}");

    // A combination of options it cannot honour: a usage error (status 2, as clap's).
    let out = run(hare_send().args(["-r", "--pin", &fp, "Cargo.toml", &r.addr.to_string()]));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("-r with files: reverse mode moves bulk data only"),
        "{err}"
    );
}

/// A file that fails exits 3, a refused job 4, a sender the receiver does not authorise 5.
#[test]
fn exit_statuses_say_files_failed_refused_and_not_authorised() {
    let dst = tempfile::tempdir().expect("tempdir");
    let (_id, r) = receiver(Some(dst.path()));
    let fp = r.fingerprint.expect("fingerprint").to_string();
    let src = tempfile::tempdir().expect("tempdir");
    let t = src.path().join("t");
    std::fs::create_dir(&t).expect("mkdir");
    std::fs::write(t.join("good"), b"good").expect("w");
    std::fs::write(t.join("a\\b"), b"a name no receiver takes").expect("w");
    let send_tree = || {
        run(hare_send()
            .args(["-q", "--pin", &fp])
            .arg(&t)
            .arg(r.addr.to_string()))
    };
    let out = send_tree();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("1 of 2 file(s) failed"), "{err}");
    // A rerun skips what arrived; a directory where a file goes refuses the job.
    let good = dst.path().join("t/good");
    std::fs::remove_file(&good).expect("rm");
    std::fs::create_dir(&good).expect("mkdir");
    let out = send_tree();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("t/good: exists as a directory"), "{err}");

    let id = tempfile::tempdir().expect("tempdir");
    let mut o = recv_options(id.path().into(), None);
    o.allow = vec![Fingerprint::of(b"somebody else")];
    let strict = BackgroundReceiver::start(o).expect("receiver");
    let pin = strict.fingerprint.expect("fingerprint").to_string();
    let out = run(hare_send().args(["-n", "1m", "--pin", &pin, &strict.addr.to_string()]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("not authorised"), "{err}");
    let out = run(hare_send().arg("--no-such-option"));
    assert_eq!(out.status.code(), Some(2), "clap's usage status");
}

/// SIGTERM stops a file transfer like Ctrl-C, with 128 + 15.
#[test]
fn sigterm_stops_a_file_transfer_with_143() {
    let dst = tempfile::tempdir().expect("tempdir");
    let (_id, r) = receiver(Some(dst.path()));
    let src = tempfile::tempdir().expect("tempdir");
    let file = src.path().join("big.bin");
    std::fs::write(&file, vec![7u8; 3 << 20]).expect("write");
    let out = interrupted_file_send(&file, dst.path(), &r, nix::sys::signal::Signal::SIGTERM);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(err.contains("interrupted"), "{err}");
}

/// A UDP relay to `to` that forwards both ways until `cut` is set, then drops everything:
/// to the sender the receiver has gone silent. Its threads end within 60 s.
fn relay(
    to: std::net::SocketAddr,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::net::SocketAddr {
    use std::net::UdpSocket;
    use std::sync::atomic::Ordering;
    use std::sync::{Arc, Mutex};
    let front = UdpSocket::bind("127.0.0.1:0").expect("front");
    let back = UdpSocket::bind("127.0.0.1:0").expect("back");
    back.connect(to).expect("connect");
    for s in [&front, &back] {
        s.set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
    }
    let addr = front.local_addr().expect("addr");
    let client = Arc::new(Mutex::new(None));
    let (front2, back2) = (
        front.try_clone().expect("clone"),
        back.try_clone().expect("clone"),
    );
    let (cut2, client2) = (cut.clone(), client.clone());
    let until = Instant::now() + Duration::from_secs(60);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        while Instant::now() < until {
            if let Ok((n, from)) = front.recv_from(&mut buf) {
                *client2.lock().expect("lock") = Some(from);
                if !cut2.load(Ordering::Relaxed) {
                    let _ = back.send(&buf[..n]);
                }
            }
        }
    });
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        while Instant::now() < until {
            if let Ok(n) = back2.recv(&mut buf) {
                let to = *client.lock().expect("lock");
                if let (false, Some(c)) = (cut.load(Ordering::Relaxed), to) {
                    let _ = front2.send_to(&buf[..n], c);
                }
            }
        }
    });
    addr
}

/// A receiver that goes silent mid-run ends the run after --idle-timeout with status 6.
#[test]
fn a_silent_receiver_exits_6_after_the_idle_timeout() {
    let (_id, r) = receiver(None);
    let fp = r.fingerprint.expect("fingerprint").to_string();
    let cut = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let via = relay(r.addr, cut.clone());
    let child = hare_send()
        .args([
            "-T",
            "30",
            "-R",
            "10m",
            "--idle-timeout",
            "2",
            "--keep-alive",
            "0.5",
        ])
        .args(["-q", "--pin", &fp, &via.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(1500));
    cut.store(true, std::sync::atomic::Ordering::Relaxed);
    let t = Instant::now();
    let out = wait_bounded(child, Duration::from_secs(20));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(err.contains("went silent"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(6), "{:?}", t.elapsed());
}

/// Once the receiver holds some of `name` in `dst`, `then` runs (within 4 s either way).
fn once_receiving(
    dst: &Path,
    name: &str,
    then: impl FnOnce() + Send + 'static,
) -> std::thread::JoinHandle<()> {
    let (dst, name) = (dst.to_path_buf(), name.to_owned());
    std::thread::spawn(move || {
        for _ in 0..400 {
            if in_progress(&dst, &name).iter().any(|(_, n)| *n > 0) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        then();
    })
}

/// Three files to send one at a time in `src`: `first.bin` (2 MiB: sent at `-R 16m` it
/// takes about a second), `gone.txt`, removed once `dst` holds some of `first.bin`, and
/// `last.txt` (4 bytes). Returns the directory, the three paths and the remover.
fn three_with_one_gone(
    dst: &Path,
) -> (
    tempfile::TempDir,
    [std::path::PathBuf; 3],
    std::thread::JoinHandle<()>,
) {
    let src = tempfile::tempdir().expect("tempdir");
    let paths = ["first.bin", "gone.txt", "last.txt"].map(|n| src.path().join(n));
    std::fs::write(&paths[0], vec![3u8; 2 << 20]).expect("w");
    std::fs::write(&paths[1], b"listed").expect("w");
    std::fs::write(&paths[2], b"last").expect("w");
    let gone = paths[1].clone();
    let remover = once_receiving(dst, "first.bin", move || {
        std::fs::remove_file(gone).expect("remove")
    });
    (src, paths, remover)
}

/// A source file removed between the listing and its turn fails at once with its reason, the
/// others arrive, and the run exits 3 (some files failed).
#[test]
fn a_source_that_cannot_be_opened_fails_that_file_with_status_3() {
    let dst = tempfile::tempdir().expect("tempdir");
    let (_id, r) = receiver(Some(dst.path()));
    let fp = r.fingerprint.expect("fingerprint").to_string();
    let (_src, [first, gone, last], remover) = three_with_one_gone(dst.path());
    let t = Instant::now();
    let out = run(hare_send()
        .args(["-q", "-P", "1", "-R", "16m", "--pin", &fp])
        .args([&first, &gone, &last])
        .arg(r.addr.to_string()));
    remover.join().expect("remover");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            format!(
                "hare-send: gone.txt: cannot open {}: No such file or directory (os error 2)",
                gone.display()
            )
            .as_str(),
            "hare-send: error: 1 of 3 file(s) failed",
        ]
    );
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    assert_eq!(
        std::fs::read(dst.path().join("last.txt")).expect("r"),
        b"last"
    );
    assert!(dst.path().join("first.bin").exists());
}

/// A file sent again because it changed says so when it happens (an event line among the
/// interval lines, long before the end), and the end summary still says it was retried.
#[test]
fn a_retry_is_said_when_it_happens() {
    use std::io::{BufRead, Seek, SeekFrom, Write};
    let dst = tempfile::tempdir().expect("tempdir");
    let (_id, r) = receiver(Some(dst.path()));
    let fp = r.fingerprint.expect("fingerprint").to_string();
    let src = tempfile::tempdir().expect("tempdir");
    let live = src.path().join("live.log");
    std::fs::write(&live, vec![5u8; 2 << 20]).expect("w");
    let writer = {
        let live = live.clone();
        once_receiving(dst.path(), "live.log", move || {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(live)
                .expect("open");
            f.seek(SeekFrom::Start(1536 << 10)).expect("seek");
            f.write_all(&[0x55; 4096]).expect("rewrite");
        })
    };
    let mut child = hare_send()
        .args(["-R", "16m", "--pin", &fp])
        .arg(&live)
        .arg(r.addr.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let lines = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            seen.push((Instant::now(), line));
        }
        seen
    });
    let out = wait_bounded(child, Duration::from_secs(60));
    let ended = Instant::now();
    writer.join().expect("writer");
    let seen = lines.join().expect("lines");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let said =
        "live.log: changed while being sent (it was modified); sending it again (attempt 2 of 4)";
    let (at, _) = seen
        .iter()
        .find(|(_, l)| {
            l.trim_start()
                .split_once(" s  ")
                .is_some_and(|(_, m)| m == said)
        })
        .unwrap_or_else(|| panic!("{said} in {seen:?}"));
    // The second attempt (2 MiB at 16 Mbit/s) takes about a second after the line.
    assert!(
        ended.duration_since(*at) > Duration::from_millis(500),
        "{seen:?}"
    );
    assert!(
        err.contains("hare-send: live.log: changed while being sent; retried 1 time(s), delivered as last read"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(dst.path().join("live.log")).expect("r"),
        std::fs::read(&live).expect("r")
    );
}

/// Run `cmd` with its stdout and stderr on a pseudo-terminal (200 columns), as a user's
/// terminal: the progress bar is drawn. Returns the exit status and everything written, with
/// the terminal's control sequences left out and each `\r` or `\n` ending a piece.
fn run_on_a_terminal(cmd: &mut Command) -> (Option<i32>, Vec<String>) {
    run_on_a_terminal_of(cmd, 200)
}

/// [`run_on_a_terminal`] on a terminal `columns` wide.
fn run_on_a_terminal_of(cmd: &mut Command, columns: u16) -> (Option<i32>, Vec<String>) {
    use std::io::Read;
    let pty = hare_transfer::testkit::terminal_of(columns);
    let out = pty.slave.try_clone().expect("dup");
    cmd.stdout(Stdio::from(out)).stderr(Stdio::from(pty.slave));
    let child = cmd.spawn().expect("spawn hare-send");
    // Only the child holds the terminal's other end now: reading ends when it exits.
    drop(std::mem::replace(cmd, Command::new("true")));
    let reader = std::thread::spawn(move || {
        let mut master = std::fs::File::from(pty.master);
        let (mut all, mut buf) = (Vec::new(), [0u8; 4096]);
        // At most 8 MiB, so a runaway child cannot fill memory; EIO once the child is gone.
        while all.len() < 8 << 20 {
            match master.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
        all
    });
    let status = wait_bounded(child, Duration::from_secs(60)).status.code();
    let text = String::from_utf8_lossy(&reader.join().expect("reader")).into_owned();
    (status, screen_pieces(&text))
}

/// On a terminal the overall bar counts a failed file as settled: a job whose middle file
/// fails ends at `files 3/3 (1 failed)` with its bytes complete (what the failed file did
/// not send is off the total), and the summary still says which failed.
#[test]
fn the_progress_bar_ends_complete_with_a_failed_file_counted() {
    let dst = tempfile::tempdir().expect("tempdir");
    let (_id, r) = receiver(Some(dst.path()));
    let fp = r.fingerprint.expect("fingerprint").to_string();
    let (_src, [first, gone, last], remover) = three_with_one_gone(dst.path());
    let (status, pieces) = run_on_a_terminal(
        hare_send()
            .args(["-P", "1", "-R", "16m", "--pin", &fp])
            .args([&first, &gone, &last])
            .arg(r.addr.to_string()),
    );
    remover.join().expect("remover");
    assert_eq!(status, Some(3), "{pieces:#?}");
    let bars: Vec<&String> = pieces.iter().filter(|p| p.starts_with("files ")).collect();
    let last_bar = bars.last().expect("the bar was drawn");
    assert!(
        last_bar.starts_with("files 3/3 (1 failed) "),
        "{last_bar:?} in {bars:#?}"
    );
    // 2 MiB and 4 bytes: all of it sent.
    assert!(last_bar.contains(" 2.00 MiB/2.00 MiB "), "{last_bar:?}");
    assert!(
        pieces
            .iter()
            .any(|p| p == "hare-send: error: 1 of 3 file(s) failed"),
        "{pieces:#?}"
    );
}

/// `hare-send . HOST` sends what is in the current directory, each entry under its own name,
/// as `rsync -r . HOST:` does (a source without a file name of its own).
#[test]
fn dot_sends_the_current_directory_contents() {
    let dst = tempfile::tempdir().expect("tempdir");
    let (_id, r) = receiver(Some(dst.path()));
    let fp = r.fingerprint.expect("fingerprint").to_string();
    let src = tempfile::tempdir().expect("tempdir");
    std::fs::write(src.path().join("a.txt"), b"alpha").expect("w");
    std::fs::create_dir(src.path().join("sub")).expect("mkdir");
    std::fs::write(src.path().join("sub").join("b.txt"), b"beta").expect("w");
    let out = run(hare_send()
        .current_dir(src.path())
        .args(["-q", "--pin", &fp, "."])
        .arg(r.addr.to_string()));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        std::fs::read(dst.path().join("a.txt")).expect("a"),
        b"alpha"
    );
    let b = std::fs::read(dst.path().join("sub").join("b.txt")).expect("b");
    assert_eq!(b, b"beta");
}

/// A name the sender refuses (a newline in it) is escaped in the sender's own error lines:
/// each line still starts with `hare-send:`, whether other files go (status 3) or none can.
#[test]
fn a_refused_name_with_a_newline_does_not_split_the_error_line() {
    let dst = tempfile::tempdir().expect("tempdir");
    let (_id, r) = receiver(Some(dst.path()));
    let fp = r.fingerprint.expect("fingerprint").to_string();
    let src = tempfile::tempdir().expect("tempdir");
    let bad = src.path().join("evil\nname.txt");
    std::fs::write(&bad, b"x").expect("w");
    let good = src.path().join("good.txt");
    std::fs::write(&good, b"good").expect("w");
    for (files, status) in [(vec![&bad, &good], 3), (vec![&bad], 2)] {
        let out = run(hare_send()
            .args(["-q", "--pin", &fp])
            .args(files)
            .arg(r.addr.to_string()));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "{err}");
        assert!(err.contains("evil\\nname.txt: "), "{err}");
        for line in err.lines() {
            assert!(line.starts_with("hare-send: "), "{line:?} in {err}");
        }
    }
}

/// No line of a bulk run with two streams wraps on a terminal 60 or 100 columns wide, nor
/// on a wide one whose `COLUMNS` says 60: header, units, intervals (per stream and `[SUM]`)
/// and summary. Narrower than 100 columns the lines take their compact form under a heading;
/// at 100 they are nuttcp's full lines.
#[test]
fn every_line_fits_terminals_of_60_and_100_columns() {
    let (_id, r) = receiver(None);
    let fp = r.fingerprint.expect("fingerprint").to_string();
    for (columns, env) in [(60u16, None), (100, None), (200, Some("60"))] {
        let mut cmd = hare_send();
        cmd.args(["-T", "2", "-P", "2", "-R", "40m", "--pin", &fp])
            .arg(r.addr.to_string());
        if let Some(c) = env {
            cmd.env("COLUMNS", c);
        }
        let (status, pieces) = run_on_a_terminal_of(&mut cmd, columns);
        assert_eq!(status, Some(0), "{pieces:#?}");
        let width = env.map_or(usize::from(columns), |c| c.parse().expect("columns"));
        for p in &pieces {
            assert!(
                p.trim_end().chars().count() <= width,
                "{width}: {p:?} in {pieces:#?}"
            );
        }
        let has = |f: &dyn Fn(&str) -> bool| pieces.iter().any(|p| f(p));
        assert!(has(&|p| p.starts_with("hare-send -> ")), "{pieces:#?}");
        assert!(has(
            &|p| p.contains("units: MB and MiB = 2^20 bytes, Mbps = 10^6 bit/s")
        ));
        assert!(has(&|p| p.starts_with("[  2]")), "{pieces:#?}");
        let sums = pieces.iter().filter(|p| p.starts_with("[SUM]")).count();
        assert!(sums >= 2, "interval and summary [SUM] lines: {pieces:#?}");
        let summary = pieces.last().expect("lines");
        assert!(
            summary.starts_with("[SUM]") && summary.contains("TX"),
            "{pieces:#?}"
        );
        if width < 100 {
            assert!(
                has(&|p| p.ends_with("MB     s     Mbps  lost   cwnd")),
                "{pieces:#?}"
            );
        } else {
            assert!(
                has(&|p| p.starts_with("[SUM]") && p.contains(" MB / ")),
                "{pieces:#?}"
            );
        }
    }
}

/// On terminals 100 and 60 columns wide nothing of the bar is drawn after the summary.
/// (indicatif redraws lines printed through it padded and joined by cursor moves, so line
/// widths are not read from this stream.)
#[test]
fn the_report_fits_the_terminal_and_no_bar_follows_the_summary() {
    let dst = tempfile::tempdir().expect("tempdir");
    let (_id, r) = receiver(Some(dst.path()));
    let fp = r.fingerprint.expect("fingerprint").to_string();
    let src = tempfile::tempdir().expect("tempdir");
    let f = src.path().join("four.bin");
    std::fs::write(&f, vec![7u8; 4 << 20]).expect("w");
    for columns in [100u16, 60] {
        let (status, pieces) = run_on_a_terminal_of(
            hare_send()
                .args(["--force", "-R", "16m", "--pin", &fp])
                .arg(&f)
                .arg(r.addr.to_string()),
            columns,
        );
        assert_eq!(status, Some(0), "{pieces:#?}");
        let summary = pieces
            .iter()
            .rposition(|p| p.contains("%TX"))
            .expect("a summary");
        // indicatif joins the lines of one redraw: the summary's piece may start with the
        // bar's final-state line, but no bar (`ETA`) follows the summary.
        let after = pieces[summary].split("%TX").nth(1).unwrap_or_default();
        assert!(!after.contains("ETA"), "{columns}: {pieces:#?}");
        assert!(
            pieces[summary + 1..].iter().all(|p| !p.contains("files ")),
            "{columns}: {pieces:#?}"
        );
    }
}

/// `--help` states the report's units once: MB (and MiB) as nuttcp's 2^20 bytes, Mbps as
/// 10^6 bit/s, cwnd in packets.
#[test]
fn help_states_the_units() {
    let out = run(hare_send().arg("--help"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Units of the report: MB, MiB = 2^20 bytes (as nuttcp), Mbps = 10^6 bit/s"),
        "{text}"
    );
    assert!(text.contains("cwnd in packets"), "{text}");
}
