//! Sharing one bottleneck: Jain's fairness index and the convergence time of a late flow.
//!
//! Both read per-flow goodput series on one time grid (Mbit/s per 1 s interval, interval
//! `i` covering `[i, i + 1)` seconds of the run), as the simulator and the emulator's
//! competing flows both produce them.

/// Jain's fairness index of `rates` (Jain, Chiu, Hawe, DEC-TR-301, 1984):
/// `(sum x)^2 / (n * sum x^2)`; 1 when all are equal, `1/n` when one takes everything.
/// `None` for an empty list or when every rate is 0 (the index is undefined).
pub fn jain(rates: &[f64]) -> Option<f64> {
    let n = rates.len() as f64;
    let sum: f64 = rates.iter().sum();
    let squares: f64 = rates.iter().map(|x| x * x).sum();
    (n > 0.0 && squares > 0.0).then(|| sum * sum / (n * squares))
}

/// How close and how long a late flow must stay to its fair share to have converged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Convergence {
    /// Largest relative distance from the fair share (0.2: within 20%).
    pub tolerance: f64,
    /// Consecutive intervals the flow must stay within it.
    pub hold_intervals: usize,
}

impl Default for Convergence {
    /// Within 20% of the fair share for 5 consecutive 1 s intervals.
    fn default() -> Self {
        Convergence {
            tolerance: 0.2,
            hold_intervals: 5,
        }
    }
}

impl Convergence {
    /// The first interval index from `from` at which `series` (one goodput value per
    /// interval) enters a run of [`Convergence::hold_intervals`] intervals each within
    /// [`Convergence::tolerance`] of `fair[i]`, the fair share in that interval; `None` when
    /// it never does (a run cut by the series' end does not count).
    pub fn first(&self, series: &[f64], fair: &[f64], from: usize) -> Option<usize> {
        let hold = self.hold_intervals.max(1);
        let within = |i: usize| {
            let share = fair.get(i).copied().unwrap_or(0.0);
            share > 0.0 && (series[i] - share).abs() <= self.tolerance * share
        };
        let mut run_start = None;
        for i in from..series.len() {
            if !within(i) {
                run_start = None;
                continue;
            }
            let start = *run_start.get_or_insert(i);
            if i + 1 - start >= hold {
                return Some(start);
            }
        }
        None
    }
}

/// One flow's delivery on the run's absolute grid of whole seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSeries {
    /// Run second at which the flow's data began (its report origin).
    pub from_s: f64,
    /// Run second at which its data ended.
    pub to_s: f64,
    /// Mbit/s in each second `[i, i + 1)` of the run.
    pub mbps: Vec<f64>,
}

impl FlowSeries {
    /// Rebins a flow's report intervals (times from its own origin, which lies at run
    /// second `origin_s`) onto the run's whole seconds: each interval's bytes go to the
    /// second holding its midpoint. With 100 ms intervals a second's value is exact to
    /// one interval's share at its edges.
    pub fn from_intervals(origin_s: f64, intervals: &[crate::Interval]) -> Self {
        let to_s = origin_s + intervals.last().map_or(0.0, |i| i.end_s);
        let bins = to_s.ceil().max(0.0) as usize;
        let mut bytes = vec![0u64; bins];
        for iv in intervals {
            let mid = origin_s + (iv.start_s + iv.end_s) / 2.0;
            if mid >= 0.0 {
                if let Some(b) = bytes.get_mut(mid as usize) {
                    *b += iv.bytes;
                }
            }
        }
        FlowSeries {
            from_s: origin_s,
            to_s,
            mbps: bytes.iter().map(|&b| crate::mbps(b, 1.0)).collect(),
        }
    }

    /// Mbit/s in second `i` (0 outside the series).
    fn at(&self, i: usize) -> f64 {
        self.mbps.get(i).copied().unwrap_or(0.0)
    }

    /// The flow delivered throughout second `i`.
    fn active(&self, i: usize) -> bool {
        self.from_s <= i as f64 && (i + 1) as f64 <= self.to_s
    }
}

/// How several flows shared the bottleneck.
#[derive(Debug, Clone, PartialEq)]
pub struct Sharing {
    /// The whole seconds `[from, to)` in which every flow delivered (`None`: there were
    /// none).
    pub window_s: Option<(usize, usize)>,
    /// Jain's index of the flows' mean goodputs over that window.
    pub jain: Option<f64>,
    /// Per flow: mean Mbit/s over the window.
    pub window_mbps: Vec<Option<f64>>,
    /// Per flow: seconds from its start to its convergence (see [`Convergence`]) on the
    /// fair share (the active flows' total over their number, per second); `None` for the
    /// first flow(s) to start and for a flow that never converged.
    pub convergence_s: Vec<Option<f64>>,
}

/// How `flows` shared the bottleneck, with the convergence rule `rule`.
pub fn sharing(flows: &[FlowSeries], rule: &Convergence) -> Sharing {
    let from = flows.iter().map(|f| f.from_s.ceil()).fold(0.0, f64::max) as usize;
    let to = flows
        .iter()
        .map(|f| f.to_s.floor())
        .fold(f64::MAX, f64::min);
    let to = if flows.is_empty() {
        0
    } else {
        to.max(0.0) as usize
    };
    let window_s = (to > from).then_some((from, to));
    let window_mbps: Vec<Option<f64>> = flows
        .iter()
        .map(|f| window_s.map(|(a, b)| (a..b).map(|i| f.at(i)).sum::<f64>() / (b - a) as f64))
        .collect();
    let jain = window_mbps
        .iter()
        .copied()
        .collect::<Option<Vec<f64>>>()
        .and_then(|v| jain(&v));
    let bins = flows.iter().map(|f| f.mbps.len()).max().unwrap_or(0);
    let fair: Vec<f64> = (0..bins)
        .map(|i| {
            let active: Vec<&FlowSeries> = flows.iter().filter(|f| f.active(i)).collect();
            let total: f64 = active.iter().map(|f| f.at(i)).sum();
            if active.is_empty() {
                0.0
            } else {
                total / active.len() as f64
            }
        })
        .collect();
    let first_start = flows.iter().map(|f| f.from_s).fold(f64::MAX, f64::min);
    let convergence_s = flows
        .iter()
        .map(|f| {
            if f.from_s <= first_start {
                return None;
            }
            let from = f.from_s.ceil() as usize;
            let series: Vec<f64> = (0..bins).map(|i| f.at(i)).collect();
            rule.first(&series, &fair, from)
                .map(|i| i as f64 - f.from_s)
        })
        .collect();
    Sharing {
        window_s,
        jain,
        window_mbps,
        convergence_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_of_known_vectors() {
        assert_eq!(jain(&[10.0, 10.0]), Some(1.0));
        assert_eq!(jain(&[10.0, 0.0]), Some(0.5));
        assert_eq!(jain(&[1.0, 0.0, 0.0, 0.0]), Some(0.25));
        // (1+2+3)^2 / (3 * (1+4+9)) = 36/42.
        assert_eq!(jain(&[1.0, 2.0, 3.0]), Some(36.0 / 42.0));
        // (3+1)^2 / (2 * 10) = 0.8.
        assert_eq!(jain(&[3.0, 1.0]), Some(0.8));
        assert_eq!(jain(&[]), None);
        assert_eq!(jain(&[0.0, 0.0]), None);
    }

    #[test]
    fn convergence_needs_five_intervals_in_a_row_within_20_percent() {
        let c = Convergence::default();
        let fair = [50.0; 12];
        // Within from index 3 (40 and 60 are at the 20% edges), broken at 5, held 6..=10.
        let s = [
            0.0, 10.0, 30.0, 40.0, 60.0, 61.0, 45.0, 55.0, 50.0, 41.0, 59.0, 50.0,
        ];
        assert_eq!(c.first(&s, &fair, 0), Some(6));
        // Never five in a row.
        let never = [50.0, 50.0, 50.0, 50.0, 70.0, 50.0, 50.0, 50.0, 50.0, 20.0];
        assert_eq!(c.first(&never, &fair, 0), None);
        // Cut by the end of the series.
        assert_eq!(c.first(&[0.0, 50.0, 50.0, 50.0, 50.0], &fair, 0), None);
        // Searching from a later interval.
        let early = [50.0; 10];
        assert_eq!(c.first(&early, &fair, 3), Some(3));
        // A fair share of 0 is never met.
        assert_eq!(c.first(&[0.0; 6], &[0.0; 6], 0), None);
    }

    fn series(from_s: f64, mbps: &[f64]) -> FlowSeries {
        FlowSeries {
            from_s,
            to_s: mbps.len() as f64,
            mbps: mbps.to_vec(),
        }
    }

    #[test]
    fn sharing_over_the_seconds_all_flows_delivered() {
        // Flow 0 alone for 2 s, then flow 1 ramps up and converges at second 4.
        let a = series(
            0.0,
            &[100.0, 100.0, 90.0, 80.0, 50.0, 50.0, 50.0, 50.0, 50.0, 50.0],
        );
        let b = series(
            2.0,
            &[0.0, 0.0, 10.0, 20.0, 50.0, 50.0, 50.0, 50.0, 50.0, 50.0],
        );
        let s = sharing(&[a, b], &Convergence::default());
        assert_eq!(s.window_s, Some((2, 10)));
        // Means over seconds 2..10: a = (90+80+300)/8, b = (10+20+300)/8.
        assert_eq!(s.window_mbps, vec![Some(470.0 / 8.0), Some(330.0 / 8.0)]);
        assert_eq!(s.convergence_s, vec![None, Some(2.0)]);
        assert!(s.jain.is_some_and(|j| j > 0.97 && j < 0.98));
    }

    #[test]
    fn intervals_rebin_by_their_midpoint_on_the_run_grid() {
        let iv = |start_s: f64, end_s: f64, bytes: u64| crate::Interval {
            start_s,
            end_s,
            bytes,
            ..Default::default()
        };
        // Origin at 0.95 s: the first interval's midpoint is 1.0, the second's 1.1.
        let f = FlowSeries::from_intervals(0.95, &[iv(0.0, 0.1, 1000), iv(0.1, 0.2, 500)]);
        assert_eq!(f.mbps, vec![0.0, crate::mbps(1500, 1.0)]);
        assert_eq!(f.to_s, 0.95 + 0.2);
    }
}
