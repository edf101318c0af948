//! [`ProfileBuilder`]: a [`Profile`] from a built-in era and key overrides, checked at
//! [`ProfileBuilder::build`].

use crate::profile::{Profile, ProfileError};

/// Builds a [`Profile`]: a built-in era by name plus overrides by key, applied in order with
/// the checks of [`Profile::set`] when [`ProfileBuilder::build`] runs.
///
/// ```
/// use hare_cc::{Algorithm, HareFactory, Profile};
///
/// let profile = Profile::builder("linux-2.6.39")
///     .set("hz", 1000)
///     .set("hystart_detect", 2)
///     .build()?;
/// assert_eq!(profile.name(), "linux-2.6.39");
/// assert_eq!(profile.hz(), 1000);
/// assert_eq!(profile.get("hystart_detect")?, "2");
/// let _factory = HareFactory::new(Algorithm::Cubic, profile);
///
/// let err = Profile::builder("linux-6").set("beta", 2000).build().unwrap_err();
/// assert_eq!(err.to_string(), "bad value `2000` for `beta`: expected an integer in 0..=1023 (beta/1024)");
/// # Ok::<(), hare_cc::ProfileError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ProfileBuilder {
    base: String,
    overrides: Vec<(String, String)>,
}

impl Profile {
    /// A builder starting from the built-in profile `name` (one of [`Profile::NAMES`]).
    pub fn builder(name: &str) -> ProfileBuilder {
        ProfileBuilder {
            base: name.to_owned(),
            overrides: Vec::new(),
        }
    }
}

impl ProfileBuilder {
    /// Set `key` (one of [`Profile::KEYS`]) to `value`, written as for [`Profile::set`]
    /// (numbers, `0`/`1`, or the kind's name: `paced = "no"`, `slow_start = "hystart++"`).
    pub fn set(mut self, key: &str, value: impl ToString) -> Self {
        self.overrides.push((key.to_owned(), value.to_string()));
        self
    }

    /// The profile, or the first error: an unknown profile name, key or a bad value.
    pub fn build(&self) -> Result<Profile, ProfileError> {
        let mut profile = Profile::named(&self.base)?;
        for (key, value) in &self.overrides {
            profile.set(key, value)?;
        }
        Ok(profile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Paced;

    #[test]
    fn overrides_apply_in_order() {
        let p = Profile::builder("linux-6")
            .set("paced", Paced::No)
            .set("hystart", 0)
            .set("hystart", 1)
            .build()
            .expect("valid");
        assert_eq!(p.paced(), Paced::No);
        assert_eq!(p.get("hystart").as_deref(), Ok("1"));
        assert!(p.slow_start_named());
    }

    #[test]
    fn errors_name_the_profile_or_key() {
        let e = Profile::builder("linux-7").build().unwrap_err();
        assert!(matches!(e, ProfileError::UnknownProfile { .. }), "{e}");
        let e = Profile::builder("linux-6")
            .set("hystrat", 1)
            .build()
            .unwrap_err();
        assert!(matches!(e, ProfileError::UnknownKey { .. }), "{e}");
    }
}
