//! Why kernel TCP left slow start, from the kernel itself: the HyStart SNMP counters.
//!
//! `tcp_cubic.c` (and `tcp_cdg.c`) count every HyStart detection in the socket's network
//! namespace: `TCPHystartTrainDetect` / `TCPHystartDelayDetect` go up by one and
//! `TCPHystartTrainCwnd` / `TCPHystartDelayCwnd` by `tcp_snd_cwnd(tp)` in the very statement
//! that sets `snd_ssthresh = snd_cwnd` (`hystart_update()`, counters since Linux 3.13,
//! `NET_ADD_STATS` form since 4.x). `TCP_INFO` only shows that ssthresh became finite, once
//! per sampling interval, by which time a loss may already have cut cwnd; the counters name
//! the test that fired and the window it fired at, exactly. They are read from
//! `/proc/net/netstat`, which is per network namespace: exact for one connection in a
//! namespace of its own (the emulator's sender namespace), an average when several of the
//! namespace's connections left slow start by HyStart between two reads.

use std::path::Path;

/// The four HyStart counters of the `TcpExt` line of `/proc/net/netstat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HystartMib {
    /// `TCPHystartTrainDetect`: ACK-train detections.
    pub train_detect: u64,
    /// `TCPHystartTrainCwnd`: sum of cwnd (segments) at those detections.
    pub train_cwnd: u64,
    /// `TCPHystartDelayDetect`: delay-increase detections.
    pub delay_detect: u64,
    /// `TCPHystartDelayCwnd`: sum of cwnd (segments) at those detections.
    pub delay_cwnd: u64,
}

/// Which HyStart test fired between two reads, and the (mean) cwnd it fired at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HystartExit {
    /// `true`: the ACK-train test; `false`: the delay test.
    pub ack_train: bool,
    /// cwnd in segments when it fired (mean over `detections`).
    pub cwnd_segments: u32,
    /// Detections counted between the two reads (1 for one connection).
    pub detections: u64,
}

impl HystartMib {
    /// Reads the counters of the calling thread's network namespace; `None` when the kernel
    /// has no such counters (or no `/proc`).
    pub fn read() -> Option<Self> {
        Self::read_from(Path::new("/proc/net/netstat"))
    }

    /// Reads the counters from a `netstat`-format file.
    pub fn read_from(path: &Path) -> Option<Self> {
        Self::parse(&std::fs::read_to_string(path).ok()?)
    }

    /// Parses `/proc/net/netstat`: pairs of lines, `TcpExt: <names>` then `TcpExt: <values>`.
    /// `None` unless all four counters are present with numeric values.
    pub fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines().filter(|l| l.starts_with("TcpExt:"));
        let names = lines.next()?;
        let values = lines.next()?;
        let mut mib = [None::<u64>; 4];
        for (name, value) in names
            .split_whitespace()
            .zip(values.split_whitespace())
            .skip(1)
        {
            let slot = match name {
                "TCPHystartTrainDetect" => 0,
                "TCPHystartTrainCwnd" => 1,
                "TCPHystartDelayDetect" => 2,
                "TCPHystartDelayCwnd" => 3,
                _ => continue,
            };
            mib[slot] = Some(value.parse().ok()?);
        }
        Some(Self {
            train_detect: mib[0]?,
            train_cwnd: mib[1]?,
            delay_detect: mib[2]?,
            delay_cwnd: mib[3]?,
        })
    }

    /// The HyStart exit between `self` (earlier) and `later`, if a test fired. Should both
    /// have fired (several connections), the one with more detections is named.
    pub fn exit_since(&self, later: &Self) -> Option<HystartExit> {
        let train = later.train_detect.saturating_sub(self.train_detect);
        let delay = later.delay_detect.saturating_sub(self.delay_detect);
        let (ack_train, n, cwnd_sum) = if train == 0 && delay == 0 {
            return None;
        } else if train >= delay {
            (
                true,
                train,
                later.train_cwnd.saturating_sub(self.train_cwnd),
            )
        } else {
            (
                false,
                delay,
                later.delay_cwnd.saturating_sub(self.delay_cwnd),
            )
        };
        Some(HystartExit {
            ack_train,
            cwnd_segments: u32::try_from(cwnd_sum / n).unwrap_or(u32::MAX),
            detections: n,
        })
    }
}

/// tcp_cubic's `beta` module parameter (`/sys/module/tcp_cubic/parameters/beta`, scaled by
/// 1024); 717 when it cannot be read.
pub fn cubic_beta() -> u32 {
    std::fs::read_to_string("/sys/module/tcp_cubic/parameters/beta")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|&b| b > 0 && b < 1024)
        .unwrap_or(717)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NETSTAT: &str = "TcpExt: SyncookiesSent TCPHystartTrainDetect TCPHystartTrainCwnd \
                           TCPHystartDelayDetect TCPHystartDelayCwnd TCPACKSkippedSeq\n\
                           TcpExt: 0 3 2400 1 1735 9\n\
                           IpExt: InNoRoutes InTruncatedPkts\n\
                           IpExt: 0 0\n";

    #[test]
    fn parses_the_tcpext_counters() {
        assert_eq!(
            HystartMib::parse(NETSTAT),
            Some(HystartMib {
                train_detect: 3,
                train_cwnd: 2400,
                delay_detect: 1,
                delay_cwnd: 1735,
            })
        );
        // A kernel without the counters, or a garbled value: no reading rather than zeros.
        assert_eq!(HystartMib::parse("TcpExt: A B\nTcpExt: 1 2\n"), None);
        assert_eq!(HystartMib::parse(&NETSTAT.replace(" 2400 ", " x ")), None);
    }

    #[test]
    fn names_the_test_that_fired_and_its_cwnd() {
        let before = HystartMib::parse(NETSTAT).unwrap();
        assert_eq!(before.exit_since(&before), None);
        let train = HystartMib {
            train_detect: 4,
            train_cwnd: 2400 + 906,
            ..before
        };
        assert_eq!(
            before.exit_since(&train),
            Some(HystartExit {
                ack_train: true,
                cwnd_segments: 906,
                detections: 1
            })
        );
        let delay = HystartMib {
            delay_detect: 3,
            delay_cwnd: 1735 + 1000 + 1002,
            ..before
        };
        assert_eq!(
            before.exit_since(&delay),
            Some(HystartExit {
                ack_train: false,
                cwnd_segments: 1001,
                detections: 2
            })
        );
    }

    #[test]
    fn reads_this_machines_counters() {
        // Any kernel that prints the counters (Linux 6.18 here does) must read as Some.
        let text = std::fs::read_to_string("/proc/net/netstat").unwrap_or_default();
        assert_eq!(
            HystartMib::read().is_some(),
            text.contains("TCPHystartDelayCwnd"),
            "{text}"
        );
    }
}
