//! Concrete failing instances: where Z3 cannot decide a routine, run it.
//!
//! Entry point: [`verify_and_confirm`] — for every routine whose verdict is unknown, look for an
//! input that satisfies its precondition and a run from it in which an obligation the verifier
//! must prove is false ([`crate::interp`] with `Limits::check_specs`): a false assertion,
//! contract, loop invariant or barrier postcondition, a missing permission, a data race, an
//! index out of bounds. Such a run is a definite failure, reported with its input
//! (`N = 4, x = [1, 6, 0, 5]`), so a broken kernel ends in exit 1 with what is wrong instead of
//! exit 3.
//!
//! # Invariants
//! - **Only ever from unknown to failed.** A run that passes proves nothing about other inputs
//!   and never changes a verdict; a routine Z3 failed keeps its failures. Where Z3 verified a
//!   routine that a quick run refuted, the routine is unknown (exit 3) with both findings:
//!   never "verified" over a failing run, never "failed" over a proof.
//! - **Only inputs the verifier considers.** The precondition (values *and* permissions) must
//!   be decided true of the input; anything undecided makes the input unusable
//!   (`InterpError::Infeasible`), never assumed. Limits, unsupported constructs and infeasible
//!   runs are not failures ([`crate::interp::InterpError::is_failure`]).
//! - Inputs are small (sizes up to [`Budget::max_int`]) and the search is bounded in runs,
//!   interpreter steps and wall-clock time, so it adds seconds at most.
//!
//! Inputs: `int` parameters and `given` ghosts from 0 to [`Budget::max_int`], smallest
//! first; an array's (or ghost sequence's) length from the precondition (`a.length == e`,
//! `\array(a, e)`, `|s| == e`), else 4; array contents small and varied, a ghost sequence the
//! copy of an input array of its length (the usual "ghost copy of the input" pattern).

use std::time::{Duration, Instant};

use crate::cache::MethodCache;
use crate::inputs::{int_value, length_of, preconditions};
use crate::interp::{self, InterpError, Limits, Memory, Spec, Value};
use crate::syntax::{
    ClauseKind, Expr, Member, MemberKind, Method, MethodBody, Program, Span, TypeKind,
};
use crate::verify::{MethodReport, Obligation, ObligationKind, Outcome, Status};

/// How every failure a concrete run shows begins its note (the rest is what the run found).
pub const NOTE: &str = "fails in a concrete run";

/// How far the search goes.
#[derive(Clone, Debug)]
pub struct Budget {
    /// Integer inputs range over `0..=max_int`.
    pub max_int: i128,
    /// Runs per routine.
    pub max_runs: usize,
    /// Wall-clock time per routine (a safety net; runs are bounded in steps anyway).
    pub time: Duration,
    /// The interpreter's budgets for one run.
    pub limits: Limits,
}

impl Budget {
    /// The search before Z3 (see [`verify_and_confirm`]): a few runs, half a second.
    pub fn quick(full: &Budget) -> Budget {
        Budget {
            max_runs: full.max_runs.min(60),
            time: full.time.min(Duration::from_millis(500)),
            ..full.clone()
        }
    }
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            max_int: 16,
            max_runs: 300,
            time: Duration::from_secs(10),
            limits: Limits {
                max_steps: 2_000_000,
                max_threads: 1 << 12,
                max_cells: 1 << 16,
                check_specs: true,
                ..Limits::default()
            },
        }
    }
}

/// A concrete failing instance.
#[derive(Clone, Debug)]
pub struct Witness {
    /// The obligation that is false.
    pub kind: ObligationKind,
    pub span: Span,
    /// The input, by name: `("N", "4")`, `("x", "[1, 6, 0, 5]")`.
    pub input: Vec<(String, String)>,
    /// What the run found, in words.
    pub message: String,
}

/// `alpinist verify`: every routine of a checked program verified on Z3, and concrete runs
/// where Z3 leaves it unknown:
/// 1. a quick search ([`Budget::quick`]) per method before Z3: a routine it refutes is
///    verified with a [`REFUTED_BUDGET_SHARE`]th of the Z3 budget — its verdict is settled,
///    its obligations are still listed, and a query that runs away past its budget (nonlinear
///    permission amounts, say) cannot hold a broken kernel for minutes;
/// 2. Z3 ([`crate::verify::verify_routines`]);
/// 3. a refuted routine that Z3 left unknown gets its concrete failure as one more obligation
///    (one Z3 verified becomes unknown instead, with both findings: one of the two is wrong);
///    a routine still unknown gets the full search (`budget`).
///
/// With `cache` (the cache, and the limits `limits_of` starts from: its key), a routine whose
/// key the cache holds is not searched nor proved but reported from there (`cached`), and a
/// routine that ends verified is stored. Not with `int32` (see [`crate::cache`]).
pub fn verify_and_confirm(
    program: &Program,
    limits_of: &(dyn Fn(Span) -> Result<crate::verify::Limits, String> + Sync),
    int32: Option<&crate::verify::Int32>,
    jobs: usize,
    budget: &Budget,
    cache: Option<(&MethodCache, &crate::verify::Limits)>,
) -> Vec<MethodReport> {
    let cache = cache.filter(|_| int32.is_none());
    let keys = cache.map_or_else(Vec::new, |(_, limits)| {
        crate::cache::keys(program, &crate::cache::config(limits, budget))
    });
    let mut reports: Vec<MethodReport> = match cache {
        Some((cache, _)) => keys.iter().filter_map(|k| cache.lookup(k)).collect(),
        None => Vec::new(),
    };
    let hits: Vec<Span> = reports.iter().map(|r| r.span).collect();
    let mut fresh = confirm(program, limits_of, int32, jobs, budget, &|span| {
        !hits.contains(&span)
    });
    if let Some((cache, _)) = cache {
        for report in &fresh {
            if let Some(key) = keys.iter().find(|k| k.span == report.span) {
                cache.store(key, report);
            }
        }
    }
    reports.append(&mut fresh);
    reports.sort_by_key(|r| r.span.start);
    reports
}

/// [`verify_and_confirm`] without the cache, for the routines `selected` accepts.
fn confirm(
    program: &Program,
    limits_of: &(dyn Fn(Span) -> Result<crate::verify::Limits, String> + Sync),
    int32: Option<&crate::verify::Int32>,
    jobs: usize,
    budget: &Budget,
    selected: &(dyn Fn(Span) -> bool + Sync),
) -> Vec<MethodReport> {
    let quick = Budget::quick(budget);
    let mut refuted: Vec<(Span, Witness, Duration)> = Vec::new();
    let all = Instant::now();
    for span in method_spans(program).into_iter().filter(|s| selected(*s)) {
        // A file of many methods must not pay half a second each before Z3 starts.
        if all.elapsed() > QUICK_SEARCH_PER_FILE {
            break;
        }
        let start = Instant::now();
        if let Some(w) = search(program, span, &quick).witness {
            refuted.push((span, w, start.elapsed()));
        }
    }
    let limits_of = |span: Span| {
        let mut l = limits_of(span)?;
        if refuted.iter().any(|(s, _, _)| holds(*s, span)) {
            l.rlimit = (l.rlimit / REFUTED_BUDGET_SHARE).max(1);
        }
        Ok(l)
    };
    let mut reports = crate::verify::verify_routines(program, &limits_of, int32, jobs, selected);
    for report in reports.iter_mut() {
        let found = refuted
            .iter()
            .find(|(s, _, _)| holds(*s, report.span))
            .map(|(_, w, t)| (w.clone(), *t));
        let found = match (found, report.outcome()) {
            (Some(f), Outcome::Unknown) => Some(f),
            (Some((w, time)), Outcome::Verified) => {
                // One of the two is wrong. Saying "verified" could be the worst defect there
                // is, saying "failed" could be a false alarm: inconclusive, with both.
                report.obligations.push(Obligation {
                    kind: w.kind,
                    span: w.span,
                    status: Status::Unknown {
                        reason: format!(
                            "Z3 verified every obligation, yet a concrete run fails ({}; input {}): one of the two is wrong, please report it",
                            w.message,
                            w.input
                                .iter()
                                .map(|(n, v)| format!("{n} = {v}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    },
                    time,
                    note: None,
                });
                None
            }
            (Some(_), _) => None,
            (None, Outcome::Unknown) => {
                let start = Instant::now();
                search(program, report.span, budget)
                    .witness
                    .map(|w| (w, start.elapsed()))
            }
            (None, _) => None,
        };
        if let Some((w, time)) = found {
            report.obligations.push(Obligation {
                kind: w.kind,
                span: w.span,
                status: Status::Failed { model: w.input },
                time,
                note: Some(format!("{NOTE}: {}", w.message)),
            });
        }
    }
    reports
}

/// The quick searches before Z3 stop once they took this long for a file.
pub const QUICK_SEARCH_PER_FILE: Duration = Duration::from_secs(2);

/// A routine a quick concrete run refutes is verified with this share of the Z3 budget.
pub const REFUTED_BUDGET_SHARE: u32 = 8;

fn holds(outer: Span, inner: Span) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}

/// The spans of the members that are methods with a block body, not pure functions (their
/// callers run those): the ones a search can run.
fn method_spans(program: &Program) -> Vec<Span> {
    program
        .members()
        .into_iter()
        .filter(|(_, member)| {
            matches!(&member.kind, MemberKind::Method(m)
                if matches!(m.body, MethodBody::Block(_)) && !m.is_function())
        })
        .map(|(_, member)| member.span)
        .collect()
}

/// What a search did and found.
#[derive(Clone, Debug, Default)]
pub struct Search {
    pub witness: Option<Witness>,
    /// Runs made.
    pub runs: usize,
    /// Runs from an admitted input that ended without a failure.
    pub passed: usize,
}

/// Looks for a concrete failing instance of the method declared at `at` (its member's span or
/// a span inside it).
pub fn search(program: &Program, at: Span, budget: &Budget) -> Search {
    let mut found = Search::default();
    let Some((entry, member, m)) = find(program, at) else {
        return found;
    };
    let Some(inputs) = Inputs::new(member, m) else {
        return found;
    };
    // Named apart once here, not by the interpreter at every run (a run resolves overloads
    // itself, which for a program with overloads means type-checking it again).
    let resolved = crate::check::resolve_overloads(program);
    let runnable = resolved.as_ref().unwrap_or(program);
    let start = Instant::now();
    let mut unsupported = 0;
    for ints in tuples(inputs.ints.len(), budget.max_int) {
        if found.runs >= budget.max_runs || start.elapsed() > budget.time {
            break;
        }
        let Some((args, ghosts, memory, shown)) = inputs.build(&ints, found.runs) else {
            continue;
        };
        found.runs += 1;
        let ghosts: Vec<(&str, Value)> = ghosts.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        match interp::run_with_ghosts(runnable, &entry, &args, &ghosts, memory, &budget.limits) {
            Ok(_) => {
                unsupported = 0;
                found.passed += 1;
            }
            Err(e) if e.is_failure() => {
                found.witness = obligation_of(&e).map(|(kind, span)| Witness {
                    kind,
                    span,
                    input: shown,
                    message: e.to_string(),
                });
                return found;
            }
            Err(InterpError::Unsupported { .. } | InterpError::BadCall(_)) => {
                // The same construct stops every run: give up early.
                unsupported += 1;
                if unsupported >= 3 {
                    break;
                }
            }
            Err(_) => unsupported = 0,
        }
    }
    found
}

/// The obligation a failing run shows false, and where.
fn obligation_of(e: &InterpError) -> Option<(ObligationKind, Span)> {
    use ObligationKind as K;
    let kind = match e {
        InterpError::DataRace { second_access, .. } => match second_access {
            interp::Access::Read => K::InsufficientPermission,
            interp::Access::Write => K::InsufficientWritePermission,
        },
        InterpError::AssertFailed { .. } => K::AssertFailed,
        InterpError::OutOfBounds { index, .. } if *index < 0 => K::IndexNegative,
        InterpError::OutOfBounds { .. } => K::IndexTooLarge,
        InterpError::NullDereference { .. } => K::NullDereference,
        InterpError::DivisionByZero { .. } => K::DivisionByZero,
        InterpError::DivergentBarrier { .. } => K::BarrierNotUniform,
        InterpError::SpecFailed { what, .. } => match what {
            Spec::Precondition => K::PreconditionFailed,
            Spec::FunctionPrecondition => K::FunctionPreconditionFailed,
            Spec::Postcondition => K::PostconditionFailed,
            Spec::InvariantEstablished => K::LoopInvariantNotEstablished,
            Spec::InvariantMaintained => K::LoopInvariantNotMaintained,
            Spec::ParPrecondition => K::ParPreconditionFailed,
            Spec::ParPostcondition => K::ParPostconditionFailed,
            Spec::BarrierPrecondition => K::BarrierPreconditionFailed,
            Spec::BarrierPostcondition => K::BarrierNotJustified,
            Spec::ReadPermission => K::InsufficientPermission,
            Spec::WritePermission => K::InsufficientWritePermission,
        },
        _ => return None,
    };
    Some((kind, e.span()?))
}

/// The method declared at `at`, with the name the interpreter runs it by. `None` for pure
/// functions, predicates, constructors and overloaded names.
fn find(program: &Program, at: Span) -> Option<(String, &Member, &Method)> {
    let members = program.members();
    let (class, member, m) = members
        .iter()
        .find_map(|&(class, member)| match &member.kind {
            MemberKind::Method(m) if holds(member.span, at) => Some((class, member, m)),
            _ => None,
        })?;
    let overloaded = members
        .iter()
        .filter(|(c, o)| {
            c.map(|c| &c.name) == class.map(|c| &c.name)
                && matches!(&o.kind, MemberKind::Method(x) if x.name.name == m.name.name)
        })
        .count()
        > 1;
    if overloaded || m.return_type.is_none() || !matches!(m.body, MethodBody::Block(_)) {
        return None;
    }
    let name = match class {
        Some(c) => format!("{}.{}", c.name.name, m.name.name),
        None => m.name.name.clone(),
    };
    Some((name, member, m))
}

/// What a parameter (or `given` ghost) is given.
#[derive(Clone, Debug)]
enum Slot {
    /// The k-th integer of the tuple.
    Int(usize),
    Bool,
    /// An array (`ints`: of int, else of boolean) or a sequence, of the length `len`
    /// computes, or 4.
    Array {
        ints: bool,
        len: Option<Expr>,
    },
    Seq {
        ints: bool,
        len: Option<Expr>,
    },
}

struct Inputs {
    /// Parameters then ghosts, by name.
    slots: Vec<(String, Slot, bool)>,
    /// The names of the integer inputs, in tuple order.
    ints: Vec<String>,
}

impl Inputs {
    fn new(member: &Member, m: &Method) -> Option<Inputs> {
        let conjuncts = preconditions(&member.contract);
        let mut inputs = Inputs {
            slots: Vec::new(),
            ints: Vec::new(),
        };
        let ghosts = member
            .contract
            .clauses
            .iter()
            .filter_map(|c| match &c.kind {
                ClauseKind::Given(p) => Some(p),
                _ => None,
            });
        for (p, ghost) in m
            .params
            .iter()
            .map(|p| (p, false))
            .chain(ghosts.map(|p| (p, true)))
        {
            let name = p.name.name.clone();
            let slot = match &p.ty.kind {
                TypeKind::Int => {
                    inputs.ints.push(name.clone());
                    Slot::Int(inputs.ints.len() - 1)
                }
                TypeKind::Bool => Slot::Bool,
                TypeKind::Array { elem, size }
                    if matches!(elem.kind, TypeKind::Int | TypeKind::Bool) =>
                {
                    // `int[N] a` (1.x): the declared size is the length.
                    Slot::Array {
                        ints: elem.kind == TypeKind::Int,
                        len: size
                            .as_deref()
                            .cloned()
                            .or_else(|| length_of(&conjuncts, &name)),
                    }
                }
                TypeKind::Seq(elem) if matches!(elem.kind, TypeKind::Int | TypeKind::Bool) => {
                    Slot::Seq {
                        ints: elem.kind == TypeKind::Int,
                        len: length_of(&conjuncts, &name),
                    }
                }
                _ => return None,
            };
            inputs.slots.push((name, slot, ghost));
        }
        Some(inputs)
    }

    /// Arguments, ghosts, memory and the input as shown, for one integer tuple (`attempt`
    /// varies the contents). `None` when a length is negative or cannot be computed.
    #[allow(clippy::type_complexity)]
    fn build(
        &self,
        ints: &[i128],
        attempt: usize,
    ) -> Option<(
        Vec<Value>,
        Vec<(String, Value)>,
        Memory,
        Vec<(String, String)>,
    )> {
        let value_of = |name: &str| self.ints.iter().position(|n| n == name).map(|k| ints[k]);
        let mut memory = Memory::new();
        let mut args = Vec::new();
        let mut ghosts = Vec::new();
        let mut shown = Vec::new();
        // Arrays first, so a ghost sequence can copy one of its length.
        let mut arrays: Vec<(usize, Vec<Value>)> = Vec::new();
        for (name, slot, ghost) in &self.slots {
            let (v, text) = match slot {
                Slot::Int(k) => (Value::Int(ints[*k]), ints[*k].to_string()),
                Slot::Bool => (
                    Value::Bool(attempt & 1 == 0),
                    (attempt & 1 == 0).to_string(),
                ),
                Slot::Array { ints: is_int, len } | Slot::Seq { ints: is_int, len } => {
                    let n = match len {
                        Some(e) => usize::try_from(int_value(e, &value_of)?).ok()?,
                        None => 4,
                    };
                    if n > 4096 {
                        return None;
                    }
                    let is_seq = matches!(slot, Slot::Seq { .. });
                    let cells: Vec<Value> = match arrays.iter().find(|(l, c)| {
                        is_seq
                            && *l == n
                            && c.first()
                                .is_none_or(|v| matches!(v, Value::Int(_)) == *is_int)
                    }) {
                        Some((_, cells)) => cells.clone(),
                        None => (0..n)
                            .map(|i| {
                                if *is_int {
                                    Value::Int(((i * 5 + 3 * attempt + 1) % 11) as i128)
                                } else {
                                    Value::Bool((i + attempt) & 1 == 0)
                                }
                            })
                            .collect(),
                    };
                    let text = format!(
                        "[{}]",
                        cells.iter().map(show).collect::<Vec<_>>().join(", ")
                    );
                    let v = if is_seq {
                        Value::Seq(memory.alloc_seq(cells))
                    } else {
                        arrays.push((n, cells.clone()));
                        Value::Array(memory.alloc(cells))
                    };
                    (v, text)
                }
            };
            shown.push((name.clone(), text));
            if *ghost {
                ghosts.push((name.clone(), v));
            } else {
                args.push(v);
            }
        }
        Some((args, ghosts, memory, shown))
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => b.to_string(),
        other => other.kind().to_string(),
    }
}

/// Every tuple of `k` integers in `0..=max`, by increasing largest element (small inputs
/// first: a failure is found at the smallest size that shows it).
fn tuples(k: usize, max: i128) -> impl Iterator<Item = Vec<i128>> {
    (0..=max).flat_map(move |top| {
        let mut all = Vec::new();
        let mut t = vec![0i128; k];
        loop {
            if k == 0 || t.contains(&top) {
                all.push(t.clone());
            }
            if k == 0 {
                break;
            }
            // Next tuple in 0..=top, last position fastest.
            let mut i = k;
            loop {
                if i == 0 {
                    return all.into_iter();
                }
                i -= 1;
                if t[i] < top {
                    t[i] += 1;
                    for x in &mut t[i + 1..] {
                        *x = 0;
                    }
                    break;
                }
            }
        }
        // k == 0: one empty tuple, once.
        if top == 0 {
            all.into_iter()
        } else {
            Vec::new().into_iter()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuples_come_smallest_first_and_each_once() {
        let all: Vec<Vec<i128>> = tuples(2, 2).collect();
        assert_eq!(all.len(), 9);
        assert_eq!(all[0], vec![0, 0]);
        assert_eq!(&all[1..4], &[vec![0, 1], vec![1, 0], vec![1, 1]]);
        let mut sorted = all.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 9);
        assert_eq!(tuples(0, 5).count(), 1);
    }
}
