//! Network namespaces: names, creation and deletion (with `ip netns`), entering one from a
//! thread or a child process (`setns`), and the per-instance lock that tells live namespaces
//! from stale ones left by a killed run.
//!
//! Naming: instance `I` owns `hare-I-snd` and `hare-I-rcv`; its lock is
//! `/run/hare-emu/I.lock`, held (`flock`) for as long as the emulator lives. At start every
//! `hare-*-snd|rcv` namespace whose lock nobody holds is deleted (stale).

use std::fs::{self, File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{last_os, EmuError, Result};

/// Where `ip netns` keeps its namespace handles.
pub const NETNS_DIR: &str = "/run/netns";
/// Where instance locks live.
pub const LOCK_DIR: &str = "/run/hare-emu";
/// Prefix of every namespace this crate creates.
pub const NS_PREFIX: &str = "hare-";

/// Which end of the emulated path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    /// The data sender's namespace.
    Sender,
    /// The data receiver's namespace.
    Receiver,
}

impl Side {
    fn suffix(self) -> &'static str {
        match self {
            Side::Sender => "snd",
            Side::Receiver => "rcv",
        }
    }
}

/// Checks an instance name: 1-16 of `a-z 0-9`, so namespace names stay short and safe.
pub fn check_instance(instance: &str) -> Result<()> {
    if !instance.is_empty()
        && instance.len() <= 16
        && instance
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        Ok(())
    } else {
        Err(EmuError::config(
            "instance",
            format!("{instance:?}: 1 to 16 characters of a-z 0-9"),
        ))
    }
}

/// The namespace name of one side of an instance: `hare-<instance>-snd` / `-rcv`.
pub fn ns_name(instance: &str, side: Side) -> String {
    format!("{NS_PREFIX}{instance}-{}", side.suffix())
}

/// True when the effective user is root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no failure mode and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// Refuses, with a message saying what is missing, unless namespace mode can work here:
/// root, `/dev/net/tun` and the `ip` tool.
pub fn check_prerequisites() -> Result<()> {
    if !is_root() {
        return Err(EmuError::Refused(
            "not root: creating namespaces and TUN devices needs root (CAP_NET_ADMIN and \
             CAP_SYS_ADMIN); run as root, or use relay mode, which needs no privileges"
                .into(),
        ));
    }
    if !Path::new(crate::tun::TUN_PATH).exists() {
        return Err(EmuError::Refused(format!(
            "{} is missing: load the tun module (modprobe tun) or use relay mode",
            crate::tun::TUN_PATH
        )));
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err(EmuError::Refused(
            "the `ip` tool (iproute2) is missing: apt-get install iproute2".into(),
        )),
    }
}

/// Why namespace mode cannot run here, or `None` when it can (for tests that skip).
pub fn unavailable_reason() -> Option<String> {
    check_prerequisites().err().map(|e| e.to_string())
}

/// Runs `ip` with `args`; an error carries the command line and its standard error.
pub fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| EmuError::io("run ip", e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(EmuError::Command {
            command: format!("ip {}", args.join(" ")),
            message: format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        })
    }
}

/// An exclusive lock on an instance, held until dropped (the file stays; stale-cleanup and
/// the next run reuse it).
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
    path: PathBuf,
}

impl InstanceLock {
    /// Takes the lock of `instance` without waiting; `Ok(None)` when a live process holds it.
    pub fn try_acquire(instance: &str) -> Result<Option<InstanceLock>> {
        fs::create_dir_all(LOCK_DIR).map_err(|e| EmuError::io(format!("create {LOCK_DIR}"), e))?;
        let path = Path::new(LOCK_DIR).join(format!("{instance}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| EmuError::io(format!("open {}", path.display()), e))?;
        // SAFETY: flock on a valid fd.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                return Ok(None);
            }
            return Err(EmuError::io(format!("flock {}", path.display()), e));
        }
        Ok(Some(InstanceLock { _file: file, path }))
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Namespaces that look like ours (`hare-<instance>-snd|rcv`), as (name, instance).
pub fn our_namespaces() -> Vec<(String, String)> {
    let Ok(dir) = fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(NS_PREFIX) else {
            continue;
        };
        let inst = rest
            .strip_suffix("-snd")
            .or_else(|| rest.strip_suffix("-rcv"));
        if let Some(inst) = inst {
            if check_instance(inst).is_ok() {
                out.push((name.clone(), inst.to_string()));
            }
        }
    }
    out.sort();
    out
}

/// Deletes every namespace of ours whose instance lock nobody holds (left by a run that was
/// killed). Returns the names deleted.
pub fn cleanup_stale() -> Result<Vec<String>> {
    let mut deleted = Vec::new();
    for (name, inst) in our_namespaces() {
        if let Some(_lock) = InstanceLock::try_acquire(&inst)? {
            ip(&["netns", "del", &name])?;
            deleted.push(name);
        }
    }
    Ok(deleted)
}

/// An open handle on a named namespace (`/run/netns/<name>`).
#[derive(Debug)]
pub struct NetnsHandle {
    file: File,
    name: String,
}

impl NetnsHandle {
    /// Opens the namespace `name`.
    pub fn open(name: &str) -> Result<NetnsHandle> {
        let path = Path::new(NETNS_DIR).join(name);
        let file = File::open(&path).map_err(|e| {
            EmuError::io(
                format!("open {} (is the emulator running?)", path.display()),
                e,
            )
        })?;
        Ok(NetnsHandle {
            file,
            name: name.to_string(),
        })
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Moves the calling thread into the namespace.
    pub fn enter(&self) -> Result<()> {
        // SAFETY: setns on a valid namespace fd.
        if unsafe { libc::setns(self.file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(last_os(format!("setns({})", self.name)));
        }
        Ok(())
    }

    /// Runs `f` on a fresh thread inside the namespace (sockets and TUN devices it creates
    /// belong to the namespace and keep working from any thread afterwards).
    pub fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T> + Send + 'static,
    {
        let fd = self
            .file
            .try_clone()
            .map_err(|e| EmuError::io("dup netns fd", e))?;
        let name = self.name.clone();
        std::thread::Builder::new()
            .name(format!("netns-{name}"))
            .spawn(move || {
                // SAFETY: setns on a valid namespace fd; affects only this thread.
                if unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(last_os(format!("setns({name})")));
                }
                f()
            })
            .map_err(|e| EmuError::io("spawn namespace thread", e))?
            .join()
            .map_err(|_| EmuError::config("namespace thread", "panicked"))?
    }

    /// Makes `cmd` run inside the namespace (setns in the child, before exec).
    pub fn apply_to(&self, cmd: &mut Command) -> Result<()> {
        let fd = self
            .file
            .try_clone()
            .map_err(|e| EmuError::io("dup netns fd", e))?;
        // SAFETY: the closure only calls setns (async-signal-safe) in the forked child.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_instances() {
        assert_eq!(ns_name("t1", Side::Sender), "hare-t1-snd");
        assert_eq!(ns_name("t1", Side::Receiver), "hare-t1-rcv");
        assert!(check_instance("abc123").is_ok());
        for bad in ["", "A", "a-b", "a_b", "12345678901234567"] {
            assert!(check_instance(bad).is_err(), "{bad:?} accepted");
        }
    }
}
