//! Kernel counters that reveal drops the path model did not ask for: UDP receive errors
//! (`/proc/net/snmp`, per network namespace), per-socket drops (`/proc/net/udp`, the last
//! column), and a device's dropped packets (`/proc/net/dev`, e.g. a TUN device whose queue
//! overflowed because the emulator read too slowly).
//!
//! The files are opened once (from a thread inside the namespace when needed: a `/proc/net`
//! file keeps the namespace it was opened in) and re-read from offset 0.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{EmuError, Result};

/// UDP error counters of one namespace (`Udp:` lines of `/proc/net/snmp`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdpSnmp {
    /// `InErrors`: datagrams that could not be delivered (includes buffer errors).
    pub in_errors: u64,
    /// `RcvbufErrors`: dropped because a socket's receive buffer was full.
    pub rcvbuf_errors: u64,
    /// `SndbufErrors`: send failures for lack of send buffer.
    pub sndbuf_errors: u64,
}

impl UdpSnmp {
    /// Counter increase from `earlier` to `self` (saturating).
    pub fn since(&self, earlier: &UdpSnmp) -> UdpSnmp {
        UdpSnmp {
            in_errors: self.in_errors.saturating_sub(earlier.in_errors),
            rcvbuf_errors: self.rcvbuf_errors.saturating_sub(earlier.rcvbuf_errors),
            sndbuf_errors: self.sndbuf_errors.saturating_sub(earlier.sndbuf_errors),
        }
    }
}

/// Parses the `Udp:` header and value lines of `/proc/net/snmp`.
pub fn parse_udp_snmp(text: &str) -> Option<UdpSnmp> {
    let mut lines = text.lines().filter(|l| l.starts_with("Udp:"));
    let names: Vec<&str> = lines.next()?.split_whitespace().skip(1).collect();
    let values: Vec<u64> = lines
        .next()?
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    let get = |n: &str| {
        names
            .iter()
            .position(|x| *x == n)
            .and_then(|i| values.get(i).copied())
            .unwrap_or(0)
    };
    Some(UdpSnmp {
        in_errors: get("InErrors"),
        rcvbuf_errors: get("RcvbufErrors"),
        sndbuf_errors: get("SndbufErrors"),
    })
}

/// Drop and error counters of one network device (`/proc/net/dev`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DevDrops {
    /// Receive errors.
    pub rx_errors: u64,
    /// Receive drops (e.g. a TUN write the stack refused).
    pub rx_dropped: u64,
    /// Transmit errors.
    pub tx_errors: u64,
    /// Transmit drops (a TUN device's queue overflowed: the emulator read too slowly).
    pub tx_dropped: u64,
}

impl DevDrops {
    /// Counter increase from `earlier` to `self` (saturating).
    pub fn since(&self, earlier: &DevDrops) -> DevDrops {
        DevDrops {
            rx_errors: self.rx_errors.saturating_sub(earlier.rx_errors),
            rx_dropped: self.rx_dropped.saturating_sub(earlier.rx_dropped),
            tx_errors: self.tx_errors.saturating_sub(earlier.tx_errors),
            tx_dropped: self.tx_dropped.saturating_sub(earlier.tx_dropped),
        }
    }

    /// All four counters added.
    pub fn total(&self) -> u64 {
        self.rx_errors + self.rx_dropped + self.tx_errors + self.tx_dropped
    }
}

/// Parses the line of device `dev` in `/proc/net/dev`
/// (`name: rx_bytes rx_packets rx_errs rx_drop ... tx_bytes tx_packets tx_errs tx_drop ...`).
pub fn parse_dev(text: &str, dev: &str) -> Option<DevDrops> {
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        if name.trim() != dev {
            continue;
        }
        let v: Vec<u64> = rest
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        if v.len() < 12 {
            return None;
        }
        return Some(DevDrops {
            rx_errors: v[2],
            rx_dropped: v[3],
            tx_errors: v[10],
            tx_dropped: v[11],
        });
    }
    None
}

/// Per-socket drop counters of `/proc/net/udp` or `/proc/net/udp6`, summed by local port.
pub fn parse_udp_socket_drops(text: &str) -> BTreeMap<u16, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        // sl local rem st tx:rx tr:when retr uid timeout inode ref pointer drops
        if f.len() < 13 {
            continue;
        }
        let Some((_, port_hex)) = f[1].rsplit_once(':') else {
            continue;
        };
        let (Ok(port), Ok(drops)) = (u16::from_str_radix(port_hex, 16), f[12].parse::<u64>())
        else {
            continue;
        };
        *out.entry(port).or_insert(0) += drops;
    }
    out
}

/// A `/proc` file kept open and re-read from the start.
#[derive(Debug)]
pub struct ProcFile {
    file: File,
    path: String,
}

impl ProcFile {
    /// Opens `path` (relative to the calling thread's namespace when it is under
    /// `/proc/thread-self/net`).
    pub fn open(path: &str) -> Result<ProcFile> {
        let file =
            File::open(Path::new(path)).map_err(|e| EmuError::io(format!("open {path}"), e))?;
        Ok(ProcFile {
            file,
            path: path.to_string(),
        })
    }

    /// The whole current content.
    pub fn read(&mut self) -> Result<String> {
        let mut s = String::new();
        self.file
            .seek(SeekFrom::Start(0))
            .and_then(|_| self.file.read_to_string(&mut s))
            .map_err(|e| EmuError::io(format!("read {}", self.path), e))?;
        Ok(s)
    }
}

/// The counter files of one namespace, opened from inside it.
#[derive(Debug)]
pub struct NsCounters {
    snmp: ProcFile,
    dev: ProcFile,
    udp: ProcFile,
    udp6: Option<ProcFile>,
}

/// A reading of [`NsCounters`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NsReading {
    /// UDP error counters.
    pub udp: UdpSnmp,
    /// The TUN device's counters.
    pub dev: DevDrops,
    /// Per-socket UDP drops by local port.
    pub socket_drops: BTreeMap<u16, u64>,
}

impl NsCounters {
    /// Opens the calling thread's namespace's files (`/proc/thread-self/net/...`).
    pub fn open_here() -> Result<NsCounters> {
        Ok(NsCounters {
            snmp: ProcFile::open("/proc/thread-self/net/snmp")?,
            dev: ProcFile::open("/proc/thread-self/net/dev")?,
            udp: ProcFile::open("/proc/thread-self/net/udp")?,
            udp6: ProcFile::open("/proc/thread-self/net/udp6").ok(),
        })
    }

    /// Reads them now; `dev` names the device whose counters are wanted.
    pub fn read(&mut self, dev: &str) -> Result<NsReading> {
        let udp = parse_udp_snmp(&self.snmp.read()?).unwrap_or_default();
        let dev = parse_dev(&self.dev.read()?, dev).unwrap_or_default();
        let mut socket_drops = parse_udp_socket_drops(&self.udp.read()?);
        if let Some(f) = &mut self.udp6 {
            for (p, d) in parse_udp_socket_drops(&f.read()?) {
                *socket_drops.entry(p).or_insert(0) += d;
            }
        }
        Ok(NsReading {
            udp,
            dev,
            socket_drops,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_udp_snmp() {
        let text = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n\
Udp: 100 2 7 90 5 1 0 0 0\nUdpLite: InDatagrams\nUdpLite: 0\n";
        let s = parse_udp_snmp(text);
        assert_eq!(
            s,
            Some(UdpSnmp {
                in_errors: 7,
                rcvbuf_errors: 5,
                sndbuf_errors: 1
            })
        );
        let later = UdpSnmp {
            in_errors: 9,
            rcvbuf_errors: 5,
            sndbuf_errors: 1,
        };
        assert_eq!(later.since(&s.unwrap_or_default()).in_errors, 2);
    }

    #[test]
    fn parses_dev_line() {
        let text = "Inter-|   Receive                                                |  Transmit\n \
face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n\
    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0\n\
hare-tun: 1500 10 1 2 0 0 0 0 3000 20 3 4 0 0 0 0\n";
        assert_eq!(
            parse_dev(text, "hare-tun"),
            Some(DevDrops {
                rx_errors: 1,
                rx_dropped: 2,
                tx_errors: 3,
                tx_dropped: 4
            })
        );
        assert_eq!(parse_dev(text, "eth0"), None);
    }

    #[test]
    fn parses_socket_drops() {
        let text = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
  123: 0100007F:1F90 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 12345 2 0000000000000000 17\n\
  124: 00000000:1F90 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 12346 2 0000000000000000 3\n\
  125: 0100007F:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 12347 2 0000000000000000 0\n";
        let d = parse_udp_socket_drops(text);
        assert_eq!(d.get(&8080), Some(&20));
        assert_eq!(d.get(&53), Some(&0));
    }
}
