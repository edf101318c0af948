//! Controller choice: hare-cc's grammar for QUIC, kernel names for `--tcp`.

use std::sync::Arc;

use hare_cc::{CcSpec, Observer};
use quinn::congestion::ControllerFactory;

use crate::error::{Result, TransferError};

/// The controller of a QUIC connection, parsed from `--cc` (hare-cc grammar: `cubic`,
/// `cubic@linux-2.6.20,hz=1000`, `bic`, `reno`, `quinn-cubic`, `quinn-newreno`, `quinn-bbr`).
#[derive(Debug, Clone, PartialEq)]
pub struct QuicCc {
    spec: CcSpec,
}

impl Default for QuicCc {
    /// hare CUBIC, profile `linux-6`.
    fn default() -> Self {
        Self {
            spec: CcSpec::default(),
        }
    }
}

impl QuicCc {
    /// Parse a `--cc` value.
    pub fn parse(s: &str) -> Result<Self> {
        s.parse::<CcSpec>()
            .map(|spec| Self { spec })
            .map_err(|e| TransferError::Usage(format!("--cc {s}: {e}")))
    }

    /// The canonical spec (`cubic@linux-6`, `quinn-cubic`, ...).
    pub fn name(&self) -> String {
        self.spec.to_string()
    }

    /// The profile, for hare's own controllers.
    pub fn profile(&self) -> Option<String> {
        self.spec.profile_name().map(str::to_owned)
    }

    /// A factory whose controllers report to `observer`, each wrapped to count which limit
    /// binds (`limits::Watched`, read by the interval sampler).
    pub(crate) fn factory(&self, observer: &Observer) -> Arc<dyn ControllerFactory + Send + Sync> {
        Arc::new(crate::limits::WatchedFactory::new(
            self.spec.factory_with_observer(observer.clone()),
        ))
    }
}

/// Kernel congestion controls hare maps `--cc` to in `--tcp` mode.
pub(crate) const KERNEL_TCP_NAMES: [&str; 3] = ["cubic", "reno", "bbr"];

/// The kernel `TCP_CONGESTION` name for a `--cc` value in `--tcp` mode: the algorithm part
/// before any `@profile` or `,key=value` (`cubic@linux-6` -> `cubic`; `quinn-bbr` -> `bbr`).
/// The kernel's profile is the running kernel, so profiles and keys are refused rather than
/// silently ignored.
pub fn kernel_tcp_name(cc: &str) -> Result<String> {
    let s = cc.trim();
    let name = s.strip_prefix("quinn-").unwrap_or(s);
    if name.contains('@') || name.contains(',') {
        return Err(TransferError::Usage(format!(
            "--cc {cc}: in --tcp mode the controller is the running kernel's; give just the \
             name ({})",
            KERNEL_TCP_NAMES.join(", ")
        )));
    }
    let name = match name {
        "newreno" => "reno",
        n => n,
    };
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(TransferError::Usage(format!(
            "--cc {cc}: not a kernel TCP name"
        )));
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_hare_cubic_linux_6() {
        assert_eq!(QuicCc::default().name(), "cubic@linux-6");
        assert_eq!(QuicCc::default().profile().as_deref(), Some("linux-6"));
        assert!(QuicCc::parse("quinn-cubic")
            .map(|c| c.profile().is_none())
            .unwrap_or(false));
        assert!(QuicCc::parse("vegas").is_err());
    }

    #[test]
    fn kernel_names() {
        assert_eq!(kernel_tcp_name("cubic").ok().as_deref(), Some("cubic"));
        assert_eq!(kernel_tcp_name("quinn-bbr").ok().as_deref(), Some("bbr"));
        assert_eq!(
            kernel_tcp_name("quinn-newreno").ok().as_deref(),
            Some("reno")
        );
        assert!(kernel_tcp_name("cubic@linux-2.6.20").is_err());
        assert!(kernel_tcp_name("a/b").is_err());
    }
}
