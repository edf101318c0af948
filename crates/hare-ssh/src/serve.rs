//! The remote end's side of the ssh channel (`hare-recv --ssh-serve`, `hare-send
//! --ssh-serve`): the peer's fingerprint line in, one answer line out, a one-time token, and
//! standard input as the lifeline.

use std::io::{BufRead, Read, Write};

use crate::hello::ServeHello;

/// The first line the local side wrote (its certificate fingerprint), trimmed.
pub fn read_first_line() -> std::io::Result<String> {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim().to_owned())
}

/// Print the answer on standard output, the ssh channel, and flush it.
pub fn answer(hello: &ServeHello) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", hello.line())?;
    out.flush()
}

/// Call `ended` (on a thread of its own) once standard input closes: ssh or the local side
/// is gone, and the job must end.
pub fn on_lifeline_end(ended: impl FnOnce() + Send + 'static) {
    std::thread::spawn(move || {
        let mut sink = [0u8; 256];
        let mut input = std::io::stdin();
        while matches!(input.read(&mut sink), Ok(n) if n > 0) {}
        ended();
    });
}

/// A one-time token: 16 bytes from the kernel's random source, as hex.
pub fn one_time_token() -> std::io::Result<String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_32_hex_digits_and_differ() {
        let (a, b) = (one_time_token().expect("a"), one_time_token().expect("b"));
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
