//! Windows, MTU and controller: the QUIC transport settings both ends derive from the same few
//! options (`-w`, `--mtu`, `--cc`).

use std::sync::Arc;
use std::time::Duration;

use quinn::{EndpointConfig, MtuDiscoveryConfig, TransportConfig, VarInt};

use crate::error::{Result, TransferError};

/// Default `-w`: 32 MiB, about 2.5 x the BDP of 1 Gbit/s x 100 ms (12.5 MB), so that the
/// default never limits such a path even while recovering from a loss (docs/PLATFORM.md: quinn's
/// own defaults cap one stream near 100 Mbit/s at 100 ms).
pub const DEFAULT_WINDOW: u64 = 32 << 20;
/// Connection credit and send buffer kept beyond the data streams' windows for the control
/// stream (see [`Link::connection_window`]).
pub const CONTROL_ALLOWANCE: u64 = 1 << 20;
/// Smallest `-w` accepted.
pub const MIN_WINDOW: u64 = 64 << 10;
/// Smallest `--mtu` QUIC allows (RFC 9000 section 14: 1200-byte datagrams).
pub const MIN_MTU: u16 = 1200;
/// quinn's default MTU-discovery upper bound (1500 minus IPv6 and UDP headers).
pub const DEFAULT_MTU_BOUND: u16 = 1452;
/// Idle timeout of hare connections (the receiver's; a sender's shorter `--idle-timeout`
/// wins, QUIC takes the smaller of the two ends' `max_idle_timeout`, RFC 9000 section 10.1).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default `--idle-timeout` of the sender: a dead receiver or path ends the run this soon.
pub const DEFAULT_SEND_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `--keep-alive` of the sender: a PING this often keeps ACKs coming while no data
/// flows (a file waiting for its verdict), so silence means the path or the peer is gone.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(2);

/// How soon a silent peer is given up (`--idle-timeout`) and how often a quiet connection
/// is probed (`--keep-alive`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Liveness {
    /// QUIC `max_idle_timeout` this end offers.
    pub idle_timeout: Duration,
    /// QUIC keep-alive (PING) interval.
    pub keep_alive: Duration,
}

impl Default for Liveness {
    fn default() -> Self {
        Self {
            idle_timeout: DEFAULT_SEND_IDLE_TIMEOUT,
            keep_alive: DEFAULT_KEEP_ALIVE,
        }
    }
}

impl Liveness {
    /// Check the settings: an idle timeout of 1 s to 1 h, a keep-alive shorter than it.
    pub fn validate(&self) -> Result<()> {
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
        Ok(())
    }

    /// Put these settings into `t`.
    pub fn apply(&self, t: &mut TransportConfig) {
        t.max_idle_timeout(self.idle_timeout.try_into().ok())
            .keep_alive_interval(Some(self.keep_alive));
    }
}

/// The flow-control and datagram settings of one end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// `-w`: the per-stream receive window and the unit of the connection and send windows.
    pub window: u64,
    /// Parallel data streams (the connection and send windows are `window x streams`, like
    /// nuttcp's `-w` per socket times `-P` sockets, plus [`CONTROL_ALLOWANCE`]).
    pub streams: u16,
    /// `--mtu`: fixed UDP payload size (initial MTU = max UDP payload = discovery bound);
    /// `None` keeps quinn's discovery from 1200 up to 1452.
    pub mtu: Option<u16>,
}

impl Link {
    /// Connection receive window and send window in bytes: `window x streams` for the data
    /// plus [`CONTROL_ALLOWANCE`]. The data streams are each held to `window` by stream flow
    /// control, so they can never use up the connection's credit or send buffer, and a control
    /// message (a progress request, a file digest) never waits behind a window of data.
    pub fn connection_window(&self) -> u64 {
        self.window
            .saturating_mul(u64::from(self.streams.max(1)))
            .saturating_add(CONTROL_ALLOWANCE)
    }

    /// Check the settings.
    pub fn validate(&self) -> Result<()> {
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
    pub fn max_udp_payload(&self) -> u16 {
        self.mtu.unwrap_or(DEFAULT_MTU_BOUND).max(DEFAULT_MTU_BOUND)
    }

    /// Endpoint settings: the largest UDP payload accepted.
    pub fn endpoint_config(&self) -> Result<EndpointConfig> {
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
        let cw = VarInt::from_u64(self.connection_window()).unwrap_or(VarInt::MAX);
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

/// The transport of one connection: [`Link::transport`] plus the controller factory.
pub fn transport_with(
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
            window: 1 << 20,
            streams: 4,
            mtu: None,
        };
        assert_eq!(l.connection_window(), (4 << 20) + CONTROL_ALLOWANCE);
        assert!(l.validate().is_ok());
        assert_eq!(l.max_udp_payload(), 1452);
    }

    #[test]
    fn default_window_covers_one_gigabit_at_100ms() {
        let bdp = 1_000_000_000u64 / 8 / 10; // 12.5 MB
        assert!(DEFAULT_WINDOW >= 2 * bdp);
    }

    #[test]
    fn bad_settings_are_refused() {
        let l = Link {
            window: 1000,
            streams: 1,
            mtu: None,
        };
        assert!(l.validate().is_err());
        let l = Link {
            window: DEFAULT_WINDOW,
            streams: 1,
            mtu: Some(1100),
        };
        assert!(l.validate().is_err());
        let l = Link {
            window: DEFAULT_WINDOW,
            streams: 1,
            mtu: Some(8952),
        };
        assert!(l.validate().is_ok());
        assert_eq!(l.max_udp_payload(), 8952);
        assert!(l.endpoint_config().is_ok());
    }

    #[test]
    fn liveness_is_checked() {
        assert!(Liveness::default().validate().is_ok());
        let s = Duration::from_secs;
        let bad = [(s(0), s(0)), (s(5), s(5)), (s(5), s(0)), (s(4000), s(1))];
        for (idle_timeout, keep_alive) in bad {
            let l = Liveness {
                idle_timeout,
                keep_alive,
            };
            assert!(l.validate().is_err(), "{l:?}");
        }
    }
}
