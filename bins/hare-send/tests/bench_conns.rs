//! `hare-send bench --connections`: a tiny loopback run, and a short one through the namespace
//! emulator (root; it fails under CI=true or as root when namespaces cannot run, and is
//! skipped with the reason otherwise).
//!
//! The bench runs hare-recv from hare-send's directory: when it is not there yet, it is built
//! with the running cargo (`cargo build -p hare-recv`).

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The two runs share the machine's two cores: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// hare-send, with hare-recv beside it.
fn hare_send() -> PathBuf {
    let send = PathBuf::from(env!("CARGO_BIN_EXE_hare-send"));
    let dir = send.parent().expect("hare-send's directory").to_path_buf();
    if !dir.join("hare-recv").is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(&cargo)
            .args(["build", "-p", "hare-recv"])
            .status()
            .expect("running cargo build -p hare-recv");
        assert!(st.success(), "cargo build -p hare-recv: {st}");
    }
    assert!(dir.join("hare-recv").is_file(), "no hare-recv in {dir:?}");
    send
}

/// Runs hare-send with `args`, killed after `limit`.
fn bench(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(hare_send())
        .args(args)
        .env_remove("HARE_PIN")
        .env_remove("HARE_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hare-send bench");
    let t = Instant::now();
    while t.elapsed() < limit && matches!(child.try_wait(), Ok(None)) {
        std::thread::sleep(Duration::from_millis(50));
    }
    if matches!(child.try_wait(), Ok(None)) {
        let _ = child.kill();
    }
    child.wait_with_output().expect("bench output")
}

/// The table's row of `n` (the line that starts with it, right-aligned in four columns).
fn row(stdout: &str, n: u16) -> Option<String> {
    let head = format!("{n:>4} ");
    let mut in_table = false;
    for l in stdout.lines() {
        if l.starts_with("  -C  runs") {
            in_table = true;
        } else if in_table && l.starts_with(&head) {
            return Some(l.to_owned());
        }
    }
    None
}

#[test]
fn loopback_bench_has_a_row_per_n() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = bench(
        &[
            "bench",
            "--connections",
            "1,2",
            "-T",
            "0.5",
            "--rounds",
            "1",
        ],
        Duration::from_secs(90),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("load average before"), "{stdout}");
    assert!(stdout.contains("round 1 -C 1: "), "{stdout}");
    assert!(stdout.contains("round 1 -C 2: "), "{stdout}");
    let one = row(&stdout, 1).expect("a row for -C 1");
    let two = row(&stdout, 2).expect("a row for -C 2");
    // -C 1 is the reference: its ratios are 1 exactly.
    assert_eq!(one.matches("1.000").count(), 3, "{one}");
    assert!(one.contains("1/1") && two.contains("1/1"), "{stdout}");
    assert!(!two.contains(" - "), "every figure of -C 2 is known: {two}");
}

#[test]
fn bad_connection_lists_are_refused_by_name() {
    let out = bench(&["bench", "--connections", "1,33"], Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--connections 1,33: 33: must be 1 to 32"),
        "{stderr}"
    );
}

#[test]
fn emulator_bench_reports_a_verdict_per_run() {
    if let Some(why) = hare_emu::netns::unavailable_reason() {
        let required = hare_emu::netns::is_root()
            || std::env::var("CI").is_ok_and(|v| v == "true")
            || std::env::var_os("HARE_REQUIRE_NETNS").is_some();
        assert!(
            !required,
            "namespace mode is required here but cannot run: {why}"
        );
        eprintln!("skipped: {why}");
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = bench(
        &[
            "bench",
            "--connections",
            "1,2",
            "--rate",
            "50m",
            "--rtt",
            "20ms",
            "-T",
            "1",
            "--rounds",
            "1",
        ],
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("namespace emulator 50 Mbit/s x 20 ms"),
        "{stdout}"
    );
    for n in [1u16, 2] {
        let line = stdout
            .lines()
            .find(|l| l.contains(&format!("round 1 -C {n}: ")))
            .unwrap_or_else(|| panic!("no run line of -C {n}: {stdout}"));
        assert!(
            line.ends_with("VALID") || line.contains("INVALID (left out)"),
            "{line}"
        );
        assert!(row(&stdout, n).is_some(), "no row for -C {n}: {stdout}");
    }
}
