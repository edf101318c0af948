//! Shipped scenarios, the thread data, and scenario error messages.

use hare_lab::commands::{Catalog, HEADLINE};
use hare_lab::metrics;
use hare_lab::scenario::{self, Scenario, ScenarioError};
use hare_lab::thread_data::ThreadData;
use std::path::Path;

/// Competing-flows scenarios under `scenarios/flows` (see docs/FLOWS.md).
const FLOWS_FILES: usize = 31;

fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

fn threads() -> ThreadData {
    ThreadData::embedded().expect("embedded thread data parses")
}

#[test]
fn every_shipped_scenario_parses_and_validates() {
    let files = scenario::scenario_files(&dir()).expect("scenario dir readable");
    assert_eq!(files.len(), 29, "top-level replay scenarios");
    let t = threads();
    for f in &files {
        let s = Scenario::load(f, &t).unwrap_or_else(|e| panic!("{e}"));
        // The file name is the scenario name, so output names are predictable.
        assert_eq!(
            f.file_stem().and_then(|x| x.to_str()),
            Some(s.file.name.as_str())
        );
        assert!(
            !s.file.description.is_empty(),
            "{} has no description",
            s.file.name
        );
    }
}

/// Every `.toml` below `dir`, subdirectories included, sorted.
fn toml_files_below(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("scenario dir readable") {
            let p = entry.expect("dir entry").path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_file_under_the_scenario_dir_parses_with_its_own_loader() {
    let t = threads();
    let files = toml_files_below(&dir());
    let (mut sim, mut kvh, mut unpaced, mut linux_receiver, mut line_rate) = (0, 0, 0, 0, 0);
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        if text.contains("kind = \"kernel-vs-hare\"") {
            hare_emu::scenario::KvhScenario::parse(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            kvh += 1;
            continue;
        }
        let s = Scenario::load(f, &t).unwrap_or_else(|e| panic!("{e}"));
        sim += 1;
        unpaced += usize::from(!s.file.sender.paced);
        if let Some(rate) = s.file.sender.line_rate {
            // The 2007 hosts' 10 GigE interface, in IP bytes of 9000-byte packets.
            assert_eq!(rate.0, 9_958_000_000, "{}", f.display());
            line_rate += 1;
        }
        linux_receiver += usize::from(s.file.ack.receiver == scenario::ReceiverSpec::Linux26);
    }
    // 29 replay scenarios, 8 kernel-vs-hare-sim paths (4 paced, 4 unpaced), 1 emulator file.
    assert_eq!((sim, kvh), (37 + FLOWS_FILES, 1));
    // Unpaced: the 2011 replays and the 2007 ones on the 8.5 Gbit/s path (their senders
    // were kernels without pacing; all but the two 1.6 Gbit/s `shallow` runs and modern
    // CUBIC of the 12 2007 files) and the 4 unpaced kernel-vs-hare-sim paths; every
    // 2007/2011 replay has the 2.6 receiver.
    assert_eq!(unpaced, 17 + 9 + 4);
    assert_eq!(line_rate, 9);
    assert_eq!(linux_receiver, 11 + 17);
}

#[test]
fn thread_data_loads_and_every_run_has_a_scenario() {
    let t = threads();
    assert_eq!(t.runs().len(), 33 + 2);
    let catalog = Catalog::load(&dir()).expect("catalog");
    assert_eq!(catalog.unreplayed(), Vec::<String>::new());
    for id in HEADLINE {
        assert!(catalog.jobs_for(id, false).is_some(), "{id}");
    }
    // Repeated runs map to repetitions of one scenario, with consecutive seeds.
    let r3 = catalog
        .jobs_for("2011-hz1000-80ms-w100m-nohystart-r3", false)
        .expect("r3 replayed");
    assert_eq!(r3[0].scenario.file.name, "2011-hz1000-80ms-w100m-nohystart");
    assert_eq!((r3[0].plan.repetition, r3[0].plan.seed), (2, 3));
}

#[test]
fn thread_capacities_and_times_follow_the_metric_rules() {
    let t = threads();
    let cubic = t.get("2007-cubic20-iss100-w60m").expect("present");
    // The best plateau of the 2007 netem path is BIC iss0 -w100m's last three rows' median.
    assert_eq!(t.capacity_mbps(cubic), 7470.0567);
    assert_eq!(
        metrics::time_to_90pct(&cubic.rows(), t.capacity_mbps(cubic)),
        Some(24.0)
    );
    let reno = t.get("2007-reno-w60m").expect("present");
    assert_eq!(metrics::time_to_90pct(&reno.rows(), 7470.0567), Some(2.01));
    let bic = t.get("2007-bic-iss100-w60m").expect("present");
    assert_eq!(metrics::time_to_90pct(&bic.rows(), 7470.0567), Some(10.0));
    let shallow = t.get("2007-cubic21-iss0-1g-shallow").expect("present");
    assert_eq!(t.capacity_mbps(shallow), 1640.2125);
    assert_eq!(shallow.lost_packets_10s(), Some(3086));
    let hz1000 = t.get("2011-hz1000-80ms-w100m-nohystart").expect("present");
    assert_eq!(hz1000.lost_packets_10s(), Some(414 + 21));
    assert_eq!(t.capacity_mbps(hz1000), 9852.8754);
    let lucas = t.get("2011-nussbaum-1g-11ms-acktrain").expect("present");
    assert_eq!(
        metrics::time_to_90pct(&lucas.rows(), t.capacity_mbps(lucas)),
        Some(11.0)
    );
    assert_eq!(
        (lucas.exit_cwnd, lucas.exit_reason.as_deref()),
        (Some(493), Some("ack-train"))
    );
    assert_eq!(
        t.get("2007-cubic20-iss0-w100m")
            .and_then(|r| r.lost_packets_10s()),
        Some(464)
    );
    assert_eq!(
        t.get("2007-reno-w60m").and_then(|r| r.lost_packets_10s()),
        Some(0)
    );
}

#[test]
fn shipped_windows_and_capacity_follow_the_mapping() {
    let t = threads();
    let s = Scenario::load(&dir().join("2007-cubic20-iss100-w60m.toml"), &t).expect("valid");
    assert_eq!(s.windows.stream, Some(90 << 20));
    assert_eq!(s.windows.send, Some(120 << 20));
    assert_eq!(s.path.forward.delay.0 + s.path.reverse.delay.0, 80_400_000);
    // 8.5 Gbit/s of 9000-byte packets carrying 8952 - 41 bytes of stream data.
    assert!((s.payload_capacity_mbps() - 8500.0 * 8911.0 / 9000.0).abs() < 1e-6);
    let auto = Scenario::load(&dir().join("2011-hz250-80ms-auto-hystart.toml"), &t).expect("valid");
    assert_eq!(auto.windows.stream, Some(70 << 20));
}

const GOOD: &str = r#"
name = "t"
controllers = ["cubic@linux-6"]
[path]
rtt = "20ms"
[path.forward]
rate = "100m"
[workload]
duration = "3s"
"#;

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(text, "bad.toml", &threads())
}

fn err(text: &str) -> String {
    match parse(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_minimal_scenario_gets_defaults() {
    let s = parse(GOOD).expect("valid");
    assert_eq!(s.file.mtu, 1452);
    assert_eq!(s.runs().len(), 1);
    assert_eq!(s.path.reverse.rate, s.path.forward.rate);
    assert_eq!(
        (s.path.forward.delay.0, s.path.reverse.delay.0),
        (10_000_000, 10_000_000)
    );
}

#[test]
fn bad_files_name_the_file_field_and_value() {
    let e = err(&GOOD.replace("rate = \"100m\"", "rate = \"100x\""));
    assert!(e.starts_with("bad.toml: "), "{e}");
    assert!(
        e.contains("100x") && e.contains("rate") && e.contains("line 7"),
        "{e}"
    );

    let e = err(&GOOD.replace("[workload]", "[workload]\nspeed = 3"));
    assert!(e.contains("unknown field `speed`"), "{e}");

    let e = err(&GOOD.replace("cubic@linux-6", "cubic@linux-9"));
    assert!(
        e.contains("`controllers[0]`") && e.contains("linux-9"),
        "{e}"
    );

    let e = err(&GOOD.replace("duration = \"3s\"", "duration = \"3s\"\nbytes = \"1g\""));
    assert!(
        e.contains("`workload`") && e.contains("exactly one of"),
        "{e}"
    );

    let e = err(&GOOD.replace("rate = \"100m\"", "rate = \"100m\"\ndelay = \"5ms\""));
    assert!(e.contains("`path.rtt`"), "{e}");

    let e = err(&GOOD.replace("rate = \"100m\"", "rate = \"100m\"\nqueue_packets = 0"));
    assert!(e.contains("`path.forward.queue_packets` = 0"), "{e}");

    let e = err(&format!("{GOOD}[replay]\nruns = [\"no-such-run\"]\n"));
    assert!(e.contains("`replay.runs[0]` = \"no-such-run\""), "{e}");

    let e = err(&format!(
        "{GOOD}[replay]\nruns = [\"2007-reno-w60m\", \"2007-bic-iss100-w60m\"]\n"
    ));
    assert!(
        e.contains("`replay.runs` = 2 ids") && e.contains("= 1"),
        "{e}"
    );

    let e = err(&GOOD.replace("name = \"t\"", "name = \"a b\""));
    assert!(e.contains("`name` = \"a b\""), "{e}");

    let e = err(&GOOD.replace("[path]", "mtu = 1000\n[path]"));
    assert!(e.contains("`mtu` = 1000"), "{e}");

    let e = err(&GOOD.replace(
        "[workload]",
        "[windows]\nsocket_buffer = \"60q\"\n[workload]",
    ));
    assert!(e.contains("60q"), "{e}");

    let e = err(&format!(
        "{GOOD}[sender]\npaced = false\nline_rate = \"0\"\n"
    ));
    assert!(e.contains("`sender.line_rate` = 0 bit/s"), "{e}");
}
