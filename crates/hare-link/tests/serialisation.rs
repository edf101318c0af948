//! Rate, delay and drop-tail behaviour of a single link, in virtual time.

use std::collections::VecDeque;

use hare_link::{BitRate, ByteSize, DropReason, Link, LinkConfig, TimeSpan, Verdict};

const SEC: u64 = 1_000_000_000;

fn link(rate: u64, delay: u64) -> LinkConfig {
    LinkConfig::new(BitRate(rate), TimeSpan(delay))
}

/// Offers packets as fast as a 64-packet queue admits, for `duration` of virtual time;
/// returns the IP bytes whose last bit left the bottleneck by `duration`.
fn saturate(rate: u64, sizes: &[u32], duration: u64) -> u64 {
    let delay = 40_000_000;
    let mut cfg = link(rate, delay);
    cfg.queue_packets = Some(64);
    let mut link = Link::new(&cfg).expect("valid config");
    let mut now = 0;
    let mut in_queue: VecDeque<u64> = VecDeque::new();
    let mut departed_bytes = 0u64;
    let mut next = 0usize;
    // Each iteration either admits a packet or advances `now` to a departure, so twice the
    // number of smallest packets that fit in `duration` (plus slack) bounds the loop.
    let min_len = u64::from(*sizes.iter().min().expect("sizes"));
    let max_iterations = 2 * (rate / 8 / min_len + 1) * (duration / SEC + 1) + 1_000;
    for _ in 0..max_iterations {
        if now >= duration {
            break;
        }
        let len = sizes[next % sizes.len()];
        match link.offer(now, len) {
            Verdict::Delivered { at } => {
                let departure = at - delay;
                in_queue.push_back(departure);
                if departure <= duration {
                    departed_bytes += u64::from(len);
                }
                next += 1;
            }
            Verdict::Dropped(DropReason::QueueFull) => {
                now = in_queue.pop_front().expect("a full queue holds packets");
            }
            Verdict::Dropped(other) => panic!("unexpected drop {other:?}"),
        }
    }
    assert!(now >= duration, "the loop bound was too small");
    departed_bytes
}

fn assert_rate(rate: u64, sizes: &[u32]) {
    let duration = 10 * SEC;
    let bytes = saturate(rate, sizes, duration);
    let measured = bytes as f64 * 8.0 / 10.0;
    let error = (measured - rate as f64).abs() / rate as f64;
    assert!(
        error < 0.001,
        "rate {rate}: measured {measured} bit/s, error {error}"
    );
    // Exact arithmetic: short of the ideal by less than one largest packet.
    let ideal = rate as u128 * 10 / 8;
    let max_len = u128::from(*sizes.iter().max().expect("sizes"));
    assert!(u128::from(bytes) <= ideal && ideal - u128::from(bytes) < max_len);
}

#[test]
fn ten_gbit_back_to_back_for_ten_seconds() {
    assert_rate(10_000_000_000, &[9000]);
    assert_rate(10_000_000_000, &[1480, 1480, 80]);
}

#[test]
fn one_gbit_back_to_back_for_ten_seconds() {
    assert_rate(1_000_000_000, &[1480]);
    assert_rate(1_000_000_000, &[1481, 9000, 40]);
}

#[test]
fn odd_rate_has_no_drift() {
    // 8.5 Gbit/s: 1480 bytes take 1392 + 16/17 ns, which per-packet rounding would bias.
    assert_rate(8_500_000_000, &[1480]);
    // 1,000,003 packets of 1480 bytes take exactly 11840 * 1000003 / 8.5 ns, rounded up.
    let mut link = Link::new(&link(8_500_000_000, 0)).expect("valid");
    let mut last = 0;
    for _ in 0..1_000_003u64 {
        match link.offer(0, 1480) {
            Verdict::Delivered { at } => last = at,
            v => panic!("{v:?}"),
        }
    }
    let exact_num = 11_840u128 * 1_000_003 * 1_000_000_000;
    let expected = exact_num.div_ceil(8_500_000_000) as u64;
    assert_eq!(last, expected);
}

#[test]
fn idle_link_delay_is_exact() {
    // 10 Gbit/s, 40 ms: 9000 bytes serialise in 7200 ns.
    let mut l = Link::new(&link(10_000_000_000, 40_000_000)).expect("valid");
    assert_eq!(
        l.offer(5, 9000),
        Verdict::Delivered {
            at: 5 + 7_200 + 40_000_000
        }
    );
    // After the queue drained, the next packet again sees an idle link.
    assert_eq!(
        l.offer(SEC, 1500),
        Verdict::Delivered {
            at: SEC + 1_200 + 40_000_000
        }
    );
    // 1 Gbit/s, 11.4 ms: 1480 bytes serialise in 11840 ns.
    let mut l = Link::new(&link(1_000_000_000, 11_400_000)).expect("valid");
    assert_eq!(
        l.offer(0, 1480),
        Verdict::Delivered {
            at: 11_840 + 11_400_000
        }
    );
    // Fractional serialisation time is rounded up: 1480 B at 8.5 Gbit/s = 1392.94 ns.
    let mut l = Link::new(&link(8_500_000_000, 1_000)).expect("valid");
    assert_eq!(l.offer(0, 1480), Verdict::Delivered { at: 1_393 + 1_000 });
    // Back to back: the second packet departs one serialisation time later.
    assert_eq!(l.offer(0, 1480), Verdict::Delivered { at: 2_786 + 1_000 });
}

#[test]
fn drop_tail_in_packets_is_exact() {
    let mut cfg = link(1_000_000_000, 1_000_000);
    cfg.queue_packets = Some(10);
    let mut l = Link::new(&cfg).expect("valid");
    for i in 0..10u64 {
        assert_eq!(
            l.offer(0, 1500),
            Verdict::Delivered {
                at: (i + 1) * 12_000 + 1_000_000
            },
            "packet {i}"
        );
    }
    assert_eq!(l.queue_packets(0), 10);
    assert_eq!(l.offer(0, 1500), Verdict::Dropped(DropReason::QueueFull));
    // One ns before the first departure the queue is still full; at it, one slot frees.
    assert_eq!(l.offer(11_999, 40), Verdict::Dropped(DropReason::QueueFull));
    assert_eq!(l.queue_packets(12_000), 9);
    assert_eq!(
        l.offer(12_000, 1500),
        Verdict::Delivered {
            at: 11 * 12_000 + 1_000_000
        }
    );
    assert_eq!(
        l.offer(12_000, 1500),
        Verdict::Dropped(DropReason::QueueFull)
    );
    let s = l.stats();
    assert_eq!((s.offered_packets, s.delivered_packets), (14, 11));
    assert_eq!(s.dropped.queue_full, 3);
    assert_eq!(s.max_queue_packets, 10);
}

#[test]
fn drop_tail_in_bytes_is_exact() {
    let mut cfg = link(1_000_000_000, 0);
    cfg.queue_bytes = Some(ByteSize(10_000));
    let mut l = Link::new(&cfg).expect("valid");
    // 6 x 1500 = 9000 bytes fit; a 7th of 1500 would make 10500 > 10000.
    for _ in 0..6 {
        assert!(matches!(l.offer(0, 1500), Verdict::Delivered { .. }));
    }
    assert_eq!(l.offer(0, 1500), Verdict::Dropped(DropReason::QueueFull));
    // Exactly filling the limit is allowed: 9000 + 1000 = 10000.
    assert!(matches!(l.offer(0, 1000), Verdict::Delivered { .. }));
    assert_eq!(l.offer(0, 1), Verdict::Dropped(DropReason::QueueFull));
    assert_eq!(l.queue_bytes(0), 10_000);
    // The first packet leaves at 12000 ns: 1500 bytes of room.
    assert_eq!(l.queue_bytes(12_000), 8_500);
    assert!(matches!(l.offer(12_000, 1500), Verdict::Delivered { .. }));
    assert_eq!(l.offer(12_000, 1), Verdict::Dropped(DropReason::QueueFull));
    assert_eq!(l.stats().max_queue_bytes, 10_000);
}

#[test]
fn both_limits_apply() {
    let mut cfg = link(1_000_000_000, 0);
    cfg.queue_bytes = Some(ByteSize(3_000));
    cfg.queue_packets = Some(4);
    let mut l = Link::new(&cfg).expect("valid");
    // Small packets hit the packet limit first.
    for _ in 0..4 {
        assert!(matches!(l.offer(0, 100), Verdict::Delivered { .. }));
    }
    assert_eq!(l.offer(0, 100), Verdict::Dropped(DropReason::QueueFull));
    // Large packets hit the byte limit first (after the small ones drained).
    let t = 4 * 800;
    assert_eq!(l.queue_packets(t), 0);
    for _ in 0..2 {
        assert!(matches!(l.offer(t, 1500), Verdict::Delivered { .. }));
    }
    assert_eq!(l.offer(t, 1), Verdict::Dropped(DropReason::QueueFull));
}

#[test]
fn time_never_goes_back() {
    let mut l = Link::new(&link(1_000_000_000, 0)).expect("valid");
    assert_eq!(l.offer(100_000, 1500), Verdict::Delivered { at: 112_000 });
    // An earlier `now` is treated as the latest seen: the packet queues behind the first.
    assert_eq!(l.offer(50, 1500), Verdict::Delivered { at: 124_000 });
    assert_eq!(l.busy_until(), 124_000);
}
