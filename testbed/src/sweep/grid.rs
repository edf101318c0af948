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
//! after all other fields are set), and the flows axes `flows.count` and `flows.rtt_ratio`
//! (the cell's one controller becomes that many `[[flows]]` sharing the bottleneck,
//! [`super::flows_axes`]).

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
    let mut flows = super::flows_axes::FlowsAxes::default();
    for v in values {
        for (field, value) in &v.set {
            if flows.take(field, value)? {
                continue;
            }
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
    flows.apply(&mut t)?;
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

/// A `--shard I/N` slice of a sweep's cells. Which cells a shard holds is decided by
/// [`Sweep::shard_cells`] so that every shard is a mix of the grid's corners, never one
/// value of an axis.
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
}

/// Grids up to this many cells may be dealt by the greedy pick of [`shard_of_cells`] (its
/// cost grows with the square of the cells).
const GREEDY_MAX_CELLS: usize = 4096;

/// The coordinates (value index per axis, first axis slowest) of cell `index`.
fn coords(mut index: usize, dims: &[usize]) -> Vec<usize> {
    let mut c = vec![0; dims.len()];
    for (ai, &d) in dims.iter().enumerate().rev() {
        c[ai] = index % d;
        index /= d;
    }
    c
}

/// The diagonal stride: cell `c` goes to shard `(c_0 + c_1 + ...) mod N`. Neighbours along
/// any axis land in different shards, so a shard holds every value of an axis as soon as
/// it holds as many cells (where a plain index modulo N gives a shard one value of the last
/// axis whenever N divides its length).
fn diagonal(dims: &[usize], cells: usize, count: usize) -> Vec<usize> {
    (0..cells)
        .map(|i| coords(i, dims).iter().sum::<usize>() % count)
        .collect()
}

/// The greedy deal: shards take turns, each taking the remaining cell that brings it the
/// most axis values it lacks (the lowest index among equals). Sizes differ by at most one.
fn greedy(dims: &[usize], cells: usize, count: usize) -> Vec<usize> {
    let all: Vec<Vec<usize>> = (0..cells).map(|i| coords(i, dims)).collect();
    let mut has =
        vec![vec![vec![false; dims.iter().copied().max().unwrap_or(0)]; dims.len()]; count];
    let mut left: Vec<usize> = (0..cells).collect();
    let mut out = vec![0; cells];
    let mut shard = 0;
    while !left.is_empty() {
        let gain = |i: usize| {
            all[i]
                .iter()
                .enumerate()
                .filter(|&(a, &v)| !has[shard][a][v])
                .count()
        };
        // Bounded: `left` is not empty.
        let mut best = 0;
        for k in 1..left.len() {
            if gain(left[k]) > gain(left[best]) {
                best = k;
            }
        }
        let cell = left.remove(best);
        out[cell] = shard;
        for (a, &v) in all[cell].iter().enumerate() {
            has[shard][a][v] = true;
        }
        shard = (shard + 1) % count;
    }
    out
}

/// How far an assignment falls short: per shard and axis, the values the shard could hold
/// (as many as its cells, at most the axis's length) but does not; and the spread of the
/// shard sizes.
fn shortfall(dims: &[usize], assign: &[usize], count: usize) -> (usize, usize) {
    let mut size = vec![0usize; count];
    let mut seen = vec![vec![std::collections::BTreeSet::new(); dims.len()]; count];
    for (i, &s) in assign.iter().enumerate() {
        size[s] += 1;
        for (a, v) in coords(i, dims).into_iter().enumerate() {
            seen[s][a].insert(v);
        }
    }
    let missing = (0..count)
        .map(|s| {
            dims.iter()
                .enumerate()
                .map(|(a, &d)| size[s].min(d) - seen[s][a].len())
                .sum::<usize>()
        })
        .sum();
    let spread = size.iter().max().unwrap_or(&0) - size.iter().min().unwrap_or(&0);
    (missing, spread)
}

/// The shard of every cell of a grid with axes of `dims` values, split `count` ways: the
/// diagonal stride when it gives shards within one cell of each other in size and every
/// value of every axis as far as a shard's size allows; else the greedy deal when it does
/// better (grids up to [`GREEDY_MAX_CELLS`]). Deterministic: every shard of a sweep computes
/// the same split on its own.
pub fn shard_of_cells(dims: &[usize], count: usize) -> Vec<usize> {
    let cells = dims.iter().product::<usize>();
    let count = count.max(1);
    let diag = diagonal(dims, cells, count);
    let (missing, spread) = shortfall(dims, &diag, count);
    if (missing == 0 && spread <= 1) || cells > GREEDY_MAX_CELLS {
        return diag;
    }
    let greedy = greedy(dims, cells, count);
    let (g_missing, _) = shortfall(dims, &greedy, count);
    // The greedy deal is always balanced; the diagonal wins ties.
    if spread <= 1 && missing <= g_missing {
        diag
    } else {
        greedy
    }
}

impl Sweep {
    /// The lengths of the axes.
    pub fn dims(&self) -> Vec<usize> {
        self.axes.iter().map(|a| a.values.len()).collect()
    }

    /// The indices of the cells `shard` runs, in index order (see [`shard_of_cells`]).
    pub fn shard_cells(&self, shard: Shard) -> Vec<usize> {
        shard_of_cells(&self.dims(), shard.count)
            .into_iter()
            .enumerate()
            .filter(|&(_, s)| s == shard.index)
            .map(|(i, _)| i)
            .collect()
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
        assert!("4/4".parse::<Shard>().is_err());
        assert!("0/0".parse::<Shard>().is_err());
        assert!("x".parse::<Shard>().is_err());
        assert_eq!(shard_of_cells(&[4, 2, 2, 2], 1), vec![0; 32]);
    }

    /// The shards of `dims` split `count` ways, as lists of cell indices.
    fn split(dims: &[usize], count: usize) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); count];
        for (i, s) in shard_of_cells(dims, count).into_iter().enumerate() {
            out[s].push(i);
        }
        out
    }

    /// Whether every shard holds every value of every axis as far as its size allows.
    fn mixed(dims: &[usize], count: usize) -> bool {
        let (missing, spread) = shortfall(dims, &shard_of_cells(dims, count), count);
        missing == 0 && spread <= 1
    }

    #[test]
    fn shards_hold_every_value_of_every_axis() {
        // The 2011 HyStart sweep: slow start (4) x HZ (2) x RTT (2) x buffer (2), buffer
        // fastest. Index modulo 2 gave shard 0 every buffer=2500 cell and shard 1 every
        // buffer=6000 one; the diagonal gives each half of both.
        let dims = [4, 2, 2, 2];
        let two = split(&dims, 2);
        assert_eq!(
            two[0],
            [0, 3, 5, 6, 9, 10, 12, 15, 16, 19, 21, 22, 25, 26, 28, 31]
        );
        assert_eq!(
            two[1],
            [1, 2, 4, 7, 8, 11, 13, 14, 17, 18, 20, 23, 24, 27, 29, 30]
        );
        let four = split(&dims, 4);
        assert_eq!(
            four,
            [
                [0, 15, 19, 21, 22, 25, 26, 28],
                [1, 2, 4, 8, 23, 27, 29, 30],
                [3, 5, 6, 9, 10, 12, 16, 31],
                [7, 11, 13, 14, 17, 18, 20, 24],
            ]
        );
        for shards in [&two, &four] {
            for cells in shards.iter() {
                for (a, &d) in dims.iter().enumerate() {
                    let values: std::collections::BTreeSet<usize> =
                        cells.iter().map(|&i| coords(i, &dims)[a]).collect();
                    assert_eq!(values.len(), d, "axis {a} in {cells:?}");
                }
            }
        }
        assert!(four.iter().all(|c| c.len() == 8), "{four:?}");
        // Other shapes, up to one cell per shard.
        for dims in [
            &[3, 3][..],
            &[2, 3, 4],
            &[2, 2, 2],
            &[5, 2],
            &[6],
            &[3, 2, 2],
        ] {
            let n: usize = dims.iter().product();
            for count in [2, 3, 4] {
                assert!(mixed(dims, count), "{dims:?} / {count}");
                let shards = split(dims, count);
                let mut all: Vec<usize> = shards.concat();
                all.sort_unstable();
                assert_eq!(all, (0..n).collect::<Vec<_>>(), "every cell once");
            }
        }
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
