//! Admission: a small pre-auth budget for connections that have not shown a valid Hello, and
//! job slots for those that have, each bounded globally and per peer address.
//!
//! Unauthenticated clients therefore cannot hold job slots at all, and one address cannot
//! take the whole pre-auth budget: a flood of handshakes or of wrong-token clients from one
//! place leaves room for everyone else, and each of them leaves within the Hello deadline.
//!
//! The budget is shared fairly across addresses: when it is full, a connection from an
//! address that holds fewer places than the address holding the most takes the oldest place
//! of that address, whose connection is told to leave at once (it has not shown a valid Hello
//! yet, so it had nothing to lose). So a few flooding addresses cannot keep a legitimate one
//! from its handshake for longer than it takes to arrive.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

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
    /// The pre-auth places of each address, oldest first, with the channel that tells each
    /// connection it was made to leave.
    places: HashMap<IpAddr, VecDeque<(u64, oneshot::Sender<()>)>>,
    next_place: u64,
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
    /// Pre-auth places: the place's number, and the news that it was taken for another
    /// address.
    place: u64,
    evicted: Option<oneshot::Receiver<()>>,
}

/// What a connection whose pre-auth place was taken is told.
pub(super) const EVICTED: &str = "the receiver is crowded with connections from a few addresses \
                                  that have not sent their hello; this one gave its place to \
                                  another address, try again";

impl Ticket {
    /// Resolves when this pre-auth place was taken for another address (never for a job
    /// slot, nor once the place is given back).
    pub(super) fn evicted(&mut self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let rx = self.evicted.take();
        async move {
            let told = match rx {
                Some(rx) => rx.await.is_ok(),
                None => false,
            };
            if !told {
                std::future::pending::<()>().await;
            }
        }
    }
}

impl Gate {
    pub(super) fn new(limits: Limits) -> Self {
        Self {
            limits,
            state: Arc::new(Mutex::new(State {
                preauth: 0,
                jobs: 0,
                peers: HashMap::new(),
                places: HashMap::new(),
                next_place: 0,
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
        if mine.preauth >= l.max_preauth_per_peer.max(1) {
            return Err(format!(
                "{} connections from this address are already waiting for their hello",
                mine.preauth
            ));
        }
        if s.preauth >= l.max_preauth.max(1) && !evict_for(&mut s, ip, mine.preauth) {
            return Err(format!(
                "{} connections are already waiting for their hello",
                s.preauth
            ));
        }
        s.preauth += 1;
        s.peers.entry(ip).or_default().preauth += 1;
        let place = s.next_place;
        s.next_place += 1;
        let (tx, rx) = oneshot::channel();
        s.places.entry(ip).or_default().push_back((place, tx));
        let mut t = self.ticket(ip, Kind::PreAuth);
        t.place = place;
        t.evicted = Some(rx);
        Ok(t)
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
            place: 0,
            evicted: None,
        }
    }
}

/// The budget is full: take the oldest place of the address holding the most, if it holds
/// more than one place beyond `mine` (the places `ip` holds); its connection is told to go,
/// and its counts go at once. False when no address holds that many more.
fn evict_for(s: &mut State, ip: IpAddr, mine: usize) -> bool {
    let heaviest = s
        .peers
        .iter()
        .filter(|(a, _)| **a != ip)
        .max_by_key(|(_, c)| c.preauth)
        .map(|(a, c)| (*a, c.preauth));
    let Some((heavy, count)) = heaviest.filter(|(_, c)| *c > mine + 1) else {
        return false;
    };
    let Some((_, tx)) = s.places.get_mut(&heavy).and_then(VecDeque::pop_front) else {
        return false;
    };
    let _ = tx.send(());
    release(s, heavy, Kind::PreAuth);
    tracing::debug!("pre-auth place of {heavy} ({count} held) given to {ip}");
    true
}

/// Give one place of `ip` back.
fn release(s: &mut State, ip: IpAddr, kind: Kind) {
    let c = s.peers.entry(ip).or_default();
    match kind {
        Kind::PreAuth => c.preauth = c.preauth.saturating_sub(1),
        Kind::Job => c.jobs = c.jobs.saturating_sub(1),
    }
    if c.preauth == 0 && c.jobs == 0 {
        s.peers.remove(&ip);
    }
    match kind {
        Kind::PreAuth => s.preauth = s.preauth.saturating_sub(1),
        Kind::Job => s.jobs = s.jobs.saturating_sub(1),
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut s = self.gate.lock();
        if self.kind == Kind::PreAuth {
            let Some(q) = s.places.get_mut(&self.ip) else {
                return;
            };
            let Some(at) = q.iter().position(|(p, _)| *p == self.place) else {
                // Taken for another address: its counts went then.
                return;
            };
            q.remove(at);
            if q.is_empty() {
                s.places.remove(&self.ip);
            }
        }
        release(&mut s, self.ip, self.kind);
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

    #[test]
    fn a_full_pre_auth_budget_makes_room_for_a_new_address() {
        let g = Gate::new(Limits {
            max_preauth: 8,
            max_preauth_per_peer: 4,
            ..Limits::default()
        });
        let ip = |n: u8| IpAddr::from([127, 0, 0, n]);
        let mut flood: Vec<Ticket> = Vec::new();
        for n in [2, 3] {
            for _ in 0..4 {
                flood.push(g.preauth(ip(n)).expect("flooder"));
            }
        }
        assert!(g.preauth(ip(2)).is_err(), "a flooder gets no more");
        // A new address gets a place at once: the oldest place of a heaviest address goes.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("rt");
        let mut evicted: Vec<_> = flood.iter_mut().map(|t| Some(t.evicted())).collect();
        let mine = g.preauth(ip(4)).expect("a new address");
        let gone: Vec<usize> = evicted
            .iter_mut()
            .enumerate()
            .filter_map(|(i, f)| {
                let f = f.take()?;
                let done = rt.block_on(async {
                    tokio::time::timeout(std::time::Duration::from_millis(1), f)
                        .await
                        .is_ok()
                });
                done.then_some(i)
            })
            .collect();
        assert!(
            gone == vec![0] || gone == vec![4],
            "oldest of one flooder: {gone:?}"
        );
        let s = g.lock();
        assert_eq!(s.preauth, 8);
        assert_eq!(s.peers[&ip(4)].preauth, 1);
        drop(s);
        // The evicted ticket's drop gives nothing back twice.
        flood.remove(gone[0]);
        assert_eq!(g.lock().preauth, 8);
        // A second new address evicts from the other flooder; the flooders cannot take
        // places back from addresses holding fewer.
        let _other = g.preauth(ip(5)).expect("another new address");
        assert!(g.preauth(ip(2)).is_err() && g.preauth(ip(3)).is_err());
        drop(mine);
        assert_eq!(g.lock().preauth, 7);
    }
}
