//! Admission: a small pre-auth budget for connections that have not shown a valid Hello, and
//! job slots for those that have, each bounded globally and per peer address.
//!
//! Unauthenticated clients therefore cannot hold job slots at all, and one address cannot
//! take the whole pre-auth budget: a flood of handshakes or of wrong-token clients from one
//! place leaves room for everyone else, and each of them leaves within the Hello deadline.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use super::Limits;

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    preauth: usize,
    jobs: usize,
}

#[derive(Debug)]
struct State {
    preauth: usize,
    jobs: usize,
    peers: HashMap<IpAddr, Counts>,
}

/// The receiver's admission state (cheap to clone; clones share it).
#[derive(Debug, Clone)]
pub(super) struct Gate {
    limits: Limits,
    state: Arc<Mutex<State>>,
}

/// Which budget a ticket counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    PreAuth,
    Job,
}

/// A place in one budget, given back when dropped.
#[derive(Debug)]
pub(super) struct Ticket {
    gate: Gate,
    ip: IpAddr,
    kind: Kind,
}

impl Gate {
    pub(super) fn new(limits: Limits) -> Self {
        Self {
            limits,
            state: Arc::new(Mutex::new(State {
                preauth: 0,
                jobs: 0,
                peers: HashMap::new(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True when half the pre-auth budget is taken: then new QUIC clients must first prove
    /// their address (a Retry round trip), so that spoofed sources cannot fill the rest.
    pub(super) fn crowded(&self) -> bool {
        2 * self.lock().preauth >= self.limits.max_preauth.max(1)
    }

    /// A pre-auth place for a new connection from `ip`; `Err` says which limit is full.
    pub(super) fn preauth(&self, ip: IpAddr) -> Result<Ticket, String> {
        let l = &self.limits;
        let mut s = self.lock();
        let mine = s.peers.get(&ip).copied().unwrap_or_default();
        if s.preauth >= l.max_preauth.max(1) {
            return Err(format!(
                "{} connections are already waiting for their hello",
                s.preauth
            ));
        }
        if mine.preauth >= l.max_preauth_per_peer.max(1) {
            return Err(format!(
                "{} connections from this address are already waiting for their hello",
                mine.preauth
            ));
        }
        s.preauth += 1;
        s.peers.entry(ip).or_default().preauth += 1;
        Ok(self.ticket(ip, Kind::PreAuth))
    }

    /// A job slot for `ip`; `Err` is the busy reason for the sender.
    pub(super) fn job(&self, ip: IpAddr) -> Result<Ticket, String> {
        let l = &self.limits;
        let mut s = self.lock();
        let mine = s.peers.get(&ip).copied().unwrap_or_default();
        if s.jobs >= l.max_conns.max(1) {
            return Err(format!(
                "all {} job slots are in use (--max-conns); try again later",
                l.max_conns.max(1)
            ));
        }
        if mine.jobs >= l.max_conns_per_peer.max(1) {
            return Err(format!(
                "{} jobs from your address are running, the most this receiver serves for one \
                 address (--max-conns-per-peer); try again later",
                mine.jobs
            ));
        }
        s.jobs += 1;
        s.peers.entry(ip).or_default().jobs += 1;
        Ok(self.ticket(ip, Kind::Job))
    }

    fn ticket(&self, ip: IpAddr, kind: Kind) -> Ticket {
        Ticket {
            gate: self.clone(),
            ip,
            kind,
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut s = self.gate.lock();
        let c = s.peers.entry(self.ip).or_default();
        match self.kind {
            Kind::PreAuth => c.preauth = c.preauth.saturating_sub(1),
            Kind::Job => c.jobs = c.jobs.saturating_sub(1),
        }
        if c.preauth == 0 && c.jobs == 0 {
            s.peers.remove(&self.ip);
        }
        match self.kind {
            Kind::PreAuth => s.preauth = s.preauth.saturating_sub(1),
            Kind::Job => s.jobs = s.jobs.saturating_sub(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Gate {
        Gate::new(Limits {
            max_conns: 3,
            max_conns_per_peer: 2,
            max_preauth: 3,
            max_preauth_per_peer: 2,
            ..Limits::default()
        })
    }

    #[test]
    fn budgets_are_bounded_globally_and_per_peer_and_given_back() {
        let g = gate();
        let (a, b): (IpAddr, IpAddr) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        let a1 = g.preauth(a).expect("a1");
        let _a2 = g.preauth(a).expect("a2");
        assert!(g.preauth(a).is_err(), "per-peer pre-auth bound");
        let _b1 = g.preauth(b).expect("b1");
        assert!(g.preauth(b).is_err(), "global pre-auth bound");
        drop(a1);
        assert!(g.preauth(b).is_ok());
        // Job slots are a separate budget.
        let _j1 = g.job(a).expect("j1");
        let _j2 = g.job(a).expect("j2");
        let e = g.job(a).expect_err("per-peer job bound");
        assert!(e.contains("--max-conns-per-peer"), "{e}");
        let _j3 = g.job(b).expect("j3");
        let e = g.job(b).expect_err("global job bound");
        assert!(e.contains("all 3 job slots"), "{e}");
    }
}
