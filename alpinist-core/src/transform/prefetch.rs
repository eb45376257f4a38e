//! Data prefetching (`gpuopt glob_to_reg a e;`, the Alpinist paper's "Data prefetching"): the
//! global cell `a[e]` is read once into a register per *segment* of a par block (its body cut
//! at its barriers), every access of the cell in the segment goes to the register, and a
//! segment that writes the cell writes the register back at its end (before the barrier).
//!
//! Template, per segment where `a[e]` occurs in code (`g`: the guard, see below):
//!
//! ```text
//! T a_reg;                          // once, at the start of the par body
//! if (g) { a_reg = a[e]; }          // segment start (`T a_reg = a[e];` when g is true)
//! ... a[e] replaced by a_reg in code, asserts and loop invariants
//!     (not inside \old(..), Perm(..), PointsTo(..), Value(..));
//!     a loop that reads the cell and whose invariant holds permission to it gets
//!     `loop_invariant g ==> a[e] == a_reg;`
//! if (g) { a[e] = a_reg; }          // segment end, where the segment writes the cell
//! ```
//!
//! Par and barrier contracts keep `a[e]`: the register was just written back where they hold.
//!
//! Applicability, proved with Z3 on one *probe* (the method with checks inserted, each in a
//! branch of its own, `boolean b; if (b) { .. }`, so a failed check is not assumed by the
//! others): for some guard `g` (first `true`, then the conditions under which the contract
//! hands the thread permission to `a[e]`, e.g. `tid > 0` of `tid > 0 ==> Perm(a[tid-1], 1\2)`):
//! the thread can read `a[e]` where the segment starts under `g` (and write it where it ends,
//! if the segment writes it); `g` holds at every access of the cell; no other access of the
//! segment reaches the same cell under another name (`b != a || f != e` for every write
//! `b[f]`, and every read where the segment writes the cell); and the segment is reachable.
//! Syntactically: `e`'s variables and `g`'s are not assigned in the segment, `e` reads no
//! heap, the array is a parameter or field, no method call in the segment (a pure function
//! may read the heap only where the segment does not write the cell), no barrier inside a
//! loop or branch, no nested par block.

use std::collections::BTreeSet;

use super::unroll::{mark, MARK_BASE};
use super::{for_as_while_stmt, parse_expr, parse_stmts, respan, FreshNames, Refusal, Timings};
use crate::syntax::{
    print_expr, print_type, BinaryOp, Block, Builtin, Clause, ClauseKind, Expr, ExprKind, Item,
    MemberKind, MethodBody, Modifier, ParBlock, Program, Span, Stmt, StmtKind, TypeKind,
};
use crate::verify::{verify_routine_at, Limits, Outcome, Status};

/// Prefetches `array[index]` (the index as written) in every par block of the method at
/// `method`, after checking that it applies.
pub fn prefetch(
    program: &Program,
    method: Span,
    array: &str,
    index: &str,
    limits: &Limits,
) -> Result<(Program, Timings), Refusal> {
    super::timed(
        || plan(program, method, array, index),
        |plan| check_applicable(program, plan, limits),
        |plan, choice| Ok(apply(program, &plan, &choice)),
    )
}

/// What the syntactic check found out.
#[derive(Clone, Debug)]
pub struct Plan {
    array: String,
    index: Expr,
    /// The index as printed: two accesses denote the cell when their indices print the same.
    index_text: String,
    /// The element type as printed (`int`).
    elem: String,
    /// The method's span and its name's (refusals about the request point at the name).
    method: Span,
    name_span: Span,
    /// Names whose type is the array's (parameters, fields, locals): they may alias it.
    same_type: BTreeSet<String>,
    /// Names of a known other type: their elements are never the cell.
    other_type: BTreeSet<String>,
    segments: Vec<Segment>,
    register: String,
}

/// A part of a par block's body between barriers where the cell occurs in code.
#[derive(Clone, Debug)]
struct Segment {
    /// The par statement and which of its blocks.
    par: Span,
    block: usize,
    /// Statement indices `[start, end)` of the block's body.
    start: usize,
    end: usize,
    writes: bool,
    /// Guards to try, `None` (true) first.
    candidates: Vec<Option<Expr>>,
    /// Where the segment starts (for messages).
    span: Span,
}

impl Plan {
    fn cell_text(&self) -> String {
        format!("{}[{}]", self.array, self.index_text)
    }

    /// Whether `e` is the cell: `a[e]` or `this.a[e]`.
    fn is_cell(&self, e: &Expr) -> bool {
        let ExprKind::Index { base, index } = &e.kind else {
            return false;
        };
        let named = match &base.kind {
            ExprKind::Name(id) => id.name == self.array,
            ExprKind::Field { base, name } => {
                matches!(base.kind, ExprKind::This) && name.name == self.array
            }
            _ => false,
        };
        named && print_expr(index) == self.index_text
    }

    /// Whether an access `base[..]` may reach the array: its base is not a name of another
    /// known type.
    fn may_alias(&self, base: &Expr) -> bool {
        let name = match &base.kind {
            ExprKind::Name(id) => &id.name,
            ExprKind::Field { base, name } if matches!(base.kind, ExprKind::This) => &name.name,
            _ => return true,
        };
        self.same_type.contains(name) || !self.other_type.contains(name)
    }
}

fn unsupported(what: impl Into<String>, span: Span) -> Refusal {
    Refusal::PrefetchUnsupported {
        what: what.into(),
        span,
    }
}

/// The syntactic checks: the array, the index, the segments and their guards.
pub fn plan(program: &Program, method: Span, array: &str, index: &str) -> Result<Plan, Refusal> {
    let mut found = None;
    for item in &program.items {
        let (fields, members) = match item {
            Item::Class(c) => (c.members.as_slice(), c.members.as_slice()),
            Item::Member(m) => (&[][..], std::slice::from_ref(m)),
        };
        for m in members {
            if let MemberKind::Method(me) = &m.kind {
                if me.span == method {
                    found = Some((fields, me));
                }
            }
        }
    }
    let Some((fields, me)) = found else {
        return Err(Refusal::PrefetchCannotCheck {
            reason: "no method at this position".into(),
            span: method,
        });
    };
    let MethodBody::Block(body) = &me.body else {
        return Err(Refusal::PrefetchCannotCheck {
            reason: "the method has no body".into(),
            span: me.name.span,
        });
    };
    // Every declared name with its type: parameters, fields, the body's locals.
    let mut typed: Vec<(String, crate::syntax::Type)> = Vec::new();
    for f in fields {
        if let MemberKind::Field(f) = &f.kind {
            typed.push((f.name.name.clone(), f.ty.clone()));
        }
    }
    for p in &me.params {
        typed.push((p.name.name.clone(), p.ty.clone()));
    }
    let mut locals = Vec::new();
    for s in &body.stmts {
        s.visit(&mut |s| {
            if let StmtKind::LocalDecl { ty, vars } = &s.kind {
                for v in vars {
                    locals.push((v.name.name.clone(), ty.clone()));
                }
            }
        });
    }
    let array_type = typed
        .iter()
        .rev()
        .find(|(n, _)| n == array)
        .map(|(_, t)| t.clone());
    let heap = array_type.is_some() && !locals.iter().any(|(n, _)| n == array);
    let elem = match array_type.as_ref().map(|t| &t.kind) {
        Some(TypeKind::Array { elem, .. }) if heap => print_type(elem),
        _ => {
            return Err(Refusal::PrefetchNotHeapArray {
                array: array.into(),
                span: me.name.span,
            })
        }
    };
    let array_text = array_type.as_ref().map(print_type).unwrap_or_default();
    typed.extend(locals);
    let mut same_type = BTreeSet::new();
    let mut other_type = BTreeSet::new();
    for (n, t) in &typed {
        if print_type(t) == array_text {
            same_type.insert(n.clone());
        } else {
            other_type.insert(n.clone());
        }
    }
    // A name declared with both kinds of type may alias.
    other_type.retain(|n| !same_type.contains(n));

    let index_expr = parse_expr(index).ok_or_else(|| Refusal::PrefetchCannotCheck {
        reason: format!("the index `{index}` does not parse"),
        span: me.name.span,
    })?;
    if reads_heap(&index_expr) {
        return Err(unsupported(
            format!("the index `{index}` reads the heap (only variables and constants)"),
            me.name.span,
        ));
    }
    let index_text = print_expr(&index_expr);
    let mut fresh = FreshNames::new(program);
    let mut plan = Plan {
        array: array.into(),
        index: index_expr,
        index_text,
        elem,
        method,
        name_span: me.name.span,
        same_type,
        other_type,
        segments: Vec::new(),
        register: fresh.fresh(&format!("{array}_reg")),
    };

    let mut pars = Vec::new();
    for s in &body.stmts {
        s.visit(&mut |s| {
            if let StmtKind::Par(g) = &s.kind {
                pars.push((s.span, g));
            }
        });
    }
    let pure = pure_routines(program);
    for (par, group) in pars {
        for (b, block) in group.blocks.iter().enumerate() {
            plan_block(&mut plan, par, b, block, &pure)?;
        }
    }
    if plan.segments.is_empty() {
        return Err(Refusal::PrefetchNoCell {
            cell: plan.cell_text(),
            span: plan.name_span,
        });
    }
    Ok(plan)
}

/// The names of pure functions (they read the heap but write nothing).
fn pure_routines(program: &Program) -> BTreeSet<String> {
    program
        .members()
        .into_iter()
        .filter_map(|(_, m)| match &m.kind {
            MemberKind::Method(me)
                if me.modifiers.contains(&Modifier::Pure)
                    || matches!(me.body, MethodBody::Expr(_)) =>
            {
                Some(me.name.name.clone())
            }
            _ => None,
        })
        .collect()
}

/// Whether `e` reads the heap: an element, a field other than `length`, a call.
fn reads_heap(e: &Expr) -> bool {
    let mut heap = false;
    e.visit(&mut |x| match &x.kind {
        ExprKind::Index { .. } | ExprKind::Call { .. } | ExprKind::New { .. } => heap = true,
        ExprKind::Field { name, .. } if name.name != "length" => heap = true,
        _ => {}
    });
    heap
}

/// Whether the cell occurs in `e` outside `\old(..)` and the location of a permission.
fn occurs(plan: &Plan, e: &Expr) -> bool {
    let mut found = false;
    visit_replaceable(e, &mut |x| found |= plan.is_cell(x));
    found
}

/// Calls `f` on every subexpression of `e` that prefetching rewrites: not inside `\old(..)`,
/// nor the location of `Perm`, `PointsTo`, `Value` (heap locations only).
fn visit_replaceable(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Old(_) => {}
        ExprKind::Builtin {
            op: Builtin::Perm | Builtin::PointsTo | Builtin::Value,
            args,
        } => args.iter().skip(1).for_each(|a| visit_replaceable(a, f)),
        _ => e.for_each_child(&mut |c| visit_replaceable(c, f)),
    }
}

/// The code of `s` (not its asserts) mentions the cell.
fn code_mentions(plan: &Plan, s: &Stmt) -> bool {
    let mut found = false;
    s.visit(&mut |s| {
        if !matches!(s.kind, StmtKind::Assert(_) | StmtKind::Assume(_)) {
            s.for_each_expr(&mut |e| found |= occurs(plan, e));
        }
    });
    found
}

/// Whether `s` writes the cell (`a[e] = ..`, `a[e]++`).
fn writes_cell(plan: &Plan, s: &Stmt) -> bool {
    let mut found = false;
    s.visit(&mut |s| match &s.kind {
        StmtKind::Assign { target, .. }
        | StmtKind::Increment(target)
        | StmtKind::Decrement(target) => found |= plan.is_cell(target),
        _ => {}
    });
    found
}

fn plan_block(
    plan: &mut Plan,
    par: Span,
    b: usize,
    block: &ParBlock,
    pure: &BTreeSet<String>,
) -> Result<(), Refusal> {
    let stmts = &block.body.stmts;
    let mentions = stmts.iter().any(|s| code_mentions(plan, s));
    if !mentions {
        return Ok(());
    }
    let barriers: Vec<usize> = (0..stmts.len())
        .filter(|&j| matches!(stmts[j].kind, StmtKind::Barrier(_)))
        .collect();
    let mut bounds = vec![0];
    for &j in &barriers {
        bounds.push(j);
        bounds.push(j + 1);
    }
    bounds.push(stmts.len());
    for pair in bounds.chunks(2) {
        let (start, end) = (pair[0], pair[1]);
        let part = &stmts[start..end];
        if !part.iter().any(|s| code_mentions(plan, s)) {
            continue;
        }
        let span = part.first().map_or(block.span, |s| s.span);
        let mut assigned = BTreeSet::new();
        for s in part {
            check_statements(plan, s, pure)?;
            for a in s.assigned_locals() {
                let mut index_names = BTreeSet::new();
                plan.index.names(&mut index_names);
                if index_names.contains(&a.name) {
                    return Err(Refusal::PrefetchIndexAssigned {
                        name: a.name,
                        cell: plan.cell_text(),
                        span: a.span,
                    });
                }
                assigned.insert(a.name);
            }
        }
        let writes = part.iter().any(|s| writes_cell(plan, s));
        if writes {
            // A pure function sees the heap, where the cell is stale until the write-back.
            for s in part {
                if let Some(call) = call_receiving_array(plan, s) {
                    return Err(Refusal::PrefetchCall {
                        cell: plan.cell_text(),
                        span: call,
                    });
                }
            }
        }
        // The contract that gives the thread its permissions where the segment starts.
        let clauses: Vec<&Expr> = if start == 0 {
            block
                .contract
                .clauses
                .iter()
                .filter_map(|c| match &c.kind {
                    ClauseKind::Requires(e) | ClauseKind::Context(e) => Some(e),
                    _ => None,
                })
                .collect()
        } else {
            match &stmts[start - 1].kind {
                StmtKind::Barrier(bar) => bar
                    .contract
                    .clauses
                    .iter()
                    .filter_map(|c| match &c.kind {
                        ClauseKind::Ensures(e) | ClauseKind::Context(e) => Some(e),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            }
        };
        let mut candidates: Vec<Option<Expr>> = vec![None];
        let mut seen = BTreeSet::new();
        for c in clauses {
            let mut found = Vec::new();
            permission_guards(plan, c, &mut Vec::new(), &mut found);
            for g in found {
                let mut names = BTreeSet::new();
                g.names(&mut names);
                let stable = !reads_heap(&g) && names.iter().all(|n| !assigned.contains(n));
                if stable && seen.insert(print_expr(&g)) {
                    candidates.push(Some(g));
                }
            }
        }
        plan.segments.push(Segment {
            par,
            block: b,
            start,
            end,
            writes,
            candidates,
            span,
        });
    }
    Ok(())
}

/// Refuses what a segment may not contain: nested par blocks and barriers, statements that
/// hand over resources (locks, threads, invariants), `return`, calls to methods.
fn check_statements(plan: &Plan, s: &Stmt, pure: &BTreeSet<String>) -> Result<(), Refusal> {
    let mut error = None;
    s.visit(&mut |s| {
        if error.is_some() {
            return;
        }
        let what = match &s.kind {
            StmtKind::Par(_) => Some("a par block inside the segment"),
            StmtKind::Barrier(_) => Some("a barrier inside a loop or branch"),
            StmtKind::Invariant { .. } | StmtKind::Atomic { .. } => {
                Some("an `invariant` or `atomic` block")
            }
            StmtKind::Lock(_)
            | StmtKind::Unlock(_)
            | StmtKind::Fork(_)
            | StmtKind::Join(_)
            | StmtKind::Commit(_)
            | StmtKind::Wait(_)
            | StmtKind::Notify(_) => Some("a lock or thread operation"),
            StmtKind::Return(_) => Some("`return`"),
            _ => None,
        };
        if let Some(what) = what {
            error = Some(unsupported(
                format!("{what} in a segment that accesses `{}`", plan.cell_text()),
                s.span,
            ));
            return;
        }
        if matches!(s.kind, StmtKind::Assert(_) | StmtKind::Assume(_)) {
            return;
        }
        s.for_each_expr(&mut |e| {
            e.visit(&mut |x| match &x.kind {
                ExprKind::Call { name, .. } if !pure.contains(&name.name) => {
                    error.get_or_insert(Refusal::PrefetchCall {
                        cell: plan.cell_text(),
                        span: x.span,
                    });
                }
                ExprKind::New { .. } => {
                    error.get_or_insert(Refusal::PrefetchCall {
                        cell: plan.cell_text(),
                        span: x.span,
                    });
                }
                _ => {}
            })
        });
    });
    error.map_or(Ok(()), Err)
}

/// The span of a call in `s`'s code that receives an array that may be the prefetched one.
fn call_receiving_array(plan: &Plan, s: &Stmt) -> Option<Span> {
    let mut found = None;
    s.visit(&mut |s| {
        if matches!(s.kind, StmtKind::Assert(_) | StmtKind::Assume(_)) {
            return;
        }
        s.for_each_expr(&mut |e| {
            e.visit(&mut |x| {
                if let ExprKind::Call { args, receiver, .. } = &x.kind {
                    let passes = args.iter().chain(receiver.as_deref()).any(|a| {
                        let mut names = BTreeSet::new();
                        a.names(&mut names);
                        names.iter().any(|n| !plan.other_type.contains(n))
                    });
                    if passes {
                        found.get_or_insert(x.span);
                    }
                }
            })
        });
    });
    found
}

/// The conditions `c` of `c ==> .. Perm(cell, p) ..` (nested implications conjoined) in `e`.
fn permission_guards(plan: &Plan, e: &Expr, conds: &mut Vec<Expr>, out: &mut Vec<Expr>) {
    match &e.kind {
        ExprKind::Binary {
            op: BinaryOp::And | BinaryOp::Star,
            lhs,
            rhs,
        } => {
            permission_guards(plan, lhs, conds, out);
            permission_guards(plan, rhs, conds, out);
        }
        ExprKind::Binary {
            op: BinaryOp::Implies,
            lhs,
            rhs,
        } => {
            conds.push((**lhs).clone());
            permission_guards(plan, rhs, conds, out);
            conds.pop();
        }
        ExprKind::Builtin {
            op: Builtin::Perm | Builtin::PointsTo,
            args,
        } if !conds.is_empty() && args.first().is_some_and(|l| plan.is_cell(l)) => {
            let mut all = conds[0].clone();
            for c in &conds[1..] {
                all = binary(BinaryOp::And, all, c.clone());
            }
            out.push(all);
        }
        _ => {}
    }
}

fn binary(op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
    Expr {
        span: lhs.span,
        kind: ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        },
    }
}

/// What a check of the probe establishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CheckKind {
    /// The thread can read the cell where the segment starts.
    Load,
    /// The thread can write the cell where the segment ends.
    WriteBack,
    /// The guard holds where the cell is accessed.
    Guard,
    /// Another access does not reach the cell.
    Alias,
    /// A loop's invariant holds permission to read the cell (so it gets `a[e] == a_reg`).
    Frame,
    /// `assert false` where the segment starts: verified only if it is unreachable.
    Feasible,
}

#[derive(Clone, Debug)]
struct Check {
    kind: CheckKind,
    segment: usize,
    candidate: usize,
    /// The access (alias, guard), the loop (frame), the segment start (load, write-back).
    span: Span,
    /// The access, as printed (alias).
    what: String,
}

/// The guard chosen for each segment (an index into its candidates) and the loops that get
/// the invariant `g ==> a[e] == a_reg`.
#[derive(Clone, Debug)]
pub struct Choice {
    guards: Vec<usize>,
    framed_loops: BTreeSet<Span>,
}

/// Builds the probe: the checks, each marked `mark(k)` (k its index in `checks`).
struct ProbeBuilder<'p> {
    plan: &'p Plan,
    checks: Vec<Check>,
    fresh: FreshNames,
}

impl ProbeBuilder<'_> {
    fn guard_text(&self, segment: usize, candidate: usize) -> Option<String> {
        self.plan.segments[segment].candidates[candidate]
            .as_ref()
            .map(print_expr)
    }

    /// `boolean b; if (b) { body }` marked as check `k`: a failure of `body` is assumed only
    /// inside the branch.
    fn isolated(&mut self, check: Check, body: String) -> Vec<Stmt> {
        let k = self.checks.len() as u32;
        self.checks.push(check);
        let b = self.fresh.fresh("prefetch_probe");
        let text = format!("boolean {b}; if ({b}) {{ {body} }}");
        let stmts = parse_stmts(&text).unwrap_or_default();
        respan(stmts, mark(k))
    }

    fn under_guard(&self, segment: usize, candidate: usize, body: String) -> String {
        match self.guard_text(segment, candidate) {
            Some(g) => format!("if ({g}) {{ {body} }}"),
            None => body,
        }
    }

    /// One check per candidate guard of `segment`.
    fn per_candidate(
        &mut self,
        segment: usize,
        kind: CheckKind,
        span: Span,
        what: &str,
        body: &dyn Fn(&Self, usize) -> String,
    ) -> Vec<Stmt> {
        let mut out = Vec::new();
        for candidate in 0..self.plan.segments[segment].candidates.len() {
            let text = body(self, candidate);
            let check = Check {
                kind,
                segment,
                candidate,
                span,
                what: what.into(),
            };
            out.extend(self.isolated(check, text));
        }
        out
    }

    fn read_cell(&mut self, segment: usize, kind: CheckKind, span: Span) -> Vec<Stmt> {
        let plan = self.plan;
        let p = self.fresh.fresh("prefetch_value");
        let read = format!("{} {p} = {};", plan.elem, plan.cell_text());
        self.per_candidate(segment, kind, span, "", &|me, c| {
            me.under_guard(segment, c, read.clone())
        })
    }

    fn write_cell(&mut self, segment: usize, span: Span) -> Vec<Stmt> {
        let cell = self.plan.cell_text();
        let write = format!("{cell} = {cell};");
        self.per_candidate(segment, CheckKind::WriteBack, span, "", &|me, c| {
            me.under_guard(segment, c, write.clone())
        })
    }

    /// The guard holds at an access of the cell, and the access is reachable (else every
    /// claim about it would hold vacuously).
    fn guard_holds(&mut self, segment: usize, span: Span) -> Vec<Stmt> {
        let mut out = self.feasible(segment, span);
        out.extend(self.guard_holds_only(segment, span));
        out
    }

    fn feasible(&mut self, segment: usize, span: Span) -> Vec<Stmt> {
        let check = Check {
            kind: CheckKind::Feasible,
            segment,
            candidate: 0,
            span,
            what: String::new(),
        };
        self.isolated(check, "assert false;".into())
    }

    fn guard_holds_only(&mut self, segment: usize, span: Span) -> Vec<Stmt> {
        self.per_candidate(segment, CheckKind::Guard, span, "", &|me, c| match me
            .guard_text(segment, c)
        {
            Some(g) => format!("assert {g};"),
            None => "assert true;".into(),
        })
    }

    /// `g ==> (base != a || index != e)` for an access `base[index]` that is not the cell.
    fn no_alias(&mut self, segment: usize, access: &Expr) -> Vec<Stmt> {
        let ExprKind::Index { base, index } = &access.kind else {
            return Vec::new();
        };
        let plan = self.plan;
        let base_text = print_expr(base);
        let distinct = format!("({}) != ({})", print_expr(index), plan.index_text);
        let claim = if base_text == plan.array {
            distinct
        } else {
            format!("{base_text} != {} || {distinct}", plan.array)
        };
        let what = print_expr(access);
        self.per_candidate(
            segment,
            CheckKind::Alias,
            access.span,
            &what,
            &|me, c| match me.guard_text(segment, c) {
                Some(g) => format!("assert ({g}) ==> ({claim});"),
                None => format!("assert {claim};"),
            },
        )
    }

    /// The checks before the statement `s`, for its direct expressions: the guard where they
    /// access the cell (`check_guard`), and, in code, no alias for a write `b[f]` (the target)
    /// and, where the segment writes the cell, for a read.
    fn expression_checks(
        &mut self,
        segment: usize,
        s: &Stmt,
        code: bool,
        check_guard: bool,
    ) -> Vec<Stmt> {
        let plan = self.plan;
        let mut accessed = false;
        let mut aliases: Vec<Expr> = Vec::new();
        let seg_writes = plan.segments[segment].writes;
        let target = match &s.kind {
            StmtKind::Assign { target, .. }
            | StmtKind::Increment(target)
            | StmtKind::Decrement(target) => Some(target),
            _ => None,
        };
        s.for_each_expr(&mut |e| {
            accessed |= occurs(plan, e);
            if !code {
                return;
            }
            let is_target = target.is_some_and(|t| std::ptr::eq(t, e));
            e.visit(&mut |x| {
                if let ExprKind::Index { base, .. } = &x.kind {
                    let write = is_target && std::ptr::eq(x, e);
                    if !plan.is_cell(x) && plan.may_alias(base) && (write || seg_writes) {
                        aliases.push(x.clone());
                    }
                }
            });
        });
        let mut out = Vec::new();
        if accessed && check_guard {
            out.extend(self.guard_holds(segment, s.span));
        }
        for a in aliases {
            out.extend(self.no_alias(segment, &a));
        }
        out
    }

    fn instrument(&mut self, segment: usize, stmts: &[Stmt]) -> Vec<Stmt> {
        let mut out = Vec::new();
        for s in stmts {
            let s = for_as_while_stmt(s).unwrap_or_else(|| s.clone());
            match &s.kind {
                StmtKind::Block(b) => out.push(Stmt {
                    kind: StmtKind::Block(Block {
                        stmts: self.instrument(segment, &b.stmts),
                        span: b.span,
                    }),
                    span: s.span,
                }),
                StmtKind::Ghost(inner) => {
                    let inner = self.instrument(segment, std::slice::from_ref(inner));
                    out.push(Stmt {
                        kind: StmtKind::Ghost(Box::new(block(inner, s.span))),
                        span: s.span,
                    });
                }
                StmtKind::If {
                    cond,
                    then_branch,
                    else_branch,
                } => {
                    out.extend(self.expression_checks(segment, &s, true, true));
                    let then_branch = self.instrument(segment, std::slice::from_ref(then_branch));
                    let else_branch = else_branch
                        .as_ref()
                        .map(|e| self.instrument(segment, std::slice::from_ref(e)));
                    out.push(Stmt {
                        kind: StmtKind::If {
                            cond: cond.clone(),
                            then_branch: Box::new(block(then_branch, s.span)),
                            else_branch: else_branch.map(|e| Box::new(block(e, s.span))),
                        },
                        span: s.span,
                    });
                }
                StmtKind::While {
                    contract,
                    cond,
                    body,
                } => {
                    // The guard where the condition and the invariants read the cell; the
                    // condition's other accesses where it is evaluated: at each iteration's
                    // start and after the loop.
                    let invariant_mentions = contract.clauses.iter().any(|c| match &c.kind {
                        ClauseKind::LoopInvariant(e) | ClauseKind::Context(e) => {
                            occurs(self.plan, e)
                        }
                        _ => false,
                    });
                    if invariant_mentions || occurs(self.plan, cond) {
                        out.extend(self.guard_holds(segment, s.span));
                    }
                    let cond_stmt = Stmt {
                        kind: StmtKind::Expr(cond.clone()),
                        span: cond.span,
                    };
                    // (The guard was checked before the loop.)
                    let cond_checks =
                        |me: &mut Self| me.expression_checks(segment, &cond_stmt, true, false);
                    let mut inner = cond_checks(self);
                    if !writes_cell(self.plan, body) {
                        inner.extend(self.read_cell(segment, CheckKind::Frame, s.span));
                    }
                    inner.extend(self.instrument(segment, std::slice::from_ref(body)));
                    let after = cond_checks(self);
                    out.push(Stmt {
                        kind: StmtKind::While {
                            contract: contract.clone(),
                            cond: cond.clone(),
                            body: Box::new(block(inner, body.span)),
                        },
                        span: s.span,
                    });
                    out.extend(after);
                }
                _ => {
                    let code = !matches!(s.kind, StmtKind::Assert(_) | StmtKind::Assume(_));
                    out.extend(self.expression_checks(segment, &s, code, true));
                    out.push(s.clone());
                }
            }
        }
        out
    }
}

fn block(stmts: Vec<Stmt>, span: Span) -> Stmt {
    Stmt {
        kind: StmtKind::Block(Block { stmts, span }),
        span,
    }
}

/// Replaces the statements `[start, end)` of the body of block `b` of the par statement at
/// `par`, for each `(par, b, start, end, replacement)`, later ranges first.
fn splice(program: &mut Program, mut edits: Vec<(Span, usize, usize, usize, Vec<Stmt>)>) {
    edits.sort_by_key(|e| std::cmp::Reverse(e.2));
    program.visit_stmt_lists_mut(&mut |stmts| {
        for s in stmts.iter_mut() {
            let StmtKind::Par(group) = &mut s.kind else {
                continue;
            };
            for (par, b, start, end, replacement) in &edits {
                if *par != s.span {
                    continue;
                }
                if let Some(block) = group.blocks.get_mut(*b) {
                    block
                        .body
                        .stmts
                        .splice(*start..*end, replacement.iter().cloned());
                }
            }
        }
    });
}

/// The Z3 part of the applicability check (see the module's comment).
pub fn check_applicable(
    program: &Program,
    plan: &Plan,
    limits: &Limits,
) -> Result<Choice, Refusal> {
    let mut builder = ProbeBuilder {
        plan,
        checks: Vec::new(),
        fresh: FreshNames::new(program),
    };
    let body_of = |seg: &Segment| -> Vec<Stmt> {
        let mut stmts = Vec::new();
        program.visit_stmts(&mut |s| {
            if s.span == seg.par {
                if let StmtKind::Par(g) = &s.kind {
                    if let Some(b) = g.blocks.get(seg.block) {
                        stmts = b.body.stmts[seg.start..seg.end].to_vec();
                    }
                }
            }
        });
        stmts
    };
    let mut edits = Vec::new();
    for (j, seg) in plan.segments.iter().enumerate() {
        let original = body_of(seg);
        let mut stmts = Vec::new();
        stmts.extend(builder.feasible(j, seg.span));
        stmts.extend(builder.read_cell(j, CheckKind::Load, seg.span));
        stmts.extend(builder.instrument(j, &original));
        if seg.writes {
            stmts.extend(builder.write_cell(j, seg.span));
        }
        edits.push((seg.par, seg.block, seg.start, seg.end, stmts));
    }
    let mut probe = program.clone();
    splice(&mut probe, edits);
    let cannot = |reason: String| Refusal::PrefetchCannotCheck {
        reason,
        span: plan.name_span,
    };
    let report = verify_routine_at(&probe, plan.method, limits)
        .ok_or_else(|| cannot("the method was not checked".into()))?;
    if report.outcome() == Outcome::Unsupported {
        let why = report
            .error
            .as_ref()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "unsupported construct".into());
        return Err(cannot(format!(
            "the verifier cannot encode the method: {why}"
        )));
    }
    // The checks are never vacuous: every obligation of the method itself holds (a failed
    // one is assumed afterwards). The probe only adds isolated branches, so these are the
    // method's own obligations; where Z3 leaves one undecided in the larger probe (its search
    // depends on every term), the method alone decides.
    let unproved = report
        .obligations
        .iter()
        .find(|o| o.span.start < MARK_BASE && o.status != Status::Verified);
    if let Some(o) = unproved {
        let alone = verify_routine_at(program, plan.method, limits);
        let failed = match &alone {
            Some(r) => r.obligations.iter().find(|o| o.status != Status::Verified),
            None => Some(o),
        };
        if let Some(o) = failed {
            return Err(cannot(format!(
                "the method does not verify ({}; run `alpinist verify`)",
                o.kind.describe()
            )));
        }
    }
    let checks = &builder.checks;
    let holds = |k: usize| {
        report
            .obligations
            .iter()
            .filter(|o| o.span.start == MARK_BASE + k as u32)
            .all(|o| o.status == Status::Verified)
    };
    let proved = |k: usize| {
        let mut mine = report
            .obligations
            .iter()
            .filter(|o| o.span.start == MARK_BASE + k as u32)
            .peekable();
        mine.peek().is_some() && mine.all(|o| o.status == Status::Verified)
    };
    let mut guards = Vec::new();
    let mut framed_loops = BTreeSet::new();
    for (j, seg) in plan.segments.iter().enumerate() {
        let of = |kind: CheckKind, c: usize| {
            (0..checks.len())
                .filter(move |&k| {
                    checks[k].segment == j && checks[k].candidate == c && checks[k].kind == kind
                })
                .collect::<Vec<_>>()
        };
        if let Some(k) = of(CheckKind::Feasible, 0).into_iter().find(|&k| proved(k)) {
            let what = match checks[k].span == seg.span {
                true => "the segment",
                false => "an access of the cell",
            };
            return Err(Refusal::PrefetchCannotCheck {
                reason: format!("{what} is unreachable: the facts before it contradict each other, so any claim about it would hold"),
                span: checks[k].span,
            });
        }
        let order = [
            CheckKind::Load,
            CheckKind::Guard,
            CheckKind::Alias,
            CheckKind::WriteBack,
        ];
        let first_failure = |c: usize| {
            order
                .iter()
                .flat_map(|kind| of(*kind, c))
                .find(|&k| !holds(k))
        };
        let chosen = (0..seg.candidates.len()).find(|&c| first_failure(c).is_none());
        let Some(c) = chosen else {
            // Report the failure of the first guard that can load the cell, else of `true`.
            let best = (0..seg.candidates.len())
                .find(|&c| of(CheckKind::Load, c).into_iter().all(holds))
                .unwrap_or(0);
            let k = first_failure(best).unwrap_or(0);
            return Err(refusal(plan, seg, best, &checks[k]));
        };
        guards.push(c);
        for k in of(CheckKind::Frame, c) {
            if holds(k) {
                framed_loops.insert(checks[k].span);
            }
        }
    }
    Ok(Choice {
        guards,
        framed_loops,
    })
}

fn refusal(plan: &Plan, seg: &Segment, candidate: usize, check: &Check) -> Refusal {
    let cell = plan.cell_text();
    let guard = seg.candidates[candidate]
        .as_ref()
        .map(|g| format!(" when `{}`", print_expr(g)))
        .unwrap_or_default();
    match check.kind {
        CheckKind::Load | CheckKind::WriteBack | CheckKind::Frame | CheckKind::Feasible => {
            let access = if check.kind == CheckKind::WriteBack {
                "write"
            } else {
                "read"
            };
            let place = if check.kind == CheckKind::WriteBack {
                "ends"
            } else {
                "starts"
            };
            Refusal::PrefetchNoPermission {
                cell,
                access,
                place,
                guard,
                span: seg.span,
            }
        }
        CheckKind::Guard => Refusal::PrefetchUnguarded {
            cell,
            guard: seg.candidates[candidate]
                .as_ref()
                .map(print_expr)
                .unwrap_or_else(|| "true".into()),
            span: check.span,
        },
        CheckKind::Alias => Refusal::PrefetchAlias {
            access: check.what.clone(),
            cell,
            span: check.span,
        },
    }
}

/// The rewrite (the checks have passed).
pub fn apply(program: &Program, plan: &Plan, choice: &Choice) -> Program {
    let mut out = program.clone();
    let cell = plan.cell_text();
    let reg = &plan.register;
    let mut edits = Vec::new();
    let mut declared: BTreeSet<(Span, usize)> = BTreeSet::new();
    let mut declarations = Vec::new();
    for (j, seg) in plan.segments.iter().enumerate() {
        let guard = seg.candidates[choice.guards[j]].as_ref().map(print_expr);
        let mut original = Vec::new();
        program.visit_stmts(&mut |s| {
            if s.span == seg.par {
                if let StmtKind::Par(g) = &s.kind {
                    if let Some(b) = g.blocks.get(seg.block) {
                        original = b.body.stmts[seg.start..seg.end].to_vec();
                    }
                }
            }
        });
        let first = declared.insert((seg.par, seg.block));
        let load = match (&guard, first && seg.start == 0) {
            (None, true) => format!("{} {reg} = {cell};", plan.elem),
            (None, false) => format!("{reg} = {cell};"),
            (Some(g), _) => format!("if ({g}) {{ {reg} = {cell}; }}"),
        };
        if first && !(guard.is_none() && seg.start == 0) {
            declarations.push((
                seg.par,
                seg.block,
                format!("{} {reg};", plan.elem),
                seg.span,
            ));
        }
        let mut stmts = respan(parse_stmts(&load).unwrap_or_default(), seg.span);
        for mut s in original {
            replace_in_stmt(&mut s, plan, guard.as_deref(), &choice.framed_loops);
            stmts.push(s);
        }
        if seg.writes {
            let back = match &guard {
                None => format!("{cell} = {reg};"),
                Some(g) => format!("if ({g}) {{ {cell} = {reg}; }}"),
            };
            let end_span = stmts.last().map_or(seg.span, |s| s.span);
            stmts.extend(respan(parse_stmts(&back).unwrap_or_default(), end_span));
        }
        edits.push((seg.par, seg.block, seg.start, seg.end, stmts));
    }
    splice(&mut out, edits);
    // The register is declared where its par body starts, when the first load does not.
    let decls: Vec<_> = declarations
        .into_iter()
        .map(|(par, b, text, span)| {
            (
                par,
                b,
                0,
                0,
                respan(parse_stmts(&text).unwrap_or_default(), span),
            )
        })
        .collect();
    splice(&mut out, decls);
    out
}

/// Replaces the cell by the register in `s` (code, asserts, loop invariants), and gives the
/// loops in `framed` the invariant `g ==> a[e] == a_reg`.
fn replace_in_stmt(s: &mut Stmt, plan: &Plan, guard: Option<&str>, framed: &BTreeSet<Span>) {
    s.for_each_expr_mut(&mut |e| replace_in_expr(e, plan));
    let span = s.span;
    if let StmtKind::While { contract, .. } | StmtKind::For { contract, .. } = &mut s.kind {
        for c in &mut contract.clauses {
            if let ClauseKind::LoopInvariant(e) | ClauseKind::Context(e) = &mut c.kind {
                replace_in_expr(e, plan);
            }
        }
        if framed.contains(&span) {
            let fact = format!("{} == {}", plan.cell_text(), plan.register);
            let fact = match guard {
                Some(g) => format!("({g}) ==> {fact}"),
                None => fact,
            };
            if let Some(e) = parse_expr(&fact) {
                contract.clauses.push(Clause {
                    kind: ClauseKind::LoopInvariant(respan(e, span)),
                    span,
                });
            }
        }
    }
    for c in s.children_mut() {
        replace_in_stmt(c, plan, guard, framed);
    }
}

fn replace_in_expr(e: &mut Expr, plan: &Plan) {
    if plan.is_cell(e) {
        *e = Expr::name(&plan.register, e.span);
        return;
    }
    match &mut e.kind {
        ExprKind::Old(_) => {}
        ExprKind::Builtin {
            op: Builtin::Perm | Builtin::PointsTo | Builtin::Value,
            args,
        } => args
            .iter_mut()
            .skip(1)
            .for_each(|a| replace_in_expr(a, plan)),
        ExprKind::Quantifier(q) if q.binders.iter().any(|b| plan.index.mentions(&b.name.name)) => {}
        ExprKind::Let { name, .. } if plan.index.mentions(&name.name) => {}
        _ => e.for_each_child_mut(&mut |c| replace_in_expr(c, plan)),
    }
}
