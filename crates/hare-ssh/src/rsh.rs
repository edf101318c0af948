//! The command that reaches the remote: `-e`/`--rsh CMD` as rsync's, else `HARE_RSH`, else
//! `ssh`; its words, and how a host name that ssh's configuration may rename is resolved.

use std::path::Path;

/// The remote shell command, as words (`ssh -F cfg -p 2222`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rsh {
    words: Vec<String>,
}

impl Rsh {
    /// The command given (`-e`), else `HARE_RSH` from `env`, else `ssh`. `Err` names a
    /// command that is empty or badly quoted.
    pub fn choose(given: Option<&str>, env: Option<&str>) -> Result<Self, String> {
        let (text, from) = match (given, env) {
            (Some(g), _) => (g, "-e/--rsh"),
            (None, Some(e)) => (e, "HARE_RSH"),
            (None, None) => ("ssh", "the default"),
        };
        let words = split_words(text).map_err(|e| format!("{from} `{text}`: {e}"))?;
        if words.is_empty() {
            return Err(format!(
                "{from} is empty: give the command that reaches the remote"
            ));
        }
        Ok(Self { words })
    }

    /// The program and its own arguments.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// True when the program is OpenSSH's `ssh` (its `-G` prints the resolved configuration).
    fn is_ssh(&self) -> bool {
        Path::new(&self.words[0])
            .file_name()
            .is_some_and(|n| n == "ssh")
    }

    /// A command that runs `remote` (one shell command line) on `login` (`[user@]host`).
    pub fn command(&self, login: &str, remote: &str) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(&self.words[0]);
        c.args(&self.words[1..]).arg(login).arg(remote);
        c
    }

    /// The address to reach `host` at: with ssh, the `hostname` its configuration gives
    /// (`ssh -G`: an alias in `~/.ssh/config` names another host); else `host` itself.
    pub async fn resolve(&self, login: &str, host: &str) -> String {
        if !self.is_ssh() {
            return host.to_owned();
        }
        let out = tokio::process::Command::new(&self.words[0])
            .args(&self.words[1..])
            .arg("-G")
            .arg(login)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .await;
        let text = match out {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
            _ => return host.to_owned(),
        };
        text.lines()
            .find_map(|l| l.strip_prefix("hostname "))
            .map_or_else(|| host.to_owned(), |h| h.trim().to_owned())
    }
}

/// Split a command line into words as a POSIX shell does for plain, single- and double-quoted
/// words and backslash escapes (no expansions).
pub fn split_words(text: &str) -> Result<Vec<String>, String> {
    let (mut words, mut cur, mut started) = (Vec::new(), String::new(), false);
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                started = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err("a ' is not closed".into()),
                    }
                }
            }
            '"' => {
                started = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => cur.extend(chars.next()),
                        Some(c) => cur.push(c),
                        None => return Err("a \" is not closed".into()),
                    }
                }
            }
            '\\' => {
                started = true;
                cur.extend(chars.next());
            }
            c if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            c => {
                started = true;
                cur.push(c);
            }
        }
    }
    if started {
        words.push(cur);
    }
    Ok(words)
}

/// `word` for a POSIX shell on the remote: as it is when no shell treats its characters
/// specially, else in single quotes (a quote inside written `'\''`).
pub fn shell_quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:@,+=%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_as_a_shell_splits_them() {
        assert_eq!(
            split_words(r#"ssh -F "/my cfg" -o 'A B' x\ y"#),
            Ok(vec!["ssh", "-F", "/my cfg", "-o", "A B", "x y"]
                .into_iter()
                .map(String::from)
                .collect())
        );
        assert!(split_words("ssh 'open").is_err());
        assert_eq!(split_words("  "), Ok(Vec::new()));
    }

    #[test]
    fn the_command_is_chosen_in_order() {
        assert_eq!(Rsh::choose(None, None).expect("ssh").words(), ["ssh"]);
        assert_eq!(
            Rsh::choose(None, Some("ssh -p 2")).expect("env").words(),
            ["ssh", "-p", "2"]
        );
        assert_eq!(
            Rsh::choose(Some("rsh"), Some("ssh"))
                .expect("given")
                .words(),
            ["rsh"]
        );
        assert!(Rsh::choose(Some(" "), None).is_err());
    }

    #[test]
    fn remote_words_are_quoted_for_a_shell() {
        assert_eq!(shell_quote("backup/"), "backup/");
        assert_eq!(shell_quote("my dir"), "'my dir'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$(rm -rf /)"), "'$(rm -rf /)'");
    }
}
