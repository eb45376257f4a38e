//! The separation-logic checker on Z3 — so far only its foundation: pure expressions and
//! single obligations.
//!
//! Entry point today: [`check_pure`] (assumptions ⊢ goal over pure PVL expressions, in a fresh
//! Z3 context on the calling thread). Underneath: [`Encoder`] (IR → Z3 terms, `expr.rs`) and
//! [`check_goal`] (one Z3 query → [`Verdict`], `solver.rs`).
//!
//! # Invariants
//! - **Unknown is never verified.** Z3's `unknown` (resource limit, incomplete quantifier
//!   reasoning, nonlinear arithmetic, cancellation) becomes [`Verdict::Unknown`] carrying Z3's
//!   `reason_unknown`; only `unsat` of the negated goal is [`Verdict::Verified`].
//! - **No obligation is skipped silently.** A construct the encoding does not know is an
//!   [`EncodeError`] with its span (`Unsupported`, E0501), never a panic and never a dropped
//!   conjunct or a weakened goal. Triggers are the only thing not passed on: they steer Z3's
//!   instantiation and do not change what holds.
//! - **Budgets are deterministic.** Every query runs under Z3's `rlimit` ([`Limits`]), a
//!   count of Z3's own steps, never a wall-clock timeout, so a loaded machine cannot flip a
//!   verdict. A query is never unbounded.
//! - **Terms stay on their thread.** z3 0.22 builds every term in the *thread-local* context
//!   of the calling thread; [`in_fresh_context`] gives each obligation a new context there, so
//!   verdicts do not depend on which obligations ran before or where. Only plain data
//!   ([`Verdict`], [`EncodeError`]) leaves it.
//! - Assumptions that contradict each other make every goal verified, as in any prover; the
//!   vacuity warning design.md asks for belongs to the method-level checker.
//! - We link the system libz3 (Debian bookworm: 4.8.12) although the crate targets ≥ 4.13:
//!   nothing here inspects declaration or sort kinds through Z3 (those enums were renumbered),
//!   and `Real::from_rational`/`from_real` and `Sum`/`Product` over reals do not link (use
//!   `Real::from_rational_str`). The verdict tests in `solver.rs` fail loudly on a mismatch.
//!
//! # Integer division
//! `/` and `%` on integers are refused (E0501) for now. Three semantics are in play and they
//! disagree on negative operands: Z3's (SMT-LIB's) `div`/`mod` are Euclidean (remainder always
//! ≥ 0), C and OpenCL truncate toward zero, and floor division rounds down. Which one PVL's `/`
//! has in VerCors we could not confirm here: from memory, VerCors' internal language has both
//! floor and truncating division and its Viper back end ends in SMT-LIB's Euclidean `div` —
//! not a sound basis for an encoding. All three agree when the dividend is ≥ 0 and the divisor
//! is > 0, the only case design.md lets code generation emit. The planned encoding: a
//! definedness obligation at each use (divisor ≠ 0, as VerCors checks), and one semantics
//! chosen for the checker, the interpreter and code generation together. Until then refusing
//! is the sound choice; guessing could verify a program that VerCors rejects.
//!
//! # Not there yet
//! Heap (`H`, masks, `len`), permissions and fractions (rationals), inhale/exhale, self-framing,
//! quantified permissions, sequences, pure functions and predicates, calls, `\old`, loops, par
//! blocks and barriers, definedness checks (bounds, null), the per-clause failure report and
//! the CLI (`alpinist verify` still answers "not implemented yet").

mod expr;
mod solver;
mod uniformity;

pub use expr::{EncodeError, Encoder, Env, Sort, Term};
pub use solver::{check_goal, in_fresh_context, Limits, Verdict};
pub use uniformity::{check_barrier_uniformity, check_program_uniformity, UniformityError};

use crate::syntax::Expr;

/// Checks that `goal` follows from `assumptions`, all pure boolean PVL expressions whose free
/// variables have sorts in `env`. Terms are built and checked in a fresh Z3 context on the
/// calling thread.
///
/// `Err` when some expression cannot be encoded (nothing was checked then); otherwise the
/// verdict, where [`Verdict::Failed`] lists the free variables of the expressions with their
/// values in Z3's counterexample.
pub fn check_pure(
    env: &Env,
    assumptions: &[&Expr],
    goal: &Expr,
    limits: &Limits,
) -> Result<Verdict, EncodeError> {
    in_fresh_context(|| {
        let mut encoder = Encoder::new(env);
        let hyps = assumptions
            .iter()
            .map(|a| encoder.bool(a))
            .collect::<Result<Vec<_>, _>>()?;
        let goal = encoder.bool(goal)?;
        Ok(check_goal(&hyps, &goal, &encoder.free_vars(), limits))
    })
}

#[cfg(test)]
mod tests;
