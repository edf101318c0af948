//! Socket set-up the relay, the test traffic and the validation share: buffer sizes, kernel
//! receive timestamps (`SO_TIMESTAMPNS`) and reading them back from a `recvmsg`. The raw
//! `setsockopt` itself is the workspace's one helper, `hare_sockopt`.

use std::net::UdpSocket;
use std::os::fd::{AsFd, AsRawFd};

use crate::error::{EmuError, Result};

/// Sets a socket's buffers to `bytes` (forcing past `rmem_max`/`wmem_max` when root).
pub(crate) fn size_buffers<S: AsRawFd + AsFd>(sock: &S, bytes: usize) {
    let s = socket2::SockRef::from(sock);
    let _ = s.set_recv_buffer_size(bytes);
    let _ = s.set_send_buffer_size(bytes);
    if crate::netns::is_root() {
        let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_SNDBUFFORCE] {
            // Best effort, like the plain options above: the run's self-check reports drops.
            let _ = hare_sockopt::set_int(sock, libc::SOL_SOCKET, opt, v);
        }
    }
}

/// Asks the kernel to stamp every received datagram (`SO_TIMESTAMPNS`, `CLOCK_REALTIME`).
pub(crate) fn enable_timestamps(sock: &UdpSocket) -> Result<()> {
    hare_sockopt::set_int(sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
        .map_err(|e| EmuError::io("setsockopt(SO_TIMESTAMPNS)", e))
}

/// The `SO_TIMESTAMPNS` control message of a `recvmsg` the kernel just filled, as
/// `CLOCK_REALTIME` ns; `None` when the socket had no timestamps on.
pub(crate) fn receive_timestamp(msg: &libc::msghdr) -> Option<u64> {
    let mut stamp = None;
    // SAFETY: CMSG_* walk the control buffer the kernel filled, within msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    stamp
}
