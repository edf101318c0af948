//! Live telemetry from running controllers: an [`Observer`] handle given to the factory.
//!
//! # Design
//! An [`Observer`] is a cheap `Arc` handle created by the application and handed to
//! [`crate::HareFactory::with_observer`]. Every controller the factory builds registers a
//! *slot* under a fresh [`ControllerId`] (assigned at `build`, in build order, starting at 1;
//! quinn builds one controller per connection, and a copy on path migration). Through the
//! handle the application reads the latest [`Snapshot`] of each controller and drains its
//! [`CcEvent`]s, from any thread, while the connection runs.
//!
//! # Which connection is which
//! - **The id of a `quinn::Connection`**: its controller knows it. Downcast a copy of the
//!   connection's controller and ask it:
//!   ```no_run
//!   # fn id_of(connection: &quinn::Connection) -> Option<hare_cc::ControllerId> {
//!   let controller = connection.congestion_state().clone_box().into_any();
//!   let id = controller.downcast::<hare_cc::HareController>().ok()?.id();
//!   # id }
//!   ```
//!   (`None` for quinn's own controllers, or when the factory had no observer.)
//! - **Client or server**: an endpoint that both connects and accepts can share one
//!   observer between its client and server configurations and still tell the registrations
//!   apart: give each factory a handle tagged with [`Observer::for_side`]; the side is in
//!   [`ControllerView::side`].
//! - **Event times** ([`CcEvent::t_us`], [`Snapshot::t_us`]) count microseconds from the
//!   `Instant` quinn passed when it built the controller, [`ControllerView::origin`].
//!
//! The hot path stays cheap: a controller never takes a lock on an ACK that decided nothing.
//! It publishes its snapshot only every `publish_every` ACK frames (default
//! [`Observer::DEFAULT_PUBLISH_EVERY`]) and whenever the kernel model reported an event, and
//! then with `Mutex::try_lock`: if the application holds the slot at that instant, the events
//! stay queued inside the controller and go out on the next attempt (or when the controller is
//! dropped, which publishes with a blocking lock). Snapshots carry a sequence number so that a
//! stale copy (for example one made by `congestion_state().clone_box()`) never overwrites a
//! newer one.
//!
//! The event queue of a slot is bounded ([`Observer::DEFAULT_EVENT_CAPACITY`]); when nobody
//! drains it the oldest events are dropped and counted in [`ControllerView::dropped_events`].
//! Slots stay after their connection closed so that its final state can be read; call
//! [`Observer::prune`] (drops slots of connections whose controllers are all gone) or
//! [`Observer::remove`].
//!
//! The alternative, `quinn::Connection::congestion_state()` followed by
//! `clone_box().into_any().downcast::<HareController>()`, also works (see
//! [`crate::HareController::snapshot`]) but clones the controller on each read.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use quinn_proto::Side;

use crate::events::{CcEvent, Snapshot};

/// Identifies one controller registered with an [`Observer`]: numbered 1, 2, ... in build
/// order. `Display` prints the bare number, so `"controller {id}"` reads `controller 3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ControllerId(u64);

impl ControllerId {
    /// The number (1 for the first controller an observer registered).
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ControllerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What an [`Observer`] knows about one controller.
///
/// Non-exhaustive: more registration facts may be added.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ControllerView {
    /// The id assigned when the controller was built.
    pub id: ControllerId,
    /// The side of the endpoint that built it, when the observer handle given to its factory
    /// was tagged with [`Observer::for_side`].
    pub side: Option<Side>,
    /// The `Instant` quinn built the controller at: event and snapshot times (`t_us`) count
    /// microseconds from it.
    pub origin: Instant,
    /// The latest published snapshot.
    pub snapshot: Snapshot,
    /// Events dropped because the queue was full and nobody drained it.
    pub dropped_events: u64,
    /// True while the controller (or a copy quinn made of it) is alive.
    pub live: bool,
}

/// Handle through which an application watches the controllers a factory builds.
///
/// Cloning is cheap (one `Arc`); all clones see the same controllers.
#[derive(Clone)]
pub struct Observer {
    shared: Arc<Shared>,
    /// Recorded in the registrations made through this handle.
    side: Option<Side>,
}

struct Shared {
    next_id: AtomicU64,
    publish_every: u32,
    event_capacity: usize,
    slots: Mutex<BTreeMap<ControllerId, Arc<Slot>>>,
}

/// One connection's published state.
pub(crate) struct Slot {
    id: ControllerId,
    side: Option<Side>,
    origin: Instant,
    event_capacity: usize,
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    seq: u64,
    snapshot: Snapshot,
    events: VecDeque<CcEvent>,
    dropped: u64,
}

/// A poisoned lock only means another thread panicked while holding it; the data (plain
/// telemetry) is still usable, so recover it instead of propagating the panic.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Default for Observer {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observer")
            .field("side", &self.side)
            .field("publish_every", &self.shared.publish_every)
            .field("event_capacity", &self.shared.event_capacity)
            .field("controllers", &lock(&self.shared.slots).len())
            .finish()
    }
}

impl Observer {
    /// Default number of ACK frames between two snapshot publications when nothing happened.
    pub const DEFAULT_PUBLISH_EVERY: u32 = 64;
    /// Default bound of each connection's event queue.
    pub const DEFAULT_EVENT_CAPACITY: usize = 4096;

    /// A new observer with the default publication period and queue bound.
    pub fn new() -> Self {
        Self::with_settings(Self::DEFAULT_PUBLISH_EVERY, Self::DEFAULT_EVENT_CAPACITY)
    }

    /// A new observer that publishes snapshots every `publish_every` ACK frames (at least 1;
    /// 1 means after every frame) and keeps at most `event_capacity` undrained events per
    /// controller (at least 1).
    pub fn with_settings(publish_every: u32, event_capacity: usize) -> Self {
        Self {
            shared: Arc::new(Shared {
                next_id: AtomicU64::new(1),
                publish_every: publish_every.max(1),
                event_capacity: event_capacity.max(1),
                slots: Mutex::new(BTreeMap::new()),
            }),
            side: None,
        }
    }

    /// A handle to the same observer whose factories register their controllers as built by
    /// the `side` endpoint ([`ControllerView::side`]): give `observer.for_side(Side::Client)`
    /// to the client configuration's factory and `observer.for_side(Side::Server)` to the
    /// server's.
    pub fn for_side(&self, side: Side) -> Observer {
        Observer {
            shared: Arc::clone(&self.shared),
            side: Some(side),
        }
    }

    /// The side this handle tags registrations with (`None` for an untagged handle).
    pub fn side(&self) -> Option<Side> {
        self.side
    }

    /// ACK frames between two snapshot publications.
    pub fn publish_every(&self) -> u32 {
        self.shared.publish_every
    }

    /// Ids of the registered controllers, in build order.
    pub fn controllers(&self) -> Vec<ControllerId> {
        lock(&self.shared.slots).keys().copied().collect()
    }

    /// The latest published snapshot of one controller.
    pub fn snapshot(&self, id: ControllerId) -> Option<Snapshot> {
        let slot = self.slot(id)?;
        let state = lock(&slot.state);
        Some(state.snapshot.clone())
    }

    /// The most recently built controller and its latest snapshot (handy with one connection).
    pub fn latest(&self) -> Option<(ControllerId, Snapshot)> {
        let slot = lock(&self.shared.slots).values().next_back().cloned()?;
        let state = lock(&slot.state);
        Some((slot.id, state.snapshot.clone()))
    }

    /// Everything known about one controller.
    pub fn view(&self, id: ControllerId) -> Option<ControllerView> {
        let slot = self.slot(id)?;
        let live = Arc::strong_count(&slot) > 2; // the map's and ours, plus any controller
        let state = lock(&slot.state);
        Some(ControllerView {
            id,
            side: slot.side,
            origin: slot.origin,
            snapshot: state.snapshot.clone(),
            dropped_events: state.dropped,
            live,
        })
    }

    /// Take the events one controller published since the last drain, oldest first.
    pub fn drain_events(&self, id: ControllerId) -> Vec<CcEvent> {
        match self.slot(id) {
            Some(slot) => lock(&slot.state).events.drain(..).collect(),
            None => Vec::new(),
        }
    }

    /// Take the events of every controller, grouped by controller in build order.
    pub fn drain_all(&self) -> Vec<(ControllerId, CcEvent)> {
        let slots: Vec<Arc<Slot>> = lock(&self.shared.slots).values().cloned().collect();
        let mut out = Vec::new();
        for slot in slots {
            let mut state = lock(&slot.state);
            out.extend(state.events.drain(..).map(|e| (slot.id, e)));
        }
        out
    }

    /// Forget one controller. It keeps running but publishes nowhere visible.
    pub fn remove(&self, id: ControllerId) -> bool {
        lock(&self.shared.slots).remove(&id).is_some()
    }

    /// Forget every controller that has been dropped (with all its copies); returns how many.
    pub fn prune(&self) -> usize {
        let mut slots = lock(&self.shared.slots);
        let before = slots.len();
        slots.retain(|_, slot| Arc::strong_count(slot) > 1);
        before - slots.len()
    }

    fn slot(&self, id: ControllerId) -> Option<Arc<Slot>> {
        lock(&self.shared.slots).get(&id).cloned()
    }

    /// Register a new controller built at `origin` (called by the factory's `build`).
    pub(crate) fn register(&self, origin: Instant, initial: Snapshot) -> Tap {
        let id = ControllerId(self.shared.next_id.fetch_add(1, Ordering::Relaxed));
        let slot = Arc::new(Slot {
            id,
            side: self.side,
            origin,
            event_capacity: self.shared.event_capacity,
            state: Mutex::new(SlotState {
                snapshot: initial,
                ..SlotState::default()
            }),
        });
        lock(&self.shared.slots).insert(id, Arc::clone(&slot));
        Tap {
            slot,
            publish_every: self.shared.publish_every,
            frames_since_publish: 0,
            seq: 0,
            pending: Vec::new(),
        }
    }
}

/// The controller's side of a slot: buffers events until a publication succeeds.
pub(crate) struct Tap {
    slot: Arc<Slot>,
    publish_every: u32,
    frames_since_publish: u32,
    seq: u64,
    pending: Vec<CcEvent>,
}

impl Clone for Tap {
    /// A clone (quinn's `clone_box`, e.g. on path migration or for `congestion_state()`
    /// inspection) shares the slot but not the undelivered events, so that they are published
    /// once only.
    fn clone(&self) -> Self {
        Self {
            slot: Arc::clone(&self.slot),
            publish_every: self.publish_every,
            frames_since_publish: self.frames_since_publish,
            seq: self.seq,
            pending: Vec::new(),
        }
    }
}

impl Tap {
    /// The controller id of this slot.
    pub(crate) fn id(&self) -> ControllerId {
        self.slot.id
    }

    /// Queue an event for publication.
    pub(crate) fn push(&mut self, event: CcEvent) {
        self.pending.push(event);
    }

    /// One ACK frame was processed: should the caller publish now?
    pub(crate) fn frame_done(&mut self) -> bool {
        self.frames_since_publish = self.frames_since_publish.saturating_add(1);
        !self.pending.is_empty() || self.frames_since_publish >= self.publish_every
    }

    /// True when events wait for publication.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Publish without blocking; on contention keep everything for the next attempt.
    pub(crate) fn try_publish(&mut self, snapshot: impl FnOnce() -> Snapshot) {
        let slot = Arc::clone(&self.slot);
        let Ok(mut state) = slot.state.try_lock() else {
            return;
        };
        self.publish_locked(&mut state, snapshot);
    }

    /// Publish, waiting for the lock (used on drop so nothing is lost).
    pub(crate) fn publish_blocking(&mut self, snapshot: impl FnOnce() -> Snapshot) {
        let slot = Arc::clone(&self.slot);
        let mut state = lock(&slot.state);
        self.publish_locked(&mut state, snapshot);
    }

    fn publish_locked(&mut self, state: &mut SlotState, snapshot: impl FnOnce() -> Snapshot) {
        self.seq += 1;
        self.frames_since_publish = 0;
        for event in self.pending.drain(..) {
            if state.events.len() >= self.slot.event_capacity {
                state.events.pop_front();
                state.dropped += 1;
            }
            state.events.push_back(event);
        }
        // A clone carries the sequence number it was cloned with, so its snapshots lose
        // against those of the controller that kept running.
        if self.seq > state.seq {
            state.seq = self.seq;
            state.snapshot = snapshot();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(cwnd: u32) -> Snapshot {
        Snapshot {
            cwnd,
            ..Snapshot::default()
        }
    }

    fn event(t_us: u64) -> CcEvent {
        CcEvent::RecoveryEnded { t_us, cwnd: 7 }
    }

    #[test]
    fn ids_are_assigned_in_build_order() {
        let obs = Observer::new();
        let a = obs.register(Instant::now(), snap(1));
        let b = obs.register(Instant::now(), snap(2));
        assert_eq!(a.id(), ControllerId(1));
        assert_eq!(b.id(), ControllerId(2));
        assert_eq!(obs.controllers(), vec![ControllerId(1), ControllerId(2)]);
        assert_eq!(
            obs.latest().map(|(id, s)| (id, s.cwnd)),
            Some((ControllerId(2), 2))
        );
    }

    #[test]
    fn publishes_every_n_frames_or_on_events() {
        let obs = Observer::with_settings(3, 10);
        let mut tap = obs.register(Instant::now(), snap(0));
        assert!(!tap.frame_done());
        assert!(!tap.frame_done());
        assert!(tap.frame_done());
        tap.try_publish(|| snap(30));
        assert_eq!(obs.snapshot(tap.id()).map(|s| s.cwnd), Some(30));
        tap.push(event(5));
        assert!(tap.frame_done(), "a pending event forces publication");
        tap.try_publish(|| snap(31));
        assert_eq!(obs.drain_events(tap.id()), vec![event(5)]);
        assert!(obs.drain_events(tap.id()).is_empty());
    }

    #[test]
    fn contention_keeps_events_for_later() {
        let obs = Observer::new();
        let mut tap = obs.register(Instant::now(), snap(0));
        tap.push(event(1));
        {
            let slot = Arc::clone(&tap.slot);
            let held = lock(&slot.state);
            tap.try_publish(|| snap(9));
            assert!(held.events.is_empty());
        }
        assert!(tap.has_pending());
        tap.try_publish(|| snap(10));
        assert!(!tap.has_pending());
        assert_eq!(obs.drain_events(tap.id()), vec![event(1)]);
        assert_eq!(obs.snapshot(tap.id()).map(|s| s.cwnd), Some(10));
    }

    #[test]
    fn stale_clone_does_not_overwrite_newer_snapshot() {
        let obs = Observer::new();
        let mut live = obs.register(Instant::now(), snap(0));
        let mut stale = live.clone();
        live.publish_blocking(|| snap(1));
        live.publish_blocking(|| snap(2));
        stale.publish_blocking(|| snap(99));
        assert_eq!(obs.snapshot(live.id()).map(|s| s.cwnd), Some(2));
    }

    #[test]
    fn queue_is_bounded_and_counts_drops() {
        let obs = Observer::with_settings(1, 2);
        let mut tap = obs.register(Instant::now(), snap(0));
        for t in 0..5 {
            tap.push(event(t));
        }
        tap.publish_blocking(|| snap(0));
        let view = obs.view(tap.id()).map(|v| (v.dropped_events, v.live));
        assert_eq!(view, Some((3, true)));
        assert_eq!(obs.drain_events(tap.id()), vec![event(3), event(4)]);
    }

    #[test]
    fn prune_forgets_dead_connections_only() {
        let obs = Observer::new();
        let dead = obs.register(Instant::now(), snap(0));
        let alive = obs.register(Instant::now(), snap(0));
        let dead_id = dead.id();
        drop(dead);
        assert_eq!(obs.view(dead_id).map(|v| v.live), Some(false));
        assert_eq!(obs.prune(), 1);
        assert_eq!(obs.controllers(), vec![alive.id()]);
        assert!(obs.remove(alive.id()));
        assert!(obs.controllers().is_empty());
    }

    #[test]
    fn side_tagged_handles_share_one_observer() {
        let obs = Observer::new();
        let origin = Instant::now();
        let client = obs.for_side(Side::Client).register(origin, snap(1));
        let server = obs.for_side(Side::Server).register(origin, snap(2));
        let untagged = obs.register(origin, snap(3));
        let side = |id| obs.view(id).and_then(|v| v.side);
        assert_eq!(side(client.id()), Some(Side::Client));
        assert_eq!(side(server.id()), Some(Side::Server));
        assert_eq!(side(untagged.id()), None);
        assert_eq!(obs.view(client.id()).map(|v| v.origin), Some(origin));
        assert_eq!(obs.controllers().len(), 3);
        assert_eq!(client.id().to_string(), "1");
        assert_eq!(format!("controller {}", server.id()), "controller 2");
    }
}
