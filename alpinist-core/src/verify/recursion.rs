//! Recursion: which routines call each other, and the termination measures that make a
//! recursive definition or lemma sound.
//!
//! A pure function's definition is assumed only when its recursion terminates, and a
//! recursive method's postcondition is used at its own calls only under the same condition —
//! otherwise `pure int f(int x) = f(x) + 1;` or `ensures false; void bad() { bad(); }` would
//! prove `false`. The measures tried: an integer parameter (non-negative, strictly smaller at
//! the call), the difference of two integer parameters, the length of a sequence parameter,
//! the distance of an integer parameter to the length of an array or sequence parameter.
//! Mutual recursion (a cycle through two or more routines) is not analysed: a function in such
//! a cycle gets no definition, a method in one is refused as unsupported.

use std::collections::{BTreeMap, BTreeSet};

use z3::ast::Ast;
use z3::ast::{Bool, Int};
use z3::{FuncDecl, Params, SatResult, Solver};

use crate::syntax::{BinaryOp, Expr, ExprKind, MethodBody, Stmt, StmtKind};

use super::inline;

use super::program::{ProgramInfo, Routine};
use super::state::{Store, Term, Ty, Value};

/// A measure: its value for a list of parameter (or argument) terms.
pub type Measure<'a> = Box<dyn Fn(&[Term]) -> Option<Int> + 'a>;

/// The candidate measures for parameters of these types: an integer parameter, the
/// difference of two, a sequence's length, and the distance of an integer parameter to the
/// length of an array or sequence parameter (`A.length - i`, `|s| - i`: recursion up to the
/// end); `len` is the checker's array-length function.
pub fn measures<'a>(params: &[Ty], len: &'a FuncDecl) -> Vec<Measure<'a>> {
    let mut out: Vec<Measure> = Vec::new();
    // The distances to a length come last: each measure that does not decrease costs a
    // query that may run to its budget, and the others are the common case.
    let mut distances: Vec<Measure> = Vec::new();
    for (k, ty) in params.iter().enumerate() {
        for (j, other) in params.iter().enumerate() {
            if *other != Ty::Int {
                continue;
            }
            match ty {
                Ty::Array(_) => {
                    distances.push(Box::new(move |ts: &[Term]| match (ts.get(k), ts.get(j)) {
                        (Some(Term::Ref(a)), Some(Term::Int(i))) => {
                            let n = len.apply(&[a as &dyn Ast]).as_int()?;
                            Some(Int::sub(&[n, i.clone()]))
                        }
                        _ => None,
                    }));
                }
                Ty::Seq(_) => {
                    distances.push(Box::new(move |ts: &[Term]| match (ts.get(k), ts.get(j)) {
                        (Some(Term::Seq(s)), Some(Term::Int(i))) => {
                            Some(Int::sub(&[s.length(), i.clone()]))
                        }
                        _ => None,
                    }))
                }
                _ => {}
            }
        }
        match ty {
            Ty::Int => {
                out.push(Box::new(move |ts: &[Term]| match ts.get(k) {
                    Some(Term::Int(x)) => Some(x.clone()),
                    _ => None,
                }));
                for (j, other) in params.iter().enumerate() {
                    if j != k && *other == Ty::Int {
                        out.push(Box::new(move |ts: &[Term]| match (ts.get(k), ts.get(j)) {
                            (Some(Term::Int(a)), Some(Term::Int(b))) => {
                                Some(Int::sub(&[a.clone(), b.clone()]))
                            }
                            _ => None,
                        }));
                    }
                }
            }
            Ty::Seq(_) => out.push(Box::new(move |ts: &[Term]| match ts.get(k) {
                Some(Term::Seq(s)) => Some(s.length()),
                _ => None,
            })),
            _ => {}
        }
    }
    out.extend(distances);
    out
}

/// `measure(own) >= 0 && measure(args) < measure(own)`, or `None` when the measure does not
/// apply to these terms.
pub fn decrease(measure: &Measure<'_>, own: &[Term], args: &[Term]) -> Option<Bool> {
    let x = measure(own)?;
    let a = measure(args)?;
    Some(Bool::and(&[x.ge(Int::from_i64(0)), a.lt(&x)]))
}

/// `new` is lexicographically smaller than `old`, the component that decreases being
/// non-negative in `old` (VerCors' and Viper's well-founded order on integer tuples). The empty
/// tuple (`decreases;`) is never smaller.
pub fn lex_decrease(new: &[Int], old: &[Int]) -> Bool {
    match (new.split_first(), old.split_first()) {
        (Some((n, ns)), Some((o, os))) => Bool::or(&[
            Bool::and(&[o.ge(Int::from_i64(0)), n.lt(o)]),
            Bool::and(&[n.eq(o), lex_decrease(ns, os)]),
        ]),
        _ => Bool::from_bool(false),
    }
}

/// The first predicate instance that `pre` (a conjunct of a function's precondition, inline
/// predicates expanded) holds, unconditionally or under one condition: a conjunct of `**` and
/// `&&`, `P(args)` or `c ==> P(args)` (VerCors' `x?.P()`), not under a quantifier or a
/// conditional expression. Its height ([`super::state::World::depth`]) is the measure of
/// recursion through `\unfolding` of it (a list's `contents()` recursing on
/// `next.contents()` inside `\unfolding state()`); where a condition guards it, the measure
/// is `c ? height + 1 : 0` ([`guarded_instance`]).
pub fn held_instance(pre: &Expr, program: &ProgramInfo<'_>) -> Option<Expr> {
    match &pre.kind {
        ExprKind::Binary {
            op: BinaryOp::Star | BinaryOp::And,
            lhs,
            rhs,
        } => held_instance(lhs, program).or_else(|| held_instance(rhs, program)),
        ExprKind::Binary {
            op: BinaryOp::Implies,
            rhs,
            ..
        } if matches!(rhs.kind, ExprKind::Call { .. }) => {
            held_instance(rhs, program).map(|_| pre.clone())
        }
        ExprKind::Call { .. } => {
            let (_, name, _) = inline::predicate_call(pre)?;
            inline::abstract_predicate(program, name).map(|_| pre.clone())
        }
        _ => None,
    }
}

/// A [`held_instance`] split into its condition (if any) and the instance.
pub fn guarded_instance(instance: &Expr) -> (Option<&Expr>, &Expr) {
    match &instance.kind {
        ExprKind::Binary {
            op: BinaryOp::Implies,
            lhs,
            rhs,
        } => (Some(lhs), rhs),
        _ => (None, instance),
    }
}

/// Some measure of [`measures`] decreases at every recursive call (under the call's path
/// condition and the precondition) and is bounded below.
pub fn terminates(
    params: &[(String, Ty)],
    store: &Store,
    pre: &Bool,
    calls: &[(Bool, Vec<Value>)],
    len: &FuncDecl,
) -> bool {
    let solver = Solver::new();
    let mut p = Params::new();
    p.set_u32("rlimit", 2_000_000);
    solver.set_params(&p);
    let tys: Vec<Ty> = params.iter().map(|(_, t)| t.clone()).collect();
    let own: Vec<Term> = params
        .iter()
        .filter_map(|(n, _)| store.get(n).map(|v| v.term.clone()))
        .collect();
    measures(&tys, len).iter().any(|m| {
        calls.iter().all(|(guard, args)| {
            let args: Vec<Term> = args.iter().map(|v| v.term.clone()).collect();
            let Some(goal) = decrease(m, &own, &args) else {
                return false;
            };
            let goal = Bool::and(&[pre.clone(), guard.clone()]).implies(&goal);
            solver.push();
            solver.assert(goal.not());
            let ok = solver.check() == SatResult::Unsat;
            solver.pop(1);
            ok
        })
    })
}

/// A given measure (`decreases`), `old` at entry, decreases at every recursive call (its path
/// condition, its measure) under the precondition `pre`.
pub fn measure_decreases(pre: &Bool, old: &[Int], calls: &[(Bool, Vec<Int>)]) -> bool {
    let solver = Solver::new();
    let mut p = Params::new();
    p.set_u32("rlimit", 2_000_000);
    solver.set_params(&p);
    calls.iter().all(|(guard, new)| {
        let goal = Bool::and(&[pre.clone(), guard.clone()]).implies(lex_decrease(new, old));
        solver.push();
        solver.assert(goal.not());
        let ok = solver.check() == SatResult::Unsat;
        solver.pop(1);
        ok
    })
}

/// Routines that are part of a call cycle through at least one *other* routine.
pub fn mutually_recursive(program: &ProgramInfo<'_>) -> BTreeSet<String> {
    let mut calls: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in &program.order {
        let mut callees = BTreeSet::new();
        routine_calls(r, &mut callees);
        callees.retain(|c| program.routine(c).is_some());
        calls
            .entry(r.method.name.name.clone())
            .or_default()
            .extend(callees);
    }
    let mut out = BTreeSet::new();
    for start in calls.keys() {
        // Can `start` reach itself through another routine?
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = calls[start].iter().filter(|c| *c != start).collect();
        while let Some(n) = stack.pop() {
            if n == start {
                out.insert(start.clone());
                break;
            }
            if seen.insert(n.clone()) {
                if let Some(next) = calls.get(n) {
                    stack.extend(next.iter());
                }
            }
        }
    }
    out
}

fn routine_calls(r: &Routine<'_>, out: &mut BTreeSet<String>) {
    routine_exprs(r, &mut |e: &Expr| {
        e.visit(&mut |x| {
            if let ExprKind::Call { name, .. } = &x.kind {
                out.insert(name.name.clone());
            }
        })
    });
}

/// Calls `f` on every expression of a routine: contract, body, nested contracts.
pub(super) fn routine_exprs(r: &Routine<'_>, f: &mut dyn FnMut(&Expr)) {
    r.contract.for_each_expr(f);
    match &r.method.body {
        MethodBody::Abstract => {}
        MethodBody::Expr(e) => f(e),
        MethodBody::Block(b) => {
            for s in &b.stmts {
                stmt_exprs(s, f);
            }
        }
    }
}

/// Calls `f` on every expression of a statement, contracts included.
pub(super) fn stmt_exprs(s: &Stmt, f: &mut dyn FnMut(&Expr)) {
    let contract = |c: &crate::syntax::Contract, f: &mut dyn FnMut(&Expr)| c.for_each_expr(f);
    match &s.kind {
        StmtKind::LocalDecl { vars, .. } => {
            for v in vars {
                if let Some(e) = &v.init {
                    f(e);
                }
            }
        }
        StmtKind::Assign { target, value } => {
            f(target);
            f(value);
        }
        StmtKind::Increment(e)
        | StmtKind::Decrement(e)
        | StmtKind::Expr(e)
        | StmtKind::Assert(e)
        | StmtKind::Assume(e)
        | StmtKind::Inhale(e)
        | StmtKind::Exhale(e)
        | StmtKind::Refute(e)
        | StmtKind::Lock(e)
        | StmtKind::Unlock(e)
        | StmtKind::Fork(e)
        | StmtKind::Join(e)
        | StmtKind::Commit(e)
        | StmtKind::Wait(e)
        | StmtKind::Notify(e)
        | StmtKind::Fold(e)
        | StmtKind::Unfold(e) => f(e),
        StmtKind::Return(e) => {
            if let Some(e) = e {
                f(e);
            }
        }
        StmtKind::If {
            cond,
            then_branch,
            else_branch,
        } => {
            f(cond);
            stmt_exprs(then_branch, f);
            if let Some(e) = else_branch {
                stmt_exprs(e, f);
            }
        }
        StmtKind::While {
            contract: c,
            cond,
            body,
        } => {
            contract(c, f);
            f(cond);
            stmt_exprs(body, f);
        }
        StmtKind::For {
            contract: c,
            init,
            cond,
            update,
            body,
        } => {
            contract(c, f);
            for x in [init, update].into_iter().flatten() {
                stmt_exprs(x, f);
            }
            if let Some(c) = cond {
                f(c);
            }
            stmt_exprs(body, f);
        }
        StmtKind::Block(b) => {
            for x in &b.stmts {
                stmt_exprs(x, f);
            }
        }
        StmtKind::Par(g) => {
            for b in &g.blocks {
                contract(&b.contract, f);
                for it in &b.iters {
                    f(&it.lo);
                    f(&it.hi);
                }
                for x in &b.body.stmts {
                    stmt_exprs(x, f);
                }
            }
        }
        StmtKind::Barrier(b) => {
            contract(&b.contract, f);
            for x in &b.body.stmts {
                stmt_exprs(x, f);
            }
        }
        StmtKind::Ghost(x) => stmt_exprs(x, f),
        StmtKind::Invariant { inv, body, .. } => {
            f(inv);
            for x in &body.stmts {
                stmt_exprs(x, f);
            }
        }
        StmtKind::Atomic { body, .. } => {
            for x in &body.stmts {
                stmt_exprs(x, f);
            }
        }
        StmtKind::Action { header, body } => {
            for e in [
                &header.model,
                &header.fraction,
                &header.rest,
                &header.action,
            ] {
                f(e);
            }
            for (field, amount) in &header.converts {
                f(field);
                f(amount);
            }
            for x in &body.stmts {
                stmt_exprs(x, f);
            }
        }
        StmtKind::GpuOpt(_) | StmtKind::Goto(_) | StmtKind::Label(_) => {}
    }
}
