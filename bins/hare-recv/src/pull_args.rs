//! What a fetch (`hare-recv [user@]host:SRC... DEST`) asks of the remote hare-send, as
//! rsync takes the same options in either direction: the rule for files DEST already has,
//! resume, files in flight, retries, and the controller (the sending side's, so the remote's).

use anyhow::{bail, Result};

/// Fetch options, handed to the remote `hare-send --ssh-serve` as its own flags.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Fetching ([user@]host:SRC... DEST)")]
pub struct PullArgs {
    /// Files in flight at once (the remote hare-send's -P; default 4).
    #[arg(short = 'P', value_name = "N")]
    parallel: Option<u16>,
    /// QUIC connections that carry the fetch (the remote hare-send's -C, which listens on a
    /// port and thread for each; this side dials each from a socket of its own and serves
    /// them on as many threads).
    #[arg(short = 'C', long = "connections", value_name = "N")]
    connections: Option<u16>,
    /// Skip files whose BLAKE3 digest matches DEST's copy (rsync -c), instead of the quick
    /// check of size and modification time.
    #[arg(short = 'c', long, conflicts_with_all = ["force", "ignore_existing", "update"])]
    checksum: bool,
    /// Skip every file DEST already has, whatever its contents (rsync --ignore-existing).
    #[arg(long, conflicts_with_all = ["force", "update"])]
    ignore_existing: bool,
    /// Skip files that are newer in DEST than on the remote (rsync -u).
    #[arg(short = 'u', long, conflicts_with = "force")]
    update: bool,
    /// Fetch every file again, replacing DEST's copies.
    #[arg(long)]
    force: bool,
    /// Start partial files over instead of resuming them.
    #[arg(long)]
    no_resume: bool,
    /// Times a file that changes on the remote while it is read is sent again (default 3).
    #[arg(long, value_name = "N")]
    retries: Option<u32>,
}

impl PullArgs {
    /// `-C`, if given.
    pub fn connections(&self) -> Option<u16> {
        self.connections
    }

    /// The remote hare-send's flags for these options (and `cc`, the controller that sends).
    pub fn remote_args(&self, cc: Option<&str>) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(n) = self.parallel {
            args.extend(["-P".to_owned(), n.to_string()]);
        }
        if let Some(n) = self.connections {
            args.extend(["-C".to_owned(), n.to_string()]);
        }
        let flags = [
            (self.checksum, "--checksum"),
            (self.ignore_existing, "--ignore-existing"),
            (self.update, "--update"),
            (self.force, "--force"),
            (self.no_resume, "--no-resume"),
        ];
        args.extend(flags.iter().filter(|f| f.0).map(|f| f.1.to_owned()));
        if let Some(n) = self.retries {
            args.extend(["--retries".to_owned(), n.to_string()]);
        }
        if let Some(spec) = cc {
            args.extend(["--cc".to_owned(), spec.to_owned()]);
        }
        args
    }

    /// `Err` naming the first fetch option given to a receiver that is not fetching.
    pub fn only_when_fetching(&self) -> Result<()> {
        let given = [
            (self.parallel.is_some(), "-P"),
            (self.connections.is_some(), "-C"),
            (self.checksum, "--checksum"),
            (self.ignore_existing, "--ignore-existing"),
            (self.update, "--update"),
            (self.force, "--force"),
            (self.no_resume, "--no-resume"),
            (self.retries.is_some(), "--retries"),
        ];
        if let Some((_, name)) = given.iter().find(|g| g.0) {
            bail!(
                "{name} is for fetching (hare-recv [user@]host:SRC... DEST); a listening \
                 receiver follows what each hare-send asks"
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_become_the_remote_senders_flags() {
        let a = PullArgs {
            parallel: Some(8),
            checksum: true,
            no_resume: true,
            retries: Some(0),
            ..PullArgs::default()
        };
        assert_eq!(
            a.remote_args(Some("cubic@linux-2.6.20")),
            [
                "-P",
                "8",
                "--checksum",
                "--no-resume",
                "--retries",
                "0",
                "--cc",
                "cubic@linux-2.6.20"
            ]
        );
        assert!(PullArgs::default().remote_args(None).is_empty());
        assert!(PullArgs::default().only_when_fetching().is_ok());
        let e = a.only_when_fetching().expect_err("not fetching");
        assert!(e.to_string().starts_with("-P is for fetching"), "{e}");
    }
}
