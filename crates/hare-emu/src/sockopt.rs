//! The two raw socket calls the emulator and its test traffic share: an `int` socket option,
//! and the kernel receive timestamp (`SO_TIMESTAMPNS`) of a datagram read with `recvmsg`.

use std::os::fd::AsRawFd;

/// `setsockopt(fd, level, opt, &value, sizeof(int))`; the OS error when the kernel refuses.
pub(crate) fn set_int(
    sock: &impl AsRawFd,
    level: libc::c_int,
    opt: libc::c_int,
    value: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: a valid fd, a pointer to an int option value and its exact size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            opt,
            &value as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
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
