use super::*;

fn usage(text: &str) -> String {
    match parse_connections(text) {
        Err(TransferError::Usage(m)) => m,
        other => panic!("{text:?}: {other:?}"),
    }
}

#[test]
fn lists_parse_in_order() {
    assert_eq!(
        parse_connections("1,2,4,8").expect("list"),
        vec![1, 2, 4, 8]
    );
    assert_eq!(parse_connections(" 4 , 1 ").expect("list"), vec![4, 1]);
    assert_eq!(parse_connections("32").expect("one"), vec![32]);
}

#[test]
fn bad_lists_name_the_bad_value() {
    assert_eq!(usage("1,0,4"), "--connections 1,0,4: 0: must be 1 to 32");
    assert_eq!(usage("33"), "--connections 33: 33: must be 1 to 32");
    assert_eq!(usage("1,x"), "--connections 1,x: \"x\" is not a number");
    assert_eq!(usage("1,-2"), "--connections 1,-2: \"-2\" is not a number");
    assert_eq!(
        usage(""),
        "--connections : empty: give a list such as 1,2,4,8"
    );
    assert_eq!(
        usage("1,,2"),
        "--connections 1,,2: an empty value in the list"
    );
    assert_eq!(usage("2,1,2"), "--connections 2,1,2: 2 is given twice");
}

fn run(connections: u16, seconds: f64, cpu: (f64, f64), invalid: Option<&str>) -> ConnRun {
    ConnRun {
        connections,
        round: 1,
        bytes: 1_000_000_000,
        seconds,
        sender_cpu_s: Some(cpu.0),
        receiver_cpu_s: Some(cpu.1),
        invalid: invalid.map(Into::into),
    }
}

#[test]
fn cpu_per_gb_is_seconds_over_gigabytes() {
    assert_eq!(cpu_per_gb(1.5, 3_000_000_000), Some(0.5));
    assert_eq!(cpu_per_gb(0.25, 500_000_000), Some(0.5));
    assert_eq!(cpu_per_gb(1.0, 0), None);
    let r = run(2, 8.0, (0.75, 1.25), None);
    assert_eq!(r.mbps(), 1000.0);
    assert_eq!(r.sender_cpu_per_gb(), Some(0.75));
    assert_eq!(r.receiver_cpu_per_gb(), Some(1.25));
}

#[test]
fn medians_leave_invalid_runs_out_and_ratios_are_to_one_connection() {
    let runs = vec![
        run(1, 8.0, (1.0, 2.0), None), // 1000 Mbit/s
        run(2, 4.0, (1.5, 2.0), None), // 2000
        run(1, 4.0, (0.5, 1.0), None), // 2000
        run(2, 2.0, (1.0, 4.0), None), // 4000
        run(2, 0.5, (9.0, 9.0), Some("emulator lateness p99 2.1 ms")),
        run(1, 2.0, (2.0, 1.5), None), // 4000
    ];
    let rows = summarise(&[1, 2, 4], &runs);
    assert_eq!(
        rows[0],
        ConnRow {
            connections: 1,
            counted: 3,
            runs: 3,
            mbps: Some(2000.0),
            sender_cpu_gb: Some(1.0),
            receiver_cpu_gb: Some(1.5),
        }
    );
    assert_eq!(
        rows[1],
        ConnRow {
            connections: 2,
            counted: 2,
            runs: 3,
            mbps: Some(3000.0),
            sender_cpu_gb: Some(1.25),
            receiver_cpu_gb: Some(3.0),
        }
    );
    assert_eq!(rows[2].counted, 0);
    assert_eq!(rows[2].mbps, None);
    assert_eq!(ratio_to(rows[1].mbps, rows[0].mbps), Some(1.5));
    assert_eq!(
        ratio_to(rows[1].receiver_cpu_gb, rows[0].receiver_cpu_gb),
        Some(2.0)
    );
    assert_eq!(ratio_to(Some(1.0), Some(0.0)), None);
    assert_eq!(ratio_to(None, Some(1.0)), None);
}

#[test]
fn table_has_a_row_per_n_with_ratios() {
    let runs = vec![
        run(1, 8.0, (1.0, 2.0), None),
        run(2, 4.0, (1.5, 2.0), None),
        run(8, 2.0, (1.0, 1.0), Some("late")),
    ];
    let t = table(&summarise(&[1, 2, 8], &runs));
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(
        lines[0],
        "  -C  runs     Mbit/s  x(-C 1)    sender s/GB  x(-C 1)  receiver s/GB  x(-C 1)"
    );
    assert_eq!(
        lines[1],
        "   1   1/1     1000.0    1.000          1.000    1.000          2.000    1.000"
    );
    assert_eq!(
        lines[2],
        "   2   1/1     2000.0    2.000          1.500    1.500          2.000    1.000"
    );
    assert_eq!(
        lines[3],
        "   8   0/1          -        -              -        -              -        -"
    );
    assert!(
        lines[4].starts_with("(medians of the runs that count"),
        "{t}"
    );
}

#[test]
fn table_without_one_connection_compares_with_the_first_row() {
    let runs = vec![run(2, 8.0, (1.0, 1.0), None), run(4, 4.0, (1.0, 1.0), None)];
    let t = table(&summarise(&[2, 4], &runs));
    assert!(t.starts_with("  -C  runs     Mbit/s  x(-C 2)"), "{t}");
    assert!(t.contains("   4   1/1     2000.0    2.000"), "{t}");
    assert_eq!(table(&[]), "(no runs)\n");
}

#[test]
fn run_lines_say_why_a_run_is_left_out() {
    let r = run(4, 8.0, (1.0, 2.0), Some("emulator lateness"));
    assert_eq!(
        r.line(),
        "round 1 -C 4: 1000.0 Mbit/s (1000000000 bytes in 8.000 s), CPU s/GB sender 1.000 \
         receiver 2.000, INVALID (left out): emulator lateness"
    );
}
