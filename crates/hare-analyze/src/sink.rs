//! What a trace's metadata says about its events (time unit, relative or delta times,
//! picoquic's `event_fields` order, the vantage point) and the sink that applies it before
//! the events reach the [`Accumulator`].

use serde_json::value::RawValue;
use serde_json::Value;

use crate::accumulate::Accumulator;
use crate::trace::{Skipped, Trace};

/// Metadata of one trace.
#[derive(Debug, Clone, Default)]
pub(crate) struct TraceMeta {
    /// `vantage_point.type`.
    pub vantage: Option<String>,
    /// Milliseconds per logged time unit (`configuration.time_units`: "us" in picoquic).
    pub ms_per_unit: Option<f64>,
    /// Times are deltas from the previous event (qlog 0.3 `time_format: "delta"`, newer
    /// drafts' `relative_to_previous_event`).
    pub delta: bool,
    /// Order of the fields of array-form events (draft-00/01 `event_fields`).
    pub event_fields: Vec<String>,
}

impl TraceMeta {
    /// The metadata in a trace object (or a JSON-SEQ header's `trace`).
    pub fn of(trace: &Value) -> TraceMeta {
        let mut m = TraceMeta::default();
        m.absorb("vantage_point", &trace["vantage_point"]);
        m.absorb("configuration", &trace["configuration"]);
        m.absorb("common_fields", &trace["common_fields"]);
        m.absorb("event_fields", &trace["event_fields"]);
        m
    }

    /// Takes what `value` of the trace key `key` says.
    pub fn absorb(&mut self, key: &str, value: &Value) {
        match key {
            "vantage_point" => {
                self.vantage = value["type"].as_str().map(str::to_owned);
            }
            "configuration" | "common_fields" => {
                if let Some(u) = value["time_units"].as_str() {
                    self.ms_per_unit = match u {
                        "us" => Some(0.001),
                        "ns" => Some(1e-6),
                        "s" => Some(1000.0),
                        _ => Some(1.0),
                    };
                }
                let format = value["time_format"]
                    .as_str()
                    .or(value["reference_time"]["time_format"].as_str());
                if let Some(f) = format {
                    self.delta = f.contains("delta") || f.contains("previous");
                }
            }
            "event_fields" => {
                if let Some(a) = value.as_array() {
                    self.event_fields = a
                        .iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect();
                }
            }
            _ => {}
        }
    }
}

/// Events of one trace on their way to the accumulator.
#[derive(Debug)]
pub(crate) struct EventSink {
    pub acc: Accumulator,
    pub meta: TraceMeta,
    last_time_ms: f64,
}

impl EventSink {
    /// A sink feeding `acc`.
    pub fn new(acc: Accumulator) -> Self {
        EventSink {
            acc,
            meta: TraceMeta::default(),
            last_time_ms: 0.0,
        }
    }

    /// One event with its logged time.
    pub fn feed(&mut self, time: f64, name: &str, data: Option<&str>) {
        let mut ms = time * self.meta.ms_per_unit.unwrap_or(1.0);
        if self.meta.delta {
            ms += self.last_time_ms;
        }
        self.last_time_ms = ms;
        self.acc.feed(ms, name, data);
    }

    /// One array-form event (`[time, category, event, data]` in `event_fields` order).
    pub fn feed_array(&mut self, items: &[Box<RawValue>]) {
        let fields: Vec<&str> = if self.meta.event_fields.is_empty() {
            vec!["relative_time", "category", "event", "data"]
        } else {
            self.meta.event_fields.iter().map(String::as_str).collect()
        };
        let mut time = None;
        let (mut category, mut event, mut data) = (None, None, None);
        for (f, v) in fields.iter().zip(items) {
            match *f {
                "relative_time" | "time" | "delta_time" => {
                    time = serde_json::from_str::<f64>(v.get()).ok();
                }
                "category" => category = serde_json::from_str::<String>(v.get()).ok(),
                "event" | "name" => event = serde_json::from_str::<String>(v.get()).ok(),
                "data" => data = Some(v.get()),
                _ => {}
            }
        }
        let Some(time) = time else {
            self.acc.records += 1;
            return;
        };
        let name = match (category, event) {
            (Some(c), Some(e)) => format!("{c}:{e}"),
            (None, Some(e)) => e,
            _ => String::new(),
        };
        self.feed(time, &name, data);
    }

    /// The trace.
    pub fn finish(mut self, skipped: Vec<Skipped>) -> Trace {
        self.acc.ms_per_unit = self.meta.ms_per_unit;
        crate::finish::finish(self.acc, skipped)
    }
}
