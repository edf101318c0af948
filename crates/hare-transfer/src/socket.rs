//! UDP sockets for quinn: large kernel buffers, and a wrapper that caps GSO batches so that one
//! batch of jumbo datagrams still fits the 65,507-byte UDP limit.
//!
//! Why (docs/PLATFORM.md, "Jumbo MTU and GSO"): quinn builds GSO batches of up to 10
//! segments; 10 x 8952 bytes exceeds what one `sendmsg` may carry, the kernel answers
//! EMSGSIZE, quinn-udp counts the batch as sent, the datagrams vanish and black-hole detection
//! drops the MTU to 1200. Reporting `max_transmit_segments = 65507 / mtu` keeps every batch
//! legal.

use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, Runtime, TokioRuntime, UdpPoller};
use socket2::{Domain, Protocol, Socket, Type};

use crate::error::{Result, TransferError};

/// Largest UDP payload of one `sendmsg` over IPv4 (65,535 - 8 - 20).
pub const MAX_UDP_BATCH: usize = 65_507;
/// Kernel socket buffer asked for (the kernel may clamp it to `net.core.{r,w}mem_max`; as root
/// the `*BUFFORCE` options lift that clamp).
pub const SOCKET_BUFFER: usize = 16 << 20;

/// GSO segments per batch for datagrams of `mtu` bytes.
pub fn gso_segments_for(mtu: u16) -> usize {
    (MAX_UDP_BATCH / usize::from(mtu.max(1))).max(1)
}

/// An [`AsyncUdpSocket`] that forwards everything to quinn's tokio socket but reports at most
/// `max_segments` segments per transmit.
pub struct CappedSocket {
    inner: Arc<dyn AsyncUdpSocket>,
    max_segments: usize,
}

impl fmt::Debug for CappedSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CappedSocket")
            .field("max_segments", &self.max_segments)
            .finish()
    }
}

impl AsyncUdpSocket for CappedSocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.inner.clone().create_io_poller()
    }
    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        self.inner.try_send(transmit)
    }
    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        self.inner.poll_recv(cx, bufs, meta)
    }
    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
    fn max_transmit_segments(&self) -> usize {
        self.inner.max_transmit_segments().min(self.max_segments)
    }
    fn max_receive_segments(&self) -> usize {
        self.inner.max_receive_segments()
    }
    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

/// A bound UDP socket with large buffers (dual-stack when bound to `[::]`).
pub fn bind_udp(addr: SocketAddr) -> Result<std::net::UdpSocket> {
    let what = |e| TransferError::io(format!("binding UDP {addr}"), e);
    let sock =
        Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP)).map_err(what)?;
    if addr.is_ipv6() {
        // Serve IPv4 clients too when listening on [::]; harmless elsewhere.
        let _ = sock.set_only_v6(false);
    }
    enlarge_buffers(&sock);
    sock.bind(&addr.into()).map_err(what)?;
    Ok(sock.into())
}

/// Bind UDP on every address (`[::]`, or `0.0.0.0` where IPv6 is off) at the first free port
/// of `ports`, or at one the kernel picks when `ports` is empty.
pub fn bind_udp_any(ports: &[u16]) -> Result<std::net::UdpSocket> {
    let on = |port: u16| {
        bind_udp(SocketAddr::from(([0u16; 8], port)))
            .or_else(|_| bind_udp(SocketAddr::from(([0, 0, 0, 0], port))))
    };
    let (Some(first), Some(last)) = (ports.first(), ports.last()) else {
        return on(0);
    };
    let mut last_err = None;
    for &port in ports {
        match on(port) {
            Ok(sock) => return Ok(sock),
            Err(e) => last_err = Some(e),
        }
    }
    let why = last_err.map_or_else(String::new, |e| format!(" (last: {e})"));
    Err(TransferError::Config(format!(
        "no free UDP port in {first}-{last}{why}"
    )))
}

/// Ask for [`SOCKET_BUFFER`]-sized kernel buffers, forcing past the sysctl limit when allowed.
pub fn enlarge_buffers(sock: &Socket) {
    let _ = sock.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = sock.set_send_buffer_size(SOCKET_BUFFER);
    force_buffer(sock, libc::SO_RCVBUFFORCE);
    force_buffer(sock, libc::SO_SNDBUFFORCE);
}

fn force_buffer(sock: &Socket, opt: libc::c_int) {
    let v = SOCKET_BUFFER as libc::c_int;
    // Failure (no CAP_NET_ADMIN) is fine: the plain option above already asked for what is
    // allowed.
    let _ = hare_sockopt::set_int(sock, libc::SOL_SOCKET, opt, v);
}

/// A quinn endpoint on `socket`, its GSO batches capped for `max_udp_payload` bytes.
pub fn endpoint(
    socket: std::net::UdpSocket,
    config: quinn::EndpointConfig,
    server: Option<quinn::ServerConfig>,
    max_udp_payload: u16,
) -> Result<quinn::Endpoint> {
    let runtime: Arc<dyn Runtime> = Arc::new(TokioRuntime);
    let inner = runtime
        .wrap_udp_socket(socket)
        .map_err(|e| TransferError::io("preparing the UDP socket", e))?;
    let capped = Arc::new(CappedSocket {
        inner,
        max_segments: gso_segments_for(max_udp_payload),
    });
    quinn::Endpoint::new_with_abstract_socket(config, server, capped, runtime)
        .map_err(|e| TransferError::io("creating the QUIC endpoint", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gso_cap_fits_one_udp_send() {
        assert_eq!(gso_segments_for(8952), 7); // 7 x 8952 = 62,664 <= 65,507
        assert_eq!(gso_segments_for(1452), 45);
        assert_eq!(gso_segments_for(65_507), 1);
        assert_eq!(gso_segments_for(0), 65_507);
    }
}
