//! From the controller string to quinn's factory, with the telemetry hooks the report needs.

use std::sync::Arc;

use hare_cc::observer::Observer;
use hare_cc::CcSpec;
use quinn_proto::congestion::ControllerFactory;

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
}

/// Capacity of the observer's event queue: the simulator drains it once per report interval,
/// and no controller decides anywhere near this often in one interval.
const EVENT_CAPACITY: usize = 1 << 16;

/// Parses `spec` with hare-cc's grammar and builds the factories.
pub(crate) fn resolve(spec_text: &str, trace: bool) -> Result<Resolved, SimError> {
    let spec: CcSpec = spec_text
        .parse()
        .map_err(|e: hare_cc::SpecError| SimError::Controller {
            spec: spec_text.to_string(),
            message: e.to_string(),
        })?;
    let tap = TapHandle::new(trace);
    let (inner, observer) = if spec.is_quinn() {
        (spec.factory(), None)
    } else {
        let observer = Observer::with_settings(Observer::DEFAULT_PUBLISH_EVERY, EVENT_CAPACITY);
        (spec.factory_with_observer(observer.clone()), Some(observer))
    };
    let client_factory: Arc<dyn ControllerFactory + Send + Sync> = Arc::new(TapFactory {
        inner,
        tap: tap.clone(),
    });
    Ok(Resolved {
        server_factory: spec.factory(),
        spec,
        client_factory,
        tap,
        observer,
    })
}
