//! hare-lab: the testbed front end of hare.
//!
//! - [`scenario`]: scenario files (`testbed/scenarios/*.toml`), their schema and validation;
//! - [`thread_data`]: the netdev threads' measured runs (`testbed/data/*.json`);
//! - [`metrics`]: the metric definitions (time to 90%, losses in the first 10 s, averages);
//! - [`side_by_side`], [`summary_table`], [`replay_record`]: what `hare-lab replay` prints and
//!   emits;
//! - [`flows`]: competing flows on one path (`[[flows]]` scenarios) and their summary;
//! - [`runner`]: runs scenarios in the virtual-time simulator, two at a time;
//! - [`plots`]: SVG and PNG plots;
//! - [`bench`]: `hare-lab bench sim`;
//! - [`sweep`]: `hare-lab sweep` grids, shards and merges;
//! - [`html`], [`report_page`]: the self-contained `index.html` pages.
#![warn(missing_docs)]

pub mod bench;
pub mod commands;
pub mod flows;
pub mod html;
pub mod metrics;
pub mod plots;
pub mod replay_record;
pub mod report_out;
pub mod report_page;
pub mod runner;
pub mod scenario;
pub mod side_by_side;
pub mod summary_table;
pub mod sweep;
pub mod thread_data;
