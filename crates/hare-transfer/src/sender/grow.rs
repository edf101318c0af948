//! Files that change while they are read, beyond what a retry needs: a file that only grew
//! (a log being appended to) is delivered at the size it was listed with, as scp and rsync
//! deliver what they read, once its listed prefix is read again and found unchanged; a file
//! rewritten in place is sent again, after a pause that doubles with each attempt so that a
//! busy writer gets time to finish.

use std::time::Duration;

/// Pause before the first retry; each later one waits twice as long as the one before.
const FIRST_PAUSE: Duration = Duration::from_millis(500);
/// Longest pause between two attempts.
const MAX_PAUSE: Duration = Duration::from_secs(8);

/// The pause before attempt `next` (2 for the first retry): 0.5 s, 1 s, 2 s, ... up to 8 s.
pub(super) fn pause_before(next: u32) -> Duration {
    let doublings = next.saturating_sub(2).min(16);
    FIRST_PAUSE.saturating_mul(1 << doublings).min(MAX_PAUSE)
}

/// True when the file's only change since it was listed (`size` bytes) is that it is now
/// longer: the same inode, a larger size (its times change with any write).
pub(super) fn only_grew(same_inode: bool, listed: u64, now: u64) -> bool {
    same_inode && now > listed
}

/// The BLAKE3 of the first `len` bytes of `file` read again from its start, compared with
/// `sent` (the digest of what was sent): true when the prefix is what went out, so that the
/// growth was an append and not a rewrite.
pub(super) fn prefix_unchanged(file: &std::fs::File, len: u64, sent: &str) -> Result<bool, String> {
    use std::os::unix::fs::FileExt;
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0u64;
    while at < len {
        let want = ((len - at) as usize).min(buf.len());
        let n = file
            .read_at(&mut buf[..want], at)
            .map_err(|e| format!("cannot read it again: {e}"))?;
        if n == 0 {
            return Ok(false);
        }
        h.update(&buf[..n]);
        at += n as u64;
    }
    Ok(h.finalize().to_hex().as_str() == sent)
}

/// The line that says a file was delivered at its listed size though it grew.
pub(super) fn grew_line(name: &str, listed: u64, now: u64) -> String {
    format!(
        "{name}: grew while being sent ({listed} -> {now} bytes); delivered at its listed size \
         of {listed} bytes, as scp and rsync do"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_a_cap() {
        let p: Vec<u64> = (2..9).map(|a| pause_before(a).as_millis() as u64).collect();
        assert_eq!(p, vec![500, 1000, 2000, 4000, 8000, 8000, 8000]);
        assert_eq!(pause_before(u32::MAX), MAX_PAUSE);
    }

    #[test]
    fn an_appended_file_keeps_its_prefix_and_a_rewritten_one_does_not() {
        use std::io::Write;
        let mut f = tempfile::tempfile().expect("tmp");
        f.write_all(b"hello world").expect("w");
        let sent = blake3::hash(b"hello").to_hex().to_string();
        assert!(prefix_unchanged(&f, 5, &sent).expect("read"));
        f.write_all(b" and more").expect("append");
        assert!(prefix_unchanged(&f, 5, &sent).expect("read"));
        use std::os::unix::fs::FileExt;
        f.write_all_at(b"J", 0).expect("rewrite");
        assert!(!prefix_unchanged(&f, 5, &sent).expect("read"));
        assert!(only_grew(true, 5, 20) && !only_grew(false, 5, 20) && !only_grew(true, 5, 5));
    }
}
