//! Headless Chromium for the page tests: finding the browser, loading a page and reading
//! back the DOM its own script annotated.
//!
//! Without a Chromium binary a test says so and passes on a developer machine, but fails in
//! CI (`CI=true`), where `.ci/run` installs the `chromium` package: it must never pass there
//! by doing nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The browser, or `None` after saying why the test does nothing (never under `CI=true`).
pub fn chromium_or_skip() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "CI=true but no Chromium found: .ci/run installs the `chromium` package"
        );
        eprintln!("skipped: no Chromium on PATH (set HARE_LAB_CHROMIUM to run this test)");
    }
    found
}

/// `$HARE_LAB_CHROMIUM`, else the first of the usual binary names found on `PATH`.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HARE_LAB_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for name in [
        "chromium",
        "chromium-browser",
        "chromium-headless-shell",
        "google-chrome",
        "google-chrome-stable",
    ] {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// The value of `attr="..."` in `dom`.
pub fn attr(dom: &str, attr: &str) -> Option<u32> {
    let start = dom.find(&format!("{attr}=\""))? + attr.len() + 2;
    let end = start + dom[start..].find('"')?;
    dom[start..end].parse().ok()
}

/// The DOM of `page` after its scripts ran, in a window `width` CSS pixels wide.
pub fn dump_dom(browser: &Path, page: &Path, dir: &Path, width: u32) -> String {
    // Output into files, not pipes: the DOM with two inline plots is larger than a pipe's
    // buffer, and nothing reads it before the browser exits.
    let (dom_path, err_path) = (dir.join("dom.html"), dir.join("chromium.err"));
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--window-size={width},900"))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .stdout(std::fs::File::create(&dom_path).expect("dom file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("start chromium");
    // Bounded: a browser that hangs fails the test instead of the CI job.
    for _ in 0..600 {
        if child.try_wait().expect("wait chromium").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if child.try_wait().expect("wait chromium").is_none() {
        let _ = child.kill();
        panic!("chromium did not finish within 60 s");
    }
    let status = child.wait().expect("chromium status");
    assert!(
        status.success(),
        "chromium failed: {}",
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    std::fs::read_to_string(&dom_path).expect("dumped DOM")
}
