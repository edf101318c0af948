//! `HOST[:PORT][:DEST]`: a listening hare-recv, and a directory beneath its `--dir` for the
//! files (scp's `host:dir` shape with hare's port in the middle: `host:5300:backup/`,
//! `host:backup/` on the default port, `[::1]:5300:backup/`).

/// The receiver address and the destination directory (trailing `/` dropped; `None` when
/// there is none or it is empty).
pub fn split(arg: &str) -> (String, Option<String>) {
    if arg.parse::<std::net::Ipv6Addr>().is_ok() {
        return (arg.to_owned(), None);
    }
    let (host, rest) = match arg.strip_prefix('[').and_then(|r| r.split_once(']')) {
        Some((h, r)) => (format!("[{h}]"), r.strip_prefix(':')),
        None => match arg.split_once(':') {
            Some((h, r)) => (h.to_owned(), Some(r)),
            None => (arg.to_owned(), None),
        },
    };
    let Some(rest) = rest else {
        return (arg.to_owned(), None);
    };
    let port = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let (addr, dest) = match rest.split_once(':') {
        Some((p, d)) if port(p) => (format!("{host}:{p}"), d),
        Some(("", d)) => (host, d),
        _ if port(rest) => (format!("{host}:{rest}"), ""),
        _ => (host, rest),
    };
    let dest = dest.trim_end_matches('/');
    (addr, (!dest.is_empty()).then(|| dest.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(a: &str, d: Option<&str>) -> (String, Option<String>) {
        (a.to_owned(), d.map(str::to_owned))
    }

    #[test]
    fn the_destination_follows_the_port() {
        assert_eq!(split("host"), s("host", None));
        assert_eq!(split("host:5300"), s("host:5300", None));
        assert_eq!(split("host:5300:backup/"), s("host:5300", Some("backup")));
        assert_eq!(split("host:backup/x"), s("host", Some("backup/x")));
        assert_eq!(split("host::backup"), s("host", Some("backup")));
        assert_eq!(split("[::1]:5300:d"), s("[::1]:5300", Some("d")));
        assert_eq!(split("[::1]:5300"), s("[::1]:5300", None));
        assert_eq!(split("::1"), s("::1", None));
        assert_eq!(split("host:5300:"), s("host:5300", None));
    }
}
