//! Shared test support for the `quinn_*` test binaries: an in-memory quinn-proto connection
//! pair (real handshake, real ACK frames, virtual time) and a scripted ACK-clock driver.
//!
//! Each test binary uses a different subset of these helpers, hence the dead-code allowance.
#![allow(dead_code)]

pub mod clock;
pub mod pair;
