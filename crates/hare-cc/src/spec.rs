//! Selection by name: [`CcSpec`], the text grammar of command lines and scenario files.
//!
//! ```text
//! spec    = alg [ "@" profile ] { "," key "=" value }
//! alg     = "cubic" | "bic" | "reno"                      (hare's kernel model)
//!         | "quinn-cubic" | "quinn-newreno" | "quinn-bbr"  (quinn's built-ins, no profile)
//! profile = "linux-2.6.20" | ... | "linux-6"               (default "linux-6")
//! ```
//!
//! For hare's algorithms the keys are the profile's parameters ([`Profile::KEYS`], like
//! writing `/sys/module/tcp_cubic/parameters/*`); they are checked by [`Profile::set`], and a
//! key the chosen algorithm does not use is refused with the keys it has
//! ([`Profile::keys_for`], [`SpecError::KeyNotUsed`]: `reno@linux-6,beta=700` gives "reno has
//! no key \`beta\`; its keys are initial_cwnd, cwnd_clamp, ..."). For
//! quinn's controllers the keys are `initial_window` (bytes, all three) and
//! `loss_reduction_factor` (`quinn-newreno`). Examples: `cubic`, `cubic@linux-2.6.20`,
//! `cubic@linux-6,hystart=0,initial_ssthresh=100,hz=250`, `bic@linux-2.6.20`, `reno`,
//! `quinn-cubic,initial_window=14720`.
//!
//! `Display` prints the canonical form (profile always named, values as [`Profile::get`]
//! prints them, each key once, at the position of its last occurrence), which parses back to
//! an equal spec: `cubic` displays as `cubic@linux-6`.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use quinn_proto::congestion::{BbrConfig, ControllerFactory, CubicConfig, NewRenoConfig};
use thiserror::Error;

use crate::factory::HareFactory;
use crate::observer::Observer;
use crate::profile::{Algorithm, Profile, ProfileError};

/// The controller a [`CcSpec`] selects.
///
/// Non-exhaustive: more of quinn's controllers (or hare's) can be added to the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SpecAlgorithm {
    /// One of hare's kernel-model algorithms.
    Hare(Algorithm),
    /// `quinn_proto::congestion::Cubic` (RFC 8312/9438 in f64, no HyStart).
    QuinnCubic,
    /// `quinn_proto::congestion::NewReno`.
    QuinnNewReno,
    /// `quinn_proto::congestion::Bbr` (quinn's experimental BBRv1).
    QuinnBbr,
}

impl SpecAlgorithm {
    /// Every algorithm name the grammar accepts.
    pub const NAMES: [&'static str; 6] = [
        "cubic",
        "bic",
        "reno",
        "quinn-cubic",
        "quinn-newreno",
        "quinn-bbr",
    ];

    /// The grammar's name.
    pub fn name(self) -> &'static str {
        match self {
            SpecAlgorithm::Hare(Algorithm::Cubic) => "cubic",
            SpecAlgorithm::Hare(Algorithm::Bic) => "bic",
            SpecAlgorithm::Hare(Algorithm::Reno) => "reno",
            SpecAlgorithm::QuinnCubic => "quinn-cubic",
            SpecAlgorithm::QuinnNewReno => "quinn-newreno",
            SpecAlgorithm::QuinnBbr => "quinn-bbr",
        }
    }

    /// True for quinn's built-in controllers.
    pub fn is_quinn(self) -> bool {
        !matches!(self, SpecAlgorithm::Hare(_))
    }

    /// Keys a quinn built-in accepts (empty for hare's algorithms, which take profile keys).
    pub fn quinn_keys(self) -> &'static [&'static str] {
        match self {
            SpecAlgorithm::Hare(_) => &[],
            SpecAlgorithm::QuinnNewReno => &["initial_window", "loss_reduction_factor"],
            SpecAlgorithm::QuinnCubic | SpecAlgorithm::QuinnBbr => &["initial_window"],
        }
    }

    fn parse(name: &str) -> Result<Self, SpecError> {
        Ok(match name {
            "cubic" => SpecAlgorithm::Hare(Algorithm::Cubic),
            "bic" => SpecAlgorithm::Hare(Algorithm::Bic),
            "reno" => SpecAlgorithm::Hare(Algorithm::Reno),
            "quinn-cubic" => SpecAlgorithm::QuinnCubic,
            "quinn-newreno" => SpecAlgorithm::QuinnNewReno,
            "quinn-bbr" => SpecAlgorithm::QuinnBbr,
            _ => {
                return Err(SpecError::UnknownAlgorithm {
                    name: name.to_owned(),
                    valid: Self::NAMES.join(", "),
                })
            }
        })
    }
}

impl fmt::Display for SpecAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A spec string that does not parse. Every variant names the offending token.
///
/// Non-exhaustive: new checks can add variants; match the ones you handle and print the rest.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum SpecError {
    /// Nothing was given.
    #[error(
        "empty controller spec: expected ALG[@PROFILE][,KEY=VALUE]... with ALG one of {valid}"
    )]
    Empty {
        /// Comma-separated list of valid algorithms.
        valid: String,
    },
    /// The algorithm name is not known.
    #[error("unknown algorithm `{name}`; valid algorithms: {valid}")]
    UnknownAlgorithm {
        /// What was given.
        name: String,
        /// Comma-separated list of valid algorithms.
        valid: String,
    },
    /// A quinn built-in was given a kernel profile.
    #[error(
        "`{algorithm}` takes no profile (got `@{profile}`); profiles apply to cubic, bic and reno"
    )]
    ProfileNotAllowed {
        /// The quinn algorithm.
        algorithm: String,
        /// The profile that was given.
        profile: String,
    },
    /// `ALG@` with nothing after the `@`.
    #[error("empty profile after `{algorithm}@`; valid profiles: {valid}")]
    EmptyProfile {
        /// The algorithm.
        algorithm: String,
        /// Comma-separated list of valid profiles.
        valid: String,
    },
    /// A setting is not of the form `KEY=VALUE`.
    #[error("bad setting `{item}`: expected KEY=VALUE")]
    NotKeyValue {
        /// The offending comma-separated item.
        item: String,
    },
    /// The profile, or one of its keys or values, was rejected by [`Profile`].
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// A profile key the chosen algorithm does not use: setting it would change nothing
    /// (`reno` has no `beta`; BIC and Reno read HyStart's keys only when HyStart is named).
    #[error("{algorithm} has no key `{key}`{}; its keys are {valid}", note_text(.note))]
    KeyNotUsed {
        /// The algorithm.
        algorithm: String,
        /// The offending key.
        key: String,
        /// Which setting would make the algorithm use it, if one would.
        note: Option<String>,
        /// Comma-separated list of the keys the algorithm uses under this profile.
        valid: String,
    },
    /// A key a quinn built-in does not take.
    #[error("unknown parameter `{key}` for `{algorithm}`; valid parameters: {valid}")]
    UnknownQuinnKey {
        /// The quinn algorithm.
        algorithm: String,
        /// The offending key.
        key: String,
        /// Comma-separated list of valid keys.
        valid: String,
    },
    /// A value a quinn built-in cannot take.
    #[error("bad value `{value}` for `{key}`: expected {expected}")]
    BadQuinnValue {
        /// The key.
        key: String,
        /// The offending value.
        value: String,
        /// What the key accepts.
        expected: String,
    },
}

/// The parenthesised note of [`SpecError::KeyNotUsed`], or nothing.
fn note_text(note: &Option<String>) -> String {
    note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default()
}

/// Settings of quinn's built-in controllers (the ones the grammar exposes).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct QuinnSettings {
    initial_window: Option<u64>,
    loss_reduction_factor: Option<f32>,
}

/// A parsed controller selection: algorithm, profile and overrides.
///
/// ```
/// use hare_cc::CcSpec;
///
/// let spec: CcSpec = "cubic@linux-6,hystart=0,initial_ssthresh=100".parse()?;
/// let again: CcSpec = spec.to_string().parse()?;
/// assert_eq!(spec, again);
/// assert_eq!("cubic".parse::<CcSpec>()?.to_string(), "cubic@linux-6");
/// let _factory = spec.factory(); // Arc<dyn ControllerFactory + Send + Sync>
/// # Ok::<(), hare_cc::SpecError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CcSpec {
    algorithm: SpecAlgorithm,
    /// The resolved profile (hare's algorithms only).
    profile: Option<Profile>,
    /// Canonical `(key, value)` overrides, each key once.
    overrides: Vec<(String, String)>,
    quinn: QuinnSettings,
}

impl Default for CcSpec {
    /// `cubic@linux-6`.
    fn default() -> Self {
        Self::hare(Algorithm::Cubic, Profile::DEFAULT_NAME)
            .unwrap_or_else(|_| unreachable!("the default profile is built in"))
    }
}

impl CcSpec {
    /// A hare spec for a built-in profile, without overrides.
    pub fn hare(algorithm: Algorithm, profile: &str) -> Result<Self, SpecError> {
        Ok(Self {
            algorithm: SpecAlgorithm::Hare(algorithm),
            profile: Some(Profile::named(profile)?),
            overrides: Vec::new(),
            quinn: QuinnSettings::default(),
        })
    }

    /// The selected algorithm.
    pub fn algorithm(&self) -> SpecAlgorithm {
        self.algorithm
    }

    /// The profile name (`None` for quinn's built-ins).
    pub fn profile_name(&self) -> Option<&str> {
        self.profile.as_ref().map(Profile::name)
    }

    /// The resolved profile with the overrides applied (`None` for quinn's built-ins).
    pub fn profile(&self) -> Option<&Profile> {
        self.profile.as_ref()
    }

    /// The overrides in canonical form, each key once, in the order they apply.
    pub fn overrides(&self) -> &[(String, String)] {
        &self.overrides
    }

    /// True for quinn's built-in controllers.
    pub fn is_quinn(&self) -> bool {
        self.algorithm.is_quinn()
    }

    /// Apply one `key=value` override as the grammar would. A key the algorithm does not use
    /// under the profile as it stands ([`Profile::uses_key`]) is refused and nothing changes;
    /// parsing a whole spec checks its keys after all of them are applied, so their order
    /// does not matter there.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SpecError> {
        let before = self.clone();
        self.apply(key, value)?;
        if let Err(e) = self.check_key(key) {
            *self = before;
            return Err(e);
        }
        Ok(())
    }

    /// Refuse `key` when the hare algorithm does not read it under the current profile.
    fn check_key(&self, key: &str) -> Result<(), SpecError> {
        let (SpecAlgorithm::Hare(alg), Some(profile)) = (self.algorithm, &self.profile) else {
            return Ok(());
        };
        if profile.uses_key(alg, key) {
            return Ok(());
        }
        Err(SpecError::KeyNotUsed {
            algorithm: alg.as_str().to_owned(),
            key: key.to_owned(),
            note: Profile::key_hint(alg, key).map(str::to_owned),
            valid: profile.keys_for(alg).join(", "),
        })
    }

    /// Apply one override without the algorithm check.
    fn apply(&mut self, key: &str, value: &str) -> Result<(), SpecError> {
        let canonical = match self.profile.as_mut() {
            Some(profile) => {
                profile.set(key, value)?;
                profile.get(key)?
            }
            None => self.set_quinn(key, value)?,
        };
        // A repeated key moves to the end: replaying the canonical list in order then gives
        // the same profile even when keys interact (`hystart` is an alias of `slow_start`).
        self.overrides.retain(|(k, _)| k != key);
        self.overrides.push((key.to_owned(), canonical));
        Ok(())
    }

    fn set_quinn(&mut self, key: &str, value: &str) -> Result<String, SpecError> {
        if !self.algorithm.quinn_keys().contains(&key) {
            return Err(SpecError::UnknownQuinnKey {
                algorithm: self.algorithm.name().to_owned(),
                key: key.to_owned(),
                valid: self.algorithm.quinn_keys().join(", "),
            });
        }
        let bad = |expected: &str| SpecError::BadQuinnValue {
            key: key.to_owned(),
            value: value.to_owned(),
            expected: expected.to_owned(),
        };
        match key {
            "initial_window" => {
                let v: u64 = value
                    .parse()
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or_else(|| bad("a window in bytes, 1..=18446744073709551615"))?;
                self.quinn.initial_window = Some(v);
                Ok(v.to_string())
            }
            _ => {
                let v: f32 = value
                    .parse()
                    .ok()
                    .filter(|v: &f32| *v > 0.0 && *v <= 1.0)
                    .ok_or_else(|| bad("a factor in (0, 1]"))?;
                self.quinn.loss_reduction_factor = Some(v);
                Ok(v.to_string())
            }
        }
    }

    /// A short human label for tables: `cubic 2.6.20`, `cubic 6 hystart=0`, `quinn-cubic`.
    pub fn label(&self) -> String {
        let mut label = self.algorithm.name().to_owned();
        if let Some(name) = self.profile_name() {
            label.push(' ');
            label.push_str(name.strip_prefix("linux-").unwrap_or(name));
        }
        if !self.overrides.is_empty() {
            label.push(' ');
            let kv: Vec<String> = self
                .overrides
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            label.push_str(&kv.join(","));
        }
        if let Some(what) = self.non_kernel() {
            label.push_str(" (non-kernel: ");
            label.push_str(what);
            label.push(')');
        }
        label
    }

    /// What makes this selection a combination no kernel had (HyStart on BIC or Reno,
    /// HyStart++, ...), `None` for a kernel's own behaviour and for quinn's built-ins.
    pub fn non_kernel(&self) -> Option<&'static str> {
        match (self.algorithm, &self.profile) {
            (SpecAlgorithm::Hare(alg), Some(profile)) => profile.non_kernel(alg),
            _ => None,
        }
    }

    /// The concrete hare factory (`None` for quinn's built-ins).
    pub fn hare_factory(&self) -> Option<HareFactory> {
        match (self.algorithm, &self.profile) {
            (SpecAlgorithm::Hare(alg), Some(profile)) => {
                Some(HareFactory::new(alg, profile.clone()))
            }
            _ => None,
        }
    }

    /// A factory for `quinn::TransportConfig::congestion_controller_factory`.
    pub fn factory(&self) -> Arc<dyn ControllerFactory + Send + Sync> {
        self.build_factory(None)
    }

    /// Like [`CcSpec::factory`], reporting every hare controller to `observer`. quinn's
    /// built-in controllers have no events or snapshots: they ignore the observer.
    pub fn factory_with_observer(
        &self,
        observer: Observer,
    ) -> Arc<dyn ControllerFactory + Send + Sync> {
        self.build_factory(Some(observer))
    }

    fn build_factory(
        &self,
        observer: Option<Observer>,
    ) -> Arc<dyn ControllerFactory + Send + Sync> {
        if let Some(factory) = self.hare_factory() {
            return match observer {
                Some(observer) => Arc::new(factory.with_observer(observer)),
                None => Arc::new(factory),
            };
        }
        let q = self.quinn;
        match self.algorithm {
            SpecAlgorithm::QuinnNewReno => {
                let mut c = NewRenoConfig::default();
                if let Some(w) = q.initial_window {
                    c.initial_window(w);
                }
                if let Some(f) = q.loss_reduction_factor {
                    c.loss_reduction_factor(f);
                }
                Arc::new(c)
            }
            SpecAlgorithm::QuinnBbr => {
                let mut c = BbrConfig::default();
                if let Some(w) = q.initial_window {
                    c.initial_window(w);
                }
                Arc::new(c)
            }
            // QuinnCubic (and, unreachably, a hare algorithm without a profile).
            _ => {
                let mut c = CubicConfig::default();
                if let Some(w) = q.initial_window {
                    c.initial_window(w);
                }
                Arc::new(c)
            }
        }
    }
}

impl FromStr for CcSpec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() {
            return Err(SpecError::Empty {
                valid: SpecAlgorithm::NAMES.join(", "),
            });
        }
        let mut items = s.split(',');
        let head = items.next().unwrap_or_default().trim();
        let (alg_name, profile_name) = match head.split_once('@') {
            Some((a, p)) => (a.trim(), Some(p.trim())),
            None => (head, None),
        };
        let algorithm = SpecAlgorithm::parse(&alg_name.to_ascii_lowercase())?;
        let mut spec = match (algorithm, profile_name) {
            (SpecAlgorithm::Hare(_), Some("")) => {
                return Err(SpecError::EmptyProfile {
                    algorithm: algorithm.name().to_owned(),
                    valid: Profile::NAMES.join(", "),
                })
            }
            (SpecAlgorithm::Hare(alg), name) => {
                Self::hare(alg, name.unwrap_or(Profile::DEFAULT_NAME))?
            }
            (_, Some(profile)) => {
                return Err(SpecError::ProfileNotAllowed {
                    algorithm: algorithm.name().to_owned(),
                    profile: profile.to_owned(),
                })
            }
            (_, None) => Self {
                algorithm,
                profile: None,
                overrides: Vec::new(),
                quinn: QuinnSettings::default(),
            },
        };
        for item in items {
            let Some((key, value)) = item.split_once('=') else {
                return Err(SpecError::NotKeyValue {
                    item: item.to_owned(),
                });
            };
            let (key, value) = (key.trim(), value.trim());
            if key.is_empty() || value.is_empty() {
                return Err(SpecError::NotKeyValue {
                    item: item.to_owned(),
                });
            }
            spec.apply(key, value)?;
        }
        // Checked once every key is in: `reno,hystart_detect=2,slow_start=hystart` is as
        // valid as the other order.
        for (key, _) in &spec.overrides {
            spec.check_key(key)?;
        }
        Ok(spec)
    }
}

impl fmt::Display for CcSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.algorithm.name())?;
        if let Some(name) = self.profile_name() {
            write!(f, "@{name}")?;
        }
        for (k, v) in &self.overrides {
            write!(f, ",{k}={v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_the_algorithm_does_not_use_is_refused_with_its_keys() {
        let e = "reno@linux-2.6.20,beta=700"
            .parse::<CcSpec>()
            .expect_err("reno has no beta");
        let text = e.to_string();
        assert!(
            text.starts_with(
                "reno has no key `beta`; its keys are initial_cwnd, cwnd_clamp, route_ssthresh, "
            ),
            "{text}"
        );
        assert!(
            !text.contains("bic_beta") && text.contains("initial_cwnd"),
            "{text}"
        );
        let e = "bic@linux-6,beta=700"
            .parse::<CcSpec>()
            .expect_err("bic_beta");
        assert!(e.to_string().contains("bic_beta"), "{e}");
        assert!("cubic@linux-6,bic_beta=700".parse::<CcSpec>().is_err());
    }

    /// `spec` is refused with a message starting `prefix`.
    fn assert_refused(spec: &str, prefix: &str) {
        let e = spec.parse::<CcSpec>().expect_err(spec);
        assert!(e.to_string().starts_with(prefix), "{spec}: {e}");
    }

    fn assert_accepted(specs: &[&str]) {
        for spec in specs {
            assert!(spec.parse::<CcSpec>().is_ok(), "{spec}");
        }
    }

    #[test]
    fn hystart_keys_follow_the_named_strategy_in_any_order() {
        assert_refused(
            "bic@linux-6,hystart_detect=2",
            "bic has no key `hystart_detect` (kernel HyStart is CUBIC's; it runs here only \
             with slow_start=hystart, a non-kernel combination); its keys are ",
        );
        assert_accepted(&[
            "reno,hystart_detect=2,slow_start=hystart",
            "reno,slow_start=hystart,hystart_detect=2",
            "cubic@linux-2.6.20,hystart_detect=2",
            "cubic,slow_start=hystart++,hspp_css_rounds=3",
        ]);
        assert!("cubic,hspp_css_rounds=3".parse::<CcSpec>().is_err());
    }

    #[test]
    fn version_only_settings_are_refused_in_other_versions_with_why() {
        assert_refused(
            "cubic@linux-6,max_ssthresh=100",
            "cubic has no key `max_ssthresh` (tcp_max_ssthresh is a sysctl of 2.6.22 - 3.12; \
             in other versions it applies only with slow_start=limited, a non-kernel \
             combination); its keys are ",
        );
        assert_refused(
            "reno@linux-2.6.39,pacing_ca_ratio=120",
            "reno has no key `pacing_ca_ratio` (the pacing rate came with 3.12 and its ratios \
             with 4.3; the 2.6.x profiles have none); its keys are ",
        );
        assert_accepted(&[
            "cubic@linux-2.6.39,max_ssthresh=100",
            "cubic@linux-6,max_ssthresh=100,slow_start=limited",
            "cubic@linux-6,slow_start=limited,max_ssthresh=100",
            "reno@linux-4.4,pacing_ca_ratio=100",
        ]);
    }

    #[test]
    fn set_refuses_without_changing_the_spec() {
        let mut spec: CcSpec = "reno@linux-6,initial_cwnd=21".parse().expect("valid");
        let before = spec.clone();
        let e = spec.set("beta", "700").expect_err("refused");
        assert!(matches!(e, SpecError::KeyNotUsed { .. }), "{e}");
        assert_eq!(spec, before);
    }
}
