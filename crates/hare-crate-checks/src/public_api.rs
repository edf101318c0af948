//! A crate's public surface against its committed list (`public-api.txt` beside its
//! `Cargo.toml`), so that every change to what users can reach shows in review.
//!
//! The list comes from rustdoc's JSON output, which is unstable: it runs with
//! `RUSTC_BOOTSTRAP=1` on the stable toolchain, in a target directory of its own (no lock
//! shared with the running build). Regenerate after a deliberate change by running the
//! crate's test with `HARE_BLESS=1`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::listing::Lister;

/// The environment variable that rewrites the committed list instead of comparing.
pub const BLESS: &str = "HARE_BLESS";

/// Which crate to list and how to build its documentation.
#[derive(Debug, Clone)]
pub struct Crate<'a> {
    /// The folder of its `Cargo.toml` (a test's `env!("CARGO_MANIFEST_DIR")`).
    pub manifest_dir: &'a Path,
    /// Its library name as Rust writes it (`hare_cc`).
    pub lib_name: &'a str,
    /// Features to document with (`serde`), comma-separated as cargo takes them; "" for none.
    pub features: &'a str,
    /// A scratch folder for rustdoc's own build (a test's `env!("CARGO_TARGET_TMPDIR")`).
    pub scratch: &'a Path,
}

/// Compare the crate's public API with its committed `public-api.txt` (or write it under
/// [`BLESS`]); `Err` holds the difference as `-`/`+` lines and how to regenerate.
pub fn check(krate: &Crate<'_>) -> Result<(), String> {
    let actual = listing(krate)?;
    let committed_path = krate.manifest_dir.join("public-api.txt");
    if std::env::var_os(BLESS).is_some() {
        return std::fs::write(&committed_path, &actual)
            .map_err(|e| format!("writing {}: {e}", committed_path.display()));
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    if committed == actual {
        return Ok(());
    }
    let old: BTreeSet<&str> = committed.lines().collect();
    let new: BTreeSet<&str> = actual.lines().collect();
    let mut diff = String::new();
    for line in old.difference(&new) {
        diff.push_str(&format!("- {line}\n"));
    }
    for line in new.difference(&old) {
        diff.push_str(&format!("+ {line}\n"));
    }
    Err(format!(
        "the public API of {} changed (- committed, + now):\n{diff}\nIf deliberate, regenerate \
         {} by running this test with {BLESS}=1",
        krate.lib_name,
        committed_path.display()
    ))
}

/// The crate's public items, one per line, sorted.
pub fn listing(krate: &Crate<'_>) -> Result<String, String> {
    let json = rustdoc_json(krate)?;
    let doc: Value =
        serde_json::from_str(&json).map_err(|e| format!("rustdoc's JSON does not parse: {e}"))?;
    let mut lister = Lister {
        doc: &doc,
        root: krate.lib_name,
        lines: BTreeSet::new(),
        uses: Vec::new(),
    };
    let root = doc["root"].clone();
    lister.module(&root, krate.lib_name);
    lister.inline_private_reexports();
    let lines: Vec<&str> = lister.lines.iter().map(String::as_str).collect();
    Ok(lines.join("\n") + "\n")
}

/// Run rustdoc's JSON backend on the library and read the file it writes.
fn rustdoc_json(krate: &Crate<'_>) -> Result<String, String> {
    let target: PathBuf = krate.scratch.join("public-api");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(krate.manifest_dir)
        .env("RUSTC_BOOTSTRAP", "1")
        .env_remove("RUSTDOCFLAGS")
        .args(["rustdoc", "--quiet", "--lib"]);
    if !krate.features.is_empty() {
        cmd.args(["--features", krate.features]);
    }
    let output = cmd
        .arg("--target-dir")
        .arg(&target)
        .args(["--", "-Z", "unstable-options", "--output-format", "json"])
        .output()
        .map_err(|e| format!("running cargo rustdoc: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo rustdoc failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let file = target.join(format!("doc/{}.json", krate.lib_name));
    std::fs::read_to_string(&file).map_err(|e| format!("reading {}: {e}", file.display()))
}
