//! Runs a kernel-vs-hare plan, keeps every run's figures, and builds the comparison table.
//! Invalid runs (emulator self-check failed, a binary failed) are kept in `results.json`
//! with their reasons and left out of the medians.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::metrics::{payload_mbps, run_metrics, RunMetrics};
use super::plot::PlottedRun;
use super::transfer::{run_transfer, TransferSpec};
use super::{Impl, KvhScenario, RunPlan};
use crate::namespace::NamespaceConfig;

/// One run's outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    /// The plan.
    pub plan: RunPlan,
    /// Its figures (`None` when no report came back).
    pub metrics: Option<RunMetrics>,
    /// Valid by every check.
    pub valid: bool,
    /// Why not.
    pub invalid_reasons: Vec<String>,
    /// The emulator's one-line self-check.
    pub emulator: String,
    /// The report file.
    pub report: PathBuf,
}

/// Options of a scenario run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Output directory (`runs/`, `results.json`, `table.md`, plots).
    pub out: PathBuf,
    /// Directory of hare-send / hare-recv.
    pub bin_dir: PathBuf,
    /// Only runs whose id contains every one of these.
    pub only: Vec<String>,
    /// Namespace instance name.
    pub instance: String,
    /// Pin the emulator thread.
    pub pin_cpu: Option<usize>,
    /// Run again the runs `results.json` holds as invalid (their old result is replaced).
    pub retry_invalid: bool,
}

/// Runs the plan (skipping runs already in `results.json`), saving after each run.
pub fn run_plan(s: &KvhScenario, plan: &[RunPlan], opts: &RunOptions) -> Result<Vec<RunResult>> {
    let results_path = opts.out.join("results.json");
    let mut results: Vec<RunResult> = match std::fs::read_to_string(&results_path) {
        Ok(t) => serde_json::from_str(&t)
            .with_context(|| format!("parsing {}", results_path.display()))?,
        Err(_) => Vec::new(),
    };
    let todo: Vec<&RunPlan> = plan
        .iter()
        .filter(|p| opts.only.iter().all(|o| p.id.contains(o.as_str())))
        .filter(|p| {
            !results
                .iter()
                .any(|r| r.plan.id == p.id && (r.valid || !opts.retry_invalid))
        })
        .collect();
    let total = todo.len();
    for (i, p) in todo.into_iter().enumerate() {
        if crate::signals::interrupted() {
            break;
        }
        eprintln!("[{}/{total}] {}", i + 1, p.id);
        let r = run_one(s, p, opts)?;
        eprintln!(
            "    {} | {}",
            if r.valid { "valid" } else { "INVALID" },
            r.emulator
        );
        if let Some(m) = &r.metrics {
            eprintln!(
                "    exit cwnd {:?} ({:?}), t90 {:?} s, losses {}",
                m.exit_cwnd, m.exit_reason, m.t90_s, m.losses
            );
        }
        results.retain(|old| old.plan.id != r.plan.id);
        results.push(r);
        std::fs::write(&results_path, serde_json::to_string_pretty(&results)?)
            .with_context(|| format!("writing {}", results_path.display()))?;
    }
    Ok(results)
}

fn run_one(s: &KvhScenario, p: &RunPlan, opts: &RunOptions) -> Result<RunResult> {
    let mut ns = NamespaceConfig::new(&opts.instance, p.path.config());
    ns.mtu = s.mtu;
    ns.pin_cpu = opts.pin_cpu;
    let tcp = p.implementation == Impl::Kernel;
    let duration = s.duration.0 as f64 / 1e9;
    let spec = TransferSpec {
        name: p.id.clone(),
        tcp,
        cc: p.cc.clone(),
        pacing_rate: p.pacing_rate,
        kernel_params: p.kernel_params.clone(),
        seconds: Some(duration),
        bytes: None,
        files: Vec::new(),
        window: (!tcp).then(|| s.quic_window.0.to_string()),
        interval: s.interval.0 as f64 / 1e9,
        timeout_s: duration + 60.0,
        bin_dir: opts.bin_dir.clone(),
        work_dir: opts.out.join("runs"),
        echo: false,
        connections: 1,
    };
    let o = run_transfer(&ns, &spec)?;
    let cap = payload_mbps(p.path.rate.0, s.mtu, tcp);
    let mut metrics = o.run.as_ref().map(|r| run_metrics(r, cap));
    // Kernel TCP publishes no controller events: its reductions are the kernel's counters.
    if let (Some(m), Some(r)) = (metrics.as_mut(), o.tcp_reductions) {
        m.window_reductions = u32::try_from(r.total()).unwrap_or(u32::MAX);
    }
    let mut reasons: Vec<String> = o
        .run
        .as_ref()
        .and_then(|r| r.summary.as_ref())
        .map(|s| s.invalid_reasons.clone())
        .unwrap_or_else(|| vec!["no report from hare-send".into()]);
    if !o.emulator.valid {
        for r in &o.emulator.invalid_reasons {
            if !reasons.contains(r) {
                reasons.push(r.clone());
            }
        }
    }
    Ok(RunResult {
        plan: p.clone(),
        metrics,
        valid: o.valid(),
        invalid_reasons: reasons,
        emulator: o.emulator.line(),
        report: o.report_path,
    })
}

/// Recomputes every result's figures from its report file (after a change of metric
/// definitions); results whose report cannot be read keep their figures.
pub fn refresh_metrics(s: &KvhScenario, results: &mut [RunResult]) {
    for r in results.iter_mut() {
        let Ok(f) = std::fs::File::open(&r.report) else {
            continue;
        };
        let name = r.report.display().to_string();
        if let Ok(o) = hare_report::jsonl::read_run(std::io::BufReader::new(f), &name) {
            let tcp = r.plan.implementation == Impl::Kernel;
            let mut m = run_metrics(&o.run, payload_mbps(r.plan.path.rate.0, s.mtu, tcp));
            if tcp {
                // The kernel's counters were read during the run; the report cannot redo them.
                m.window_reductions = r.metrics.as_ref().map_or(0, |old| old.window_reductions);
            }
            r.metrics = Some(m);
        }
    }
}

/// Median of a list (mean of the two middle values when even); `None` when empty.
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// One comparison row: a path, a knob, a pacing, kernel vs hare medians over valid runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompareRow {
    /// Path name.
    pub path: String,
    /// Knob name.
    pub knob: String,
    /// Paced or not.
    pub paced: bool,
    /// Valid kernel runs / all kernel runs.
    pub kernel_runs: (usize, usize),
    /// Valid hare runs / all hare runs.
    pub hare_runs: (usize, usize),
    /// Median slow-start exit cwnd, kernel.
    pub kernel_exit_cwnd: Option<f64>,
    /// Median slow-start exit cwnd, hare.
    pub hare_exit_cwnd: Option<f64>,
    /// Median time to 90%, kernel.
    pub kernel_t90: Option<f64>,
    /// Median time to 90%, hare.
    pub hare_t90: Option<f64>,
    /// Exit reasons seen (kernel; hare).
    pub reasons: (String, String),
    /// Median losses (kernel; hare).
    pub losses: (Option<f64>, Option<f64>),
}

/// Relative difference of hare from kernel.
pub fn rel(kernel: Option<f64>, hare: Option<f64>) -> Option<f64> {
    match (kernel, hare) {
        (Some(k), Some(h)) if k > 0.0 => Some((h - k) / k),
        _ => None,
    }
}

impl CompareRow {
    /// True when both medians exist and are within 25% of the kernel's.
    pub fn within_25pct(&self) -> bool {
        [
            rel(self.kernel_exit_cwnd, self.hare_exit_cwnd),
            rel(self.kernel_t90, self.hare_t90),
        ]
        .iter()
        .all(|r| r.is_some_and(|x| x.abs() <= 0.25))
    }
}

fn reasons_of(rs: &[&RunResult]) -> String {
    let mut m: BTreeMap<String, usize> = BTreeMap::new();
    for r in rs {
        let k = r
            .metrics
            .as_ref()
            .and_then(|m| m.exit_reason.clone())
            .unwrap_or_else(|| "none".into());
        *m.entry(k).or_insert(0) += 1;
    }
    m.iter()
        .map(|(k, n)| format!("{k} x{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Groups results into comparison rows.
pub fn compare(results: &[RunResult]) -> Vec<CompareRow> {
    let mut keys: Vec<(String, String, bool)> = results
        .iter()
        .map(|r| (r.plan.path.name.clone(), r.plan.knob.clone(), r.plan.paced))
        .collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for (path, knob, paced) in keys {
        let of = |imp: Impl| -> Vec<&RunResult> {
            results
                .iter()
                .filter(|r| {
                    r.plan.path.name == path
                        && r.plan.knob == knob
                        && r.plan.paced == paced
                        && r.plan.implementation == imp
                })
                .collect()
        };
        let (k, h) = (of(Impl::Kernel), of(Impl::Hare));
        let valid = |v: &[&RunResult]| -> Vec<RunMetrics> {
            v.iter()
                .filter(|r| r.valid)
                .filter_map(|r| r.metrics.clone())
                .collect()
        };
        let (kv, hv) = (valid(&k), valid(&h));
        let med = |v: &[RunMetrics], f: &dyn Fn(&RunMetrics) -> Option<f64>| {
            median(v.iter().filter_map(f).collect())
        };
        out.push(CompareRow {
            kernel_runs: (kv.len(), k.len()),
            hare_runs: (hv.len(), h.len()),
            kernel_exit_cwnd: med(&kv, &|m| m.exit_cwnd.map(f64::from)),
            hare_exit_cwnd: med(&hv, &|m| m.exit_cwnd.map(f64::from)),
            kernel_t90: med(&kv, &|m| m.t90_s),
            hare_t90: med(&hv, &|m| m.t90_s),
            reasons: (
                reasons_of(&k.iter().copied().filter(|r| r.valid).collect::<Vec<_>>()),
                reasons_of(&h.iter().copied().filter(|r| r.valid).collect::<Vec<_>>()),
            ),
            losses: (
                med(&kv, &|m| Some(m.losses as f64)),
                med(&hv, &|m| Some(m.losses as f64)),
            ),
            path,
            knob,
            paced,
        });
    }
    out
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.digits$}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{:+.0}%", x * 100.0))
}

/// The comparison as a Markdown table.
pub fn table(rows: &[CompareRow]) -> String {
    let mut s = String::from(
        "| path | knob | pacing | runs k/h (valid/all) | exit cwnd kernel | exit cwnd hare | diff | t90 kernel (s) | t90 hare (s) | diff | exit reasons kernel ; hare | losses k/h | within 25% |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        s += &format!(
            "| {} | {} | {} | {}/{} , {}/{} | {} | {} | {} | {} | {} | {} | {} ; {} | {} / {} | {} |\n",
            r.path,
            r.knob,
            if r.paced { "paced" } else { "unpaced" },
            r.kernel_runs.0,
            r.kernel_runs.1,
            r.hare_runs.0,
            r.hare_runs.1,
            opt(r.kernel_exit_cwnd, 0),
            opt(r.hare_exit_cwnd, 0),
            pct(rel(r.kernel_exit_cwnd, r.hare_exit_cwnd)),
            opt(r.kernel_t90, 2),
            opt(r.hare_t90, 2),
            pct(rel(r.kernel_t90, r.hare_t90)),
            r.reasons.0,
            r.reasons.1,
            opt(r.losses.0, 0),
            opt(r.losses.1, 0),
            if r.within_25pct() { "yes" } else { "NO" }
        );
    }
    s
}

/// Writes `table.md` and the per-path plots from `results`.
pub fn write_outputs(s: &KvhScenario, results: &[RunResult], out: &Path) -> Result<Vec<PathBuf>> {
    let rows = compare(results);
    let t = table(&rows);
    let p = out.join("table.md");
    std::fs::write(&p, &t).with_context(|| format!("writing {}", p.display()))?;
    let mut files = vec![p];
    let plotted: Vec<PlottedRun<'_>> = results
        .iter()
        .filter(|r| r.valid)
        .map(|r| PlottedRun {
            plan: &r.plan,
            report: &r.report,
        })
        .collect();
    files.extend(super::plot::cwnd_plots(s, &plotted, out)?);
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_relative_differences() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
        assert_eq!(rel(Some(100.0), Some(125.0)), Some(0.25));
        let row = CompareRow {
            path: "p".into(),
            knob: "k".into(),
            paced: false,
            kernel_runs: (3, 3),
            hare_runs: (3, 3),
            kernel_exit_cwnd: Some(1000.0),
            hare_exit_cwnd: Some(1250.0),
            kernel_t90: Some(2.0),
            hare_t90: Some(1.5),
            reasons: (String::new(), String::new()),
            losses: (None, None),
        };
        assert!(row.within_25pct());
        let worse = CompareRow {
            hare_t90: Some(1.49),
            ..row
        };
        assert!(!worse.within_25pct());
    }
}
