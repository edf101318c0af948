//! The printed report of a replay, ending with [`Outcome::last_line`].

use std::fmt::Write as _;

use crate::tally::{Exit, Outcome};

impl Outcome {
    /// The whole report, ending with [`Outcome::last_line`].
    pub fn report(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "records {} of the flow's socket: {} ACKs replayed, {} with nothing changed (not an ACK of data, no state change; skipped)",
            self.records, self.acks, self.unchanged
        );
        let _ = writeln!(s, "cwnd by CA state (kernel's state at the ACK):");
        let _ = writeln!(s, "  {:<10} {}", "Open", self.cwnd_open.ratio());
        for (state, t) in &self.cwnd_other {
            let _ = writeln!(s, "  {state:<10} {}", t.ratio());
        }
        let _ = writeln!(
            s,
            "  {} ACKs in CWR/Recovery not compared on cwnd: the kernel's PRR sets it there, hare (under quinn) sets cwnd = ssthresh at once; compared instead: ssthresh at each loss reaction and cwnd at each episode's end",
            self.prr_acks
        );
        let _ = writeln!(s, "fields on every compared ACK:");
        for (field, t) in &self.fields {
            let _ = writeln!(s, "  {field:<17} {}", t.ratio());
        }
        self.write_events(&mut s);
        s.push_str(&self.last_line());
        s.push('\n');
        s
    }

    fn write_events(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "first divergences (the model is put back in the kernel's state after each):"
        );
        if self.divergences.is_empty() {
            let _ = writeln!(s, "  none");
        }
        for d in &self.divergences {
            let _ = writeln!(s, "  ACK {} ({}): {}", d.ack, d.state, d.fields.join(", "));
        }
        let show = |e: &Option<Exit>| match e {
            Some(e) => format!(
                "ACK {} cwnd {} ssthresh {} ({})",
                e.ack, e.cwnd, e.ssthresh, e.reason
            ),
            None => "none".into(),
        };
        let _ = writeln!(
            s,
            "slow-start exit: kernel {}; hare {}",
            show(&self.exit_kernel),
            show(&self.exit_hare)
        );
        let _ = writeln!(s, "loss reactions (ssthresh kernel vs hare):");
        if self.loss_reactions.is_empty() {
            let _ = writeln!(s, "  none");
        }
        for r in &self.loss_reactions {
            let _ = writeln!(
                s,
                "  ACK {} into {} at cwnd {}: kernel {} hare {} {}",
                r.ack,
                r.into,
                r.cwnd,
                r.kernel,
                r.hare,
                if r.kernel == r.hare {
                    "same"
                } else {
                    "DIFFERS"
                }
            );
        }
        for e in &self.episode_ends {
            let _ = writeln!(
                s,
                "  ACK {} end of {}: cwnd kernel {} hare {} {}{}",
                e.ack,
                e.from,
                e.kernel,
                e.hare,
                if e.kernel == e.hare {
                    "same"
                } else {
                    "DIFFERS"
                },
                if e.undo {
                    " (the kernel undid the reduction; hare under quinn never undoes)"
                } else {
                    ""
                }
            );
        }
    }
}
