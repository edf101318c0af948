//! What a chart shows: its series, axes and reference lines.

/// One line of a chart.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// (x, y) points in x order.
    pub points: Vec<(f64, f64)>,
    /// Marked points (x, y, note), e.g. the slow-start exit; notes are listed in the upper
    /// left in the series' colour, an empty note marks the point only.
    pub marks: Vec<(f64, f64, String)>,
    /// Palette index of the colour (`None`: the series' position in the chart).
    pub colour: Option<usize>,
    /// Line width in pixels (`None`: 2).
    pub width: Option<u32>,
}

/// A chart of several series.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Title.
    pub title: String,
    /// x axis description.
    pub x_desc: String,
    /// y axis description.
    pub y_desc: String,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// How y values are written on the axis.
    pub y_unit: Unit,
    /// The lines.
    pub series: Vec<Series>,
    /// Horizontal reference lines (y, label), e.g. the capacity or the BDP.
    pub hlines: Vec<(f64, String)>,
    /// Lines of text about what the chart leaves out (a quantity a trace did not log, a
    /// partial last bin), listed in the upper left in grey below the marks' notes.
    pub notes: Vec<String>,
}

/// Units of a y axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Mbit/s.
    Mbps,
    /// Bytes, written as B / kB / MB / GB.
    Bytes,
    /// Milliseconds.
    Ms,
}

/// A byte count for an axis or a label: `850 B`, `64 kB`, `6 MB`, `1.5 GB` (powers of 10).
pub fn human_bytes(v: f64) -> String {
    let (x, u) = if v >= 1e9 {
        (v / 1e9, "GB")
    } else if v >= 1e6 {
        (v / 1e6, "MB")
    } else if v >= 1e3 {
        (v / 1e3, "kB")
    } else {
        (v, "B")
    };
    let digits = if x >= 100.0 || x == x.round() { 0 } else { 1 };
    format!("{x:.digits$} {u}")
}

/// A plain number for an axis: no `6000000.0`, as few decimals as the value needs.
pub fn human_number(v: f64) -> String {
    let a = v.abs();
    let digits = if a >= 100.0 || a == a.round() {
        0
    } else if a >= 1.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$}")
}

impl Unit {
    /// The axis text of `v`.
    pub fn format(self, v: f64) -> String {
        match self {
            Unit::Bytes => human_bytes(v),
            Unit::Mbps | Unit::Ms => human_number(v),
        }
    }
}
