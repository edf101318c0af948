//! Several connections through one bottleneck: [`simulate_flows`].
//!
//! Each flow is a whole simulated connection (its own quinn client and server, controller,
//! seed, workload and reverse direction, exactly as [`crate::simulate`] runs one) whose
//! data direction offers to one shared hare-link [`Link`]: one serialiser, one queue, one
//! drop-tail limit, one set of loss models. A flow's own base RTT is the path's plus an
//! extra one-way delay after the bottleneck (its own access link). Flows start at their own
//! virtual time (the client's first Initial).
//!
//! # Order
//! All flows run on one thread in one event loop: each flow says when its next event is
//! (a datagram arrival, a timer, a report boundary, or its start), the loop advances to the
//! earliest and handles every flow due then. So the shared link sees offers in time order;
//! flows acting at one instant take turns in an order drawn afresh for every pass from the
//! shared link's seed (see `drive`), so a run is deterministic for its configuration (seeds
//! included) and no flow is favoured by its place in the list.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hare_link::{Link, LinkConfig, LinkStats};

use crate::config::SimConfig;
use crate::error::SimError;
use crate::output::SimOutput;
use crate::queue_sample::{QueueSample, QueueSampler};
use crate::run::{Attempt, Due, End, Runner};
use crate::tie_order::TieOrder;
use crate::window::Threads;
use crate::wire::{SharedLink, Wire};

/// One flow of a shared path.
#[derive(Debug, Clone)]
pub struct Flow {
    /// The flow's connection. Its `forward` link is ignored (the path's shared one is used);
    /// its `reverse` link is the flow's own ACK direction.
    pub cfg: SimConfig,
    /// When the flow's client starts its handshake (virtual time since the run start).
    pub start: Duration,
    /// One-way delay the flow's data take after the shared bottleneck (its base RTT minus
    /// the path's).
    pub extra_delay: Duration,
}

/// What a run of several flows produced.
#[derive(Debug)]
pub struct FlowsOutput {
    /// Each flow's output, in the order given; a flow that failed carries its error (with
    /// its partial output where there is one).
    pub flows: Vec<Result<SimOutput, SimError>>,
    /// The shared bottleneck's counters.
    pub link_forward: LinkStats,
    /// Wall-clock seconds the whole run took.
    pub wall_seconds: f64,
    /// Virtual seconds from the run start to the last flow's end.
    pub sim_seconds: f64,
    /// The bottleneck's queue on the grid asked of [`simulate_flows_sampled`] (empty from
    /// [`simulate_flows`]).
    pub queue: Vec<QueueSample>,
}

/// A bad flow list, before anything runs.
fn setup_error(message: String) -> SimError {
    SimError::Setup(message)
}

/// Seed of flow `index` (from 0) of a run seeded `run_seed`: the run seed plus
/// `index * 2^32`. Flow 0 keeps the run seed; repetitions (`seed + i`) and flows never
/// share a seed below 2^32 repetitions and flows.
pub fn flow_seed(run_seed: u64, index: u32) -> u64 {
    run_seed.wrapping_add(u64::from(index) << 32)
}

/// Runs `flows` through the bottleneck `forward`, all in one virtual time.
///
/// Errors: an empty list, a bad shared link or a flow's bad configuration, before anything
/// runs. A flow that fails while running (connection lost, stalled) ends alone: the others
/// go on, and its error is in [`FlowsOutput::flows`].
pub fn simulate_flows(forward: &LinkConfig, flows: &[Flow]) -> Result<FlowsOutput, SimError> {
    simulate_flows_sampled(forward, flows, None)
}

/// [`simulate_flows`], sampling the bottleneck's queue every `queue_every` of virtual time
/// (from the run's start to the last flow's end) into [`FlowsOutput::queue`].
pub fn simulate_flows_sampled(
    forward: &LinkConfig,
    flows: &[Flow],
    queue_every: Option<Duration>,
) -> Result<FlowsOutput, SimError> {
    if flows.is_empty() {
        return Err(setup_error("a shared path needs at least one flow".into()));
    }
    let wall_start = Instant::now();
    let link: SharedLink = Arc::new(Mutex::new(Link::new(forward).map_err(|e| {
        SimError::Link {
            direction: "forward",
            message: e.to_string(),
        }
    })?));
    let base = Instant::now();
    let mut slots = Vec::with_capacity(flows.len());
    for f in flows {
        let wire = Wire::shared(link.clone(), f.cfg.ip_overhead, nanos(f.extra_delay));
        let start_ns = nanos(f.start);
        slots.push(Slot {
            runner: Runner::new(&f.cfg, Threads::One, wire, start_ns, base)?,
            start_ns,
            due: None,
            out: None,
        });
    }
    let mut sampler = queue_every.map(|d| (link.clone(), QueueSampler::new(nanos(d))));
    let mut ties = TieOrder::new(slots.len(), forward.seed);
    let end_ns = drive(&mut slots, &mut sampler, &mut ties);
    let queue = sampler.map_or_else(Vec::new, |(_, s)| s.finish());
    let link_forward = *link.lock().unwrap_or_else(|p| p.into_inner()).stats();
    Ok(FlowsOutput {
        flows: slots
            .into_iter()
            .map(|s| {
                s.out
                    .unwrap_or_else(|| Err(setup_error("flow never ran".into())))
            })
            .collect(),
        link_forward,
        wall_seconds: wall_start.elapsed().as_secs_f64(),
        sim_seconds: end_ns as f64 / 1e9,
        queue,
    })
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// One flow in the loop.
struct Slot<'a> {
    runner: Runner<'a>,
    start_ns: u64,
    /// What the flow handles next (`None`: poll it first).
    due: Option<Due>,
    /// Set when the flow has ended.
    out: Option<Result<SimOutput, SimError>>,
}

impl Slot<'_> {
    /// When this flow next needs the loop at or after `now`, polling it if it has started;
    /// `None` once it has ended.
    fn next(&mut self, now: u64) -> Option<u64> {
        if self.out.is_some() {
            return None;
        }
        if self.start_ns > now {
            return Some(self.start_ns);
        }
        if self.due.is_none() {
            match self.runner.poll() {
                Ok(due) => self.due = Some(due),
                Err(end) => {
                    self.end(end);
                    return None;
                }
            }
        }
        self.due.map(|d| d.next)
    }

    fn end(&mut self, end: End) {
        self.out = Some(self.runner.finish(end, &mut |_| {}));
    }
}

/// The loop over all flows; returns the virtual time it ended at.
fn drive(
    slots: &mut [Slot<'_>],
    sampler: &mut Option<(SharedLink, QueueSampler)>,
    ties: &mut TieOrder,
) -> u64 {
    let mut now = 0;
    // Bounded: each pass handles at least one event of a flow, and every flow ends by its
    // own stall and virtual-time limits.
    loop {
        // A flow stepped at an instant transmits when it is next polled (`Runner::poll`
        // settles the endpoints: quinn's `poll_transmit`, each datagram offered to the
        // shared link), so the polling order is the order in which the datagrams of flows
        // acting at one instant reach the drop-tail queue. Such ties are common: FIFO
        // jitter bunches deliveries onto one instant, and the ACKs of several flows then
        // return together. Polled by index, flow 0 took the last free places of a nearly
        // full queue at every tie and won every run of two equal flows; a fresh random
        // order per pass gives each flow each place equally often. Stepping takes the same
        // order, as it too can offer (an endpoint's response) and reads the queue.
        let order = ties.next_pass();
        let Some(t) = order.iter().filter_map(|&i| slots[i].next(now)).min() else {
            return now;
        };
        now = now.max(t);
        if let Some((link, s)) = sampler {
            s.until(&mut link.lock().unwrap_or_else(|p| p.into_inner()), now);
        }
        for &i in order {
            let slot = &mut slots[i];
            let Some(due) = slot.due.filter(|d| d.next <= now) else {
                continue;
            };
            slot.due = None;
            match slot.runner.step(&due, &mut |_| {}) {
                Ok(None) => {}
                Ok(Some(end)) => slot.end(end),
                Err(Attempt::Failed(e)) => slot.out = Some(Err(e)),
                // One thread throughout: no window is ever asked for.
                Err(Attempt::OneThread) => {
                    slot.out = Some(Err(setup_error(
                        "the one-thread engine asked for itself".into(),
                    )))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::flow_seed;

    #[test]
    fn flow_seeds_are_the_run_seed_plus_the_index_above_32_bits() {
        assert_eq!(flow_seed(1, 0), 1);
        assert_eq!(flow_seed(1, 1), (1 << 32) + 1);
        assert_eq!(flow_seed(7, 3), (3 << 32) + 7);
        // Repetition 1 of flow 0 and repetition 0 of flow 1 differ.
        assert_ne!(flow_seed(2, 0), flow_seed(1, 1));
        assert_eq!(flow_seed(u64::MAX, 1), (1 << 32) - 1);
    }
}
