//! The CLI front end, the plots and the benchmark's generator on real and synthetic files.

mod common;

use clap::Parser;
use hare_analyze::cli::{run, AnalyzeCommand};
use hare_analyze::metrics::{compute, Params};
use hare_analyze::{read_file, ExitSource};
use hare_report::ExitReason;

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: AnalyzeCommand,
}

fn cli(args: &[&str]) -> AnalyzeCommand {
    Cli::try_parse_from(std::iter::once("hare-analyze").chain(args.iter().copied()))
        .expect("arguments parse")
        .cmd
}

#[test]
fn analyze_compare_and_plot_run_on_a_report_and_a_qlog() {
    let f = common::fixture("cli", "cubic@linux-2.6.39", 2, "125k");
    let (rep, q) = (
        f.report.display().to_string(),
        f.client_qlog.display().to_string(),
    );
    run(cli(&[
        "analyze",
        &rep,
        &q,
        "--capacity",
        "100m",
        "--rtt",
        "20ms",
    ]))
    .expect("analyze");
    run(cli(&["analyze", &rep, "--markdown", "--bin", "0.5"])).expect("markdown");
    run(cli(&["analyze", &q, "--json"])).expect("json");
    run(cli(&["compare", &rep, &q])).expect("compare");
    let out = f.dir.path().join("plots");
    let o = out.display().to_string();
    run(cli(&["plot", &rep, &q, "-o", &o])).expect("plot");
    for name in ["throughput", "cwnd", "rtt"] {
        for ext in ["svg", "png"] {
            let p = out.join(format!("{name}.{ext}"));
            let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            assert!(len > 1000, "{} has {len} bytes", p.display());
        }
    }
    if hare_analyze::plot::font().is_some() {
        let svg = std::fs::read_to_string(out.join("cwnd.svg")).expect("svg");
        assert!(
            svg.contains("cli-client.sqlog") && svg.contains("cli.jsonl"),
            "legend"
        );
    }
    // Bad options are errors, not panics.
    assert!(run(cli(&["analyze", &rep, "--bin", "0"])).is_err());
    let missing = f.dir.path().join("missing.sqlog").display().to_string();
    let e = run(cli(&["analyze", &missing])).expect_err("missing file");
    assert!(format!("{e:#}").contains("missing.sqlog"));
}

#[test]
fn comparison_table_has_ratios() {
    let f = common::fixture("cmp", "cubic@linux-2.6.39", 2, "125k");
    let p = Params::default();
    let a = compute(&read_file(&f.report).expect("a").remove(0), &p);
    let b = compute(&read_file(&f.client_qlog).expect("b").remove(0), &p);
    let t = hare_analyze::table::comparison(&a, &b, false);
    let exit_row = t
        .lines()
        .find(|l| l.starts_with("exit cwnd segments"))
        .expect("exit row");
    // Same exit window in both: ratio exactly 1.
    assert!(exit_row.trim_end().ends_with("1.000"), "{exit_row}");
}

#[test]
fn bench_generator_output_is_analysed_exactly() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("gen.sqlog");
    let events = hare_analyze::bench::generate(&path, 10_000_000).expect("generate");
    let size = std::fs::metadata(&path).expect("meta").len();
    assert!(size >= 10_000_000);
    let t = read_file(&path).expect("read").remove(0);
    assert_eq!(t.records, events);
    assert!(t.skipped.is_empty());
    // The first loss is packet 19 999, sent at 19 999 * 0.116 ms; it halves cwnd and sets
    // ssthresh in the metrics update that packet's (odd-numbered) ACK line carries.
    let e = t.exit.expect("exit");
    assert_eq!(e.source, ExitSource::SsthreshFinite);
    assert_eq!(e.reason, Some(ExitReason::Loss));
    assert!((e.t_s - 19_999.0 * 0.116e-3).abs() < 1e-9, "{}", e.t_s);
    assert_eq!(t.losses.len() as u64, events_packets(&t) / 20_000);
    assert!(!t.losses.is_empty());
    let r = hare_analyze::bench::run(dir.path(), 2_000_000, false).expect("bench");
    assert!(r.bytes >= 2_000_000 && r.mb_per_s > 0.0 && r.goodput_mbps > 0.0);
    assert!(!r.file.exists(), "bench file removed");
}

/// Packets of a generated trace: one 1452-byte packet per 0.116 ms up to the end.
fn events_packets(t: &hare_analyze::Trace) -> u64 {
    (t.end_s / 0.116e-3).round() as u64 + 1
}
