//! The flows axes of a sweep: `flows.count` (N identical flows of the cell's one controller)
//! and `flows.rtt_ratio` (the later half of the flows at this multiple of the path's RTT).
//!
//! A cell with either turns its scenario's one controller into `[[flows]]`, all started
//! together: `count - count / 2` flows at the path's RTT (f0, f1, ...) and then `count / 2`
//! at `rtt_ratio` times it, their extra delay after the bottleneck as `[[flows]]` `rtt`
//! gives it. Two flows and a ratio of 2: f0 at the path's RTT, f1 at twice it. Without
//! `flows.count` a ratio makes two flows; a ratio of 1 keeps every flow at the path's RTT.

use anyhow::{bail, Context, Result};
use hare_link::TimeSpan;

/// The field of the flow-count axis.
pub const COUNT_FIELD: &str = "flows.count";
/// The field of the RTT-ratio axis.
pub const RTT_RATIO_FIELD: &str = "flows.rtt_ratio";

/// The flows axes' values of one cell.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct FlowsAxes {
    count: Option<u32>,
    rtt_ratio: Option<f64>,
}

impl FlowsAxes {
    /// Takes `field = value` when it is a flows axis' field (true), naming the field when the
    /// value is not one it accepts.
    pub(super) fn take(&mut self, field: &str, value: &toml::Value) -> Result<bool> {
        match field {
            COUNT_FIELD => {
                let n = value
                    .as_integer()
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|&n| (1..=64).contains(&n))
                    .with_context(|| {
                        format!(
                            "`{COUNT_FIELD}` = {value}: expected a whole number of flows, 1 to 64"
                        )
                    })?;
                self.count = Some(n);
            }
            RTT_RATIO_FIELD => {
                let r = value
                    .as_float()
                    .or_else(|| value.as_integer().map(|i| i as f64))
                    .filter(|r| r.is_finite() && (1.0..=1000.0).contains(r))
                    .with_context(|| {
                        format!(
                            "`{RTT_RATIO_FIELD}` = {value}: expected a number from 1 to 1000 \
                             (a flow's RTT is at least the path's)"
                        )
                    })?;
                self.rtt_ratio = Some(r);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Writes the cell's `[[flows]]` in place of its one controller (nothing when neither
    /// axis is set).
    pub(super) fn apply(&self, t: &mut toml::Table) -> Result<()> {
        if self.count.is_none() && self.rtt_ratio.is_none() {
            return Ok(());
        }
        if t.contains_key("flows") {
            bail!("`{COUNT_FIELD}` / `{RTT_RATIO_FIELD}` axes: the scenario already has `[[flows]]`; they build the flows from its one controller");
        }
        let controller = match t.remove("controllers") {
            Some(toml::Value::Array(list)) if list.len() == 1 => list[0].clone(),
            other => bail!(
                "`{COUNT_FIELD}` / `{RTT_RATIO_FIELD}` axes need exactly one controller in `controllers`, found {}",
                other.map_or("none".to_string(), |v| v.to_string())
            ),
        };
        let count = self.count.unwrap_or(2);
        let ratio = self.rtt_ratio.unwrap_or(1.0);
        let long = count / 2;
        let mut flows = Vec::new();
        let entry = |n: u32, rtt: Option<String>| {
            let mut f = toml::Table::new();
            f.insert("controller".into(), controller.clone());
            f.insert("count".into(), toml::Value::Integer(i64::from(n)));
            if let Some(r) = rtt {
                f.insert("rtt".into(), toml::Value::String(r));
            }
            toml::Value::Table(f)
        };
        if ratio == 1.0 || long == 0 {
            flows.push(entry(count, None));
        } else {
            let rtt = path_rtt(t)?;
            let scaled = TimeSpan((rtt.0 as f64 * ratio).round() as u64);
            flows.push(entry(count - long, None));
            flows.push(entry(long, Some(scaled.to_string())));
        }
        t.insert("flows".into(), toml::Value::Array(flows));
        Ok(())
    }
}

/// The scenario's `path.rtt`.
fn path_rtt(t: &toml::Table) -> Result<TimeSpan> {
    let v = t
        .get("path")
        .and_then(|p| p.get("rtt"))
        .with_context(|| format!("`{RTT_RATIO_FIELD}` needs `path.rtt` in the scenario"))?;
    v.clone()
        .try_into::<TimeSpan>()
        .map_err(|e| anyhow::anyhow!("`path.rtt` = {v}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(count: Option<i64>, ratio: Option<f64>) -> Result<toml::Table> {
        let mut t: toml::Table =
            toml::from_str("controllers = [\"reno@linux-6\"]\n[path]\nrtt = \"20ms\"\n")
                .expect("table");
        let mut a = FlowsAxes::default();
        if let Some(n) = count {
            a.take(COUNT_FIELD, &toml::Value::Integer(n))?;
        }
        if let Some(r) = ratio {
            a.take(RTT_RATIO_FIELD, &toml::Value::Float(r))?;
        }
        a.apply(&mut t)?;
        Ok(t)
    }

    #[test]
    fn count_and_ratio_become_flows_of_the_one_controller() {
        let t = cell(Some(4), Some(2.5)).expect("cell");
        assert!(!t.contains_key("controllers"));
        let text = toml::to_string(&t).expect("toml");
        assert!(
            text.contains("[[flows]]\ncontroller = \"reno@linux-6\"\ncount = 2\n\n[[flows]]\ncontroller = \"reno@linux-6\"\ncount = 2\nrtt = \"50 ms\"\n"),
            "{text}"
        );
        let three = toml::to_string(&cell(Some(3), Some(2.0)).expect("cell")).expect("toml");
        assert!(three.contains("count = 2\n\n[[flows]]"), "{three}");
        assert!(three.contains("count = 1\nrtt = \"40 ms\""), "{three}");
        let same = toml::to_string(&cell(Some(2), Some(1.0)).expect("cell")).expect("toml");
        assert!(
            same.contains("count = 2\n") && !same.contains("rtt = \"4"),
            "{same}"
        );
        assert_eq!(cell(None, None).expect("cell").get("flows"), None);
    }

    #[test]
    fn bad_values_name_the_field() {
        for (count, ratio, field) in [
            (Some(0), None, COUNT_FIELD),
            (Some(65), None, COUNT_FIELD),
            (None, Some(0.5), RTT_RATIO_FIELD),
        ] {
            let e = cell(count, ratio).expect_err(field).to_string();
            assert!(e.contains(field), "{e}");
        }
        let mut two: toml::Table =
            toml::from_str("controllers = [\"reno\", \"cubic\"]").expect("table");
        let mut a = FlowsAxes::default();
        a.take(COUNT_FIELD, &toml::Value::Integer(2))
            .expect("a count");
        let e = a.apply(&mut two).expect_err("two controllers").to_string();
        assert!(
            e.contains(COUNT_FIELD) && e.contains("exactly one controller"),
            "{e}"
        );
    }
}
