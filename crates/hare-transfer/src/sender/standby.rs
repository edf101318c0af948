//! The further connections' join streams, where a job's control channel may move when its
//! first connection is lost (module `control_move`); module `join` adds each as its
//! connection joins.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::channels::{ControlRead, ControlWrite};

/// A further connection's join stream, kept open for a move.
pub(super) struct Standby {
    /// The connection's number within the job.
    pub(super) number: u16,
    pub(super) conn: quinn::Connection,
    pub(super) control: (ControlRead, ControlWrite),
}

/// The further connections' join streams, by connection number.
pub(super) type Standbys = Arc<Mutex<VecDeque<Standby>>>;
