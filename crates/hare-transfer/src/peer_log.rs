//! Log lines an operator can trust: one line per event, the peer first, anything a peer sent
//! escaped (no control characters, so no forged lines and no terminal escape sequences) and
//! truncated, and repeats of one kind of event rate-limited with a count of what was left out.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Longest peer-supplied text written into one log line, in characters.
pub(crate) const MAX_LOGGED: usize = 300;
/// Window of the rate limit.
pub(crate) const LOG_WINDOW: Duration = Duration::from_secs(10);
/// Lines of one kind written per window; the rest are counted.
pub(crate) const LOG_BURST: u32 = 10;

/// `s` with every control character (C0, DEL, C1: newlines, ESC, ...) and the Unicode
/// direction overrides written as `\u{..}` escapes, cut to `max` characters.
pub(crate) fn clean(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max + 16));
    for (n, c) in s.chars().enumerate() {
        if n == max {
            let _ = write!(out, "... ({} bytes in all)", s.len());
            break;
        }
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if c.is_control() || bidi {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// The line for one event: `hare-recv: PEER: WHAT: DETAIL` with the detail cleaned.
pub(crate) fn line(peer: SocketAddr, what: &str, detail: &str) -> String {
    format!("hare-recv: {peer}: {what}: {}", clean(detail, MAX_LOGGED))
}

#[derive(Debug)]
struct Window {
    start: Instant,
    written: u32,
    dropped: u64,
}

/// Decides, per kind of event, whether a line is written now; returns the line to write
/// first about lines left out in the window that just ended, if any.
#[derive(Debug, Default)]
pub(crate) struct Limiter {
    kinds: HashMap<&'static str, Window>,
}

impl Limiter {
    /// `(write this one, note about earlier dropped lines)`.
    pub(crate) fn admit(&mut self, kind: &'static str, now: Instant) -> (bool, Option<String>) {
        let w = self.kinds.entry(kind).or_insert(Window {
            start: now,
            written: 0,
            dropped: 0,
        });
        let mut note = None;
        if now.duration_since(w.start) >= LOG_WINDOW {
            if w.dropped > 0 {
                note = Some(format!(
                    "hare-recv: {} more `{kind}` events in {} s not shown",
                    w.dropped,
                    LOG_WINDOW.as_secs()
                ));
            }
            *w = Window {
                start: now,
                written: 0,
                dropped: 0,
            };
        }
        if w.written < LOG_BURST {
            w.written += 1;
            (true, note)
        } else {
            w.dropped += 1;
            (false, note)
        }
    }
}

/// Write `text` (already one clean line) through `emit`, subject to the process-wide limit for
/// `kind`.
pub(crate) fn limited(kind: &'static str, text: &str, emit: impl Fn(&str)) {
    static LIMITER: OnceLock<Mutex<Limiter>> = OnceLock::new();
    let (write, note) = LIMITER
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .admit(kind, Instant::now());
    if let Some(n) = note {
        emit(&n);
    }
    if write {
        emit(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newline_or_escape_in_a_name_cannot_forge_a_line() {
        let peer: SocketAddr = "192.0.2.7:4433".parse().expect("addr");
        let reason = "x\nhare-recv: 10.0.0.1:1: job done\u{1b}[2J\u{202e}: forbidden character";
        let l = line(peer, "refused", reason);
        assert_eq!(l.lines().count(), 1);
        assert!(!l.chars().any(char::is_control), "{l:?}");
        assert_eq!(
            l,
            "hare-recv: 192.0.2.7:4433: refused: x\\u{a}hare-recv: 10.0.0.1:1: job done\\u{1b}[2J\\u{202e}: forbidden character"
        );
    }

    #[test]
    fn long_text_is_cut() {
        let s = "n".repeat(4 << 20);
        let c = clean(&s, 10);
        assert_eq!(c, format!("nnnnnnnnnn... ({} bytes in all)", 4 << 20));
    }

    #[test]
    fn repeats_are_counted_not_written() {
        let mut l = Limiter::default();
        let t0 = Instant::now();
        let written = (0..100).filter(|_| l.admit("vanished", t0).0).count();
        assert_eq!(written, LOG_BURST as usize);
        assert!(l.admit("other", t0).0, "kinds are limited separately");
        let (w, note) = l.admit("vanished", t0 + LOG_WINDOW);
        assert!(w);
        assert_eq!(
            note.as_deref(),
            Some("hare-recv: 90 more `vanished` events in 10 s not shown")
        );
    }
}
