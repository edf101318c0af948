//! `[user@]host:path`, as scp reads it.

/// A remote location: who to log in as where, and the path there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotePath {
    /// What ssh is given: `host` or `user@host` (an IPv6 address without its brackets).
    pub login: String,
    /// The host alone (for ssh's own resolution of aliases, and messages).
    pub host: String,
    /// The path on the remote: relative to the remote user's home, or absolute; empty for
    /// the home itself.
    pub path: String,
}

impl RemotePath {
    /// Read `arg` as scp does: remote when a `:` comes before any `/` (`[v6addr]:path` for
    /// IPv6); `None` for a local path (`./a:b`, `/x:y`, `a`).
    pub fn parse(arg: &str) -> Option<Self> {
        let (login, path) = if let Some(rest) = bracketed(arg) {
            rest
        } else {
            let colon = arg.find(':')?;
            if arg[..colon].contains('/') || colon == 0 {
                return None;
            }
            (arg[..colon].to_owned(), arg[colon + 1..].to_owned())
        };
        let host = login
            .rsplit_once('@')
            .map_or(login.as_str(), |(_, h)| h)
            .to_owned();
        if host.is_empty() {
            return None;
        }
        Some(Self { login, host, path })
    }
}

/// `[user@][v6]:path` -> (`user@v6`, path).
fn bracketed(arg: &str) -> Option<(String, String)> {
    let open = arg.find('[')?;
    let close = arg.find("]:")?;
    if close < open || arg[..open].contains('/') {
        return None;
    }
    let login = format!("{}{}", &arg[..open], &arg[open + 1..close]);
    Some((login, arg[close + 2..].to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(login: &str, host: &str, path: &str) -> Option<RemotePath> {
        Some(RemotePath {
            login: login.into(),
            host: host.into(),
            path: path.into(),
        })
    }

    #[test]
    fn remote_and_local_as_scp_tells_them_apart() {
        assert_eq!(
            RemotePath::parse("host:backup/"),
            r("host", "host", "backup/")
        );
        assert_eq!(RemotePath::parse("me@host:"), r("me@host", "host", ""));
        assert_eq!(
            RemotePath::parse("me@host:/srv/x"),
            r("me@host", "host", "/srv/x")
        );
        assert_eq!(RemotePath::parse("[::1]:d"), r("::1", "::1", "d"));
        assert_eq!(
            RemotePath::parse("u@[fe80::1]:d"),
            r("u@fe80::1", "fe80::1", "d")
        );
        for local in ["photos/", "./a:b", "/x:y", ":x", "a", "@:x"] {
            assert_eq!(RemotePath::parse(local), None, "{local}");
        }
    }
}
