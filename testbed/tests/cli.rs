//! The `hare-lab` binary: help, bad arguments, and short end-to-end runs through the
//! simulator (100 Mbit/s x 20 ms for 3 s, well under a second each).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hare-lab"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("hare-lab runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A fresh directory under the system temp dir, unique to this test and process.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hare-lab-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// A short scenario that replays the thread's Reno run (so the thread column is filled) on a
/// small path.
const SMALL_REPLAY: &str = r#"
name = "small-reno"
description = "Reno on 100 Mbit/s x 20 ms for 3 s"
controllers = ["reno@linux-2.6.20"]
mtu = 1452
seed = 7
[path]
rtt = "20ms"
[path.forward]
rate = "100m"
queue_packets = 200
[windows]
socket_buffer = "1m"
[workload]
duration = "3s"
[replay]
runs = ["2007-reno-w60m"]
"#;

#[test]
fn help_lists_the_subcommands() {
    let out = run(&["--help"]);
    assert!(out.status.success());
    let s = text(&out.stdout);
    for sub in ["replay", "sim", "bench", "list", "check"] {
        assert!(s.contains(sub), "{sub} missing from:\n{s}");
    }
    let out = run(&["replay", "--help"]);
    let s = text(&out.stdout);
    for flag in ["--out", "--json", "--jobs", "--max-seconds", "RUN-ID"] {
        assert!(s.contains(flag), "{flag} missing from:\n{s}");
    }
    let out = run(&["bench", "sim", "--help"]);
    assert!(text(&out.stdout).contains("--seconds"));
}

#[test]
fn bad_arguments_are_rejected_with_a_reason() {
    let out = run(&["replay", "--jobs", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--jobs"),
        "{}",
        text(&out.stderr)
    );

    let out = run(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));

    let out = run(&["replay", "no-such-run", "-o", "/nonexistent-never-created"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("unknown run id or scenario `no-such-run`"),
        "{}",
        text(&out.stderr)
    );

    let out = run(&["sim", "/no/such/scenario.toml"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("/no/such/scenario.toml: cannot read"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn check_accepts_the_shipped_scenarios() {
    let out = run(&["check"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "29 scenario file(s) OK");
}

fn write_small(dir: &Path) {
    std::fs::write(dir.join("small-reno.toml"), SMALL_REPLAY).expect("write scenario");
}

#[test]
fn replay_end_to_end_with_json_files_and_plots() {
    let d = scratch("replay");
    let scen = d.join("scenarios");
    std::fs::create_dir_all(&scen).expect("dir");
    write_small(&scen);
    let out_dir = d.join("out");
    let out = bin()
        .args([
            "replay",
            "2007-reno-w60m",
            "--json",
            "-",
            "--jobs",
            "1",
            "-o",
        ])
        .arg(&out_dir)
        .arg("--scenarios")
        .arg(&scen)
        .output()
        .expect("runs");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Human output goes to stderr with --json -: side by side, then the table.
    assert!(stderr.contains("thread: nuttcp -T10 -i1 -w60m"), "{stderr}");
    assert!(
        stderr.contains("   2 |   844.3870 MB /   1.00 sec = 7083.2808 Mbps"),
        "{stderr}"
    );
    assert!(stderr.contains("t90% s thr"), "{stderr}");
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(lines[0]).expect("a JSON object");
    for key in [
        "id",
        "controller",
        "time_to_90pct_s",
        "exit_cwnd_segments",
        "exit_reason",
        "lost_packets_10s",
        "avg_mbps",
        "thread_time_to_90pct_s",
        "thread_avg_mbps",
    ] {
        assert!(v.get(key).is_some(), "{key} missing in {v}");
    }
    assert_eq!(v["id"], "2007-reno-w60m");
    assert_eq!(v["controller"], "reno@linux-2.6.20");
    assert_eq!(v["thread_time_to_90pct_s"], 2.01);
    assert_eq!(v["thread_avg_mbps"], 6554.4883);
    assert_eq!(v["thread_lost_packets_10s"], 0);
    let avg = v["avg_mbps"].as_f64().expect("number");
    assert!(avg > 50.0 && avg < 100.0, "{avg}");
    for f in [
        "2007-reno-w60m.jsonl",
        "2007-reno-w60m.100ms.jsonl",
        "2007-reno-w60m.trace.csv",
        "2007-reno-w60m.throughput.svg",
        "2007-reno-w60m.throughput.png",
        "2007-reno-w60m.cwnd.svg",
        "2007-reno-w60m.cwnd.png",
        "summary.txt",
        "replay.jsonl",
    ] {
        let p = out_dir.join(f);
        assert!(
            p.metadata().map(|m| m.len() > 0).unwrap_or(false),
            "{} missing or empty",
            p.display()
        );
    }
    let report = std::fs::read_to_string(out_dir.join("2007-reno-w60m.jsonl")).expect("report");
    let parsed = hare_report::jsonl::read_run(report.as_bytes(), "report").expect("a hare report");
    assert_eq!(parsed.run.header.run_id, "2007-reno-w60m");
    assert_eq!(parsed.run.header.seed, Some(7));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn sim_prints_nuttcp_lines_and_is_deterministic() {
    let d = scratch("sim");
    write_small(&d);
    let scen = d.join("small-reno.toml");
    let mut reports = Vec::new();
    for k in 0..2 {
        let o = d.join(format!("o{k}"));
        let out = bin()
            .arg("sim")
            .arg(&scen)
            .arg("-o")
            .arg(&o)
            .output()
            .expect("runs");
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(stdout.contains(" MB /   1.00 sec = "), "{stdout}");
        assert!(stdout.contains("Mbps"), "{stdout}");
        assert!(stdout.contains("avg Mbit/s hare"), "{stdout}");
        reports.push(std::fs::read(o.join("2007-reno-w60m.jsonl")).expect("report written"));
    }
    assert_eq!(
        reports[0], reports[1],
        "same scenario and seed gave different reports"
    );
    let out = bin()
        .arg("sim")
        .arg(&scen)
        .arg("--json")
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).expect("JSON");
    assert_eq!(v["scenario"], "small-reno");
    let _ = std::fs::remove_dir_all(&d);
}
