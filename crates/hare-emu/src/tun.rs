//! TUN devices (layer 3, `IFF_TUN | IFF_NO_PI`): each `read` returns one whole IP packet and
//! each `write` injects one, with no packet-information header. Opened non-blocking.
//!
//! A TUN device has no offloads negotiated (no `IFF_VNET_HDR`), so the kernel segments TCP
//! and UDP GSO before handing packets over: every read is at most one MTU.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

use crate::error::{last_os, EmuError, Result};

/// The TUN control device.
pub const TUN_PATH: &str = "/dev/net/tun";

/// `struct ifreq` as TUNSETIFF reads it: the name, then the flags (a `short`) at the start of
/// the union; 40 bytes in all on 64-bit Linux.
#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// An open TUN device (closed, and so destroyed unless persistent, on drop).
#[derive(Debug)]
pub struct Tun {
    file: File,
    name: String,
}

impl Tun {
    /// Creates the TUN device `name` in the calling thread's network namespace.
    pub fn create(name: &str) -> Result<Tun> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(EmuError::config(
                "tun name",
                format!("{name:?}: 1 to {} bytes", libc::IFNAMSIZ - 1),
            ));
        }
        let path = c"/dev/net/tun";
        // SAFETY: valid NUL-terminated path; flags are plain ints.
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(last_os(format!("open {TUN_PATH}")));
        }
        // SAFETY: fd was just opened and is owned by nobody else.
        let file = unsafe { File::from_raw_fd(fd) };
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
            _pad: [0; 22],
        };
        for (d, s) in req.name.iter_mut().zip(name.bytes()) {
            *d = s as libc::c_char;
        }
        // SAFETY: TUNSETIFF reads and writes a struct ifreq; IfReq has its layout and size.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut req as *mut IfReq) };
        if rc < 0 {
            return Err(last_os(format!("ioctl(TUNSETIFF, {name})")));
        }
        Ok(Tun {
            file,
            name: name.to_string(),
        })
    }

    /// The interface name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one IP packet (non-blocking: `WouldBlock` when none is queued).
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read(buf)
    }

    /// Injects one IP packet into the device's namespace.
    pub fn send(&mut self, data: &[u8]) -> io::Result<()> {
        let n = self.file.write(data)?;
        if n == data.len() {
            Ok(())
        } else {
            Err(io::Error::new(io::ErrorKind::WriteZero, "short TUN write"))
        }
    }
}

impl AsRawFd for Tun {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}
