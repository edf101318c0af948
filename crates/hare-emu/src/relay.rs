//! Relay mode: the emulator as a UDP relay on loopback, no privileges needed.
//!
//! The sender sends to the relay's `listen` address; the relay forwards through the
//! `forward` link to `target` (the receiver) from its own upstream socket, and everything the
//! receiver sends back goes through the `reverse` link to the sender's address. The relay
//! serves one client: the source of the latest datagram received on `listen` (a new sender
//! replaces the previous one). The link counts IP bytes: UDP payload + 28 (IPv4) or + 48
//! (IPv6).

use std::collections::BTreeMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

use hare_link::PathConfig;

use crate::check::{EmulatorRun, Mode, UnintendedDrop};
use crate::emulation_loop::{Dir, EngineConfig, Ports};
use crate::error::{EmuError, Result};
use crate::runner::EngineThread;
use crate::sockopt::{enable_timestamps, size_buffers};
use crate::sysstat::{parse_udp_snmp, parse_udp_socket_drops, UdpSnmp};

/// A relay to start.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// Where the sender sends (port 0 picks one; see [`RelayEmulator::listen_addr`]).
    pub listen: SocketAddr,
    /// The receiver.
    pub target: SocketAddr,
    /// The emulated path (`forward` = listen to target).
    pub path: PathConfig,
    /// Pin the emulator thread to this CPU.
    pub pin_cpu: Option<usize>,
    /// Socket buffer size asked for on both relay sockets, bytes.
    pub socket_buffer: usize,
}

impl RelayConfig {
    /// A relay from `listen` to `target` over `path`, unpinned, 8 MiB socket buffers.
    pub fn new(listen: SocketAddr, target: SocketAddr, path: PathConfig) -> Self {
        RelayConfig {
            listen,
            target,
            path,
            pin_cpu: None,
            socket_buffer: 8 << 20,
        }
    }
}

/// The relay's two sockets.
#[derive(Debug)]
pub struct RelayPorts {
    listen: UdpSocket,
    upstream: UdpSocket,
    client: Option<SocketAddr>,
    overhead: u32,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC at start: kernel stamps are real time.
    realtime_offset: u64,
}

/// `recvmsg` with the sender's address and the kernel's `SO_TIMESTAMPNS` stamp
/// (`CLOCK_REALTIME` ns).
fn recv_stamped_from(
    sock: &UdpSocket,
    buf: &mut [u8],
) -> io::Result<(usize, Option<SocketAddr>, Option<u64>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; 16];
    // SAFETY: plain data, fully initialised by zeroing; pointers set below outlive the call.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = &mut addr as *mut libc::sockaddr_storage as *mut libc::c_void;
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
    // SAFETY: valid fd and msghdr.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let from = match i32::from(addr.ss_family) {
        libc::AF_INET => {
            // SAFETY: the kernel wrote a sockaddr_in for AF_INET.
            let a =
                unsafe { &*(&addr as *const libc::sockaddr_storage as *const libc::sockaddr_in) };
            Some(SocketAddr::from((
                u32::from_be(a.sin_addr.s_addr).to_be_bytes(),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the kernel wrote a sockaddr_in6 for AF_INET6.
            let a =
                unsafe { &*(&addr as *const libc::sockaddr_storage as *const libc::sockaddr_in6) };
            Some(SocketAddr::from((
                a.sin6_addr.s6_addr,
                u16::from_be(a.sin6_port),
            )))
        }
        _ => None,
    };
    let stamp = crate::sockopt::receive_timestamp(&msg);
    Ok((n as usize, from, stamp))
}

impl Ports for RelayPorts {
    fn poll_fds(&self) -> [RawFd; 2] {
        [self.listen.as_raw_fd(), self.upstream.as_raw_fd()]
    }

    fn recv(&mut self, dir: Dir, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        let (sock, want_from) = match dir {
            Dir::Forward => (&self.listen, true),
            Dir::Reverse => (&self.upstream, false),
        };
        let (n, from, stamp) = recv_stamped_from(sock, buf)?;
        if want_from {
            self.client = from.or(self.client);
        }
        Ok((n, stamp.map(|rt| rt.saturating_sub(self.realtime_offset))))
    }

    fn send(&mut self, dir: Dir, data: &[u8]) -> io::Result<()> {
        match dir {
            Dir::Forward => self.upstream.send(data).map(|_| ()),
            Dir::Reverse => match self.client {
                Some(c) => self.listen.send_to(data, c).map(|_| ()),
                None => Err(io::Error::new(io::ErrorKind::NotConnected, "no client yet")),
            },
        }
    }

    fn ip_overhead(&self) -> u32 {
        self.overhead
    }
}

fn read_socket_drops() -> BTreeMap<u16, u64> {
    let mut all = BTreeMap::new();
    for f in ["/proc/net/udp", "/proc/net/udp6"] {
        if let Ok(t) = std::fs::read_to_string(f) {
            for (p, d) in parse_udp_socket_drops(&t) {
                *all.entry(p).or_insert(0) += d;
            }
        }
    }
    all
}

fn read_snmp() -> UdpSnmp {
    std::fs::read_to_string("/proc/net/snmp")
        .ok()
        .and_then(|t| parse_udp_snmp(&t))
        .unwrap_or_default()
}

/// A running relay.
#[derive(Debug)]
pub struct RelayEmulator {
    thread: EngineThread<RelayPorts>,
    cfg: RelayConfig,
    listen_addr: SocketAddr,
    upstream_addr: SocketAddr,
    drops0: BTreeMap<u16, u64>,
    snmp0: UdpSnmp,
}

impl RelayEmulator {
    /// Binds the sockets and starts the emulator thread.
    pub fn start(cfg: RelayConfig) -> Result<RelayEmulator> {
        cfg.path.validate()?;
        if cfg.listen.is_ipv4() != cfg.target.is_ipv4() {
            return Err(EmuError::config(
                "target",
                "listen and target must be of the same IP version",
            ));
        }
        let listen = UdpSocket::bind(cfg.listen)
            .map_err(|e| EmuError::io(format!("bind relay to {}", cfg.listen), e))?;
        let any: SocketAddr = if cfg.target.is_ipv4() {
            SocketAddr::from(([0, 0, 0, 0], 0))
        } else {
            SocketAddr::from(([0u16; 8], 0))
        };
        let upstream =
            UdpSocket::bind(any).map_err(|e| EmuError::io("bind relay upstream socket", e))?;
        upstream
            .connect(cfg.target)
            .map_err(|e| EmuError::io(format!("connect relay to {}", cfg.target), e))?;
        for s in [&listen, &upstream] {
            s.set_nonblocking(true)
                .map_err(|e| EmuError::io("set relay socket non-blocking", e))?;
            size_buffers(s, cfg.socket_buffer);
            enable_timestamps(s)?;
        }
        let listen_addr = listen
            .local_addr()
            .map_err(|e| EmuError::io("relay local address", e))?;
        let upstream_addr = upstream
            .local_addr()
            .map_err(|e| EmuError::io("relay upstream address", e))?;
        let ports = RelayPorts {
            listen,
            upstream,
            client: None,
            overhead: if cfg.target.is_ipv4() { 28 } else { 48 },
            realtime_offset: crate::wall_clock::realtime_ns()
                .saturating_sub(crate::wall_clock::monotonic_ns()),
        };
        let mut ecfg = EngineConfig::new(cfg.path.clone());
        ecfg.pin_cpu = cfg.pin_cpu;
        let drops0 = read_socket_drops();
        let snmp0 = read_snmp();
        let thread = EngineThread::spawn(ports, ecfg)?;
        Ok(RelayEmulator {
            thread,
            cfg,
            listen_addr,
            upstream_addr,
            drops0,
            snmp0,
        })
    }

    /// Where senders send.
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen_addr
    }

    /// The link clock's origin (`CLOCK_MONOTONIC` ns): link time 0.
    pub fn origin_ns(&self) -> u64 {
        self.thread.clock().origin()
    }

    /// False when the emulator thread has ended (it failed).
    pub fn is_running(&self) -> bool {
        self.thread.is_running()
    }

    /// Stops the relay and judges the run.
    pub fn stop(self) -> Result<EmulatorRun> {
        let (engine, ports) = self.thread.stop()?;
        let drops1 = read_socket_drops();
        let snmp = read_snmp().since(&self.snmp0);
        let mut watched: Vec<(u16, &str)> = vec![
            (self.listen_addr.port(), "relay listen socket"),
            (self.upstream_addr.port(), "relay upstream socket"),
            (self.cfg.target.port(), "receiver socket"),
        ];
        if let Some(c) = ports.client {
            watched.push((c.port(), "sender socket"));
        }
        let mut unintended = Vec::new();
        for (port, what) in watched {
            let d = drops1
                .get(&port)
                .copied()
                .unwrap_or(0)
                .saturating_sub(self.drops0.get(&port).copied().unwrap_or(0));
            unintended.push(UnintendedDrop {
                source: format!("{what} (port {port}) receive drops"),
                count: d,
            });
        }
        unintended.extend(UnintendedDrop::of_engine(
            &engine,
            "send errors",
            "receive errors",
        ));
        let notes = vec![format!(
            "machine-wide UDP counters during the run (other users included, not judged): \
             InErrors +{}, RcvbufErrors +{}",
            snmp.in_errors, snmp.rcvbuf_errors
        )];
        Ok(EmulatorRun::judge(
            Mode::Relay,
            self.cfg.path,
            engine,
            unintended,
            notes,
        ))
    }
}
