//! Linux-kernel-faithful congestion control for [quinn](https://docs.rs/quinn) 0.11: CUBIC,
//! BIC and Reno with the kernel's slow-start family (the `initial_ssthresh` clamp, RFC 3742
//! limited slow start, kernel HyStart of every era, HyStart++), making the decisions the Linux
//! version a *profile* names, with that version's integer arithmetic.
//!
//! # Quick start
//!
//! **Choose a controller** with a [`CcSpec`]: `ALG[@PROFILE][,KEY=VALUE]...`, where `ALG` is
//! `cubic`, `bic` or `reno` (hare's kernel model) or `quinn-cubic`, `quinn-newreno`,
//! `quinn-bbr` (quinn's own, for comparison), and the profile is a kernel era (default
//! `linux-6`). **Plug it in** with one line of quinn's `TransportConfig`:
//!
//! ```
//! # fn main() -> Result<(), hare_cc::SpecError> {
//! let mut transport = quinn::TransportConfig::default();
//! transport.congestion_controller_factory("cubic@linux-2.6.20".parse::<hare_cc::CcSpec>()?.factory());
//! # Ok(())
//! # }
//! ```
//!
//! Then use `transport` in a `quinn::ClientConfig` or `ServerConfig` as usual
//! (`Arc::new(transport)`): every connection gets its own controller.
//!
//! **Observe slow-start exits** (and every other decision) with an [`Observer`]: give a
//! handle to the factory, read [`Snapshot`]s and drain [`CcEvent`]s from any thread while the
//! connections run. Tag the handle with the endpoint's side to tell the registrations of a
//! client and a server configuration apart:
//!
//! ```
//! # fn main() -> Result<(), hare_cc::SpecError> {
//! use hare_cc::{CcEvent, CcSpec, Observer};
//! use quinn::Side;
//!
//! let observer = Observer::new();
//! let spec: CcSpec = "cubic@linux-6,hystart_detect=2".parse()?;
//! let mut transport = quinn::TransportConfig::default();
//! transport.congestion_controller_factory(spec.factory_with_observer(observer.for_side(Side::Client)));
//! // ... later, while connections run:
//! for id in observer.controllers() {
//!     if let Some(s) = observer.snapshot(id) {
//!         println!("controller {id}: cwnd {} segments, ssthresh {:?}", s.cwnd, s.ssthresh);
//!     }
//!     for event in observer.drain_events(id) {
//!         if let CcEvent::SlowStartExit { cwnd, reason, .. } = event {
//!             println!("controller {id} left slow start at cwnd {cwnd}: {reason}");
//!         } else {
//!             println!("controller {id}: {event}"); // e.g. "1.250000 s: window reduced (loss), ..."
//!         }
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! **Which connection is which**: `connection.congestion_state()` is the connection's
//! controller; a copy of it downcasts to [`HareController`], whose [`HareController::id`] is
//! the [`ControllerId`] the observer uses (see the [`observer`] module). Event times are
//! microseconds since [`ControllerView::origin`].
//!
//! ```no_run
//! # fn show(connection: &quinn::Connection, observer: &hare_cc::Observer) {
//! let copy = connection.congestion_state().clone_box().into_any();
//! if let Ok(controller) = copy.downcast::<hare_cc::HareController>() {
//!     let id = controller.id().expect("its factory had an observer");
//!     let view = observer.view(id).expect("registered");
//!     println!("{:?} controller {id}: {:?}", view.side, controller.snapshot().phase);
//! }
//! # }
//! ```
//!
//! A complete client/server program moving data over loopback with live telemetry is
//! `examples/loopback.rs` (`cargo run -p hare-cc --example loopback`).
//!
//! # What a profile means
//!
//! A [`Profile`] is every constant and behavioural switch of one kernel era, in the kernel's
//! units: `tcp_cubic.c` / `tcp_bic.c` module parameters (`beta`, `hystart_detect`, ...), the
//! sysctls that matter (`HZ`, initial window) and the arithmetic and ordering choices that
//! changed between releases (cube root, slow-start increment, the order of growth and loss
//! reaction inside one ACK). The built-in eras are [`Profile::NAMES`]: `linux-2.6.20`,
//! `linux-2.6.22`, `linux-2.6.26`, `linux-2.6.29`, `linux-2.6.39`, `linux-4.4` and `linux-6`.
//! Each profile's default is what that kernel does: HyStart runs only in CUBIC, as in every
//! kernel. A combination no kernel had (HyStart on BIC, HyStart++) exists only when a key
//! names it, and then [`CcSpec::label`] and [`Snapshot::profile`] say `(non-kernel: ...)`.
//!
//! Override keys like writing `/sys/module/tcp_cubic/parameters/*`: in a spec
//! (`cubic@linux-2.6.39,hz=1000`), with [`Profile::set`], or with a [`ProfileBuilder`]. A key
//! the chosen algorithm does not use is refused (`reno@linux-6,beta=700`: "reno has no key
//! `beta`; its keys are ..."), as is an unknown key or a bad value, each naming what is valid.
//!
//! The model works in segments of quinn's current MTU and converts quinn's per-packet
//! callbacks into the kernel's per-ACK processing (one ACK frame = one ACK); where QUIC or
//! quinn cannot do what TCP does (no PRR, no undo) the crate's README lists it.
//!
//! # Public surface
//!
//! - Selection: [`CcSpec`], [`SpecAlgorithm`], [`SpecError`].
//! - Controllers: [`HareFactory`] (a quinn `ControllerFactory`), [`HareController`] (a quinn
//!   `Controller`).
//! - Telemetry: [`Observer`], [`ControllerId`], [`ControllerView`], [`CcEvent`],
//!   [`ExitReason`], [`Phase`], [`Snapshot`].
//! - Profiles: [`Profile`], [`ProfileBuilder`], [`ProfileError`], [`Algorithm`], and the era
//!   switches the typed getters return ([`profile`] module).
//! - The kernel model for differential tests and research tools: [`engine::KernelCc`] with
//!   [`engine::AckEvent`], driven hook by hook from a chosen state through the [`hooks`]
//!   module, which also names the model's state types ([`hooks::TcpSock`],
//!   [`hooks::Cubic`], [`hooks::Bic`], [`hooks::Reno`], [`hooks::KernelClock`], ...).
//!
//! `crates/hare-cc/public-api.txt` in the source repository lists every public path; a test
//! compares it with the crate, so a change to the surface shows in review.
//!
//! # Cargo features
//!
//! - `serde`: `Serialize`/`Deserialize` for [`CcEvent`], [`ExitReason`], [`Phase`] and
//!   [`Snapshot`] (kebab-case names, events tagged by `event`). Off by default.
//!
//! hare-cc depends on `quinn-proto` without default features and uses only its `congestion`
//! module: it enables no TLS provider, so an application keeps the rustls backend it chose
//! for quinn (ring, aws-lc-rs or FIPS).
//!
//! # Logging
//!
//! Decisions go to [`tracing`](https://docs.rs/tracing) under the target `hare_cc`: one
//! `debug` line per decision with the controller id (the event's `Display`), the model's own
//! lines at `trace`. Nothing is logged at `info` or above.
//!
//! # Inside
//!
//! The crate has two layers:
//! - a *kernel model* in the kernel's own units (cwnd in segments with the fractional
//!   `snd_cwnd_cnt` counter, time on a jiffies / ms / us clock chosen by the [`Profile`]):
//!   [`engine::KernelCc`] runs one algorithm module's `tcp_congestion_ops` (`init`,
//!   `ssthresh`, `cong_avoid`, `set_state`, `cwnd_event`, `pkts_acked`, `undo_cwnd`: CUBIC
//!   with its HyStart, BIC, Reno, each a private module calling the shared steps of the
//!   kernel's `tcp_cong.c`) in the order the named kernel version's `tcp_ack()` runs them,
//!   with that version's arithmetic; [`hooks`] drives it hook by hook from a chosen state and
//!   names the state types (everything else of the model is private);
//! - a *quinn adapter* that converts quinn's bytes and `Instant`s into that model and
//!   implements `quinn_proto::congestion::Controller`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![warn(unnameable_types)]

// The kernel model's modules are private: the ways in are the re-exports below, the
// front-page modules (`events`, `observer`, `profile`, `profile_kinds`, `spec`), the model
// (`engine`) and its hook-by-hook API (`hooks`). The crate's tests use this same crate: the
// ones that reach into private modules are unit tests (`src/tests`).

/// Public getters (and, where named, setters) for a model type whose fields stay private to
/// the crate: `getter = field: Type[, setter];`, each with the doc comment given.
macro_rules! accessors {
    ($ty:ident { $( $(#[$meta:meta])* $get:ident = $field:ident : $t:ty $(, $set:ident)? ; )* }) => {
        impl $ty {
            $(
                $(#[$meta])*
                #[inline]
                pub fn $get(&self) -> $t {
                    self.$field
                }
                $(
                    #[doc = concat!("Set [`", stringify!($ty), "::", stringify!($get), "`].")]
                    #[inline]
                    pub fn $set(&mut self, value: $t) {
                        self.$field = value;
                    }
                )?
            )*
        }
    };
}
pub(crate) use accessors;

mod adapter;
pub mod autotune;
mod bic;
mod clock;
mod cuberoot;
mod cubic;
mod driver;
pub mod engine;
pub mod events;
mod factory;
mod hook_setters;
pub mod hooks;
pub mod observer;
mod ops;
pub mod profile;
mod profile_builder;
mod profile_keys;
pub mod profile_kinds;
mod reno;
mod slow_start;
pub mod spec;
mod stamps;
mod start_error;
mod tcp_cong;
mod tcp_sock;

// The unit tests name the crate `hare_cc`, as the integration tests and users do.
#[cfg(test)]
extern crate self as hare_cc;
#[cfg(test)]
mod tests;

pub use adapter::HareController;
pub use events::{CcEvent, ExitReason, Phase, Snapshot};
pub use factory::HareFactory;
pub use observer::{ControllerId, ControllerView, Observer};
pub use profile::{Algorithm, Profile, ProfileError};
pub use profile_builder::ProfileBuilder;
pub use spec::{CcSpec, SpecAlgorithm, SpecError};
