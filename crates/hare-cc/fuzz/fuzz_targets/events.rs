//! Fuzz the quinn adapter over the event-sequence API (`tests/script`, shared with the crate's tests): the first bytes
//! choose the algorithm, profile, MTU and initial window, the rest decode into sends, ACK
//! frames, losses, ECN-CE marks and MTU changes. Any panic, arithmetic overflow (debug
//! build) or violated invariant is a finding.
#![no_main]

// The event-sequence driver of the crate's own tests.
#[path = "../../tests/script/mod.rs"]
mod script;

use script::{ScriptDriver, ScriptEvent, MAX_MTU, MIN_MTU};
use hare_cc::{Algorithm, HareFactory, Profile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let algorithm = match data[0] % 3 {
        0 => Algorithm::Cubic,
        1 => Algorithm::Bic,
        _ => Algorithm::Reno,
    };
    let name = Profile::NAMES[usize::from(data[1]) % Profile::NAMES.len()];
    let span = u32::from(MAX_MTU - MIN_MTU) + 1;
    let mtu_offset = u16::from_le_bytes([data[2], data[3]]) as u32 % span;
    let mtu = MIN_MTU + mtu_offset as u16;
    let Ok(mut profile) = Profile::named(name) else {
        return;
    };
    // Initial windows up to 2^40 bytes.
    let iw = match data[0] >> 6 {
        0 => 0,
        1 => 1,
        2 => 1000,
        _ => ((1_u64 << 40) / u64::from(mtu)) as u32,
    };
    // 0 keeps the profile's own initial window.
    if iw != 0 && profile.set("initial_cwnd", &iw.to_string()).is_err() {
        return;
    }
    let mut driver = ScriptDriver::new(&HareFactory::new(algorithm, profile), mtu);
    let events = ScriptEvent::decode(&data[4..]);
    if let Err(violation) = driver.run(&events) {
        panic!("{algorithm:?}@{name} mtu {mtu} iw {iw}: {violation}");
    }
});
