//! Checks of the workspace's own shape, used by its tests (never shipped):
//!
//! - [`public_api::check`]: a crate's public surface, listed from rustdoc's JSON output,
//!   against the committed `public-api.txt` beside its `Cargo.toml`, so that every change to
//!   what users can reach shows in review.
//! - [`module_cycles::cycles`]: groups of modules of one crate that import each other in a
//!   circle (a module that imports a module that imports it back, directly or through
//!   others), read from the `crate::`, `super::` and `self::` paths in the sources.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod listing;
pub mod module_cycles;
pub mod public_api;
