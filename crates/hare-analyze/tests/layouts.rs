//! The qlog layouts of other stacks, written out by hand with exact expected values:
//! the newer `file_schema` / `quic:` layout (quiche 0.26+), picoquic's draft-00 arrays in
//! microseconds, concatenated traces, odd field types, sentinels and implausible values.

mod common;

use hare_analyze::cli::load;
use hare_analyze::metrics::{compute, Params};
use hare_analyze::{read_file, ExitSource, PayloadSource, TraceRole};

const RS: char = '\u{1e}';

fn seq(records: &[String]) -> String {
    records.iter().map(|r| format!("{RS}{r}\n")).collect()
}

fn header_new(vp: &str) -> String {
    format!(
        r#"{{"file_schema":"urn:ietf:params:qlog:file:sequential","serialization_format":"JSON-SEQ","title":"t","trace":{{"vantage_point":{{"type":"{vp}"}},"event_schemas":[]}}}}"#
    )
}

/// A sender in the newer layout: 10 packets of 1000 stream bytes (one sent twice), ACKs,
/// metrics with quiche's u64::MAX ssthresh, min_rtt 0 at first, a cut then `recovery`.
fn newer_sender() -> Vec<String> {
    let mut r = vec![header_new("client")];
    // An unknown event with oddly typed fields first: skipped without type checks.
    r.push(r#"{"time":0.0,"name":"quic:parameters_set","data":{"initial_max_data":"lots","congestion_window":[1]}}"#.into());
    r.push(r#"{"time":0.5,"name":"quic:recovery_metrics_updated","data":{"congestion_window":12000,"ssthresh":18446744073709551615,"smoothed_rtt":333.0,"min_rtt":0.0}}"#.into());
    for pn in 0..10u64 {
        let off = if pn == 9 { 3000 } else { pn * 1000 };
        r.push(format!(
            r#"{{"time":{t},"name":"quic:packet_sent","data":{{"header":{{"packet_type":"1RTT","packet_number":{pn},"dcid":"0102030405060708090a0b0c0d0e0f1011121314"}},"raw":{{"length":1060}},"frames":[{{"frame_type":"stream","stream_id":0,"offset":{off},"fin":false,"raw":{{"payload_length":1000}}}}]}}}}"#,
            t = 1.0 + pn as f64
        ));
    }
    r.push(r#"{"time":21.0,"name":"quic:packet_received","data":{"header":{"packet_type":"1RTT","packet_number":0},"frames":[{"frame_type":"ack","acked_ranges":[[0,2],[4,8]]}]}}"#.into());
    r.push(r#"{"time":21.0,"name":"quic:recovery_metrics_updated","data":{"congestion_window":20000,"smoothed_rtt":20.0,"latest_rtt":20.0,"min_rtt":20.0}}"#.into());
    // Packet 3 is lost (quiche does not say so): the window is cut and recovery begins.
    r.push(r#"{"time":22.0,"name":"quic:recovery_metrics_updated","data":{"congestion_window":14000,"ssthresh":14000}}"#.into());
    r.push(
        r#"{"time":22.0,"name":"quic:congestion_state_updated","data":{"new":"recovery"}}"#.into(),
    );
    r.push(r#"{"time":42.0,"name":"quic:packet_received","data":{"header":{"packet_type":"1RTT","packet_number":1},"frames":[{"frame_type":"ack","acked_ranges":[[0,2],[4,9]]}]}}"#.into());
    r.push(r#"{"time":43.0,"name":"quic:congestion_state_updated","data":{"new":"congestion_avoidance"}}"#.into());
    r
}

#[test]
fn newer_layout_sender() {
    let dir = tempfile::tempdir().expect("dir");
    let p = common::write(dir.path(), "client.sqlog", seq(&newer_sender()).as_bytes());
    let t = read_file(&p).expect("newer layout").remove(0);
    assert_eq!(t.role, Some(TraceRole::Sender));
    assert_eq!(t.vantage.as_deref(), Some("client"));
    assert_eq!(t.payload_source, PayloadSource::AckedStreamFrames);
    // Packets 0-2 and 4-8 carry offsets 0..3000 and 4000..9000; packet 9 resends 3000..4000.
    assert_eq!(t.delivered_bytes(), 9000);
    assert_eq!(t.retransmitted_bytes, Some(1000));
    assert!(
        !t.losses_logged,
        "no packet_lost but a recovery: not logged"
    );
    let e = t.exit.expect("exit");
    // The first congestion signal at 22 ms (origin: first 1-RTT packet at 1 ms), with the
    // window before the cut; u64::MAX ssthresh meant infinite, so no "ssthresh reached".
    assert!((e.t_s - 0.021).abs() < 1e-9, "{e:?}");
    assert_eq!(e.cwnd_bytes, 20_000);
    assert_eq!(t.reductions.len(), 1);
    assert_eq!(t.reductions[0].from_cwnd_bytes, 20_000);
    assert_eq!(t.reductions[0].to_cwnd_bytes, 14_000);
    // min_rtt 0 ignored with a note; the 333 ms initial RTT is not a sample.
    assert!(
        t.notes.iter().any(|n| n.contains("min_rtt")),
        "{:?}",
        t.notes
    );
    assert!(t.samples.iter().all(|s| s.srtt_ms != Some(333.0)));
    let m = compute(&t, &Params::default());
    assert_eq!(m.min_rtt_ms, Some(20.0));
    assert_eq!(m.losses, None);
    // Goodput over the delivery span: 9000 bytes from 1 ms to the last ACK at 42 ms.
    assert!((m.goodput_span_s - 0.041).abs() < 1e-9);
}

#[test]
fn concatenated_traces_and_a_receiver() {
    let dir = tempfile::tempdir().expect("dir");
    let mut recs = newer_sender();
    recs.push(header_new("server"));
    for pn in 0..4u64 {
        recs.push(format!(
            r#"{{"time":{t},"name":"quic:packet_received","data":{{"header":{{"packet_type":"1RTT","packet_number":{pn}}},"raw":{{"length":1060}},"frames":[{{"frame_type":"stream","stream_id":0,"offset":{off},"raw":{{"payload_length":1000}}}}]}}}}"#,
            t = 10.0 + pn as f64,
            off = (pn % 3) * 1000
        ));
    }
    recs.push(r#"{"time":9.0,"name":"quic:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":0}}}"#.into());
    let p = common::write(dir.path(), "both.sqlog", seq(&recs).as_bytes());
    let all = read_file(&p).expect("two traces");
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].name, "both.sqlog#0");
    let r = &all[1];
    assert_eq!(r.role, Some(TraceRole::Receiver));
    assert_eq!(r.payload_source, PayloadSource::ReceivedStreamFrames);
    // Offsets 0, 1000, 2000 and 0 again: 3000 unique bytes.
    assert_eq!(r.delivered_bytes(), 3000);
    assert!(r.exit.is_none());
    assert!(r.reductions.is_empty());
}

/// picoquic's qlog: draft-00 arrays with `event_fields`, microseconds, `cwnd`,
/// `header.packet_size`, stream frames with `id`, RTTs in microseconds, `packet_lost`.
#[test]
fn picoquic_arrays_in_microseconds() {
    let mut ev = Vec::new();
    ev.push(r#"[0, "transport", "packet_sent", {"packet_type": "initial", "header": {"packet_size": 1252, "packet_number": 0}}]"#.to_string());
    ev.push(
        r#"[100, "recovery", "metrics_updated", {"cwnd": 15360, "smoothed_rtt": 250000}]"#.into(),
    );
    for pn in 1..=20u64 {
        ev.push(format!(
            r#"[{t}, "transport", "packet_sent", {{"packet_type": "1RTT", "header": {{"packet_size": 1440, "packet_number": {pn}}}, "frames": [{{"frame_type": "stream", "id": 4, "offset": {off}, "length": 1400, "fin": false}}]}}]"#,
            t = 20_000 + pn * 100,
            off = (pn - 1) * 1400
        ));
    }
    ev.push(r#"[30000, "transport", "packet_received", {"packet_type": "initial", "header": {"packet_size": 1252, "packet_number": 0}}]"#.into());
    ev.push(r#"[30000, "recovery", "metrics_updated", {"cwnd": 30000, "smoothed_rtt": 10000, "min_rtt": 10000, "latest_rtt": 10000}]"#.into());
    ev.push(r#"[32000, "transport", "packet_received", {"packet_type": "1RTT", "header": {"packet_size": 50, "packet_number": 1}, "frames": [{"frame_type": "ack", "ack_delay": 0, "acked_ranges": [[1, 9], [11, 20]]}]}]"#.into());
    ev.push(r#"[33000, "recovery", "packet_lost", {"packet_type": "1RTT", "packet_number": 10, "trigger": "repeat", "header": {"packet_type": "1RTT", "packet_number": 10, "packet_size": 1440}}]"#.into());
    ev.push(r#"[33000, "recovery", "metrics_updated", {"cwnd": 21000}]"#.into());
    ev.push(r#"[33000, "recovery", "congestion_state_updated", {"old": "0", "new": "3", "cc_param": 0}]"#.into());
    let doc = format!(
        "{{ \"qlog_version\": \"draft-00\", \"title\": \"picoquic\", \"traces\": [\n{{ \"vantage_point\": {{ \"name\": \"backend-67\", \"type\": \"server\" }},\n\"title\": \"picoquic\", \"description\": \"x\",\"event_fields\": [\"relative_time\", \"category\", \"event\", \"data\"],\n\"configuration\": {{\"time_units\": \"us\"}},\n\"common_fields\": {{ \"protocol_type\": \"QUIC_HTTP3\", \"reference_time\": \"1\"}},\n\"events\": [\n{}]}}]}}\n",
        ev.join(",\n")
    );
    let dir = tempfile::tempdir().expect("dir");
    let p = common::write(dir.path(), "pico.qlog", doc.as_bytes());
    let t = read_file(&p).expect("picoquic").remove(0);
    assert_eq!(t.name, "pico.qlog");
    assert_eq!(t.vantage.as_deref(), Some("server"));
    assert_eq!(t.role, Some(TraceRole::Sender));
    assert_eq!(t.mss, Some(1440));
    // 19 of 20 packets acknowledged, 1400 bytes each.
    assert_eq!(t.delivered_bytes(), 19 * 1400);
    assert!(t.losses_logged);
    assert_eq!(t.losses.len(), 1);
    // Origin: the first 1-RTT packet at 20.1 ms; the loss at 33 ms.
    let e = t.exit.expect("exit");
    assert_eq!(e.source, ExitSource::CongestionSignal);
    assert!((e.t_s - 0.0129).abs() < 1e-9, "{e:?}");
    assert_eq!(e.cwnd_bytes, 30_000);
    let m = compute(&t, &Params::default());
    // RTTs in microseconds become milliseconds.
    assert_eq!(m.min_rtt_ms, Some(10.0));
    assert_eq!(m.losses, Some(1));
    assert_eq!(m.episodes.len(), 1);
}

/// A BBR sender's window changes without loss are no loss episodes; leaving startup is
/// the slow-start exit.
#[test]
fn bbr_window_changes_are_not_episodes() {
    let mut r = vec![header_new("server")];
    let mut t = 1.0;
    for (pn, cwnd) in [
        (0u64, 40_000u64),
        (1, 80_000),
        (2, 60_000),
        (3, 90_000),
        (4, 50_000),
    ] {
        r.push(format!(
            r#"{{"time":{t},"name":"quic:packet_sent","data":{{"header":{{"packet_type":"1RTT","packet_number":{pn}}},"raw":{{"length":1200}},"frames":[{{"frame_type":"stream","stream_id":1,"offset":{off},"raw":{{"payload_length":1100}}}}]}}}}"#,
            off = pn * 1100
        ));
        r.push(format!(
            r#"{{"time":{t},"name":"quic:recovery_metrics_updated","data":{{"congestion_window":{cwnd}}}}}"#
        ));
        if pn == 2 {
            r.push(format!(
                r#"{{"time":{t},"name":"quic:congestion_state_updated","data":{{"old":"startup","new":"drain"}}}}"#
            ));
        }
        t += 10.0;
    }
    let dir = tempfile::tempdir().expect("dir");
    let p = common::write(dir.path(), "bbr.sqlog", seq(&r).as_bytes());
    let t = read_file(&p).expect("bbr").remove(0);
    assert!(t.reductions.is_empty(), "{:?}", t.reductions);
    let e = t.exit.expect("exit at drain");
    assert_eq!(e.source, ExitSource::StateChange);
    assert!((e.t_s - 0.02).abs() < 1e-9);
    assert_eq!(e.cwnd_bytes, 60_000);
}

/// A directory of hare-sim output with an empty and a non-empty sidecar, named both as a
/// directory and file by file (`DIR/*`): nothing fails, sidecars are paired, same-named
/// files in two folders get their folder in the label.
#[test]
fn directories_sidecars_and_same_named_files() {
    let f = common::fixture("dir", "cubic@linux-2.6.39", 1, "125k");
    let d = f.dir.path();
    std::fs::write(d.join("dir-server.cc.jsonl"), "").expect("empty sidecar");
    std::fs::write(d.join("notes.truth.json"), "{}").expect("other json");
    let traces = load(&[d.to_path_buf()]).expect("directory");
    assert_eq!(traces.len(), 3, "report + two qlogs");
    let mut all: Vec<std::path::PathBuf> = std::fs::read_dir(d)
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| !p.to_string_lossy().ends_with(".truth.json"))
        .collect();
    all.sort();
    let files = load(&all).expect("DIR/*");
    assert_eq!(files.len(), 3);
    let other = tempfile::tempdir().expect("dir");
    let copy = other.path().join("dir-client.sqlog");
    std::fs::copy(&f.client_qlog, &copy).expect("copy");
    // A sidecar with lines it cannot read (another hare's events) still never fails.
    std::fs::write(
        d.join("dir-server.cc.jsonl"),
        "not json\n{\"t_s\": 1.0, \"event\": {\"type\": \"from-the-future\"}}\n{}\n",
    )
    .expect("odd sidecar");
    let server = read_file(&f.server_qlog).expect("server with odd sidecar");
    assert_eq!(server[0].skipped.iter().map(|s| s.count).sum::<u64>(), 3);
    let both = load(&[f.client_qlog.clone(), copy]).expect("two");
    assert_ne!(both[0].name, both[1].name);
    assert!(
        both[0].name.ends_with("/dir-client.sqlog"),
        "{}",
        both[0].name
    );
}

/// A growing ECN-CE count in the ACKs a sender receives is a congestion signal: the exit
/// and one episode, with a note.
#[test]
fn ecn_ce_marks_are_congestion_signals() {
    let mut r = vec![header_new("client")];
    for pn in 0..4u64 {
        r.push(format!(
            r#"{{"time":{t},"name":"quic:packet_sent","data":{{"header":{{"packet_type":"1RTT","packet_number":{pn}}},"raw":{{"length":1200}},"frames":[{{"frame_type":"stream","stream_id":0,"offset":{off},"raw":{{"payload_length":1100}}}}]}}}}"#,
            t = 1 + pn,
            off = pn * 1100
        ));
    }
    r.push(r#"{"time":5.0,"name":"quic:recovery_metrics_updated","data":{"congestion_window":40000,"smoothed_rtt":10.0}}"#.into());
    r.push(r#"{"time":11.0,"name":"quic:packet_received","data":{"header":{"packet_type":"1RTT","packet_number":0},"frames":[{"frame_type":"ack","acked_ranges":[[0,1]],"ect0":2,"ce":0}]}}"#.into());
    r.push(r#"{"time":13.0,"name":"quic:packet_received","data":{"header":{"packet_type":"1RTT","packet_number":1},"frames":[{"frame_type":"ack","acked_ranges":[[0,3]],"ect0":3,"ce":1}]}}"#.into());
    r.push(r#"{"time":13.0,"name":"quic:recovery_metrics_updated","data":{"congestion_window":28000}}"#.into());
    let dir = tempfile::tempdir().expect("dir");
    let p = common::write(dir.path(), "ecn.sqlog", seq(&r).as_bytes());
    let t = read_file(&p).expect("ecn").remove(0);
    assert_eq!(t.delivered_bytes(), 4400);
    let e = t.exit.expect("exit");
    assert_eq!(e.source, ExitSource::CongestionSignal);
    assert!((e.t_s - 0.012).abs() < 1e-9, "{e:?}");
    assert_eq!(e.cwnd_bytes, 40_000);
    assert_eq!(t.reductions.len(), 1);
    assert_eq!(t.reductions[0].to_cwnd_bytes, 28_000);
    assert!(t.notes.iter().any(|n| n.contains("ECN")), "{:?}", t.notes);
}
