//! How wide the text report may be: a terminal's width when stdout is one, so that no line
//! a user reads wraps; unlimited when stdout is a file or a pipe (scripts parse the full
//! nuttcp lines, which stay as they were).

use std::io::IsTerminal;

/// Narrower than this, report lines take their compact form (the full sender lines with a
/// `[SUM]` prefix are designed to fit 100 columns).
pub const FULL_COLUMNS: usize = 100;

/// Columns of the terminal on stdout: `COLUMNS` when set to a number, else the terminal's
/// own width (80 when it does not say); `None` when stdout is not a terminal.
pub fn stdout_columns() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let from_env = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0);
    Some(from_env.unwrap_or_else(|| tty_columns(libc::STDOUT_FILENO).unwrap_or(80)))
}

/// The width a terminal on `fd` reports, if it is one and says.
pub fn tty_columns(fd: libc::c_int) -> Option<usize> {
    // SAFETY: TIOCGWINSZ writes one `winsize` into the struct it is given.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
}

/// `line` cut into pieces of at most `columns` characters: at spaces where it can, each
/// later piece indented by four spaces; a word longer than a piece is cut where it must be.
/// With `None` (not a terminal) the line stays whole.
pub fn fit(line: &str, columns: Option<usize>) -> Vec<String> {
    let Some(width) = columns.filter(|&w| w > 8) else {
        return vec![line.to_owned()];
    };
    if line.chars().count() <= width {
        return vec![line.to_owned()];
    }
    const INDENT: &str = "    ";
    let mut pieces = Vec::new();
    let mut rest: Vec<char> = line.chars().collect();
    let mut lead = String::new();
    loop {
        let room = width - lead.len();
        if rest.len() <= room {
            pieces.push(format!("{lead}{}", rest.iter().collect::<String>()));
            return pieces;
        }
        // The last space within the room that is not part of the leading indentation.
        let indented = rest.iter().take_while(|c| **c == ' ').count();
        // A break after a comma reads better, when it leaves the line at least half full.
        let after_comma = (room / 2..=room)
            .rev()
            .find(|&i| i > indented && rest[i] == ' ' && rest[i - 1] == ',');
        let cut = after_comma.or_else(|| (indented + 1..=room).rev().find(|&i| rest[i] == ' '));
        let (head, tail) = match cut {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (&rest[..room], &rest[room..]),
        };
        let head: String = head.iter().collect();
        pieces.push(format!("{lead}{}", head.trim_end()));
        rest = tail.iter().copied().skip_while(|c| *c == ' ').collect();
        lead = INDENT.to_owned();
        if rest.is_empty() {
            return pieces;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_fits_or_no_terminal_stays_whole() {
        let line = "  units: MB = 2^20 bytes, Mbps = 10^6 bit/s";
        assert_eq!(fit(line, None), vec![line]);
        assert_eq!(fit(line, Some(60)), vec![line]);
    }

    #[test]
    fn a_long_line_breaks_at_spaces_with_its_indent_kept() {
        let line = "  controller cubic@linux-6, window auto (up to 128 MiB), mtu auto";
        assert_eq!(
            fit(line, Some(60)),
            vec![
                "  controller cubic@linux-6, window auto (up to 128 MiB),",
                "    mtu auto"
            ]
        );
    }

    #[test]
    fn a_word_longer_than_the_terminal_is_cut() {
        let word = "x".repeat(25);
        let got = fit(&format!("a {word}"), Some(12));
        assert_eq!(
            got,
            vec!["a", "    xxxxxxxx", "    xxxxxxxx", "    xxxxxxxx", "    x"]
        );
        assert!(got.iter().all(|p| p.chars().count() <= 12));
    }
}
