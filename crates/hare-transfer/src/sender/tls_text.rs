//! Handshake failures in words: rustls reports certificate errors through quinn as text that
//! embeds Rust debug forms (`DnsName("localhost")`, `UnknownIssuer`); users get the names and
//! a sentence instead.

/// rustls certificate errors that print as a bare variant name, and what they mean here.
const CERT_ERRORS: [(&str, &str); 8] = [
    ("UnknownIssuer", "it is not issued by a CA in the --ca file"),
    ("BadEncoding", "it cannot be decoded"),
    ("Expired", "it has expired"),
    ("NotValidYet", "it is not valid yet (check the clocks)"),
    ("Revoked", "it was revoked"),
    ("BadSignature", "its signature does not verify"),
    ("InvalidPurpose", "it is not meant for a TLS server"),
    (
        "UnhandledCriticalExtension",
        "it has a critical extension rustls does not handle",
    ),
];

/// The handshake error `text` without debug forms.
pub(super) fn tidy(text: &str) -> String {
    let text = unwrap_names(text);
    for (variant, meaning) in CERT_ERRORS {
        let raw = format!("invalid peer certificate: {variant}");
        if let Some(at) = text.find(&raw) {
            let tail = &text[at + raw.len()..];
            return format!(
                "{}the receiver's certificate was refused: {meaning}{tail}",
                &text[..at]
            );
        }
    }
    text
}

/// `DnsName("x")` -> `x`; `IpAddress(V4(Ipv4Addr([127, 0, 0, 1])))` -> `127.0.0.1`.
fn unwrap_names(text: &str) -> String {
    let mut out = text.to_owned();
    while let Some(start) = out.find("DnsName(\"") {
        let name_at = start + "DnsName(\"".len();
        let Some(len) = out[name_at..].find("\")") else {
            break;
        };
        let name = out[name_at..name_at + len].to_owned();
        out.replace_range(start..name_at + len + 2, &name);
    }
    let v4 = "IpAddress(V4(Ipv4Addr([";
    while let Some(start) = out.find(v4) {
        let at = start + v4.len();
        let Some(len) = out[at..].find("])))") else {
            break;
        };
        let ip = out[at..at + len].replace(", ", ".");
        out.replace_range(start..at + len + 4, &ip);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_lose_their_debug_form() {
        assert_eq!(
            tidy("certificate not valid for name \"127.0.0.1\"; certificate is only valid for DnsName(\"localhost\") or IpAddress(V4(Ipv4Addr([10, 0, 0, 2])))"),
            "certificate not valid for name \"127.0.0.1\"; certificate is only valid for localhost or 10.0.0.2"
        );
    }

    #[test]
    fn bare_variants_become_sentences() {
        assert_eq!(
            tidy("the cryptographic handshake failed: error 48: invalid peer certificate: UnknownIssuer"),
            "the cryptographic handshake failed: error 48: the receiver's certificate was refused: it is not issued by a CA in the --ca file"
        );
        assert_eq!(tidy("timed out"), "timed out");
    }
}
