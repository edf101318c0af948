//! Test traffic for `validate-emulator`: paced UDP blasts with sequence numbers and send
//! timestamps, a counting sink, and a UDP echo for idle RTT.
//!
//! Payload layout: `seq` (u64 LE), send time (`CLOCK_MONOTONIC` ns, u64 LE), then padding.
//! Sender and receiver run on the same machine and clock, so `receive time - send time` is
//! the one-way delay through the emulator.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{EmuError, Result};
use crate::sockopt::{enable_timestamps, size_buffers};
use crate::wall_clock::{monotonic_ns, realtime_ns, set_timer_slack, sleep_until};

/// Bytes of header in every test datagram.
pub const HEADER: usize = 16;

/// Timer slack 1 ns and, when allowed, `SCHED_FIFO` one below the emulator: the RTT probes
/// measure the emulator, so they must not add scheduling delay of their own. Only the light
/// echo threads get it: the blast sender and sink move up to 1.2 Gbit/s, and with the
/// emulator they would exceed the kernel's real-time budget (`sched_rt_runtime_us`, 95% of
/// each period) and be throttled for tens of ms, the emulator with them.
fn instrument_thread() {
    let _ = set_timer_slack(1);
    if crate::netns::is_root() {
        let _ = crate::wall_clock::set_realtime(crate::wall_clock::DEFAULT_RT_PRIORITY - 1);
    }
}

/// Timer slack 1 ns and, when allowed, nice -20 (bulk traffic threads: the largest CFS share, so
/// compilers sharing the machine do not stall the blast or the sink, without counting against
/// the real-time budget; the emulator stays above them in FIFO).
fn bulk_thread() {
    let _ = set_timer_slack(1);
    if crate::netns::is_root() {
        let _ = crate::wall_clock::SchedPolicy::Nice(-20).apply();
    }
}

fn stamp(buf: &mut [u8], seq: u64, now: u64) {
    buf[..8].copy_from_slice(&seq.to_le_bytes());
    buf[8..16].copy_from_slice(&now.to_le_bytes());
}

fn unstamp(buf: &[u8]) -> Option<(u64, u64)> {
    let seq = u64::from_le_bytes(buf.get(..8)?.try_into().ok()?);
    let t = u64::from_le_bytes(buf.get(8..16)?.try_into().ok()?);
    Some((seq, t))
}

/// Datagrams per GSO send.
const GSO_SEGMENTS: u64 = 8;

/// Turns on UDP GSO (`UDP_SEGMENT`) with `payload`-byte segments; false when unsupported.
fn enable_gso(sock: &UdpSocket, payload: usize) -> bool {
    let size = libc::c_int::try_from(payload).unwrap_or(libc::c_int::MAX);
    hare_sockopt::set_int(sock, libc::SOL_UDP, libc::UDP_SEGMENT, size).is_ok()
}

/// What a paced blast sent.
#[derive(Debug, Clone, Default)]
pub struct BlastSent {
    /// Send time of each sequence number (`CLOCK_MONOTONIC` ns).
    pub send_ns: Vec<u64>,
    /// Datagrams the socket refused.
    pub send_errors: u64,
    /// UDP payload bytes per datagram.
    pub payload: usize,
}

/// Sends `payload`-byte datagrams to `to` (or the connected peer when `None`) so that
/// `ip_bytes_per_packet * 8 * count / duration` equals `rate_bps`, for `duration_ns`.
/// Pacing: every ~100 us the datagrams owed by then are sent (absolute schedule, no drift;
/// after a stall at most 10 ms worth is caught up, the rest of the schedule shifts).
pub fn blast(
    sock: &UdpSocket,
    to: Option<SocketAddr>,
    payload: usize,
    ip_bytes_per_packet: u64,
    rate_bps: u64,
    duration_ns: u64,
) -> Result<BlastSent> {
    let sock = sock
        .try_clone()
        .map_err(|e| EmuError::io("clone blast socket", e))?;
    on_own_thread("blast", move || {
        blast_here(
            &sock,
            to,
            payload,
            ip_bytes_per_packet,
            rate_bps,
            duration_ns,
        )
    })
}

/// Runs `work` on a thread of its own (named `hare-emu-WHAT`) and waits for it, so that the
/// real-time scheduling class it may take does not leak to the caller.
fn on_own_thread<T: Send + 'static>(
    what: &str,
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    std::thread::Builder::new()
        .name(format!("hare-emu-{what}"))
        .spawn(work)
        .map_err(|e| EmuError::io(format!("spawn {what}"), e))?
        .join()
        .map_err(|_| EmuError::config(format!("{what} thread"), "panicked"))?
}

fn blast_here(
    sock: &UdpSocket,
    to: Option<SocketAddr>,
    payload: usize,
    ip_bytes_per_packet: u64,
    rate_bps: u64,
    duration_ns: u64,
) -> Result<BlastSent> {
    if payload < HEADER || rate_bps == 0 {
        return Err(EmuError::config(
            "blast",
            "payload >= 16 bytes and a rate above 0",
        ));
    }
    bulk_thread();
    let total = (u128::from(rate_bps) * u128::from(duration_ns)
        / 8
        / 1_000_000_000
        / u128::from(ip_bytes_per_packet)) as u64;
    let mut out = BlastSent {
        send_ns: Vec::with_capacity(total as usize),
        send_errors: 0,
        payload,
    };
    let gso = enable_gso(sock, payload);
    let mut buf = vec![0u8; payload * GSO_SEGMENTS as usize];
    // Catch-up allowance after a stall: 10 ms worth of packets.
    let burst_cap =
        ((u128::from(rate_bps) / 8 / 100 / u128::from(ip_bytes_per_packet)) as u64).max(1);
    let mut start = monotonic_ns();
    let pkt_ns =
        (u128::from(ip_bytes_per_packet) * 8 * 1_000_000_000 / u128::from(rate_bps)) as u64;
    let mut seq = 0u64;
    // Bounded: ends when `total` datagrams are sent; each turn sends what is owed by now.
    while seq < total {
        let now = monotonic_ns();
        // Behind by more than 10 ms (a stall): move the schedule on instead of catching up
        // further, so no burst exceeds 10 ms worth (an eighth of the validation queue at 80 ms).
        let due_seq = ((u128::from(now - start) * u128::from(rate_bps)
            / 8
            / 1_000_000_000
            / u128::from(ip_bytes_per_packet)) as u64)
            .min(total);
        if due_seq > seq + burst_cap {
            start += (due_seq - seq - burst_cap) * pkt_ns.max(1);
        }
        let elapsed = now.saturating_sub(start);
        let owed = ((u128::from(elapsed) * u128::from(rate_bps)
            / 8
            / 1_000_000_000
            / u128::from(ip_bytes_per_packet)) as u64)
            .min(total)
            .min(seq + burst_cap);
        // Up to GSO_SEGMENTS datagrams per send with UDP GSO (one syscall; the kernel cuts
        // them into `payload`-byte datagrams): the generator then needs a fraction of the CPU
        // it would per datagram, which matters on 2 cores shared with the emulator and sink.
        while seq < owed {
            let n = if gso {
                (owed - seq).min(GSO_SEGMENTS)
            } else {
                1
            };
            let t = monotonic_ns();
            for k in 0..n as usize {
                stamp(&mut buf[k * payload..(k + 1) * payload], seq + k as u64, t);
            }
            let data = &buf[..n as usize * payload];
            let r = match to {
                Some(a) => sock.send_to(data, a),
                None => sock.send(data),
            };
            if r.is_err() {
                out.send_errors += n;
            }
            for _ in 0..n {
                out.send_ns.push(t);
            }
            seq += n;
        }
        if seq < total {
            sleep_until(monotonic_ns() + 100_000);
        }
    }
    Ok(out)
}

/// One datagram and its kernel receive time (`CLOCK_REALTIME` ns), via `recvmsg`.
pub(crate) fn recv_stamped(sock: &UdpSocket, buf: &mut [u8]) -> Option<(usize, Option<u64>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; 16];
    // SAFETY: msghdr is plain data; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
    // SAFETY: valid fd and msghdr.
    let n = unsafe { libc::recvmsg(std::os::fd::AsRawFd::as_raw_fd(sock), &mut msg, 0) };
    if n < 0 {
        return None;
    }
    let stamp = crate::sockopt::receive_timestamp(&msg);
    Some((n as usize, stamp))
}

/// One datagram received by a [`Sink`].
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    /// Its sequence number.
    pub seq: u64,
    /// When it was sent.
    pub sent_ns: u64,
    /// When it was received.
    pub recv_ns: u64,
}

/// A receiver thread that records every datagram until stopped.
#[derive(Debug)]
pub struct Sink {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Vec<Arrival>>>,
}

impl Sink {
    /// Starts receiving on `sock` (blocking reads with a 20 ms timeout to notice the stop).
    /// Arrival times are the kernel's receive timestamps (`SO_TIMESTAMPNS`), so a late
    /// wakeup of this thread does not shift them.
    pub fn start(sock: UdpSocket, capacity: usize) -> Result<Sink> {
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .map_err(|e| EmuError::io("sink read timeout", e))?;
        enable_timestamps(&sock)?;
        size_buffers(&sock, 32 << 20);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("hare-emu-sink".into())
            .spawn(move || {
                bulk_thread();
                let mut out = Vec::with_capacity(capacity);
                let mut buf = vec![0u8; 65_536];
                // CLOCK_REALTIME (kernel stamps) to CLOCK_MONOTONIC, measured once.
                let offset = realtime_ns() as i128 - monotonic_ns() as i128;
                while !flag.load(Ordering::Relaxed) {
                    if let Some((n, stamp)) = recv_stamped(&sock, &mut buf) {
                        let now = match stamp {
                            Some(rt) => (rt as i128 - offset).max(0) as u64,
                            None => monotonic_ns(),
                        };
                        if let Some((seq, sent_ns)) = unstamp(&buf[..n]) {
                            out.push(Arrival {
                                seq,
                                sent_ns,
                                recv_ns: now,
                            });
                        }
                    }
                }
                out
            })
            .map_err(|e| EmuError::io("spawn sink", e))?;
        Ok(Sink {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops and returns what arrived, in arrival order.
    pub fn finish(mut self) -> Vec<Arrival> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// A UDP echo server thread (replies to each datagram's source) until stopped.
#[derive(Debug)]
pub struct Echo {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Echo {
    /// Starts echoing on `sock`.
    pub fn start(sock: UdpSocket) -> Result<Echo> {
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .map_err(|e| EmuError::io("echo read timeout", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("hare-emu-echo".into())
            .spawn(move || {
                instrument_thread();
                let mut buf = vec![0u8; 65_536];
                while !flag.load(Ordering::Relaxed) {
                    if let Ok((n, from)) = sock.recv_from(&mut buf) {
                        let _ = sock.send_to(&buf[..n], from);
                    }
                }
            })
            .map_err(|e| EmuError::io("spawn echo", e))?;
        Ok(Echo {
            stop,
            handle: Some(handle),
        })
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Sends `count` probes of `payload` bytes every `interval_ns` through `sock` (to `to`, or
/// the connected peer) and returns the round-trip times of the echoes received, in ns.
/// Waits at most `timeout_ns` after the last probe.
pub fn echo_rtts(
    sock: &UdpSocket,
    to: Option<SocketAddr>,
    count: u64,
    payload: usize,
    interval_ns: u64,
    timeout_ns: u64,
) -> Result<Vec<u64>> {
    let sock = sock
        .try_clone()
        .map_err(|e| EmuError::io("clone probe socket", e))?;
    on_own_thread("probe", move || {
        echo_rtts_here(&sock, to, count, payload, interval_ns, timeout_ns)
    })
}

fn echo_rtts_here(
    sock: &UdpSocket,
    to: Option<SocketAddr>,
    count: u64,
    payload: usize,
    interval_ns: u64,
    timeout_ns: u64,
) -> Result<Vec<u64>> {
    instrument_thread();
    sock.set_nonblocking(true)
        .map_err(|e| EmuError::io("probe socket non-blocking", e))?;
    let mut buf = vec![0u8; payload.max(HEADER)];
    let mut rx = vec![0u8; 65_536];
    let mut rtts = Vec::with_capacity(count as usize);
    let start = monotonic_ns();
    let end = start + count * interval_ns + timeout_ns;
    let mut sent = 0u64;
    // Bounded by `end` (time) and `count` (probes): wait in ppoll for an echo or the next send.
    while monotonic_ns() < end && (rtts.len() as u64) < count {
        let now = monotonic_ns();
        if sent < count && now >= start + sent * interval_ns {
            stamp(&mut buf, sent, now);
            let _ = match to {
                Some(a) => sock.send_to(&buf, a),
                None => sock.send(&buf),
            };
            sent += 1;
        }
        while let Ok(n) = sock.recv(&mut rx) {
            let t = monotonic_ns();
            if let Some((_, sent_ns)) = unstamp(&rx[..n]) {
                rtts.push(t - sent_ns);
            }
        }
        let next = if sent < count {
            start + sent * interval_ns
        } else {
            end
        };
        let wait = next.saturating_sub(monotonic_ns()).min(20_000_000);
        let mut pfd = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(sock),
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = libc::timespec {
            tv_sec: (wait / 1_000_000_000) as libc::time_t,
            tv_nsec: (wait % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask change.
        unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    }
    Ok(rtts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_round_trip() {
        let mut b = [0u8; 20];
        stamp(&mut b, 7, 123_456_789);
        assert_eq!(unstamp(&b), Some((7, 123_456_789)));
        assert_eq!(unstamp(&b[..10]), None);
    }

    #[test]
    fn blast_sends_the_scheduled_count_over_loopback() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = rx.local_addr().unwrap();
        let sink = Sink::start(rx, 1000).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        // 10 Mbit/s of 1000-byte IP packets for 0.2 s = 250 datagrams, exactly.
        let sent = blast(&tx, Some(to), 972, 1000, 10_000_000, 200_000_000).unwrap();
        assert_eq!(sent.send_ns.len(), 250);
        let span = sent.send_ns[249] - sent.send_ns[0];
        assert!((190_000_000..260_000_000).contains(&span), "span {span}");
        std::thread::sleep(Duration::from_millis(50));
        let got = sink.finish();
        assert_eq!(got.len(), 250);
        assert_eq!(got[249].seq, 249);
    }
}
