//! The emulator's `hare-lab` subcommands as a standalone binary, for testing before (and
//! besides) hare-lab: `cargo run -p hare-emu --example hare-emu -- validate-emulator`.

use clap::Parser;

#[derive(Debug, Parser)]
#[command(name = "hare-emu", about = "hare's real-time link emulator")]
struct Cli {
    #[command(subcommand)]
    command: hare_emu::cli::EmuCommand,
}

fn main() -> std::process::ExitCode {
    match hare_emu::cli::run(Cli::parse().command) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hare-emu: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
