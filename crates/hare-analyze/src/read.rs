//! Opening a file: format detection and the streaming readers.
//!
//! - qlog JSON-SEQ (RFC 7464 records, each starting with RS 0x1E; quinn and quiche
//!   `.sqlog`): read one record at a time with `read_until(RS)`, so memory is one record.
//! - qlog JSON (`.qlog`, an object with a `traces` array): a serde visitor walks the document
//!   from a buffered reader and hands each event to the accumulator as it is parsed.
//! - hare report JSON lines: [`hare_report::jsonl::read_run`] (reports are small).
//!
//! A truncated last record is skipped and counted; a bad record before the end is an error.

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::accumulate::Accumulator;
use crate::error::{AnalyzeError, Result};
use crate::lenient::{BText, Num, Text};
use crate::sidecar;
use crate::sink::{EventSink, TraceMeta};
use crate::trace::{Format, Skipped, Trace};
use serde_json::value::RawValue;

const RS: u8 = 0x1E;
const BUF: usize = 1 << 20;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> AnalyzeError + '_ {
    move |error| AnalyzeError::Io {
        path: path.to_path_buf(),
        error,
    }
}

fn label(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Reads every trace of a file (a report is one trace; a qlog JSON file may hold several).
pub fn read_file(path: &Path) -> Result<Vec<Trace>> {
    let file = File::open(path).map_err(io(path))?;
    let mut r = BufReader::with_capacity(BUF, file);
    let first = loop {
        let buf = r.fill_buf().map_err(io(path))?;
        if buf.is_empty() {
            return Err(AnalyzeError::UnknownFormat {
                path: path.to_path_buf(),
                found: "the file is empty".into(),
            });
        }
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => {
                let b = buf[i];
                r.consume(i);
                break b;
            }
            None => {
                let n = buf.len();
                r.consume(n);
            }
        }
    };
    let mut traces = match first {
        RS => read_seq(path, r, RS)?,
        b'{' => read_brace(path, r)?,
        other => {
            let head: Vec<u8> = r
                .fill_buf()
                .map_err(io(path))?
                .iter()
                .take(24)
                .copied()
                .collect();
            return Err(AnalyzeError::UnknownFormat {
                path: path.to_path_buf(),
                found: format!(
                    "found first byte 0x{other:02x} (text {:?})",
                    String::from_utf8_lossy(&head)
                ),
            });
        }
    };
    if traces.len() == 1 && traces[0].format == Format::QlogSeq {
        sidecar::apply(path, &mut traces[0])?;
    }
    Ok(traces)
}

/// A file starting with `{`: a report (JSON lines), JSON-SEQ without RS, or qlog JSON.
fn read_brace(path: &Path, mut r: BufReader<File>) -> Result<Vec<Trace>> {
    let mut line = Vec::new();
    (&mut r)
        .take(BUF as u64)
        .read_until(b'\n', &mut line)
        .map_err(io(path))?;
    let reopen = || -> Result<BufReader<File>> {
        Ok(BufReader::with_capacity(
            BUF,
            File::open(path).map_err(io(path))?,
        ))
    };
    match serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&line) {
        Ok(obj) if obj.get("type").and_then(|v| v.as_str()) == Some("header") => {
            Ok(vec![crate::report_read::read_report(path, reopen()?)?])
        }
        Ok(obj) if obj.contains_key("traces") => read_json(path, reopen()?),
        Ok(obj)
            if obj.contains_key("qlog_version")
                || obj.contains_key("qlog_format")
                || obj.contains_key("file_schema") =>
        {
            read_seq(path, reopen()?, b'\n')
        }
        Ok(obj) => Err(AnalyzeError::UnknownFormat {
            path: path.to_path_buf(),
            found: format!(
                "found a JSON object with keys {:?}",
                obj.keys().take(8).collect::<Vec<_>>()
            ),
        }),
        // A multi-line (pretty) document: qlog JSON, or the visitor says what it is not.
        Err(_) => read_json(path, reopen()?),
    }
}

/// One JSON-SEQ record: an event (with `time`) or a header (`qlog_version` /
/// `file_schema`, with the `trace` it opens).
#[derive(Deserialize)]
struct SeqRecord<'a> {
    #[serde(default)]
    time: Option<Num>,
    #[serde(borrow, default)]
    name: BText<'a>,
    #[serde(borrow, default)]
    category: BText<'a>,
    #[serde(borrow, default)]
    event: BText<'a>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
    #[serde(default)]
    qlog_version: Option<IgnoredAny>,
    #[serde(default)]
    qlog_format: Option<IgnoredAny>,
    #[serde(default)]
    file_schema: Option<IgnoredAny>,
    #[serde(default)]
    trace: Option<serde_json::Value>,
}

impl SeqRecord<'_> {
    fn is_header(&self) -> bool {
        self.time.is_none()
            && (self.qlog_version.is_some()
                || self.qlog_format.is_some()
                || self.file_schema.is_some())
    }
}

/// The `category:event` name of an event, from `name` or draft-01's two fields.
pub(crate) fn event_name<'a>(
    name: &'a Option<Cow<'a, str>>,
    category: &Option<Cow<'_, str>>,
    event: &'a Option<Cow<'a, str>>,
) -> Cow<'a, str> {
    match (name, category, event) {
        (Some(n), _, _) => Cow::Borrowed(n.as_ref()),
        (None, Some(c), Some(e)) => Cow::Owned(format!("{c}:{e}")),
        (None, None, Some(e)) => Cow::Borrowed(e.as_ref()),
        _ => Cow::Borrowed(""),
    }
}

/// Reads a JSON-SEQ stream whose records end at `sep` (RS, or newline for RS-less files).
/// A header record after events starts a new trace (concatenated files).
pub fn read_seq<R: BufRead>(path: &Path, mut r: R, sep: u8) -> Result<Vec<Trace>> {
    let mut done: Vec<Trace> = Vec::new();
    let mut sink: Option<EventSink> = None;
    let mut buf = Vec::with_capacity(4096);
    let mut record: u64 = 0;
    let mut pending: Option<(u64, String)> = None;
    let mut untimed = 0u64;
    loop {
        buf.clear();
        let n = r.read_until(sep, &mut buf).map_err(io(path))?;
        if n == 0 {
            break;
        }
        let body = trim(&buf, sep);
        if body.is_empty() {
            continue;
        }
        record += 1;
        if let Some((at, message)) = pending.take() {
            return Err(AnalyzeError::BadRecord {
                path: path.to_path_buf(),
                record: at,
                message,
            });
        }
        let rec = match serde_json::from_slice::<SeqRecord<'_>>(body) {
            Ok(rec) => rec,
            Err(e) if sink.is_none() => {
                return Err(AnalyzeError::UnknownFormat {
                    path: path.to_path_buf(),
                    found: format!("the first JSON-SEQ record is not a qlog header: {e}"),
                })
            }
            Err(e) => {
                pending = Some((record, e.to_string()));
                continue;
            }
        };
        if rec.is_header() {
            if let Some(s) = sink.take() {
                done.push(s.finish(Vec::new()));
            }
            let mut s = EventSink::new(Accumulator::new(label(path), Format::QlogSeq));
            if let Some(t) = &rec.trace {
                s.meta = TraceMeta::of(t);
            }
            s.acc.vantage = s.meta.vantage.clone();
            sink = Some(s);
            continue;
        }
        let Some(s) = sink.as_mut() else {
            return Err(AnalyzeError::UnknownFormat {
                path: path.to_path_buf(),
                found: "the first JSON-SEQ record has no `qlog_version` / `file_schema`".into(),
            });
        };
        match rec.time.and_then(|t| t.0) {
            Some(time) => {
                let name = event_name(&rec.name.0, &rec.category.0, &rec.event.0);
                s.feed(time, &name, rec.data.map(RawValue::get));
            }
            None => untimed += 1,
        }
    }
    let mut skipped = Vec::new();
    if let Some((at, message)) = pending {
        skipped.push(Skipped {
            count: 1,
            reason: format!("last record ({at}) cut short: {message}"),
        });
    }
    if untimed > 0 {
        skipped.push(Skipped {
            count: untimed,
            reason: "record with neither `time` nor a qlog header".into(),
        });
    }
    let Some(last) = sink else {
        return Err(AnalyzeError::UnknownFormat {
            path: path.to_path_buf(),
            found: "no qlog header record".into(),
        });
    };
    done.push(last.finish(skipped));
    number_traces(&mut done);
    Ok(done)
}

/// `file#0`, `file#1` ... when a file holds several traces.
fn number_traces(traces: &mut [Trace]) {
    if traces.len() > 1 {
        for (i, t) in traces.iter_mut().enumerate() {
            t.name = format!("{}#{i}", t.name);
        }
    }
}

fn trim(buf: &[u8], sep: u8) -> &[u8] {
    let mut b = buf;
    while let Some((&last, rest)) = b.split_last() {
        if last == sep || last == RS || last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    while let Some((&first, rest)) = b.split_first() {
        if first == RS || first.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

/// State of the qlog JSON visitor.
struct JsonSink {
    path: PathBuf,
    version: Option<String>,
    done: Vec<Trace>,
    current: Option<EventSink>,
}

impl JsonSink {
    fn start(&mut self) {
        let n = self.done.len();
        let name = format!("{}#{n}", label(&self.path));
        self.current = Some(EventSink::new(Accumulator::new(name, Format::QlogJson)));
    }
    fn end(&mut self, skipped: Vec<Skipped>) {
        if let Some(s) = self.current.take() {
            self.done.push(s.finish(skipped));
        }
    }
    fn events(&self) -> u64 {
        self.done.iter().map(|t| t.records).sum::<u64>()
            + self.current.as_ref().map_or(0, |s| s.acc.records())
    }
}

/// Reads a qlog JSON document (or several concatenated), one event at a time.
pub fn read_json<R: Read>(path: &Path, r: R) -> Result<Vec<Trace>> {
    let mut sink = JsonSink {
        path: path.to_path_buf(),
        version: None,
        done: Vec::new(),
        current: None,
    };
    let mut de = serde_json::Deserializer::from_reader(r);
    // Bounded: each round consumes one whole document or stops.
    loop {
        let outcome = DocSeed(&mut sink).deserialize(&mut de);
        let events = sink.events();
        match outcome {
            Ok(()) => {}
            Err(e) if e.is_eof() && sink.version.is_some() => {
                sink.end(vec![Skipped {
                    count: 1,
                    reason: format!(
                        "document cut short at line {} column {} after {events} events: the \
                         rest of the file is missing",
                        e.line(),
                        e.column()
                    ),
                }]);
                break;
            }
            Err(e) if sink.version.is_none() || events == 0 => {
                return Err(AnalyzeError::UnknownFormat {
                    path: path.to_path_buf(),
                    found: format!("parsing as qlog JSON failed: {e}"),
                })
            }
            Err(e) => {
                return Err(AnalyzeError::BadRecord {
                    path: path.to_path_buf(),
                    record: events + 1,
                    message: e.to_string(),
                })
            }
        }
        if de.end().is_ok() {
            break;
        }
    }
    if sink.version.is_none() {
        return Err(AnalyzeError::UnknownFormat {
            path: path.to_path_buf(),
            found: "a JSON object without `qlog_version` / `file_schema`".into(),
        });
    }
    if sink.done.is_empty() {
        return Err(AnalyzeError::Empty {
            path: path.to_path_buf(),
            message: "the qlog has no traces".into(),
        });
    }
    if sink.done.len() == 1 {
        sink.done[0].name = label(path);
    }
    Ok(sink.done)
}

struct DocSeed<'s>(&'s mut JsonSink);

impl<'de> DeserializeSeed<'de> for DocSeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DocSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a qlog JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "qlog_version" | "file_schema" => {
                    let v = map.next_value::<serde_json::Value>()?;
                    self.0.version = Some(v.as_str().unwrap_or_default().to_owned());
                }
                "traces" => {
                    // The version may come after the traces; accept both orders.
                    self.0.version.get_or_insert_with(String::new);
                    map.next_value_seed(TracesSeed(self.0))?
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct TracesSeed<'s>(&'s mut JsonSink);

impl<'de> DeserializeSeed<'de> for TracesSeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for TracesSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of qlog traces")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        while seq.next_element_seed(TraceSeed(self.0))?.is_some() {}
        Ok(())
    }
}

struct TraceSeed<'s>(&'s mut JsonSink);

impl<'de> DeserializeSeed<'de> for TraceSeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TraceSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a qlog trace object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        self.0.start();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "events" => map.next_value_seed(EventsSeed(self.0))?,
                k @ ("vantage_point" | "configuration" | "common_fields" | "event_fields") => {
                    let v = map.next_value::<serde_json::Value>()?;
                    if let Some(s) = self.0.current.as_mut() {
                        s.meta.absorb(k, &v);
                        s.acc.vantage = s.meta.vantage.clone();
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        self.0.end(Vec::new());
        Ok(())
    }
}

struct EventsSeed<'s>(&'s mut JsonSink);

impl<'de> DeserializeSeed<'de> for EventsSeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EventsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of qlog events (objects with `time`, `name`, `data`)")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        while let Some(ev) = seq.next_element::<AnyEvent>()? {
            let Some(s) = self.0.current.as_mut() else {
                continue;
            };
            match ev {
                AnyEvent::Object(o) => match o.time.and_then(|t| t.0) {
                    Some(t) => {
                        let (n, c, e) = (cow(&o.name), cow(&o.category), cow(&o.event));
                        let name = event_name(&n, &c, &e);
                        s.feed(t, &name, o.data.as_deref().map(RawValue::get));
                    }
                    None => s.acc.records += 1,
                },
                AnyEvent::Array(items) => s.feed_array(&items),
                AnyEvent::Other => s.acc.records += 1,
            }
        }
        Ok(())
    }
}

/// An event object of a qlog JSON document.
#[derive(Deserialize)]
struct EventObject {
    #[serde(default, alias = "relative_time")]
    time: Option<Num>,
    #[serde(default)]
    name: Text,
    #[serde(default)]
    category: Text,
    #[serde(default)]
    event: Text,
    #[serde(default)]
    data: Option<Box<RawValue>>,
}

/// A lenient text as a borrowed name.
fn cow(t: &Text) -> Option<Cow<'_, str>> {
    t.as_deref().map(Cow::Borrowed)
}

/// An event: an object (qlog 0.3 and later) or an array (draft-00/01, picoquic).
enum AnyEvent {
    Object(EventObject),
    Array(Vec<Box<RawValue>>),
    Other,
}

impl<'de> Deserialize<'de> for AnyEvent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnyEvent;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a qlog event")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<AnyEvent, A::Error> {
                let o =
                    EventObject::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(AnyEvent::Object(o))
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<AnyEvent, A::Error> {
                let mut items = Vec::new();
                while let Some(v) = seq.next_element::<Box<RawValue>>()? {
                    items.push(v);
                }
                Ok(AnyEvent::Array(items))
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> std::result::Result<AnyEvent, E> {
                Ok(AnyEvent::Other)
            }
            fn visit_u64<E: serde::de::Error>(self, _: u64) -> std::result::Result<AnyEvent, E> {
                Ok(AnyEvent::Other)
            }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> std::result::Result<AnyEvent, E> {
                Ok(AnyEvent::Other)
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> std::result::Result<AnyEvent, E> {
                Ok(AnyEvent::Other)
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> std::result::Result<AnyEvent, E> {
                Ok(AnyEvent::Other)
            }
            fn visit_unit<E: serde::de::Error>(self) -> std::result::Result<AnyEvent, E> {
                Ok(AnyEvent::Other)
            }
        }
        d.deserialize_any(V)
    }
}
