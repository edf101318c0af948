//! How a socket buffer (`nuttcp -w`) maps onto QUIC flow-control windows.

use super::schema::{SocketBuffer, WindowEra, WindowSpec};

/// The mapping, as documented in docs/REPLAY.md.
///
/// `nuttcp -wN` calls `setsockopt(SO_SNDBUF/SO_RCVBUF, N)` on both ends. Linux stores twice
/// the value (`sock_setsockopt`: the doubling reserves room for `struct sk_buff` overhead),
/// and the receiver advertises `tcp_win_from_space(2N)` = `2N - 2N >> tcp_adv_win_scale`:
/// with `tcp_adv_win_scale = 2` (every 2.6 kernel, until 3.4's b49960a05e32 made it 1) that
/// is `1.5 N`. The receive window, not cwnd, then caps the bytes in flight at `1.5 N`.
/// QUIC's analogue of the advertised window is the peer's flow-control credit: hare sets the
/// stream and connection receive windows to `1.5 N` and the send window (quinn's cap on
/// unacknowledged bytes, the role of the doubled `SO_SNDBUF`) to `2 N`.
///
/// Where the analogy ends: TCP charges skb truesize (a 9000-byte frame costs more than
/// 9000 bytes of buffer) and a slow reader shrinks its window; QUIC credit counts stream
/// bytes exactly and hare's receiver reads at once. Linux autotuning grows the buffers up to
/// `tcp_rmem[2]` / `tcp_wmem[2]` (4 MiB by default in 2.6.35, so an autotuned window is
/// `4 MiB * 3/4 = 3 MiB`); the autotuning scenarios state the limit they stand for.
pub const WINDOW_MAPPING_DOC: &str = "QUIC stream/connection receive window = 1.5 x -w \
(2.6.x: SO_RCVBUF doubled, tcp_adv_win_scale=2 advertises 3/4); send window = 2 x -w";

/// Windows in bytes; `None` leaves quinn's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResolvedWindows {
    /// Stream receive window.
    pub stream: Option<u64>,
    /// Connection receive window.
    pub connection: Option<u64>,
    /// Send window.
    pub send: Option<u64>,
    /// `socket_buffer = "auto"`: the connection window autotunes up to this cap (the
    /// stream and send windows are the cap too, unless set explicitly).
    pub autotune: Option<u64>,
}

impl ResolvedWindows {
    /// Apply the era's rule to `socket_buffer`, then the explicit sizes. Errors are
    /// `(field, value, expected)`.
    pub fn resolve(spec: &WindowSpec) -> Result<Self, (String, String, String)> {
        let mut w = ResolvedWindows::default();
        if spec.max_window.is_some() && spec.socket_buffer != Some(SocketBuffer::Auto) {
            return Err((
                "max_window".into(),
                "set".into(),
                "only with socket_buffer = \"auto\"".into(),
            ));
        }
        if let Some(SocketBuffer::Auto) = spec.socket_buffer {
            let cap = spec
                .max_window
                .map_or(hare_cc::autotune::DEFAULT_MAX_WINDOW, |m| m.0);
            if cap == 0 {
                return Err(("max_window".into(), "0".into(), "at least 1 byte".into()));
            }
            w = ResolvedWindows {
                stream: Some(cap),
                connection: Some(hare_cc::autotune::INITIAL_WINDOW.min(cap)),
                send: Some(cap),
                autotune: Some(cap),
            };
        }
        if let Some(SocketBuffer::Size(buf)) = spec.socket_buffer {
            let n = buf.0;
            if n == 0 {
                return Err(("socket_buffer".into(), "0".into(), "at least 1 byte".into()));
            }
            let (recv, send) = match spec.era {
                WindowEra::Linux26 => (n.saturating_mul(3) / 2, n.saturating_mul(2)),
                WindowEra::LinuxModern => (n, n.saturating_mul(2)),
                WindowEra::Literal => (n, n),
            };
            w = ResolvedWindows {
                stream: Some(recv),
                connection: Some(recv),
                send: Some(send),
                autotune: None,
            };
        }
        for (name, v, slot) in [
            ("stream", spec.stream, &mut w.stream),
            ("connection", spec.connection, &mut w.connection),
            ("send", spec.send, &mut w.send),
        ] {
            if let Some(v) = v {
                if v.0 == 0 {
                    return Err((name.into(), "0".into(), "at least 1 byte".into()));
                }
                *slot = Some(v.0);
            }
        }
        // QUIC varints carry at most 2^62 - 1 (RFC 9000 section 16).
        for (name, v) in [
            ("stream", w.stream),
            ("connection", w.connection),
            ("send", w.send),
            ("max_window", w.autotune),
        ] {
            if let Some(v) = v {
                if v >= 1 << 62 {
                    return Err((
                        name.into(),
                        v.to_string(),
                        "less than 2^62 bytes (QUIC varint)".into(),
                    ));
                }
            }
        }
        Ok(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hare_link::ByteSize;

    #[test]
    fn sixty_megabytes_maps_to_ninety_mebibytes_of_credit() {
        let spec = WindowSpec {
            socket_buffer: Some(SocketBuffer::Size(ByteSize(60 << 20))),
            ..WindowSpec::default()
        };
        let w = ResolvedWindows::resolve(&spec).expect("valid");
        assert_eq!(w.stream, Some(90 << 20));
        assert_eq!(w.connection, Some(90 << 20));
        assert_eq!(w.send, Some(120 << 20));
        let modern = WindowSpec {
            era: WindowEra::LinuxModern,
            stream: Some(ByteSize(1000)),
            ..spec.clone()
        };
        let w = ResolvedWindows::resolve(&modern).expect("valid");
        assert_eq!(
            (w.stream, w.connection, w.send),
            (Some(1000), Some(60 << 20), Some(120 << 20))
        );
        assert_eq!(
            ResolvedWindows::resolve(&WindowSpec::default()),
            Ok(ResolvedWindows::default())
        );
        let zero = WindowSpec {
            send: Some(ByteSize(0)),
            ..WindowSpec::default()
        };
        assert_eq!(
            ResolvedWindows::resolve(&zero).map_err(|e| e.0),
            Err("send".to_string())
        );
    }

    #[test]
    fn auto_autotunes_the_connection_window_up_to_the_cap() {
        let spec = WindowSpec {
            socket_buffer: Some(SocketBuffer::Auto),
            max_window: Some(ByteSize(64 << 20)),
            ..WindowSpec::default()
        };
        let w = ResolvedWindows::resolve(&spec).expect("valid");
        assert_eq!(
            (w.stream, w.connection, w.send, w.autotune),
            (
                Some(64 << 20),
                Some(128 << 10),
                Some(64 << 20),
                Some(64 << 20)
            )
        );
        let default_cap = WindowSpec {
            max_window: None,
            ..spec.clone()
        };
        let w = ResolvedWindows::resolve(&default_cap).expect("valid");
        assert_eq!(w.autotune, Some(128 << 20));
        let fixed_with_cap = WindowSpec {
            socket_buffer: Some(SocketBuffer::Size(ByteSize(1 << 20))),
            ..spec
        };
        assert_eq!(
            ResolvedWindows::resolve(&fixed_with_cap).map_err(|e| e.0),
            Err("max_window".to_string())
        );
    }
}
