//! The `index.html` of `hare-lab sim -o DIR` renders in headless Chromium: the page's own
//! script counts the tables and plots the browser laid out with a non-zero size and writes
//! the counts into `<body>`, which `--dump-dom` shows.
//!
//! Without a Chromium binary the test says so and passes on a developer machine, but fails
//! in CI (`CI=true`), where `.ci/run` installs the `chromium` package: it must never pass
//! there by doing nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const SCENARIO: &str = r#"
name = "render-check"
description = "Reno on 50 Mbit/s x 20 ms for 2 s"
controllers = ["reno@linux-2.6.20"]
mtu = 1452
[path]
rtt = "20ms"
[path.forward]
rate = "50m"
queue_packets = 100
[windows]
socket_buffer = "512k"
[workload]
duration = "2s"
"#;

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
fn attr(dom: &str, attr: &str) -> Option<u32> {
    let start = dom.find(&format!("{attr}=\""))? + attr.len() + 2;
    let end = start + dom[start..].find('"')?;
    dom[start..end].parse().ok()
}

fn dump_dom(browser: &Path, page: &Path, dir: &Path) -> String {
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

#[test]
fn sim_page_renders_its_tables_and_plots_in_chromium() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "CI=true but no Chromium found: .ci/run installs the `chromium` package"
        );
        eprintln!("skipped: no Chromium on PATH (set HARE_LAB_CHROMIUM to run this test)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("hare-lab-render-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let scenario = dir.join("render.toml");
    std::fs::write(&scenario, SCENARIO).expect("write scenario");
    let out_dir = dir.join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_hare-lab"))
        .arg("sim")
        .arg(&scenario)
        .arg("-o")
        .arg(&out_dir)
        .output()
        .expect("hare-lab runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = out_dir.join("index.html");
    let html = std::fs::read_to_string(&page).expect("index.html written");
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "self-contained"
    );
    let dom = dump_dom(&browser, &page, &dir);
    assert!(
        dom.contains("render-check"),
        "the run's heading: {dom:.2000}"
    );
    assert_eq!(attr(&dom, "data-rendered-tables"), Some(1), "{dom:.2000}");
    assert_eq!(
        attr(&dom, "data-rendered-plots"),
        Some(2),
        "throughput and cwnd plots laid out: {dom:.2000}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
