//! The two halves of a scan-test verdict.
//!
//! The interval theorem (Chong, Donaldson, Ketema) covers *race-free* generic scans only: a
//! scan with a data race can pass the interval test on one device and fail on another. So a
//! pass needs the checker's race-freedom proof for the same n as well. The checker
//! (`alpinist verify`) is not wired here yet: [`RaceFreedom::NotChecked`] is the seam it will
//! replace, and with it a verdict is at best [`Verdict::Inconclusive`].

/// The race-freedom half, from the checker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RaceFreedom {
    /// The checker proved the kernel free of data races (and its integer arithmetic free of
    /// overflow and negative `/` `%` operands) for the tested n.
    Proved,
    /// The checker found a race or could not prove its absence.
    NotProved { reason: String },
    /// The checker was not run.
    NotChecked { reason: String },
}

impl RaceFreedom {
    /// The state of the project today: `verify` has not landed in this branch.
    pub fn checker_not_landed() -> Self {
        RaceFreedom::NotChecked {
            reason: "the checker (`alpinist verify`) has not landed: race freedom and the \
                     absence of integer overflow are not yet proved"
                .into(),
        }
    }
}

/// The overall verdict of a scan test over every selected device and n.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Race-free and the interval test passed everywhere.
    Pass,
    /// The interval test failed somewhere (whatever the race-freedom half says).
    Fail,
    /// The interval test passed everywhere, but race freedom is not proved.
    Inconclusive { reason: String },
}

/// Combines the halves: any interval failure is a failure; a pass needs a proof.
pub fn combine(race: &RaceFreedom, interval_passed_everywhere: bool) -> Verdict {
    if !interval_passed_everywhere {
        return Verdict::Fail;
    }
    match race {
        RaceFreedom::Proved => Verdict::Pass,
        RaceFreedom::NotProved { reason } | RaceFreedom::NotChecked { reason } => {
            Verdict::Inconclusive {
                reason: reason.clone(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_needs_both_halves() {
        assert_eq!(combine(&RaceFreedom::Proved, true), Verdict::Pass);
        assert!(matches!(
            combine(&RaceFreedom::checker_not_landed(), true),
            Verdict::Inconclusive { .. }
        ));
        let race = RaceFreedom::NotProved {
            reason: "race".into(),
        };
        assert!(matches!(combine(&race, true), Verdict::Inconclusive { .. }));
    }

    #[test]
    fn an_interval_failure_fails_whatever_the_checker_says() {
        assert_eq!(combine(&RaceFreedom::Proved, false), Verdict::Fail);
        assert_eq!(
            combine(&RaceFreedom::checker_not_landed(), false),
            Verdict::Fail
        );
    }
}
