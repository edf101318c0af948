//! Goodput bins, capacity and time to 90 % from complete bins only, and what a receiver's
//! quinn qlog logs, on small synthetic qlogs shaped like a loopback transfer's: quinn's
//! JSON-SEQ layout, packet lengths but no frames on the sender, neither on the receiver.

use hare_analyze::metrics::{compute, NotLogged, Params, PartialBin, Provenance};
use hare_analyze::plot::charts;
use hare_analyze::table::analysis;
use hare_analyze::{read_file, PayloadSource, TraceRole};

const RS: char = '\u{1e}';
const HEADER: &str = r#"{"qlog_version":"0.3","qlog_format":"JSON-SEQ","title":"t","trace":{"vantage_point":{"type":"unknown"},"common_fields":{"time_format":"relative","reference_time":0.0}}}"#;

fn sent(t_ms: f64, pn: u64, len: u64) -> String {
    format!(
        r#"{{"time":{t_ms},"name":"transport:packet_sent","data":{{"header":{{"packet_type":"1RTT","packet_number":{pn},"length":{len}}}}}}}"#
    )
}

fn received(t_ms: f64, pn: u64) -> String {
    format!(
        r#"{{"time":{t_ms},"name":"transport:packet_received","data":{{"header":{{"packet_type":"1RTT","packet_number":{pn}}}}}}}"#
    )
}

fn metrics(t_ms: f64, fields: &str) -> String {
    format!(r#"{{"time":{t_ms},"name":"recovery:metrics_updated","data":{{{fields}}}}}"#)
}

/// The cells of the row `label` of a plain table (after the label, trimmed).
fn row<'a>(table: &'a str, label: &str) -> Vec<&'a str> {
    let line = table
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no row {label}:\n{table}"));
    line[label.len()..]
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

fn write(dir: &std::path::Path, name: &str, records: &[String]) -> std::path::PathBuf {
    let text: String = std::iter::once(HEADER.to_string())
        .chain(records.iter().cloned())
        .map(|r| format!("{RS}{r}\n"))
        .collect();
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write qlog");
    p
}

/// A sender's loopback-like run: a 1452-byte packet every ms, each acknowledged at once
/// (bytes in flight back to 0), for one second; the next second skips every 25th packet
/// (960 packets); then 20 packets in the last 2 ms before the trace ends at 2.002 s, the
/// burst of final ACKs that a 200 MiB loopback run's last bin holds.
fn sender_records() -> Vec<String> {
    let mut r = Vec::new();
    let mut pn = 0;
    let mut send = |r: &mut Vec<String>, t: f64| {
        r.push(sent(t, pn, 1452));
        r.push(metrics(
            t,
            r#""congestion_window":200000,"bytes_in_flight":0"#,
        ));
        pn += 1;
    };
    for k in 0..2000u32 {
        if k < 1000 || k % 25 != 0 {
            send(&mut r, f64::from(k));
        }
    }
    for k in 0..20u32 {
        send(&mut r, 2000.0 + f64::from(k / 10));
    }
    r.push(metrics(2002.0, r#""congestion_window":200000"#));
    r
}

#[test]
fn capacity_and_time_to_90_come_from_complete_bins_only() {
    let dir = tempfile::tempdir().expect("dir");
    let p = write(dir.path(), "client.sqlog", &sender_records());
    let t = read_file(&p).expect("qlog").remove(0);
    assert_eq!(t.role, Some(TraceRole::Sender));
    assert_eq!(t.payload_source, PayloadSource::PacketEstimate);
    assert_eq!(t.end_s, 2.002);
    let m = compute(&t, &Params::default());
    // 1425 payload bytes per 1452-byte packet (27 bytes of overhead): 1000 packets over the
    // first second are 11.4 Mbit/s, 960 over the second 10.944.
    assert_eq!(m.bins_mbps, vec![11.4, 10.944]);
    // The last 2 ms hold 20 packets: 114 Mbit/s, reported but no sample.
    let PartialBin {
        start_s,
        len_s,
        mbps,
    } = m.partial_bin.expect("a partial last bin");
    assert_eq!(start_s, 2.0);
    assert!((len_s - 0.002).abs() < 1e-9, "{len_s}");
    assert!((mbps - 114.0).abs() < 1e-6, "{mbps}");
    // Before, the partial bin was the estimated capacity (114) and 90 % of it was first
    // reached at the trace's end (2.002 s).
    assert_eq!(m.capacity_mbps, Some(11.4));
    assert_eq!(m.capacity_from, Some(Provenance::Estimated));
    assert_eq!(m.time_to_fraction_s, Some(1.0));
    let table = analysis(std::slice::from_ref(&m), false);
    assert_eq!(
        row(&table, "partial last bin (not a sample)"),
        ["0.002 s at 114.00 Mbit/s"]
    );
    assert_eq!(row(&table, "capacity Mbit/s"), ["11.4 (est.)"]);
    assert_eq!(row(&table, "time to 90% capacity s"), ["1.000"]);
    // The plot draws the two complete bins as steps and says the partial one is left out.
    let [goodput, _, _] = charts(std::slice::from_ref(&t), std::slice::from_ref(&m));
    assert_eq!(
        goodput.series[0].points,
        vec![(0.0, 11.4), (1.0, 11.4), (1.0, 10.944), (2.0, 10.944)]
    );
    assert_eq!(
        goodput.notes,
        vec!["client.sqlog: last 0.002 s (a partial bin, 114.0 Mbit/s) not drawn".to_string()]
    );
}

/// The same run from quinn's receiver: received packets carry only a number and a type, the
/// receiver sends an ACK every second packet, and logs RTTs (seconds, quinn's unit).
fn receiver_records() -> Vec<String> {
    let mut r = Vec::new();
    for k in 0..2000u64 {
        let t = k as f64 + 0.5;
        r.push(received(t, k));
        if k % 2 == 1 {
            r.push(sent(t, k / 2, 40));
            r.push(metrics(
                t,
                r#""min_rtt":0.0012,"smoothed_rtt":0.0015,"latest_rtt":0.0013,"congestion_window":14720,"bytes_in_flight":0"#,
            ));
        }
    }
    r
}

#[test]
fn a_quinn_receiver_shows_what_it_logged_and_nothing_as_zero() {
    let dir = tempfile::tempdir().expect("dir");
    let rp = write(dir.path(), "server.sqlog", &receiver_records());
    let sp = write(dir.path(), "client.sqlog", &sender_records());
    let r = read_file(&rp).expect("receiver qlog").remove(0);
    let s = read_file(&sp).expect("sender qlog").remove(0);
    assert_eq!(r.role, Some(TraceRole::Receiver));
    let m = compute(&r, &Params::default());
    assert_eq!(
        m.not_logged,
        vec![NotLogged::Payload, NotLogged::Frames, NotLogged::Losses]
    );
    // Absent, not zero: no bytes, goodput, bins or horizons.
    assert_eq!((m.bytes, m.goodput_mbps), (None, None));
    assert!(m.bins_mbps.is_empty() && m.partial_bin.is_none());
    assert!(m.goodput_over.iter().all(|g| g.1.is_none()));
    let json = serde_json::to_value(&m).expect("json");
    assert_eq!(json["goodput_mbps"], serde_json::Value::Null);
    assert_eq!(json["not_logged"][0], "payload");
    // What its packets show: the RTT it logged (quinn's seconds, read as 1.2 and 1.5 ms).
    assert_eq!((m.min_rtt_ms, m.final_srtt_ms), (Some(1.2), Some(1.5)));
    let table = analysis(std::slice::from_ref(&m), false);
    let rows = &table[..table.find("not logged in").expect("the one line")];
    assert!(!rows.contains("goodput"), "{table}");
    assert!(!rows.contains("payload"), "{table}");
    assert!(!rows.contains("lost packets"), "{table}");
    assert_eq!(row(&table, "min RTT ms"), ["1.200"]);
    assert!(
        table.ends_with(
            "not logged in server.sqlog (left out above): payload and goodput, STREAM frames \
             (sent and retransmitted bytes), lost packets\n"
        ),
        "{table}"
    );
    // Beside a sender: the sender's figure, "-" for the receiver.
    let ms = [compute(&s, &Params::default()), m.clone()];
    let both = analysis(&ms, false);
    // 2 821 500 payload bytes from the origin to the last ACK at 2.001 s.
    assert_eq!(row(&both, "goodput Mbit/s"), ["11.28", "-"]);
    assert_eq!(row(&both, "min RTT ms"), ["-", "1.200"]);
    // One line per trace that leaves something out (this sender logs no RTT or frames).
    assert_eq!(both.matches("not logged in").count(), 2, "{both}");
    assert!(both.contains(
        "not logged in client.sqlog (left out above): STREAM frames (sent and retransmitted bytes), RTT\n"
    ));
    // The plot draws no goodput line for it (no flat zero), out of the legend, and notes why;
    // its RTT is drawn.
    let [goodput, cwnd, rtt] = charts(&[s, r], &ms);
    assert!(goodput.series[1].points.is_empty());
    assert!(goodput.series[1].label.is_empty());
    assert_eq!(
        goodput.notes[1],
        "server.sqlog: goodput not logged (no sizes or STREAM frames of received packets)"
    );
    assert_eq!(
        cwnd.notes,
        vec!["server.sqlog: a receiver, its window is not drawn".to_string()]
    );
    assert!(!rtt.series[1].points.is_empty());
}
