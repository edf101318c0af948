//! The data a partial holds beyond its in-order prefix, for a job over several connections:
//! its ranges arrive out of order, so when such a job stops the part file also keeps the
//! ranges that were whole, recorded in the extended attribute `user.hare.ranges` (beside the
//! prefix, module `part`), and a rerun is offered the chunk-aligned pieces among them with
//! their digests, so that the sender sends again only what is missing.
//!
//! Nothing here is trusted for the verdict: a kept piece is hashed, like every byte, from the
//! disk when the file's in-order frontier reaches it, so a piece that is wrong (a source that
//! changed between the runs, a record that outlived its data) makes the file fail its digest,
//! never a verified file wrong.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

/// The extended attribute that holds the kept ranges.
const RANGES_ATTR: &std::ffi::CStr = c"user.hare.ranges";
/// Most ranges recorded (the attribute stays within one 4 KiB block).
pub(crate) const MAX_KEPT: usize = 128;

/// `s-e,s-e,...` in decimal.
fn encode(ranges: &[(u64, u64)]) -> String {
    let parts: Vec<String> = ranges.iter().map(|(s, e)| format!("{s}-{e}")).collect();
    parts.join(",")
}

/// The ranges of an attribute value: well-formed, non-empty, in order and disjoint, else
/// none at all (a damaged record is ignored).
fn decode(text: &str) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let Some((s, e)) = part.split_once('-') else {
            return Vec::new();
        };
        let (Ok(s), Ok(e)) = (s.parse::<u64>(), e.parse::<u64>()) else {
            return Vec::new();
        };
        if s >= e || out.last().is_some_and(|&(_, pe)| s < pe) {
            return Vec::new();
        }
        out.push((s, e));
    }
    out
}

/// Record `ranges` on `file` (none: the attribute is removed); best effort, as the prefix.
pub(crate) fn record(file: &File, ranges: &[(u64, u64)]) {
    let fd = file.as_raw_fd();
    if ranges.is_empty() {
        // SAFETY: the descriptor is open and the name a valid C string.
        unsafe { libc::fremovexattr(fd, RANGES_ATTR.as_ptr()) };
        return;
    }
    let v = encode(&ranges[..ranges.len().min(MAX_KEPT)]);
    // SAFETY: the descriptor is open; name and value are valid for the call's duration.
    unsafe { libc::fsetxattr(fd, RANGES_ATTR.as_ptr(), v.as_ptr().cast(), v.len(), 0) };
}

/// The ranges recorded on `file`.
pub(crate) fn read(file: &File) -> Vec<(u64, u64)> {
    let mut buf = vec![0u8; 8192];
    // SAFETY: the descriptor is open and `buf` valid and writable for its length.
    let n = unsafe {
        libc::fgetxattr(
            file.as_raw_fd(),
            RANGES_ATTR.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    let Ok(n) = usize::try_from(n) else {
        return Vec::new();
    };
    std::str::from_utf8(&buf[..n.min(buf.len())]).map_or_else(|_| Vec::new(), decode)
}

/// The pieces a sender of ranges cut as `striping` says, resuming a file of `size` bytes at
/// `have`, would send (from `have` to the next cut, then range by range up to `size`) that
/// lie wholly inside `ranges` (which are within the part file's `len`).
pub(crate) fn pieces(
    ranges: &[(u64, u64)],
    (have, size, len): (u64, u64, u64),
    striping: &crate::protocol::Striping,
) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    if striping.chunk == 0 {
        return out;
    }
    let end = size.min(len);
    let mut at = have;
    while at < end {
        let next = striping.range_end(at, size).min(size);
        if next <= end && ranges.iter().any(|&(s, e)| s <= at && next <= e) {
            out.push((at, next));
        }
        at = next;
    }
    out
}

/// The hex BLAKE3 of `[s, e)` of `file`.
pub(crate) fn digest(file: &File, (s, e): (u64, u64)) -> std::io::Result<String> {
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut at = s;
    while at < e {
        let n = ((e - at) as usize).min(buf.len());
        file.read_exact_at(&mut buf[..n], at)?;
        h.update(&buf[..n]);
        at += n as u64;
    }
    Ok(h.finalize().to_hex().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_reads_as_none() {
        let r = vec![(10, 20), (30, 45)];
        assert_eq!(encode(&r), "10-20,30-45");
        assert_eq!(decode("10-20,30-45"), r);
        assert_eq!(decode(""), Vec::<(u64, u64)>::new());
        for bad in ["10-5", "10-20,15-30", "x-1", "10", "1-2,3"] {
            assert!(decode(bad).is_empty(), "{bad}");
        }
    }

    /// Ranges of `chunk` bytes over one connection (a piece is then a chunk too).
    fn cut(chunk: u64) -> crate::protocol::Striping {
        crate::protocol::Striping {
            connections: 1,
            chunk,
            moves_bulk: false,
            tail_pieces: false,
        }
    }

    #[test]
    fn pieces_are_the_senders_ranges_wholly_kept() {
        // Chunks of 10 over a file of 95 resumed at 13: the sender's ranges are 13-20,
        // 20-30, ..., 90-95. Kept: 20-41 and 60-95 (the part file is 95 long).
        let kept = [(20, 41), (60, 95)];
        assert_eq!(
            pieces(&kept, (13, 95, 95), &cut(10)),
            vec![(20, 30), (30, 40), (60, 70), (70, 80), (80, 90), (90, 95)]
        );
        // A part file cut shorter than a kept range keeps only what it holds.
        assert_eq!(
            pieces(&kept, (13, 95, 75), &cut(10)),
            vec![(20, 30), (30, 40), (60, 70)]
        );
        assert!(pieces(&kept, (0, 95, 95), &cut(0)).is_empty());
    }
}
