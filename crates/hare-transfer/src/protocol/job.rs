//! What a sender's hello describes: the job (bulk data or files), each file and link of it,
//! and the rule for files the receiver already has.

use serde::{Deserialize, Serialize};

/// The job the sender asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Job {
    /// Memory-to-memory bulk data, like nuttcp: a size, or a duration.
    Bulk {
        /// Total payload bytes over all streams (`-n`), if bounded by size.
        bytes: Option<u64>,
        /// Seconds to send (`-T`), if bounded by time.
        seconds: Option<f64>,
        /// Parallel streams (`-P`).
        streams: u16,
    },
    /// Files, each on its own stream.
    Files {
        /// The manifest.
        files: Vec<FileEntry>,
        /// Continue partial files the receiver holds, after checking their prefix.
        resume: bool,
        /// Overwrite files that exist under the final name.
        force: bool,
        /// Empty directories to create (relative names, checked like file names).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        dirs: Vec<String>,
        /// Symbolic links to create as links (`--links`), after `dirs`; a receiver that does
        /// not list [`feature::LINKS`] in its welcome ignores them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        links: Vec<LinkEntry>,
        /// Which files that exist on the receiver need not be sent (rsync's quick check and
        /// its options); every other existing file is replaced, as rsync and scp do. Absent
        /// (older senders, and `--force`): existing files are refused unless `force`. A
        /// receiver that does not list [`feature::SKIP`] ignores it (and refuses them).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        skip: Option<SkipRule>,
        /// A directory beneath the receiver's `--dir` that the job's names are relative to
        /// (`hare-send f HOST:PORT:DEST`), checked like a name and created with its parents;
        /// only to receivers that list [`feature::DEST`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dest: Option<String>,
    },
}

/// How a receiver decides that a file it already has need not be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkipRule {
    /// Same size and modification time (to the nanosecond) as the sender's: rsync's quick
    /// check, its default. A file sent without a time (`--no-times`) never matches.
    Quick,
    /// Same size and BLAKE3 digest (`--checksum`, as rsync's `-c`): the sender hashes every
    /// file before the hello, the receiver every existing file of the same size.
    Checksum,
    /// Any file that exists (`--ignore-existing`, as rsync's option of that name).
    IgnoreExisting,
    /// A file whose copy on the receiver is newer, or passes the quick check (`--update`, as
    /// rsync's `-u`).
    Update,
}

/// One file of a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Relative name with `/` separators (checked by the receiver, see [`crate::names`]).
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Permission bits of the source (`st_mode & 0o777`; set-user-ID, set-group-ID and sticky
    /// bits are never sent nor applied). Absent: the receiver's default for a new file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    /// Apply the receiver's umask to `mode` (`--no-perms`, like rsync without `-p`), instead of
    /// keeping it exactly (rsync `-p`/`-a`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub apply_umask: bool,
    /// Modification time of the source, nanoseconds since the Unix epoch (absent with
    /// `--no-times`: the file gets the time it is written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtime_ns: Option<i64>,
    /// Hex BLAKE3 of the whole file, sent with `--checksum` ([`SkipRule::Checksum`]) only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blake3: Option<String>,
}

impl FileEntry {
    /// A file of `size` bytes named `name`, without metadata.
    pub fn new(name: impl Into<String>, size: u64) -> Self {
        Self {
            name: name.into(),
            size,
            mode: None,
            apply_umask: false,
            mtime_ns: None,
            blake3: None,
        }
    }
}

/// A symbolic link of a file job (`--links`): its name (checked like a file name) and its
/// target, as the link holds it (never resolved by either side).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkEntry {
    /// Relative name with `/` separators.
    pub name: String,
    /// The link's target text, exactly as `readlink(2)` gave it.
    pub target: String,
    /// Modification time of the link itself, nanoseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtime_ns: Option<i64>,
}

/// How the receiver took one link of the job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkResult {
    /// Index in the job's `links`.
    pub index: u32,
    /// Why it was not made (absent when it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Not made again: the name is already a link to the same target under the job's skip
    /// rule, and what that is called (`up to date`). Absent from older receivers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<String>,
}
