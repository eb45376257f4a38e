//! One obligation, one Z3 query: assert the assumptions and the negation of the goal, check,
//! and turn Z3's answer into a [`Verdict`].
//!
//! Threads: z3 0.22 keeps one *thread-local* context, and every term is built in the context
//! of the thread that builds it. [`in_fresh_context`] gives the closure a new context of its
//! own on the calling thread, so terms for one obligation are built, checked and dropped there;
//! nothing Z3 owns crosses threads (z3's terms are `!Send`), only the plain-data [`Verdict`].
//! With `--jobs`, each worker builds its obligations' terms itself.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Once;

use z3::ast::{Bool, Int};
use z3::{Config, Params, SatResult, Solver, Synchronized};

use super::state::Term;

/// Z3's resource budget for one query. `rlimit` counts Z3's internal steps, so the same query
/// gets the same verdict on a loaded machine as on an idle one — unlike a wall-clock timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Z3's `rlimit` (resource units). Z3 reads 0 as "no limit", so 0 is raised to 1: a query
    /// is never unbounded.
    pub rlimit: u32,
    /// A wall-clock limit per query in milliseconds (`--timeout`), on top of `rlimit`: a
    /// safety net for users, never used by tests (a loaded machine would flip verdicts). A
    /// query stopped by it is unknown, never verified.
    pub timeout_ms: Option<u32>,
    /// Z3's model-based quantifier instantiation. On by default (several proofs need it);
    /// off only as the CLI's fallback after libz3 4.8.12 crashed building a model. Off, a
    /// failing quantified obligation is `unknown` rather than `failed`.
    pub mbqi: bool,
}

impl Limits {
    /// The default budget. Measured with libz3 4.8.12 on the nonlinear query
    /// `x, y, z > 0 ⊢ x³ + y³ ≠ z³` (see the tests): 1M units took ~2 s, 4M ~3 s, 6M ~4 s, all
    /// "max. resource limit exceeded"; 8M ran 77 s and stopped as "canceled". Z3 polls the
    /// limit only at certain points, so past some budget a nonlinear query can enter a phase
    /// that runs long before it looks again: `rlimit` makes verdicts repeatable, not fast.
    /// Easy obligations need little: the quantified goals of the tests verify within 1000.
    pub const DEFAULT_RLIMIT: u32 = 4_000_000;
}

impl Limits {
    /// The budget for Z3 inside another program's process — the Rust macros, inside rustc —
    /// where no worker process stands between a libz3 crash and the program: the default
    /// budget with model-based quantifier instantiation off, the configuration the CLI falls
    /// back to after libz3 4.8.12 crashed building a model (a failing quantified obligation is
    /// `unknown`, so still not verified). With the CLI's wall-clock net, 60 s per obligation
    /// (Z3 can run for many minutes past its rlimit, and a build must not hang): an obligation
    /// it stops is `unknown`.
    pub fn in_process() -> Limits {
        Limits {
            mbqi: false,
            timeout_ms: Some(60_000),
            ..Limits::default()
        }
    }

    /// The solver parameters for these limits.
    pub fn params(&self) -> Params {
        let mut params = Params::new();
        params.set_u32("rlimit", self.rlimit.max(1));
        if let Some(ms) = self.timeout_ms {
            params.set_u32("timeout", ms.max(1));
        }
        params.set_bool("mbqi", self.mbqi);
        params
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            rlimit: Self::DEFAULT_RLIMIT,
            timeout_ms: None,
            mbqi: true,
        }
    }
}

/// The memory Z3 may use in this process, in MB, when nothing else is asked for (`--memory`).
/// A fixed amount rather than a fraction of the machine's memory, so that the verdicts of a
/// run-away query do not depend on the machine: every example needs well under 1 GB.
pub const DEFAULT_MEMORY_MB: u32 = 4096;

/// The limit [`set_memory_limit`] put in force, 0 for none.
static MEMORY_LIMIT_MB: AtomicU32 = AtomicU32::new(0);

/// Whether some verdict of this process was unknown because of the memory limit.
static MEMORY_LIMIT_REACHED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Set by the panic hook when a panic on this thread came while Z3 was at its memory limit.
    static HIT_MEMORY_LIMIT: Cell<bool> = const { Cell::new(false) };
}

/// Bounds the memory Z3 allocates in this whole process (every context, every thread) to `mb`
/// MB, with Z3's global parameter `memory_max_size`; call it before any context exists. Over
/// the limit, libz3 4.8.12 answers a check `unknown` ("out of memory", reported as
/// [`memory_reason`]); an allocation that fails while terms are *built* makes the z3 crate
/// panic on the null result instead, which the verifier catches per routine (see
/// [`take_memory_panic`]) and reports as unknown too.
pub fn set_memory_limit(mb: u32) {
    let mb = mb.max(1);
    MEMORY_LIMIT_MB.store(mb, Ordering::SeqCst);
    z3::set_global_param("memory_max_size", &mb.to_string());
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if z3_at_memory_limit() {
                // Expected, and reported as unknown: no panic message.
                HIT_MEMORY_LIMIT.with(|hit| hit.set(true));
            } else {
                previous(info);
            }
        }));
    });
}

/// The limit in force, if [`set_memory_limit`] was called.
pub fn memory_limit() -> Option<u32> {
    match MEMORY_LIMIT_MB.load(Ordering::SeqCst) {
        0 => None,
        mb => Some(mb),
    }
}

/// The reason of an unknown verdict that the memory limit caused.
pub fn memory_reason(mb: u32) -> String {
    format!("memory limit of {mb} MB reached")
}

/// Whether Z3's allocations are close enough to the limit that a failed allocation is the
/// likely cause of a panic now: Z3 refuses a request that would pass the limit, so at that
/// moment its total is below it by less than the request — a new context asks for a few MB
/// at once, hence a margin of an eighth of the limit and at least 16 MB.
fn z3_at_memory_limit() -> bool {
    let Some(mb) = memory_limit() else {
        return false;
    };
    // SAFETY: a plain read of Z3's global allocation counter; no context is involved.
    let allocated = unsafe { z3_sys::Z3_get_estimated_alloc_size() };
    let limit = u64::from(mb) << 20;
    let margin = (limit / 8).max(16 << 20);
    allocated.saturating_add(margin) >= limit
}

/// Whether the last panic on this thread was Z3 running out of its memory limit (and forgets
/// it): then the panic means "unknown", not a bug.
pub(crate) fn take_memory_panic() -> bool {
    let hit = HIT_MEMORY_LIMIT.with(|hit| hit.replace(false));
    if hit {
        MEMORY_LIMIT_REACHED.store(true, Ordering::SeqCst);
    }
    hit
}

/// Whether the memory limit made some verdict of this process unknown: a caller that turns
/// an unknown into a refusal (an optimisation's applicability probe) answers "inconclusive"
/// instead when this is why.
pub fn memory_limit_reached() -> bool {
    MEMORY_LIMIT_REACHED.load(Ordering::SeqCst)
}

/// The answer for one obligation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Z3 proved the goal from the assumptions (the negated goal is unsatisfiable).
    Verified,
    /// Z3 found a counterexample: values of the free variables, as (name, value) pairs sorted
    /// by name, under which the assumptions hold and the goal does not.
    Failed { model: Vec<(String, String)> },
    /// Z3 gave up. `reason` is Z3's `reason_unknown` (e.g. resource limits, incomplete
    /// quantifiers, canceled), never empty. This is *not* a success.
    Unknown { reason: String },
}

impl Verdict {
    /// Only [`Verdict::Verified`] is verified; in particular `Unknown` is not.
    pub fn is_verified(&self) -> bool {
        matches!(self, Verdict::Verified)
    }
}

/// Runs `f` on the calling thread with a new Z3 context as the thread-local one, and restores
/// the previous context afterwards. Everything Z3 inside `f` (terms, solvers, models) belongs to
/// that context and must not escape it; the result is plain data (`Send + Sync`).
///
/// A fresh context per obligation keeps verdicts independent of the order (and the thread) in
/// which obligations are checked.
pub fn in_fresh_context<R, F>(f: F) -> R
where
    F: FnOnce() -> R + Send + Sync,
    R: Send + Sync,
{
    let outer = DECLARATIONS.with(|n| n.replace(0));
    let r = z3::with_z3_config(&Config::new(), f);
    DECLARATIONS.with(|n| n.set(outer));
    r
}

/// Checks `assertions` under the assumption `assumption` (terms of the calling thread's
/// context) in a fresh Z3 context: the same query translated, its terms with new ids. Z3's
/// search follows term ids: the obligations of a linearised matrix's diagonal, `m[N * i +
/// i]`, were left undecided by the method's solver and by a fresh solver in the method's
/// context, and decided at once in a fresh context. With a satisfiable answer, the values of
/// the named integer and boolean constants (`(name shown, symbol, is_int)`), by symbol.
///
/// Translated, not printed and read back: libz3 4.8.12 names the subterms it shares through
/// `let` `a!1`, `a!2`, .., which are also the names of the fresh constants of a program
/// variable `a`, and reads such a name back as the `let`'s term. The text of such a query was
/// another query: lost where the sorts differ (unknown), proved where they agree (`t >= a!1`
/// with `t` shared reads as `t >= t`).
pub fn check_in_fresh_context(
    assertions: Vec<Bool>,
    assumption: &Bool,
    limits: &Limits,
    named: &[(String, String, bool)],
) -> (SatResult, Vec<(String, String)>) {
    let mut query = assertions;
    query.push(assumption.clone());
    let query = Synchronized::new(&query);
    in_fresh_context(move || {
        let mut query = query.recover();
        let assumption = query.pop().expect("the assumption was pushed last");
        let solver = Solver::new();
        solver.set_params(&limits.params());
        for a in &query {
            solver.assert(a);
        }
        // Under an assumption, as in the method's solver: a plain `check` of the asserted
        // goal runs Z3's non-incremental tactics, which ignored the resource limit (minutes
        // on a linearised column-major kernel).
        let result = solver.check_assumptions(&[assumption]);
        let mut values = Vec::new();
        if let (SatResult::Sat, Some(model)) = (result, solver.get_model()) {
            for (shown, symbol, is_int) in named {
                let term = match is_int {
                    true => Term::Int(Int::new_const(symbol.as_str())),
                    false => Term::Bool(Bool::new_const(symbol.as_str())),
                };
                if let Some(v) = model_value(&model, &term) {
                    values.push((shown.clone(), v));
                }
            }
        }
        (result, values)
    })
}

thread_local! {
    /// Declarations numbered so far in the thread's current context (see [`declaration_id`]).
    static DECLARATIONS: Cell<usize> = const { Cell::new(0) };
}

/// A number for a name the encoding makes up (a declared function's, `inv3_0`, `row7`; a
/// binder renamed where an inline predicate is expanded, `k'4`), unique in the current
/// context. Counted per context, not per process: with a process-wide counter a routine's
/// names depended on what the other threads had declared meanwhile, and Z3's search with
/// them, so a verdict could differ from one run to the next.
pub fn declaration_id() -> usize {
    DECLARATIONS.with(|n| {
        let id = n.get();
        n.set(id + 1);
        id
    })
}

/// Checks `assumptions ⊢ goal` with the terms given, which must have been built in the calling
/// thread's current context (inside [`in_fresh_context`]). `vars` are the free variables to
/// report in a counterexample.
pub fn check_goal(
    assumptions: &[Bool],
    goal: &Bool,
    vars: &[(String, Term)],
    limits: &Limits,
) -> Verdict {
    let solver = Solver::new();
    solver.set_params(&limits.params());
    for a in assumptions {
        solver.assert(a);
    }
    solver.assert(goal.not());
    match solver.check() {
        SatResult::Unsat => Verdict::Verified,
        SatResult::Sat => match solver.get_model() {
            Some(model) => Verdict::Failed {
                model: vars
                    .iter()
                    .filter_map(|(name, term)| model_value(&model, term).map(|v| (name.clone(), v)))
                    .collect(),
            },
            // Sat without a model would be a Z3 misconfiguration; still a definite failure.
            None => Verdict::Failed { model: Vec::new() },
        },
        SatResult::Unknown => {
            let reason = solver
                .get_reason_unknown()
                .map(|r| r.trim().to_string())
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| "unknown (Z3 gave no reason)".to_string());
            let reason = match memory_limit() {
                Some(mb) if reason.contains("memory") => {
                    MEMORY_LIMIT_REACHED.store(true, Ordering::SeqCst);
                    format!("{} ({reason})", memory_reason(mb))
                }
                _ => reason,
            };
            Verdict::Unknown { reason }
        }
    }
}

/// A variable's value in the model, completed (a variable the model leaves open gets a value
/// too), written as PVL writes it (`-5`, not Z3's `(- 5)`). References have no printable value.
pub fn model_value(model: &z3::Model, term: &Term) -> Option<String> {
    Some(match term {
        Term::Int(i) => match model.eval(i, true) {
            Some(v) => match v.as_i64() {
                Some(n) => n.to_string(),
                None => unparen_negative(&v.to_string()),
            },
            None => "?".to_string(),
        },
        Term::Bool(b) => match model.eval(b, true).and_then(|v| v.as_bool()) {
            Some(v) => v.to_string(),
            None => "?".to_string(),
        },
        Term::Real(r) => match model.eval(r, true) {
            Some(v) => unparen_negative(&v.to_string()),
            None => "?".to_string(),
        },
        Term::Ref(_)
        | Term::Seq(_)
        | Term::Set(_)
        | Term::Map(_)
        | Term::Bag(_)
        | Term::Tuple(_) => return None,
    })
}

/// `(- 123)` → `-123`; anything else unchanged.
fn unparen_negative(s: &str) -> String {
    match s.strip_prefix("(- ").and_then(|r| r.strip_suffix(')')) {
        Some(digits) => format!("-{digits}"),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use z3::ast::{Ast, Int};

    fn run(
        build: impl Fn() -> (Vec<Bool>, Bool, Vec<(String, Term)>) + Send + Sync,
        rlimit: u32,
    ) -> Verdict {
        in_fresh_context(|| {
            let (hyps, goal, vars) = build();
            check_goal(
                &hyps,
                &goal,
                &vars,
                &Limits {
                    rlimit,
                    ..Limits::default()
                },
            )
        })
    }

    /// Names of declarations restart in every context, whatever was declared before it on this
    /// thread or beside it: a routine's encoding is the same in every run.
    #[test]
    fn declaration_ids_restart_in_every_context() {
        let ids = || in_fresh_context(|| (declaration_id(), declaration_id()));
        let outer = declaration_id();
        assert_eq!(ids(), (0, 1));
        let beside = std::thread::spawn(ids);
        assert_eq!(ids(), (0, 1));
        assert_eq!(beside.join().unwrap(), (0, 1));
        assert_eq!(declaration_id(), outer + 1, "the outer count is kept");
    }

    #[test]
    fn valid_formula_is_verified() {
        // x > 0 ⊢ x + 1 > 1
        let v = run(
            || {
                let x = Int::new_const("x");
                (
                    vec![x.gt(0)],
                    (&x + 1).gt(1),
                    vec![("x".into(), Term::Int(x))],
                )
            },
            Limits::DEFAULT_RLIMIT,
        );
        assert_eq!(v, Verdict::Verified);
    }

    #[test]
    fn invalid_formula_fails_with_a_model_naming_the_variables() {
        // x > 0, y > 0 ⊢ x > y  — false, e.g. x = y = 1.
        let v = run(
            || {
                let x = Int::new_const("x");
                let y = Int::new_const("y");
                (
                    vec![x.gt(0), y.gt(0)],
                    x.gt(&y),
                    vec![("x".into(), Term::Int(x)), ("y".into(), Term::Int(y))],
                )
            },
            Limits::DEFAULT_RLIMIT,
        );
        let Verdict::Failed { model } = v else {
            panic!("expected Failed, got {v:?}")
        };
        let names: Vec<&str> = model.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["x", "y"]);
        let x: i64 = model[0].1.parse().unwrap();
        let y: i64 = model[1].1.parse().unwrap();
        assert!(x > 0 && y > 0 && x <= y, "not a counterexample: {model:?}");
    }

    #[test]
    fn hard_formula_under_a_tiny_rlimit_is_unknown_never_verified() {
        // x, y, z > 0 ⊢ x³ + y³ ≠ z³ is Fermat for n = 3: true, but far beyond Z3's nonlinear
        // integer reasoning, let alone within 1000 resource units.
        let v = run(
            || {
                let x = Int::new_const("x");
                let y = Int::new_const("y");
                let z = Int::new_const("z");
                let cube = |a: &Int| a * a * a;
                (
                    vec![x.gt(0), y.gt(0), z.gt(0)],
                    (cube(&x) + cube(&y)).ne(cube(&z)),
                    vec![],
                )
            },
            1000,
        );
        assert!(!v.is_verified());
        let Verdict::Unknown { reason } = v else {
            panic!("expected Unknown, got {v:?}")
        };
        // libz3 4.8.12 says "max. resource limit exceeded": the rlimit is what stopped it.
        assert!(reason.contains("resource"), "{reason}");
    }

    #[test]
    fn a_fresh_context_reads_the_query_itself_not_its_text() {
        // Z3 names the constants of a variable `a` `a!0`, `a!1`, .., and its printer names
        // the subterms it shares through `let` `a!1`, `a!2`, .. too: libz3 4.8.12 prints
        // `t >= a!1` with `t` shared as `(let ((a!1 t)) .. (>= a!1 a!1) ..)`, which reads
        // back as `t >= t`. The retry that went through the text answered `unsat` for this
        // satisfiable query (`t >= a` follows from nothing here), so a wrong claim could be
        // verified: translated, the query is itself.
        in_fresh_context(|| {
            let xs: Vec<Int> = (0..3).map(|_| Int::fresh_const("a")).collect();
            let base = Int::add(&[&xs[0], &xs[2], &Int::from_i64(1)]);
            let t = &base * &base + &base;
            let goal = Bool::fresh_const("obligation");
            let claim = Bool::and(&[t.ge(&xs[1]), t.ge(&t - 1)]);
            let assertions = vec![goal.implies(claim.not())];
            let named = [("a".to_string(), xs[1].decl().name(), true)];
            let (answer, values) =
                check_in_fresh_context(assertions, &goal, &Limits::default(), &named);
            assert_eq!(answer, SatResult::Sat);
            assert_eq!(values.len(), 1, "{values:?}");
        });
    }

    #[test]
    fn unparen_negative_numbers() {
        assert_eq!(unparen_negative("(- 12)"), "-12");
        assert_eq!(unparen_negative("7"), "7");
    }
}
