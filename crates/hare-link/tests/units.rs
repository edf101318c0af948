//! Parsing and formatting of rates, sizes and durations.

use hare_link::units::{
    format_duration, format_rate, format_size, parse_duration, parse_rate, parse_size, BitRate,
    ByteSize, TimeSpan, UnitError,
};
use proptest::prelude::*;

#[test]
fn rates_are_si_bits_per_second() {
    let cases: &[(&str, u64)] = &[
        ("10g", 10_000_000_000),
        ("10G", 10_000_000_000),
        ("8.5gbit", 8_500_000_000),
        ("100m", 100_000_000),
        ("1.6 Gbit/s", 1_600_000_000),
        ("100 Mbit/s", 100_000_000),
        ("250 kbit/s", 250_000),
        ("100mbps", 100_000_000),
        ("1000000", 1_000_000),
        ("1e10", 10_000_000_000),
        ("  42 bits/s ", 42),
        ("2.5t", 2_500_000_000_000),
        ("0.5", 1), // fractions of a bit/s round half up
    ];
    for &(input, bps) in cases {
        assert_eq!(parse_rate(input), Ok(BitRate(bps)), "{input}");
    }
}

#[test]
fn sizes_are_powers_of_two() {
    let cases: &[(&str, u64)] = &[
        ("60m", 60 << 20),
        ("100 MiB", 100 << 20),
        ("100MB", 100 << 20),
        ("64k", 64 << 10),
        ("64 KiB", 64 << 10),
        ("1.5g", 3 << 29),
        ("2 GB", 2 << 30),
        ("9000", 9000),
        ("9000 B", 9000),
        ("9000 bytes", 9000),
        ("1t", 1 << 40),
    ];
    for &(input, bytes) in cases {
        assert_eq!(parse_size(input), Ok(ByteSize(bytes)), "{input}");
    }
}

#[test]
fn durations_need_a_unit() {
    let cases: &[(&str, u64)] = &[
        ("40ms", 40_000_000),
        ("80 ms", 80_000_000),
        ("11.4ms", 11_400_000),
        ("250us", 250_000),
        ("250µs", 250_000),
        ("20s", 20_000_000_000),
        ("1.5 s", 1_500_000_000),
        ("100ns", 100),
        ("0s", 0),
    ];
    for &(input, ns) in cases {
        assert_eq!(parse_duration(input), Ok(TimeSpan(ns)), "{input}");
    }
}

#[test]
fn formatting_is_exact_and_readable() {
    assert_eq!(format_rate(BitRate(10_000_000_000)), "10 Gbit/s");
    assert_eq!(format_rate(BitRate(8_500_000_000)), "8.5 Gbit/s");
    assert_eq!(format_rate(BitRate(1_234_567)), "1.234567 Mbit/s");
    assert_eq!(format_rate(BitRate(999)), "999 bit/s");
    assert_eq!(format_size(ByteSize(60 << 20)), "60 MiB");
    assert_eq!(format_size(ByteSize(1536)), "1.5 KiB");
    assert_eq!(format_size(ByteSize(12_345)), "12345 B");
    assert_eq!(format_duration(TimeSpan(11_400_000)), "11.4 ms");
    assert_eq!(format_duration(TimeSpan(250_000)), "250 us");
    assert_eq!(format_duration(TimeSpan(1_000_000_001)), "1.000000001 s");
    assert_eq!(format_duration(TimeSpan(0)), "0 s");
    assert_eq!(BitRate(10_000_000_000).to_string(), "10 Gbit/s");
}

#[test]
fn errors_name_the_input_and_say_what_is_expected() {
    let e = parse_rate("10x").expect_err("bad");
    assert_eq!(e, UnitError::Rate("10x".into()));
    assert_eq!(
        e.to_string(),
        "bad rate `10x`: expected a number with an optional k/m/g/t suffix and optional \
         bit/s, e.g. 10g, 8.5gbit, 100 Mbit/s"
    );
    // Bytes per second are refused rather than guessed.
    assert!(parse_rate("100 MB/s").is_err());
    assert!(parse_rate("100MBps").is_err());
    assert!(parse_rate("-5g").is_err());
    assert!(parse_rate("").is_err());
    let e = parse_size("60 mbit").expect_err("bad");
    assert!(
        e.to_string().starts_with("bad size `60 mbit`: expected"),
        "{e}"
    );
    let e = parse_duration("40").expect_err("bad");
    assert!(
        e.to_string().starts_with("bad duration `40`: expected"),
        "{e}"
    );
    assert!(parse_duration("40 min").is_err());
    let e = parse_rate("20000000000000000000").expect_err("too large");
    assert!(
        e.to_string()
            .contains("`20000000000000000000` is too large"),
        "{e}"
    );
    assert!(parse_size("17179869184g").is_err());
    assert!(parse_duration("1e30s").is_err());
}

proptest! {
    #[test]
    fn rates_round_trip(bps in any::<u64>()) {
        prop_assert_eq!(parse_rate(&format_rate(BitRate(bps))), Ok(BitRate(bps)));
    }

    #[test]
    fn sizes_round_trip(bytes in any::<u64>()) {
        prop_assert_eq!(parse_size(&format_size(ByteSize(bytes))), Ok(ByteSize(bytes)));
    }

    #[test]
    fn round_sizes_round_trip(k in 0u64..1_000_000, shift in prop::sample::select(vec![10u32, 17, 20, 30])) {
        let size = ByteSize(k << shift);
        prop_assert_eq!(parse_size(&format_size(size)), Ok(size));
    }

    #[test]
    fn durations_round_trip(ns in any::<u64>()) {
        prop_assert_eq!(parse_duration(&format_duration(TimeSpan(ns))), Ok(TimeSpan(ns)));
    }

    #[test]
    fn parsers_never_panic(s in "\\PC{0,24}") {
        let _ = parse_rate(&s);
        let _ = parse_size(&s);
        let _ = parse_duration(&s);
    }
}
