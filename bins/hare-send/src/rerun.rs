//! The command that finishes an interrupted job: this very command line, quoted for a POSIX
//! shell, so that it can be pasted back as it is printed (a rerun skips the files the
//! receiver has and continues the partial ones).

use std::os::unix::ffi::OsStrExt;

/// This process's command line, each argument quoted where a shell would change it.
pub fn command_line() -> String {
    std::env::args_os()
        .map(|a| quote(a.as_bytes()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `arg` as a shell word: as it is when it holds only characters no shell treats specially,
/// else in single quotes (a single quote inside written as `'\''`).
fn quote(arg: &[u8]) -> String {
    let plain = |b: &u8| b.is_ascii_alphanumeric() || b"-_./:@,+=%".contains(b);
    let text = String::from_utf8_lossy(arg);
    if !arg.is_empty() && arg.iter().all(plain) {
        return text.into_owned();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_only_where_a_shell_needs_it() {
        assert_eq!(quote(b"hare-send"), "hare-send");
        assert_eq!(quote(b"user@host:backup/"), "user@host:backup/");
        assert_eq!(quote(b"my photos"), "'my photos'");
        assert_eq!(quote(b"it's"), r"'it'\''s'");
        assert_eq!(quote(b""), "''");
        assert_eq!(quote(b"$HOME"), "'$HOME'");
    }
}
