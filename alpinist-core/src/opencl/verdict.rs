//! The two halves of a scan-test verdict.
//!
//! The interval theorem (Chong, Donaldson, Ketema) covers *race-free* generic scans only: a
//! scan with a data race can pass the interval test on one device and fail on another. So a
//! pass needs the checker's proof for the same n as well: race freedom, and (OpenCL's `int`
//! has 32 bits) integer arithmetic free of overflow and of negative `/` `%` operands
//! (`verify --int32`). A definite failure of that proof refuses the kernel
//! ([`Verdict::Refused`]); an unknown leaves the verdict inconclusive.

/// The race-freedom half, from the checker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RaceFreedom {
    /// The checker proved the kernel free of data races (and its integer arithmetic free of
    /// overflow and negative `/` `%` operands) for the tested n.
    Proved,
    /// The checker found a failure: a possible race (or another failed obligation), or
    /// integer arithmetic that may overflow 32 bits or divide negative operands.
    Refuted { reason: String },
    /// The checker could not decide (unknown) or does not encode the kernel.
    NotProved { reason: String },
    /// The checker was not run (callers that only want the interval half).
    NotChecked { reason: String },
}

/// The overall verdict of a scan test over every selected device and n.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Race-free and the interval test passed everywhere.
    Pass,
    /// The interval test failed somewhere (whatever the race-freedom half says).
    Fail,
    /// The interval test passed everywhere, but the checker refuted the kernel.
    Refused { reason: String },
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
        RaceFreedom::Refuted { reason } => Verdict::Refused {
            reason: reason.clone(),
        },
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
            combine(
                &RaceFreedom::NotChecked {
                    reason: "not run".into()
                },
                true
            ),
            Verdict::Inconclusive { .. }
        ));
        let race = RaceFreedom::NotProved {
            reason: "race".into(),
        };
        assert!(matches!(combine(&race, true), Verdict::Inconclusive { .. }));
        let refuted = RaceFreedom::Refuted {
            reason: "overflow".into(),
        };
        assert!(matches!(combine(&refuted, true), Verdict::Refused { .. }));
        assert_eq!(combine(&refuted, false), Verdict::Fail);
    }

    #[test]
    fn an_interval_failure_fails_whatever_the_checker_says() {
        assert_eq!(combine(&RaceFreedom::Proved, false), Verdict::Fail);
        assert_eq!(
            combine(
                &RaceFreedom::NotChecked {
                    reason: "not run".into()
                },
                false
            ),
            Verdict::Fail
        );
    }
}
