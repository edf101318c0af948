//! What the remote hare prints on the ssh channel once it listens.

use serde::{Deserialize, Serialize};

/// The start of the remote's line: anything else a login prints on standard output (a
/// shell's start-up files may) is skipped.
pub const HELLO_PREFIX: &str = "HARE-SSH ";

/// The remote's answer: where to connect and whom to trust.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServeHello {
    /// Version of this exchange (1).
    pub hare: u32,
    /// The UDP port the remote hare listens on (all its addresses).
    pub port: u16,
    /// SHA-256 of the remote's certificate, hex (a fresh certificate for this session).
    pub fingerprint: String,
    /// A one-time token the remote requires besides the pinned certificate.
    pub token: String,
    /// The UDP ports the remote listens on for a job's further connections (`-C N`):
    /// connection 1 at the first, and so on, each served on a thread of its own (absent,
    /// empty, from remotes that take them all on `port`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub further_ports: Vec<u16>,
}

impl ServeHello {
    /// The line to print, with [`HELLO_PREFIX`].
    pub fn line(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("{HELLO_PREFIX}{json}")
    }

    /// Read a line printed by [`ServeHello::line`]; `None` for any other line.
    pub fn parse(line: &str) -> Option<Self> {
        serde_json::from_str(line.trim_end().strip_prefix(HELLO_PREFIX)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_reads_back_and_other_lines_do_not() {
        let h = ServeHello {
            hare: 1,
            port: 40000,
            fingerprint: "ab".repeat(32),
            token: "t0k".into(),
            further_ports: Vec::new(),
        };
        // A remote of one port says nothing of further ones (older readers take it).
        assert!(!h.line().contains("further_ports"));
        let more = ServeHello {
            further_ports: vec![40001, 40002],
            ..h.clone()
        };
        assert_eq!(ServeHello::parse(&more.line()), Some(more));
        assert_eq!(ServeHello::parse(&h.line()), Some(h.clone()));
        assert_eq!(ServeHello::parse(&format!("{}\r\n", h.line())), Some(h));
        assert_eq!(ServeHello::parse("Welcome to host!"), None);
        assert_eq!(ServeHello::parse("HARE-SSH {not json"), None);
    }
}
