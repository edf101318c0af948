//! [`HareFactory`]: the cheap-to-clone `ControllerFactory` that builds [`HareController`]s.

use std::sync::Arc;

use quinn_proto::congestion::{Controller, ControllerFactory};
use std::time::Instant;

use crate::adapter::HareController;
use crate::observer::Observer;
use crate::profile::{Algorithm, Profile};

/// Builds one [`HareController`] per connection for an algorithm and a resolved profile.
///
/// Cloning copies two `Arc`s. Hand it to quinn with
/// `transport.congestion_controller_factory(Arc::new(factory))`, or let
/// [`crate::CcSpec::factory`] do it from a spec string:
///
/// ```
/// use std::sync::Arc;
/// use hare_cc::{Algorithm, HareFactory, Observer, Profile};
///
/// let profile = Profile::named("linux-2.6.20").expect("a built-in profile");
/// let observer = Observer::new();
/// let factory = HareFactory::new(Algorithm::Cubic, profile).with_observer(observer.clone());
/// let mut transport = quinn_proto::TransportConfig::default();
/// transport.congestion_controller_factory(Arc::new(factory));
/// assert!(observer.controllers().is_empty()); // nothing built until a connection starts
/// ```
#[derive(Debug, Clone)]
pub struct HareFactory {
    algorithm: Algorithm,
    profile: Arc<Profile>,
    paced: bool,
    observer: Option<Observer>,
}

impl HareFactory {
    /// A factory for `algorithm` under `profile`. Pacing follows the profile's `paced` knob
    /// (`auto`, the default, means paced: quinn always paces); see [`HareFactory::paced`].
    pub fn new(algorithm: Algorithm, profile: Profile) -> Self {
        let paced = paced_under_quinn(&profile);
        Self {
            algorithm,
            profile: Arc::new(profile),
            paced,
            observer: None,
        }
    }

    /// Report every controller built from now on to `observer`.
    pub fn with_observer(mut self, observer: Observer) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Override what the kernel model assumes about pacing (the profile's `paced` knob
    /// resolved for quinn). Kernel HyStart 5.6+ halves its ACK-train threshold for unpaced
    /// sockets.
    pub fn paced(mut self, paced: bool) -> Self {
        self.paced = paced;
        self
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The resolved profile.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Whether built controllers treat the sender as paced.
    pub fn is_paced(&self) -> bool {
        self.paced
    }

    /// The observer, if any.
    pub fn observer(&self) -> Option<&Observer> {
        self.observer.as_ref()
    }

    /// Build the concrete controller (what `ControllerFactory::build` boxes).
    pub fn build_controller(&self, now: Instant, current_mtu: u16) -> HareController {
        HareController::new(
            self.algorithm,
            &self.profile,
            self.paced,
            now,
            current_mtu,
            self.observer.as_ref(),
        )
    }
}

impl ControllerFactory for HareFactory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(self.build_controller(now, current_mtu))
    }
}

/// The profile's `paced` knob resolved for a quinn sender: `auto` means paced, because quinn's
/// pacer is always on (below a 4 GiB window).
fn paced_under_quinn(profile: &Profile) -> bool {
    profile.paced.resolve(true)
}
