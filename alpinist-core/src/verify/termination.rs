//! Termination of ghost code: what a `ghost` statement runs, and every routine it reaches.
//!
//! Partial correctness is enough for executable code, but not for ghost code: ghost code is
//! erased from the program that runs, so a lemma that never returns (`ensures false;` with a
//! body `while (true) { }`) would let `ghost bad();` "prove" anything about the code after it.
//! So every `ghost` statement must terminate: each loop in it or in a routine it calls,
//! transitively, has a measure, and each recursion one too.
//!
//! The division of labour: this module decides *syntactically* which loops and calls have a
//! termination argument at all ([`summaries`], [`ghost_may_not_terminate`]); the arguments
//! themselves are obligations checked where they occur (`exec.rs`): a `decreases` measure of a
//! loop per iteration, a method's `decreases` (or an inferred parameter measure,
//! `recursion.rs`) at each recursive call. A routine whose own obligations fail fails on its
//! own, so a ghost call needs only the syntactic fact here. What counts as a termination
//! argument:
//! - a loop with `decreases e1, .., en;` (checked) or `decreases assume;` (trusted, listed);
//! - a *template* loop, whose measure is inferred ([`has_inferred_measure`]): a guard
//!   conjunct `i < b` (`i <= b`, `b > i`, `b >= i`) with an unconditional update `i = i + c`
//!   or `i++`, or `i > b` with `i = i - c` or `i--`, `c` a positive literal, `i` and `b` built
//!   from locals the body does not assign (so `b - i`, resp. `i - b`, falls by at least 1 per
//!   iteration while the guard needs it positive);
//! - a bodiless routine or one with `decreases assume;` (trusted) and any pure function (its
//!   definition is only assumed when its recursion is proved to terminate, `exec.rs`);
//! - a call of a routine that terminates; a self-call (its measure is an obligation of every
//!   routine ghost code may run, [`reached_from_ghost`]);
//!   never a call into a cycle through other routines (mutual recursion is not analysed).

use std::collections::{BTreeMap, BTreeSet};

use crate::syntax::{
    BinaryOp, ClauseKind, Contract, Decreases, Expr, ExprKind, MethodBody, Span, Stmt, StmtKind,
};

use super::program::{ProgramInfo, Routine};

/// Why a routine or a statement may not terminate: the place and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NonTermination {
    pub span: Span,
    pub reason: String,
}

/// The routines that may not terminate, by name.
pub fn summaries(program: &ProgramInfo<'_>) -> BTreeMap<String, NonTermination> {
    let mut out: BTreeMap<String, NonTermination> = BTreeMap::new();
    let mut callees: BTreeMap<String, Vec<(String, Span)>> = BTreeMap::new();
    for r in &program.order {
        let name = r.method.name.name.clone();
        if out.contains_key(&name) || r.is_pure() || trusted(r.contract) {
            continue;
        }
        let MethodBody::Block(body) = &r.method.body else {
            continue;
        };
        if program.cyclic.contains(&name) {
            out.insert(
                name,
                NonTermination {
                    span: r.method.name.span,
                    reason: format!(
                        "`{}` is in a cycle of calls through other routines (mutual recursion is \
                         not proved to terminate)",
                        r.method.name.name
                    ),
                },
            );
            continue;
        }
        let locals = routine_locals(r);
        let mut first_loop = None;
        let mut calls = Vec::new();
        for s in &body.stmts {
            walk(s, &locals, &mut |found| match found {
                Found::Loop(span) => {
                    first_loop.get_or_insert(span);
                }
                Found::Call(callee, span) => calls.push((callee, span)),
            });
        }
        calls.retain(|(c, _)| {
            c != &name && program.routine(c).is_some_and(|callee| !callee.is_pure())
        });
        // Two routines of one name (in different classes): calls resolve by name, so both
        // count.
        callees.entry(name.clone()).or_default().extend(calls);
        if let Some(span) = first_loop {
            out.insert(name.clone(), unmeasured_loop(span, &format!("`{name}`")));
        }
    }
    // Calling a routine that may not terminate: to a fixpoint (each round adds one at least).
    loop {
        let mut added = false;
        for (name, calls) in &callees {
            if out.contains_key(name) {
                continue;
            }
            if let Some((callee, span)) = calls.iter().find(|(c, _)| out.contains_key(c)) {
                let inner = &out[callee];
                let reason = format!("`{name}` calls `{callee}`: {}", inner.reason);
                out.insert(
                    name.clone(),
                    NonTermination {
                        span: *span,
                        reason,
                    },
                );
                added = true;
                break;
            }
        }
        if !added {
            return out;
        }
    }
}

/// The routines ghost code may run: every routine a `ghost` statement calls and, transitively,
/// every routine those call (a routine run as ghost code runs its whole body as ghost code).
/// Only these need their recursion proved to terminate (`exec.rs`): executable code is
/// verified for partial correctness, where a recursive call may use the routine's own
/// contract whether or not the recursion ends, as in VerCors without `decreases`.
pub fn reached_from_ghost(program: &ProgramInfo<'_>) -> BTreeSet<String> {
    let mut calls_of: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut reached = BTreeSet::new();
    let mut todo = Vec::new();
    for r in &program.order {
        let MethodBody::Block(body) = &r.method.body else {
            continue;
        };
        let calls = calls_of.entry(r.method.name.name.clone()).or_default();
        for s in &body.stmts {
            calls_in(s, &mut |name, _| calls.push(name));
            s.visit(&mut |x| {
                if let StmtKind::Ghost(inner) = &x.kind {
                    calls_in(inner, &mut |name, _| todo.push(name));
                }
            });
        }
    }
    while let Some(name) = todo.pop() {
        if reached.insert(name.clone()) {
            todo.extend(calls_of.get(&name).into_iter().flatten().cloned());
        }
    }
    reached
}

/// Every call in a statement (of functions too): the callee's name and the call's span.
fn calls_in(s: &Stmt, f: &mut dyn FnMut(String, Span)) {
    super::recursion::stmt_exprs(s, &mut |e: &Expr| {
        e.visit(&mut |x| {
            if let ExprKind::Call { name, .. } = &x.kind {
                f(name.name.clone(), x.span);
            }
        })
    });
}

/// The first place in ghost statement `s` (of the routine `within`) that may not terminate:
/// a loop without a termination argument, or a call of a routine that may not terminate.
pub fn ghost_may_not_terminate(
    s: &Stmt,
    within: Option<&Routine<'_>>,
    summaries: &BTreeMap<String, NonTermination>,
) -> Option<NonTermination> {
    let locals = within.map(routine_locals).unwrap_or_default();
    let mut first = None;
    walk(s, &locals, &mut |found| {
        if first.is_some() {
            return;
        }
        first = match found {
            Found::Loop(span) => Some(unmeasured_loop(span, "this ghost code")),
            Found::Call(callee, span) => summaries.get(&callee).map(|inner| NonTermination {
                span,
                reason: format!("`{callee}` may not terminate: {}", inner.reason),
            }),
        };
    });
    first
}

fn unmeasured_loop(span: Span, place: &str) -> NonTermination {
    NonTermination {
        span,
        reason: format!(
            "a loop in {place} has no `decreases` measure and is not of the form `i < b` with \
             `i = i + c` (or `i > b` with `i = i - c`) that gives one"
        ),
    }
}

/// `decreases assume;` in a contract: termination taken on trust.
pub fn trusted(contract: &Contract) -> bool {
    contract
        .clauses
        .iter()
        .any(|c| matches!(c.kind, ClauseKind::Decreases(Decreases::Assume)))
}

/// The explicit `decreases` clause of a contract, if any.
pub fn explicit(contract: &Contract) -> Option<(&Decreases, Span)> {
    contract.clauses.iter().find_map(|c| match &c.kind {
        ClauseKind::Decreases(d) => Some((d, c.span)),
        _ => None,
    })
}

enum Found {
    /// A loop with no termination argument.
    Loop(Span),
    /// A call of a routine by name.
    Call(String, Span),
}

/// Walks a statement: first every loop without a termination argument, then every call.
fn walk(s: &Stmt, locals: &BTreeSet<String>, f: &mut dyn FnMut(Found)) {
    unmeasured_loops(s, locals, &mut |span| f(Found::Loop(span)));
    calls_in(s, &mut |name, span| f(Found::Call(name, span)));
}

fn unmeasured_loops(s: &Stmt, locals: &BTreeSet<String>, f: &mut dyn FnMut(Span)) {
    s.visit(&mut |x| {
        let measured = match &x.kind {
            StmtKind::While {
                contract,
                cond,
                body,
            } => {
                explicit(contract).is_some() || has_inferred_measure(Some(cond), body, None, locals)
            }
            StmtKind::For {
                contract,
                cond,
                update,
                body,
                ..
            } => {
                explicit(contract).is_some()
                    || has_inferred_measure(cond.as_ref(), body, update.as_deref(), locals)
            }
            _ => true,
        };
        if !measured {
            f(x.span);
        }
    });
}

/// The names that are locals of a routine (parameters, ghost parameters, declared locals, par
/// iterators): nothing but an assignment in the routine's own code can change them, unlike
/// fields, which a call may write.
fn routine_locals(r: &Routine<'_>) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = r
        .method
        .params
        .iter()
        .map(|p| p.name.name.clone())
        .collect();
    for c in &r.contract.clauses {
        if let ClauseKind::Given(p) | ClauseKind::Yields(p) = &c.kind {
            out.insert(p.name.name.clone());
        }
    }
    if let MethodBody::Block(b) = &r.method.body {
        for s in &b.stmts {
            declared(s, &mut out);
        }
    }
    out
}

/// The locals `s` declares, itself or nested: declarations and par iterators.
pub(super) fn declared(s: &Stmt, out: &mut BTreeSet<String>) {
    s.visit(&mut |x| match &x.kind {
        StmtKind::LocalDecl { vars, .. } => out.extend(vars.iter().map(|v| v.name.name.clone())),
        StmtKind::Par(g) => {
            for b in &g.blocks {
                out.extend(b.iters.iter().map(|it| it.name.name.clone()));
            }
        }
        _ => {}
    });
}

/// Whether the loop is a template whose measure is inferred (module docs): some conjunct of
/// the guard bounds a local `i` by an expression `b` of locals the loop does not assign, and
/// the loop's one unconditional update moves `i` towards `b` by a positive literal.
pub fn has_inferred_measure(
    cond: Option<&Expr>,
    body: &Stmt,
    update: Option<&Stmt>,
    locals: &BTreeSet<String>,
) -> bool {
    let Some(cond) = cond else {
        return false;
    };
    let assigned: Vec<String> = body
        .assigned_locals()
        .into_iter()
        .chain(update.into_iter().flat_map(Stmt::assigned_locals))
        .map(|a| a.name)
        .collect();
    let mut conjuncts = Vec::new();
    cond.flatten_and(&mut conjuncts);
    conjuncts.into_iter().any(|c| {
        let Some((i, bound, up)) = bound_of(c) else {
            return false;
        };
        locals.contains(i) && stable(bound, locals, &assigned) && moves_towards(i, up, body, update)
    })
}

/// `i < b` and the like: the local `i`, the bound `b`, and whether `i` must go up.
fn bound_of(c: &Expr) -> Option<(&str, &Expr, bool)> {
    let ExprKind::Binary { op, lhs, rhs } = &c.kind else {
        return None;
    };
    fn name(e: &Expr) -> Option<&str> {
        match &e.kind {
            ExprKind::Name(id) => Some(id.name.as_str()),
            _ => None,
        }
    }
    match op {
        BinaryOp::Lt | BinaryOp::Le => name(lhs)
            .map(|i| (i, &**rhs, true))
            .or_else(|| name(rhs).map(|i| (i, &**lhs, false))),
        BinaryOp::Gt | BinaryOp::Ge => name(lhs)
            .map(|i| (i, &**rhs, false))
            .or_else(|| name(rhs).map(|i| (i, &**lhs, true))),
        _ => None,
    }
}

/// `b` is built from literals, locals the loop does not assign, array lengths of such locals
/// and integer arithmetic: it has one value during the whole loop.
pub(super) fn stable(b: &Expr, locals: &BTreeSet<String>, assigned: &[String]) -> bool {
    match &b.kind {
        ExprKind::IntLit(_) => true,
        ExprKind::Name(id) => locals.contains(&id.name) && !assigned.contains(&id.name),
        ExprKind::Field { base, name } if name.name == "length" => {
            matches!(&base.kind, ExprKind::Name(_)) && stable(base, locals, assigned)
        }
        ExprKind::Unary { operand, .. } => stable(operand, locals, assigned),
        ExprKind::Binary {
            op: BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod,
            lhs,
            rhs,
        } => stable(lhs, locals, assigned) && stable(rhs, locals, assigned),
        _ => false,
    }
}

/// The loop changes `i` exactly once per iteration, unconditionally, by a positive literal in
/// direction `up`: for a `for`, by its update (the body never assigns `i`); for a `while`, by
/// one top-level statement of the body (nothing else in the body assigns `i`).
fn moves_towards(i: &str, up: bool, body: &Stmt, update: Option<&Stmt>) -> bool {
    let assigns = |s: &Stmt| {
        let a = s.assigned_locals();
        let mut shadows = BTreeSet::new();
        declared(s, &mut shadows);
        // A declaration of `i` inside the loop would make the update move another variable.
        a.iter().any(|n| n.name == i) || shadows.contains(i)
    };
    match update {
        Some(u) => is_step(u, i, up) && !assigns(body),
        None => {
            let stmts: Vec<&Stmt> = match &body.kind {
                StmtKind::Block(b) => b.stmts.iter().collect(),
                _ => vec![body],
            };
            let steps = stmts.iter().filter(|s| is_step(s, i, up)).count();
            let others = stmts
                .iter()
                .filter(|s| !is_step(s, i, up) && assigns(s))
                .count();
            steps == 1 && others == 0
        }
    }
}

/// `i = i + c`, `i = c + i`, `i++` (up) or `i = i - c`, `i--` (down), `c` a positive literal.
fn is_step(s: &Stmt, i: &str, up: bool) -> bool {
    let is_i = |e: &Expr| matches!(&e.kind, ExprKind::Name(id) if id.name == i);
    let positive = |e: &Expr| matches!(&e.kind, ExprKind::IntLit(n) if *n > 0u32.into());
    match &s.kind {
        StmtKind::Increment(t) => up && is_i(t),
        StmtKind::Decrement(t) => !up && is_i(t),
        StmtKind::Assign { target, value } if is_i(target) => match &value.kind {
            ExprKind::Binary {
                op: BinaryOp::Add,
                lhs,
                rhs,
            } => up && ((is_i(lhs) && positive(rhs)) || (positive(lhs) && is_i(rhs))),
            ExprKind::Binary {
                op: BinaryOp::Sub,
                lhs,
                rhs,
            } => !up && is_i(lhs) && positive(rhs),
            _ => false,
        },
        _ => false,
    }
}
