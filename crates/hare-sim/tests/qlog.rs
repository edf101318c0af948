//! qlog files of both endpoints, with virtual times.
#![cfg(feature = "qlog")]

mod common;

use hare_sim::simulate;

#[test]
fn writes_qlog_of_both_endpoints() {
    let dir = std::env::temp_dir().join(format!("hare-sim-qlog-{}", std::process::id()));
    let mut cfg = common::config(
        "qlog run",
        common::path("100m", "20ms", Some("100k")),
        "quinn-newreno",
        1 << 20,
        common::Workload::Bytes(200_000),
    );
    cfg.qlog_dir = Some(dir.clone());
    simulate(&cfg, &mut |_| {}).expect("run completes");
    for side in ["client", "server"] {
        let path = dir.join(format!("qlog_run-{side}.sqlog"));
        let text = std::fs::read_to_string(&path).expect("qlog file");
        assert!(text.contains("\"qlog_version\":\"0.3\""), "{side}: header");
        assert!(text.contains("transport:packet_sent"), "{side}: events");
        // Virtual times: a 200 kB transfer over 20 ms takes well under a second, so no event
        // is later than 1000 ms after the start.
        let max_time = text
            .lines()
            .filter_map(|l| {
                let i = l.find("\"time\":")? + 7;
                let rest = &l[i..];
                let end = rest.find([',', '}'])?;
                rest[..end].parse::<f64>().ok()
            })
            .fold(0.0, f64::max);
        assert!(
            max_time > 20.0 && max_time < 1000.0,
            "{side}: last event at {max_time} ms"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
