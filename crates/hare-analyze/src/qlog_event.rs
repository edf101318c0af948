//! The parts of a qlog event the analysis reads, deserialised without building a DOM.
//!
//! Field names follow draft-ietf-quic-qlog-quic-events (qlog 0.3 as written by the `qlog`
//! 0.15 crate that quinn-proto 0.11 and quiche use): `transport:packet_sent` /
//! `packet_received` carry `header.packet_type` and `header.length` (quiche also
//! `raw.length`), `recovery:metrics_updated` carries only the fields that changed.

use std::borrow::Cow;

use serde::Deserialize;

/// One event (`time` in milliseconds relative to the trace's reference time).
#[derive(Debug, Deserialize)]
pub(crate) struct RawEvent<'a> {
    /// Milliseconds (quinn writes an f32).
    pub time: f64,
    /// `category:event` (qlog 0.3 and draft-02 JSON).
    #[serde(borrow, default)]
    pub name: Option<Cow<'a, str>>,
    /// draft-01 style separate event name.
    #[serde(borrow, default)]
    pub event: Option<Cow<'a, str>>,
    /// The event's data.
    #[serde(borrow, default)]
    pub data: RawData<'a>,
}

/// `data` of the events read.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawData<'a> {
    #[serde(borrow, default)]
    pub header: Option<RawHeader<'a>>,
    #[serde(default)]
    pub raw: Option<RawRaw>,
    #[serde(default)]
    pub congestion_window: Option<u64>,
    #[serde(default)]
    pub ssthresh: Option<u64>,
    #[serde(default)]
    pub bytes_in_flight: Option<u64>,
    #[serde(default)]
    pub smoothed_rtt: Option<f64>,
    #[serde(default)]
    pub min_rtt: Option<f64>,
}

/// `data.header` of packet events.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawHeader<'a> {
    #[serde(borrow, default)]
    pub packet_type: Option<Cow<'a, str>>,
    #[serde(default)]
    pub length: Option<u64>,
}

/// `data.raw` of packet events (quiche).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawRaw {
    #[serde(default)]
    pub length: Option<u64>,
}

/// The event kinds the analysis uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    PacketSent,
    PacketReceived,
    PacketLost,
    MetricsUpdated,
    Other,
}

impl RawEvent<'_> {
    /// The kind, from the part of the name after the category.
    pub fn kind(&self) -> Kind {
        let name = self.name.as_deref().or(self.event.as_deref()).unwrap_or("");
        let short = name.rsplit(':').next().unwrap_or(name);
        match short {
            "packet_sent" => Kind::PacketSent,
            "packet_received" => Kind::PacketReceived,
            "packet_lost" => Kind::PacketLost,
            "metrics_updated" => Kind::MetricsUpdated,
            _ => Kind::Other,
        }
    }

    /// True for a 1-RTT (application data) packet.
    pub fn is_one_rtt(&self) -> bool {
        matches!(
            self.data
                .header
                .as_ref()
                .and_then(|h| h.packet_type.as_deref()),
            Some("1RTT" | "1rtt" | "onertt" | "one_rtt")
        )
    }

    /// Packet length in bytes, when logged.
    pub fn length(&self) -> Option<u64> {
        self.data
            .header
            .as_ref()
            .and_then(|h| h.length)
            .or_else(|| self.data.raw.as_ref().and_then(|r| r.length))
    }
}
