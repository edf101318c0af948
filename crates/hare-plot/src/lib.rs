//! hare's one plotting path: a [`Chart`] of labelled line [`Series`] (with marked points and
//! horizontal reference lines) drawn as SVG and PNG by plotters, and the one font discovery
//! every plot uses. The analysis plots (hare-analyze), the replay plots (hare-lab) and the
//! kernel-vs-hare plots (hare-emu) all build a [`Chart`] and call [`write_chart`] or
//! [`write_chart_files`]; this is the only crate that depends on plotters.
//!
//! Text is drawn with plotters' pure-Rust `ab_glyph` path from a TrueType font found at run
//! time ([`font`]: `$HARE_LAB_FONT`, else DejaVu Sans or Liberation Sans from the Debian
//! packages `fonts-dejavu-core` / `fonts-liberation`, or the same fonts at the other
//! distributions' paths); without a font the charts are drawn without text.
#![warn(missing_docs)]

mod chart;
mod draw;
mod font;

pub use chart::{human_bytes, human_number, Chart, Series, Unit};
pub use draw::{write_chart, write_chart_files, PlotError};
pub use font::{font, FONT_CANDIDATES};
