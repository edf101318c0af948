//! Exact-value tests that reach into the kernel model's private modules (its cube roots,
//! clocks, delay samples, `bictcp_update()` alone): unit tests of this crate, so that the
//! crate the tests build is the crate users get. Tests of the public API are in `tests/`.
//!
//! They name the crate `hare_cc` (the `extern crate self` in `lib.rs`), as the tests beside
//! them in `tests/` do, and share those tests' helpers (`tests/kernel_support`).

#[path = "../../tests/kernel_support/mod.rs"]
mod kernel_support;

mod kernel_era_rules;
mod kernel_facts;
