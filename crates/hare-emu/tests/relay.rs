//! Relay mode end to end on loopback (no privileges needed).

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use hare_emu::check::Mode;
use hare_emu::traffic::{blast, echo_rtts, Echo, Sink};
use hare_emu::validate::{validate, ModeSel, ValidateConfig};
use hare_emu::{RelayConfig, RelayEmulator};
use hare_link::{BitRate, ByteSize, LossModel, PathConfig, TimeSpan};

/// The tests share the machine's two cores: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn relay_to(rx: &UdpSocket, path: PathConfig) -> RelayEmulator {
    let target = rx.local_addr().unwrap();
    RelayEmulator::start(RelayConfig::new(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        target,
        path,
    ))
    .unwrap()
}

#[test]
fn echo_crosses_both_directions_with_the_path_delay() {
    let _serial = serial();
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let path = PathConfig::symmetric(BitRate(50_000_000), TimeSpan(20_000_000), None);
    let relay = relay_to(&rx, path);
    let _echo = Echo::start(rx).unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    tx.connect(relay.listen_addr()).unwrap();
    let mut rtts = echo_rtts(&tx, None, 10, 64, 5_000_000, 1_000_000_000).unwrap();
    let run = relay.stop().unwrap();
    assert_eq!(rtts.len(), 10);
    rtts.sort_unstable();
    // Never faster than the path: 20 ms + two serialisations of 92 IP bytes (14.72 us each).
    assert!(rtts[0] >= 20_029_440, "RTT {} ns below the path's", rtts[0]);
    assert!(rtts[5] < 25_000_000, "median RTT {} ns", rtts[5]);
    assert_eq!(run.mode, Mode::Relay);
    assert_eq!(run.engine.forward.link.offered_packets, 10);
    assert_eq!(run.engine.reverse.link.offered_packets, 10);
    assert_eq!(run.engine.forward.released_packets, 10);
    assert_eq!(run.engine.forward.released_bytes, 10 * 92);
    assert_eq!(run.engine.lateness.count, 20);
}

#[test]
fn seeded_loss_and_drop_tail_decide_exactly_what_arrives() {
    let _serial = serial();
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut path = PathConfig::symmetric(
        BitRate(20_000_000),
        TimeSpan(10_000_000),
        Some(ByteSize(1_000_000)),
    );
    path.forward.loss = vec![LossModel::Episode {
        from: TimeSpan(0),
        to: TimeSpan(60_000_000_000),
        one_in: 10,
        random: false,
    }];
    let relay = relay_to(&rx, path);
    let sink = Sink::start(rx, 1000).unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    tx.connect(relay.listen_addr()).unwrap();
    // 10 Mbit/s of 1000-byte IP packets for 0.4 s: 500 packets; every 10th is dropped.
    let sent = blast(&tx, None, 972, 1000, 10_000_000, 400_000_000).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let got = sink.finish();
    let run = relay.stop().unwrap();
    assert_eq!(sent.send_ns.len(), 500);
    assert_eq!(got.len(), 450);
    assert!(got.iter().all(|a| a.seq % 10 != 9));
    assert_eq!(run.engine.forward.link.dropped.episode, 50);
    // Lateness depends on the machine's load while tests run; drops do not.
    assert!(run.unintended.is_empty(), "{:?}", run.unintended);
    println!("{}", run.line());
}

#[test]
fn validate_emulator_passes_in_relay_mode_at_a_low_rate() {
    let _serial = serial();
    let mut cfg = ValidateConfig::new(BitRate(20_000_000), TimeSpan(20_000_000));
    cfg.blast_ns = 400_000_000;
    let report = validate(&cfg, ModeSel::Relay).unwrap();
    println!("{}", report.table());
    // 1 idle-RTT pair, 2 blasts x 2, 1.2 R: 3 + 1, Bernoulli 3 + 1, GE 2 + 1.
    assert_eq!(report.rows.len(), 2 + 4 + 4 + 4 + 3);
    // Timing rows (self-checks, idle RTT) depend on the machine's load while the workspace's
    // tests run; the functional rows must pass regardless.
    for r in report
        .rows
        .iter()
        .filter(|r| !r.check.ends_with("self-check") && !r.check.starts_with("idle RTT"))
    {
        assert!(r.pass, "{} failed: {}", r.check, r.measured);
    }
}
