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

mod assertion;
mod exec;
mod expr;
mod obligation;
mod program;
mod recursion;
mod solver;
mod state;

pub use expr::{EncodeError, Env, Sort};
pub use obligation::{Obligation, ObligationKind, Status, Trusted, Warning};
pub use solver::{check_goal, in_fresh_context, Limits, Verdict};
pub use state::Term;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::syntax::{Expr, Program, Span};

use expr::{Decls, Eval};
use program::ProgramInfo;
use state::World;

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
        let world = World::new();
        let store = env.store();
        let decls = Decls {
            world: &world,
            program: None,
            functions: None,
        };
        let mut eval = Eval::new(decls, store.clone());
        let hyps = assumptions
            .iter()
            .map(|a| eval.bool(a))
            .collect::<Result<Vec<_>, _>>()?;
        let goal_term = eval.bool(goal)?;
        // Counterexamples name the variables the expressions mention.
        let mut mentioned = std::collections::BTreeSet::new();
        for e in assumptions.iter().copied().chain([goal]) {
            assertion::names(e, &mut mentioned);
        }
        let vars: Vec<(String, Term)> = store
            .into_iter()
            .filter(|(n, _)| mentioned.contains(n))
            .map(|(n, v)| (n, v.term))
            .collect();
        let goal = goal_term;
        Ok(check_goal(&hyps, &goal, &vars, limits))
    })
}

/// The outcome of one method (or pure function).
#[derive(Clone, Debug)]
pub struct MethodReport {
    pub name: String,
    pub span: Span,
    pub obligations: Vec<Obligation>,
    pub trusted: Vec<Trusted>,
    pub warnings: Vec<Warning>,
    /// A construct the checker does not encode: no verdict for this method.
    pub error: Option<EncodeError>,
    pub time: Duration,
}

/// The verdict over a set of methods, strongest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Verified,
    Unknown,
    Failed,
    Unsupported,
}

impl MethodReport {
    pub fn outcome(&self) -> Outcome {
        if self.error.is_some() {
            return Outcome::Unsupported;
        }
        let mut o = Outcome::Verified;
        for ob in &self.obligations {
            o = o.max(match ob.status {
                Status::Verified => Outcome::Verified,
                Status::Unknown { .. } => Outcome::Unknown,
                Status::Failed { .. } => Outcome::Failed,
            });
        }
        o
    }
}

/// The stack of a verification worker thread.
const WORKER_STACK: usize = 512 << 20;

/// Verifies every method and pure function of a checked program, on `jobs` threads (each
/// method in a Z3 context of its own). Reports come back in declaration order whatever `jobs`.
pub fn verify_program(program: &Program, limits: &Limits, jobs: usize) -> Vec<MethodReport> {
    let info = ProgramInfo::new(program);
    let routines = info.order.clone();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<MethodReport>>> = Mutex::new(vec![None; routines.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(routines.len().max(1)) {
            // Z3 recurses over terms; deep heaps (nested updates) need more than the default
            // 2 MiB of a spawned thread. Only touched pages cost memory.
            let worker = std::thread::Builder::new().stack_size(WORKER_STACK);
            let spawned = worker.spawn_scoped(scope, || loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(routine) = routines.get(k) else {
                    break;
                };
                let start = Instant::now();
                let outcome = in_fresh_context(|| exec::check_routine(&info, routine, limits));
                let report = MethodReport {
                    name: routine.method.name.name.clone(),
                    span: routine.span,
                    obligations: outcome.obligations,
                    trusted: outcome.trusted,
                    warnings: outcome.warnings,
                    error: outcome.error,
                    time: start.elapsed(),
                };
                results.lock().expect("no worker panics while holding it")[k] = Some(report);
            });
            if spawned.is_err() {
                break;
            }
        }
    });
    results
        .into_inner()
        .expect("no worker panics while holding it")
        .into_iter()
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests;
