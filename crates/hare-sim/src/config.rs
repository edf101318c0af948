//! What to simulate: [`SimConfig`] and its parts.

use std::path::PathBuf;
use std::time::Duration;

use hare_link::LinkConfig;

use crate::crypto::CryptoMode;
use crate::receiver_acks::ReceiverAcks;

/// The simulator's own defaults, in one place.
pub mod defaults {
    use std::time::Duration;

    /// UDP payload bytes per datagram (a 1500-byte Ethernet MTU minus 48 bytes of IPv6+UDP).
    pub const MTU: u16 = 1452;
    /// IPv4 (20) + UDP (8) header bytes added to each datagram on the link.
    pub const IP_OVERHEAD_V4: u32 = 28;
    /// IPv6 (40) + UDP (8) header bytes added to each datagram on the link.
    pub const IP_OVERHEAD_V6: u32 = 48;
    /// Datagrams per `poll_transmit` batch: quinn's GSO batch size (quinn 0.11 asks
    /// `quinn-proto` for at most 10 segments per transmit; see docs/PLATFORM.md, "Jumbo MTU
    /// and GSO").
    pub const GSO_SEGMENTS: usize = 10;
    /// nuttcp's default `-i1` reporting interval.
    pub const INTERVAL: Duration = Duration::from_secs(1);
    /// Fine reporting interval.
    pub const FINE_INTERVAL: Duration = Duration::from_millis(100);
    /// Virtual time without any progress (no byte delivered to the receiving application and
    /// no event at all) after which the run is declared stalled.
    pub const STALL_AFTER: Duration = Duration::from_secs(60);
}

/// Flow-control windows of the QUIC connection, the analogue of nuttcp's `-w` socket buffer.
///
/// All three are in bytes. `stream_receive` and `receive` are the receiver's advertised
/// per-stream and per-connection windows (`TransportConfig::stream_receive_window` and
/// `receive_window`, set on both endpoints); `send` is the sender's own limit on bytes written
/// but not yet acknowledged (`TransportConfig::send_window`), the closest analogue of
/// `SO_SNDBUF`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windows {
    /// Per-stream receive window in bytes (at most 2^62 - 1).
    pub stream_receive: u64,
    /// Connection receive window in bytes (at most 2^62 - 1).
    pub receive: u64,
    /// Send window in bytes.
    pub send: u64,
    /// Receive-window autotuning up to this many bytes (`-w auto`): the connection window
    /// starts at `receive` and grows each round trip to about twice what the receiving
    /// application read ([`hare_cc::autotune::RcvAutotune`], the code hare-recv runs).
    /// `None`: the windows stay as set.
    pub autotune: Option<u64>,
}

impl Windows {
    /// All three windows set to `bytes`: the plain mapping of a socket buffer size (`-w`)
    /// onto QUIC flow control (one stream, so the stream and connection windows coincide).
    pub fn uniform(bytes: u64) -> Self {
        Windows {
            stream_receive: bytes,
            receive: bytes,
            send: bytes,
            autotune: None,
        }
    }

    /// hare's default, `-w auto` up to `cap` bytes: a stream window and send window of `cap`
    /// (they never limit: the connection window does), and a connection window that starts
    /// at [`hare_cc::autotune::INITIAL_WINDOW`] and autotunes up to `cap`.
    pub fn auto(cap: u64) -> Self {
        Windows {
            stream_receive: cap,
            receive: hare_cc::autotune::INITIAL_WINDOW.min(cap),
            send: cap,
            autotune: Some(cap),
        }
    }

    /// The largest connection window the receiver may reach: the cap when autotuned.
    pub fn receive_limit(&self) -> u64 {
        self.autotune.unwrap_or(self.receive)
    }

    /// quinn-proto 0.11's defaults: 1.25 MB stream window, unlimited connection window,
    /// 10 MB send window (enough for about 100 Mbit/s at 100 ms).
    pub fn quinn_defaults() -> Self {
        Windows {
            stream_receive: 1_250_000,
            receive: (1u64 << 62) - 1,
            send: 10_000_000,
            autotune: None,
        }
    }
}

impl Default for Windows {
    /// [`Windows::quinn_defaults`].
    fn default() -> Self {
        Self::quinn_defaults()
    }
}

/// How much the client sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Exactly this many payload bytes (`nuttcp -n`); the run ends when the receiver has read
    /// them all and the stream's end.
    Bytes(u64),
    /// Write for this long from the run origin, then finish the stream (`nuttcp -T`); the run
    /// ends when the receiver has read everything written.
    Duration(Duration),
}

/// How the receiving application reads the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadMode {
    /// `read_chunk(max, false)`: chunks as they arrive, in any order (the default; it never
    /// hits quinn's reassembly gap limit).
    #[default]
    Unordered,
    /// In-order reads: out-of-order data waits in quinn's reassembly buffer, which allows at
    /// most 1024 gaps since quinn-proto 0.11.15 (the connection then dies with
    /// `INTERNAL_ERROR "too many gaps in stream buffer"`).
    Ordered,
}

/// ACK behaviour knobs that quinn-proto 0.11 exposes and that change what the sender's
/// controller sees.
///
/// By default a quinn receiver acknowledges every second ack-eliciting packet immediately
/// (RFC 9000 section 13.2.2), any out-of-order packet immediately, and otherwise within its
/// `max_ack_delay` of 25 ms. The first three fields below, when any is set, make the *sender*
/// (client) request other values from the receiver through the ACK frequency extension
/// (draft-ietf-quic-ack-frequency-04, `TransportConfig::ack_frequency_config`), which quinn
/// implements on both sides. The last two tune the sender's loss detection (RFC 9002
/// section 6.1).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AckSettings {
    /// Ack-eliciting packets the receiver may receive before it must acknowledge (quinn default
    /// 1: an ACK every second packet; 0: every packet).
    pub ack_eliciting_threshold: Option<u64>,
    /// The receiver's maximum ACK delay to request.
    pub max_ack_delay: Option<Duration>,
    /// Out-of-order distance that triggers an immediate ACK (quinn default with the extension:
    /// 2; without it every reordering triggers one).
    pub reordering_threshold: Option<u64>,
    /// Packet reordering threshold of loss detection (kPacketThreshold, default 3).
    pub packet_threshold: Option<u32>,
    /// Time reordering threshold of loss detection as a multiple of the RTT
    /// (kTimeThreshold, default 9/8).
    pub time_threshold: Option<f32>,
}

impl AckSettings {
    /// True when the ACK frequency extension is to be requested.
    pub fn uses_ack_frequency(&self) -> bool {
        self.ack_eliciting_threshold.is_some()
            || self.max_ack_delay.is_some()
            || self.reordering_threshold.is_some()
    }
}

/// Bounds that keep a run finite whatever happens on the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Declare the run stalled ([`crate::SimError::Stalled`]) after this much virtual time
    /// without a byte delivered to the receiving application (and after the first byte, or
    /// from the start for the handshake).
    pub stall_after: Duration,
    /// Hard cap on virtual time; `None` derives one from the workload (duration + 5 min, or
    /// 1 h for a byte count).
    pub max_virtual_time: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            stall_after: defaults::STALL_AFTER,
            max_virtual_time: None,
        }
    }
}

/// Everything a simulated run needs. Build one with [`SimConfig::new`] and adjust fields.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Run identifier written into the report header.
    pub run_id: String,
    /// Scenario file or name for the report header, if any.
    pub scenario: Option<String>,
    /// The data direction (client to server).
    pub forward: LinkConfig,
    /// The ACK direction (server to client).
    pub reverse: LinkConfig,
    /// Controller in hare-cc's grammar (`cubic@linux-2.6.20,initial_ssthresh=100`,
    /// `quinn-cubic`, ...), parsed with [`hare_cc::CcSpec`].
    pub controller: String,
    /// Maximum UDP payload per datagram: quinn's `initial_mtu`, `min_mtu` and
    /// `EndpointConfig::max_udp_payload_size`, with MTU discovery off, so every run uses
    /// exactly this size from the first packet (the thread's MTU was fixed too).
    pub mtu: u16,
    /// Bytes added to each datagram on the link: 28 for IPv4+UDP, 48 for IPv6+UDP.
    pub ip_overhead: u32,
    /// Flow-control windows.
    pub windows: Windows,
    /// How much to send.
    pub workload: Workload,
    /// How the receiver reads.
    pub read_mode: ReadMode,
    /// Seed of the run: quinn's endpoint RNGs, connection ids, TLS identity. Link loss and
    /// jitter draw from the link configs' own seeds; [`SimConfig::new`] derives those from
    /// this seed, so set them after changing it (or use [`SimConfig::with_seed`]).
    pub seed: u64,
    /// Report interval (nuttcp `-i`).
    pub interval: Duration,
    /// A second, finer report (`None` for none).
    pub fine_interval: Option<Duration>,
    /// Record a [`crate::TracePoint`] per ACK frame the sender processes.
    pub trace: bool,
    /// Write qlog files of both endpoints into this directory (`<run_id>-client.sqlog`,
    /// `<run_id>-server.sqlog`); needs the `qlog` feature.
    pub qlog_dir: Option<PathBuf>,
    /// ACK-behaviour knobs.
    pub ack: AckSettings,
    /// The receiver's ACK pattern: quinn's own (default) or the Linux 2.6 model
    /// ([`crate::receiver_acks`]; it needs the null cipher).
    pub receiver_acks: ReceiverAcks,
    /// The sender paces as quinn does (default `true`). `false`: the unpaced, ACK-clocked
    /// sender of virtual time, for hare-cc controllers only: quinn's pacer and window are
    /// switched off, the controller's own `tcp_cwnd_test` gates each datagram, and bursts leave
    /// at line rate like a kernel's without fq. The real binaries always keep quinn's pacer.
    pub paced: bool,
    /// The rate of the sender's own interface in bit/s of IP bytes, `None`: none (datagrams
    /// reach the bottleneck the moment quinn hands them over). With a rate, each datagram
    /// leaves the sender after the one before it has been serialised at this rate, as a
    /// kernel's NIC sends a burst: an unpaced sender's line-rate burst then reaches a slower
    /// bottleneck at the interface's rate, not all at once.
    pub sender_line_rate: Option<u64>,
    /// Datagrams per `poll_transmit` batch (GSO segments).
    pub gso_segments: usize,
    /// Initial RTT estimate before the first sample (quinn default 333 ms).
    pub initial_rtt: Option<Duration>,
    /// Bounds on the run.
    pub limits: Limits,
    /// Protection of 1-RTT packets: the keyed null cipher (default) or the real AEAD. Both
    /// give the same packet sizes and the same report (see the `crypto` module).
    pub crypto: CryptoMode,
}

impl SimConfig {
    /// A run with the given path and controller and the defaults for everything else:
    /// MTU 1452 over IPv4 (28 bytes of headers), quinn's default windows, 10 s of bulk data,
    /// unordered reads, seed 1, 1 s intervals plus a 100 ms report, no trace, no qlog.
    /// The link seeds are derived from the run seed (see [`SimConfig::with_seed`]).
    pub fn new(
        run_id: impl Into<String>,
        forward: LinkConfig,
        reverse: LinkConfig,
        controller: impl Into<String>,
    ) -> Self {
        SimConfig {
            run_id: run_id.into(),
            scenario: None,
            forward,
            reverse,
            controller: controller.into(),
            mtu: defaults::MTU,
            ip_overhead: defaults::IP_OVERHEAD_V4,
            windows: Windows::default(),
            workload: Workload::Duration(Duration::from_secs(10)),
            read_mode: ReadMode::Unordered,
            seed: 1,
            interval: defaults::INTERVAL,
            fine_interval: Some(defaults::FINE_INTERVAL),
            trace: false,
            qlog_dir: None,
            ack: AckSettings::default(),
            receiver_acks: ReceiverAcks::Quinn,
            paced: true,
            sender_line_rate: None,
            gso_segments: defaults::GSO_SEGMENTS,
            initial_rtt: None,
            limits: Limits::default(),
            crypto: CryptoMode::default(),
        }
        .with_seed(1)
    }

    /// Sets the run seed and derives the two link seeds from it (forward `2*seed`, reverse
    /// `2*seed + 1`), so one number changes every random stream of the run.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self.forward.seed = seed.wrapping_mul(2);
        self.reverse.seed = seed.wrapping_mul(2).wrapping_add(1);
        self
    }

    /// IP bytes of a full-sized datagram on the link.
    pub fn ip_packet_len(&self) -> u32 {
        u32::from(self.mtu) + self.ip_overhead
    }
}
