//! From the controller string to quinn's factory, with the telemetry hooks the report needs.

use std::sync::Arc;

use std::time::Instant;

use hare_cc::observer::Observer;
use hare_cc::{CcSpec, HareFactory};
use quinn_proto::congestion::{Controller, ControllerFactory};

use crate::error::SimError;
use crate::tap::{TapFactory, TapHandle};

/// A resolved controller selection.
pub(crate) struct Resolved {
    /// The parsed spec.
    pub spec: CcSpec,
    /// The sender's factory, wrapped by the tap.
    pub client_factory: Arc<dyn ControllerFactory + Send + Sync>,
    /// The receiver's factory (it only sends ACKs and handshake data; same algorithm, no
    /// observer, no tap).
    pub server_factory: Arc<dyn ControllerFactory + Send + Sync>,
    /// The sender's tap.
    pub tap: TapHandle,
    /// hare-cc's observer of the sender's controller (`None` for quinn's built-ins).
    pub observer: Option<Observer>,
    /// The sender is the unpaced, ACK-clocked one (see [`UnpacedFactory`]).
    pub unpaced: bool,
}

/// Builds hare-cc controllers with unpaced sending on
/// ([`hare_cc::HareController::set_unpaced_sending`]): quinn's pacer and window are off while
/// the kernel's `tcp_cwnd_test` passes, and the engine asks quinn for one datagram at a time,
/// so the sender is ACK-clocked and sends back-to-back bursts like a kernel without fq.
struct UnpacedFactory {
    inner: HareFactory,
}

impl ControllerFactory for UnpacedFactory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        let mut c = self.inner.build_controller(now, current_mtu);
        c.set_unpaced_sending(true);
        Box::new(c)
    }
}

/// Capacity of the observer's event queue: the simulator drains it once per report interval,
/// and no controller decides anywhere near this often in one interval.
const EVENT_CAPACITY: usize = 1 << 16;

/// Parses `spec` with hare-cc's grammar and builds the factories; `paced = false` selects
/// the unpaced sender (hare-cc controllers only: quinn's built-ins have no send gate).
pub(crate) fn resolve(spec_text: &str, trace: bool, paced: bool) -> Result<Resolved, SimError> {
    let spec: CcSpec = spec_text
        .parse()
        .map_err(|e: hare_cc::SpecError| SimError::Controller {
            spec: spec_text.to_string(),
            message: e.to_string(),
        })?;
    let tap = TapHandle::new(trace);
    let unpaced_factory = if paced { None } else { spec.hare_factory() };
    let (inner, observer) = if let Some(factory) = unpaced_factory {
        // The model's own pacing assumption follows the sending unless the spec names one.
        let paced_model = factory.profile().paced().resolve(false);
        let observer = Observer::with_settings(Observer::DEFAULT_PUBLISH_EVERY, EVENT_CAPACITY);
        let inner = factory.paced(paced_model).with_observer(observer.clone());
        let inner: Arc<dyn ControllerFactory + Send + Sync> = Arc::new(UnpacedFactory { inner });
        (inner, Some(observer))
    } else if !paced {
        return Err(SimError::Controller {
            spec: spec_text.to_string(),
            message: "the unpaced sender needs a hare-cc controller (quinn's built-in \
                      controllers are always paced)"
                .to_string(),
        });
    } else if spec.is_quinn() {
        (spec.factory(), None)
    } else {
        let observer = Observer::with_settings(Observer::DEFAULT_PUBLISH_EVERY, EVENT_CAPACITY);
        (spec.factory_with_observer(observer.clone()), Some(observer))
    };
    let client_factory: Arc<dyn ControllerFactory + Send + Sync> = Arc::new(TapFactory {
        inner,
        tap: tap.clone(),
        unpaced: !paced,
    });
    Ok(Resolved {
        server_factory: spec.factory(),
        spec,
        client_factory,
        tap,
        observer,
        unpaced: !paced,
    })
}
