//! Namespace mode (root, /dev/net/tun). Without them each test says why it is skipped.

use std::net::UdpSocket;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use hare_emu::netns::{self, Side};
use hare_emu::traffic::{echo_rtts, Echo};
use hare_emu::validate::{validate, ModeSel, ValidateConfig};
use hare_emu::{CubicParams, CubicParamsGuard, EmuError, NamespaceConfig, NamespaceEmulator};
use hare_link::{BitRate, PathConfig, TimeSpan};

/// The namespace tests share the machine's two cores: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn skip() -> bool {
    match netns::unavailable_reason() {
        Some(why) => {
            eprintln!("skipped: {why}");
            true
        }
        None => false,
    }
}

fn ns_exists(name: &str) -> bool {
    Path::new(netns::NETNS_DIR).join(name).exists()
}

#[test]
fn namespaces_exist_while_running_and_are_gone_after_stop() {
    let _serial = serial();
    if skip() {
        return;
    }
    let path = PathConfig::symmetric(BitRate(50_000_000), TimeSpan(10_000_000), None);
    let emu = NamespaceEmulator::start(NamespaceConfig::new("t1", path)).unwrap();
    assert!(ns_exists("hare-t1-snd") && ns_exists("hare-t1-rcv"));
    // A second emulator cannot take the same instance.
    let again = NamespaceEmulator::start(NamespaceConfig::new(
        "t1",
        PathConfig::symmetric(BitRate(1_000_000), TimeSpan(1_000_000), None),
    ));
    assert!(matches!(again, Err(EmuError::Refused(_))));
    // Commands run inside: the sender namespace has 10.77.0.1 and nothing else but lo.
    let out = emu
        .command(Side::Sender, "ip")
        .unwrap()
        .args(["-4", "-o", "addr"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("10.77.0.1 peer 10.77.0.2"), "{text}");
    let env = emu
        .command(Side::Receiver, "sh")
        .unwrap()
        .args(["-c", "echo $HARE_EMU_SELF $HARE_EMU_PEER"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&env.stdout).trim(),
        "10.77.0.2 10.77.0.1"
    );
    // UDP echo across the TUN path.
    let rx = emu
        .run_in(Side::Receiver, || {
            UdpSocket::bind(("10.77.0.2", 7000)).map_err(|e| EmuError::io("bind", e))
        })
        .unwrap();
    let tx = emu
        .run_in(Side::Sender, || {
            let s = UdpSocket::bind(("10.77.0.1", 0)).map_err(|e| EmuError::io("bind", e))?;
            s.connect(("10.77.0.2", 7000))
                .map_err(|e| EmuError::io("connect", e))?;
            Ok(s)
        })
        .unwrap();
    let echo = Echo::start(rx).unwrap();
    let mut rtts = echo_rtts(&tx, None, 10, 64, 5_000_000, 1_000_000_000).unwrap();
    drop(echo);
    let run = emu.stop().unwrap();
    assert_eq!(rtts.len(), 10);
    rtts.sort_unstable();
    assert!(rtts[0] >= 10_000_000 && rtts[5] < 15_000_000, "{rtts:?}");
    // Exactly our 10 probes each way: IPv6 is off, nothing else crosses.
    assert_eq!(run.engine.forward.link.offered_packets, 10);
    assert_eq!(run.engine.reverse.link.offered_packets, 10);
    // TUN packets are whole IP packets: 64 + 8 (UDP) + 20 (IPv4).
    assert_eq!(run.engine.forward.link.offered_bytes, 10 * 92);
    assert!(!ns_exists("hare-t1-snd") && !ns_exists("hare-t1-rcv"));
}

#[test]
fn stale_namespaces_are_removed_at_start() {
    let _serial = serial();
    if skip() {
        return;
    }
    // A killed run left hare-t2stale-snd behind, with nobody holding its lock.
    netns::ip(&["netns", "add", "hare-t2stale-snd"]).unwrap();
    let path = PathConfig::symmetric(BitRate(10_000_000), TimeSpan(1_000_000), None);
    let emu = NamespaceEmulator::start(NamespaceConfig::new("t2", path)).unwrap();
    assert!(!ns_exists("hare-t2stale-snd"));
    let run = emu.stop().unwrap();
    assert!(run.valid, "{:?}", run.invalid_reasons);
}

#[test]
fn validate_emulator_passes_in_namespace_mode_at_a_low_rate() {
    let _serial = serial();
    if skip() {
        return;
    }
    let mut cfg = ValidateConfig::new(BitRate(20_000_000), TimeSpan(20_000_000));
    cfg.blast_ns = 400_000_000;
    cfg.instance = "t3".into();
    let report = validate(&cfg, ModeSel::Namespace).unwrap();
    println!("{}", report.table());
    assert_eq!(report.rows.len(), 17);
    // Timing rows (self-checks, idle RTT) depend on the machine's load while the workspace's
    // tests run; the functional rows must pass regardless. The timing figures come from the
    // real validate-emulator runs (docs/EMULATOR.md).
    for r in report
        .rows
        .iter()
        .filter(|r| !r.check.ends_with("self-check") && !r.check.starts_with("idle RTT"))
    {
        assert!(r.pass, "{} failed: {}", r.check, r.measured);
    }
}

fn example_binary() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let p = exe.parent()?.parent()?.join("examples").join("hare-emu");
    p.is_file().then_some(p)
}

#[test]
fn ctrl_c_tears_the_namespaces_down() {
    let _serial = serial();
    if skip() {
        return;
    }
    let Some(bin) = example_binary() else {
        eprintln!("skipped: examples/hare-emu not built");
        return;
    };
    let mut child = Command::new(bin)
        .args([
            "emulate",
            "--mode",
            "namespace",
            "--instance",
            "t4",
            "--rate",
            "10m",
            "--rtt",
            "10ms",
            "--duration",
            "60s",
        ])
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !ns_exists("hare-t4-rcv") && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(ns_exists("hare-t4-snd"), "emulator did not come up");
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill(2) on the pid of the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(t0.elapsed() < Duration::from_secs(30));
    assert!(!ns_exists("hare-t4-snd") && !ns_exists("hare-t4-rcv"));
}

#[test]
fn tcp_cubic_parameter_is_set_for_the_run_and_restored() {
    let _serial = serial();
    if skip() {
        return;
    }
    let file = Path::new(hare_emu::cubic_sysfs::PARAM_DIR).join("hystart_ack_delta_us");
    let before = std::fs::read_to_string(&file).unwrap().trim().to_string();
    let v: u32 = before.parse::<u32>().unwrap() + 1;
    let p = CubicParams {
        hystart_ack_delta_us: Some(v),
        ..Default::default()
    };
    {
        let _g = CubicParamsGuard::apply(&p, 60.0).unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap().trim(),
            v.to_string()
        );
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), before);
}
