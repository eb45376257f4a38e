//! The permission-based separation-logic checker on Z3 (`alpinist verify`).
//!
//! Entry point: [`verify_program`] — every method and pure function of a checked program, each
//! in its own Z3 context on a worker thread, giving a [`MethodReport`] per routine: every
//! [`Obligation`] with its [`Status`] and time, what the verdict trusts, warnings, or the
//! construct that is not encoded. [`check_pure`] decides one pure implication (tests, tools).
//!
//! Layers, in the order data flows:
//! - `program.rs` — declarations (fields → location ids, routines by name, PVL types → [`Ty`]);
//! - `state.rs` — the symbolic state: heap and permission mask as curried Z3 arrays keyed by
//!   reference, stores, snapshots for `\old`;
//! - `expr.rs` — expressions → terms, with definedness checks (null, bounds, permission,
//!   division by zero, function preconditions);
//! - `assertion.rs` — inhale / exhale of assertions, quantified permissions, regions (par
//!   blocks and barriers quantified over their iterators), `\matrix`, predicate instances;
//! - `inline.rs` — inline predicates expanded as macros (capture-avoiding); `syn.rs` —
//!   synthetic expressions for what a construct means;
//! - `exec.rs` — symbolic execution of a routine on one solver (branches joined by `ite`,
//!   loops by invariants, par blocks per thread + region, barriers global + local, calls);
//! - `recursion.rs` — termination measures for recursive functions and lemmas;
//! - `uniformity.rs` — the taint analysis behind barrier uniformity;
//! - `solver.rs` — budgets ([`Limits`]) and the single-query [`check_goal`].
//!
//! # Invariants
//! - **Unknown is never verified.** Z3's `unknown` (resource limit, incomplete quantifier
//!   reasoning, nonlinear arithmetic, cancellation) is [`Status::Unknown`] with Z3's reason;
//!   only `unsat` of the negated goal is [`Status::Verified`].
//! - **Nothing is skipped silently.** A construct the encoding does not know is an
//!   [`EncodeError`] with its span (E0501) for the whole routine: no verdict, never a dropped
//!   conjunct. Triggers are the only thing not passed on (they steer instantiation only).
//! - **Budgets are deterministic.** Every query runs under Z3's `rlimit`; a wall-clock
//!   `timeout` exists only as the user's `--timeout` safety net, never in tests.
//! - **Terms stay on their thread.** z3 0.22 builds terms in the thread-local context; each
//!   routine gets a fresh context on its worker, so verdicts do not depend on `--jobs`.
//! - **Definitions are assumed only where they cannot be inconsistent**: a recursive function
//!   or lemma needs a decreasing measure (`recursion.rs`), else its definition is not used
//!   (a warning) or the recursive call fails (an obligation).
//! - A failed check is assumed afterwards, so one mistake gives one failure; a routine with
//!   any failure is failed.
//! - We link the system libz3 (Debian bookworm: 4.8.12) although the crate targets ≥ 4.13:
//!   nothing here inspects declaration or sort kinds through Z3 (those enums were renumbered),
//!   and `Real::from_rational`/`from_real` and `Sum`/`Product` over reals do not link. The
//!   verdict tests in `solver.rs` fail loudly on a mismatch. libz3 4.8.12 can crash (SIGSEGV)
//!   building models; the CLI runs verification in a worker process for that reason.
//!
//! # Integer division
//! Three semantics disagree on negative operands: Z3's Euclidean `div`/`mod`, C's (and
//! OpenCL's) truncation, floor division. Which one PVL's `/` follows in VerCors we could not
//! confirm. All three agree when the dividend is ≥ 0 and the divisor > 0: there the checker
//! uses Z3's `div`/`mod`; elsewhere the result is an unspecified function of the operands, so
//! what the checker proves holds under each of the three. Every division checks divisor ≠ 0.
//! The interpreter and code generation truncate, which is one of the three.
//!
//! # Not there yet
//! Bags and maps, the size of a set, sets in the heap. Each is refused as unsupported (exit 2).

mod assertion;
mod exec;
mod expr;
mod fraction;
mod generics;
mod inline;
mod int32;
mod iteration;
mod obligation;
mod one_point;
mod program;
mod recursion;
mod solver;
mod state;
mod syn;
mod termination;
mod tiles;
mod uniformity;
mod vector;

pub use expr::{EncodeError, Env, Sort};
pub use int32::{Int32, INT32_MAX, INT32_MIN};
pub use obligation::{Obligation, ObligationKind, Status, Trusted, Warning};
pub use solver::{
    check_goal, in_fresh_context, memory_limit, memory_limit_reached, memory_reason,
    set_memory_limit, Limits, Verdict, DEFAULT_MEMORY_MB,
};
pub use state::{Term, Ty};
pub use uniformity::{check_barrier_uniformity, check_program_uniformity, UniformityError};

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
        let mut hyps = assumptions
            .iter()
            .map(|a| eval.bool(a))
            .collect::<Result<Vec<_>, _>>()?;
        let goal_term = eval.bool(goal)?;
        hyps.extend(eval.take_axioms());
        // Counterexamples name the variables the expressions mention.
        let mut mentioned = std::collections::BTreeSet::new();
        for e in assumptions.iter().copied().chain([goal]) {
            e.names(&mut mentioned);
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
    /// Served by the verified-method cache (`crate::cache`): verified in an earlier run, the
    /// obligations and times are that run's.
    pub cached: bool,
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

/// The outcome of a routine whose verification Z3's memory limit stopped: unknown, with the
/// reason, at the routine's span.
fn unfinished(span: Span, time: Duration) -> exec::MethodOutcome {
    let reason = memory_reason(memory_limit().unwrap_or(0));
    exec::MethodOutcome {
        obligations: vec![Obligation {
            kind: ObligationKind::RoutineUnfinished,
            span,
            status: Status::Unknown { reason },
            time,
            note: None,
        }],
        trusted: Vec::new(),
        warnings: Vec::new(),
        error: None,
    }
}

/// A routine not verified: unknown, with the reason, at its span.
fn not_checked(span: Span, reason: String) -> exec::MethodOutcome {
    exec::MethodOutcome {
        obligations: vec![Obligation {
            kind: ObligationKind::RoutineUnfinished,
            span,
            status: Status::Unknown { reason },
            time: Duration::ZERO,
            note: None,
        }],
        trusted: Vec::new(),
        warnings: Vec::new(),
        error: None,
    }
}

/// The stack of a verification worker thread.
const WORKER_STACK: usize = 512 << 20;

/// Verifies every method and pure function of a checked program, on `jobs` threads (each
/// method in a Z3 context of its own). Reports come back in declaration order whatever `jobs`.
pub fn verify_program(program: &Program, limits: &Limits, jobs: usize) -> Vec<MethodReport> {
    verify_selected(program, &|_| Ok(*limits), None, jobs, &|_| true)
}

/// [`verify_program`], and with `Some(int32)` also the 32-bit obligations of executable code
/// (`verify --int32`, see the module `int32.rs`): every integer operation fits in 32 bits
/// (E0623) and `/` `%` have non-negative operands (E0624), except the operations
/// `int32.exempt` names.
pub fn verify_program_with(
    program: &Program,
    limits: &Limits,
    int32: Option<&Int32>,
    jobs: usize,
) -> Vec<MethodReport> {
    verify_selected(program, &|_| Ok(*limits), int32, jobs, &|_| true)
}

/// [`verify_program_with`], with the budget of each routine chosen by its span, when it starts
/// (a routine a concrete run already refutes needs less, see `crate::witness`); `Err(reason)`:
/// the routine is not verified but reported unknown with the reason (libz3 crashed on it in
/// an earlier attempt, say). Only the routines whose spans `selected` accepts are checked (the
/// others are still what calls use): the verified-method cache's misses.
pub fn verify_routines(
    program: &Program,
    limits_of: &(dyn Fn(Span) -> Result<Limits, String> + Sync),
    int32: Option<&Int32>,
    jobs: usize,
    selected: &(dyn Fn(Span) -> bool + Sync),
) -> Vec<MethodReport> {
    verify_selected(program, limits_of, int32, jobs, selected)
}

/// What verifying one routine of `program` reads from the statements of the others (see
/// `ProgramInfo::cross_routine_facts`), in words.
pub fn cross_routine_facts(program: &Program) -> String {
    let resolved = crate::check::name_routines_apart(program);
    ProgramInfo::new(resolved.as_ref().unwrap_or(program)).cross_routine_facts()
}

/// [`verify_program`] for the one routine whose declaration holds `at` (the others are still
/// what calls use, but are not checked themselves): the optimisations' probes.
/// Obligations whose span starts at or beyond this mark no source text: they are reachability
/// probes that a client (an optimisation's applicability check) wrote as `assert false;` to ask
/// whether a point is dead. The prover gives them the small budget of its own reachability test
/// (unreachable-end warnings), so a point Z3 cannot quickly show dead costs milliseconds, not
/// the method's whole budget; "not proved" then means "reachable as far as we know".
pub const REACHABILITY_PROBES: u32 = u32::MAX - (1 << 16);

pub fn verify_routine_at(program: &Program, at: Span, limits: &Limits) -> Option<MethodReport> {
    let holds = |span: Span| span.start <= at.start && at.end <= span.end;
    verify_selected(program, &|_| Ok(*limits), None, 1, &holds)
        .into_iter()
        .find(|r| holds(r.span))
}

fn verify_selected(
    program: &Program,
    limits_of: &(dyn Fn(Span) -> Result<Limits, String> + Sync),
    int32: Option<&Int32>,
    jobs: usize,
    selected: &(dyn Fn(Span) -> bool + Sync),
) -> Vec<MethodReport> {
    // Routines are keyed by name: overloads, and routines of a class whose name another scope
    // declares too, get names of their own first.
    let resolved = crate::check::name_routines_apart(program);
    let program = resolved.as_ref().unwrap_or(program);
    // Vector blocks written without a contract are checked with the one their body implies.
    let completed = vector::with_contracts(program);
    let program = completed.as_ref().unwrap_or(program);
    // Loops with an iteration contract are checked as the par blocks they state.
    let iterations = iteration::as_par_blocks(program);
    let program = iterations.as_ref().unwrap_or(program);
    // Calls of generic routines at concrete types go to instances, which are not verified:
    // the generic routine's proof is theirs.
    let instantiated = generics::instantiate(program);
    let program = instantiated.as_ref().unwrap_or(program);
    let info = ProgramInfo::new(program);
    let plan = int32.map(|mode| int32::Plan::new(&info, mode));
    let mut routines = info.order.clone();
    routines.retain(|r| selected(r.span) && !generics::is_instance(&r.method.name.name));
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
                let limits = limits_of(routine.span);
                let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    limits.as_ref().map(|limits| {
                        in_fresh_context(|| {
                            exec::check_routine(&info, routine, limits, plan.as_ref())
                        })
                    })
                }));
                let outcome = match checked {
                    Ok(Ok(outcome)) => outcome,
                    Ok(Err(reason)) => not_checked(routine.span, reason.clone()),
                    Err(_) if solver::take_memory_panic() => {
                        unfinished(routine.span, start.elapsed())
                    }
                    Err(panic) => std::panic::resume_unwind(panic),
                };
                let report = MethodReport {
                    name: routine.method.name.name.clone(),
                    span: routine.span,
                    obligations: outcome.obligations,
                    trusted: outcome.trusted,
                    warnings: outcome.warnings,
                    error: outcome.error,
                    time: start.elapsed(),
                    cached: false,
                };
                results.lock().expect("no worker panics while holding it")[k] = Some(report);
            });
            if spawned.is_err() {
                break;
            }
        }
    });
    // A routine no worker reached (none could be started: the address-space limit of a
    // memory-bounded run leaves no room for their stacks) is unknown, never left out.
    let missing: Vec<usize> = {
        let results = results.lock().expect("no worker panics while holding it");
        (0..routines.len())
            .filter(|&k| results[k].is_none())
            .collect()
    };
    for k in missing {
        let routine = &routines[k];
        results.lock().expect("no worker panics while holding it")[k] = Some(MethodReport {
            name: routine.method.name.name.clone(),
            span: routine.span,
            obligations: vec![Obligation {
                kind: ObligationKind::RoutineUnfinished,
                span: routine.span,
                status: Status::Unknown {
                    reason: "no verification thread could be started".into(),
                },
                time: Duration::ZERO,
                note: None,
            }],
            trusted: Vec::new(),
            warnings: Vec::new(),
            error: None,
            time: Duration::ZERO,
            cached: false,
        });
    }
    let mut reports: Vec<MethodReport> = results
        .into_inner()
        .expect("no worker panics while holding it")
        .into_iter()
        .flatten()
        .collect();
    // Barrier uniformity is a property of the program text: a failed obligation of the
    // routine that holds the barrier.
    for e in check_program_uniformity(program) {
        let at = e.span();
        if let Some(r) = reports
            .iter_mut()
            .find(|r| r.span.start <= at.start && at.end <= r.span.end)
        {
            r.obligations.push(Obligation {
                kind: ObligationKind::BarrierNotUniform,
                span: at,
                status: Status::Failed { model: Vec::new() },
                time: Duration::ZERO,
                note: Some(format!("{e} ({})", e.code_str())),
            });
        }
    }
    reports
}

#[cfg(test)]
mod tests;
