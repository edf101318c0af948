//! The thread's nuttcp rows beside hare's, second by second.

use crate::thread_data::ThreadRun;
use hare_report::{nuttcp, Interval};

/// Width of the thread's column: nuttcp's rate part (43 characters) and ` NNNNN retrans`.
const THREAD_WIDTH: usize = 43 + 14;

/// One thread cell: `  867.3289 MB /   1.00 sec = 7275.9510 Mbps     0 retrans`; the retrans
/// column is blank when the mail's nuttcp did not print it (2007).
fn thread_cell(run: &ThreadRun, i: usize) -> String {
    match run.intervals.get(i) {
        Some(iv) => {
            // The thread's own figures, in nuttcp's layout (not recomputed from MB: nuttcp's
            // seconds column is rounded to 10 ms).
            let mut s = format!(
                "{:10.4} MB / {:6.2} sec = {:9.4} Mbps",
                iv.mb, iv.sec, iv.mbps
            );
            match iv.retrans {
                Some(n) => s.push_str(&format!(" {n:5} retrans")),
                None => s.push_str(&" ".repeat(14)),
            }
            s
        }
        None => " ".repeat(THREAD_WIDTH),
    }
}

/// One hare cell: nuttcp's rate part, lost packets and cwnd in segments at the interval end.
fn hare_cell(iv: Option<&Interval>) -> String {
    match iv {
        Some(iv) => {
            let mut s = nuttcp::rate_part(iv.bytes, iv.seconds());
            s.push_str(&format!(" {:5} lost", iv.lost_packets));
            if let Some(c) = iv.cwnd_segments {
                s.push_str(&format!("  cwnd {c:7}"));
            }
            s
        }
        None => String::new(),
    }
}

/// The side-by-side table: a header naming both columns, then one line per second with the
/// thread's row on the left and hare's on the right (blank where one side has no row).
pub fn format(
    thread: Option<&ThreadRun>,
    thread_label: &str,
    hare: &[Interval],
    hare_label: &str,
) -> String {
    let n_thread = thread.map_or(0, |t| t.intervals.len());
    let n = n_thread.max(hare.len());
    let mut out = String::new();
    out.push_str(&format!(
        "{:>4} | {:<w$} | {}\n",
        "s",
        truncate(thread_label, THREAD_WIDTH),
        hare_label,
        w = THREAD_WIDTH
    ));
    out.push_str(&format!(
        "{}-+-{}-+-{}\n",
        "-".repeat(4),
        "-".repeat(THREAD_WIDTH),
        "-".repeat(60)
    ));
    for i in 0..n {
        let left = match thread {
            Some(t) => thread_cell(t, i),
            None => " ".repeat(THREAD_WIDTH),
        };
        let right = hare_cell(hare.get(i));
        out.push_str(format!("{:>4} | {} | {}", i + 1, left, right).trim_end());
        out.push('\n');
    }
    out
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(3)).collect();
        t.push_str("...");
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thread_data::{ThreadData, ThreadInterval};

    fn iv(start: f64, bytes: u64, lost: u64, cwnd: Option<u32>) -> Interval {
        Interval {
            start_s: start,
            end_s: start + 1.0,
            bytes,
            lost_packets: lost,
            cwnd_segments: cwnd,
            ..Interval::default()
        }
    }

    #[test]
    fn rows_line_up_second_by_second() {
        let data = ThreadData::embedded().expect("embedded data parses");
        let mut run = data.get("2007-reno-w60m").expect("run present").clone();
        run.intervals.truncate(2);
        run.intervals.push(ThreadInterval {
            mb: 1.0,
            sec: 1.0,
            mbps: 8.3886,
            retrans: Some(3),
        });
        let hare = vec![iv(0.0, 1_048_576, 0, Some(10)), iv(1.0, 2_097_152, 7, None)];
        let text = format(Some(&run), "thread", &hare, "hare");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2 + 3);
        assert_eq!(
            lines[0].trim_end(),
            format!("   s | {:<57} | hare", "thread")
        );
        assert_eq!(
            lines[2],
            "   1 |    69.9829 MB /   1.01 sec =  583.5822 Mbps               |     1.0000 MB /   1.00 sec =    8.3886 Mbps     0 lost  cwnd      10"
        );
        assert_eq!(
            lines[3],
            "   2 |   844.3870 MB /   1.00 sec = 7083.2808 Mbps               |     2.0000 MB /   1.00 sec =   16.7772 Mbps     7 lost"
        );
        assert_eq!(
            lines[4],
            "   3 |     1.0000 MB /   1.00 sec =    8.3886 Mbps     3 retrans |"
        );
    }

    #[test]
    fn hare_only_has_blank_thread_column() {
        let text = format(None, "", &[iv(0.0, 0, 0, None)], "hare");
        let line = text.lines().nth(2).expect("a row");
        assert!(
            line.starts_with(&format!("   1 | {} | ", " ".repeat(57))),
            "{line:?}"
        );
    }
}
