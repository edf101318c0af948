//! `hare-lab`: replay the netdev threads in virtual time, run scenario files, benchmark the
//! simulator.

use anyhow::Result;
use clap::{Parser, Subcommand};
use hare_lab::commands::{self, Catalog, ReplayOptions, SimOptions};
use hare_lab::scenario;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "hare-lab",
    version,
    about = "hare's testbed: replay the 2007/2011 netdev threads in virtual time, run scenarios, benchmark the simulator"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    /// Replay thread runs in the simulator: the thread's nuttcp rows beside hare's, a summary
    /// table, plots, reports. Without ids: the 2007 headline plus modern CUBIC.
    Replay {
        /// Thread run ids (see `hare-lab list`), scenario names, or `all`.
        #[arg(value_name = "RUN-ID")]
        ids: Vec<String>,
        /// Output directory for reports, traces and plots.
        #[arg(
            short = 'o',
            long = "out",
            value_name = "DIR",
            default_value = "out/replay"
        )]
        out: PathBuf,
        /// Write one JSON object per run (JSON lines) to FILE, or to stdout with `-` (the text
        /// then goes to stderr).
        #[arg(long, value_name = "FILE|-")]
        json: Option<String>,
        /// Simulations to run in parallel.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
        jobs: u16,
        /// Cap every run at this many simulated seconds (a quick look; the thread's durations
        /// otherwise).
        #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
        max_seconds: Option<u64>,
        /// Scenario directory (default: testbed/scenarios).
        #[arg(long, value_name = "DIR")]
        scenarios: Option<PathBuf>,
        /// Do not draw plots.
        #[arg(long)]
        no_plots: bool,
    },
    /// Run every controller x repetition of a scenario file; a file of `[[flows]]` runs
    /// its flows together through one bottleneck (per-flow lines, a summary with Jain's
    /// index and convergence times).
    Sim {
        /// The scenario file.
        #[arg(value_name = "SCENARIO.toml")]
        scenario: PathBuf,
        /// Write reports, traces and plots into DIR.
        #[arg(short = 'o', long = "out", value_name = "DIR")]
        out: Option<PathBuf>,
        /// Print one JSON object per run (JSON lines) instead of text.
        #[arg(long)]
        json: bool,
        /// Simulations to run in parallel.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
        jobs: u16,
        /// Write qlog files of every flow's endpoints into the `--out` directory.
        #[arg(long, requires = "out")]
        qlog: bool,
    },
    /// Run a `[[flows]]` scenario's flows at once through the real-time namespace emulator
    /// (root): each a hare-send / hare-recv pair, or kernel TCP for `tcp:ALG`; per-flow
    /// lines, the summary and the emulator's VALID/INVALID verdict.
    Compete {
        /// The scenario file.
        #[arg(value_name = "SCENARIO.toml")]
        scenario: PathBuf,
        /// Reports and logs (default out/compete).
        #[arg(
            short = 'o',
            long = "out",
            value_name = "DIR",
            default_value = "out/compete"
        )]
        out: PathBuf,
        /// Print one JSON summary instead of text.
        #[arg(long)]
        json: bool,
        /// Directory holding hare-send and hare-recv.
        #[arg(long, value_name = "DIR")]
        bin_dir: Option<PathBuf>,
    },
    /// Run a sweep file's grid of scenario variants (or one shard of it), writing JSON lines
    /// per run; `sweep merge DIR...` combines shards into one table, heatmaps and a page.
    #[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
    Sweep {
        #[command(subcommand)]
        merge: Option<SweepCommand>,
        /// The sweep file (`kind = "sweep"`).
        #[arg(value_name = "SWEEP.toml", required = true)]
        file: Option<PathBuf>,
        /// Run shard I of N (I from 0: `--shard 2/4`, or `--shard "$JOB_COMPLETION_INDEX/4"`):
        /// a diagonal slice of the grid, so each shard holds every value of every axis as far
        /// as its number of cells allows.
        #[arg(long, value_name = "I/N", default_value = "0/1")]
        shard: hare_lab::sweep::Shard,
        /// Simulations to run in parallel.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
        jobs: u16,
        /// Output directory (default out/sweep/<name>); the shard writes shard-I-of-N.jsonl.
        #[arg(short = 'o', long = "out", value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
    /// List the thread runs and the scenarios that replay them.
    List {
        /// Scenario directory (default: testbed/scenarios).
        #[arg(long, value_name = "DIR")]
        scenarios: Option<PathBuf>,
    },
    /// Check every scenario file of a directory (parse and validate).
    Check {
        /// Scenario directory or files (default: testbed/scenarios).
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
    /// The real-time emulator (crates/hare-emu): `emulate`, `exec`, `validate-emulator`,
    /// `kernel-vs-hare`, `transfer`.
    #[command(flatten)]
    Emu(hare_emu::cli::EmuCommand),
    /// Analysis of reports and qlog (crates/hare-analyze): `analyze`, `plot`, `compare`,
    /// `bench-analyze`.
    #[command(flatten)]
    Analyze(hare_analyze::cli::AnalyzeCommand),
}

#[derive(Subcommand, Debug)]
enum SweepCommand {
    /// Merge the shard outputs of one sweep into table.txt, table.csv, heatmaps and
    /// index.html; refuses shards of different sweep definitions.
    Merge {
        /// Directories holding shard-*.jsonl files.
        #[arg(value_name = "DIR", required = true)]
        dirs: Vec<PathBuf>,
        /// Where to write the merged table, heatmaps and page.
        #[arg(
            short = 'o',
            long = "out",
            value_name = "DIR",
            default_value = "out/sweep/merged"
        )]
        out: PathBuf,
        /// Merge even when cells are missing (shards not merged, still running or failed to
        /// write): the table and page list them. Without it a missing cell is an error.
        #[arg(long)]
        allow_missing: bool,
    },
}

#[derive(Subcommand, Debug)]
enum BenchWhat {
    /// Simulated seconds per wall second at 1 and 10 Gbit/s x 80 ms, MTU 1452 and 8952, and
    /// peak memory: the current engine against the real-crypto single-thread one, run back
    /// to back, and against the targets.
    Sim {
        /// Simulated seconds per case.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=600))]
        seconds: u64,
        /// Exit with status 1 when a target is missed.
        #[arg(long)]
        strict: bool,
    },
    /// What sharing a link costs: N CUBIC flows through 1 Gbit/s x 40 ms against one flow
    /// alone, back to back: the wall-time ratio (target <= 1.5x) and memory per flow.
    Flows {
        /// Flows sharing the link.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(2..=64))]
        flows: u32,
        /// Simulated seconds per run.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=600))]
        seconds: u64,
        /// Exit with status 1 when the target is missed.
        #[arg(long)]
        strict: bool,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    // Bars are drawn on stderr, and only for a person watching: hidden when stdout is not a
    // terminal (piped into a file or another program) or stderr is not one.
    let progress = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    match cli.command {
        Command::Replay {
            ids,
            out,
            json,
            jobs,
            max_seconds,
            scenarios,
            no_plots,
        } => {
            let to_stdout_json = json.as_deref() == Some("-");
            let opts = ReplayOptions {
                ids,
                out_dir: out,
                json,
                jobs: usize::from(jobs),
                scenarios: scenarios.unwrap_or_else(scenario::default_dir),
                plots: !no_plots,
                duration_cap: max_seconds.map(Duration::from_secs),
                progress,
            };
            if to_stdout_json {
                commands::replay(&opts, &mut std::io::stderr().lock())?;
            } else {
                commands::replay(&opts, &mut std::io::stdout().lock())?;
            }
        }
        Command::Sim {
            scenario,
            out,
            json,
            jobs,
            qlog,
        } => {
            let opts = SimOptions {
                scenario,
                out_dir: out,
                json,
                jobs: usize::from(jobs),
                progress,
                qlog,
            };
            commands::sim(&opts, &mut std::io::stdout().lock())?;
        }
        Command::Sweep {
            merge:
                Some(SweepCommand::Merge {
                    dirs,
                    out,
                    allow_missing,
                }),
            ..
        } => {
            hare_lab::sweep::merge_command(
                &dirs,
                &out,
                allow_missing,
                &mut std::io::stdout().lock(),
            )?;
        }
        Command::Sweep {
            merge: None,
            file,
            shard,
            jobs,
            out,
        } => {
            let Some(file) = file else {
                anyhow::bail!("a sweep file is required: hare-lab sweep SWEEP.toml");
            };
            let opts = hare_lab::sweep::SweepOptions {
                file,
                out_dir: out,
                shard,
                jobs: usize::from(jobs),
                progress,
            };
            let (rows, _) = hare_lab::sweep::run_sweep(&opts, &mut std::io::stdout().lock())?;
            let failed = rows.iter().filter(|r| r.error.is_some()).count();
            if failed > 0 {
                anyhow::bail!(
                    "{failed} of {} run(s) failed (their rows carry the error)",
                    rows.len()
                );
            }
        }
        Command::Bench {
            what: BenchWhat::Sim { seconds, strict },
        } => {
            let lines = commands::bench_sim(seconds, progress, &mut std::io::stdout().lock())?;
            if strict && lines.iter().any(|l| !l.pass()) {
                anyhow::bail!("a benchmark target was missed");
            }
        }
        Command::Bench {
            what:
                BenchWhat::Flows {
                    flows,
                    seconds,
                    strict,
                },
        } => {
            let b =
                hare_lab::flows::bench::bench_flows(flows, seconds, &mut std::io::stdout().lock())?;
            if strict && b.ratio() > hare_lab::flows::bench::TARGET_RATIO {
                anyhow::bail!("the wall-time target was missed");
            }
        }
        Command::Compete {
            scenario,
            out,
            json,
            bin_dir,
        } => {
            let opts = hare_lab::flows::compete::CompeteOptions {
                scenario,
                out_dir: out,
                json,
                bin_dir,
            };
            let sum = hare_lab::flows::compete::compete(&opts, &mut std::io::stdout().lock())?;
            if sum.valid != Some(true) {
                anyhow::bail!("the run is INVALID: {}", sum.invalid_reasons.join("; "));
            }
        }
        Command::List { scenarios } => {
            let dir = scenarios.unwrap_or_else(scenario::default_dir);
            let catalog = Catalog::load(&dir)?;
            println!("{:<40} {:<34} controller", "thread run", "scenario");
            for r in catalog.threads.runs() {
                match catalog
                    .jobs_for(&r.id, false)
                    .and_then(|j| j.into_iter().next())
                {
                    Some(j) => println!(
                        "{:<40} {:<34} {}",
                        r.id, j.scenario.file.name, j.plan.controller
                    ),
                    None => println!("{:<40} {:<34}", r.id, "(none)"),
                }
            }
            println!("\nscenarios in {}:", dir.display());
            for s in &catalog.scenarios {
                println!("  {:<34} {}", s.file.name, s.file.description);
            }
        }
        Command::Emu(cmd) => hare_emu::cli::run(cmd)?,
        Command::Analyze(cmd) => hare_analyze::cli::run(cmd)?,
        Command::Check { paths } => {
            let threads = hare_lab::thread_data::ThreadData::embedded()?;
            let paths = if paths.is_empty() {
                vec![scenario::default_dir()]
            } else {
                paths
            };
            let mut n = 0;
            for p in paths {
                let files = if p.is_dir() {
                    scenario::scenario_files(&p)?
                } else {
                    vec![p]
                };
                for f in files {
                    scenario::Scenario::load(&f, &threads)?;
                    n += 1;
                }
            }
            println!("{n} scenario file(s) OK");
        }
    }
    Ok(())
}
