//! Data prefetching (`gpuopt glob_to_reg a e;`, the Alpinist paper's "Data prefetching"; also
//! `glob_to_reg m[i] j;`, the cell `m[i][j]` of row `m[i]`, where `a` below is `m[i]`): the
//! global cell `a[e]` is read once into a register per *segment* of a par block, every access
//! of the cell in the segment goes to the register, and a segment that writes the cell writes
//! the register back at its end.
//!
//! Segments: the maximal runs of statements without a *breaker* — a barrier, a nested par
//! block, a lock, thread or invariant operation, or a statement that calls a method (or a pure
//! function receiving an array that may be `a`) — in the par body and, recursively, in the
//! bodies of the loops and branches that contain one. So a barrier inside a loop ends the
//! segment before it (write-back) and starts one after it (load), and a loop around a barrier
//! starts a segment at each iteration. What stands outside every segment (the breakers, the
//! conditions and invariants of loops around them) reads the heap, which is current there.
//! A nested par block is planned as a par block of its own, with its own register.
//!
//! Template, per segment where `a[e]` occurs in code (`g`: the guard, see below):
//!
//! ```text
//! T a_reg;                          // once, at the start of the par body
//! if (g) { a_reg = a[e]; }          // segment start (`T a_reg = a[e];` when g is true and
//!                                   // the segment starts the body)
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
//! others): for some guard `g` (first `true`, then the conditions under which the contract,
//! a barrier or a loop invariant hands the thread permission to `a[e]`, e.g. `tid > 0` of
//! `tid > 0 ==> Perm(a[tid-1], 1\2)`): the thread can read `a[e]` where the segment starts
//! under `g` (and write it where it ends, if the segment writes it); `g` holds at every access
//! of the cell; no other access of the segment reaches the same cell under another name
//! (`b != a || f != e` for every write `b[f]`, and every read where the segment writes the
//! cell); and the segment and every access are reachable. Syntactically: `e`'s variables and
//! `g`'s are not assigned in the segment, `e` reads no heap, the array is a parameter or field,
//! no `return` in a segment.

use std::collections::{BTreeMap, BTreeSet};

use super::unroll::MARK_BASE;
use super::{for_as_while_stmt, parse_expr, parse_stmts, respan, FreshNames, Refusal, Timings};
use crate::syntax::{
    print_expr, print_type, BinaryOp, Block, Builtin, Clause, ClauseKind, Expr, ExprKind, Item,
    MemberKind, MethodBody, Modifier, ParBlock, Program, Span, Stmt, StmtKind, TypeKind,
};
use crate::verify::{verify_routine_at, Limits, Status, REACHABILITY_PROBES};

/// Prefetches `array[index]` (the index as written) in every par block of the method at
/// `method`, after checking that it applies.
pub fn prefetch(
    program: &Program,
    method: Span,
    array: &str,
    index: &str,
    limits: &Limits,
) -> Result<(Program, Timings), Refusal> {
    let program = &with_block_bodies(program);
    super::timed(
        || plan(program, method, array, index),
        |plan| check_applicable(program, plan, limits),
        |plan, choice| Ok(apply(program, &plan, &choice)),
    )
}

/// What the syntactic check found out.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The array as written: `a`, or `m[i]` for the two-dimensional form.
    array: String,
    /// The variable the array is reached from (`m` of `m[i]`) and the rows below it.
    root: String,
    rows: Vec<Expr>,
    index: Expr,
    /// The index as printed: two accesses denote the cell when their indices print the same.
    index_text: String,
    /// The element type as printed (`int`).
    elem: String,
    /// The method's span and its name's (refusals about the request point at the name).
    method: Span,
    name_span: Span,
    /// Names of a known other type: their elements are never the cell.
    other_type: BTreeSet<String>,
    segments: Vec<Segment>,
    /// The register of each par block with a segment (a nested par block has its own).
    registers: BTreeMap<(Span, usize), String>,
}

/// A run of statements of a par block between breakers (barriers, calls, ..) where the cell
/// occurs in code.
#[derive(Clone, Debug)]
struct Segment {
    /// The statement list it is part of.
    at: ListAt,
    /// Statement indices `[start, end)` of the list.
    start: usize,
    end: usize,
    writes: bool,
    /// Guards to try, `None` (true) first.
    candidates: Vec<Option<Expr>>,
    /// Where the segment starts (for messages).
    span: Span,
}

impl Plan {
    fn register(&self, seg: &Segment) -> &str {
        self.registers
            .get(&(seg.at.par, seg.at.block))
            .map_or("", String::as_str)
    }

    fn cell_text(&self) -> String {
        format!("{}[{}]", self.array, self.index_text)
    }

    /// Whether `e` is the cell: `a[e]` or `this.a[e]` (`m[i][e]`, `this.m[i][e]`).
    fn is_cell(&self, e: &Expr) -> bool {
        let ExprKind::Index { base, index } = &e.kind else {
            return false;
        };
        self.is_array(base) && print_expr(index) == self.index_text
    }

    /// Whether `e` is the array: the root (or `this.root`) indexed by the rows.
    fn is_array(&self, e: &Expr) -> bool {
        let mut e = e;
        for row in self.rows.iter().rev() {
            match &e.kind {
                ExprKind::Index { base, index } if print_expr(index) == print_expr(row) => e = base,
                _ => return false,
            }
        }
        self.is_root(e)
    }

    fn is_root(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Name(id) => id.name == self.root,
            ExprKind::Field { base, name } => {
                matches!(base.kind, ExprKind::This) && name.name == self.root
            }
            _ => false,
        }
    }

    /// Whether assigning `target` may change which array the cell is in: the root, or one
    /// of the rows on the way (`m = ..`, `m[k] = ..`).
    fn reroutes(&self, target: &Expr) -> bool {
        let mut e = target;
        let mut depth = 0;
        while let ExprKind::Index { base, .. } = &e.kind {
            e = base;
            depth += 1;
        }
        depth <= self.rows.len() && self.is_root(e)
    }

    /// Whether an access `base[..]` may reach the array: its base is not a name of another
    /// known type.
    fn may_alias(&self, base: &Expr) -> bool {
        let name = match &base.kind {
            ExprKind::Name(id) => &id.name,
            ExprKind::Field { base, name } if matches!(base.kind, ExprKind::This) => &name.name,
            _ => return true,
        };
        !self.other_type.contains(name)
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
    // `\values(b, ..)` reads cells of `b` where no index names them: the alias checks below
    // look for `b[..]`, so a register could leave it a stale cell. Refused.
    let mut values_at = None;
    let mut find_values = |x: &Expr| {
        if let ExprKind::Builtin {
            op: Builtin::Values,
            ..
        } = x.kind
        {
            values_at = values_at.or(Some(x.span));
        }
    };
    for s in &body.stmts {
        s.for_each_expr_deep(&mut |e| e.visit(&mut find_values));
    }
    if let Some(span) = values_at {
        return Err(unsupported(
            "`\\values` in the method (it reads cells no index names)",
            span,
        ));
    }
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
    // `a`, or `m[i]`: the root and the rows.
    let array_expr = parse_expr(array).ok_or_else(|| Refusal::PrefetchCannotCheck {
        reason: format!("the array `{array}` does not parse"),
        span: me.name.span,
    })?;
    let mut rows = Vec::new();
    let mut root_expr = &array_expr;
    while let ExprKind::Index { base, index } = &root_expr.kind {
        rows.insert(0, (**index).clone());
        root_expr = base;
    }
    let root = match &root_expr.kind {
        ExprKind::Name(id) => id.name.clone(),
        _ => {
            return Err(Refusal::PrefetchNotHeapArray {
                array: array.into(),
                span: me.name.span,
            })
        }
    };
    if let Some(row) = rows.iter().find(|r| reads_heap(r)) {
        return Err(unsupported(
            format!(
                "a row index that reads the heap (`{}`; only variables and constants)",
                print_expr(row)
            ),
            me.name.span,
        ));
    }
    let mut array_type = typed
        .iter()
        .rev()
        .find(|(n, _)| *n == root)
        .map(|(_, t)| t.clone());
    for _ in &rows {
        array_type = match array_type.map(|t| t.kind) {
            Some(TypeKind::Array { elem, .. }) => Some(*elem),
            _ => None,
        };
    }
    let heap = array_type.is_some() && !locals.iter().any(|(n, _)| *n == root);
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
    // Names declared with the array's type (parameters, fields, locals) may alias it.
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
            format!("an index that reads the heap (`{index}`; only variables and constants)"),
            me.name.span,
        ));
    }
    let index_text = print_expr(&index_expr);
    let mut fresh = FreshNames::new(program);
    let mut plan = Plan {
        array: print_expr(&array_expr),
        root: root.clone(),
        rows,
        index: index_expr,
        index_text,
        elem,
        method,
        name_span: me.name.span,
        other_type,
        segments: Vec::new(),
        registers: BTreeMap::new(),
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
            let before = plan.segments.len();
            let candidates = contract_guards(&plan, &block.contract);
            let at = ListAt {
                par,
                block: b,
                path: Vec::new(),
            };
            plan_list(&mut plan, program, at, &pure, &candidates)?;
            if plan.segments.len() > before {
                let name = fresh.fresh(&format!("{root}_reg"));
                plan.registers.insert((par, b), name);
            }
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
            op: Builtin::Perm | Builtin::PointsTo | Builtin::Value | Builtin::AutoValue,
            args,
        } => args.iter().skip(1).for_each(|a| visit_replaceable(a, f)),
        _ => e.for_each_child(&mut |c| visit_replaceable(c, f)),
    }
}

/// The code of `s` (not its asserts) mentions the cell.
fn code_mentions(plan: &Plan, s: &Stmt) -> bool {
    let mut found = false;
    s.visit(&mut |s| {
        if !matches!(
            s.kind,
            StmtKind::Assert(_)
                | StmtKind::Assume(_)
                | StmtKind::Refute(_)
                | StmtKind::Inhale(_)
                | StmtKind::Exhale(_)
        ) {
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

/// Where a statement list of a par block's body is: the par statement, the block, and the path
/// from the body to the list — for each step, the statement's index and which of its lists
/// (0: a block's statements, a loop's or `ghost`'s body, an `if`'s then branch; 1: the else
/// branch). Bodies are blocks (see [`with_block_bodies`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct ListAt {
    par: Span,
    block: usize,
    path: Vec<(usize, u8)>,
}

/// The `which`th statement list inside `s` (see [`ListAt`]).
fn child_list(s: &Stmt, which: u8) -> Option<&Vec<Stmt>> {
    let inner = match (&s.kind, which) {
        (StmtKind::Block(b), 0) => return Some(&b.stmts),
        (StmtKind::While { body, .. } | StmtKind::For { body, .. }, 0) => body,
        (StmtKind::If { then_branch, .. }, 0) => then_branch,
        (StmtKind::If { else_branch, .. }, 1) => else_branch.as_ref()?,
        (StmtKind::Ghost(inner), 0) => inner,
        _ => return None,
    };
    match &inner.kind {
        StmtKind::Block(b) => Some(&b.stmts),
        _ => None,
    }
}

fn child_list_mut(s: &mut Stmt, which: u8) -> Option<&mut Vec<Stmt>> {
    let inner = match (&mut s.kind, which) {
        (StmtKind::Block(b), 0) => return Some(&mut b.stmts),
        (StmtKind::While { body, .. } | StmtKind::For { body, .. }, 0) => body,
        (StmtKind::If { then_branch, .. }, 0) => then_branch,
        (StmtKind::If { else_branch, .. }, 1) => else_branch.as_mut()?,
        (StmtKind::Ghost(inner), 0) => inner,
        _ => return None,
    };
    match &mut inner.kind {
        StmtKind::Block(b) => Some(&mut b.stmts),
        _ => None,
    }
}

/// How many statement lists `s` has directly (see [`ListAt`]).
fn child_lists(s: &Stmt) -> u8 {
    match &s.kind {
        StmtKind::If {
            else_branch: Some(_),
            ..
        } => 2,
        StmtKind::Block(_)
        | StmtKind::While { .. }
        | StmtKind::For { .. }
        | StmtKind::If { .. }
        | StmtKind::Ghost(_) => 1,
        _ => 0,
    }
}

/// Block `block` of the par statement at `par`.
fn par_block(program: &Program, par: Span, block: usize) -> Option<&ParBlock> {
    let mut found = None;
    program.visit_stmts(&mut |s| {
        if let (StmtKind::Par(g), true) = (&s.kind, s.span == par) {
            found = found.or(g.blocks.get(block));
        }
    });
    found
}

/// The statements of the list at `at`.
fn list_at<'p>(program: &'p Program, at: &ListAt) -> Option<&'p Vec<Stmt>> {
    let mut list = &par_block(program, at.par, at.block)?.body.stmts;
    for &(j, which) in &at.path {
        list = child_list(list.get(j)?, which)?;
    }
    Some(list)
}

/// `program` with the bodies of loops, branches and `ghost` statements inside par blocks
/// written as blocks (`if (c) x = 1;` as `if (c) { x = 1; }`), so that every statement list
/// there has an address ([`ListAt`]).
fn with_block_bodies(program: &Program) -> Program {
    fn wrap(s: &mut Stmt) {
        if !matches!(s.kind, StmtKind::Block(_)) {
            let span = s.span;
            let inner = std::mem::replace(s, block(Vec::new(), span));
            *s = block(vec![inner], span);
        }
    }
    fn go(s: &mut Stmt, in_par: bool) {
        let in_par = in_par || matches!(s.kind, StmtKind::Par(_));
        if in_par {
            match &mut s.kind {
                StmtKind::While { body, .. } | StmtKind::For { body, .. } => wrap(body),
                StmtKind::If {
                    then_branch,
                    else_branch,
                    ..
                } => {
                    wrap(then_branch);
                    if let Some(e) = else_branch {
                        wrap(e);
                    }
                }
                // `ghost int g = ..;` declares `g` for the rest of the enclosing block: a
                // block around it would end its scope there.
                StmtKind::Ghost(inner) if !matches!(inner.kind, StmtKind::LocalDecl { .. }) => {
                    wrap(inner)
                }
                _ => {}
            }
        }
        for c in s.children_mut() {
            go(c, in_par);
        }
    }
    let mut out = program.clone();
    for m in out.members_mut() {
        if let MemberKind::Method(me) = &mut m.kind {
            if let MethodBody::Block(b) = &mut me.body {
                b.stmts.iter_mut().for_each(|s| go(s, false));
            }
        }
    }
    out
}

/// Whether the statement `s` itself (not what is nested in it) ends a segment: the register
/// is written back before it and loaded again after it. Barriers, nested par blocks, lock,
/// thread and invariant operations (they hand memory over), and statements whose expressions
/// call a method (it may access the cell) or a pure function that receives an array that may
/// be the prefetched one (it reads the heap).
fn is_breaker(plan: &Plan, s: &Stmt, pure: &BTreeSet<String>) -> bool {
    match &s.kind {
        StmtKind::Barrier(_)
        | StmtKind::Par(_)
        | StmtKind::Invariant { .. }
        | StmtKind::Atomic { .. }
        | StmtKind::Lock(_)
        | StmtKind::Unlock(_)
        | StmtKind::Fork(_)
        | StmtKind::Join(_)
        | StmtKind::Commit(_)
        | StmtKind::Wait(_)
        | StmtKind::Notify(_) => true,
        _ => {
            let mut calls = false;
            s.for_each_expr(&mut |e| {
                e.visit(&mut |x| match &x.kind {
                    ExprKind::Call { name, .. } if !pure.contains(&name.name) => calls = true,
                    ExprKind::New { .. } => calls = true,
                    ExprKind::Call { args, receiver, .. } => {
                        calls |= args.iter().chain(receiver.as_deref()).any(|a| {
                            let mut names = BTreeSet::new();
                            a.names(&mut names);
                            names
                                .iter()
                                .any(|n| !plan.other_type.contains(n) || *n == plan.root)
                        })
                    }
                    _ => {}
                })
            });
            calls
        }
    }
}

fn contains_breaker(plan: &Plan, s: &Stmt, pure: &BTreeSet<String>) -> bool {
    let mut found = false;
    s.visit(&mut |x| found |= is_breaker(plan, x, pure));
    found
}

/// The segments of the list at `at` — the maximal runs of statements without a breaker — and
/// those of the lists inside its statements that contain one. What stands outside every
/// segment (a breaker, a loop's condition and invariants around a barrier) accesses the heap,
/// which is current there: every segment before it wrote the register back.
fn plan_list(
    plan: &mut Plan,
    program: &Program,
    at: ListAt,
    pure: &BTreeSet<String>,
    candidates: &[Expr],
) -> Result<(), Refusal> {
    let Some(stmts) = list_at(program, &at) else {
        return Ok(());
    };
    let mut run_start: usize = 0;
    for j in 0..=stmts.len() {
        if j < stmts.len() && !contains_breaker(plan, &stmts[j], pure) {
            continue;
        }
        // Guards in scope where the segment starts: the enclosing contracts', and those of
        // the barrier right before it.
        let mut here = candidates.to_vec();
        if let Some(StmtKind::Barrier(b)) = run_start.checked_sub(1).map(|k| &stmts[k].kind) {
            here.extend(contract_guards(plan, &b.contract));
        }
        plan_segment(plan, &at, stmts, run_start, j, &here)?;
        run_start = j + 1;
        // A nested par block gets segments of its own, with its own register.
        if j == stmts.len() || is_breaker(plan, &stmts[j], pure) {
            continue;
        }
        let mut inner_candidates = candidates.to_vec();
        if let StmtKind::While { contract, .. } | StmtKind::For { contract, .. } = &stmts[j].kind {
            inner_candidates.extend(contract_guards(plan, contract));
        }
        for which in 0..child_lists(&stmts[j]) {
            let mut inner = at.clone();
            inner.path.push((j, which));
            plan_list(plan, program, inner, pure, &inner_candidates)?;
        }
    }
    Ok(())
}

/// The segment `stmts[start..end]` of the list at `at`, when its code accesses the cell.
fn plan_segment(
    plan: &mut Plan,
    at: &ListAt,
    stmts: &[Stmt],
    start: usize,
    end: usize,
    candidates: &[Expr],
) -> Result<(), Refusal> {
    let part = &stmts[start..end];
    if !part.iter().any(|s| code_mentions(plan, s)) {
        return Ok(());
    }
    let mut index_names = BTreeSet::new();
    plan.index.names(&mut index_names);
    for row in &plan.rows {
        row.names(&mut index_names);
    }
    let mut assigned = BTreeSet::new();
    for s in part {
        let mut error = None;
        s.visit(&mut |x| {
            if matches!(x.kind, StmtKind::Return(_)) {
                error.get_or_insert(unsupported(
                    format!("`return` in a segment that accesses `{}`", plan.cell_text()),
                    x.span,
                ));
            }
            // The array itself must stay the same array (`a = b;`, `this.a = b;`).
            if let StmtKind::Assign { target, .. } = &x.kind {
                if plan.reroutes(target) {
                    error.get_or_insert(unsupported(
                        format!(
                            "assigning `{}` in a segment that accesses `{}`",
                            print_expr(target),
                            plan.cell_text()
                        ),
                        x.span,
                    ));
                }
            }
        });
        if let Some(e) = error {
            return Err(e);
        }
        for a in s.assigned_locals() {
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
    let mut kept: Vec<Option<Expr>> = vec![None];
    let mut seen = BTreeSet::new();
    for g in candidates {
        let mut names = BTreeSet::new();
        g.names(&mut names);
        if names.iter().all(|n| !assigned.contains(n)) && seen.insert(print_expr(g)) {
            kept.push(Some(g.clone()));
        }
    }
    let writes = part.iter().any(|s| writes_cell(plan, s));
    plan.segments.push(Segment {
        at: at.clone(),
        start,
        end,
        writes,
        candidates: kept,
        span: part[0].span,
    });
    Ok(())
}

/// The guards a contract offers: the heap-free conditions `c` of `c ==> Perm(cell, p)`.
fn contract_guards(plan: &Plan, contract: &crate::syntax::Contract) -> Vec<Expr> {
    let mut found = Vec::new();
    for c in &contract.clauses {
        if let ClauseKind::Requires(e)
        | ClauseKind::Ensures(e)
        | ClauseKind::Context(e)
        | ClauseKind::LoopInvariant(e) = &c.kind
        {
            permission_guards(plan, e, &mut Vec::new(), &mut found);
        }
    }
    found.retain(|g| !reads_heap(g));
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
                all = Expr::binary(BinaryOp::And, all, c.clone());
            }
            out.push(all);
        }
        _ => {}
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

/// Where check `k` (its index in the probe's checks) stands: `mark(k)`, or for a reachability
/// check a span the verifier gives its small reachability budget.
fn check_start(k: usize, kind: CheckKind) -> u32 {
    match kind {
        CheckKind::Feasible => REACHABILITY_PROBES + k as u32,
        _ => MARK_BASE + k as u32,
    }
}

/// Builds the probe: the checks, each marked with [`check_start`].
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
        let start = check_start(k as usize, self.checks[k as usize].kind);
        respan(stmts, Span { start, end: start })
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
                StmtKind::Ghost(inner) if matches!(inner.kind, StmtKind::LocalDecl { .. }) => {
                    // A ghost declaration keeps its scope: checked like any declaration.
                    out.extend(self.expression_checks(segment, inner, true, true));
                    out.push(s.clone());
                }
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
                    let code = !matches!(
                        s.kind,
                        StmtKind::Assert(_)
                            | StmtKind::Assume(_)
                            | StmtKind::Refute(_)
                            | StmtKind::Inhale(_)
                            | StmtKind::Exhale(_)
                    );
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

/// One replacement of the statements `[start, end)` of the list at `at`.
struct Edit {
    at: ListAt,
    start: usize,
    end: usize,
    stmts: Vec<Stmt>,
}

/// Applies `edits` to `program`: deeper lists first (an edit changes the indices of its own
/// list only), later ranges of a list first.
fn splice(program: &mut Program, mut edits: Vec<Edit>) {
    edits.sort_by(|x, y| {
        (y.at.path.len(), y.start)
            .cmp(&(x.at.path.len(), x.start))
            .then_with(|| x.at.cmp(&y.at))
    });
    for edit in edits {
        let mut done = false;
        program.visit_stmt_lists_mut(&mut |stmts| {
            if done {
                return;
            }
            for s in stmts.iter_mut() {
                if s.span != edit.at.par {
                    continue;
                }
                let StmtKind::Par(group) = &mut s.kind else {
                    continue;
                };
                let Some(block) = group.blocks.get_mut(edit.at.block) else {
                    continue;
                };
                let mut list = Some(&mut block.body.stmts);
                for &(j, which) in &edit.at.path {
                    list = list
                        .and_then(|l| l.get_mut(j))
                        .and_then(|s| child_list_mut(s, which));
                }
                if let Some(list) = list {
                    list.splice(edit.start..edit.end, edit.stmts.iter().cloned());
                    done = true;
                }
                return;
            }
        });
    }
}

/// The statements of `seg`, as they stand in `program`.
fn segment_statements(program: &Program, seg: &Segment) -> Vec<Stmt> {
    list_at(program, &seg.at)
        .and_then(|l| l.get(seg.start..seg.end))
        .map(<[Stmt]>::to_vec)
        .unwrap_or_default()
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
    let mut edits = Vec::new();
    for (j, seg) in plan.segments.iter().enumerate() {
        let original = segment_statements(program, seg);
        let mut stmts = Vec::new();
        stmts.extend(builder.feasible(j, seg.span));
        stmts.extend(builder.read_cell(j, CheckKind::Load, seg.span));
        stmts.extend(builder.instrument(j, &original));
        if seg.writes {
            stmts.extend(builder.write_cell(j, seg.span));
        }
        edits.push(Edit {
            at: seg.at.clone(),
            start: seg.start,
            end: seg.end,
            stmts,
        });
    }
    let mut probe = program.clone();
    splice(&mut probe, edits);
    // The method's postconditions say nothing about the segments, and proving them in the
    // larger probe only costs (Z3 took 12 s on one that takes 0.1 s in the method alone).
    for m in probe.members_mut() {
        if matches!(&m.kind, MemberKind::Method(me) if me.span == plan.method) {
            m.contract.clauses = super::unroll::pre_only(&m.contract.clauses);
        }
    }
    let cannot = |reason: String| Refusal::PrefetchCannotCheck {
        reason,
        span: plan.name_span,
    };
    let report = super::unroll::probe_report(&probe, plan.method, limits).map_err(cannot)?;
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
    let mine = |k: usize| {
        let start = check_start(k, checks[k].kind);
        report
            .obligations
            .iter()
            .filter(move |o| o.span.start == start)
    };
    // Every obligation of check k is verified (`holds`), and there is one (`proved`).
    let holds = |k: usize| mine(k).all(|o| o.status == Status::Verified);
    let proved = |k: usize| mine(k).next().is_some() && holds(k);
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
        // The segment must be reachable, and so must one of its accesses: where all are dead
        // code, every claim about them holds vacuously. (A dead access beside live ones is
        // harmless: it never runs, in either program.)
        let feasible = of(CheckKind::Feasible, 0);
        let unreachable = match feasible.split_first() {
            Some((&start, _)) if proved(start) => Some(("the segment is", start)),
            Some((_, sites)) if !sites.is_empty() && sites.iter().all(|&k| proved(k)) => {
                Some(("every access of the cell is", sites[0]))
            }
            _ => None,
        };
        if let Some((what, k)) = unreachable {
            return Err(Refusal::PrefetchCannotCheck {
                reason: format!("{what} unreachable: the facts before it contradict each other, so any claim about it would hold"),
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
    let mut edits = Vec::new();
    // The par blocks whose register is declared by their first load (`T r = a[e];`).
    let mut initialised = BTreeSet::new();
    for (j, seg) in plan.segments.iter().enumerate() {
        let reg = plan.register(seg);
        let guard = seg.candidates[choice.guards[j]].as_ref().map(print_expr);
        let top = seg.at.path.is_empty() && seg.start == 0;
        let load = match &guard {
            None if top => {
                initialised.insert((seg.at.par, seg.at.block));
                format!("{} {reg} = {cell};", plan.elem)
            }
            None => format!("{reg} = {cell};"),
            Some(g) => format!("if ({g}) {{ {reg} = {cell}; }}"),
        };
        let mut stmts = respan(parse_stmts(&load).unwrap_or_default(), seg.span);
        for mut s in segment_statements(program, seg) {
            replace_in_stmt(&mut s, plan, reg, guard.as_deref(), &choice.framed_loops);
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
        edits.push(Edit {
            at: seg.at.clone(),
            start: seg.start,
            end: seg.end,
            stmts,
        });
    }
    splice(&mut out, edits);
    // Elsewhere the register is declared where its par body starts (after the segments'
    // edits, which address the body's statements by their original indices).
    let mut declarations = Vec::new();
    for ((par, block), reg) in &plan.registers {
        if initialised.contains(&(*par, *block)) {
            continue;
        }
        let span = plan
            .segments
            .iter()
            .find(|s| s.at.par == *par && s.at.block == *block)
            .map_or(*par, |s| s.span);
        let text = format!("{} {reg};", plan.elem);
        declarations.push(Edit {
            at: ListAt {
                par: *par,
                block: *block,
                path: Vec::new(),
            },
            start: 0,
            end: 0,
            stmts: respan(parse_stmts(&text).unwrap_or_default(), span),
        });
    }
    splice(&mut out, declarations);
    out
}

/// Replaces the cell by the register in `s` (code, asserts, loop invariants), and gives the
/// loops in `framed` the invariant `g ==> a[e] == a_reg`.
fn replace_in_stmt(
    s: &mut Stmt,
    plan: &Plan,
    reg: &str,
    guard: Option<&str>,
    framed: &BTreeSet<Span>,
) {
    s.for_each_expr_mut(&mut |e| replace_in_expr(e, plan, reg));
    let span = s.span;
    if let StmtKind::While { contract, .. } | StmtKind::For { contract, .. } = &mut s.kind {
        for c in &mut contract.clauses {
            if let ClauseKind::LoopInvariant(e) | ClauseKind::Context(e) = &mut c.kind {
                replace_in_expr(e, plan, reg);
            }
        }
        if framed.contains(&span) {
            let fact = format!("{} == {reg}", plan.cell_text());
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
        replace_in_stmt(c, plan, reg, guard, framed);
    }
}

fn replace_in_expr(e: &mut Expr, plan: &Plan, reg: &str) {
    if plan.is_cell(e) {
        *e = Expr::name(reg, e.span);
        return;
    }
    match &mut e.kind {
        ExprKind::Old(_) => {}
        ExprKind::Builtin {
            op: Builtin::Perm | Builtin::PointsTo | Builtin::Value | Builtin::AutoValue,
            args,
        } => args
            .iter_mut()
            .skip(1)
            .for_each(|a| replace_in_expr(a, plan, reg)),
        ExprKind::Quantifier(q) if q.binders.iter().any(|b| plan.index.mentions(&b.name.name)) => {}
        ExprKind::Let { name, .. } if plan.index.mentions(&name.name) => {}
        _ => e.for_each_child_mut(&mut |c| replace_in_expr(c, plan, reg)),
    }
}
