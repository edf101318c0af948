//! The serde schema of `testbed/scenarios/*.toml`.
//!
//! ```toml
//! name = "2007-cubic20-iss100-w60m"
//! description = "2.6.20.7 CUBIC, initial_ssthresh=100, nuttcp -w60m -T30"
//! controllers = ["cubic@linux-2.6.20,initial_ssthresh=100"]   # hare-cc grammar
//! mtu = 8952               # QUIC UDP payload bytes (9000-byte IPv6 packets)
//! seed = 1
//! repetitions = 1
//!
//! [path]
//! rtt = "80ms"             # split evenly over the two directions (or give each a `delay`)
//! [path.forward]           # the data direction: a hare-link LinkConfig
//! rate = "8.5g"
//! queue_packets = 2000
//! [path.reverse]           # the ACK direction (default: the forward rate, no queue limit)
//! rate = "10g"
//!
//! [windows]
//! socket_buffer = "60m"    # nuttcp -w, mapped to QUIC windows by the `era` rule; "auto":
//!                          # hare's autotuned default (hare-send/hare-recv -w auto)
//! era = "linux-2.6"        # tcp_adv_win_scale = 2
//!
//! [workload]
//! duration = "30s"         # or bytes = "1g"
//! read = "unordered"
//!
//! [ack]
//! receiver = "linux-2.6"   # or "quinn" (default): the receiver's ACK pattern
//!
//! [sender]
//! paced = false            # unpaced ACK-clocked sender (default true: quinn's pacer)
//! line_rate = "10g"        # the sender's interface rate (default: none)
//!
//! [replay]
//! runs = ["2007-cubic20-iss100-w60m"]   # ids in data/thread-runs.json
//!
//! crypto = "null"          # top level, before any table: "null" (default) or "real"
//! ```
//!
//! A scenario of competing flows gives `[[flows]]` tables instead of `controllers` (and
//! no `[replay]`); they share `[path]`'s forward link and queue, and `[workload] duration`
//! is the run's length (see docs/FLOWS.md):
//!
//! ```toml
//! [[flows]]
//! controller = "cubic@linux-6"   # any hare-cc spec; `hare-lab compete` also "tcp:cubic"
//! start = "0s"
//! rtt = "40ms"                   # optional, at least the path's (default: the path's)
//! bytes = "200MB"                # or duration = "30s"; default: until the run ends
//! count = 1                      # optional: this many identical flows
//! ```

use hare_link::{BitRate, ByteSize, LinkConfig, TimeSpan};
use serde::{Deserialize, Serialize};

/// A whole scenario file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// `"sim"` or absent: files of other kinds in the same directory belong to other tools.
    #[serde(default)]
    pub kind: Option<String>,
    /// Short unique name (file stem by convention); names output files.
    pub name: String,
    /// What the scenario reproduces and why its numbers are what they are.
    #[serde(default)]
    pub description: String,
    /// Controllers to run, hare-cc grammar (`cubic@linux-2.6.20,initial_ssthresh=100`);
    /// absent in a scenario of `[[flows]]`.
    #[serde(default)]
    pub controllers: Vec<String>,
    /// QUIC maximum UDP payload in bytes (quinn's initial and maximum MTU).
    #[serde(default = "default_mtu")]
    pub mtu: u16,
    /// IP version of the packets, for the header bytes the link counts (4: 28, 6: 48).
    #[serde(default = "default_ip_version")]
    pub ip_version: u8,
    /// Seed of the run; repetition `i` uses `seed + i`.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Runs per controller.
    #[serde(default = "default_repetitions")]
    pub repetitions: u32,
    /// The path.
    pub path: PathSpec,
    /// Flow-control windows (nuttcp `-w` analogue).
    #[serde(default)]
    pub windows: WindowSpec,
    /// What to transfer and how to read it.
    pub workload: WorkloadSpec,
    /// The receiver's acknowledgement policy.
    #[serde(default)]
    pub ack: AckSpec,
    /// How the sender sends.
    #[serde(default)]
    pub sender: SenderSpec,
    /// Thread runs this scenario replays.
    #[serde(default)]
    pub replay: Option<ReplaySpec>,
    /// 1-RTT packet protection in the simulator: `"null"` (default: a keyed null cipher with
    /// AES-GCM's tag and header-protection sizes, same packets, same report, less CPU) or
    /// `"real"` (AES-128-GCM, as the binaries always use).
    #[serde(default)]
    pub crypto: hare_sim::CryptoMode,
    /// Competing flows on the one path (none: one flow of each controller, as always).
    #[serde(default)]
    pub flows: Vec<FlowSpec>,
}

/// One `[[flows]]` table: `count` identical flows sharing the scenario's path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// A hare-cc spec (`cubic@linux-6`), or `tcp:ALG` for a kernel TCP flow (emulator only).
    pub controller: String,
    /// When the flow starts, from the run's start.
    #[serde(default)]
    pub start: Option<TimeSpan>,
    /// The flow's base RTT, at least the path's: the difference is added after the shared
    /// bottleneck, on the flow's own access (default: the path's RTT).
    #[serde(default)]
    pub rtt: Option<TimeSpan>,
    /// Bytes to send (default: send until the run ends).
    #[serde(default)]
    pub bytes: Option<ByteSize>,
    /// Seconds to send (default: until the run ends).
    #[serde(default)]
    pub duration: Option<TimeSpan>,
    /// This many identical flows (default 1).
    #[serde(default)]
    pub count: Option<u32>,
}

fn default_mtu() -> u16 {
    1452
}
fn default_ip_version() -> u8 {
    6
}
fn default_seed() -> u64 {
    1
}
fn default_repetitions() -> u32 {
    1
}

/// The two directions of the path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    /// Round-trip propagation delay, split evenly over the directions (forward takes the odd
    /// nanosecond). Give either this or a `delay` in each direction.
    #[serde(default)]
    pub rtt: Option<TimeSpan>,
    /// Sender to receiver: where the bottleneck is.
    pub forward: LinkConfig,
    /// Receiver to sender (ACKs). Default: the forward rate, unlimited queue, no loss.
    #[serde(default)]
    pub reverse: Option<LinkConfig>,
}

/// Which kernel's socket-buffer rule maps `socket_buffer` onto windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowEra {
    /// Linux 2.6.x - 3.x: `SO_RCVBUF` is doubled and `tcp_adv_win_scale = 2` advertises 3/4
    /// of it: window = 1.5 x `-w`.
    #[default]
    #[serde(rename = "linux-2.6")]
    Linux26,
    /// Linux since 4.x: `tcp_adv_win_scale = 1` (3.4, b49960a05e32) advertises half of the
    /// doubled buffer: window = `-w`.
    #[serde(rename = "linux-modern")]
    LinuxModern,
    /// Use `socket_buffer` as the QUIC window unchanged.
    Literal,
}

/// Flow-control windows. Either `socket_buffer` (mapped by `era`), or explicit sizes, or
/// nothing (quinn's defaults, about 100 Mbit/s at 100 ms: rarely what a replay wants).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowSpec {
    /// nuttcp's `-w`: the socket buffer asked for on both ends, or `"auto"`: hare's default,
    /// windows that autotune up to `max_window`.
    #[serde(default)]
    pub socket_buffer: Option<SocketBuffer>,
    /// Cap of the autotuned window (`--max-window`; default
    /// [`hare_cc::autotune::DEFAULT_MAX_WINDOW`]); only with `socket_buffer = "auto"`.
    #[serde(default)]
    pub max_window: Option<ByteSize>,
    /// How `socket_buffer` maps onto QUIC windows.
    #[serde(default)]
    pub era: WindowEra,
    /// Explicit stream receive window (overrides the mapping).
    #[serde(default)]
    pub stream: Option<ByteSize>,
    /// Explicit connection receive window (overrides the mapping).
    #[serde(default)]
    pub connection: Option<ByteSize>,
    /// Explicit send window (overrides the mapping).
    #[serde(default)]
    pub send: Option<ByteSize>,
    /// Why these sizes (autotuning runs say which tcp_rmem / tcp_wmem limit they stand for).
    #[serde(default)]
    pub note: Option<String>,
}

/// `socket_buffer`: a size, or `"auto"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketBuffer {
    /// hare's default (`-w auto`): receive windows that autotune.
    Auto,
    /// A fixed buffer size, mapped by the `era` rule.
    Size(ByteSize),
}

impl Serialize for SocketBuffer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SocketBuffer::Auto => s.serialize_str("auto"),
            SocketBuffer::Size(b) => b.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for SocketBuffer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SocketBufferVisitor)
    }
}

struct SocketBufferVisitor;

impl<'de> serde::de::Visitor<'de> for SocketBufferVisitor {
    type Value = SocketBuffer;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"auto\" or a size such as \"60m\"")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SocketBuffer, E> {
        if v == "auto" {
            return Ok(SocketBuffer::Auto);
        }
        v.parse::<ByteSize>()
            .map(SocketBuffer::Size)
            .map_err(|e| E::custom(format!("{v:?}: {e}")))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<SocketBuffer, E> {
        Ok(SocketBuffer::Size(ByteSize(v)))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<SocketBuffer, E> {
        u64::try_from(v)
            .map(|v| SocketBuffer::Size(ByteSize(v)))
            .map_err(|_| E::custom(format!("{v}: a size cannot be negative")))
    }
}

/// How the receiver reads the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadSpec {
    /// `read_chunk(max, false)`: out-of-order chunks as they arrive (no gap limit).
    #[default]
    Unordered,
    /// In-order reads (quinn's 1024-gap reassembly limit applies).
    Ordered,
}

/// What to transfer: `bytes` (nuttcp `-n`) or `duration` (nuttcp `-T`), exactly one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Bytes to transfer.
    #[serde(default)]
    pub bytes: Option<ByteSize>,
    /// Seconds to send for.
    #[serde(default)]
    pub duration: Option<TimeSpan>,
    /// Stop a `bytes` run after this long even if it has not finished (default 120 s).
    #[serde(default)]
    pub time_limit: Option<TimeSpan>,
    /// Read mode.
    #[serde(default)]
    pub read: ReadSpec,
}

/// ACK-behaviour knobs, as hare-sim's `AckSettings` (all optional; quinn's defaults: an ACK
/// every second ack-eliciting packet, at most 25 ms of ACK delay, packet threshold 3, time
/// threshold 9/8). Setting any of the first three makes the sender request them through the
/// ACK frequency extension.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AckSpec {
    /// Ack-eliciting packets the receiver may hold before it must ACK (1: every second packet,
    /// like a delayed-ACK TCP receiver; 0: every packet).
    #[serde(default)]
    pub ack_eliciting_threshold: Option<u64>,
    /// The receiver's maximum ACK delay.
    #[serde(default)]
    pub max_ack_delay: Option<TimeSpan>,
    /// Out-of-order distance that triggers an immediate ACK.
    #[serde(default)]
    pub reordering_threshold: Option<u64>,
    /// Loss detection's packet threshold (RFC 9002 kPacketThreshold).
    #[serde(default)]
    pub packet_threshold: Option<u32>,
    /// Loss detection's time threshold as a multiple of the RTT (kTimeThreshold).
    #[serde(default)]
    pub time_threshold: Option<f32>,
    /// The receiver's ACK pattern: `"quinn"` (default) or `"linux-2.6"` (quick ACKs while the
    /// receive window opens, then every second segment; hare-sim's `receiver_acks` model).
    #[serde(default)]
    pub receiver: ReceiverSpec,
}

/// The receiver ACK patterns of [`AckSpec::receiver`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ReceiverSpec {
    /// quinn's own ACK policy.
    #[default]
    #[serde(rename = "quinn")]
    Quinn,
    /// The Linux 2.6 receiver model.
    #[serde(rename = "linux-2.6")]
    Linux26,
}

/// The sender's transmission (virtual time only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SenderSpec {
    /// `true` (default): quinn's pacer, as every real hare binary. `false`: the simulator's
    /// unpaced, ACK-clocked sender (hare-cc controllers only), like a kernel without fq.
    #[serde(default = "default_paced")]
    pub paced: bool,
    /// The rate of the sender's interface (`"10g"`): a burst leaves it one datagram after
    /// another at this rate before the path's bottleneck, as a NIC serialises it. Absent: the
    /// datagrams reach the bottleneck at once.
    #[serde(default)]
    pub line_rate: Option<BitRate>,
}

impl Default for SenderSpec {
    fn default() -> Self {
        SenderSpec {
            paced: true,
            line_rate: None,
        }
    }
}

fn default_paced() -> bool {
    true
}

/// The thread runs a scenario replays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaySpec {
    /// Run ids in `data/thread-runs.json` / `data/nussbaum-2011-runs.json`, matched in order
    /// to (controller, repetition), controller-major: one id per run of the scenario.
    pub runs: Vec<String>,
    /// Where the scenario's path, window and controller choices come from and what they
    /// leave out.
    #[serde(default)]
    pub note: Option<String>,
    /// With an unpaced sender (`[sender] paced = false`): run each replay a second time with
    /// quinn's pacer, as a named extra row (id `<run>-quinn-paced`): what a QUIC sender would
    /// see on the thread's path.
    #[serde(default)]
    pub quinn_paced_row: bool,
}
