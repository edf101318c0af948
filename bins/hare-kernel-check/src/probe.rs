//! One `tcp_probe` record (the sender's socket as the tracepoint saw it, before the segment
//! was processed) and the trace file: JSON lines, a header object then one array of integers
//! per record in the header's `fields` order.
//!
//! Format `hare-kernel-check-trace`, version 1:
//! - line 1: `{"format":"hare-kernel-check-trace","version":1,"kernel":..,"hz":..,
//!   "hz_source":..,"flow":..,"fields":[..]}`;
//! - then one line per record: a JSON array of unsigned integers, one per field name.
//!
//! A reader refuses another format, another version or other fields (naming what it found).

use std::io::{BufRead, Write};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// The trace format's name in the header.
pub const FORMAT: &str = "hare-kernel-check-trace";
/// The trace format's version.
pub const VERSION: u32 = 1;

macro_rules! probe_record {
    ($($field:ident: $ty:ty, $doc:literal;)*) => {
        /// One `tcp_probe` hit on the sender's socket (fields named as the kernel's).
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct Probe {
            $(#[doc = $doc] pub $field: $ty,)*
        }

        /// The record's fields in file and BPF order.
        pub const FIELDS: &[&str] = &[$(stringify!($field)),*];

        impl Probe {
            /// The record as the file's integer array.
            pub fn to_values(&self) -> Vec<u64> {
                vec![$(u64::from(self.$field)),*]
            }

            /// A record from the BPF program's bytes: the fields in order, little-endian,
            /// each of its own width (`struct probe` in `bpf/tcp_probe.bpf.c`).
            pub fn from_raw(raw: &[u8]) -> Result<Probe> {
                let mut rest = raw;
                Ok(Probe {
                    $($field: <$ty>::from_le_bytes(take(&mut rest, raw.len())?),)*
                })
            }

            /// A record from the file's integer array (as many values as [`FIELDS`]).
            pub fn from_values(v: &[u64]) -> Result<Probe> {
                if v.len() != FIELDS.len() {
                    bail!("{} values where {} fields are expected", v.len(), FIELDS.len());
                }
                let mut it = v.iter();
                Ok(Probe {
                    $($field: {
                        let x = *it.next().unwrap_or(&0);
                        <$ty>::try_from(x).with_context(|| format!("{} = {x} out of range", stringify!($field)))?
                    },)*
                })
            }
        }
    };
}

probe_record! {
    ktime_ns: u64, "`bpf_ktime_get_ns()` at the probe (`CLOCK_MONOTONIC` ns).";
    jiffies: u64, "`jiffies_64` at the probe.";
    tcp_mstamp: u64, "`tp->tcp_mstamp` (us): its last refresh, before this segment's.";
    rack_mstamp: u64, "`tp->rack.mstamp`: send time of the newest packet RACK saw acknowledged.";
    pacing_rate: u64, "`sk->sk_pacing_rate` (bytes/s).";
    sk: u64, "The socket (an index in a file: the capture numbers sockets from 0).";
    snd_cwnd: u32, "`tp->snd_cwnd`.";
    snd_ssthresh: u32, "`tp->snd_ssthresh`.";
    snd_cwnd_cnt: u32, "`tp->snd_cwnd_cnt`.";
    snd_cwnd_clamp: u32, "`tp->snd_cwnd_clamp`.";
    prior_cwnd: u32, "`tp->prior_cwnd`.";
    delivered: u32, "`tp->delivered`.";
    snd_una: u32, "`tp->snd_una`.";
    snd_nxt: u32, "`tp->snd_nxt`.";
    high_seq: u32, "`tp->high_seq`.";
    undo_marker: u32, "`tp->undo_marker`.";
    srtt_us: u32, "`tp->srtt_us` (us << 3).";
    mss_cache: u32, "`tp->mss_cache`.";
    packets_out: u32, "`tp->packets_out`.";
    sacked_out: u32, "`tp->sacked_out`.";
    lost_out: u32, "`tp->lost_out`.";
    retrans_out: u32, "`tp->retrans_out`.";
    max_packets_out: u32, "`tp->max_packets_out`.";
    rack_rtt_us: u32, "`tp->rack.rtt_us`.";
    cnt: u32, "CUBIC `cnt`.";
    last_max_cwnd: u32, "CUBIC `last_max_cwnd`.";
    last_cwnd: u32, "CUBIC `last_cwnd`.";
    last_time: u32, "CUBIC `last_time` (jiffies).";
    bic_origin_point: u32, "CUBIC `bic_origin_point`.";
    bic_k: u32, "CUBIC `bic_K`.";
    delay_min: u32, "CUBIC `delay_min` (us).";
    epoch_start: u32, "CUBIC `epoch_start` (jiffies).";
    ack_cnt: u32, "CUBIC `ack_cnt`.";
    tcp_cwnd: u32, "CUBIC `tcp_cwnd`.";
    round_start: u32, "HyStart `round_start` (us).";
    end_seq: u32, "HyStart `end_seq`.";
    last_ack: u32, "HyStart `last_ack` (us).";
    curr_rtt: u32, "HyStart `curr_rtt` (us).";
    pacing_status: u32, "`sk->sk_pacing_status`.";
    gso_max_size: u32, "`sk->sk_gso_max_size`.";
    sport: u16, "Local port.";
    dport: u16, "Remote port.";
    ca_state: u8, "`icsk_ca_state`.";
    is_cwnd_limited: u8, "`tp->is_cwnd_limited`.";
    sample_cnt: u8, "HyStart `sample_cnt`.";
    found: u8, "HyStart `found`.";
}

/// The next `N` bytes of a raw record of `len` bytes.
fn take<const N: usize>(rest: &mut &[u8], len: usize) -> Result<[u8; N]> {
    let (head, tail) = rest
        .split_first_chunk::<N>()
        .with_context(|| format!("a record of {len} bytes is too short"))?;
    *rest = tail;
    Ok(*head)
}

/// What the trace's header says besides the format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceInfo {
    /// `uname -r` of the kernel recorded.
    pub kernel: String,
    /// The kernel's `HZ`.
    pub hz: u32,
    /// Where `hz` was read (`CONFIG_HZ` in a config file, or measured).
    pub hz_source: String,
    /// The flow: the command's path and options, or the watched port.
    pub flow: String,
}

#[derive(Serialize, Deserialize)]
struct Header {
    format: String,
    version: u32,
    #[serde(flatten)]
    info: TraceInfo,
    fields: Vec<String>,
}

/// A recorded flow: its header and its records in capture order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// The header.
    pub info: TraceInfo,
    /// The records.
    pub probes: Vec<Probe>,
}

impl Trace {
    /// Write the trace (header line, then one line per record).
    pub fn write(&self, mut w: impl Write) -> Result<()> {
        let header = Header {
            format: FORMAT.into(),
            version: VERSION,
            info: self.info.clone(),
            fields: FIELDS.iter().map(|f| (*f).to_owned()).collect(),
        };
        serde_json::to_writer(&mut w, &header)?;
        writeln!(w)?;
        for p in &self.probes {
            serde_json::to_writer(&mut w, &p.to_values())?;
            writeln!(w)?;
        }
        w.flush()?;
        Ok(())
    }

    /// Read a trace written by [`Trace::write`].
    pub fn read(r: impl BufRead) -> Result<Trace> {
        let mut lines = r.lines();
        let first = lines.next().context("empty file: no trace header")??;
        let header: Header = serde_json::from_str(&first).context("line 1: not a trace header")?;
        if header.format != FORMAT || header.version != VERSION {
            bail!(
                "line 1: format {:?} version {}, expected {FORMAT:?} version {VERSION}",
                header.format,
                header.version
            );
        }
        if header.fields != FIELDS {
            bail!(
                "line 1: the fields are {:?}, expected {FIELDS:?}",
                header.fields
            );
        }
        let mut probes = Vec::new();
        for (i, line) in lines.enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let values: Vec<u64> = serde_json::from_str(&line)
                .with_context(|| format!("line {}: not an array of integers", i + 2))?;
            probes.push(Probe::from_values(&values).with_context(|| format!("line {}", i + 2))?);
        }
        Ok(Trace {
            info: header.info,
            probes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_reads_back_as_written() {
        let p = Probe {
            snd_cwnd: 10,
            snd_ssthresh: 0x7fff_ffff,
            ca_state: 4,
            ktime_ns: 1 << 40,
            ..Probe::default()
        };
        let t = Trace {
            info: TraceInfo {
                kernel: "6.18".into(),
                hz: 250,
                hz_source: "test".into(),
                flow: "none".into(),
            },
            probes: vec![p, p],
        };
        let mut buf = Vec::new();
        t.write(&mut buf).unwrap();
        assert_eq!(Trace::read(&buf[..]).unwrap(), t);
        let bad = String::from_utf8(buf)
            .unwrap()
            .replace("\"version\":1", "\"version\":9");
        let err = Trace::read(bad.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("version 9"), "{err}");
    }
}
