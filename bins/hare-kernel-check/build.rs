//! Compiles `bpf/tcp_probe.bpf.c` with clang into `$OUT_DIR/tcp_probe.bpf.o` (BPF target,
//! -O2 -g: the BTF and CO-RE relocations the loader fits to the running kernel). The object
//! is never committed: it is built from the source here.

use std::path::PathBuf;
use std::process::Command;

const SOURCE: &str = "bpf/tcp_probe.bpf.c";

fn main() {
    println!("cargo:rerun-if-changed={SOURCE}");
    println!("cargo:rerun-if-env-changed=CLANG");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("tcp_probe.bpf.o");
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".into());
    let status = Command::new(&clang)
        .args([
            "-target", "bpf", "-O2", "-g", "-Wall", "-Werror", "-c", SOURCE, "-o",
        ])
        .arg(&out)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => fail(&format!("{clang} failed to compile {SOURCE} ({s})")),
        Err(_) => fail(
            "hare-kernel-check needs clang to build its BPF program: install clang (Debian: apt-get install clang)",
        ),
    }
}

/// One line saying why, then a failed build.
fn fail(why: &str) -> ! {
    eprintln!("error: {why}");
    std::process::exit(1);
}
