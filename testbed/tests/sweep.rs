//! `hare-lab sweep`: a 48-cell grid run whole and as four shards in four processes merges
//! into the same table; mixed definitions are refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hare-lab"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hare-lab-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// A tiny path: 20 Mbit/s x 10 ms, 60 kB per run (a few ms of CPU each).
const BASE: &str = r#"
name = "tiny"
controllers = ["reno"]
mtu = 1200
ip_version = 4
[path]
rtt = "10ms"
[path.forward]
rate = "20m"
queue_packets = 20
[windows]
stream = "200k"
connection = "200k"
send = "400k"
[workload]
bytes = "60k"
"#;

/// 3 controllers x 2 RTTs x 2 buffers x 4 seeds = 48 cells.
fn sweep_text(name: &str) -> String {
    format!(
        r#"
kind = "sweep"
name = "{name}"
base = "base.toml"
[[axis]]
name = "cc"
field = "controller"
values = ["reno", "cubic@linux-6", "bic@linux-2.6.20"]
[[axis]]
name = "rtt"
values = [{{ label = "10ms", set = {{ "path.rtt" = "10ms" }} }}, {{ label = "20ms", set = {{ "path.rtt" = "20ms" }} }}]
[[axis]]
name = "queue"
field = "path.forward.queue_packets"
values = [10, 40]
[[axis]]
name = "seed"
field = "seed"
values = [1, 2, 3, 4]
"#
    )
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn merge(dirs: &[&Path], out: &Path) -> Output {
    let mut c = bin();
    c.arg("sweep").arg("merge");
    for d in dirs {
        c.arg(d);
    }
    c.arg("-o").arg(out).output().expect("hare-lab runs")
}

#[test]
fn four_shards_merge_into_the_unsharded_table() {
    let d = scratch("shards");
    std::fs::write(d.join("base.toml"), BASE).expect("write base");
    let file = d.join("grid.toml");
    std::fs::write(&file, sweep_text("grid48")).expect("write sweep");

    let whole = d.join("whole");
    let progress = ok(&bin()
        .args(["sweep", "--jobs", "2", "-o"])
        .arg(&whole)
        .arg(&file)
        .output()
        .expect("hare-lab runs"));

    // Four processes at once, one shard each, into separate directories (as four machines
    // would), then one merge.
    let shard_dirs: Vec<PathBuf> = (0..4).map(|i| d.join(format!("s{i}"))).collect();
    let children: Vec<_> = shard_dirs
        .iter()
        .enumerate()
        .map(|(i, dir)| {
            bin()
                .args(["sweep", "--jobs", "1", "--shard", &format!("{i}/4"), "-o"])
                .arg(dir)
                .arg(&file)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn shard")
        })
        .collect();
    for c in children {
        ok(&c.wait_with_output().expect("shard finishes"));
    }
    for (i, dir) in shard_dirs.iter().enumerate() {
        let lines =
            std::fs::read_to_string(dir.join(format!("shard-{i}-of-4.jsonl"))).expect("shard file");
        assert_eq!(lines.lines().count(), 12, "48 cells / 4 shards");
    }

    let m1 = d.join("m-whole");
    let m4 = d.join("m-shards");
    let t1 = ok(&merge(&[&whole], &m1));
    let refs: Vec<&Path> = shard_dirs.iter().map(|p| p.as_path()).collect();
    let t4 = ok(&merge(&refs, &m4));
    assert!(t4.contains("48 cells, 48 rows"), "{t4}");
    assert!(t1.contains("48 cells, 48 rows"), "{t1}");
    assert!(!t1.contains("missing"), "{t1}");
    let csv1 = std::fs::read_to_string(m1.join("table.csv")).expect("csv");
    let csv4 = std::fs::read_to_string(m4.join("table.csv")).expect("csv");
    assert_eq!(csv1.lines().count(), 49);
    assert_eq!(csv1, csv4, "sharded and unsharded tables differ");
    // Every column names its unit or bin, and the progress lines name theirs the same way
    // with the same figures: each cell's 100 ms time to 90 % as the table has it.
    let header: Vec<&str> = csv1.lines().next().expect("header").split(',').collect();
    assert_eq!(
        header[6..],
        [
            "t90% s (100 ms bins)",
            "exit cwnd/BDP (x)",
            "loss in SS (pkts)",
            "avg Mbit/s (whole run)",
            "t90% s (1 s bins)",
            "exit cwnd (segments)",
            "loss total (pkts)",
            "window cap Mbit/s",
            "error"
        ]
    );
    for line in csv1.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let want = format!(
            "cell {:>4} cc={} rtt={} queue={} seed={}: avg Mbit/s (whole run) {}, t90% s (100 ms bins) {}, exit cwnd (segments) {}",
            f[0], f[1], f[2], f[3], f[4], f[9], f[6], f[11]
        );
        assert!(progress.contains(&want), "{want}\n{progress}");
    }
    assert_eq!(
        std::fs::read_to_string(m1.join("table.txt")).ok(),
        std::fs::read_to_string(m4.join("table.txt")).ok()
    );
    // Every run finished (no error) and has a rate.
    for line in csv1.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        assert!(f[9] != "-" && f[14].is_empty(), "no error: {line}");
    }
    let html = std::fs::read_to_string(m4.join("index.html")).expect("index.html");
    assert!(html.contains("<table>") && html.matches("<figure><svg").count() == 4);

    // A shard of another definition is refused, naming both.
    let other = d.join("other.toml");
    std::fs::write(&other, sweep_text("grid48").replace("[10, 40]", "[10, 41]"))
        .expect("write other");
    let od = d.join("other-out");
    ok(&bin()
        .args(["sweep", "--shard", "0/16", "-o"])
        .arg(&od)
        .arg(&other)
        .output()
        .expect("hare-lab runs"));
    let bad = merge(&[&whole, &od], &d.join("m-bad"));
    assert!(!bad.status.success());
    let err = text(&bad.stderr);
    assert!(err.contains("mixed sweep definitions"), "{err}");

    // Shards missing: refused (a partial table must not pass for the sweep's answer) unless
    // asked for, and then the table says which cells are missing.
    let refused = merge(&refs[..3], &d.join("m-part"));
    assert!(!refused.status.success());
    let err = text(&refused.stderr);
    assert!(
        err.contains("sweep grid48: 12 of 48 cell(s) missing: [3, ")
            && err.contains("--allow-missing"),
        "{err}"
    );
    let mut partial = bin();
    partial.args(["sweep", "merge", "--allow-missing"]);
    for r in &refs[..3] {
        partial.arg(r);
    }
    let part = ok(&partial
        .arg("-o")
        .arg(d.join("m-part"))
        .output()
        .expect("hare-lab runs"));
    assert!(part.contains("12 cell(s) missing"), "{part}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_sweeps_are_refused_with_the_reason() {
    let d = scratch("bad");
    std::fs::write(d.join("base.toml"), BASE).expect("write base");
    let f = d.join("s.toml");
    std::fs::write(
        &f,
        "kind = \"sweep\"\nname = \"x\"\nbase = \"base.toml\"\n[[axis]]\nname = \"q\"\nfield = \"path.forward.rate\"\nvalues = [\"fast\"]\n",
    )
    .expect("write");
    let out = bin().arg("sweep").arg(&f).output().expect("runs");
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("cell 0 (q=fast)") && err.contains("rate = \"fast\""),
        "{err}"
    );
    let out = bin()
        .args(["sweep", "--shard", "4/4"])
        .arg(&f)
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("0 <= I < N"));
    let _ = std::fs::remove_dir_all(&d);
}

/// Two cells of two Reno flows for 3 s on the tiny path: the second flow at the path's RTT,
/// then at twice it.
const FLOWS_SWEEP: &str = r#"
kind = "sweep"
name = "tiny-flows"
base = "base.toml"
[scenario]
workload = { duration = "3s" }
[[axis]]
name = "RTT ratio"
field = "flows.rtt_ratio"
values = [1, 2]
"#;

#[test]
fn a_flows_sweep_records_jain_and_draws_its_heatmap() {
    let d = scratch("flows");
    std::fs::write(d.join("base.toml"), BASE).expect("write base");
    let file = d.join("flows.toml");
    std::fs::write(&file, FLOWS_SWEEP).expect("write sweep");
    let out = d.join("run");
    let progress = ok(&bin()
        .args(["sweep", "--jobs", "2", "-o"])
        .arg(&out)
        .arg(&file)
        .output()
        .expect("hare-lab runs"));
    assert!(progress.contains("Jain"), "{progress}");
    let lines = std::fs::read_to_string(out.join("shard-0-of-1.jsonl")).expect("shard file");
    let rows: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect();
    assert_eq!(rows.len(), 2);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["cell"], i);
        assert!(r["error"].is_null(), "{r}");
        let jain = r["flows"]["jain"].as_f64().expect("a Jain index");
        assert!(jain > 0.0 && jain <= 1.0, "{jain}");
        assert_eq!(r["flows"]["goodput_mbps"].as_array().map(Vec::len), Some(2));
    }
    // Ratio 1: both flows at the path's 10 ms; ratio 2: the second at 20 ms.
    assert_eq!(rows[0]["flows"]["rtt_ms"], serde_json::json!([10.0, 10.0]));
    assert_eq!(rows[1]["flows"]["rtt_ms"], serde_json::json!([10.0, 20.0]));
    let merged = d.join("merged");
    let table = ok(&merge(&[&out], &merged));
    assert!(table.contains("Jain (every flow active)"), "{table}");
    assert!(!table.contains("t90%"), "{table}");
    let svg = std::fs::read_to_string(merged.join("heatmap-jain.svg")).expect("Jain heatmap");
    assert!(svg.contains("<svg") && svg.contains("Jain"), "{svg}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A sweep without flows axes writes its rows and table as before flows cells existed: no
/// `flows` key, the one-flow columns.
#[test]
fn a_sweep_without_flows_axes_keeps_its_rows_and_columns() {
    let d = scratch("noflows");
    std::fs::write(d.join("base.toml"), BASE).expect("write base");
    let file = d.join("one.toml");
    let one = "kind = \"sweep\"\nname = \"one\"\nbase = \"base.toml\"\n[[axis]]\nname = \"seed\"\nfield = \"seed\"\nvalues = [1, 2]\n";
    std::fs::write(&file, one).expect("write sweep");
    let out = d.join("run");
    ok(&bin()
        .args(["sweep", "-o"])
        .arg(&out)
        .arg(&file)
        .output()
        .expect("hare-lab runs"));
    let lines = std::fs::read_to_string(out.join("shard-0-of-1.jsonl")).expect("shard file");
    assert_eq!(lines.lines().count(), 2);
    assert!(!lines.contains("\"flows\""), "{lines}");
    let table = ok(&merge(&[&out], &d.join("merged")));
    let header = table.lines().nth(1).expect("a header");
    assert!(
        header.starts_with("cell  seed  run")
            && header.contains("t90% s (100 ms bins)  exit cwnd/BDP (x)")
            && header.trim_end().ends_with("window cap Mbit/s  error"),
        "{header}"
    );
    assert!(!table.contains("Jain"), "{table}");
    let _ = std::fs::remove_dir_all(&d);
}
