//! Free space of the file system that receives files.

use crate::error::Result;
use crate::recvfile::Root;

/// `Err` with the reason for a sender when the receive directory's file system has less than
/// `need` bytes free (checked through the open directory, `fstatvfs(2)`).
pub(crate) fn check_free(root: &Root, need: u64) -> Result<(), String> {
    let avail = root
        .dir_file()
        .and_then(|f| nix::sys::statvfs::fstatvfs(&f).map_err(std::io::Error::from))
        .map(|st| {
            #[allow(clippy::unnecessary_cast)] // the field types differ between libcs
            (st.blocks_available() as u64).saturating_mul(st.fragment_size() as u64)
        })
        .map_err(|e| {
            format!(
                "cannot check free space: {}",
                crate::recvfile::os_reason(&e)
            )
        })?;
    if avail >= need {
        return Ok(());
    }
    Err(format!(
        "not enough free space: {} needed, {} available",
        binary_size(need),
        binary_size(avail)
    ))
}

/// A byte count for people: `512 B`, `1.5 KiB`, `20.0 MiB`, `3.25 GiB` (binary units, as
/// `ls -h` and rsync's `-h`), exact bytes below 1 KiB.
pub fn binary_size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmp_has_some_space() {
        let d = tempfile::tempdir().expect("tempdir");
        let root = Root::open(d.path()).expect("root");
        assert!(check_free(&root, 1).is_ok());
        let e = check_free(&root, u64::MAX).expect_err("no disk is that large");
        assert!(
            e.starts_with("not enough free space: 16.0 EiB needed, "),
            "{e}"
        );
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(binary_size(0), "0 B");
        assert_eq!(binary_size(1023), "1023 B");
        assert_eq!(binary_size(1536), "1.50 KiB");
        assert_eq!(binary_size(20 << 20), "20.0 MiB");
        assert_eq!(binary_size(300 << 30), "300 GiB");
        assert_eq!(binary_size(100 << 40), "100 TiB");
    }
}
