//! Kernel TCP for reference runs (`--tcp`): sockets whose congestion control is set *before*
//! `connect()`, and `TCP_INFO` sampling.
//!
//! Why before connect (docs/PLATFORM.md, "Kernel TCP reference runs"): this machine's default
//! controller is BBR, and BBR turns the socket's internal pacing on at connection setup;
//! switching to CUBIC afterwards leaves pacing on, and paced kernel CUBIC uses a doubled
//! HyStart ACK-train threshold (tcp_cubic.c since Linux 5.6). So the controller is set on the
//! fresh socket, and the report says whether the socket is paced (`--pacing-rate` sets
//! `SO_MAX_PACING_RATE`, which switches the kernel's internal pacing on without fq).

use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpStream;

use crate::error::{Result, TransferError};

/// What the kernel says about a TCP socket (`struct tcp_info`), in the kernel's units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TcpInfo {
    /// `tcpi_snd_cwnd`, segments.
    pub cwnd: u32,
    /// `tcpi_snd_ssthresh`, segments; `None` while it is the "infinite" initial value.
    pub ssthresh: Option<u32>,
    /// `tcpi_rtt`, microseconds (smoothed).
    pub rtt_us: u32,
    /// `tcpi_min_rtt`, microseconds.
    pub min_rtt_us: u32,
    /// `tcpi_total_retrans`, segments retransmitted over the connection.
    pub total_retrans: u32,
    /// `tcpi_bytes_acked`.
    pub bytes_acked: u64,
    /// `tcpi_snd_mss`, bytes.
    pub snd_mss: u32,
    /// `tcpi_segs_out`.
    pub segs_out: u32,
    /// `tcpi_sacked`: segments the receiver has SACKed above the cumulative ACK.
    pub sacked: u32,
    /// `tcpi_notsent_bytes`: bytes written by the application and not yet sent.
    pub notsent_bytes: u32,
    /// `tcpi_state` says this side's FIN was acknowledged (FIN_WAIT2, TIME_WAIT, or CLOSE
    /// after LAST_ACK; `include/net/tcp_states.h`): `bytes_acked` then counts it.
    pub fin_acked: bool,
}

impl TcpInfo {
    /// Payload bytes the receiver holds, as the sender knows from its ACKs: `bytes_acked`
    /// (which also counts the SYN, and a FIN once acknowledged) plus the SACKed segments at
    /// one MSS each (bulk segments are full-sized), less the SYN, an acknowledged FIN and the
    /// `header` bytes that opened the channel.
    pub(crate) fn delivered_payload(&self, header: u64) -> u64 {
        let sacked = u64::from(self.sacked) * u64::from(self.snd_mss);
        let control = 1 + u64::from(self.fin_acked);
        (self.bytes_acked + sacked).saturating_sub(control + header)
    }
}

/// Abort a connection: `connect(AF_UNSPEC)` makes the kernel send a RST and drop the send
/// queue (`tcp_disconnect()`), while the descriptor stays valid for whoever else holds it.
pub fn abort(sock: &impl AsRawFd) -> std::io::Result<()> {
    // An all-zero sockaddr with AF_UNSPEC dissolves the connection (connect(2)).
    let addr = libc::sockaddr {
        sa_family: libc::AF_UNSPEC as libc::sa_family_t,
        sa_data: [0; 14],
    };
    // SAFETY: valid fd, pointer and length.
    let rc = unsafe {
        libc::connect(
            sock.as_raw_fd(),
            &addr,
            std::mem::size_of::<libc::sockaddr>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The kernel's "infinite" ssthresh (`TCP_INFINITE_SSTHRESH`, include/net/tcp.h).
const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// Read `TCP_INFO` of a connected socket.
pub(crate) fn tcp_info(sock: &impl AsRawFd) -> std::io::Result<TcpInfo> {
    // SAFETY: tcp_info is plain old data; getsockopt writes at most `len` bytes into it.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: valid fd, pointer and length for the option.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut info as *mut libc::tcp_info as *mut libc::c_void,
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(TcpInfo {
        cwnd: info.tcpi_snd_cwnd,
        ssthresh: (info.tcpi_snd_ssthresh < INFINITE_SSTHRESH).then_some(info.tcpi_snd_ssthresh),
        rtt_us: info.tcpi_rtt,
        min_rtt_us: info.tcpi_min_rtt,
        total_retrans: info.tcpi_total_retrans,
        bytes_acked: info.tcpi_bytes_acked,
        snd_mss: info.tcpi_snd_mss,
        segs_out: info.tcpi_segs_out,
        sacked: info.tcpi_sacked,
        notsent_bytes: info.tcpi_notsent_bytes,
        // TCP_FIN_WAIT2 = 5, TCP_TIME_WAIT = 6, TCP_CLOSE = 7.
        fin_acked: matches!(info.tcpi_state, 5..=7),
    })
}

/// The congestion control a connected socket runs (`TCP_CONGESTION`), e.g. `cubic`.
pub fn congestion_control(sock: &TcpStream) -> Option<String> {
    let name = socket2::SockRef::from(sock).tcp_congestion().ok()?;
    Some(
        String::from_utf8_lossy(&name)
            .trim_end_matches('\0')
            .to_owned(),
    )
}

/// The kernel's available congestion controls, for error messages.
pub(crate) fn available_controls() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into())
}

/// Socket options of a TCP data or control connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpOptions {
    /// Kernel congestion control name (`TCP_CONGESTION`).
    pub cc: String,
    /// `SO_SNDBUF` / `SO_RCVBUF` (`-w`); `None` keeps the kernel's autotuning.
    pub buffer: Option<usize>,
    /// `SO_MAX_PACING_RATE` in bytes per second; `None` leaves pacing to the controller.
    pub pacing_rate: Option<u64>,
    /// `TCP_MAXSEG`: with `--mtu N` hare uses N - 12, which makes the IP packets as large as
    /// QUIC's (N + 8 UDP + 20 IPv4 = (N - 12) + 20 TCP + 20 IPv4).
    pub mss: Option<u32>,
}

fn configure(sock: &Socket, opts: &TcpOptions) -> Result<()> {
    if !opts.cc.is_empty() {
        sock.set_tcp_congestion(opts.cc.as_bytes()).map_err(|e| {
            TransferError::Usage(format!(
                "kernel TCP congestion control `{}` is not available ({e}); available: {}",
                opts.cc,
                available_controls()
            ))
        })?;
    }
    if let Some(b) = opts.buffer {
        let _ = sock.set_send_buffer_size(b);
        let _ = sock.set_recv_buffer_size(b);
    }
    if let Some(rate) = opts.pacing_rate {
        // SO_MAX_PACING_RATE takes a u64 since Linux 4.13 (u32 before; the kernel reads the
        // size given).
        hare_sockopt::set_u64(sock, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, rate)
            .map_err(|e| TransferError::io("setting SO_MAX_PACING_RATE", e))?;
    }
    if let Some(m) = opts.mss {
        sock.set_mss(m)
            .map_err(|e| TransferError::io(format!("setting TCP_MAXSEG {m}"), e))?;
    }
    let _ = sock.set_nodelay(true);
    Ok(())
}

/// Connect to `addr` with the controller set before `connect()`.
pub async fn connect(addr: SocketAddr, opts: &TcpOptions) -> Result<TcpStream> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| TransferError::io("creating a TCP socket", e))?;
    configure(&sock, opts)?;
    sock.set_nonblocking(true)
        .map_err(|e| TransferError::io("creating a TCP socket", e))?;
    let std_stream: std::net::TcpStream = sock.into();
    tokio::net::TcpSocket::from_std_stream(std_stream)
        .connect(addr)
        .await
        .map_err(|e| TransferError::Connection(format!("TCP connect to {addr}: {e}")))
}

/// Listen on `addr` (dual-stack on `[::]`); accepted sockets inherit the controller and
/// buffers set here.
pub fn listen(addr: SocketAddr, opts: &TcpOptions) -> Result<tokio::net::TcpListener> {
    let what = |e| TransferError::io(format!("listening on TCP {addr}"), e);
    let sock =
        Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP)).map_err(what)?;
    if addr.is_ipv6() {
        let _ = sock.set_only_v6(false);
    }
    let _ = sock.set_reuse_address(true);
    configure(&sock, opts)?;
    sock.bind(&addr.into()).map_err(what)?;
    sock.listen(128).map_err(what)?;
    sock.set_nonblocking(true).map_err(what)?;
    tokio::net::TcpListener::from_std(sock.into()).map_err(what)
}

/// The controller a connected socket actually runs.
pub(crate) fn congestion_of(stream: &TcpStream) -> Option<String> {
    socket2::SockRef::from(stream)
        .tcp_congestion()
        .ok()
        .map(|v| {
            String::from_utf8_lossy(&v)
                .trim_end_matches('\0')
                .to_owned()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cubic_is_set_before_connect_and_tcp_info_reads() {
        let opts = TcpOptions {
            cc: "cubic".into(),
            ..TcpOptions::default()
        };
        let l = listen("127.0.0.1:0".parse().expect("addr"), &opts).expect("listen");
        let addr = l.local_addr().expect("addr");
        let (c, s) = tokio::join!(connect(addr, &opts), l.accept());
        let c = c.expect("connect");
        let _s = s.expect("accept");
        assert_eq!(congestion_of(&c).as_deref(), Some("cubic"));
        let info = tcp_info(&c).expect("TCP_INFO");
        assert!(info.cwnd >= 1 && info.snd_mss > 0);
    }

    #[tokio::test]
    async fn unknown_controller_is_a_clear_error() {
        let opts = TcpOptions {
            cc: "nosuchcc".into(),
            ..TcpOptions::default()
        };
        let err = connect("127.0.0.1:9".parse().expect("addr"), &opts).await;
        assert!(matches!(err, Err(TransferError::Usage(m)) if m.contains("nosuchcc")));
    }
}
