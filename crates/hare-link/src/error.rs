//! Errors of link construction.

/// A [`LinkConfig`](crate::LinkConfig) or [`PathConfig`](crate::PathConfig) that cannot be
/// built into a link: names the field (as a path such as `loss[1].p_good_to_bad` or
/// `forward.rate`), the value given and what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid link config: `{field}` = {value}: expected {expected}")]
pub struct LinkError {
    /// Path of the offending field, e.g. `rate`, `loss[0].p`, `reverse.queue_packets`.
    pub field: String,
    /// The value given, as written in a scenario file where possible.
    pub value: String,
    /// What would have been accepted.
    pub expected: &'static str,
}

impl LinkError {
    pub(crate) fn new(
        field: impl Into<String>,
        value: impl ToString,
        expected: &'static str,
    ) -> Self {
        LinkError {
            field: field.into(),
            value: value.to_string(),
            expected,
        }
    }

    /// Prefixes the field path, e.g. `rate` becomes `forward.rate`.
    pub(crate) fn within(mut self, parent: &str) -> Self {
        self.field = format!("{parent}.{}", self.field);
        self
    }
}
