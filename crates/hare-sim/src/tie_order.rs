//! The order in which the flows of a shared path act within one pass of the loop.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// ChaCha8 stream of the seed that draws the orders: hare-link takes stream 0 of its seed
/// for jitter and 1, 2, ... for its loss models, so a tie order seeded like the shared link
/// never shares their numbers.
const STREAM: u64 = u64::MAX;

/// A fresh uniformly random order of the flows for every pass, drawn from a seeded stream:
/// a run stays reproducible for its seed, and no flow holds a fixed place.
pub(crate) struct TieOrder {
    order: Vec<usize>,
    rng: ChaCha8Rng,
}

impl TieOrder {
    /// Orders of `flows` flows drawn from `seed`.
    pub fn new(flows: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(STREAM);
        TieOrder {
            order: (0..flows).collect(),
            rng,
        }
    }

    /// The order of the next pass: a permutation of the flow indices. One flow draws
    /// nothing, so a one-flow run does exactly what it did without this.
    pub fn next_pass(&mut self) -> &[usize] {
        if self.order.len() > 1 {
            self.order.shuffle(&mut self.rng);
        }
        &self.order
    }

    /// Words drawn from the stream so far.
    #[cfg(test)]
    fn drawn(&self) -> u128 {
        self.rng.get_word_pos()
    }
}

#[cfg(test)]
mod tests {
    use super::TieOrder;

    #[test]
    fn one_flow_keeps_its_place_and_draws_nothing() {
        let mut t = TieOrder::new(1, 7);
        for _ in 0..100 {
            assert_eq!(t.next_pass(), [0]);
        }
        assert_eq!(t.drawn(), 0);
    }

    #[test]
    fn every_pass_is_a_permutation_and_every_order_comes_equally_often() {
        // Three flows, 60,000 passes: each of the 6 orders 10,000 times in expectation
        // (standard deviation about 91), and each flow first a third of the time.
        let mut t = TieOrder::new(3, 1);
        let mut counts = std::collections::HashMap::new();
        for _ in 0..60_000 {
            let o = t.next_pass().to_vec();
            let mut sorted = o.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2]);
            *counts.entry(o).or_insert(0u32) += 1;
        }
        assert_eq!(counts.len(), 6);
        for (order, n) in &counts {
            assert!((9_500..=10_500).contains(n), "{order:?}: {n}");
        }
    }

    #[test]
    fn a_seed_gives_one_sequence_of_orders() {
        let passes = |seed| {
            let mut t = TieOrder::new(4, seed);
            (0..50).map(|_| t.next_pass().to_vec()).collect::<Vec<_>>()
        };
        assert_eq!(passes(3), passes(3));
        assert_ne!(passes(3), passes(4));
    }
}
