//! `[[flows]]` scenarios: parsing, expansion and errors, and `hare-lab sim` on one (a small
//! path for a few seconds, quick in debug builds).

use hare_lab::scenario::flows::{FlowController, FlowWorkload};
use hare_lab::scenario::Scenario;
use hare_lab::thread_data::ThreadData;
use std::process::Command;

const FLOWS: &str = r#"
name = "small-flows"
description = "Two Reno flows and a late CUBIC on 20 Mbit/s x 20 ms"
seed = 3
[path]
rtt = "20ms"
[path.forward]
rate = "20m"
queue_bytes = "50k"
[windows]
socket_buffer = "1m"
era = "literal"
[workload]
duration = "6s"
[[flows]]
controller = "reno@linux-6"
count = 2
[[flows]]
controller = "cubic@linux-6"
start = "2s"
rtt = "30ms"
bytes = "2m"
"#;

fn parse(text: &str) -> Result<Scenario, String> {
    let threads = ThreadData::embedded().expect("thread data");
    Scenario::parse(text, "test.toml", &threads).map_err(|e| e.to_string())
}

#[test]
fn flows_expand_with_their_defaults() {
    let s = parse(FLOWS).expect("parses");
    assert!(s.controllers.is_empty());
    assert_eq!(s.flows.len(), 3);
    let tags: Vec<String> = s.flows.iter().map(|f| f.tag()).collect();
    assert_eq!(tags, ["f0", "f1", "f2"]);
    // Defaults: start 0, the path's RTT, until the run's end.
    assert_eq!(s.flows[1].start.0, 0);
    assert_eq!(s.flows[1].rtt.0, 20_000_000);
    assert_eq!(s.flows[1].extra_delay.0, 0);
    assert_eq!(
        s.flows[1].workload,
        FlowWorkload::Duration(hare_link::TimeSpan(6_000_000_000))
    );
    // The late flow: 10 ms beyond the path's RTT, 2 MiB.
    assert_eq!(s.flows[2].start.0, 2_000_000_000);
    assert_eq!(s.flows[2].extra_delay.0, 10_000_000);
    assert_eq!(s.flows[2].workload, FlowWorkload::Bytes(2 << 20));
    let tcp = FLOWS.replace("reno@linux-6", "tcp:reno");
    let s = parse(&tcp).expect("a kernel TCP flow parses");
    assert_eq!(
        s.flows[0].controller,
        FlowController::KernelTcp("reno".into())
    );
}

#[test]
fn bad_flows_are_refused_naming_the_field() {
    let cases = [
        (
            FLOWS.replace("seed = 3", "seed = 3\ncontrollers = [\"reno\"]"),
            "`controllers`",
        ),
        (
            FLOWS.replace("rtt = \"30ms\"", "rtt = \"10ms\""),
            "`flows[1].rtt`",
        ),
        (
            FLOWS.replace("start = \"2s\"", "start = \"6s\""),
            "`flows[1].start`",
        ),
        (FLOWS.replace("count = 2", "count = 0"), "`flows[0].count`"),
        (FLOWS.replace("count = 2", "count = 65"), "`flows[0].count`"),
        (
            FLOWS.replace("reno@linux-6", "tcp:"),
            "`flows[0].controller`",
        ),
        (
            FLOWS.replace("reno@linux-6", "nosuch"),
            "`flows[0].controller`",
        ),
        (
            FLOWS.replace("duration = \"6s\"", "bytes = \"1m\""),
            "`workload.bytes`",
        ),
        (
            FLOWS.replace("bytes = \"2m\"", "bytes = \"2m\"\nduration = \"1s\""),
            "`flows[1].bytes`",
        ),
    ];
    for (text, field) in cases {
        let e = parse(&text).expect_err(field);
        assert!(e.contains(field), "{field}: {e}");
    }
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("hare-lab-flows-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn sim(args: &[&std::ffi::OsStr]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hare-lab"))
        .arg("sim")
        .args(args)
        .output()
        .expect("hare-lab runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn sim_runs_the_flows_together_and_summarises_them() {
    let d = scratch("sim");
    let file = d.join("small-flows.toml");
    std::fs::write(&file, FLOWS).expect("write scenario");
    let (ok, text, err) = sim(&[file.as_os_str()]);
    assert!(ok, "{err}");
    for tag in ["[f0]", "[f1]", "[f2]"] {
        assert!(text.contains(tag), "{tag} lines: {text}");
    }
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    assert!(text.contains("Jain's index"), "{text}");
    let (ok, json, err) = sim(&[file.as_os_str(), "--json".as_ref()]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(json.trim()).expect("one JSON object");
    let flows = v["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 3);
    for f in flows {
        for key in [
            "controller",
            "start_s",
            "rtt_ms",
            "goodput_mbps",
            "retransmits",
            "exit",
        ] {
            assert!(f.get(key).is_some(), "{key} in {f}");
        }
        assert!(f["goodput_mbps"].as_f64().is_some_and(|g| g > 1.0), "{f}");
    }
    assert_eq!(flows[2]["rtt_ms"], 30.0);
    assert_eq!(flows[2]["bytes"], 2 << 20);
    // The late flow's window: from its start (2 s) to the first end (its 2 MiB).
    let window = v["jain_window_s"].as_array().expect("a window");
    assert_eq!(window[0], 3);
    assert!(
        v["jain"].as_f64().is_some_and(|j| j > 0.0 && j <= 1.0),
        "{v}"
    );
    // Deterministic for the seed.
    let (_, again, _) = sim(&[file.as_os_str(), "--json".as_ref()]);
    assert_eq!(json, again);
    // A kernel TCP flow only runs through the emulator.
    std::fs::write(&file, FLOWS.replace("cubic@linux-6", "tcp:cubic")).expect("write");
    let (ok, _, err) = sim(&[file.as_os_str()]);
    assert!(!ok);
    assert!(err.contains("hare-lab compete"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `hare-lab sim FILE -o DIR` on two flows: the three plots (SVG and PNG, non-empty), an
/// `index.html` holding each plot and the summary table, one line per flow.
#[test]
fn sim_out_writes_the_page_and_plots_of_the_flows() {
    let d = scratch("page");
    let file = d.join("two-flows.toml");
    let two = FLOWS
        .split("[[flows]]")
        .next()
        .expect("head")
        .replace("6s", "3s")
        + "[[flows]]\ncontroller = \"reno@linux-6\"\n[[flows]]\ncontroller = \"cubic@linux-6\"\nstart = \"1s\"\n";
    std::fs::write(&file, two).expect("write scenario");
    let out = d.join("out");
    let (ok, _, err) = sim(&[file.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert!(ok, "{err}");
    let page = std::fs::read_to_string(out.join("index.html")).expect("index.html");
    for kind in ["flows-throughput", "flows-cwnd", "flows-queue"] {
        for ext in ["svg", "png"] {
            let p = out.join(format!("small-flows-r0.{kind}.{ext}"));
            let len = std::fs::metadata(&p).map_or(0, |m| m.len());
            assert!(len > 1000, "{} is {len} bytes", p.display());
        }
        let svg =
            std::fs::read_to_string(out.join(format!("small-flows-r0.{kind}.svg"))).expect("svg");
        let body = &svg[svg.find("<svg").expect("an svg element")..];
        assert!(page.contains(body.trim_end()), "{kind} is not on the page");
    }
    assert_eq!(page.matches("<figure>").count(), 3);
    // A line per flow in each per-flow chart, in the flows' colours, and no other.
    for kind in ["flows-throughput", "flows-cwnd"] {
        let svg =
            std::fs::read_to_string(out.join(format!("small-flows-r0.{kind}.svg"))).expect("svg");
        let svg = svg.to_uppercase();
        for c in ["#C82828", "#2850C8"] {
            assert!(
                svg.contains(&format!("STROKE=\"{c}\"")),
                "{kind}: no line in {c}"
            );
        }
        // The third flow's colour: there is no third flow.
        assert!(!svg.contains("STROKE=\"#1E963C\""), "{kind}: a third line");
    }
    assert!(page.contains("<td class=\"l\">f0</td>"), "summary table");
    assert!(page.contains("<td class=\"l\">f1</td>"), "summary table");
    assert!(page.contains("Jain&#39;s index"), "sharing line");
    let _ = std::fs::remove_dir_all(&d);
}
