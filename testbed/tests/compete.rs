//! `hare-lab compete` through the namespace emulator (root): one hare flow against one kernel
//! TCP CUBIC flow on 100 Mbit/s x 40 ms with a 1-BDP queue for 40 s, and two kernel TCP
//! CUBIC flows as the control. Both flows must finish and the emulator must call the run
//! VALID; the goodput ratio is printed. Without namespaces the test fails as root or under
//! `CI=true` and is skipped (saying why) elsewhere.

use std::path::{Path, PathBuf};
use std::process::Command;

use hare_emu::netns;
use hare_emu::scenario::transfer::find_or_build_bins;

/// Attempts at a run the emulator calls VALID (a run the host stalled is rejected by the
/// emulator's own check, and says nothing about the flows).
const ATTEMPTS: u32 = 3;

/// hare-send / hare-recv, or `None` when namespaces are missing and not required.
fn bins() -> Option<PathBuf> {
    if let Some(why) = netns::unavailable_reason() {
        let required = netns::is_root() || std::env::var_os("CI").is_some_and(|v| v == "true");
        assert!(
            !required,
            "namespace mode is required here but cannot run: {why}"
        );
        eprintln!("skipped: {why}");
        return None;
    }
    Some(find_or_build_bins().expect("hare-send / hare-recv"))
}

/// Runs `hare-lab compete --json` on the shipped scenario `name` until VALID; its summary.
fn compete(bin_dir: &Path, name: &str) -> serde_json::Value {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/flows")
        .join(format!("{name}.toml"));
    let work = std::env::temp_dir().join(format!("hare-compete-{}-{name}", std::process::id()));
    let mut last = String::new();
    for attempt in 1..=ATTEMPTS {
        let out = Command::new(env!("CARGO_BIN_EXE_hare-lab"))
            .arg("compete")
            .arg(&file)
            .arg("--json")
            .arg("-o")
            .arg(&work)
            .arg("--bin-dir")
            .arg(bin_dir)
            .output()
            .expect("hare-lab runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let summary: Option<serde_json::Value> = serde_json::from_str(stdout.trim()).ok();
        if out.status.success() {
            // The page of the run: the goodput and cwnd plots, and no queue plot, said so.
            let page = std::fs::read_to_string(work.join("index.html")).expect("index.html");
            assert_eq!(page.matches("<figure>").count(), 2, "{name}: two plots");
            assert!(
                page.contains("not sampled in this run"),
                "{name}: queue note"
            );
            let png = work.join(format!("{name}.flows-throughput.png"));
            assert!(
                std::fs::metadata(&png).is_ok_and(|m| m.len() > 1000),
                "{name}"
            );
            let _ = std::fs::remove_dir_all(&work);
            return summary.expect("a JSON summary");
        }
        // Only an emulator verdict is retried; anything else fails at once.
        assert!(
            summary.is_some() && stderr.contains("INVALID"),
            "{name}: {stderr}\n{stdout}"
        );
        eprintln!("{name}: attempt {attempt} INVALID: {stderr}");
        last = stderr;
    }
    panic!("{name}: no VALID run in {ATTEMPTS} attempts: {last}");
}

fn check(name: &str, v: &serde_json::Value) {
    let flows = v["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 2, "{v}");
    for f in flows {
        assert!(f["error"].is_null(), "{name}: {f}");
        // 40 s at a share of 100 Mbit/s: each flow moves far more than 10 MB.
        assert!(
            f["bytes"].as_u64().is_some_and(|b| b > 10_000_000),
            "{name}: {f}"
        );
    }
    assert_eq!(v["valid"], true, "{v}");
    let ratio = v["ratio_f0_f1"].as_f64().expect("a goodput ratio");
    eprintln!(
        "{name}: f0 {} {:.2} Mbit/s, f1 {} {:.2} Mbit/s, ratio f0/f1 {ratio:.3}, Jain {}",
        flows[0]["controller"],
        flows[0]["goodput_mbps"].as_f64().unwrap_or(0.0),
        flows[1]["controller"],
        flows[1]["goodput_mbps"].as_f64().unwrap_or(0.0),
        v["jain"]
    );
}

#[test]
fn hare_cubic_against_kernel_cubic_and_the_kernel_control() {
    let Some(bin_dir) = bins() else { return };
    for name in ["hare-cubic-vs-tcp-cubic", "tcp-cubic-vs-tcp-cubic"] {
        let v = compete(&bin_dir, name);
        check(name, &v);
    }
}
