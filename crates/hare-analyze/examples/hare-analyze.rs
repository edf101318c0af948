//! The analysis subcommands on their own (the same as `hare-lab analyze | plot | compare |
//! bench-analyze`).

use clap::Parser;

#[derive(Parser)]
#[command(name = "hare-analyze", about = "hare's qlog and report analysis")]
struct Cli {
    #[command(subcommand)]
    cmd: hare_analyze::cli::AnalyzeCommand,
}

fn main() -> anyhow::Result<()> {
    hare_analyze::cli::run(Cli::parse().cmd)
}
