//! Namespace mode (root): a sender and a receiver network namespace, each with one TUN
//! device (`IFF_TUN | IFF_NO_PI`, named `hare-tun`) whose file descriptor the emulator holds.
//! What the sender's stack routes to the receiver's address comes out of the sender's TUN,
//! crosses the `forward` link and is written into the receiver's TUN; the reverse likewise.
//! Kernel TCP and QUIC run unchanged inside, over the same emulated path.
//!
//! Addresses are private and exist only inside the namespaces (default 10.77.0.1 for the
//! sender, 10.77.0.2 for the receiver, point-to-point). IPv6 is disabled inside so no router
//! solicitations or MLD reports cross the link. Teardown (TUN closed, both namespaces
//! deleted, lock released) happens on [`NamespaceEmulator::stop`], on drop, and so on errors
//! and on Ctrl-C once the caller unwinds; namespaces of a killed run are deleted by the next
//! start ([`crate::netns::cleanup_stale`]).

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::process::Command;

use hare_link::PathConfig;
use serde::{Deserialize, Serialize};

use crate::check::{EmulatorRun, Mode, UnintendedDrop};
use crate::emulation_loop::{Dir, EngineConfig, Ports};
use crate::error::{EmuError, Result};
use crate::netns::{self, InstanceLock, NetnsHandle, Side};
use crate::runner::EngineThread;
use crate::sysstat::{NsCounters, NsReading};
use crate::tun::Tun;

/// The TUN device's name inside each namespace.
pub const TUN_NAME: &str = "hare-tun";

/// A namespace pair to create.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NamespaceConfig {
    /// Instance name (`a-z0-9`, 1-16): namespaces `hare-<instance>-snd` / `-rcv`.
    pub instance: String,
    /// The emulated path (`forward` = sender to receiver).
    pub path: PathConfig,
    /// MTU of both TUN devices (IP bytes).
    pub mtu: u32,
    /// The sender's address (inside the sender namespace only).
    pub sender_addr: Ipv4Addr,
    /// The receiver's address (inside the receiver namespace only).
    pub receiver_addr: Ipv4Addr,
    /// TUN transmit queue length in packets: absorbs bursts while the emulator is asleep.
    pub txqueuelen: u32,
    /// Pin the emulator thread to this CPU.
    pub pin_cpu: Option<usize>,
    /// Upper limit for kernel TCP buffer autotuning inside the namespaces
    /// (`net.ipv4.tcp_rmem` / `tcp_wmem` maximum, bytes): the per-namespace defaults (6 MiB /
    /// 4 MiB) would cap kernel TCP below a 500 Mbit/s x 80 ms path.
    pub tcp_buffer_max: u64,
}

impl NamespaceConfig {
    /// Defaults: MTU 1500, 10.77.0.1 / 10.77.0.2, txqueuelen 10000, 64 MiB TCP buffers.
    pub fn new(instance: &str, path: PathConfig) -> Self {
        NamespaceConfig {
            instance: instance.to_string(),
            path,
            mtu: 1500,
            sender_addr: Ipv4Addr::new(10, 77, 0, 1),
            receiver_addr: Ipv4Addr::new(10, 77, 0, 2),
            txqueuelen: 10_000,
            pin_cpu: None,
            tcp_buffer_max: 64 << 20,
        }
    }

    /// The address of a side.
    pub fn addr(&self, side: Side) -> Ipv4Addr {
        match side {
            Side::Sender => self.sender_addr,
            Side::Receiver => self.receiver_addr,
        }
    }
}

/// The two TUN devices.
#[derive(Debug)]
pub struct TunPorts {
    sender: Tun,
    receiver: Tun,
}

impl Ports for TunPorts {
    fn poll_fds(&self) -> [RawFd; 2] {
        [self.sender.as_raw_fd(), self.receiver.as_raw_fd()]
    }

    fn recv(&mut self, dir: Dir, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        match dir {
            Dir::Forward => self.sender.recv(buf).map(|n| (n, None)),
            Dir::Reverse => self.receiver.recv(buf).map(|n| (n, None)),
        }
    }

    fn send(&mut self, dir: Dir, data: &[u8]) -> io::Result<()> {
        match dir {
            Dir::Forward => self.receiver.send(data),
            Dir::Reverse => self.sender.send(data),
        }
    }

    fn ip_overhead(&self) -> u32 {
        0
    }
}

/// Deletes the namespaces it names when dropped.
#[derive(Debug)]
struct NsGuard {
    names: Vec<String>,
    state_file: Option<PathBuf>,
}

impl Drop for NsGuard {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = netns::ip(&["netns", "del", n]);
        }
        if let Some(f) = &self.state_file {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// What `hare-lab exec` needs to know about a running instance (written to
/// `/run/hare-emu/<instance>.json` while it runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceState {
    /// Instance name.
    pub instance: String,
    /// Sender address.
    pub sender_addr: Ipv4Addr,
    /// Receiver address.
    pub receiver_addr: Ipv4Addr,
    /// The emulator's process id.
    pub pid: u32,
}

fn state_path(instance: &str) -> PathBuf {
    PathBuf::from(netns::LOCK_DIR).join(format!("{instance}.json"))
}

/// Reads the state of a running instance.
pub fn instance_state(instance: &str) -> Result<InstanceState> {
    let p = state_path(instance);
    let text = std::fs::read_to_string(&p).map_err(|e| {
        EmuError::io(
            format!(
                "read {} (is `emulate --mode namespace --instance {instance}` running?)",
                p.display()
            ),
            e,
        )
    })?;
    serde_json::from_str(&text)
        .map_err(|e| EmuError::config(p.display().to_string(), e.to_string()))
}

/// Writes a sysctl of the calling thread's namespace; failures are ignored by callers that
/// can live without it.
fn write_sysctl(path: &str, value: &str) -> Result<()> {
    std::fs::write(path, value).map_err(|e| EmuError::io(format!("write {path}"), e))
}

/// A running namespace-mode emulator. Field order is teardown order: the loop stops and the
/// TUN devices close first, then the namespaces go, then the lock.
#[derive(Debug)]
pub struct NamespaceEmulator {
    thread: EngineThread<TunPorts>,
    counters: [NsCounters; 2],
    readings0: [NsReading; 2],
    handles: [NetnsHandle; 2],
    guard: NsGuard,
    _lock: InstanceLock,
    cfg: NamespaceConfig,
}

impl NamespaceEmulator {
    /// Checks privileges, removes stale namespaces of ours, creates the pair, the TUN devices
    /// and the addresses, and starts the emulator thread.
    pub fn start(cfg: NamespaceConfig) -> Result<NamespaceEmulator> {
        netns::check_instance(&cfg.instance)?;
        netns::check_prerequisites()?;
        cfg.path.validate()?;
        if !(576..=65_535).contains(&cfg.mtu) {
            return Err(EmuError::config(
                "mtu",
                format!("{}: 576 to 65535", cfg.mtu),
            ));
        }
        netns::cleanup_stale()?;
        let lock = InstanceLock::try_acquire(&cfg.instance)?.ok_or_else(|| {
            EmuError::Refused(format!(
                "instance {:?} is in use by another emulator; pick another --instance",
                cfg.instance
            ))
        })?;
        let names = [
            netns::ns_name(&cfg.instance, Side::Sender),
            netns::ns_name(&cfg.instance, Side::Receiver),
        ];
        let mut guard = NsGuard {
            names: Vec::new(),
            state_file: None,
        };
        for n in &names {
            netns::ip(&["netns", "add", n])?;
            guard.names.push(n.clone());
        }
        let handles = [NetnsHandle::open(&names[0])?, NetnsHandle::open(&names[1])?];
        let tcp_max = cfg.tcp_buffer_max;
        let mut tuns = Vec::with_capacity(2);
        let mut counters = Vec::with_capacity(2);
        for h in &handles {
            let (tun, c) = h.run(move || {
                // Inside the namespace: no IPv6 chatter, room for kernel TCP windows.
                for p in [
                    "/proc/sys/net/ipv6/conf/all/disable_ipv6",
                    "/proc/sys/net/ipv6/conf/default/disable_ipv6",
                ] {
                    let _ = write_sysctl(p, "1");
                }
                write_sysctl(
                    "/proc/sys/net/ipv4/tcp_rmem",
                    &format!("4096 131072 {tcp_max}"),
                )?;
                write_sysctl(
                    "/proc/sys/net/ipv4/tcp_wmem",
                    &format!("4096 16384 {tcp_max}"),
                )?;
                let tun = Tun::create(TUN_NAME)?;
                let c = NsCounters::open_here()?;
                Ok((tun, c))
            })?;
            tuns.push(tun);
            counters.push(c);
        }
        let mtu = cfg.mtu.to_string();
        let qlen = cfg.txqueuelen.to_string();
        for (side, n) in [(Side::Sender, &names[0]), (Side::Receiver, &names[1])] {
            let me = cfg.addr(side).to_string();
            let peer = match side {
                Side::Sender => cfg.receiver_addr,
                Side::Receiver => cfg.sender_addr,
            }
            .to_string();
            netns::ip(&["-n", n, "link", "set", "lo", "up"])?;
            netns::ip(&[
                "-n",
                n,
                "link",
                "set",
                TUN_NAME,
                "mtu",
                &mtu,
                "txqueuelen",
                &qlen,
                "up",
            ])?;
            netns::ip(&["-n", n, "addr", "add", &me, "peer", &peer, "dev", TUN_NAME])?;
        }
        let state = InstanceState {
            instance: cfg.instance.clone(),
            sender_addr: cfg.sender_addr,
            receiver_addr: cfg.receiver_addr,
            pid: std::process::id(),
        };
        let sp = state_path(&cfg.instance);
        let text =
            serde_json::to_string(&state).map_err(|e| EmuError::config("state", e.to_string()))?;
        std::fs::write(&sp, text)
            .map_err(|e| EmuError::io(format!("write {}", sp.display()), e))?;
        guard.state_file = Some(sp);

        let mut counters: [NsCounters; 2] = match counters.try_into() {
            Ok(c) => c,
            Err(_) => return Err(EmuError::config("counters", "expected two namespaces")),
        };
        let readings0 = [counters[0].read(TUN_NAME)?, counters[1].read(TUN_NAME)?];
        let mut tuns = tuns.into_iter();
        let (Some(sender), Some(receiver)) = (tuns.next(), tuns.next()) else {
            return Err(EmuError::config("tun", "expected two devices"));
        };
        let mut ecfg = EngineConfig::new(cfg.path.clone());
        ecfg.pin_cpu = cfg.pin_cpu;
        let thread = EngineThread::spawn(TunPorts { sender, receiver }, ecfg)?;
        Ok(NamespaceEmulator {
            thread,
            counters,
            readings0,
            handles,
            guard,
            _lock: lock,
            cfg,
        })
    }

    /// The configuration it runs.
    pub fn config(&self) -> &NamespaceConfig {
        &self.cfg
    }

    /// The namespace name of a side.
    pub fn ns_name(&self, side: Side) -> String {
        netns::ns_name(&self.cfg.instance, side)
    }

    /// The link clock's origin (`CLOCK_MONOTONIC` ns): link time 0.
    pub fn origin_ns(&self) -> u64 {
        self.thread.clock().origin()
    }

    /// False when the emulator thread has ended (it failed).
    pub fn is_running(&self) -> bool {
        self.thread.is_running()
    }

    fn handle(&self, side: Side) -> &NetnsHandle {
        match side {
            Side::Sender => &self.handles[0],
            Side::Receiver => &self.handles[1],
        }
    }

    /// A command that will run inside a side's namespace, with `HARE_EMU_SELF`,
    /// `HARE_EMU_PEER` and `HARE_EMU_INSTANCE` in its environment.
    pub fn command(&self, side: Side, program: &str) -> Result<Command> {
        let mut cmd = Command::new(program);
        self.handle(side).apply_to(&mut cmd)?;
        let peer = match side {
            Side::Sender => self.cfg.receiver_addr,
            Side::Receiver => self.cfg.sender_addr,
        };
        cmd.env("HARE_EMU_SELF", self.cfg.addr(side).to_string())
            .env("HARE_EMU_PEER", peer.to_string())
            .env("HARE_EMU_INSTANCE", &self.cfg.instance);
        Ok(cmd)
    }

    /// Runs `f` on a thread inside a side's namespace (sockets it creates live there).
    pub fn run_in<T, F>(&self, side: Side, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T> + Send + 'static,
    {
        self.handle(side).run(f)
    }

    /// Stops the loop, reads the namespaces' counters, tears everything down and judges the
    /// run.
    pub fn stop(self) -> Result<EmulatorRun> {
        let NamespaceEmulator {
            thread,
            mut counters,
            readings0,
            handles,
            guard,
            _lock,
            cfg,
        } = self;
        let stopped = thread.stop();
        let r1 = [counters[0].read(TUN_NAME), counters[1].read(TUN_NAME)];
        // Close the TUN devices before the namespaces go.
        let engine = stopped.map(|(engine, ports)| {
            drop(ports);
            engine
        });
        drop(counters);
        drop(handles);
        drop(guard);
        drop(_lock);
        let engine = engine?;
        let mut unintended = Vec::new();
        for (i, name) in ["sender", "receiver"].iter().enumerate() {
            let now = match &r1[i] {
                Ok(r) => r.clone(),
                Err(e) => return Err(EmuError::config("namespace counters", e.to_string())),
            };
            let dev = now.dev.since(&readings0[i].dev);
            let udp = now.udp.since(&readings0[i].udp);
            unintended.push(UnintendedDrop {
                source: format!("{name} TUN tx_dropped (emulator read too slowly)"),
                count: dev.tx_dropped + dev.tx_errors,
            });
            unintended.push(UnintendedDrop {
                source: format!("{name} TUN rx_dropped (stack refused a write)"),
                count: dev.rx_dropped + dev.rx_errors,
            });
            unintended.push(UnintendedDrop {
                source: format!(
                    "{name} namespace Udp InErrors (RcvbufErrors +{})",
                    udp.rcvbuf_errors
                ),
                count: udp.in_errors,
            });
        }
        unintended.extend(UnintendedDrop::of_engine(
            &engine,
            "TUN write errors",
            "TUN read errors",
        ));
        Ok(EmulatorRun::judge(
            Mode::Namespace,
            cfg.path,
            engine,
            unintended,
            Vec::new(),
        ))
    }
}

/// Replaces the calling process with `argv` run inside a side's namespace of a running
/// instance (for `hare-lab exec sender|receiver -- CMD`). Returns only on error.
pub fn exec_in(instance: &str, side: Side, argv: &[String]) -> Result<std::convert::Infallible> {
    use std::os::unix::process::CommandExt;
    netns::check_instance(instance)?;
    let Some((program, args)) = argv.split_first() else {
        return Err(EmuError::config("command", "nothing to run after `--`"));
    };
    let state = instance_state(instance)?;
    let h = NetnsHandle::open(&netns::ns_name(instance, side))?;
    let peer = match side {
        Side::Sender => state.receiver_addr,
        Side::Receiver => state.sender_addr,
    };
    let me = match side {
        Side::Sender => state.sender_addr,
        Side::Receiver => state.receiver_addr,
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("HARE_EMU_SELF", me.to_string())
        .env("HARE_EMU_PEER", peer.to_string())
        .env("HARE_EMU_INSTANCE", instance);
    h.apply_to(&mut cmd)?;
    let e = cmd.exec();
    Err(EmuError::io(format!("exec {program}"), e))
}
