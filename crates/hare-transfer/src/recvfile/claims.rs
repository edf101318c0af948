//! Final names that a job of this receiver is receiving right now.
//!
//! A job claims the final path of each of its files when it is accepted and holds the claim
//! until that file is settled (published, kept for resume or removed). A second job naming a
//! claimed path is refused at its hello, `--force` or not: two senders of one name would
//! otherwise both be told their bytes were stored, and one of them would be wrong.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// The receiver's registry of final paths in use (cheap to clone; clones share it).
#[derive(Debug, Clone, Default)]
pub struct FinalNames(Arc<Mutex<HashSet<PathBuf>>>);

impl FinalNames {
    /// Claim `path` for one job; `None` when another job holds it.
    pub fn claim(&self, path: &Path) -> Option<NameClaim> {
        if !self.lock().insert(path.to_path_buf()) {
            return None;
        }
        Some(NameClaim {
            names: self.clone(),
            path: path.to_path_buf(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashSet<PathBuf>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One job's hold on a final path; released when dropped.
#[derive(Debug)]
pub struct NameClaim {
    names: FinalNames,
    path: PathBuf,
}

impl Drop for NameClaim {
    fn drop(&mut self) {
        self.names.lock().remove(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_held_by_one_claim_at_a_time() {
        let names = FinalNames::default();
        let a = names.claim(Path::new("/d/f")).expect("free");
        assert!(names.claim(Path::new("/d/f")).is_none());
        assert!(names.claim(Path::new("/d/g")).is_some());
        drop(a);
        assert!(names.claim(Path::new("/d/f")).is_some());
    }
}
