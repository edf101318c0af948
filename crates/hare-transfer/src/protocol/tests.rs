//! The wire format: frames, headers and messages as both sides read them.

use super::*;
use crate::error::{Result, TransferError};

#[test]
fn header_round_trips_and_has_fixed_layout() {
    let h = DataHeader {
        kind: DataKind::File,
        index: 0x0102_0304,
        offset: 0x1122_3344_5566_7788,
        session: [9; 12],
        attempt: 0x0203,
    };
    let b = h.encode();
    assert_eq!(&b[..8], b"HARE\x01\x01\x02\x03");
    assert_eq!(&b[8..12], &[1, 2, 3, 4]);
    assert_eq!(
        &b[12..20],
        &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
    );
    assert_eq!(DataHeader::decode(&b).ok(), Some(h));
}

#[test]
fn header_rejects_bad_magic_version_kind() {
    let good = DataHeader {
        kind: DataKind::Bulk,
        index: 0,
        offset: 0,
        session: [0; 12],
        attempt: 0,
    }
    .encode();
    let mut b = good;
    b[0] = b'X';
    assert!(DataHeader::decode(&b).is_err());
    let mut b = good;
    b[4] = 2;
    assert!(DataHeader::decode(&b).is_err());
    let mut b = good;
    b[5] = 7;
    assert!(DataHeader::decode(&b).is_err());
}

#[tokio::test]
async fn frames_round_trip_and_oversize_is_refused() {
    let msg = ToSender::Progress { seq: 3, bytes: 42 };
    let mut buf = Vec::new();
    write_frame(&mut buf, &msg).await.expect("write to a Vec");
    assert_eq!(&buf[..4], &(buf.len() as u32 - 4).to_be_bytes());
    let mut r = &buf[..];
    let back: Option<ToSender> = read_frame(&mut r).await.expect("read back");
    assert_eq!(back, Some(msg));
    let none: Option<ToSender> = read_frame(&mut r).await.expect("clean end");
    assert_eq!(none, None);

    let mut huge = ((MAX_FRAME + 1) as u32).to_be_bytes().to_vec();
    huge.extend_from_slice(b"{}");
    let mut r = &huge[..];
    let res: Result<Option<ToSender>> = read_frame(&mut r).await;
    assert!(matches!(res, Err(TransferError::Protocol(_))));
}

#[test]
fn failure_codes_travel_and_unknown_ones_read_as_other() {
    let m = ToSender::FileResult {
        index: 1,
        ok: false,
        reason: Some("x".into()),
        code: Some(FailCode::DiskFull),
    };
    let text = serde_json::to_string(&m).unwrap_or_default();
    assert_eq!(
        text,
        r#"{"type":"file-result","index":1,"ok":false,"reason":"x","code":"disk-full"}"#
    );
    let newer = r#"{"type":"file-result","index":1,"ok":false,"reason":"x","code":"cosmic-ray"}"#;
    let back: Option<ToSender> = serde_json::from_str(newer).ok();
    assert!(matches!(
        back,
        Some(ToSender::FileResult {
            code: Some(FailCode::Other),
            ..
        })
    ));
    let older = r#"{"type":"file-result","index":1,"ok":true,"reason":null}"#;
    let back: Option<ToSender> = serde_json::from_str(older).ok();
    assert!(matches!(
        back,
        Some(ToSender::FileResult { code: None, .. })
    ));
    let enospc = std::io::Error::from_raw_os_error(libc::ENOSPC);
    assert_eq!(FailCode::of_io(&enospc), FailCode::DiskFull);
    let eacces = std::io::Error::from_raw_os_error(libc::EACCES);
    assert_eq!(FailCode::of_io(&eacces), FailCode::Permission);
}

#[test]
fn bulk_end_travels_and_a_hello_says_whether_its_sender_sends_it() {
    let end = ToReceiver::BulkEnd {
        bytes: 12_345,
        stopped: false,
    };
    let text = serde_json::to_string(&end).unwrap_or_default();
    assert_eq!(text, r#"{"type":"bulk-end","bytes":12345}"#);
    let back: Option<ToReceiver> = serde_json::from_str(&text).ok();
    assert_eq!(back, Some(end));
    let stopped = r#"{"type":"bulk-end","bytes":1,"stopped":true}"#;
    let back: Option<ToReceiver> = serde_json::from_str(stopped).ok();
    assert_eq!(
        back,
        Some(ToReceiver::BulkEnd {
            bytes: 1,
            stopped: true
        })
    );
    let hello = ToReceiver::Hello {
        version: PROTOCOL_VERSION,
        software: "s".into(),
        token: None,
        job: Job::Bulk {
            bytes: None,
            seconds: Some(1.0),
            streams: 1,
        },
        window: 1,
        fixed_window: false,
        controller: "c".into(),
        interval_s: None,
        reverse: None,
        ends_bulk: true,
        striping: None,
    };
    let text = serde_json::to_string(&hello).unwrap_or_default();
    assert!(text.ends_with(r#""ends_bulk":true}"#), "{text}");
    // An older sender's hello has no flag: it does not send bulk-end.
    let old = text.replace(r#","ends_bulk":true"#, "");
    let back: Option<ToReceiver> = serde_json::from_str(&old).ok();
    assert!(
        matches!(
            back,
            Some(ToReceiver::Hello {
                ends_bulk: false,
                striping: None,
                ..
            })
        ),
        "{old}"
    );
}

#[test]
fn reverse_hellos_travel_and_older_hellos_still_read() {
    let hello = ToReceiver::Hello {
        version: REVERSE_VERSION,
        software: "s".into(),
        token: None,
        job: Job::Bulk {
            bytes: Some(1),
            seconds: None,
            streams: 1,
        },
        window: 1,
        fixed_window: false,
        controller: "c".into(),
        interval_s: None,
        reverse: Some(Reverse { rate_bps: Some(8) }),
        ends_bulk: false,
        striping: None,
    };
    let text = serde_json::to_string(&hello).unwrap_or_default();
    assert!(text.ends_with(r#""reverse":{"rate_bps":8}}"#), "{text}");
    let back: Option<ToReceiver> = serde_json::from_str(&text).ok();
    assert_eq!(back, Some(hello));
    let older = r#"{"type":"hello","version":1,"software":"s","token":null,
        "job":{"kind":"bulk","bytes":1,"seconds":null,"streams":1},"window":1,
        "controller":"c"}"#;
    let back: Option<ToReceiver> = serde_json::from_str(older).ok();
    assert!(matches!(
        back,
        Some(ToReceiver::Hello {
            reverse: None,
            fixed_window: false,
            ..
        })
    ));
    // A fixed -w travels as a flag beside the window; an auto one is left out.
    let fixed = older.replace(r#""window":1,"#, r#""window":1,"fixed_window":true,"#);
    let back: Option<ToReceiver> = serde_json::from_str(&fixed).ok();
    assert!(matches!(
        back,
        Some(ToReceiver::Hello {
            fixed_window: true,
            ..
        })
    ));
    assert!(!text.contains("fixed_window"), "{text}");
    let stop = ToSender::StopSending { reason: "x".into() };
    assert_eq!(
        serde_json::to_string(&stop).ok().as_deref(),
        Some(r#"{"type":"stop-sending","reason":"x"}"#)
    );
    let start = FromRemoteSender::Start {
        controller: "cubic@linux-6".into(),
        profile: None,
    };
    assert_eq!(
        serde_json::to_string(&start).ok().as_deref(),
        Some(r#"{"type":"start","controller":"cubic@linux-6"}"#)
    );
}

#[test]
fn new_fields_are_optional_both_ways() {
    // An older receiver's welcome: no features, no link verdicts.
    let old = r#"{"type":"welcome","version":1,"software":"hare-recv 0.0.9","window":1,"files":[],"session":null}"#;
    let back: Option<ToSender> = serde_json::from_str(old).ok();
    assert!(matches!(
        back,
        Some(ToSender::Welcome { features, links, .. }) if features.is_empty() && links.is_empty()
    ));
    // A field this version does not know is ignored, as older receivers ignore `links`.
    let newer = r#"{"kind":"files","files":[],"resume":false,"force":false,"later":[1]}"#;
    assert!(serde_json::from_str::<Job>(newer).is_ok());
    // Without links the job reads as before.
    let j = Job::Files {
        files: Vec::new(),
        resume: false,
        force: false,
        dirs: Vec::new(),
        links: Vec::new(),
        skip: None,
        dest: None,
    };
    assert_eq!(
        serde_json::to_string(&j).ok().as_deref(),
        Some(r#"{"kind":"files","files":[],"resume":false,"force":false}"#)
    );
    let r = ToReceiver::FileRetry {
        index: 1,
        reason: "changed".into(),
        size: 5,
        mode: None,
        mtime_ns: None,
        attempt: None,
    };
    assert_eq!(
        serde_json::to_string(&r).ok().as_deref(),
        Some(r#"{"type":"file-retry","index":1,"reason":"changed","size":5}"#)
    );
}

#[test]
fn messages_have_stable_json() {
    let m = ToReceiver::FileDone {
        index: 2,
        blake3: "ab".into(),
    };
    assert_eq!(
        serde_json::to_string(&m).ok().as_deref(),
        Some(r#"{"type":"file-done","index":2,"blake3":"ab"}"#)
    );
    let j = Job::Bulk {
        bytes: Some(1024),
        seconds: None,
        streams: 1,
    };
    assert_eq!(
        serde_json::to_string(&j).ok().as_deref(),
        Some(r#"{"kind":"bulk","bytes":1024,"seconds":null,"streams":1}"#)
    );
}

#[test]
fn session_ids_parse() {
    assert_eq!(
        super::parse_session("000102030405060708090a0b").ok(),
        Some([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    );
    assert!(super::parse_session("00").is_err());
    assert!(super::parse_session("zz0102030405060708090a0b").is_err());
}

#[test]
fn a_range_header_carries_where_its_file_starts() {
    let h = DataHeader::range(7, 8 << 20, 1 << 20, 3);
    let back = DataHeader::decode(&h.encode()).expect("decodes");
    assert_eq!(back, h);
    assert_eq!(back.kind, DataKind::Range);
    assert_eq!((back.index, back.offset, back.attempt), (7, 8 << 20, 3));
    assert_eq!(back.range_start(), 1 << 20);
    // Other kinds start nowhere in particular.
    let f = DataHeader {
        kind: DataKind::File,
        ..h
    };
    assert_eq!(f.range_start(), 0);
}
