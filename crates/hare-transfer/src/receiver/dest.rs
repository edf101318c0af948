//! A file job's destination directory beneath `--dir` (`hare-send f HOST:PORT:DEST`): every
//! name of the job is put under it before anything else looks at the job, so that the same
//! checks (names, links on the way, limits) apply to the whole path and nothing can name a
//! place outside `--dir`.

use crate::names::check_name;
use crate::protocol::{FileEntry, LinkEntry};

/// A file job's files, directories and links.
pub(super) type Entries = (Vec<FileEntry>, Vec<String>, Vec<LinkEntry>);

/// The job's files, directories and links with their names under `dest` (itself first among
/// the directories, so that it is made even for an empty job); unchanged without `dest`.
/// `Err` is the reason to refuse.
pub(super) fn under(
    dest: Option<&str>,
    files: &[FileEntry],
    dirs: &[String],
    links: &[LinkEntry],
) -> Result<Entries, String> {
    let Some(d) = dest else {
        return Ok((files.to_vec(), dirs.to_vec(), links.to_vec()));
    };
    check_name(d).map_err(|r| format!("destination `{d}`: {r}"))?;
    let at = |n: &str| format!("{d}/{n}");
    let files = files
        .iter()
        .map(|f| FileEntry {
            name: at(&f.name),
            ..f.clone()
        })
        .collect();
    let dirs = std::iter::once(d.to_owned())
        .chain(dirs.iter().map(|x| at(x)))
        .collect();
    let links = links
        .iter()
        .map(|k| LinkEntry {
            name: at(&k.name),
            ..k.clone()
        })
        .collect();
    Ok((files, dirs, links))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_go_under_the_destination_which_is_checked_like_a_name() {
        let files = [FileEntry::new("a/b", 1)];
        let (f, d, _) = under(Some("backup/x"), &files, &["e".into()], &[]).expect("ok");
        assert_eq!(f[0].name, "backup/x/a/b");
        assert_eq!(d, vec!["backup/x".to_owned(), "backup/x/e".to_owned()]);
        for bad in ["../x", "/etc", "a//b", ".x.0000000000000001.hare-part"] {
            assert!(under(Some(bad), &files, &[], &[]).is_err(), "{bad}");
        }
        let (f, d, _) = under(None, &files, &[], &[]).expect("ok");
        assert_eq!((f[0].name.as_str(), d.len()), ("a/b", 0));
    }
}
