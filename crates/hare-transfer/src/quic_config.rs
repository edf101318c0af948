//! Windows, MTU and controller: the QUIC transport settings both ends derive from the same few
//! options (`-w`, `--mtu`, `--cc`).

use std::sync::Arc;
use std::time::Duration;

use quinn::{EndpointConfig, MtuDiscoveryConfig, TransportConfig, VarInt};

use crate::error::{Result, TransferError};

/// A fixed `-w` for tools that want one (the loopback bench, tests): 32 MiB, about 2.5 x the
/// BDP of 1 Gbit/s x 100 ms (12.5 MB). hare-send and hare-recv default to `-w auto`
/// ([`Link::auto`]).
pub const DEFAULT_WINDOW: u64 = 32 << 20;
/// Default `--max-window`, the cap of `-w auto` ([`hare_cc::autotune::DEFAULT_MAX_WINDOW`],
/// the same in hare-sim).
pub(crate) const DEFAULT_MAX_WINDOW: u64 = hare_cc::autotune::DEFAULT_MAX_WINDOW;
/// How often an autotuned connection looks at what it received: well below any wide-area
/// RTT, so that the once-per-RTT decision comes at most this late.
const AUTOTUNE_TICK: Duration = Duration::from_millis(10);
/// Connection credit and send buffer kept beyond the data streams' windows for the control
/// stream (see [`Link::connection_window`]).
pub const CONTROL_ALLOWANCE: u64 = 1 << 20;
/// Smallest `-w` accepted.
pub(crate) const MIN_WINDOW: u64 = 64 << 10;
/// Smallest `--mtu` QUIC allows (RFC 9000 section 14: 1200-byte datagrams).
pub(crate) const MIN_MTU: u16 = 1200;
/// quinn's default MTU-discovery upper bound (1500 minus IPv6 and UDP headers).
pub(crate) const DEFAULT_MTU_BOUND: u16 = 1452;
/// Idle timeout of hare connections (the receiver's; a sender's shorter `--idle-timeout`
/// wins, QUIC takes the smaller of the two ends' `max_idle_timeout`, RFC 9000 section 10.1).
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default `--idle-timeout` of the sender: a dead receiver or path ends the run this soon.
pub const DEFAULT_SEND_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `--keep-alive` of the sender: a PING this often keeps ACKs coming while no data
/// flows (a file waiting for its verdict), so silence means the path or the peer is gone.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(2);
/// How long a side that is done waits for its endpoint to go idle after closing its
/// connections before it exits. Closing queues a CONNECTION_CLOSE that the endpoint's driver
/// sends at once; the rest of the wait is the draining period (three probe timeouts, about
/// 0.4 s at 80 ms, RFC 9000 section 10.2), which only answers a peer that missed the close.
/// Such a peer is not stuck: a receiver gives a finished job's connection up after its
/// linger (5 s). The job's verdicts are in before the close, so the user waits for no more.
pub(crate) const CLOSE_FLUSH: Duration = Duration::from_millis(100);
/// Default `--connect-timeout`: a handshake that gets no answer is given up this soon.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How soon a silent peer is given up (`--idle-timeout`) and how often a quiet connection
/// is probed (`--keep-alive`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Liveness {
    /// QUIC `max_idle_timeout` this end offers.
    pub idle_timeout: Duration,
    /// QUIC keep-alive (PING) interval.
    pub keep_alive: Duration,
    /// `--connect-timeout`: how long the handshake may go unanswered.
    pub connect_timeout: Duration,
}

impl Default for Liveness {
    fn default() -> Self {
        Self {
            idle_timeout: DEFAULT_SEND_IDLE_TIMEOUT,
            keep_alive: DEFAULT_KEEP_ALIVE,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }
}

impl Liveness {
    /// Check the settings: an idle timeout of 1 s to 1 h, a keep-alive shorter than it, a
    /// connect timeout of 1 s to 1 h.
    pub(crate) fn validate(&self) -> Result<()> {
        let idle = self.idle_timeout.as_secs_f64();
        if !(1.0..=3600.0).contains(&idle) {
            return Err(TransferError::Usage(format!(
                "--idle-timeout {idle}: must be 1 to 3600 seconds"
            )));
        }
        let ka = self.keep_alive.as_secs_f64();
        if !(ka >= 0.1 && ka < idle) {
            return Err(TransferError::Usage(format!(
                "--keep-alive {ka}: must be at least 0.1 s and below --idle-timeout ({idle} s)"
            )));
        }
        let ct = self.connect_timeout.as_secs_f64();
        if !(1.0..=3600.0).contains(&ct) {
            return Err(TransferError::Usage(format!(
                "--connect-timeout {ct}: must be 1 to 3600 seconds"
            )));
        }
        Ok(())
    }

    /// Put these settings into `t`.
    pub fn apply(&self, t: &mut TransportConfig) {
        t.max_idle_timeout(self.idle_timeout.try_into().ok())
            .keep_alive_interval(Some(self.keep_alive));
    }
}

/// The flow-control and datagram settings of one end.
///
/// Fixed (`-w SIZE`): every data stream may hold `window` bytes unread, the connection
/// `window x streams` plus [`CONTROL_ALLOWANCE`]. Autotuned (`-w auto`, [`Link::auto`]):
/// quinn fixes the per-stream window at the handshake, but lets the connection window
/// grow at run time (`Connection::set_receive_window`); so the stream windows are the cap
/// (they never limit) and the connection window is what is tuned: it starts at
/// [`hare_cc::autotune::INITIAL_WINDOW`] plus [`CONTROL_ALLOWANCE`] and grows each round trip to about twice what the
/// path delivered ([`hare_cc::autotune::RcvAutotune`], as Linux's `tcp_rcv_space_adjust()`),
/// never beyond `window` plus [`CONTROL_ALLOWANCE`] whatever the stream count: the cap bounds
/// what one connection buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// `-w`: the per-stream receive window and the unit of the connection and send windows;
    /// with `auto`, the cap (`--max-window`).
    pub window: u64,
    /// Parallel data streams (the connection and send windows are `window x streams`, like
    /// nuttcp's `-w` per socket times `-P` sockets, plus [`CONTROL_ALLOWANCE`]).
    pub streams: u16,
    /// `--mtu`: fixed UDP payload size (initial MTU = max UDP payload = discovery bound);
    /// `None` keeps quinn's discovery from 1200 up to 1452.
    pub mtu: Option<u16>,
    /// `-w auto`: the connection receive window autotunes up to `window`.
    pub auto: bool,
}

impl Link {
    /// `-w auto` up to `cap` bytes (`--max-window`), one stream, MTU discovery.
    pub fn auto(cap: u64) -> Self {
        Self {
            window: cap,
            streams: 1,
            mtu: None,
            auto: true,
        }
    }

    /// `-w window`, one stream, MTU discovery.
    pub fn fixed(window: u64) -> Self {
        Self {
            auto: false,
            ..Self::auto(window)
        }
    }

    /// Connection receive window (its cap when autotuned) and send window in bytes.
    ///
    /// Fixed: `window x streams` for the data plus [`CONTROL_ALLOWANCE`]. The data streams are
    /// each held to `window` by stream flow control, so they can never use up the
    /// connection's credit or send buffer, and a control message (a progress request, a file
    /// digest) never waits behind a window of data. Autotuned: the cap, `window` plus
    /// [`CONTROL_ALLOWANCE`] for any number of streams; below the cap the tuned window is
    /// shared by data and control, and a control message (sent at a higher priority) waits
    /// at most until the receiver has read what is in flight, which it does at once.
    pub(crate) fn connection_window(&self) -> u64 {
        let streams = if self.auto { 1 } else { self.streams.max(1) };
        self.window
            .saturating_mul(u64::from(streams))
            .saturating_add(CONTROL_ALLOWANCE)
    }

    /// The connection receive window a connection starts with: the autotuner's first window,
    /// or [`Link::connection_window`] when fixed.
    ///
    /// The allowance is part of the first window only: added on top of every tuned window
    /// (with the stream windows at the cap, the data would use it too), it let slow start
    /// overshoot a 500 Mbit/s x 80 ms path by 1 MiB more than a fixed 2-BDP window does
    /// (docs/TRANSFER.md, "`-w auto`").
    pub(crate) fn initial_receive_window(&self) -> u64 {
        if self.auto {
            hare_cc::autotune::INITIAL_WINDOW
                .min(self.window)
                .saturating_add(CONTROL_ALLOWANCE)
        } else {
            self.connection_window()
        }
    }

    /// The settings of `-w VALUE` (`auto`, also when not given, or a size such as `100m`,
    /// k/m/g powers of 2), `--max-window` (`max_window`: the cap of `auto`) and `--mtu`,
    /// one stream.
    pub fn from_args(window: Option<&str>, max_window: u64, mtu: Option<u16>) -> Result<Self> {
        let link = match window {
            None | Some("auto") => Self::auto(max_window),
            Some(w) => {
                let size = hare_link::units::parse_size(w)
                    .map_err(|e| TransferError::Usage(format!("-w {w}: {e}")))?;
                Self::fixed(size.bytes())
            }
        };
        let link = Self { mtu, ..link };
        link.validate()?;
        Ok(link)
    }

    /// Check the settings.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.window < MIN_WINDOW && self.auto {
            return Err(TransferError::Usage(format!(
                "--max-window {} is below the minimum of {MIN_WINDOW} bytes",
                self.window
            )));
        }
        if self.window < MIN_WINDOW {
            return Err(TransferError::Usage(format!(
                "-w {} is below the minimum of {MIN_WINDOW} bytes",
                self.window
            )));
        }
        if self.window > VarInt::MAX.into_inner() / 2 {
            return Err(TransferError::Usage("-w is too large".into()));
        }
        if let Some(m) = self.mtu {
            if m < MIN_MTU {
                return Err(TransferError::Usage(format!(
                    "--mtu {m} is below QUIC's minimum of {MIN_MTU} bytes"
                )));
            }
        }
        Ok(())
    }

    /// The largest UDP payload this end sends or accepts.
    pub(crate) fn max_udp_payload(&self) -> u16 {
        self.mtu.unwrap_or(DEFAULT_MTU_BOUND).max(DEFAULT_MTU_BOUND)
    }

    /// Endpoint settings: the largest UDP payload accepted.
    pub(crate) fn endpoint_config(&self) -> Result<EndpointConfig> {
        let mut c = EndpointConfig::default();
        if let Some(m) = self.mtu {
            c.max_udp_payload_size(m.max(DEFAULT_MTU_BOUND))
                .map_err(|e| TransferError::Config(format!("--mtu {m}: {e}")))?;
        }
        Ok(c)
    }

    /// Transport settings without a controller or qlog (the caller adds them).
    pub fn transport(&self) -> TransportConfig {
        let mut t = TransportConfig::default();
        let w = VarInt::from_u64(self.window).unwrap_or(VarInt::MAX);
        let cw = VarInt::from_u64(self.initial_receive_window()).unwrap_or(VarInt::MAX);
        t.stream_receive_window(w)
            .receive_window(cw)
            .send_window(self.connection_window())
            .max_idle_timeout(IDLE_TIMEOUT.try_into().ok())
            .keep_alive_interval(Some(Duration::from_secs(5)));
        if let Some(m) = self.mtu {
            // The three MTU knobs must move together (docs/PLATFORM.md).
            let mut d = MtuDiscoveryConfig::default();
            d.upper_bound(m);
            t.initial_mtu(m)
                .min_mtu(MIN_MTU.min(m))
                .mtu_discovery_config(Some(d));
        }
        t
    }
}

/// Open `conn`'s connection receive window to `grant` bytes (what this receiver grants the
/// peer, at most [`Link::connection_window`]): at once when `link` is fixed; when autotuned,
/// from [`Link::initial_receive_window`] upwards by a task that lives as long as `conn` and
/// grows the window once per round trip to about twice the bytes that arrived
/// ([`hare_cc::autotune::RcvAutotune`]; UDP payload bytes, which is what the window credits
/// give the path room for), never beyond `grant`.
pub(crate) fn open_receive_window(conn: &quinn::Connection, link: &Link, grant: u64) {
    if !link.auto {
        conn.set_receive_window(VarInt::from_u64(grant).unwrap_or(VarInt::MAX));
        return;
    }
    let initial = link.initial_receive_window().min(grant);
    conn.set_receive_window(VarInt::from_u64(initial).unwrap_or(VarInt::MAX));
    // The tuner sizes the whole connection credit, data and control together (see
    // `Link::initial_receive_window`).
    let tuner =
        hare_cc::autotune::RcvAutotune::new(initial, grant, u64::from(link.max_udp_payload()));
    tokio::spawn(autotune(conn.clone(), tuner));
}

/// The task of [`open_receive_window`]: until the connection closes, every
/// [`AUTOTUNE_TICK`], the bytes received so far and the smoothed RTT go to the tuner.
async fn autotune(conn: quinn::Connection, mut tuner: hare_cc::autotune::RcvAutotune) {
    let start = std::time::Instant::now();
    let closed = conn.closed();
    tokio::pin!(closed);
    loop {
        tokio::select! {
            _ = &mut closed => return,
            _ = tokio::time::sleep(AUTOTUNE_TICK) => {}
        }
        let s = conn.stats();
        if let Some(w) = tuner.on_progress(start.elapsed(), s.udp_rx.bytes, s.path.rtt) {
            conn.set_receive_window(VarInt::from_u64(w).unwrap_or(VarInt::MAX));
        }
        if tuner.window() >= tuner.cap() {
            // At the cap: nothing left to tune.
            return;
        }
    }
}

/// The transport of one connection: [`Link::transport`] plus the controller factory.
pub(crate) fn transport_with(
    link: &Link,
    factory: Arc<dyn quinn::congestion::ControllerFactory + Send + Sync>,
) -> TransportConfig {
    let mut t = link.transport();
    t.congestion_controller_factory(factory);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_scale_with_streams() {
        let l = Link {
            streams: 4,
            ..Link::fixed(1 << 20)
        };
        assert_eq!(l.connection_window(), (4 << 20) + CONTROL_ALLOWANCE);
        assert_eq!(l.initial_receive_window(), l.connection_window());
        assert!(l.validate().is_ok());
        assert_eq!(l.max_udp_payload(), 1452);
    }

    #[test]
    fn an_autotuned_window_starts_small_and_is_capped_whatever_the_streams() {
        let l = Link {
            streams: 8,
            ..Link::auto(DEFAULT_MAX_WINDOW)
        };
        assert_eq!(l.connection_window(), (128 << 20) + CONTROL_ALLOWANCE);
        assert_eq!(l.initial_receive_window(), (128 << 10) + CONTROL_ALLOWANCE);
        assert!(l.validate().is_ok());
    }

    #[test]
    fn window_arguments() {
        let auto = Link::from_args(None, 64 << 20, None).expect("valid");
        assert_eq!(auto, Link::auto(64 << 20));
        assert_eq!(
            Link::from_args(Some("auto"), 64 << 20, None).ok(),
            Some(auto)
        );
        let fixed = Link::from_args(Some("100m"), 64 << 20, Some(8952)).expect("valid");
        assert_eq!(
            fixed,
            Link {
                mtu: Some(8952),
                ..Link::fixed(100 << 20)
            }
        );
        assert!(Link::from_args(Some("lots"), 64 << 20, None).is_err());
        assert!(Link::from_args(None, 1000, None).is_err());
    }

    #[test]
    fn default_window_covers_one_gigabit_at_100ms() {
        let bdp = 1_000_000_000u64 / 8 / 10; // 12.5 MB
        assert!(DEFAULT_WINDOW >= 2 * bdp);
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(Link::fixed(1000).validate().is_err());
        let l = Link {
            mtu: Some(1100),
            ..Link::fixed(DEFAULT_WINDOW)
        };
        assert!(l.validate().is_err());
        let l = Link {
            mtu: Some(8952),
            ..Link::fixed(DEFAULT_WINDOW)
        };
        assert!(l.validate().is_ok());
        assert_eq!(l.max_udp_payload(), 8952);
        assert!(l.endpoint_config().is_ok());
    }

    #[test]
    fn liveness_is_checked() {
        assert!(Liveness::default().validate().is_ok());
        let s = Duration::from_secs;
        let bad = [
            (s(0), s(0), s(10)),
            (s(5), s(5), s(10)),
            (s(5), s(0), s(10)),
            (s(4000), s(1), s(10)),
            (s(10), s(2), s(0)),
            (s(10), s(2), s(3601)),
        ];
        for (idle_timeout, keep_alive, connect_timeout) in bad {
            let l = Liveness {
                idle_timeout,
                keep_alive,
                connect_timeout,
            };
            assert!(l.validate().is_err(), "{l:?}");
        }
    }
}
