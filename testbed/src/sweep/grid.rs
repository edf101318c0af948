//! Sweep files and their expansion into cells.
//!
//! A sweep file names a base scenario and a list of axes; the cells are the cartesian
//! product of the axes' values, the first axis varying slowest. Each cell is the base
//! scenario with the cell's values written into it, validated like any scenario file.
//!
//! ```toml
//! kind = "sweep"
//! name = "2011-hystart"
//! description = "HyStart on/off x HZ x RTT x router buffer"
//! base = "../scenarios/2011-hz250-80ms-auto-hystart.toml"   # relative to this file
//!
//! [scenario]                 # fields written into every cell before the axes (optional)
//! workload = { duration = "10s" }          # replaces the base's whole [workload]
//! "path.forward.queue_packets" = 2500      # a dotted key sets one field
//!
//! [[axis]]                   # one field, one value per cell
//! name = "hystart"
//! field = "controller.hystart"       # appends ",hystart=<v>" to every controller spec
//! values = [0, 1]
//!
//! [[axis]]                   # several fields at once, a label per value
//! name = "rtt"
//! values = [
//!   { label = "18ms", set = { "path.rtt" = "18.9ms", "windows.socket_buffer" = "40m" } },
//!   { label = "80ms", set = { "path.rtt" = "80.8ms", "windows.socket_buffer" = "100m" } },
//! ]
//! ```
//!
//! Fields are dotted paths into the scenario file (`path.forward.queue_packets`, `seed`,
//! `windows.stream`, `ack.max_ack_delay`, ...), plus `controller` (the cell's one controller)
//! and `controller.<key>` (a hare-cc `,key=value` override appended to every controller,
//! after all other fields are set).

use crate::scenario::{Scenario, ScenarioError};
use crate::thread_data::ThreadData;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The `kind` of a sweep file.
pub const SWEEP_KIND: &str = "sweep";

/// Most cells one sweep may expand into (a typo in an axis should not start a month of
/// simulation).
pub const MAX_CELLS: usize = 100_000;

/// A sweep file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepFile {
    /// Must be `"sweep"`.
    pub kind: String,
    /// Short name: names output files and is checked by `merge`.
    pub name: String,
    /// What the sweep asks.
    #[serde(default)]
    pub description: String,
    /// The base scenario file, relative to the sweep file.
    #[serde(default)]
    pub base: Option<PathBuf>,
    /// Fields written into every cell, keys dotted like axis fields (or the whole scenario
    /// when there is no `base`).
    #[serde(default)]
    pub scenario: Option<toml::Table>,
    /// The axes, outermost first.
    #[serde(default)]
    pub axis: Vec<AxisSpec>,
}

/// One axis as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AxisSpec {
    /// Column name in tables and heatmaps.
    pub name: String,
    /// The field each value is written to; absent when the values are `{ label, set }`.
    #[serde(default)]
    pub field: Option<String>,
    /// The values.
    pub values: Vec<toml::Value>,
}

/// One value of an axis: a label and the fields it sets.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisValue {
    /// How tables show it.
    pub label: String,
    /// (dotted field, value) pairs.
    pub set: Vec<(String, toml::Value)>,
}

/// One axis, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Column name.
    pub name: String,
    /// Its values in order.
    pub values: Vec<AxisValue>,
}

/// (axis name, value label) of one cell, in axis order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyPart {
    /// Axis name.
    pub axis: String,
    /// Value label.
    pub value: String,
}

/// One cell: its index, key and scenario.
#[derive(Debug, Clone)]
pub struct Cell {
    /// Index in the sweep, from 0 (first axis slowest).
    pub index: usize,
    /// Its axis values.
    pub key: Vec<KeyPart>,
    /// The scenario it runs.
    pub scenario: Scenario,
}

/// A loaded sweep: its axes, cells and the fingerprint of the whole definition.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// The axes.
    pub axes: Vec<Axis>,
    /// Every cell, in index order.
    pub cells: Vec<Cell>,
    /// SHA-256 (hex, first 16 bytes) of every cell's resolved scenario text: shards of the
    /// same definition carry the same value, whatever file names or machines they ran on.
    pub definition: String,
}

fn label_of(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn resolve_axis(a: &AxisSpec, file: &str) -> Result<Axis> {
    if a.values.is_empty() {
        bail!("{file}: axis `{}` has no values", a.name);
    }
    let mut values = Vec::with_capacity(a.values.len());
    for (i, v) in a.values.iter().enumerate() {
        let value = match (&a.field, v) {
            (Some(field), v) => AxisValue {
                label: label_of(v),
                set: vec![(field.clone(), v.clone())],
            },
            (None, toml::Value::Table(t)) => {
                let label = t.get("label").map(label_of).with_context(|| {
                    format!("{file}: axis `{}` value {i} has no `label`", a.name)
                })?;
                let set = match t.get("set") {
                    Some(toml::Value::Table(s)) => {
                        s.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
                    }
                    _ => bail!(
                        "{file}: axis `{}` value {i} needs `set = {{ \"field\" = value, ... }}`",
                        a.name
                    ),
                };
                if let Some(extra) = t.keys().find(|k| *k != "label" && *k != "set") {
                    bail!("{file}: axis `{}` value {i}: unknown key `{extra}` (expected `label` and `set`)", a.name);
                }
                AxisValue { label, set }
            }
            (None, _) => bail!(
                "{file}: axis `{}` has no `field`, so each value must be {{ label = \"...\", set = {{ ... }} }}",
                a.name
            ),
        };
        values.push(value);
    }
    Ok(Axis {
        name: a.name.clone(),
        values,
    })
}

/// Writes `value` at the dotted `field` of `table`, creating tables on the way.
fn set_field(table: &mut toml::Table, field: &str, value: toml::Value) -> Result<()> {
    let mut parts: Vec<&str> = field.split('.').collect();
    let last = parts
        .pop()
        .filter(|p| !p.is_empty())
        .with_context(|| format!("empty field name `{field}`"))?;
    let mut t = table;
    for p in parts {
        let entry = t
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = match entry {
            toml::Value::Table(inner) => inner,
            _ => bail!("field `{field}`: `{p}` is not a table"),
        };
    }
    t.insert(last.to_string(), value);
    Ok(())
}

/// The scenario table of one cell.
fn cell_table(base: &toml::Table, values: &[&AxisValue]) -> Result<toml::Table> {
    let mut t = base.clone();
    let mut overrides = Vec::new();
    for v in values {
        for (field, value) in &v.set {
            if field == "controller" {
                t.insert(
                    "controllers".into(),
                    toml::Value::Array(vec![toml::Value::String(label_of(value))]),
                );
            } else if let Some(key) = field.strip_prefix("controller.") {
                overrides.push(format!("{key}={}", label_of(value)));
            } else {
                set_field(&mut t, field, value.clone())?;
            }
        }
    }
    if !overrides.is_empty() {
        let Some(toml::Value::Array(list)) = t.get_mut("controllers") else {
            bail!("`controller.<key>` axes need `controllers` in the scenario");
        };
        for c in list.iter_mut() {
            let spec = format!("{},{}", label_of(c), overrides.join(","));
            *c = toml::Value::String(spec);
        }
    }
    Ok(t)
}

impl Sweep {
    /// Reads a sweep file and expands and validates every cell.
    pub fn load(path: &Path, threads: &ThreadData) -> Result<Sweep> {
        let src = path.display().to_string();
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {src}"))?;
        let file: SweepFile = toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{src}: {}", e.to_string().trim_end()))?;
        if file.kind != SWEEP_KIND {
            bail!("{src}: `kind` = {:?}: expected \"sweep\"", file.kind);
        }
        let mut base = match &file.base {
            Some(b) => {
                let p = path.parent().unwrap_or(Path::new(".")).join(b);
                let t = std::fs::read_to_string(&p)
                    .with_context(|| format!("{src}: reading base {}", p.display()))?;
                toml::from_str::<toml::Table>(&t)
                    .map_err(|e| anyhow::anyhow!("{}: {}", p.display(), e.to_string().trim_end()))?
            }
            None => toml::Table::new(),
        };
        for (k, v) in file.scenario.clone().unwrap_or_default() {
            set_field(&mut base, &k, v).with_context(|| format!("{src}: [scenario]"))?;
        }
        // A cell replays no thread run: its controllers and path differ from the base's.
        base.remove("replay");
        let axes = file
            .axis
            .iter()
            .map(|a| resolve_axis(a, &src))
            .collect::<Result<Vec<_>>>()?;
        Self::expand(&file, &src, &base, axes, threads)
    }

    fn expand(
        file: &SweepFile,
        src: &str,
        base: &toml::Table,
        axes: Vec<Axis>,
        threads: &ThreadData,
    ) -> Result<Sweep> {
        let n = axes
            .iter()
            .try_fold(1usize, |acc, a| acc.checked_mul(a.values.len()))
            .filter(|n| *n <= MAX_CELLS)
            .with_context(|| format!("{src}: more than {MAX_CELLS} cells"))?;
        let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
        digest.update(file.name.as_bytes());
        let mut cells = Vec::with_capacity(n);
        for index in 0..n {
            let mut rest = index;
            let mut picked = vec![&axes[0].values[0]; axes.len()];
            for (ai, a) in axes.iter().enumerate().rev() {
                picked[ai] = &a.values[rest % a.values.len()];
                rest /= a.values.len();
            }
            let key: Vec<KeyPart> = axes
                .iter()
                .zip(&picked)
                .map(|(a, v)| KeyPart {
                    axis: a.name.clone(),
                    value: v.label.clone(),
                })
                .collect();
            let mut t =
                cell_table(base, &picked).with_context(|| format!("{src}: cell {index}"))?;
            let key_text: Vec<String> = key
                .iter()
                .map(|k| format!("{}={}", k.axis, k.value))
                .collect();
            t.insert(
                "name".into(),
                toml::Value::String(format!("{}-c{index:04}", file.name)),
            );
            t.insert(
                "description".into(),
                toml::Value::String(format!("{}: {}", file.name, key_text.join(" "))),
            );
            let text = toml::to_string(&t).with_context(|| format!("{src}: cell {index}"))?;
            digest.update(&(text.len() as u64).to_le_bytes());
            digest.update(text.as_bytes());
            let cell_src = format!("{src} cell {index} ({})", key_text.join(", "));
            let scenario = Scenario::parse(&text, &cell_src, threads)
                .map_err(|e: ScenarioError| anyhow::anyhow!("{e}"))?;
            cells.push(Cell {
                index,
                key,
                scenario,
            });
        }
        let hash = digest.finish();
        let definition = hash.as_ref()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(Sweep {
            name: file.name.clone(),
            description: file.description.clone(),
            axes,
            cells,
            definition,
        })
    }
}

/// A `--shard I/N` slice: cells whose index is `I` modulo `N` (round robin, so every shard
/// gets a mix of the grid rather than one corner of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, from 0.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
}

impl Shard {
    /// The whole sweep.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Whether cell `i` belongs to this shard.
    pub fn has(&self, i: usize) -> bool {
        i % self.count == self.index
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!("`{s}`: expected I/N with 0 <= I < N, e.g. 0/4 (shards count from 0, like JOB_COMPLETION_INDEX)")
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_partition() {
        let s: Shard = "1/4".parse().expect("shard");
        assert_eq!(s, Shard { index: 1, count: 4 });
        assert!(s.has(1) && s.has(5) && !s.has(4));
        assert!("4/4".parse::<Shard>().is_err());
        assert!("0/0".parse::<Shard>().is_err());
        assert!("x".parse::<Shard>().is_err());
        assert!((0..10).all(|i| Shard::ALL.has(i)));
    }

    #[test]
    fn fields_and_controller_overrides() {
        let mut base: toml::Table = toml::from_str(
            "controllers = [\"cubic@linux-6\", \"reno\"]\n[path.forward]\nrate = \"1g\"\n",
        )
        .expect("toml");
        base.insert("x".into(), toml::Value::Integer(1));
        let a = AxisValue {
            label: "q".into(),
            set: vec![
                (
                    "path.forward.queue_packets".into(),
                    toml::Value::Integer(50),
                ),
                ("controller.hz".into(), toml::Value::Integer(250)),
            ],
        };
        let t = cell_table(&base, &[&a]).expect("cell");
        assert_eq!(t["path"]["forward"]["queue_packets"].as_integer(), Some(50));
        let c: Vec<&str> = t["controllers"]
            .as_array()
            .map(|v| v.iter().filter_map(|x| x.as_str()).collect())
            .unwrap_or_default();
        assert_eq!(c, ["cubic@linux-6,hz=250", "reno,hz=250"]);
        let mut bad = base.clone();
        assert!(set_field(&mut bad, "x.y", toml::Value::Integer(2)).is_err());
    }
}
