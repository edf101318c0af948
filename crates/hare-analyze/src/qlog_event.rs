//! The parts of a qlog event the analysis reads.
//!
//! Names and fields follow both layouts in use:
//! - qlog 0.3 (draft-ietf-quic-qlog-main-schema-03..05; the `qlog` crate up to 0.15, quinn,
//!   quiche up to 0.24, neqo): `transport:packet_sent`, `recovery:metrics_updated`,
//!   `recovery:packet_lost`, `recovery:congestion_state_updated`;
//! - the newer drafts (main-schema -10 and later, `file_schema`; the `qlog` crate 0.16+,
//!   quiche 0.26+): `quic:packet_sent`, `quic:recovery_metrics_updated`, `quic:packet_lost`,
//!   `quic:congestion_state_updated`;
//! - picoquic's draft-00 arrays (`[time, category, event, data]`, times in microseconds,
//!   `cwnd`, `header.packet_size`, stream frames with `id`).
//!
//! Only the event name is read for every event; `data` is parsed only for the kinds below,
//! with [`crate::lenient`] types, so unknown events are skipped without any type check and a
//! known event with an odd field loses only that field.

use serde::Deserialize;

use crate::lenient::{List, Num, Obj, Text};

/// The event kinds the analysis uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    PacketSent,
    PacketReceived,
    PacketLost,
    MetricsUpdated,
    CongestionState,
    Other,
}

impl Kind {
    /// The kind of an event name (`category:event`, `category`/`event` joined, any case).
    pub fn of(name: &str) -> Kind {
        let short = name.rsplit(':').next().unwrap_or(name);
        let short = short.rsplit('.').next().unwrap_or(short);
        // No allocation per event: names compared without case.
        let is = |n: &str| short.eq_ignore_ascii_case(n);
        if is("packet_sent") {
            Kind::PacketSent
        } else if is("packet_received") {
            Kind::PacketReceived
        } else if is("packet_lost") {
            Kind::PacketLost
        } else if is("metrics_updated") || is("recovery_metrics_updated") {
            Kind::MetricsUpdated
        } else if is("congestion_state_updated") {
            Kind::CongestionState
        } else {
            Kind::Other
        }
    }
}

/// `data.header` of packet events.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Header {
    pub packet_type: Text,
    pub packet_number: Num,
    /// qlog 0.3 packet length (quinn).
    pub length: Num,
    /// picoquic.
    pub packet_size: Num,
    pub dcid: Text,
}

/// `data.raw` of packet events.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Raw {
    pub length: Num,
    /// Newer layout: a STREAM frame's data length.
    pub payload_length: Num,
}

/// One frame of a packet event.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Frame {
    pub frame_type: Text,
    pub stream_id: Num,
    /// picoquic's name for the stream id.
    pub id: Num,
    pub offset: Num,
    pub length: Num,
    /// Ranges `[first, last]` (or `[n]`) of acknowledged packet numbers.
    pub acked_ranges: List<List<Num>>,
    /// ECN-CE count of an ACK_ECN frame.
    pub ce: Num,
    /// Newer layout: `raw.payload_length` is a STREAM frame's length.
    pub raw: Obj<Raw>,
}

impl Frame {
    /// `(stream id, offset, length)` of a STREAM frame.
    pub fn stream(&self) -> Option<(u64, u64, u64)> {
        let ty = self.frame_type.as_deref()?;
        if !ty.eq_ignore_ascii_case("stream") {
            return None;
        }
        let id = self.stream_id.u64().or(self.id.u64())?;
        let len = self
            .length
            .u64()
            .or_else(|| self.raw.0.as_ref().and_then(|r| r.payload_length.u64()))?;
        Some((id, self.offset.u64().unwrap_or(0), len))
    }

    /// True for ACK frames (ACK_ECN, and picoquic's multipath `path_ack`).
    pub fn is_ack(&self) -> bool {
        self.frame_type.as_deref().is_some_and(|t| {
            matches!(
                t.to_ascii_lowercase().as_str(),
                "ack" | "ack_ecn" | "path_ack"
            )
        })
    }

    /// The acknowledged packet-number ranges, inclusive.
    pub fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.acked_ranges.0.iter().filter_map(|r| {
            let a = r.0.first()?.u64()?;
            let b = r.0.get(1).and_then(|n| n.u64()).unwrap_or(a);
            Some((a.min(b), a.max(b)))
        })
    }
}

/// `data` of packet_sent / packet_received / packet_lost.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PacketData {
    pub header: Obj<Header>,
    pub raw: Obj<Raw>,
    /// picoquic (and draft-01) put the type beside the header.
    pub packet_type: Text,
    pub frames: Option<List<Obj<Frame>>>,
    /// packet_lost: why the packet was taken as lost (`time_threshold`,
    /// `reordering_threshold`, `pto_expired`).
    pub trigger: Text,
}

impl PacketData {
    fn header(&self) -> Option<&Header> {
        self.header.0.as_ref()
    }

    /// The packet type as written.
    pub fn packet_type(&self) -> Option<&str> {
        self.header()
            .and_then(|h| h.packet_type.as_deref())
            .or(self.packet_type.as_deref())
    }

    /// True for a 1-RTT (application data) packet.
    pub fn is_one_rtt(&self) -> bool {
        self.packet_type().is_some_and(|t| {
            matches!(
                t.to_ascii_lowercase().as_str(),
                "1rtt" | "onertt" | "one_rtt" | "1-rtt"
            )
        })
    }

    /// True for a 0-RTT packet (application data too).
    pub fn is_zero_rtt(&self) -> bool {
        self.packet_type()
            .is_some_and(|t| t.eq_ignore_ascii_case("0rtt") || t.eq_ignore_ascii_case("zerortt"))
    }

    /// Packet length in bytes, when logged.
    pub fn length(&self) -> Option<u64> {
        let h = self.header();
        self.raw
            .0
            .as_ref()
            .and_then(|r| r.length.u64())
            .or(h.and_then(|h| h.length.u64()))
            .or(h.and_then(|h| h.packet_size.u64()))
    }

    /// Packet number, when logged.
    pub fn packet_number(&self) -> Option<u64> {
        self.header().and_then(|h| h.packet_number.u64())
    }

    /// True for a packet_lost whose trigger is a PTO. RFC 9002 section 6.2: a PTO sends
    /// probes and declares nothing lost. neqo 0.27 logs every packet whose data it queues
    /// again on a PTO as `packet_lost` with this trigger, does not count it in its lost
    /// packets, does not reduce its window for it, and the packet may still be acknowledged.
    pub fn is_pto_marked(&self) -> bool {
        self.trigger
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("pto_expired"))
    }

    /// Destination connection id length in bytes, when logged (hex text).
    pub fn dcid_len(&self) -> Option<u64> {
        self.header()
            .and_then(|h| h.dcid.as_deref())
            .map(|d| d.len() as u64 / 2)
    }
}

/// `data` of metrics_updated / recovery_metrics_updated.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct MetricsData {
    pub congestion_window: Num,
    /// picoquic.
    pub cwnd: Num,
    pub ssthresh: Num,
    pub bytes_in_flight: Num,
    pub smoothed_rtt: Num,
    pub min_rtt: Num,
    pub latest_rtt: Num,
}

/// `data` of congestion_state_updated.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct StateData {
    pub new: Text,
    pub new_state: Text,
}

impl StateData {
    /// The new state, lower case.
    pub fn new_state(&self) -> Option<String> {
        self.new
            .as_deref()
            .or(self.new_state.as_deref())
            .map(str::to_ascii_lowercase)
    }
}

/// What a congestion state name means for slow start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StateClass {
    /// Slow start / BBR startup.
    SlowStart,
    /// Loss or congestion recovery: a congestion signal.
    Recovery,
    /// Congestion avoidance or any named post-slow-start phase (BBR drain, probe_bw ...).
    Avoidance,
    /// Application limited, or a state the analysis does not know (picoquic's numbers).
    Unknown,
}

/// The class of a state name (RFC 9002 appendix B names, quiche's, neqo's, BBR's).
pub(crate) fn classify_state(s: &str) -> StateClass {
    let s = s.replace(['-', ' '], "_");
    match s.as_str() {
        "slow_start" | "slowstart" | "startup" => StateClass::SlowStart,
        "recovery" | "fast_recovery" | "loss_recovery" | "persistent_congestion" => {
            StateClass::Recovery
        }
        "congestion_avoidance"
        | "drain"
        | "probe_bw"
        | "probe_rtt"
        | "conservative_slow_start"
        | "css"
        | "probe_bw_down"
        | "probe_bw_cruise"
        | "probe_bw_refill"
        | "probe_bw_up" => StateClass::Avoidance,
        _ => StateClass::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_both_layouts() {
        assert_eq!(Kind::of("transport:packet_sent"), Kind::PacketSent);
        assert_eq!(Kind::of("quic:packet_sent"), Kind::PacketSent);
        assert_eq!(
            Kind::of("quic:recovery_metrics_updated"),
            Kind::MetricsUpdated
        );
        assert_eq!(Kind::of("recovery:metrics_updated"), Kind::MetricsUpdated);
        assert_eq!(Kind::of("RECOVERY:PACKET_LOST"), Kind::PacketLost);
        assert_eq!(
            Kind::of("quic:congestion_state_updated"),
            Kind::CongestionState
        );
        assert_eq!(Kind::of("quic:stream_data_moved"), Kind::Other);
    }

    #[test]
    fn neqo_pto_marked_packets_are_not_losses() {
        let lost = |trigger: &str| -> PacketData {
            serde_json::from_str(&format!(
                r#"{{"header": {{"packet_type": "1RTT", "packet_number": 3}},
                    "trigger": "{trigger}"}}"#
            ))
            .expect("data")
        };
        assert!(lost("pto_expired").is_pto_marked());
        assert!(!lost("time_threshold").is_pto_marked());
        assert!(!lost("reordering_threshold").is_pto_marked());
        assert!(!PacketData::default().is_pto_marked());
    }

    #[test]
    fn picoquic_packet_fields() {
        let d: PacketData = serde_json::from_str(
            r#"{"packet_type": "1RTT", "header": {"packet_size": 1424, "packet_number": 7},
                "frames": [{"frame_type": "stream", "id": 4, "offset": 100, "length": 1380,
                "fin": false}, {"frame_type": "ack", "ack_delay": 0,
                "acked_ranges": [[0, 5], [9]]}]}"#,
        )
        .expect("data");
        assert!(d.is_one_rtt());
        assert_eq!(d.length(), Some(1424));
        assert_eq!(d.packet_number(), Some(7));
        let f: Vec<Frame> = d
            .frames
            .expect("frames")
            .0
            .into_iter()
            .filter_map(|f| f.0)
            .collect();
        assert_eq!(f[0].stream(), Some((4, 100, 1380)));
        assert!(f[1].is_ack());
        assert_eq!(f[1].ranges().collect::<Vec<_>>(), vec![(0, 5), (9, 9)]);
    }
}
