//! The running kernel's `HZ`: `CONFIG_HZ` from its configuration (`/boot/config-RELEASE`, or
//! `/proc/config.gz` through `gzip -dc`), else measured from the records' jiffies against
//! their monotonic clock; the source is said in the trace.

use std::process::Command;

use crate::probe::Probe;

/// `uname -r`.
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into())
}

/// `CONFIG_HZ=` in a kernel configuration's text.
fn config_hz(text: &str) -> Option<u32> {
    text.lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
}

/// `CONFIG_HZ` of the running kernel and the file it came from.
fn configured() -> Option<(u32, String)> {
    let boot = format!("/boot/config-{}", kernel_release());
    if let Some(hz) = std::fs::read_to_string(&boot)
        .ok()
        .as_deref()
        .and_then(config_hz)
    {
        return Some((hz, format!("CONFIG_HZ in {boot}")));
    }
    let out = Command::new("gzip")
        .args(["-dc", "/proc/config.gz"])
        .output()
        .ok()?;
    let hz = config_hz(&String::from_utf8_lossy(&out.stdout))?;
    Some((hz, "CONFIG_HZ in /proc/config.gz".into()))
}

/// HZ measured from the records: jiffies elapsed over monotonic seconds elapsed, rounded to
/// the nearest usual value (100, 250, 300, 1000); `None` under a second of records.
pub fn measured(probes: &[Probe]) -> Option<u32> {
    let (first, last) = (probes.first()?, probes.last()?);
    let secs = last.ktime_ns.checked_sub(first.ktime_ns)? as f64 / 1e9;
    if secs < 1.0 {
        return None;
    }
    let rate = last.jiffies.checked_sub(first.jiffies)? as f64 / secs;
    [100u32, 250, 300, 1000].into_iter().min_by(|a, b| {
        (f64::from(*a) - rate)
            .abs()
            .total_cmp(&(f64::from(*b) - rate).abs())
    })
}

/// The kernel's HZ and how it was found.
pub fn kernel_hz(probes: &[Probe]) -> Option<(u32, String)> {
    let measured = measured(probes);
    match (configured(), measured) {
        (Some((hz, src)), Some(m)) if m == hz => Some((
            hz,
            format!("{src}; measured from jiffies vs the monotonic clock: {m}"),
        )),
        (Some((hz, src)), Some(m)) => Some((hz, format!("{src}; measured {m} (disagrees)"))),
        (Some(c), None) => Some(c),
        (None, Some(m)) => Some((m, "measured from jiffies vs the monotonic clock".into())),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_hz_is_read_and_jiffies_measure_it() {
        assert_eq!(
            config_hz("# x\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n"),
            Some(250)
        );
        assert_eq!(config_hz("CONFIG_HZ_250=y\n"), None);
        let p = |s: u64, j: u64| Probe {
            ktime_ns: s,
            jiffies: j,
            ..Probe::default()
        };
        assert_eq!(measured(&[p(0, 1000), p(2_000_000_000, 1501)]), Some(250));
        assert_eq!(measured(&[p(0, 0), p(500_000_000, 125)]), None);
    }
}
