//! Raw `setsockopt` for the options the `socket2` crate does not wrap (`SO_RCVBUFFORCE`,
//! `SO_SNDBUFFORCE`, `SO_MAX_PACING_RATE`, `SO_TIMESTAMPNS`, `UDP_SEGMENT`, ...), written once
//! for the whole workspace: the transfer tools and the emulator call these instead of
//! repeating the `unsafe` block.
//!
//! Linux only, like the rest of hare's socket code. The value's size is the option's ABI:
//! the kernel reads exactly `optlen` bytes, so an `int` option takes [`set_int`] and the one
//! 64-bit option (`SO_MAX_PACING_RATE`, a `u64` since Linux 4.13) takes [`set_u64`].
#![warn(missing_docs)]

use std::io;
use std::os::fd::AsRawFd;

/// `setsockopt(fd, level, opt, &value, sizeof(int))`; the OS error when the kernel refuses
/// (e.g. `EPERM` for the `*FORCE` buffer options without `CAP_NET_ADMIN`).
pub fn set_int(
    sock: &impl AsRawFd,
    level: libc::c_int,
    opt: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    set_raw(sock, level, opt, &value)
}

/// `setsockopt(fd, level, opt, &value, sizeof(u64))`; the OS error when the kernel refuses.
pub fn set_u64(
    sock: &impl AsRawFd,
    level: libc::c_int,
    opt: libc::c_int,
    value: u64,
) -> io::Result<()> {
    set_raw(sock, level, opt, &value)
}

/// The one `unsafe` call, private so only plain integer values reach it.
fn set_raw<T: Copy>(
    sock: &impl AsRawFd,
    level: libc::c_int,
    opt: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: `sock` owns an open fd for the duration of the call; the pointer is to a live
    // integer of exactly the length passed, which the kernel only reads.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            opt,
            value as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    fn get_int(sock: &UdpSocket, level: libc::c_int, opt: libc::c_int) -> libc::c_int {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: a valid fd and an int-sized out buffer with its length.
        let rc = unsafe {
            libc::getsockopt(
                sock.as_raw_fd(),
                level,
                opt,
                &mut v as *mut libc::c_int as *mut libc::c_void,
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        v
    }

    #[test]
    fn int_option_is_set_and_read_back() {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        set_int(&sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).unwrap();
        assert_eq!(get_int(&sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS), 1);
        set_int(&sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 0).unwrap();
        assert_eq!(get_int(&sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS), 0);
    }

    #[test]
    fn u64_option_is_accepted() {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        set_u64(
            &sock,
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            125_000_000,
        )
        .unwrap();
    }

    #[test]
    fn refusal_is_the_os_error() {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        // No such option at SOL_SOCKET: the kernel answers ENOPROTOOPT.
        let e = set_int(&sock, libc::SOL_SOCKET, 0x7fff, 1).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOPROTOOPT));
    }
}
