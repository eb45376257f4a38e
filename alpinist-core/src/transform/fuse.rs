//! Kernel fusion (`gpuopt fuse F B;`, `--fuse F[:B]`; design.md "Transformation templates"):
//! F consecutive par blocks with provably equal ranges become one par block whose thread runs
//! the F bodies one after the other, with a barrier before a body that depends on what
//! *another* thread did in an earlier one.
//!
//! The analysis works on *permission atoms*, the conjuncts `Perm(l, p)` and `c ==> Perm(l, p)`
//! of the thread contracts (every body only touches what its contract gives it), and on the
//! pure conjuncts (*facts*):
//! - a **resource** is an array (`a` of `a[e]`) or a field name (`.f` of `x.f`); an atom's
//!   *key* is its guard and location as printed (after every kernel's iterator is renamed to
//!   the first kernel's), its *address* the index `e` (or the receiver `x`);
//! - kernels k < l **depend** on each other where a location one thread may write in one (an
//!   atom worth a whole permission) may be touched by *another* thread in the other (Z3, over
//!   two threads t ≠ u); a kernel that depends on a kernel of the current *segment* starts
//!   the next one, after a barrier. With B work-groups a dependence must stay inside a group
//!   (`(t - lo) / (N/B) == (u - lo) / (N/B)`), else E0969; with B > 1 a fused kernel with a
//!   barrier becomes a par block of work-groups around the group's threads
//!   ([`in_work_groups`]), so its barrier is verified as one work-group's;
//! - per thread, two keys of one resource held at once (in one segment) beyond a whole
//!   permission together must be different locations (Z3), else E0968.
//!
//! Every Z3 question is asked in the state before the first par block, each in a branch of
//! its own (`boolean b; if (b) { assert q; }`): a failed question is never assumed by the
//! next one.
//!
//! The fused thread contract is computed by *accounting* ([`held`]): per key, a segment's
//! kernels need `pre_k` at their start and give back `post_k` at their end, so the thread
//! holds `max_k (pre_k - Σ_{j<k} (post_j - pre_j))` at the segment's start and that plus
//! `Σ (post - pre)` at its end (fractions as rationals; `read` is an infinitesimal, so
//! `max(read, 1\2) = 1\2`: the larger of two shares, never their sum, when a kernel gives
//! back what it takes). A resource's holdings come from the fused precondition (the first
//! segment that touches it) and change hands only at barriers: a barrier requires everything
//! the thread holds and the facts still valid, and ensures the next segment's holdings (one
//! location handed for another takes the whole share, when both keys name a different
//! location for every thread, so no share is lost), the facts about resources whose holdings
//! stay, and the next segment's preconditions. What no new holder takes of a thread's old
//! location stays with that thread ([`leftover`]: the new keys' addresses are inverted, so
//! for a stencil reading `a[tid]` and `a[tid + 1]` thread 0 keeps the half of `a[0]` that no
//! thread takes). A fact stays valid until a kernel that may write a resource it reads
//! starts. A later kernel's fact about resources no earlier kernel writes goes to the fused
//! precondition; one about a resource an earlier kernel of its segment wrote is asserted
//! before its body (the thread knows it). The output is reverified like every
//! optimisation's, so the contract need not be the weakest; where a handed-over address
//! cannot be inverted (`tid / 2`), the untaken shares are lost and the output may not verify
//! (a known gap, README).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

mod amount;

use amount::Amount;

use super::unroll::{find_stmt, mark, prove_in_probe};
use super::{conjuncts, parse_expr, respan, Applied, FreshNames, Refusal, Timings};
use crate::syntax::{
    print_expr, Barrier, BarrierStyle, BinaryOp, Block, Builtin, Clause, ClauseKind, Contract,
    Expr, ExprKind, Ident, ParBlock, ParGroup, ParGroupStyle, ParIter, Program, Span, Stmt,
    StmtKind,
};
use crate::verify::{Limits, Status};

/// Fuse the `count` par statements that start at `first`, for `groups` work-groups. Where a
/// kernel depends on an earlier one across work-groups, the kernels before it are fused (at
/// least two), with a note that says which kernel stopped fusion and why; else the refusal.
pub fn fuse(
    program: &Program,
    first: Span,
    count: u32,
    groups: u32,
    limits: &Limits,
) -> Result<Applied, Refusal> {
    let mut count = count;
    let mut note = None;
    let mut spent = Timings::default();
    loop {
        let start = std::time::Instant::now();
        let mut shape = String::new();
        let result = super::timed(
            || plan(program, first, count, groups),
            |plan| check_applicable(program, plan, limits),
            |plan, layout| {
                shape = launch_shape(&plan, &layout);
                apply(program, &plan, &layout, limits)
            },
        );
        match result {
            Ok((program, timings)) => {
                return Ok(Applied {
                    program,
                    timings: Timings {
                        rewrite: spent.rewrite + timings.rewrite,
                        applicability: spent.applicability + timings.applicability,
                    },
                    applied_as: note
                        .is_some()
                        .then_some(super::Optimisation::Fuse { count, groups }),
                    note: Some(match note {
                        Some(partial) => format!("{partial}; {shape}"),
                        None => shape,
                    }),
                })
            }
            Err(Refusal::FuseAcrossGroups {
                first: k,
                second: l,
                write,
                touch,
                groups,
                ..
            }) if l > 2 => {
                note = Some(format!(
                    "only the first {} were fused: par block {l} is not, as a thread may write `{write}` in par block {k} and a thread of another of the {groups} work-groups touch it as `{touch}` in par block {l}",
                    l - 1
                ));
                // All of the failed attempt counts as applicability checking.
                spent.applicability += start.elapsed();
                count = (l - 1) as u32;
            }
            Err(refusal) => return Err(refusal),
        }
    }
}

/// How the fused kernel runs, for the report: the threads of a work-group, and where a barrier
/// on several work-groups went.
fn launch_shape(plan: &Plan, layout: &Layout) -> String {
    match plan.groups {
        1 => format!("`{}` threads in the work-group", thread_count(&plan.iter)),
        g => {
            let each = format!(
                "`{} / {g}` threads in each work-group",
                thread_count_operand(&plan.iter)
            );
            match needs_barrier(plan, layout) {
                true => format!("{each}, the barrier in a par block of each work-group's threads"),
                false => each,
            }
        }
    }
}

/// The number of threads of `iter`, as printed: `hi`, or `hi - (lo)`.
fn thread_count(iter: &ParIter) -> String {
    let (lo, hi) = (print_expr(&iter.lo), print_expr(&iter.hi));
    match starts_at_zero(iter) {
        true => hi,
        false => format!("{hi} - ({lo})"),
    }
}

/// [`thread_count`] as an operand: parenthesised unless it is one name or literal.
fn thread_count_operand(iter: &ParIter) -> String {
    let count = thread_count(iter);
    match starts_at_zero(iter) && matches!(iter.hi.kind, ExprKind::Name(_) | ExprKind::IntLit(_)) {
        true => count,
        false => format!("({count})"),
    }
}

fn starts_at_zero(iter: &ParIter) -> bool {
    matches!(&iter.lo.kind, ExprKind::IntLit(n) if *n == 0u8.into())
}

/// Whether the fused kernel has a barrier: fusion inserts one between segments, or a kernel
/// has its own.
fn needs_barrier(plan: &Plan, layout: &Layout) -> bool {
    layout.segments.len() > 1 || plan.kernels.iter().any(|k| k.has_barrier)
}

/// What the syntactic check found out.
#[derive(Clone, Debug)]
pub struct Plan {
    pub first: Span,
    /// The par statements, in order (the first is `first`).
    pub spans: Vec<Span>,
    pub groups: u32,
    /// The fused iterator: the first kernel's.
    pub iter: ParIter,
    kernels: Vec<Kernel>,
    /// The iterators of later kernels renamed to the fused one.
    renamed: Vec<String>,
}

/// One kernel, its iterator renamed to the fused one.
#[derive(Clone, Debug)]
struct Kernel {
    block: ParBlock,
    pre: Vec<Conjunct>,
    post: Vec<Conjunct>,
    everywhere: Vec<Expr>,
    has_barrier: bool,
}

#[derive(Clone, Debug)]
enum Conjunct {
    Perm(Box<Atom>),
    Fact(Fact),
}

/// `guard ==> Perm(location, amount)`.
#[derive(Clone, Debug)]
struct Atom {
    guard: Option<Expr>,
    location: Expr,
    resource: String,
    address: Expr,
    amount: Amount,
    key: String,
    span: Span,
}

#[derive(Clone, Debug)]
struct Fact {
    expr: Expr,
    /// The resources it reads.
    reads: BTreeSet<String>,
    /// It mentions `\old` (kept out of barriers: there `\old` would mean another state).
    old: bool,
    span: Span,
}

/// The syntactic part of the applicability check.
pub fn plan(program: &Program, first: Span, count: u32, groups: u32) -> Result<Plan, Refusal> {
    let cannot = |reason: &str| Refusal::FuseCannotCheck {
        reason: reason.into(),
        span: first,
    };
    if count < 2 || groups == 0 {
        return Err(Refusal::FuseBadCount {
            count,
            groups,
            span: first,
        });
    }
    let Some(stmts) = statement_list(program, first) else {
        return Err(cannot("no par statement at this position"));
    };
    let start = stmts
        .iter()
        .position(|s| s.span == first)
        .ok_or_else(|| cannot("no par statement at this position"))?;
    let mut blocks = Vec::new();
    let mut spans = Vec::new();
    for s in &stmts[start..] {
        if blocks.len() == count as usize {
            break;
        }
        match &s.kind {
            StmtKind::Par(group) => {
                let [block] = &group.blocks[..] else {
                    return Err(Refusal::FuseParShape {
                        what: "several par blocks launched together".into(),
                        span: s.span,
                    });
                };
                blocks.push(block.clone());
                spans.push(s.span);
            }
            // A `gpuopt` line for a later step stays where it is only if it is not between.
            _ => {
                return Err(Refusal::FuseBetween {
                    span: s.span,
                    count,
                    found: blocks.len(),
                })
            }
        }
    }
    if blocks.len() < count as usize {
        return Err(Refusal::FuseTooFew {
            count,
            found: blocks.len(),
            span: first,
        });
    }
    let iter = match &blocks[0].iters[..] {
        [one] => one.clone(),
        iters => {
            return Err(Refusal::FuseParShape {
                what: format!("a par block with {} iterators", iters.len()),
                span: blocks[0].span,
            })
        }
    };
    let tid = iter.name.name.clone();
    let mut kernels = Vec::new();
    let mut renamed = Vec::new();
    for (k, block) in blocks.iter().enumerate() {
        let [it] = &block.iters[..] else {
            return Err(Refusal::FuseParShape {
                what: format!("a par block with {} iterators", block.iters.len()),
                span: block.span,
            });
        };
        let mut block = block.clone();
        if it.name.name != tid {
            let mut names = BTreeSet::new();
            collect_idents(&block, &mut names);
            if names.contains(&tid) {
                return Err(Refusal::FuseParShape {
                    what: format!(
                        "renaming the iterator `{}` to `{tid}`, the first kernel's, where `{tid}` is already a name",
                        it.name.name
                    ),
                    span: block.span,
                });
            }
            rename_in_block(&mut block, &it.name.name, &tid);
            renamed.push(it.name.name.clone());
        }
        let kernel = kernel(block)?;
        // `\old` means the state where the fused block starts: the same as where this kernel
        // starts only for what no earlier kernel writes.
        let written: BTreeSet<String> = kernels.iter().flat_map(Kernel::writes).collect();
        if let Some((e, span)) = olds(&kernel.block)
            .into_iter()
            .find(|(e, _)| !reads(e).is_disjoint(&written))
        {
            return Err(Refusal::FuseUnsupported {
                what: format!(
                    "`\\old({})` in par block {} reads what an earlier par block writes; in the fused block `\\old` would mean the state where the first starts",
                    print_expr(&e),
                    k + 1
                ),
                span,
            });
        }
        kernels.push(kernel);
    }
    Ok(Plan {
        first,
        spans,
        groups,
        iter,
        kernels,
        renamed,
    })
}

/// Every `\old(e)` in the block (its contract and body, nested contracts included), with the
/// span of the expression.
fn olds(block: &ParBlock) -> Vec<(Expr, Span)> {
    let mut out = Vec::new();
    let mut from = |e: &Expr| {
        e.visit(&mut |x| {
            if let ExprKind::Old(inner) = &x.kind {
                out.push(((**inner).clone(), x.span));
            }
        })
    };
    block.contract.for_each_expr(&mut from);
    for s in &block.body.stmts {
        s.for_each_expr_deep(&mut from);
    }
    out
}

/// The statement list that holds the statement at `span`.
fn statement_list(program: &Program, span: Span) -> Option<Vec<Stmt>> {
    find_stmt(program, span)?;
    let mut found = None;
    let mut copy = program.clone();
    copy.visit_stmt_lists_mut(&mut |stmts| {
        if found.is_none() && stmts.iter().any(|s| s.span == span) {
            found = Some(stmts.clone());
        }
    });
    found
}

/// Every identifier in `block` (names, binders, labels, fields).
fn collect_idents(block: &ParBlock, into: &mut BTreeSet<String>) {
    fn go(v: &serde_json::Value, into: &mut BTreeSet<String>) {
        match v {
            serde_json::Value::Object(map) => {
                if let (Some(serde_json::Value::String(n)), Some(_)) =
                    (map.get("name"), map.get("span"))
                {
                    into.insert(n.clone());
                }
                map.values().for_each(|x| go(x, into));
            }
            serde_json::Value::Array(xs) => xs.iter().for_each(|x| go(x, into)),
            _ => {}
        }
    }
    if let Ok(v) = serde_json::to_value(block) {
        go(&v, into);
    }
}

/// `from` renamed to `to` in the block's contract and body (the caller made sure `to` is not
/// a name there, so nothing is captured).
fn rename_in_block(block: &mut ParBlock, from: &str, to: &str) {
    let mut sub = |e: &mut Expr| *e = e.substitute(from, &Expr::name(to, e.span));
    block.contract.for_each_expr_mut(&mut sub);
    for it in &mut block.iters {
        if it.name.name == from {
            it.name.name = to.to_string();
        }
    }
    for s in &mut block.body.stmts {
        s.for_each_expr_deep_mut(&mut sub);
    }
}

/// The kernel's contract in atoms and facts, or why it cannot be read so.
fn kernel(block: ParBlock) -> Result<Kernel, Refusal> {
    let mut pre = Vec::new();
    let mut post = Vec::new();
    let mut everywhere = Vec::new();
    let shape = |what: String, span: Span| Refusal::FuseContractShape { what, span };
    for clause in &block.contract.clauses {
        let (e, to_pre, to_post) = match &clause.kind {
            ClauseKind::Requires(e) => (e, true, false),
            ClauseKind::Ensures(e) => (e, false, true),
            ClauseKind::Context(e) => (e, true, true),
            ClauseKind::ContextEverywhere(e) => {
                everywhere.push(e.clone());
                continue;
            }
            other => {
                return Err(shape(
                    format!("a `{}` clause of the thread", other.keyword()),
                    clause.span,
                ))
            }
        };
        for c in conjuncts(e) {
            let conjunct = conjunct(c, clause.span).map_err(|w| shape(w, clause.span))?;
            if to_pre {
                pre.push(conjunct.clone());
            }
            if to_post {
                post.push(conjunct);
            }
        }
    }
    let mut has_barrier = false;
    for s in &block.body.stmts {
        let mut bad = None;
        s.visit(&mut |s| match &s.kind {
            StmtKind::Barrier(_) => has_barrier = true,
            StmtKind::Return(_) => {
                bad.get_or_insert(("a `return`", s.span));
            }
            StmtKind::Par(_) => {
                bad.get_or_insert(("a nested par block", s.span));
            }
            _ => {}
        });
        if let Some((what, span)) = bad {
            return Err(Refusal::FuseParShape {
                what: what.into(),
                span,
            });
        }
    }
    Ok(Kernel {
        block,
        pre,
        post,
        everywhere,
        has_barrier,
    })
}

fn conjunct(c: &Expr, span: Span) -> Result<Conjunct, String> {
    if !c.holds_permission() {
        let mut old = false;
        c.visit(&mut |x| old |= matches!(x.kind, ExprKind::Old(_)));
        return Ok(Conjunct::Fact(Fact {
            expr: c.clone(),
            reads: reads(c),
            old,
            span,
        }));
    }
    let (guard, perm) = match &c.kind {
        ExprKind::Binary {
            op: BinaryOp::Implies,
            lhs,
            rhs,
        } if !lhs.holds_permission() => (Some((**lhs).clone()), &**rhs),
        _ => (None, c),
    };
    let not_atom = || {
        format!(
            "`{}` is not a permission of the form `Perm(l, p)` or `c ==> Perm(l, p)`",
            print_expr(c)
        )
    };
    let ExprKind::Builtin {
        op: Builtin::Perm,
        args,
    } = &perm.kind
    else {
        return Err(not_atom());
    };
    let [location, amount] = &args[..] else {
        return Err(not_atom());
    };
    if location.holds_permission() || amount.holds_permission() {
        return Err(not_atom());
    }
    let (resource, address) = match &location.kind {
        ExprKind::Index { base, index }
            if !matches!(base.kind, ExprKind::Index { .. }) && !has_all(index) =>
        {
            (print_expr(base), (**index).clone())
        }
        ExprKind::Field { base, name } => (format!(".{}", name.name), (**base).clone()),
        _ => {
            return Err(format!(
                "the location `{}` is not an array cell `a[e]` or a field `x.f`",
                print_expr(location)
            ))
        }
    };
    let amount = Amount::of(amount).ok_or_else(|| {
        format!(
            "the permission amount `{}` is not a literal fraction (`write`, `read`, `1\\2`, ...)",
            print_expr(amount)
        )
    })?;
    let key = format!(
        "{} ==> {}",
        guard.as_ref().map_or("true".into(), print_expr),
        print_expr(location)
    );
    Ok(Conjunct::Perm(Box::new(Atom {
        guard,
        location: location.clone(),
        resource,
        address,
        amount,
        key,
        span,
    })))
}

fn has_all(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| found |= matches!(x.kind, ExprKind::AllIndices));
    found
}

/// The resources an expression reads: arrays indexed (the root of `m[i][j]`), fields other
/// than `length`.
fn reads(e: &Expr) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    e.visit(&mut |x| match &x.kind {
        ExprKind::Index { base, .. } if !matches!(base.kind, ExprKind::Index { .. }) => {
            out.insert(print_expr(base));
        }
        ExprKind::Field { name, .. } if name.name != "length" => {
            out.insert(format!(".{}", name.name));
        }
        _ => {}
    });
    out
}

impl Kernel {
    fn atoms(&self) -> impl Iterator<Item = &Atom> {
        self.pre.iter().chain(&self.post).filter_map(|c| match c {
            Conjunct::Perm(a) => Some(&**a),
            Conjunct::Fact(_) => None,
        })
    }

    fn facts(list: &[Conjunct]) -> impl Iterator<Item = &Fact> {
        list.iter().filter_map(|c| match c {
            Conjunct::Fact(f) => Some(f),
            Conjunct::Perm(_) => None,
        })
    }

    /// The amount per key in `list`.
    fn amounts(list: &[Conjunct]) -> BTreeMap<String, Amount> {
        let mut out: BTreeMap<String, Amount> = BTreeMap::new();
        for c in list {
            if let Conjunct::Perm(a) = c {
                let e = out.entry(a.key.clone()).or_insert_with(Amount::zero);
                *e = e.add(&a.amount);
            }
        }
        out
    }

    /// Resources the thread may write: a key worth a whole permission before or after.
    fn writes(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for list in [&self.pre, &self.post] {
            let amounts = Kernel::amounts(list);
            for a in self.atoms() {
                if amounts.get(&a.key).is_some_and(|x| x.writes()) {
                    out.insert(a.resource.clone());
                }
            }
        }
        out
    }

    fn resources(&self) -> BTreeSet<String> {
        self.atoms().map(|a| a.resource.clone()).collect()
    }
}

/// What the Z3 part decided: where the barriers go.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The kernels (indices) of each segment, in order; a barrier stands between segments.
    segments: Vec<Vec<usize>>,
    /// The keys that name a different location for every thread.
    injective: BTreeSet<String>,
    /// The keys under which every thread's own location is some thread's (`leftover`).
    covering: BTreeSet<String>,
    /// The comparisons of named shares Z3 decided.
    decided: Decided,
}

/// One question for Z3, and what its failure means.
enum Query {
    SameRange(usize),
    GroupsDivide,
    Distinct(Atom, Atom),
    Injective(String),
    Covering(String),
    /// One share at least another (a comparison the accounting needs).
    AtLeast,
    /// A guard of a share a thread keeps at a barrier, false (or true) for every thread.
    Settle,
    Independent {
        k: usize,
        l: usize,
    },
    InsideGroup {
        k: usize,
        l: usize,
        a: Atom,
        b: Atom,
    },
}

/// The Z3 part: equal ranges, B divides N, atoms of one thread distinct, and the dependences.
pub fn check_applicable(
    program: &Program,
    plan: &Plan,
    limits: &Limits,
) -> Result<Layout, Refusal> {
    let mut names = FreshNames::new(program);
    let (t, u) = (names.fresh("t"), names.fresh("u"));
    let tid = plan.iter.name.name.clone();
    let (lo, hi) = (print_expr(&plan.iter.lo), print_expr(&plan.iter.hi));
    let threads = format!("(({hi}) - ({lo}))");
    let mut queries: Vec<(Query, String)> = Vec::new();
    for (k, kernel) in plan.kernels.iter().enumerate().skip(1) {
        let it = &kernel.block.iters[0];
        queries.push((
            Query::SameRange(k),
            format!(
                "({}) == ({lo}) && ({}) == ({hi})",
                print_expr(&it.lo),
                print_expr(&it.hi)
            ),
        ));
    }
    if plan.groups > 1 {
        queries.push((
            Query::GroupsDivide,
            format!("{threads} % {} == 0", plan.groups),
        ));
    }
    let at = |e: &Expr, v: &str| {
        format!(
            "({})",
            print_expr(&e.substitute(&tid, &Expr::name(v, e.span)))
        )
    };
    let guard = |a: &Atom, v: &str| a.guard.as_ref().map_or("true".into(), |g| at(g, v));
    let in_range = |v: &str| format!("({lo}) <= {v} && {v} < ({hi})");
    // Dependences between kernels: a location one thread may write in one kernel and another
    // thread touches in the other.
    // Two different threads t and u may reach one location, t under atom a and u under b.
    let clash = |a: &Atom, b: &Atom| {
        format!(
            "{} && {} && {t} != {u} && {} && {} && {} == {}",
            in_range(&t),
            in_range(&u),
            guard(a, &t),
            guard(b, &u),
            at(&a.address, &t),
            at(&b.address, &u)
        )
    };
    let group = format!("({threads} / {})", plan.groups);
    for l in 1..plan.kernels.len() {
        for k in 0..l {
            let (kk, kl) = (&plan.kernels[k], &plan.kernels[l]);
            let (wk, wl) = (kk.writes(), kl.writes());
            let mut clashes = Vec::new();
            for a in kk.atoms() {
                for b in kl.atoms() {
                    if a.resource == b.resource
                        && (wk.contains(&a.resource) || wl.contains(&b.resource))
                        && !clashes
                            .iter()
                            .any(|(x, y): &(&Atom, &Atom)| x.key == a.key && y.key == b.key)
                    {
                        clashes.push((a, b));
                    }
                }
            }
            if clashes.is_empty() {
                continue;
            }
            let none: Vec<String> = clashes
                .iter()
                .map(|(a, b)| format!("!({})", clash(a, b)))
                .collect();
            queries.push((
                Query::Independent { k, l },
                format!(
                    "(\\forall int {t}; (\\forall int {u}; {}))",
                    none.join(" && ")
                ),
            ));
            if plan.groups > 1 {
                for (a, b) in &clashes {
                    queries.push((
                        Query::InsideGroup {
                            k,
                            l,
                            a: (*a).clone(),
                            b: (*b).clone(),
                        },
                        format!(
                            "(\\forall int {t}; (\\forall int {u}; {} ==> ({t} - ({lo})) / {group} == ({u} - ({lo})) / {group}))",
                            clash(a, b)
                        ),
                    ));
                }
            }
        }
    }
    let statuses = ask(program, plan, &queries, limits)?;
    // The variables of the ranges, for Z3's counterexample.
    let mut range_names = BTreeSet::new();
    for kernel in &plan.kernels {
        kernel.block.iters[0].lo.names(&mut range_names);
        kernel.block.iters[0].hi.names(&mut range_names);
    }
    let why = |s: &Status| match s {
        Status::Failed { model } => {
            let values: Vec<String> = model
                .iter()
                .filter(|(name, _)| range_names.contains(name))
                .map(|(name, v)| format!("{name} may be {v}"))
                .collect();
            match values.is_empty() {
                true => "it may not hold".to_string(),
                false => values.join(", "),
            }
        }
        Status::Unknown { reason } => format!("Z3 gave up ({reason})"),
        _ => "it was not checked".into(),
    };
    let mut depends = BTreeSet::new();
    for ((query, _), status) in queries.iter().zip(&statuses) {
        if *status == Status::Verified {
            continue;
        }
        match query {
            Query::SameRange(k) => {
                return Err(Refusal::FuseRangesDiffer {
                    range: format!(
                        "{} .. {}",
                        print_expr(&plan.kernels[*k].block.iters[0].lo),
                        print_expr(&plan.kernels[*k].block.iters[0].hi)
                    ),
                    first: format!("{lo} .. {hi}"),
                    why: why(status),
                    span: plan.spans[*k],
                })
            }
            Query::GroupsDivide => {
                return Err(Refusal::FuseGroupsDivide {
                    groups: plan.groups,
                    threads: thread_count(&plan.iter),
                    why: why(status),
                    span: plan.first,
                })
            }
            // Asked in the second round, or by the rewrite.
            Query::Distinct(..)
            | Query::Injective(_)
            | Query::Covering(_)
            | Query::AtLeast
            | Query::Settle => {}
            Query::Independent { k, l } => {
                depends.insert((*k, *l));
            }
            Query::InsideGroup { k, l, a, b } => {
                return Err(Refusal::FuseAcrossGroups {
                    first: *k + 1,
                    second: *l + 1,
                    write: print_expr(&a.location),
                    touch: print_expr(&b.location),
                    groups: plan.groups,
                    span: plan.spans[*l],
                });
            }
        }
    }
    // Segments: a kernel that depends on one of the current segment starts the next.
    let mut segments: Vec<Vec<usize>> = vec![vec![0]];
    for l in 1..plan.kernels.len() {
        let current = segments.last().cloned().unwrap_or_default();
        if current.iter().any(|k| depends.contains(&(*k, l))) {
            segments.push(vec![l]);
        } else if let Some(last) = segments.last_mut() {
            last.push(l);
        }
    }
    // The comparisons of named shares the accounting needs, decided by Z3 (a round per
    // comparison found: a decision may lead the accounting to the next one).
    let mut decided = Decided::new();
    for _round in 0..8 {
        let mut pending = None;
        for seg in &segments {
            for r in seg.iter().flat_map(|k| plan.kernels[*k].resources()) {
                if let Err(u) = held(&plan.kernels, &r, seg, &decided) {
                    pending.get_or_insert(u);
                }
            }
        }
        let Some(u) = pending else {
            break;
        };
        let (Some(a), Some(b)) = (u.first.pvl(), u.second.pvl()) else {
            return Err(u.refusal(""));
        };
        let queries = vec![
            (Query::AtLeast, format!("({a}) >= ({b})")),
            (Query::AtLeast, format!("({b}) >= ({a})")),
        ];
        let statuses = ask(program, plan, &queries, limits)?;
        let order = match (&statuses[0], &statuses[1]) {
            (Status::Verified, _) => Ordering::Greater,
            (_, Status::Verified) => Ordering::Less,
            _ => {
                return Err(
                    u.refusal(" (Z3 proves neither in the state before the first par block)")
                )
            }
        };
        decided.insert((u.first.to_string(), u.second.to_string()), order);
    }
    // Per thread, different keys of one resource accounted together (in one segment) are
    // different locations: the thread may hold both at once.
    let mut queries: Vec<(Query, String)> = Vec::new();
    for seg in &segments {
        let mut resources: Vec<String> = Vec::new();
        for k in seg {
            for r in plan.kernels[*k].resources() {
                if !resources.contains(&r) {
                    resources.push(r);
                }
            }
        }
        let mut atoms: Vec<(Atom, Vec<Amount>)> = Vec::new();
        for r in &resources {
            atoms.extend(held(&plan.kernels, r, seg, &decided).map_err(|u| u.refusal(""))?);
        }
        for (i, (a, held_a)) in atoms.iter().enumerate() {
            for (b, held_b) in &atoms[i + 1..] {
                // Held at once beyond a whole permission: one location would be over-held
                // (below that, two keys of one location are just their sum).
                let at_once = held_a.iter().zip(held_b).any(|(x, y)| {
                    x.is_positive() && y.is_positive() && x.add(y).may_exceed_whole()
                });
                if a.resource == b.resource && at_once {
                    queries.push((
                        Query::Distinct(a.clone(), b.clone()),
                        format!(
                            "(\\forall int {t}; {} && {} && {} ==> {} != {})",
                            in_range(&t),
                            guard(a, &t),
                            guard(b, &t),
                            at(&a.address, &t),
                            at(&b.address, &t)
                        ),
                    ));
                }
            }
        }
    }
    // Keys that name a different location for every thread (a barrier may hand one whole
    // location over for another only between such keys).
    if segments.len() > 1 {
        let mut keys: Vec<&Atom> = Vec::new();
        for kernel in &plan.kernels {
            for a in kernel.atoms() {
                if !keys.iter().any(|b| b.key == a.key) {
                    keys.push(a);
                }
            }
        }
        for a in keys {
            // Every thread's location is some thread's under this key (its taker condition
            // always holds).
            if let Some(cond) = taker(a, &plan.iter).flatten().and_then(|c| parse_expr(&c)) {
                queries.push((
                    Query::Covering(a.key.clone()),
                    format!("(\\forall int {t}; {} ==> {})", in_range(&t), at(&cond, &t)),
                ));
            }
            queries.push((
                Query::Injective(a.key.clone()),
                format!("(\\forall int {t}; (\\forall int {u}; !({})))", clash(a, a)),
            ));
        }
    }
    let statuses = ask(program, plan, &queries, limits)?;
    let mut injective = BTreeSet::new();
    let mut covering = BTreeSet::new();
    for ((query, _), status) in queries.iter().zip(&statuses) {
        let verified = *status == Status::Verified;
        match query {
            Query::Distinct(a, b) if !verified => {
                return Err(Refusal::FuseOverlap {
                    first: print_expr(&a.location),
                    second: print_expr(&b.location),
                    span: b.span,
                    first_span: a.span,
                })
            }
            Query::Injective(key) if verified => {
                injective.insert(key.clone());
            }
            Query::Covering(key) if verified => {
                covering.insert(key.clone());
            }
            _ => {}
        }
    }
    Ok(Layout {
        segments,
        injective,
        covering,
        decided,
    })
}

/// Proves each query's text in the state before the first par block, each in a branch of its
/// own (`boolean b; if (b) { assert q; }`, as prefetching does): a failed query would be
/// assumed afterwards, and make the later ones hold vacuously.
fn ask(
    program: &Program,
    plan: &Plan,
    queries: &[(Query, String)],
    limits: &Limits,
) -> Result<Vec<Status>, Refusal> {
    let mut names = FreshNames::new(program);
    let mut asserts = Vec::new();
    for (k, (_, text)) in queries.iter().enumerate() {
        let b = names.fresh("fuse_probe");
        let stmts = super::parse_stmts(&format!("boolean {b}; if ({b}) {{ assert {text}; }}"))
            .ok_or_else(|| Refusal::FuseCannotCheck {
                reason: format!("internal: the query `{text}` does not parse"),
                span: plan.first,
            })?;
        asserts.extend(respan(stmts, mark(k as u32)));
    }
    prove_in_probe(program, plan.first, asserts, limits).map_err(|reason| {
        Refusal::FuseCannotCheck {
            reason,
            span: plan.first,
        }
    })
}

/// What a thread running the kernels `seg` one after the other holds of `resource`: per key
/// (in first appearance), the amount at the segment's start and after each kernel. Kernel k
/// needs `pre_k` at its start and gives back `post_k`, so the start amount is
/// `max_k (pre_k - Σ_{j<k} (post_j - pre_j))` (at least 0), the least that never runs short.
fn held(
    kernels: &[Kernel],
    resource: &str,
    seg: &[usize],
    decided: &Decided,
) -> Result<Vec<(Atom, Vec<Amount>)>, Box<Uncertain>> {
    let mut keys: Vec<Atom> = Vec::new();
    for k in seg {
        for a in kernels[*k].atoms() {
            if a.resource == resource && !keys.iter().any(|b| b.key == a.key) {
                keys.push(a.clone());
            }
        }
    }
    let amount = |list: &[Conjunct], key: &str| {
        Kernel::amounts(list)
            .remove(key)
            .unwrap_or_else(Amount::zero)
    };
    let mut out = Vec::new();
    for atom in keys {
        let mut delta = Amount::zero();
        let mut need = Amount::zero();
        let mut deltas = vec![Amount::zero()];
        for k in seg {
            let pre = amount(&kernels[*k].pre, &atom.key);
            let post = amount(&kernels[*k].post, &atom.key);
            let short = pre.sub(&delta);
            let order = need
                .compare(&short)
                .or_else(|| decided.get(&(need.to_string(), short.to_string())).copied());
            need = match order {
                Some(Ordering::Less) => short,
                Some(_) => need,
                None => {
                    return Err(Box::new(Uncertain {
                        first: need,
                        second: short,
                        atom,
                    }))
                }
            };
            delta = delta.add(&post.sub(&pre));
            deltas.push(delta.clone());
        }
        let amounts = deltas.iter().map(|d| need.add(d)).collect();
        out.push((atom, amounts));
    }
    Ok(out)
}

/// Comparisons of shares the accounting needed and Z3 decided in the state before the first
/// par block: `(a, b)` (as printed) to `a` against `b`.
type Decided = BTreeMap<(String, String), Ordering>;

/// A comparison of two shares the accounting needs and cannot make by itself.
#[derive(Debug)]
struct Uncertain {
    first: Amount,
    second: Amount,
    atom: Atom,
}

impl Uncertain {
    fn refusal(&self, why: &str) -> Refusal {
        Refusal::FuseUnsupported {
            what: format!(
                "the fused thread's share of `{}`: cannot tell whether {} or {} is larger{why}",
                print_expr(&self.atom.location),
                self.first,
                self.second
            ),
            span: self.atom.span,
        }
    }
}

/// Holdings of one resource: amount per key, with the atom that names the key.
type Holdings = BTreeMap<(usize, String), (Atom, Amount)>;

/// The rewrite (the checks have passed).
pub fn apply(
    program: &Program,
    plan: &Plan,
    layout: &Layout,
    limits: &Limits,
) -> Result<Program, Refusal> {
    let span = plan.first;
    let kernels = &plan.kernels;
    let unsupported = |what: String| Refusal::FuseUnsupported { what, span };
    let mut names = FreshNames::new(program);
    let needs_label = needs_barrier(plan, layout);
    let label = match &kernels[0].block.label {
        Some(l) => Some(l.clone()),
        None if needs_label => Some(Ident {
            name: names.fresh("fused"),
            span,
        }),
        None => None,
    };
    let segment_of: Vec<usize> = {
        let mut out = vec![0; kernels.len()];
        for (s, seg) in layout.segments.iter().enumerate() {
            for k in seg {
                out[*k] = s;
            }
        }
        out
    };
    // Keys and resources in the order they first appear, so the output follows the input.
    let mut key_order: BTreeMap<String, usize> = BTreeMap::new();
    let mut resources: Vec<String> = Vec::new();
    for k in kernels {
        for a in k.atoms() {
            let next = key_order.len();
            key_order.entry(a.key.clone()).or_insert(next);
            if !resources.contains(&a.resource) {
                resources.push(a.resource.clone());
            }
        }
    }
    let resource_key = |r: &str| {
        (
            resources.iter().position(|x| x == r).unwrap_or(0),
            r.to_string(),
        )
    };
    let account = |resource: &str, seg: &[usize]| -> Result<(Holdings, Holdings), Refusal> {
        let (mut start, mut end) = (Holdings::new(), Holdings::new());
        let held = held(kernels, resource, seg, &layout.decided).map_err(|u| u.refusal(""))?;
        for (atom, amounts) in held {
            let at = (
                key_order.get(&atom.key).copied().unwrap_or(0),
                atom.key.clone(),
            );
            let first = amounts.first().cloned().unwrap_or_else(Amount::zero);
            let last = amounts.last().cloned().unwrap_or_else(Amount::zero);
            start.insert(at.clone(), (atom.clone(), first));
            end.insert(at, (atom, last));
        }
        Ok((start, end))
    };
    let touches = |seg: &[usize], r: &str| seg.iter().any(|k| kernels[*k].resources().contains(r));
    let first_touch = |r: &str| layout.segments.iter().position(|seg| touches(seg, r));
    // Fused precondition holdings: per resource, the first segment that touches it.
    let mut holdings: BTreeMap<(usize, String), Holdings> = BTreeMap::new();
    let mut pre_holdings: BTreeMap<(usize, String), Holdings> = BTreeMap::new();
    for r in &resources {
        if let Some(first) = first_touch(r) {
            let (start, _) = account(r, &layout.segments[first])?;
            pre_holdings.insert(resource_key(r), start.clone());
            holdings.insert(resource_key(r), start);
        }
    }
    // Facts: a precondition fact goes to the fused precondition when no earlier kernel
    // writes what it reads and the fused precondition's holdings frame it (its kernel is in
    // the first segment, or in the first segment that touches what it reads).
    let mut written_before: BTreeSet<String> = BTreeSet::new();
    let mut pre_facts: Vec<Fact> = Vec::new();
    let mut placed_pre: Vec<Vec<bool>> = Vec::new();
    for (l, k) in kernels.iter().enumerate() {
        let mut placed = Vec::new();
        for f in Kernel::facts(&k.pre) {
            let framed = segment_of[l] == 0
                || f.reads
                    .iter()
                    .all(|r| first_touch(r).is_none_or(|s| s == segment_of[l]));
            let free = f.reads.is_disjoint(&written_before) && framed;
            if free {
                push_fact(&mut pre_facts, f);
            }
            placed.push(free);
        }
        placed_pre.push(placed);
        written_before.extend(k.writes());
    }
    let mut valid: Vec<Fact> = pre_facts.clone();
    // Per resource, what a barrier gave the thread beyond its segment's need.
    let mut boost: BTreeMap<String, Amount> = BTreeMap::new();
    // Per resource, what the thread kept of its old location at the last barrier.
    let mut leftovers: BTreeMap<String, Holdings> = BTreeMap::new();
    let mut body: Vec<Stmt> = Vec::new();
    let mut written_in_segment: BTreeSet<String> = BTreeSet::new();
    for (l, kernel) in kernels.iter().enumerate() {
        let seg = segment_of[l];
        if l > 0 && layout.segments[seg][0] == l {
            // A barrier: everything held and known, for the next segment's holdings, the
            // facts whose resources keep their holdings, and the segment's preconditions.
            written_in_segment.clear();
            let mut requires: Vec<String> = Vec::new();
            for h in holdings.values() {
                requires.extend(perm_texts(h)?);
            }
            requires.extend(valid.iter().filter(|f| !f.old).map(|f| print_expr(&f.expr)));
            let touched: BTreeSet<String> = layout.segments[seg]
                .iter()
                .flat_map(|k| kernels[*k].resources())
                .collect();
            let mut changed = BTreeSet::new();
            for r in &touched {
                let (mut start, _) = account(r, &layout.segments[seg])?;
                let old = holdings.get(&resource_key(r)).cloned().unwrap_or_default();
                // One location handed for another: the new holder takes all of it, so no
                // share is lost at the barrier (the host gets it back at the end).
                if let ([(_, (was, had))], [(_, (now, need))]) = (
                    old.iter().collect::<Vec<_>>().as_slice(),
                    start.iter_mut().collect::<Vec<_>>().as_mut_slice(),
                ) {
                    let whole =
                        layout.injective.contains(&was.key) && layout.injective.contains(&now.key);
                    if whole && had.compare(need) == Some(std::cmp::Ordering::Greater) {
                        boost.insert(r.clone(), had.sub(need));
                        *need = had.clone();
                    }
                }
                // What the new holders do not take of the thread's old location stays with it.
                let moved = perm_texts(&old)? != perm_texts(&start)?;
                let rest = match old.values().collect::<Vec<_>>().as_slice() {
                    [(was, had)] if moved && layout.injective.contains(&was.key) => leftover(
                        was,
                        had.clone(),
                        &start,
                        &plan.iter,
                        &layout.covering,
                        key_order.len(),
                        &mut |guard| settle(program, plan, limits, guard),
                    ),
                    _ => Holdings::new(),
                };
                start.extend(rest.clone());
                leftovers.insert(r.clone(), rest);
                if perm_texts(&old)? != perm_texts(&start)? {
                    changed.insert(r.clone());
                }
                holdings.insert(resource_key(r), start);
            }
            let mut ensures: Vec<String> = Vec::new();
            for h in holdings.values() {
                ensures.extend(perm_texts(h)?);
            }
            valid.retain(|f| !f.old && f.reads.is_disjoint(&changed));
            let mut written: BTreeSet<String> = BTreeSet::new();
            for k in &layout.segments[seg] {
                for f in Kernel::facts(&kernels[*k].pre) {
                    if f.reads.is_disjoint(&written) {
                        push_fact(&mut valid, f);
                    }
                }
                written.extend(kernels[*k].writes());
            }
            ensures.extend(valid.iter().map(|f| print_expr(&f.expr)));
            let Some(label) = &label else {
                return Err(unsupported("internal: a barrier without a label".into()));
            };
            body.push(barrier(label, &requires, &ensures, span)?);
        }
        if l > 0 {
            // A fact about what this segment wrote before: the thread knows it, assert it.
            for (f, placed) in Kernel::facts(&kernel.pre).zip(&placed_pre[l]) {
                let known = match seg {
                    0 => *placed,
                    _ => f.reads.is_disjoint(&written_in_segment),
                };
                if !known {
                    body.push(Stmt {
                        kind: StmtKind::Assert(f.expr.clone()),
                        span: f.span,
                    });
                }
            }
        }
        let writes = kernel.writes();
        valid.retain(|f| f.reads.is_disjoint(&writes));
        written_in_segment.extend(writes);
        body.extend(kernel_body(kernel, label.as_ref()));
        for f in Kernel::facts(&kernel.post) {
            push_fact(&mut valid, f);
        }
        // The segment's end holdings, once it is over.
        if layout.segments[seg].last() == Some(&l) {
            for r in &resources {
                if touches(&layout.segments[seg], r) {
                    let (_, mut end) = account(r, &layout.segments[seg])?;
                    if let Some(extra) = boost.remove(r) {
                        for (_, amount) in end.values_mut() {
                            *amount = amount.add(&extra);
                        }
                    }
                    end.extend(leftovers.get(r).cloned().unwrap_or_default());
                    holdings.insert(resource_key(r), end);
                }
            }
        }
    }
    // The fused contract.
    let mut clauses: Vec<Clause> = Vec::new();
    let mut seen = BTreeSet::new();
    for k in kernels {
        for e in &k.everywhere {
            if seen.insert(print_expr(e)) {
                clauses.push(Clause {
                    kind: ClauseKind::ContextEverywhere(e.clone()),
                    span: e.span,
                });
            }
        }
    }
    let pre_perms: Vec<String> = pre_holdings
        .values()
        .map(perm_texts)
        .collect::<Result<Vec<_>, _>>()?
        .concat();
    let post_perms: Vec<String> = holdings
        .values()
        .map(perm_texts)
        .collect::<Result<Vec<_>, _>>()?
        .concat();
    let pre_texts: Vec<String> = pre_facts.iter().map(|f| print_expr(&f.expr)).collect();
    let post_texts: Vec<String> = valid.iter().map(|f| print_expr(&f.expr)).collect();
    let both = |list: &[String], other: &[String]| -> Vec<String> {
        list.iter().filter(|x| other.contains(x)).cloned().collect()
    };
    let context_perms = both(&pre_perms, &post_perms);
    let context_facts = both(&pre_texts, &post_texts);
    let mut push = |kind: fn(Expr) -> ClauseKind, text: &str| -> Result<(), Refusal> {
        let e = parse_expr(text)
            .ok_or_else(|| unsupported(format!("internal: the clause `{text}` does not parse")))?;
        clauses.push(Clause {
            kind: kind(respan(e, span)),
            span,
        });
        Ok(())
    };
    for (list, context) in [(&pre_perms, &context_perms), (&pre_texts, &context_facts)] {
        for x in list {
            let kind = match context.contains(x) {
                true => ClauseKind::Context,
                false => ClauseKind::Requires,
            };
            push(kind, x)?;
        }
    }
    for (list, context) in [(&post_perms, &context_perms), (&post_texts, &context_facts)] {
        for x in list.iter().filter(|x| !context.contains(x)) {
            push(ClauseKind::Ensures, x)?;
        }
    }
    // The fused statement spans the kernels it replaces, so that what was inside any of them
    // (a loop a later step targets) is inside it.
    let whole = Span {
        start: span.start,
        end: plan.spans.last().map_or(span.end, |s| s.end),
    };
    let fused = ParBlock {
        label,
        iters: vec![plan.iter.clone()],
        contract: Contract { clauses },
        body: Block {
            stmts: body,
            span: whole,
        },
        span: whole,
    };
    let fused = match plan.groups {
        groups if groups > 1 && needs_label => in_work_groups(fused, groups, &mut names)?,
        _ => fused,
    };
    let replacement = Stmt {
        kind: StmtKind::Par(ParGroup {
            blocks: vec![fused],
            style: ParGroupStyle::And,
        }),
        span: whole,
    };
    let mut out = program.clone();
    let mut done = false;
    let spans: BTreeSet<Span> = plan.spans.iter().copied().collect();
    out.visit_stmt_lists_mut(&mut |stmts| {
        if done || !stmts.iter().any(|s| s.span == span) {
            return;
        }
        let mut next = Vec::new();
        for s in stmts.drain(..) {
            if s.span == span {
                next.push(replacement.clone());
            } else if !spans.contains(&s.span) {
                next.push(s);
            }
        }
        *stmts = next;
        done = true;
    });
    if !done {
        return Err(Refusal::FuseCannotCheck {
            reason: "no par statement at this position".into(),
            span,
        });
    }
    rename_in_prefetch_lines(&mut out, plan);
    Ok(out)
}

/// The method-level `glob_to_reg` lines of the fused method name cells by a renamed iterator
/// the way the fused block now does, where no other par block of the method binds that name.
fn rename_in_prefetch_lines(program: &mut Program, plan: &Plan) {
    let tid = &plan.iter.name.name;
    for member in program.members_mut() {
        let crate::syntax::MemberKind::Method(method) = &member.kind else {
            continue;
        };
        if !(method.span.start <= plan.first.start && plan.first.end <= method.span.end) {
            continue;
        }
        let mut bound = BTreeSet::new();
        if let crate::syntax::MethodBody::Block(body) = &method.body {
            for s in &body.stmts {
                s.visit(&mut |s| {
                    if let StmtKind::Par(group) = &s.kind {
                        if s.span.start != plan.first.start {
                            for b in &group.blocks {
                                bound.extend(b.iters.iter().map(|i| i.name.name.clone()));
                            }
                        }
                    }
                });
            }
        }
        for g in &mut member.gpuopts {
            if let crate::syntax::GpuOptKind::GlobToReg { rows, indices, .. } = &mut g.kind {
                for old in plan.renamed.iter().filter(|n| !bound.contains(*n)) {
                    for e in rows.iter_mut().chain(indices.iter_mut()) {
                        *e = e.substitute(old, &Expr::name(tid, e.span));
                    }
                }
            }
        }
    }
}

fn push_fact(list: &mut Vec<Fact>, f: &Fact) {
    let text = print_expr(&f.expr);
    if !list.iter().any(|g| print_expr(&g.expr) == text) {
        list.push(f.clone());
    }
}

/// At a barrier, the share of the thread's old location `was` (held at `had`, its address the
/// thread id itself) that no new holding takes: the new keys (at most 3, their addresses
/// inverted syntactically: `tid + c`, `c - tid`, ..) are taken by the thread `u` whose address
/// is this thread's location, if `u` is a thread and its guard holds; per combination of
/// those conditions, what remains of `had` is kept, under that combination. Combinations
/// that leave the same share are one disjunction, which `decide` may settle for every thread
/// (`Some(false)`: never, the share is not kept; `Some(true)`: always, kept unguarded): a
/// guard Z3 would have to split by cases at every use (partners `tid + 1` of even threads and
/// `tid - 1` of odd ones) made the fused proof run out of memory, the settled one verifies in
/// a tenth of a second. Empty where the keys cannot be inverted (the share is then lost, and
/// the output may not verify).
fn leftover(
    was: &Atom,
    had: Amount,
    new: &Holdings,
    iter: &ParIter,
    covering: &BTreeSet<String>,
    base: usize,
    decide: &mut dyn FnMut(&str) -> Option<bool>,
) -> Holdings {
    let tid = &iter.name.name;
    let mut out = Holdings::new();
    if !matches!(&was.address.kind, ExprKind::Name(n) if n.name == *tid) {
        return out;
    }
    // Per new key: the condition under which a thread takes this thread's location (`None`:
    // always, the thread itself with no guard), and how much it takes.
    let takers: Vec<(Option<String>, Amount)> = new
        .values()
        .filter(|(_, amount)| amount.is_positive())
        .map(|(atom, amount)| {
            let cond = taker(atom, iter)?.filter(|_| !covering.contains(&atom.key));
            Some((cond, amount.clone()))
        })
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default();
    if takers.is_empty() || takers.len() > 3 {
        return out;
    }
    // Per share left (in the order the combinations first leave it), the combinations that
    // leave it, each the conjunction of its conditions (empty: always).
    let mut left: Vec<(Amount, Vec<Vec<String>>)> = Vec::new();
    for mask in 0..(1u32 << takers.len()) {
        let mut amount = had.clone();
        let mut conds = Vec::new();
        if let Some(g) = &was.guard {
            conds.push(format!("({})", print_expr(g)));
        }
        let mut possible = true;
        for (k, (cond, need)) in takers.iter().enumerate() {
            match (mask & (1 << k) != 0, cond) {
                (true, cond) => {
                    amount = amount.sub(need);
                    conds.extend(cond.as_ref().map(|c| format!("({c})")));
                }
                (false, Some(cond)) => conds.push(format!("!({cond})")),
                (false, None) => possible = false,
            }
        }
        if !possible || !amount.is_positive() || amount.text().is_none() {
            continue;
        }
        match left.iter_mut().find(|(a, _)| *a == amount) {
            Some((_, combos)) => combos.push(conds),
            None => left.push((amount, vec![conds])),
        }
    }
    for (amount, combos) in left {
        let always = combos.iter().any(|c| c.is_empty());
        let text = match combos.as_slice() {
            [one] => one.join(" && "),
            _ => combos
                .iter()
                .map(|c| format!("({})", c.join(" && ")))
                .collect::<Vec<_>>()
                .join(" || "),
        };
        let guard = match always {
            true => None,
            false => match decide(&text) {
                Some(false) => continue,
                Some(true) => None,
                None => match parse_expr(&text) {
                    Some(g) => Some(respan(g, was.span)),
                    None => continue,
                },
            },
        };
        let atom = Atom {
            key: format!(
                "{} ==> {}",
                guard.as_ref().map_or("true".into(), print_expr),
                print_expr(&was.location)
            ),
            guard,
            amount: amount.clone(),
            ..was.clone()
        };
        out.insert((base + out.len(), atom.key.clone()), (atom, amount));
    }
    out
}

/// Whether `guard` (of the thread id, in the fused contract) is false for every thread
/// (`Some(false)`), true for every thread (`Some(true)`), or neither or undecided (`None`),
/// asked in the state before the first par block. Only a guard that reads no heap (names,
/// literals, arithmetic, `length`) is asked: its value is the same at every barrier.
fn settle(program: &Program, plan: &Plan, limits: &Limits, guard: &str) -> Option<bool> {
    let parsed = parse_expr(guard)?;
    let mut heap_free = true;
    parsed.visit(&mut |x| {
        heap_free &= matches!(
            x.kind,
            ExprKind::IntLit(_)
                | ExprKind::BoolLit(_)
                | ExprKind::Name(_)
                | ExprKind::Unary { .. }
                | ExprKind::Binary { .. }
                | ExprKind::Cond { .. }
                | ExprKind::Length(_)
        );
    });
    if !heap_free {
        return None;
    }
    let (tid, lo, hi) = (
        &plan.iter.name.name,
        print_expr(&plan.iter.lo),
        print_expr(&plan.iter.hi),
    );
    let every = |body: String| {
        (
            Query::Settle,
            format!("(\\forall int {tid}; {lo} <= {tid} && {tid} < {hi}; {body})"),
        )
    };
    let queries = [every(format!("!({guard})")), every(format!("({guard})"))];
    match ask(program, plan, &queries, limits).ok()?.as_slice() {
        [Status::Verified, ..] => Some(false),
        [_, Status::Verified, ..] => Some(true),
        _ => None,
    }
}

/// The condition under which the thread whose address under `atom` is this thread's
/// location (`atom`'s address inverted at the thread id) exists and holds `atom`: `None`
/// inside when that is always so syntactically (the address is the thread id, no guard), `None`
/// outside when the address cannot be inverted.
fn taker(atom: &Atom, iter: &ParIter) -> Option<Option<String>> {
    let tid = &iter.name.name;
    let inv = inverse(&atom.address, tid, tid)?;
    let inv_expr = parse_expr(&inv)?;
    let mut parts = Vec::new();
    if inv != *tid {
        parts.push(format!("{} <= {inv}", print_expr(&iter.lo)));
        parts.push(format!("{inv} < {}", print_expr(&iter.hi)));
    }
    if let Some(g) = &atom.guard {
        parts.push(print_expr(&g.substitute(tid, &inv_expr)));
    }
    Some((!parts.is_empty()).then(|| parts.join(" && ")))
}

/// The thread whose address `e` (of `tid`) is the location `x`, as text: `e` built from `tid`
/// by adding or subtracting expressions without `tid`.
fn inverse(e: &Expr, tid: &str, x: &str) -> Option<String> {
    match &e.kind {
        ExprKind::Name(n) if n.name == tid => Some(x.to_string()),
        ExprKind::Binary { op, lhs, rhs } => {
            let (l, r) = (lhs.mentions(tid), rhs.mentions(tid));
            let (lt, rt) = (print_expr(lhs), print_expr(rhs));
            match (op, l, r) {
                (BinaryOp::Add, true, false) => inverse(lhs, tid, &format!("({x}) - ({rt})")),
                (BinaryOp::Add, false, true) => inverse(rhs, tid, &format!("({x}) - ({lt})")),
                (BinaryOp::Sub, true, false) => inverse(lhs, tid, &format!("({x}) + ({rt})")),
                (BinaryOp::Sub, false, true) => inverse(rhs, tid, &format!("({lt}) - ({x})")),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The permissions held, as PVL conjuncts (zero amounts left out).
fn perm_texts(h: &Holdings) -> Result<Vec<String>, Refusal> {
    let mut out = Vec::new();
    for (atom, amount) in h.values() {
        if !amount.is_positive() {
            continue;
        }
        let p = amount.text().ok_or_else(|| Refusal::FuseUnsupported {
            what: format!(
                "the permission to `{}` the fused thread needs, {amount}, cannot be written in PVL",
                print_expr(&atom.location)
            ),
            span: atom.span,
        })?;
        let perm = format!("Perm({}, {p})", print_expr(&atom.location));
        out.push(match &atom.guard {
            Some(g) => format!("{} ==> {perm}", print_expr(g)),
            None => perm,
        });
    }
    Ok(out)
}

/// The fused kernel with a barrier as the GPU runs it on `groups` work-groups: a par block of
/// work-groups `grp` whose body is the fused block over the group's `N / groups` threads
/// (`lo + grp * S .. lo + (grp + 1) * S`), so its barrier (which names the inner block) is
/// verified as what it is on the hardware, a barrier of one work-group: a handover across
/// groups fails reverification instead of being assumed. The group's contract is each
/// thread conjunct quantified over the group's threads, membership written `(tid - lo) / S ==
/// grp` (Z3 finds a thread's group by division; with the product `grp * S` as the range of a
/// quantifier the caller's split of the array by groups came back unknown).
fn in_work_groups(
    inner: ParBlock,
    groups: u32,
    names: &mut FreshNames,
) -> Result<ParBlock, Refusal> {
    let span = inner.span;
    let unsupported = |what: String| Refusal::FuseUnsupported { what, span };
    let [it] = inner.iters.as_slice() else {
        return Err(unsupported(
            "internal: a fused block with several iterators".into(),
        ));
    };
    let (tid, lo, hi) = (&it.name.name, print_expr(&it.lo), print_expr(&it.hi));
    let grp = names.fresh("grp");
    // From 0 (the common case) without the `- 0`s: Z3 took 12 s on the pairs example with
    // them, 0.5 s without.
    let from_zero = starts_at_zero(it);
    let size = format!("({} / {groups})", thread_count_operand(it));
    let offset = |e: String| match from_zero {
        true => e,
        false => format!("({lo}) + {e}"),
    };
    let index = match from_zero {
        true => tid.clone(),
        false => format!("({tid} - ({lo}))"),
    };
    let member = format!("{lo} <= {tid} && {tid} < {hi} && {index} / {size} == {grp}");
    let parse = |text: &str| {
        parse_expr(text)
            .map(|e| respan(e, span))
            .ok_or_else(|| unsupported(format!("internal: `{text}` does not parse")))
    };
    let mut clauses = Vec::new();
    for c in &inner.contract.clauses {
        let (kind, e): (fn(Expr) -> ClauseKind, &Expr) = match &c.kind {
            ClauseKind::Requires(e) => (ClauseKind::Requires, e),
            ClauseKind::Ensures(e) => (ClauseKind::Ensures, e),
            ClauseKind::Context(e) | ClauseKind::ContextEverywhere(e) => (ClauseKind::Context, e),
            _ => {
                return Err(unsupported(
                    "internal: a fused clause of another kind".into(),
                ))
            }
        };
        for conjunct in conjuncts(e) {
            let body = print_expr(conjunct);
            let text = if conjunct.holds_permission() {
                format!("(\\forall* int {tid}; {member}; ({body}))")
            } else if conjunct.mentions(tid) {
                format!("(\\forall int {tid}; {member}; ({body}))")
            } else {
                body
            };
            clauses.push(Clause {
                kind: kind(parse(&text)?),
                span: c.span,
            });
        }
    }
    let local = ParIter {
        lo: parse(&offset(format!("{grp} * {size}")))?,
        hi: parse(&offset(format!("({grp} + 1) * {size}")))?,
        ..it.clone()
    };
    let label = inner.label.as_ref().map(|l| Ident {
        name: names.fresh(&format!("{}_groups", l.name)),
        span: l.span,
    });
    let work_groups = ParIter {
        name: Ident {
            name: grp,
            span: it.name.span,
        },
        lo: parse("0")?,
        hi: parse(&groups.to_string())?,
        ..it.clone()
    };
    let threads = Stmt {
        kind: StmtKind::Par(ParGroup {
            blocks: vec![ParBlock {
                iters: vec![local],
                ..inner
            }],
            style: ParGroupStyle::And,
        }),
        span,
    };
    Ok(ParBlock {
        label,
        iters: vec![work_groups],
        contract: Contract { clauses },
        body: Block {
            stmts: vec![threads],
            span,
        },
        span,
    })
}

fn barrier(
    label: &Ident,
    requires: &[String],
    ensures: &[String],
    span: Span,
) -> Result<Stmt, Refusal> {
    let mut clauses = Vec::new();
    for (kind, list) in [(0, requires), (1, ensures)] {
        for text in list {
            let e = parse_expr(text).ok_or_else(|| Refusal::FuseUnsupported {
                what: format!("internal: the barrier clause `{text}` does not parse"),
                span,
            })?;
            let e = respan(e, span);
            clauses.push(Clause {
                kind: if kind == 0 {
                    ClauseKind::Requires(e)
                } else {
                    ClauseKind::Ensures(e)
                },
                span,
            });
        }
    }
    Ok(Stmt {
        kind: StmtKind::Barrier(Barrier {
            label: label.clone(),
            invariants: Vec::new(),
            contract: Contract { clauses },
            body: Block {
                stmts: Vec::new(),
                span,
            },
            style: BarrierStyle::ClausesInside,
        }),
        span,
    })
}

/// The kernel's body, its barriers renamed to the fused label: its statements, or one block
/// when it declares locals at its top level (so they stay its own).
fn kernel_body(kernel: &Kernel, label: Option<&Ident>) -> Vec<Stmt> {
    let mut block = kernel.block.body.clone();
    if let (Some(own), Some(label)) = (&kernel.block.label, label) {
        for s in &mut block.stmts {
            relabel(s, &own.name, label);
        }
    }
    if block
        .stmts
        .iter()
        .any(|s| matches!(s.kind, StmtKind::LocalDecl { .. }))
    {
        vec![Stmt {
            span: block.span,
            kind: StmtKind::Block(block),
        }]
    } else {
        block.stmts
    }
}

fn relabel(s: &mut Stmt, from: &str, to: &Ident) {
    if let StmtKind::Barrier(b) = &mut s.kind {
        if b.label.name == from {
            b.label.name = to.name.clone();
        }
    }
    for c in s.children_mut() {
        relabel(c, from, to);
    }
}
