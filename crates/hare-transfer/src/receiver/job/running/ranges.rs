//! Range streams of a job over several connections: the first range of a file starts its
//! assembly (and counts as the file's channel), the others join it.

use tokio::sync::mpsc;

use super::{Finished, Running, Step};
use crate::channels::DataIn;
use crate::error::TransferError;
use crate::protocol::{DataHeader, Striping};

impl Running {
    /// The job travels over several connections with ranges of this striping.
    pub(in crate::receiver::job) fn striped(&mut self, striping: Option<Striping>, grant: u64) {
        self.striping = striping.map(|s| (s, grant));
        if let (Some(s), true) = (striping, self.files_job) {
            self.by_conn = (0..s.connections).map(|_| Default::default()).collect();
        }
    }

    /// A range stream of file `h.index`.
    pub(super) fn range(
        &mut self,
        h: DataHeader,
        input: DataIn,
        fin: &mpsc::Sender<Finished>,
    ) -> Step {
        let protocol = |why: String| Step::Stop(Some(TransferError::Protocol(why)));
        let (Some((striping, grant)), true) = (self.striping, self.files_job) else {
            return protocol("a range stream in a job that takes none".into());
        };
        if let Some(r) = self.ranges.get_mut(&h.index) {
            return match r.add(h, input) {
                Ok(()) => Step::Go,
                Err(why) => protocol(why),
            };
        }
        if self.again.judged.contains(&h.index) {
            // A range sent again after its file was judged (its first copy arrived after
            // all): nothing to do with it.
            return Step::Go;
        }
        self.seen += 1;
        if self.seen > self.expected {
            return protocol("more data channels than the job has".into());
        }
        let (Some(p), Some(rx), Some(mut target)) = (
            self.planned.remove(&h.index),
            self.digest_rx.remove(&h.index),
            self.target.clone(),
        ) else {
            return protocol(format!("data for unknown or repeated file {}", h.index));
        };
        // Each connection's data may run a window ahead of a range still on its way on
        // another: the file holds twice a grant per connection out of order.
        let n = u64::from(striping.connections);
        let own = target.limits.bytes;
        target.limits.bytes = own.max(grant.saturating_mul(2).saturating_mul(n));
        let cap = super::super::assemble::stream_cap(&striping, p.entry.size, p.remaining());
        let counters = (fin.clone(), (self.bytes.clone(), self.by_conn.clone()));
        let r = super::super::assemble::start((target, p), (h, input), rx, counters, cap);
        self.ranges.insert(h.index, r);
        Step::Go
    }
}
