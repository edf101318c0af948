use hare_report::{
    iperf, jsonl, nuttcp, CcEvent, Event, EventKind, ExitReason, Interval, Phase, Role, Run,
    RunHeader, Summary, Tool, Transport, Windows, SCHEMA,
};

fn sample_run() -> Run {
    Run {
        header: RunHeader {
            schema: SCHEMA.into(),
            tool: Tool::HareSim,
            tool_version: "0.1.0".into(),
            role: Role::Sender,
            transport: Transport::Quic,
            run_id: "t".into(),
            scenario: None,
            controller: "cubic@linux-6".into(),
            profile: Some("linux-6".into()),
            mtu: 8952,
            windows: Windows::default(),
            path: None,
            seed: Some(1),
            started_at: None,
            interval_s: 1.0,
        },
        intervals: vec![
            Interval {
                start_s: 0.0,
                end_s: 1.0,
                bytes: 7_150_000,
                cwnd_bytes: Some(8952 * 10),
                cwnd_segments: Some(10),
                ..Default::default()
            },
            Interval {
                start_s: 1.0,
                end_s: 2.0,
                bytes: 909_459_456,
                ..Default::default()
            },
        ],
        events: vec![Event {
            t_s: 1.5,
            kind: EventKind::Cc {
                event: CcEvent::SlowStartExit {
                    t_us: 1_500_000,
                    cwnd: 11_000,
                    ssthresh: 11_000,
                    reason: ExitReason::AckTrain,
                },
            },
        }],
        summary: Some(Summary {
            bytes: 916_609_456,
            seconds: 2.0,
            valid: true,
            completed: true,
            ..Default::default()
        }),
    }
}

#[test]
fn jsonl_round_trips_and_orders_events_before_their_interval() {
    let run = sample_run();
    let mut buf = Vec::new();
    jsonl::write_run(&mut buf, &run).unwrap();
    let text = String::from_utf8(buf.clone()).unwrap();
    let types: Vec<&str> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            match v["type"].as_str().unwrap() {
                "header" => "h",
                "interval" => "i",
                "event" => "e",
                "summary" => "s",
                _ => "?",
            }
        })
        .collect();
    assert_eq!(types, ["h", "i", "e", "i", "s"]);
    let back = jsonl::read_run(&buf[..], "mem").unwrap();
    assert_eq!(back.truncated_records, 0);
    assert_eq!(back.run, run);
}

#[test]
fn truncated_last_line_is_counted_not_fatal() {
    let mut buf = Vec::new();
    jsonl::write_run(&mut buf, &sample_run()).unwrap();
    let cut = &buf[..buf.len() - 20];
    let back = jsonl::read_run(cut, "cut.jsonl").unwrap();
    assert_eq!(back.truncated_records, 1);
    assert!(back.run.summary.is_none());
    assert_eq!(back.run.intervals.len(), 2);
}

#[test]
fn non_report_input_names_the_source() {
    let err = jsonl::read_run(&b"{\"qlog_version\":\"0.3\"}\n{}\n"[..], "x.sqlog").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("x.sqlog:1: not a hare report record"),
        "{msg}"
    );
    let err = jsonl::read_run(&b""[..], "empty.jsonl").unwrap_err();
    assert!(err.to_string().contains("empty.jsonl"), "{err}");
}

#[test]
fn nuttcp_line_matches_the_threads_format() {
    // The thread prints e.g. `867.3289 MB /   1.00 sec = 7275.9510 Mbps`; same widths and
    // units (MB = 2^20 bytes, Mbps = 10^6 bit/s): 909_459_456 B = 867.328125 MB.
    assert_eq!(
        nuttcp::rate_part(909_459_456, 1.0),
        "  867.3281 MB /   1.00 sec = 7275.6756 Mbps"
    );
    assert_eq!(
        nuttcp::rate_part(7_150_000, 1.0),
        "    6.8188 MB /   1.00 sec =   57.2000 Mbps"
    );
}

#[test]
fn iperf_shape_has_start_intervals_end() {
    let v = iperf::to_iperf_json(&sample_run());
    assert_eq!(v["intervals"].as_array().unwrap().len(), 2);
    assert_eq!(v["intervals"][1]["sum"]["bytes"], 909_459_456u64);
    assert_eq!(v["end"]["sum_received"]["bytes"], 916_609_456u64);
    assert_eq!(v["start"]["congestion_used"], "cubic@linux-6");
    assert_eq!(v["events"][0]["kind"]["event"]["reason"], "ack-train");
}

/// The controller records are the report's own types: their JSON is the schema, pinned here
/// byte for byte so a change to the controller crate cannot change a report.
#[test]
fn controller_records_have_stable_json() {
    let cases: Vec<(CcEvent, &str)> = vec![
        (
            CcEvent::SlowStartExit {
                t_us: 1,
                cwnd: 2,
                ssthresh: 3,
                reason: ExitReason::SsthreshReached,
            },
            r#"{"event":"slow-start-exit","t_us":1,"cwnd":2,"ssthresh":3,"reason":"ssthresh-reached"}"#,
        ),
        (
            CcEvent::CssEntered { t_us: 4, cwnd: 5 },
            r#"{"event":"css-entered","t_us":4,"cwnd":5}"#,
        ),
        (
            CcEvent::CssAborted { t_us: 6, cwnd: 7 },
            r#"{"event":"css-aborted","t_us":6,"cwnd":7}"#,
        ),
        (
            CcEvent::WindowReduced {
                t_us: 8,
                from_cwnd: 9,
                to_cwnd: 10,
                ssthresh: 11,
                ecn: true,
            },
            r#"{"event":"window-reduced","t_us":8,"from_cwnd":9,"to_cwnd":10,"ssthresh":11,"ecn":true}"#,
        ),
        (
            CcEvent::RecoveryEnded { t_us: 12, cwnd: 13 },
            r#"{"event":"recovery-ended","t_us":12,"cwnd":13}"#,
        ),
        (
            CcEvent::RtoReset {
                t_us: 14,
                from_cwnd: 15,
                ssthresh: 16,
            },
            r#"{"event":"rto-reset","t_us":14,"from_cwnd":15,"ssthresh":16}"#,
        ),
    ];
    for (event, json) in cases {
        assert_eq!(serde_json::to_string(&event).unwrap(), json);
        assert_eq!(serde_json::from_str::<CcEvent>(json).unwrap(), event);
    }
    let reasons = [
        (ExitReason::AckTrain, "ack-train"),
        (ExitReason::Delay, "delay"),
        (ExitReason::Loss, "loss"),
        (ExitReason::SsthreshReached, "ssthresh-reached"),
        (ExitReason::CssDone, "css-done"),
        (ExitReason::Rto, "rto"),
    ];
    for (reason, name) in reasons {
        assert_eq!(
            serde_json::to_string(&reason).unwrap(),
            format!("\"{name}\"")
        );
        assert_eq!(reason.as_str(), name);
    }
    let phases = [
        (Phase::SlowStart, "\"slow-start\""),
        (Phase::ConservativeSlowStart, "\"conservative-slow-start\""),
        (Phase::CongestionAvoidance, "\"congestion-avoidance\""),
        (Phase::Recovery, "\"recovery\""),
    ];
    for (phase, json) in phases {
        assert_eq!(serde_json::to_string(&phase).unwrap(), json);
    }
}

#[test]
fn an_empty_job_shows_no_cpu_figures() {
    // `-n 0`: the process's start-up over a few milliseconds is no cost of a transfer.
    let empty = Summary {
        bytes: 0,
        seconds: 0.01,
        cpu_sender_pct: Some(99.0),
        cpu_receiver_pct: Some(97.0),
        srtt_ms: Some(0.05),
        valid: true,
        ..Default::default()
    };
    assert_eq!(
        nuttcp::summary_line(&empty),
        "    0.0000 MB /   0.01 sec =    0.0000 Mbps 0 lost 0.05 msRTT"
    );
    let moved = Summary {
        bytes: 1 << 20,
        ..empty
    };
    assert_eq!(
        nuttcp::summary_line(&moved),
        "    1.0000 MB /   0.01 sec =  838.8608 Mbps  99 %TX  97 %RX 0 lost 0.05 msRTT"
    );
}
