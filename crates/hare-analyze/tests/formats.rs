//! Readers on real hare-sim qlogs: truncated files, qlog JSON, non-qlog files, and the
//! fields qvis needs.

mod common;

use hare_analyze::{read_file, AnalyzeError, Format};

#[test]
fn truncated_last_record_is_skipped_and_counted() {
    let f = common::fixture("trunc", "cubic@linux-2.6.39", 2, "125k");
    let full = read_file(&f.client_qlog).expect("full").remove(0);
    let bytes = std::fs::read(&f.client_qlog).expect("read");
    // Cut 20 bytes into the last record.
    let last_rs = bytes.iter().rposition(|&b| b == 0x1E).expect("records");
    let cut = common::write(f.dir.path(), "cut.sqlog", &bytes[..last_rs + 20]);
    let t = read_file(&cut)
        .expect("truncated file still reads")
        .remove(0);
    assert_eq!(t.skipped.len(), 1);
    assert_eq!(t.skipped[0].count, 1);
    assert!(
        t.skipped[0].reason.contains("cut short"),
        "{}",
        t.skipped[0].reason
    );
    assert_eq!(t.records, full.records - 1);
    assert_eq!(t.exit, full.exit);
}

#[test]
fn a_bad_record_in_the_middle_is_an_error_naming_file_and_record() {
    let dir = tempfile::tempdir().expect("dir");
    let text = "\u{1e}{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\",\"trace\":{}}\n\
                \u{1e}{\"time\":1.0,\"name\":\"transport:packet_sent\"}\n\
                \u{1e}{\"time\": oops}\n\
                \u{1e}{\"time\":2.0,\"name\":\"transport:packet_sent\"}\n";
    let p = common::write(dir.path(), "bad.sqlog", text.as_bytes());
    let e = read_file(&p).expect_err("bad record");
    assert!(
        matches!(e, AnalyzeError::BadRecord { record: 3, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("bad.sqlog"));
}

#[test]
fn non_qlog_files_get_an_error_naming_the_file_and_the_formats() {
    let dir = tempfile::tempdir().expect("dir");
    for (name, body) in [
        ("notes.txt", &b"hello, this is not a qlog\n"[..]),
        ("other.json", &b"{\"foo\": 1, \"bar\": [1, 2]}\n"[..]),
        ("empty.sqlog", &b"   \n"[..]),
        ("seq.sqlog", &b"\x1e{\"not\":\"a header\"}\n"[..]),
    ] {
        let p = common::write(dir.path(), name, body);
        let e = read_file(&p).expect_err(name);
        let msg = e.to_string();
        assert!(
            matches!(e, AnalyzeError::UnknownFormat { .. }),
            "{name}: {msg}"
        );
        assert!(msg.contains(name), "{msg}");
        assert!(msg.contains("expected a qlog JSON-SEQ file"), "{msg}");
    }
}

/// Rewrites a JSON-SEQ qlog as a qlog JSON document (`traces` array, pretty-printed over
/// many lines, as quiche and qvis exports look).
fn to_json_qlog(seq: &[u8]) -> String {
    let mut records = seq
        .split(|&b| b == 0x1E)
        .filter(|r| !r.iter().all(u8::is_ascii_whitespace));
    let header: serde_json::Value =
        serde_json::from_slice(records.next().expect("header")).expect("header json");
    let events: Vec<serde_json::Value> = records
        .map(|r| serde_json::from_slice(r).expect("event json"))
        .collect();
    let doc = serde_json::json!({
        "qlog_version": "0.3",
        "title": "converted",
        "traces": [{
            "vantage_point": header["trace"]["vantage_point"],
            "events": events,
        }],
    });
    serde_json::to_string_pretty(&doc).expect("to json")
}

#[test]
fn qlog_json_reads_like_the_json_seq_it_came_from() {
    let f = common::fixture("json", "cubic@linux-2.6.39", 2, "125k");
    let seq = read_file(&f.client_qlog).expect("seq").remove(0);
    let text = to_json_qlog(&std::fs::read(&f.client_qlog).expect("read"));
    let p = common::write(f.dir.path(), "json.qlog", text.as_bytes());
    let all = read_file(&p).expect("json qlog");
    assert_eq!(all.len(), 1);
    let j = &all[0];
    assert_eq!(j.format, Format::QlogJson);
    assert_eq!(j.records, seq.records);
    assert_eq!(j.exit, seq.exit);
    assert_eq!(j.delivered_bytes(), seq.delivered_bytes());
    assert_eq!(j.samples, seq.samples);

    // Cut in the middle: the events before the cut are kept, the cut is reported.
    let cut = common::write(
        f.dir.path(),
        "cut.qlog",
        &text.as_bytes()[..text.len() * 2 / 3],
    );
    let c = read_file(&cut).expect("cut json").remove(0);
    assert_eq!(c.skipped.len(), 1);
    assert!(
        c.skipped[0].reason.contains("cut short"),
        "{}",
        c.skipped[0].reason
    );
    assert!(c.records > 0 && c.records < seq.records);
}

/// qvis (qvis.quictools.info) loads a JSON-SEQ file when its first record has `qlog_version`
/// and `qlog_format` and a `trace` with a `vantage_point`, and its congestion graph reads
/// `transport:packet_sent` (`header.packet_number`, `header.length`),
/// `transport:packet_received` and `recovery:metrics_updated` (`congestion_window`,
/// `bytes_in_flight`, `smoothed_rtt`, `min_rtt`, `latest_rtt`) with a numeric `time`.
#[test]
fn hare_qlog_has_what_qvis_needs() {
    let f = common::fixture("qvis", "cubic@linux-2.6.39", 2, "125k");
    let bytes = std::fs::read(&f.client_qlog).expect("read");
    assert_eq!(bytes.first(), Some(&0x1E), "JSON-SEQ starts with RS");
    let mut records = bytes
        .split(|&b| b == 0x1E)
        .filter(|r| !r.iter().all(u8::is_ascii_whitespace))
        .map(|r| serde_json::from_slice::<serde_json::Value>(r).expect("every record is JSON"));
    let header = records.next().expect("header");
    assert_eq!(header["qlog_version"], "0.3");
    assert_eq!(header["qlog_format"], "JSON-SEQ");
    assert!(header["trace"]["vantage_point"]["type"].is_string());
    let mut seen = std::collections::BTreeMap::<String, u64>::new();
    let mut metric_fields = std::collections::BTreeSet::<String>::new();
    let mut last_time = 0.0;
    for ev in records {
        let time = ev["time"].as_f64().expect("numeric time");
        assert!(time >= last_time, "times in order");
        last_time = time;
        let name = ev["name"].as_str().expect("name").to_string();
        match name.as_str() {
            "transport:packet_sent" => {
                assert!(ev["data"]["header"]["packet_number"].is_u64());
                assert!(ev["data"]["header"]["length"].is_u64());
                assert!(ev["data"]["header"]["packet_type"].is_string());
            }
            "transport:packet_received" => {
                assert!(ev["data"]["header"]["packet_number"].is_u64());
            }
            "recovery:metrics_updated" => {
                if let Some(o) = ev["data"].as_object() {
                    metric_fields.extend(o.keys().cloned());
                }
            }
            _ => {}
        }
        *seen.entry(name).or_default() += 1;
    }
    for name in [
        "transport:packet_sent",
        "transport:packet_received",
        "recovery:metrics_updated",
        "recovery:packet_lost",
    ] {
        assert!(
            seen.get(name).copied().unwrap_or(0) > 0,
            "no {name}: {seen:?}"
        );
    }
    for field in [
        "congestion_window",
        "bytes_in_flight",
        "smoothed_rtt",
        "min_rtt",
        "latest_rtt",
        "ssthresh",
    ] {
        assert!(
            metric_fields.contains(field),
            "no {field}: {metric_fields:?}"
        );
    }
}
