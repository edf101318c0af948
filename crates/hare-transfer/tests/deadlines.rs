//! Peers that stall: none of them holds a job slot, a refusal or a connection for longer than
//! the documented deadlines, and legitimate senders are served beside them.

mod hostile;

use std::time::{Duration, Instant};

use hare_transfer::protocol::{close, Job, ToReceiver, ToSender, PROTOCOL_VERSION};
use hare_transfer::receiver::REFUSE_TIMEOUT;
use hare_transfer::testkit::{recv_options, runtime as rt, send_options, BackgroundReceiver};
use hare_transfer::{send, Limits, SendJob, Stop};
use hostile::{connect, Hostile};

fn receiver(token: Option<&str>, limits: Limits) -> (tempfile::TempDir, BackgroundReceiver) {
    let id = tempfile::tempdir().expect("tempdir");
    let mut o = recv_options(id.path().into(), None);
    o.token = token.map(str::to_owned);
    if token.is_some() {
        // Token only: the hostile clients present the test sender's (allowed) certificate.
        o.allow.clear();
    }
    o.limits = limits;
    (id, BackgroundReceiver::start(o).expect("receiver"))
}

fn bulk_hello(bytes: u64, token: Option<&str>) -> ToReceiver {
    ToReceiver::Hello {
        version: PROTOCOL_VERSION,
        software: "hostile".into(),
        token: token.map(str::to_owned),
        job: Job::Bulk {
            bytes: Some(bytes),
            seconds: None,
            streams: 1,
        },
        window: 1 << 20,
        fixed_window: false,
        controller: "hostile".into(),
        interval_s: None,
        reverse: None,
        ends_bulk: false,
        striping: None,
    }
}

/// A client whose receive windows are (almost) closed: the receiver cannot write to it.
fn deaf(window: u32) -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.stream_receive_window(window.into())
        .receive_window(window.into());
    t
}

fn legit_bulk(r: &BackgroundReceiver, token: Option<&str>) -> hare_transfer::SendOptions {
    let mut o = send_options(
        r.addr,
        r.trust(),
        SendJob::Bulk {
            bytes: Some(4 << 20),
            seconds: None,
            streams: 1,
        },
    );
    o.token = token.map(str::to_owned);
    o
}

#[test]
fn sixteen_zero_window_wrong_token_clients_do_not_stop_a_legitimate_sender() {
    let (_id, r) = receiver(Some("s3cret"), Limits::default());
    let fp = r.fingerprint.expect("quic");
    rt().block_on(async {
        let mut attackers: Vec<Hostile> = Vec::new();
        for _ in 0..16 {
            let mut h = connect(r.addr, fp, Some(deaf(0))).await;
            h.say(&bulk_hello(1 << 30, Some("guess"))).await;
            attackers.push(h);
        }
        let t = Instant::now();
        let outcome = send(legit_bulk(&r, Some("s3cret")), Stop::never())
            .await
            .expect("the legitimate sender is served");
        assert_eq!(outcome.run.summary.map(|s| s.bytes), Some(4 << 20));
        // Refused best-effort, then closed regardless: the refusal wait plus the linger.
        let bound = 2 * REFUSE_TIMEOUT + Duration::from_secs(2);
        for h in &attackers {
            let c = h.closed_within(bound.saturating_sub(t.elapsed())).await;
            assert!(
                matches!(&c, Some((code, reason)) if *code == u64::from(close::REFUSED) && reason.contains("wrong token")),
                "{c:?}"
            );
        }
    });
}

#[test]
fn a_client_that_never_reads_is_dropped_within_the_write_deadline() {
    let limits = Limits {
        write_timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let (_id, r) = receiver(None, limits);
    let fp = r.fingerprint.expect("quic");
    rt().block_on(async {
        let mut h = connect(r.addr, fp, Some(deaf(600))).await;
        h.say(&bulk_hello(1 << 30, None)).await;
        let t = Instant::now();
        // 2,000 progress requests, never read: the answers fill the window.
        for seq in 0..2000 {
            h.say(&ToReceiver::ProgressRequest { seq }).await;
            if seq % 100 == 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let c = h.closed_within(Duration::from_secs(6)).await;
        assert!(
            matches!(&c, Some((code, reason)) if *code == u64::from(close::TIMEOUT) && reason.contains("did not read its control stream for 1 s")),
            "{c:?}"
        );
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    });
}

#[test]
fn a_job_without_data_ends_at_the_stall_deadline_with_its_own_code() {
    let limits = Limits {
        stall_timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let (_id, r) = receiver(None, limits);
    let fp = r.fingerprint.expect("quic");
    rt().block_on(async {
        let mut h = connect(r.addr, fp, None).await;
        let a = h.hello(&bulk_hello(1 << 20, None)).await;
        assert!(matches!(a, Some(ToSender::Welcome { .. })), "{a:?}");
        let c = h.closed_within(Duration::from_secs(5)).await;
        assert!(
            matches!(&c, Some((code, reason)) if *code == u64::from(close::TIMEOUT) && reason.contains("no data for 1 s")),
            "{c:?}"
        );
    });
}

#[test]
fn silent_connections_hold_no_job_slot_and_a_full_receiver_says_busy() {
    let limits = Limits {
        max_conns: 1,
        max_conns_per_peer: 1,
        hello_timeout: Duration::from_secs(2),
        ..Limits::default()
    };
    let (_id, r) = receiver(None, limits);
    let fp = r.fingerprint.expect("quic");
    rt().block_on(async {
        // Five clients that never send a hello: a legitimate sender still gets the one slot.
        let mut silent = Vec::new();
        for _ in 0..5 {
            silent.push(connect(r.addr, fp, None).await);
        }
        let outcome = send(legit_bulk(&r, None), Stop::never())
            .await
            .expect("served beside silent clients");
        assert_eq!(outcome.run.summary.map(|s| s.bytes), Some(4 << 20));
        for h in &silent {
            let c = h.closed_within(Duration::from_secs(4)).await;
            assert!(
                matches!(&c, Some((code, reason)) if *code == u64::from(close::TIMEOUT) && reason.contains("no hello within 2 s")),
                "{c:?}"
            );
        }
        // One job holds the only slot: the next is told the receiver is busy, with code 4.
        let mut holder = connect(r.addr, fp, None).await;
        let a = holder.hello(&bulk_hello(1 << 20, None)).await;
        assert!(matches!(a, Some(ToSender::Welcome { .. })), "{a:?}");
        let mut late = connect(r.addr, fp, None).await;
        let a = late.hello(&bulk_hello(1 << 20, None)).await;
        assert!(
            matches!(&a, Some(ToSender::Refuse { reason }) if reason.starts_with("receiver busy: all 1 job slots are in use")),
            "{a:?}"
        );
        let c = late.closed_within(Duration::from_secs(4)).await;
        assert!(matches!(&c, Some((code, _)) if *code == u64::from(close::BUSY)), "{c:?}");
    });
}

#[test]
fn a_crowded_pre_auth_budget_still_serves_new_clients_after_a_retry() {
    let limits = Limits {
        max_preauth: 2,
        max_preauth_per_peer: 2,
        hello_timeout: Duration::from_secs(3),
        ..Limits::default()
    };
    let (_id, r) = receiver(None, limits);
    let fp = r.fingerprint.expect("quic");
    rt().block_on(async {
        // One silent client takes half the budget: the next ones get a Retry first, which a
        // real client answers, and are served.
        let _silent = connect(r.addr, fp, None).await;
        let outcome = send(legit_bulk(&r, None), Stop::never())
            .await
            .expect("served after a Retry");
        assert_eq!(outcome.run.summary.map(|s| s.bytes), Some(4 << 20));
    });
}
