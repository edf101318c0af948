//! The UDP ports the remote hare may bind (`--remote-ports 60000-60100`), for hosts whose
//! firewall opens a range: by default the remote binds an ephemeral port the kernel picks.

use std::fmt;
use std::str::FromStr;

/// An inclusive range of UDP ports, `LOW-HIGH` or one `PORT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    low: u16,
    high: u16,
}

impl PortRange {
    /// The ports to try, lowest first.
    pub fn ports(&self) -> impl Iterator<Item = u16> {
        self.low..=self.high
    }
}

impl FromStr for PortRange {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let port = |p: &str| -> Result<u16, String> {
            match p.trim().parse::<u16>() {
                Ok(0) | Err(_) => Err(format!(
                    "`{s}` is not a UDP port range: give PORT or LOW-HIGH, ports 1 to 65535"
                )),
                Ok(n) => Ok(n),
            }
        };
        let (low, high) = match s.split_once('-') {
            Some((a, b)) => (port(a)?, port(b)?),
            None => (port(s)?, port(s)?),
        };
        if low > high {
            return Err(format!(
                "`{s}`: the range's low port is above its high port"
            ));
        }
        Ok(Self { low, high })
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.low == self.high {
            write!(f, "{}", self.low)
        } else {
            write!(f, "{}-{}", self.low, self.high)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_print_and_refuse() {
        let r: PortRange = "60000-60002".parse().expect("range");
        assert_eq!(r.ports().collect::<Vec<_>>(), [60000, 60001, 60002]);
        assert_eq!(r.to_string(), "60000-60002");
        let one: PortRange = "5300".parse().expect("one");
        assert_eq!(one.ports().collect::<Vec<_>>(), [5300]);
        assert_eq!(one.to_string(), "5300");
        for bad in ["0", "70000", "a-b", "10-5", "", "5-"] {
            assert!(bad.parse::<PortRange>().is_err(), "{bad}");
        }
    }
}
