//! Scenario files: schema ([`schema`]), loading with errors that name the file, the field
//! and the value, and resolution into what the simulator runs ([`Scenario`]).

pub mod flows;
pub mod schema;
mod windows;

pub use schema::*;
pub use windows::{ResolvedWindows, WINDOW_MAPPING_DOC};

use crate::thread_data::ThreadData;
use hare_cc::CcSpec;
use hare_link::{LinkConfig, PathConfig, TimeSpan};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// A scenario file that cannot be used.
#[derive(Debug, Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{file}: cannot read: {error}")]
    Io {
        /// The file.
        file: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// TOML syntax, an unknown field or a value of the wrong type or unit. `message` is the
    /// TOML parser's, with line, column and the offending text.
    #[error("{file}: {message}")]
    Parse {
        /// The file.
        file: String,
        /// The parser's message.
        message: String,
    },
    /// A well-formed file whose values do not fit together.
    #[error("{file}: invalid `{field}` = {value}: expected {expected}")]
    Invalid {
        /// The file.
        file: String,
        /// Dotted path of the field, e.g. `path.forward.rate`, `controllers[1]`.
        field: String,
        /// The value as written.
        value: String,
        /// What would be accepted.
        expected: String,
    },
}

/// One run of a scenario: a controller, a repetition and its seed, and the thread run it
/// replays, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPlan {
    /// The controller.
    pub controller: CcSpec,
    /// Index into the scenario's controllers.
    pub controller_index: usize,
    /// Repetition, from 0.
    pub repetition: u32,
    /// Seed of this run: the scenario's seed plus the repetition.
    pub seed: u64,
    /// The thread run it replays.
    pub replays: Option<String>,
}

/// A loaded and validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Where it was read from.
    pub source: String,
    /// The file as written.
    pub file: ScenarioFile,
    /// Controllers, parsed.
    pub controllers: Vec<CcSpec>,
    /// Both directions, delays resolved (seeds as written; see [`Scenario::path_for_seed`]).
    pub path: PathConfig,
    /// Flow-control windows in bytes.
    pub windows: ResolvedWindows,
    /// The competing flows of `[[flows]]` (empty: one flow per run, as always).
    pub flows: Vec<flows::ResolvedFlow>,
}

fn invalid(
    file: &str,
    field: impl Into<String>,
    value: impl ToString,
    expected: impl Into<String>,
) -> ScenarioError {
    ScenarioError::Invalid {
        file: file.to_string(),
        field: field.into(),
        value: value.to_string(),
        expected: expected.into(),
    }
}

/// Names are used in file names: letters, digits, `.`, `_`, `-`.
fn name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

impl Scenario {
    /// Parse and validate scenario text; `source` names it in errors. `threads` checks the
    /// replayed run ids.
    pub fn parse(
        text: &str,
        source: &str,
        threads: &ThreadData,
    ) -> Result<Scenario, ScenarioError> {
        let file: ScenarioFile = toml::from_str(text).map_err(|e| ScenarioError::Parse {
            file: source.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        Self::validate(file, source, threads)
    }

    /// Read, parse and validate a scenario file.
    pub fn load(path: &Path, threads: &ThreadData) -> Result<Scenario, ScenarioError> {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| ScenarioError::Io {
            file: source.clone(),
            error,
        })?;
        Self::parse(&text, &source, threads)
    }

    fn validate(
        file: ScenarioFile,
        src: &str,
        threads: &ThreadData,
    ) -> Result<Scenario, ScenarioError> {
        check_kind_and_name(&file, src)?;
        let controllers = if file.flows.is_empty() {
            parse_controllers(&file, src)?
        } else {
            Vec::new()
        };
        check_packet_settings(&file, src)?;
        let path = resolve_path(&file.path, src)?;
        let flows = flows::resolve(&file, &path, src)?;
        let windows =
            ResolvedWindows::resolve(&file.windows).map_err(|(field, value, expected)| {
                invalid(src, format!("windows.{field}"), value, expected)
            })?;
        check_workload(&file, src)?;
        check_ack(&file, src)?;
        check_sender(&file, src)?;
        check_replay(&file, controllers.len(), src, threads)?;
        Ok(Scenario {
            source: src.to_string(),
            file,
            controllers,
            path,
            windows,
            flows,
        })
    }

    /// Every run: controllers in order, each repeated `repetitions` times.
    pub fn runs(&self) -> Vec<RunPlan> {
        let mut out = Vec::new();
        for (ci, c) in self.controllers.iter().enumerate() {
            for rep in 0..self.file.repetitions {
                let k = ci * self.file.repetitions as usize + rep as usize;
                out.push(RunPlan {
                    controller: c.clone(),
                    controller_index: ci,
                    repetition: rep,
                    seed: self.file.seed.wrapping_add(u64::from(rep)),
                    replays: self
                        .file
                        .replay
                        .as_ref()
                        .and_then(|r| r.runs.get(k).cloned()),
                });
            }
        }
        out
    }

    /// The path with link seeds derived from a run's seed (forward `2 * seed + its own seed`,
    /// reverse `2 * seed + 1 + its own seed`), so each repetition draws fresh loss and jitter.
    pub fn path_for_seed(&self, seed: u64) -> PathConfig {
        let mut p = self.path.clone();
        p.forward.seed = seed.wrapping_mul(2).wrapping_add(p.forward.seed);
        p.reverse.seed = seed
            .wrapping_mul(2)
            .wrapping_add(1)
            .wrapping_add(p.reverse.seed);
        p
    }

    /// Bytes of IP and UDP header per packet (the link counts IP bytes).
    pub fn ip_udp_header_bytes(&self) -> u64 {
        if self.file.ip_version == 4 {
            28
        } else {
            48
        }
    }

    /// The forward link's payload rate in Mbit/s (the capacity hare's time to 90% uses).
    pub fn payload_capacity_mbps(&self) -> f64 {
        crate::metrics::payload_capacity_mbps(
            self.path.forward.rate.0,
            u64::from(self.file.mtu),
            self.ip_udp_header_bytes(),
        )
    }

    /// The most payload the flow-control windows let through per round trip, as Mbit/s over
    /// the path's base RTT: the smallest of the stream, connection (its cap when autotuned)
    /// and send windows set,
    /// `None` when none is set (quinn's defaults) or the RTT is zero. A rate above it needs
    /// more bytes in flight than the windows allow, so a cell whose cap is below the link's
    /// payload rate is capped by its window, whatever its congestion control does.
    pub fn window_cap_mbps(&self) -> Option<f64> {
        // An autotuned connection window may grow to its cap.
        let w = [
            self.windows.stream,
            self.windows.autotune.or(self.windows.connection),
            self.windows.send,
        ]
        .into_iter()
        .flatten()
        .min()?;
        let rtt_s = self.path.rtt().0 as f64 / 1e9;
        (rtt_s > 0.0).then(|| w as f64 * 8.0 / rtt_s / 1e6)
    }

    /// Bandwidth-delay product of the forward link in packets of `mtu` + header bytes.
    pub fn bdp_packets(&self) -> f64 {
        let pkt = (u64::from(self.file.mtu) + self.ip_udp_header_bytes()) as f64;
        self.path.forward.rate.0 as f64 / 8.0 * (self.path.rtt().0 as f64 / 1e9) / pkt
    }
}

/// `kind` is the simulator's (or absent) and `name` is usable in file names.
fn check_kind_and_name(file: &ScenarioFile, src: &str) -> Result<(), ScenarioError> {
    if let Some(kind) = file.kind.as_deref().filter(|k| *k != SIM_KIND) {
        return Err(invalid(
            src,
            "kind",
            format!("{kind:?}"),
            "\"sim\" (or no `kind`): other kinds belong to other tools",
        ));
    }
    if !name_ok(&file.name) {
        return Err(invalid(
            src,
            "name",
            format!("{:?}", file.name),
            "1-100 characters of A-Z a-z 0-9 . _ -",
        ));
    }
    Ok(())
}

/// At least one controller, each in hare-cc's grammar.
fn parse_controllers(file: &ScenarioFile, src: &str) -> Result<Vec<CcSpec>, ScenarioError> {
    if file.controllers.is_empty() {
        return Err(invalid(
            src,
            "controllers",
            "[]",
            "at least one controller, e.g. \"cubic@linux-6\"",
        ));
    }
    let mut controllers = Vec::with_capacity(file.controllers.len());
    for (i, text) in file.controllers.iter().enumerate() {
        let spec: CcSpec = text.parse().map_err(|e: hare_cc::SpecError| {
            invalid(
                src,
                format!("controllers[{i}]"),
                format!("{text:?}"),
                e.to_string(),
            )
        })?;
        controllers.push(spec);
    }
    Ok(controllers)
}

/// The datagram size, IP version and repetition count are in range.
fn check_packet_settings(file: &ScenarioFile, src: &str) -> Result<(), ScenarioError> {
    if file.mtu < 1200 {
        return Err(invalid(
            src,
            "mtu",
            file.mtu,
            "a UDP payload of at least 1200 bytes (RFC 9000 section 14)",
        ));
    }
    if file.ip_version != 4 && file.ip_version != 6 {
        return Err(invalid(src, "ip_version", file.ip_version, "4 or 6"));
    }
    if file.repetitions == 0 || file.repetitions > 1000 {
        return Err(invalid(src, "repetitions", file.repetitions, "1 to 1000"));
    }
    Ok(())
}

/// Exactly one of a byte count or a duration, each in range.
fn check_workload(file: &ScenarioFile, src: &str) -> Result<(), ScenarioError> {
    let w = &file.workload;
    match (w.bytes, w.duration) {
        (Some(_), Some(_)) | (None, None) => {
            return Err(invalid(
                src,
                "workload",
                format!(
                    "bytes = {:?}, duration = {:?}",
                    w.bytes.map(|b| b.0),
                    w.duration.map(|d| d.0)
                ),
                "exactly one of `bytes` (nuttcp -n) or `duration` (nuttcp -T)",
            ))
        }
        (Some(b), None) if b.0 == 0 => {
            return Err(invalid(src, "workload.bytes", b.0, "at least 1 byte"))
        }
        (None, Some(d)) if d.0 == 0 || d.0 > 3_600_000_000_000 => {
            return Err(invalid(
                src,
                "workload.duration",
                format!("\"{d}\""),
                "more than 0 s and at most 3600 s",
            ))
        }
        _ => {}
    }
    Ok(())
}

/// The ACK and loss-detection settings are in range.
/// `[sender]`: an interface rate, when given, is above 0.
fn check_sender(file: &ScenarioFile, src: &str) -> Result<(), ScenarioError> {
    if file.sender.line_rate.is_some_and(|r| r.0 == 0) {
        return Err(invalid(
            src,
            "sender.line_rate",
            "0 bit/s",
            "a rate above 0, e.g. \"10g\", or no line_rate (no interface)",
        ));
    }
    Ok(())
}

fn check_ack(file: &ScenarioFile, src: &str) -> Result<(), ScenarioError> {
    if let Some(t) = file.ack.ack_eliciting_threshold {
        if t > 1000 {
            return Err(invalid(
                src,
                "ack.ack_eliciting_threshold",
                t,
                "0 to 1000 packets",
            ));
        }
    }
    if let Some(t) = file.ack.time_threshold {
        if !(1.0..=10.0).contains(&t) {
            return Err(invalid(
                src,
                "ack.time_threshold",
                t,
                "a multiple of the RTT from 1 to 10",
            ));
        }
    }
    if file.ack.packet_threshold == Some(0) {
        return Err(invalid(src, "ack.packet_threshold", 0, "at least 1 packet"));
    }
    Ok(())
}

/// A replay names one existing thread run per run.
fn check_replay(
    file: &ScenarioFile,
    controllers: usize,
    src: &str,
    threads: &ThreadData,
) -> Result<(), ScenarioError> {
    if let Some(r) = &file.replay {
        let runs = controllers * file.repetitions as usize;
        if r.runs.len() != runs {
            return Err(invalid(
                src,
                "replay.runs",
                format!("{} ids", r.runs.len()),
                format!(
                    "one thread run id per run: {} controllers x {} repetitions = {runs}",
                    controllers, file.repetitions
                ),
            ));
        }
        for (i, id) in r.runs.iter().enumerate() {
            if threads.get(id).is_none() {
                return Err(invalid(
                    src,
                    format!("replay.runs[{i}]"),
                    format!("{id:?}"),
                    "a run id of data/thread-runs.json or data/nussbaum-2011-runs.json",
                ));
            }
        }
    }
    Ok(())
}

fn resolve_path(p: &PathSpec, src: &str) -> Result<PathConfig, ScenarioError> {
    let mut forward = p.forward.clone();
    let mut reverse = match &p.reverse {
        Some(r) => r.clone(),
        None => {
            let mut r = LinkConfig::new(forward.rate, TimeSpan(0));
            r.seed = 1;
            r
        }
    };
    match p.rtt {
        Some(rtt) => {
            if forward.delay.0 != 0 || (p.reverse.is_some() && reverse.delay.0 != 0) {
                return Err(invalid(
                    src,
                    "path.rtt",
                    format!("\"{rtt}\" with a per-direction delay"),
                    "either `path.rtt` or a `delay` in each direction, not both",
                ));
            }
            if rtt.0 == 0 {
                return Err(invalid(
                    src,
                    "path.rtt",
                    format!("\"{rtt}\""),
                    "a round-trip time above 0",
                ));
            }
            forward.delay = TimeSpan(rtt.0 - rtt.0 / 2);
            reverse.delay = TimeSpan(rtt.0 / 2);
        }
        None => {
            if forward.delay.0 == 0 && reverse.delay.0 == 0 {
                return Err(invalid(
                    src,
                    "path.forward.delay",
                    "\"0 s\"",
                    "a one-way `delay` in each direction, or `path.rtt`",
                ));
            }
        }
    }
    let path = PathConfig { forward, reverse };
    path.validate()
        .map_err(|e| invalid(src, format!("path.{}", e.field), e.value, e.expected))?;
    Ok(path)
}

/// The kind of scenario file this loader reads. Other tools keep their own scenario files in
/// the same directory with a top-level `kind` (e.g. `kind = "kernel-vs-hare"`, read by
/// hare-emu); those are skipped by [`scenario_files`].
pub const SIM_KIND: &str = "sim";

/// The top-level `kind` of a TOML text, `None` when absent or when the text does not parse
/// (the loader then reports the parse error).
fn kind_of(text: &str) -> Option<String> {
    let table: toml::Table = toml::from_str(text).ok()?;
    table.get("kind")?.as_str().map(str::to_string)
}

/// The virtual-time scenario files of a directory (`*.toml` without a `kind`, or with
/// `kind = "sim"`), sorted by name.
pub fn scenario_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .filter(|p| match std::fs::read_to_string(p) {
            Ok(text) => kind_of(&text).is_none_or(|k| k == SIM_KIND),
            Err(_) => true,
        })
        .collect();
    files.sort();
    Ok(files)
}

/// The shipped scenario directory: `$HARE_LAB_SCENARIOS`, else `testbed/scenarios` of this
/// source tree, else `./testbed/scenarios`, else `./scenarios`.
pub fn default_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("HARE_LAB_SCENARIOS") {
        return PathBuf::from(d);
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    if built.is_dir() {
        return built;
    }
    for d in ["testbed/scenarios", "scenarios"] {
        if Path::new(d).is_dir() {
            return PathBuf::from(d);
        }
    }
    built
}

/// Load every scenario of a directory; the first error stops.
pub fn load_dir(dir: &Path, threads: &ThreadData) -> Result<Vec<Scenario>, ScenarioError> {
    let files = scenario_files(dir).map_err(|error| ScenarioError::Io {
        file: dir.display().to_string(),
        error,
    })?;
    files.iter().map(|f| Scenario::load(f, threads)).collect()
}
