//! VerCors' process-algebra models (`--check-history`), lowered into what the checker knows:
//! a class, an abstract predicate and trusted bodiless methods whose contracts are the model
//! theory's rules. Runs between `parse` and `check`; a program it cannot lower entirely keeps
//! its model constructs, and `check` refuses the first (E0227), so nothing is dropped.
//!
//! The subset lowered: a model's fields of type `int` or `boolean`; actions with `int` or
//! `boolean` parameters whose contracts are `modifies`, `accessible` and `ensures` clauses
//! over the fields they name (and their `\old` values) and the parameters; processes built of
//! actions, `empty`, `*` (sequence), `||` (parallel composition) and calls of declared
//! processes that do not recurse, in `m.create(P)`, `m.state(p, P)`, `m.split(p1, P1, p2,
//! P2)`, `m.merge(p1, P1, p2, P2)` and `action(m, p, rest, m.a(..)) { .. }`; `m.destroy()`;
//! `m.abstractState(e)` in contracts and assertions; `Perm`, `HPerm`, `APerm` on a model
//! object's fields. Anything else (`+`, conditional or recursive processes, actions with a
//! `requires`, a field that is `accessible` to one action and modified by another) is left
//! for E0227.
//!
//! The encoding (for a field `x` of model `M`; `m` a model object):
//! - Three tokens beside the value: `Perm(m.x, p)` is `Perm(m.x, p) ** Perm(m.x$P, p)`,
//!   `APerm(m.x, p)` is `Perm(m.x, p) ** Perm(m.x$A, p)`, and `HPerm(m.x, p)` is
//!   `Perm(m.x$H, p)` — no permission to the value at all, so it neither reads nor writes it
//!   (writes need the value's full permission, which only `Perm` and `APerm` give). The three
//!   tokens are distinct locations, so one never stands for another. `new M()` gives `Perm`
//!   only (the lowered constructor's postcondition; the other tokens leak).
//! - A field no action modifies (one that actions may only read, `accessible`) never changes
//!   while a process runs: its `HPerm(m.x, p)` is `Perm(m.x$H, p) ** Perm(m.x, p) ** m.x ==
//!   m.x$H`, a read permission tied to the final value. Writing it needs all of it and breaks
//!   the equation, which the next exhale of `HPerm` (a call, a lock, `destroy`) checks.
//! - A process is kept in a canonical form: sequences and parallel compositions flattened
//!   (both associative, `empty` the unit of both), the branches of `||` ordered by their shape
//!   (it commutes), declared processes unfolded. Its *shape* (the form without arguments)
//!   gets a code, its arguments are listed in order as integers (`true` is 1), so the process
//!   state `m.state(p, P)` is an instance `state$K(p, code, args..)` of an abstract predicate
//!   (one per number of arguments K, which the shape fixes):
//!   a count, not a fraction of one instance, so two `state(1\2, P)` are never `state(1, P)`.
//!   Processes the laws equate but whose same-shape branches take their arguments in another
//!   order compare their arguments as written: a failure VerCors might not report, never a
//!   wrong match.
//! - The value of `m.x$H` is the field's value in the *final* abstract state. `m.create(P)`
//!   exchanges `Perm` of every field for `HPerm`, gives `m.state(1, P)` and assumes only that
//!   some interleaving of `P`'s actions leads from the current values to the final ones, each
//!   action as its `ensures` says (its `\old` the values before it), fields it does not modify
//!   unchanged. So the final values are values the process allows.
//! - `m.abstractState(e)` is `e` over the `m.x$H` values (so it needs `HPerm`, which keeps them
//!   framed). It is lowered only in contracts and assertions: executable code never sees the
//!   final values, so they may be chosen once, at `create`, as any values the process allows
//!   (a prophecy: the values the run will end with).
//! - `m.split(p1, P1, p2, P2)` takes `m.state(p1 + p2, P1 || P2)` and gives `m.state(p1, P1)
//!   ** m.state(p2, P2)`; `m.merge` the other way. No action is lost or added either way.
//! - `action(m, p, rest, m.a(args)) { body }` takes `m.state(p, a(args) * rest)` and needs the
//!   full `HPerm` of each field `a` modifies; the body gets `APerm` of those fields with
//!   unknown values (other threads' actions ran since), must establish `a`'s `ensures` over
//!   their values before and after (an assertion at the block's end), and gives `m.state(p,
//!   rest)`. `HPerm` stays with the block, so the final values do not change. The fields it
//!   may only read it reads through the `HPerm` its thread holds.
//! - `m.destroy()` takes `m.state(1, empty)` and the full `HPerm` of every field, and gives
//!   `Perm` back with every field equal to its final value: all of the process ran, each
//!   action as its contract says, so the concrete values are values the process allows.
//! - A declared process's contract (`requires`, `ensures`, `modifies`) is a claim of its own:
//!   a method `P$contract` (not trusted) assumes the precondition over the initial values and
//!   that some interleaving of the body leads to the final ones, and must show the
//!   postcondition (and, with `modifies`, that the other fields keep their values). The
//!   encoding above never relies on it.
use std::collections::{BTreeMap, BTreeSet};

use crate::syntax::*;

mod build;
mod decl;
mod process;
#[cfg(test)]
mod tests;

use build::*;
use decl::{collect, Model};
use process::{binder, exists, instantiate, relation, step, Proc};

/// The program with its models lowered, or `None` where it has none or one this module does
/// not lower entirely (then `check` refuses it with E0227).
pub fn lower(program: &Program) -> Option<Program> {
    let models = collect(program)?;
    if models.is_empty() {
        return None;
    }
    let mut lowering = Lowering {
        models: &models,
        shapes: BTreeMap::new(),
        arities: BTreeMap::new(),
        trusted: BTreeMap::new(),
        failed: false,
    };
    let mut out = program.clone();
    for item in &mut out.items {
        match item {
            Item::Class(class) if class.is_model => {}
            Item::Class(class) => {
                for member in &mut class.members {
                    lowering.member(member);
                }
            }
            Item::Member(member) => lowering.member(member),
        }
    }
    let mut contracts = BTreeMap::new();
    for (name, model) in &models {
        let checks = lowering.contract_checks(name, model);
        contracts.insert(name.clone(), checks);
    }
    if lowering.failed {
        return None;
    }
    for item in &mut out.items {
        if let Item::Class(class) = item {
            if let Some(model) = models.get(&class.name.name) {
                let extra = lowering
                    .trusted
                    .remove(&class.name.name)
                    .unwrap_or_default()
                    .into_values()
                    .chain(contracts.remove(&class.name.name).unwrap_or_default());
                let arities = lowering
                    .arities
                    .remove(&class.name.name)
                    .unwrap_or_default();
                *class = model_class(class, model, arities, extra.collect());
            }
        }
    }
    Some(out)
}

struct Lowering<'m> {
    models: &'m BTreeMap<String, Model>,
    /// Process codes: (model, shape) → code; `empty` is 0 for every model (not stored).
    shapes: BTreeMap<(String, String), i64>,
    /// The numbers of arguments of the process states written, per model: one abstract
    /// predicate `state$K` each (a shape has one number of arguments).
    arities: BTreeMap<String, BTreeSet<usize>>,
    /// The trusted methods the lowered statements call, per model, by name.
    trusted: BTreeMap<String, BTreeMap<String, Member>>,
    failed: bool,
}

/// The names in scope of one routine and their declared class (params, `given`, locals).
struct Scope {
    classes: BTreeMap<String, String>,
}

impl Lowering<'_> {
    fn member(&mut self, member: &mut Member) {
        let MemberKind::Method(method) = &mut member.kind else {
            return;
        };
        let mut scope = Scope {
            classes: BTreeMap::new(),
        };
        let mut note = |ty: &Type, name: &str| {
            if let TypeKind::Class(c) = &ty.kind {
                scope.classes.insert(name.to_string(), c.name.clone());
            }
        };
        for p in &method.params {
            note(&p.ty, &p.name.name);
        }
        for clause in &member.contract.clauses {
            if let ClauseKind::Given(p) | ClauseKind::Yields(p) = &clause.kind {
                note(&p.ty, &p.name.name);
            }
        }
        if let MethodBody::Block(body) = &method.body {
            for s in &body.stmts {
                s.visit(&mut |s| {
                    if let StmtKind::LocalDecl { ty, vars } = &s.kind {
                        for v in vars {
                            note(ty, &v.name.name);
                        }
                    }
                });
            }
        }
        let kept = if matches!(method.body, MethodBody::Block(_)) {
            self.history_kept(&member.contract, &scope)
        } else {
            Vec::new()
        };
        member
            .contract
            .for_each_expr_mut(&mut |e| *e = self.assertion(e, &scope));
        member.contract.clauses.extend(kept);
        if let MethodBody::Block(body) = &mut method.body {
            let stmts = std::mem::take(&mut body.stmts);
            body.stmts = stmts.into_iter().map(|s| self.stmt(s, &scope)).collect();
        }
    }

    /// A method (with a body: it is checked) that takes and gives back `HPerm(o.x, ..)` of a
    /// parameter `o` promises `o.x$H == \old(o.x$H)`: no code writes a final value, so only
    /// a `destroy` and a new `create` inside could break it (and then the method fails). The
    /// caller keeps the abstract state across the call, as VerCors does.
    fn history_kept(&self, contract: &Contract, scope: &Scope) -> Vec<Clause> {
        let mut before = BTreeSet::new();
        let mut after = BTreeMap::new();
        for clause in &contract.clauses {
            let (pre, post, e) = match &clause.kind {
                ClauseKind::Requires(e) => (true, false, e),
                ClauseKind::Ensures(e) => (false, true, e),
                ClauseKind::Context(e) | ClauseKind::ContextEverywhere(e) => (true, true, e),
                _ => continue,
            };
            for (o, x, span) in self.history_held(e, scope) {
                if pre {
                    before.insert((o.clone(), x.clone()));
                }
                if post {
                    after.entry((o, x)).or_insert(span);
                }
            }
        }
        after
            .into_iter()
            .filter(|(key, _)| before.contains(key))
            .map(|((o, x), span)| {
                let final_value = field(name_expr(&o, span), &format!("{x}$H"));
                Clause {
                    kind: ClauseKind::Ensures(eq(final_value.clone(), old(final_value))),
                    span,
                }
            })
            .collect()
    }

    /// The `HPerm(o.x, ..)` atoms of `e` on model objects named `o`: object, field, and the
    /// span of `o`, in order.
    fn history_held(&self, e: &Expr, scope: &Scope) -> Vec<(String, String, Span)> {
        let mut out = Vec::new();
        e.visit(&mut |a| {
            let ExprKind::Builtin {
                op: Builtin::HPerm,
                args,
            } = &a.kind
            else {
                return;
            };
            let Some(ExprKind::Field { base, name }) =
                args.first().map(|l| &l.peel_triggers().kind)
            else {
                return;
            };
            if let (ExprKind::Name(o), Some(_)) = (&base.kind, self.model_of(base, scope)) {
                out.push((o.name.clone(), name.name.clone(), base.span));
            }
        });
        out
    }

    /// The model object `e` names, with its model.
    fn model_of<'s>(&self, e: &Expr, scope: &'s Scope) -> Option<&'s str> {
        match &e.kind {
            ExprKind::Name(id) => scope
                .classes
                .get(&id.name)
                .filter(|c| self.models.contains_key(c.as_str()))
                .map(String::as_str),
            _ => None,
        }
    }

    /// The process `p` of model object `m` (`None`: inside a declared process, where calls
    /// have no receiver) in canonical form, declared processes unfolded.
    fn process(&self, p: &Expr, m: Option<&Expr>, model: &str) -> Option<Proc> {
        self.process_in(p, m, model, &mut Vec::new())
    }

    fn process_in(
        &self,
        p: &Expr,
        m: Option<&Expr>,
        model: &str,
        unfolding: &mut Vec<String>,
    ) -> Option<Proc> {
        let decl = &self.models[model];
        match &p.kind {
            ExprKind::Name(id) if id.name == "empty" => Some(Proc::empty()),
            ExprKind::Binary {
                op: op @ (BinaryOp::Mul | BinaryOp::Or),
                lhs,
                rhs,
            } => {
                let parts = vec![
                    self.process_in(lhs, m, model, unfolding)?,
                    self.process_in(rhs, m, model, unfolding)?,
                ];
                Some(if *op == BinaryOp::Mul {
                    Proc::seq(parts)
                } else {
                    Proc::par(parts)
                })
            }
            ExprKind::Call {
                receiver,
                name,
                args,
                type_args,
                given,
                yields,
            } if type_args.is_empty() && given.is_empty() && yields.is_empty() => {
                let ours = match (receiver, m) {
                    (None, None) => true,
                    (Some(r), Some(m)) => same_name(r, m),
                    _ => false,
                };
                if !ours {
                    return None;
                }
                if let Some(action) = decl.actions.get(&name.name) {
                    return (args.len() == action.params.len()).then(|| Proc::Act {
                        name: name.name.clone(),
                        args: args.clone(),
                    });
                }
                let process = decl.processes.get(&name.name)?;
                // A process that calls itself is not unfolded (no recursion yet).
                if args.len() != process.params.len() || unfolding.contains(&name.name) {
                    return None;
                }
                unfolding.push(name.name.clone());
                let body = instantiate(&process.body, &process.params, args);
                let out = self.process_in(&body, None, model, unfolding);
                unfolding.pop();
                out
            }
            _ => None,
        }
    }

    /// The code of `proc`'s shape in `model`.
    fn code(&mut self, model: &str, proc: &Proc) -> i64 {
        let shape = proc.shape();
        if shape == "empty" {
            return 0;
        }
        let next = self.shapes.len() as i64 + 1;
        *self
            .shapes
            .entry((model.to_string(), shape))
            .or_insert(next)
    }

    /// `proc`'s arguments as integers (`true` is 1), in order.
    fn int_args(&self, model: &str, proc: &Proc, span: Span) -> Vec<Expr> {
        let decl = &self.models[model];
        let mut out = Vec::new();
        for (a, args) in proc.actions() {
            for (arg, p) in args.iter().zip(&decl.actions[a].params) {
                out.push(match p.ty.kind {
                    TypeKind::Bool => Expr {
                        kind: ExprKind::Cond {
                            cond: Box::new(arg.clone()),
                            then_expr: Box::new(int(1, span)),
                            else_expr: Box::new(int(0, span)),
                        },
                        span,
                    },
                    _ => arg.clone(),
                });
            }
        }
        out
    }

    /// `m.state$K(p, code, args)` (K arguments): the process state `m.state(p, proc)`.
    fn state(&mut self, m: &Expr, model: &str, p: Expr, proc: &Proc) -> Expr {
        let span = p.span;
        let code = self.code(model, proc);
        let args = self.int_args(model, proc, span);
        self.arities
            .entry(model.to_string())
            .or_default()
            .insert(args.len());
        let name = format!("state${}", args.len());
        let mut all = vec![p, int(code, span)];
        all.extend(args);
        call(m.clone(), &name, all, span)
    }

    /// The parameters a trusted method takes for `proc`'s arguments, named `prefix0`, ..:
    /// the process with its arguments so named, and the parameters.
    fn params_for(&self, model: &str, proc: &Proc, prefix: &str, span: Span) -> (Proc, Vec<Param>) {
        let named = proc.named_args(prefix, span);
        let decl = &self.models[model];
        let mut params = Vec::new();
        for (a, args) in named.actions() {
            for (arg, p) in args.iter().zip(&decl.actions[a].params) {
                let ExprKind::Name(id) = &arg.kind else {
                    continue;
                };
                params.push(typed_param(p.ty.clone(), &id.name, span));
            }
        }
        (named, params)
    }

    fn add_trusted(&mut self, model: &str, member: Member) {
        let MemberKind::Method(m) = &member.kind else {
            return;
        };
        self.trusted
            .entry(model.to_string())
            .or_default()
            .entry(m.name.name.clone())
            .or_insert(member);
    }

    /// An assertion (contract clause, `assert`) with the model constructs lowered.
    fn assertion(&mut self, e: &Expr, scope: &Scope) -> Expr {
        self.expr(e, scope, true)
    }

    fn expr(&mut self, e: &Expr, scope: &Scope, spec: bool) -> Expr {
        match &e.kind {
            ExprKind::Builtin { op, args }
                if matches!(op, Builtin::Perm | Builtin::HPerm | Builtin::APerm)
                    && args.len() == 2 =>
            {
                let loc = args[0].peel_triggers();
                let ExprKind::Field { base, name } = &loc.kind else {
                    return self.plain(e, scope, spec);
                };
                let Some(model) = self.model_of(base, scope) else {
                    if *op != Builtin::Perm {
                        self.failed = true;
                    }
                    return self.plain(e, scope, spec);
                };
                let decl = &self.models[model];
                if !decl.fields.iter().any(|(f, _)| *f == name.name) {
                    self.failed = true;
                    return e.clone();
                }
                let amount = self.expr(&args[1], scope, spec);
                let tag = |t: &str| field((**base).clone(), &format!("{}${t}", name.name));
                match op {
                    Builtin::Perm => Expr::binary(
                        BinaryOp::Star,
                        perm(loc.clone(), amount.clone()),
                        perm(tag("P"), amount),
                    ),
                    Builtin::APerm => Expr::binary(
                        BinaryOp::Star,
                        perm(loc.clone(), amount.clone()),
                        perm(tag("A"), amount),
                    ),
                    _ => history_perm(decl, base, &name.name, amount),
                }
            }
            ExprKind::Builtin {
                op: Builtin::HPerm | Builtin::APerm,
                ..
            } => {
                self.failed = true;
                e.clone()
            }
            // VerCors 1.x: `Future(m, p, P)` is `m.state(p, P)`, `AbstractState(m, e)` is
            // `m.abstractState(e)` with the fields named bare in `e`.
            ExprKind::Call {
                receiver: None,
                name,
                args,
                ..
            } if matches!(name.name.as_str(), "Future" | "AbstractState")
                && args
                    .first()
                    .is_some_and(|m| self.model_of(m, scope).is_some()) =>
            {
                let m = args[0].clone();
                let model = self.model_of(&m, scope).unwrap_or_default();
                let mut rest = args[1..].to_vec();
                let modern = if name.name == "Future" {
                    "state"
                } else {
                    let fields = self.models[model].field_names();
                    rest = rest
                        .iter()
                        .map(|e| {
                            over_fields(
                                e,
                                &fields,
                                &|x, sp| {
                                    field(
                                        Expr {
                                            span: sp,
                                            ..m.clone()
                                        },
                                        x,
                                    )
                                },
                                &|x, sp| {
                                    old(field(
                                        Expr {
                                            span: sp,
                                            ..m.clone()
                                        },
                                        x,
                                    ))
                                },
                            )
                        })
                        .collect();
                    "abstractState"
                };
                self.expr(&call(m, modern, rest, e.span), scope, spec)
            }
            ExprKind::Call {
                receiver: Some(r),
                name,
                args,
                ..
            } if self.model_of(r, scope).is_some() => {
                let model = self.model_of(r, scope).unwrap_or_default().to_string();
                match (name.name.as_str(), &args[..]) {
                    ("state", [p, process]) => {
                        let Some(proc) = self.process(process, Some(r), &model) else {
                            self.failed = true;
                            return e.clone();
                        };
                        let p = self.expr(p, scope, spec);
                        self.state(r, &model, p, &proc)
                    }
                    ("abstractState", [inner]) if spec => {
                        let fields = self.models[&model].field_names();
                        // Inside, the fields are written as `m.x`: read their final values.
                        let mut out = self.expr(inner, scope, spec);
                        rewrite_fields(&mut out, r, &fields, "H");
                        out
                    }
                    _ => {
                        self.failed = true;
                        e.clone()
                    }
                }
            }
            _ => self.plain(e, scope, spec),
        }
    }

    /// `e` with its children lowered.
    fn plain(&mut self, e: &Expr, scope: &Scope, spec: bool) -> Expr {
        let mut out = e.clone();
        out.for_each_child_mut(&mut |c| *c = self.expr(c, scope, spec));
        out
    }

    fn stmt(&mut self, s: Stmt, scope: &Scope) -> Stmt {
        let span = s.span;
        match s.kind {
            StmtKind::Expr(Expr {
                kind:
                    ExprKind::Call {
                        receiver: Some(r),
                        name,
                        args,
                        ..
                    },
                span: call_span,
            }) if self.model_of(&r, scope).is_some() => {
                let model = self.model_of(&r, scope).unwrap_or_default().to_string();
                let lowered = match (name.name.as_str(), &args[..]) {
                    ("create", [process]) => self.create(&r, &model, process, call_span),
                    ("destroy", []) => Some(call_stmt(*r.clone(), "destroy$", vec![], call_span)),
                    ("split", [p1, q1, p2, q2]) | ("merge", [p1, q1, p2, q2]) => {
                        let ps = [self.expr(p1, scope, false), self.expr(p2, scope, false)];
                        self.split_or_merge(&r, &model, &name.name, ps, [q1, q2], call_span)
                    }
                    _ => None,
                };
                lowered.unwrap_or_else(|| {
                    self.failed = true;
                    stmt(StmtKind::Label(name), span)
                })
            }
            StmtKind::Action { header, body } => self.action(*header, body, span, scope),
            StmtKind::Invariant { name, inv, body } => {
                self.resource_invariant(name, inv, body, span, scope)
            }
            StmtKind::Assert(e) => stmt(StmtKind::Assert(self.assertion(&e, scope)), span),
            kind => {
                let mut s = Stmt { kind, span };
                for c in s.own_contracts_mut() {
                    c.for_each_expr_mut(&mut |e| *e = self.assertion(e, scope));
                }
                s.for_each_expr_mut(&mut |e| *e = self.expr(e, scope, false));
                let children: Vec<&mut Stmt> = s.children_mut();
                for child in children {
                    let taken = std::mem::replace(
                        child,
                        stmt(
                            StmtKind::Block(Block {
                                stmts: vec![],
                                span,
                            }),
                            span,
                        ),
                    );
                    *child = self.stmt(taken, scope);
                }
                s
            }
        }
    }

    /// `invariant name(I) { body }`: the final values (`m.x$H`) that `I`'s `HPerm` covers never
    /// change (nothing writes them; an action block keeps them), but a resource invariant
    /// that states only the permission would lose them at its end. So the invariant also
    /// states them, equal to ghost copies taken before it.
    fn resource_invariant(
        &mut self,
        name: Ident,
        inv: Expr,
        body: Block,
        span: Span,
        scope: &Scope,
    ) -> Stmt {
        let held: BTreeSet<(String, String)> = self
            .history_held(&inv, scope)
            .into_iter()
            .map(|(o, x, _)| (o, x))
            .collect();
        let mut pinned = vec![self.assertion(&inv, scope)];
        let mut stmts = Vec::new();
        for (object, x) in &held {
            let Some(model) = scope.classes.get(object) else {
                continue;
            };
            let Some((_, ty)) = self.models[model].fields.iter().find(|(f, _)| f == x) else {
                continue;
            };
            let copy = format!("{object}$inv{}${x}", span.start);
            let final_value = field(name_expr(object, span), &format!("{x}$H"));
            stmts.push(stmt(
                StmtKind::Ghost(Box::new(stmt(
                    StmtKind::LocalDecl {
                        ty: ty.clone(),
                        vars: vec![LocalVar {
                            name: Ident {
                                name: copy.clone(),
                                span,
                            },
                            init: Some(final_value.clone()),
                            span,
                        }],
                    },
                    span,
                ))),
                span,
            ));
            pinned.push(eq(final_value, name_expr(&copy, span)));
        }
        let body = Block {
            stmts: body
                .stmts
                .into_iter()
                .map(|s| self.stmt(s, scope))
                .collect(),
            span: body.span,
        };
        stmts.push(stmt(
            StmtKind::Invariant {
                name,
                inv: star(pinned, span),
                body,
            },
            span,
        ));
        stmt(StmtKind::Block(Block { stmts, span }), span)
    }

    /// `m.create(P)` → `m.create$K(args)`, `create$K` trading every field's `Perm` for
    /// `HPerm`, giving `state(1, P)` and relating the values to the final ones.
    fn create(&mut self, m: &Expr, model: &str, process: &Expr, span: Span) -> Option<Stmt> {
        let proc = self.process(process, Some(m), model)?;
        let code = self.code(model, &proc);
        let (named, params) = self.params_for(model, &proc, "a$", span);
        let decl = &self.models[model];
        let this = this_expr(span);
        let relation = relation(
            decl,
            &named,
            &|x| old(field(this.clone(), x)),
            &|x| field(this.clone(), &format!("{x}$H")),
            span,
        )?;
        let mut ensures: Vec<Expr> = decl
            .fields
            .iter()
            .map(|(x, _)| history_perm(decl, &this, x, write(span)))
            .collect();
        ensures.push(self.state(&this, model, int(1, span), &named));
        ensures.push(relation);
        let requires = value_perms(decl, &this, span);
        self.add_trusted(
            model,
            trusted(
                &format!("create${code}"),
                params,
                star(requires, span),
                star(ensures, span),
                span,
            ),
        );
        let args = proc.args();
        Some(call_stmt(m.clone(), &format!("create${code}"), args, span))
    }

    /// `m.split(p1, P1, p2, P2)` (`state(p1 + p2, P1 || P2)` into `state(p1, P1) ** state(p2,
    /// P2)`) or `m.merge(..)` (the other way) → a call of a trusted method that says so.
    fn split_or_merge(
        &mut self,
        m: &Expr,
        model: &str,
        what: &str,
        fractions: [Expr; 2],
        processes: [&Expr; 2],
        span: Span,
    ) -> Option<Stmt> {
        let first = self.process(processes[0], Some(m), model)?;
        let second = self.process(processes[1], Some(m), model)?;
        let codes = [self.code(model, &first), self.code(model, &second)];
        let (first_named, mut params) = self.params_for(model, &first, "a$", span);
        let (second_named, second_params) = self.params_for(model, &second, "b$", span);
        let name = format!("{what}${}${}", codes[0], codes[1]);
        let this = this_expr(span);
        let p = |n: &str| name_expr(n, span);
        let whole = Proc::par(vec![first_named.clone(), second_named.clone()]);
        let joined = self.state(
            &this,
            model,
            Expr::binary(BinaryOp::Add, p("p1"), p("p2")),
            &whole,
        );
        let parts = star(
            vec![
                self.state(&this, model, p("p1"), &first_named),
                self.state(&this, model, p("p2"), &second_named),
            ],
            span,
        );
        let (requires, ensures) = if what == "split" {
            (joined, parts)
        } else {
            (parts, joined)
        };
        let mut all = vec![
            param(TypeKind::Frac, "p1", span),
            param(TypeKind::Frac, "p2", span),
        ];
        all.append(&mut params);
        all.extend(second_params);
        self.add_trusted(model, trusted(&name, all, requires, ensures, span));
        let [p1, p2] = fractions;
        let mut args = vec![p1, p2];
        for proc in [&first, &second] {
            args.extend(proc.args());
        }
        Some(call_stmt(m.clone(), &name, args, span))
    }

    /// `action(m, p, rest, m.a(args)) { body }` → `{ m.begin$a$R(p, args, rest's args); ghost
    /// T m$old$x = m.x; ..; body; assert ensures(a); m.end$a$R(p, rest's args); }`.
    fn action(&mut self, header: ActionHeader, body: Block, span: Span, scope: &Scope) -> Stmt {
        let failed = |this: &mut Self, header: ActionHeader, body: Block| {
            this.failed = true;
            stmt(
                StmtKind::Action {
                    header: Box::new(header),
                    body,
                },
                span,
            )
        };
        let Some(model) = self.model_of(&header.model, scope).map(str::to_string) else {
            return failed(self, header, body);
        };
        // A `return` or `goto` would leave the block before its action's contract is checked.
        let mut leaves = false;
        for s in &body.stmts {
            s.visit(&mut |s| {
                leaves |= matches!(s.kind, StmtKind::Return(_) | StmtKind::Goto(_));
            });
        }
        let m = header.model.clone();
        let performed = self.process(&header.action, Some(&m), &model);
        let rest = self.process(&header.rest, Some(&m), &model);
        let (Some(Proc::Act { name: a, args }), Some(rest), false) = (performed, rest, leaves)
        else {
            return failed(self, header, body);
        };
        let rest_code = self.code(&model, &rest);
        let decl = &self.models[&model];
        let action = &decl.actions[&a];
        // 1.x's list of converted fields must be what the action modifies, whole.
        let listed: BTreeSet<String> = header
            .converts
            .iter()
            .filter_map(|(f, amount)| match (&f.kind, &amount.kind) {
                (ExprKind::Name(id), ExprKind::PermLit(PermLit::Write)) => Some(id.name.clone()),
                (ExprKind::Name(id), ExprKind::IntLit(one)) if *one == 1u32.into() => {
                    Some(id.name.clone())
                }
                _ => None,
            })
            .collect();
        let modified: BTreeSet<String> = action.modifies.iter().cloned().collect();
        if !header.converts.is_empty()
            && (listed.len() != header.converts.len() || listed != modified)
        {
            return failed(self, header, body);
        }
        let modifies = action.modifies.clone();
        let params = action.params.clone();
        let ensures = action.ensures.clone();
        let begin = format!("begin${a}${rest_code}");
        let end = format!("end${a}${rest_code}");
        // The trusted pair, for the action's arguments `a$..` and the rest's `b$..`.
        let this = this_expr(span);
        let p = || name_expr("p", span);
        let performed = Proc::Act {
            name: a.clone(),
            args: args.clone(),
        };
        let (performed_named, mut begin_params) = self.params_for(&model, &performed, "a$", span);
        let (rest_named, rest_params) = self.params_for(&model, &rest, "b$", span);
        let whole = Proc::seq(vec![performed_named, rest_named.clone()]);
        let held = |x: &str| perm(field(this.clone(), &format!("{x}$H")), write(span));
        let mut requires = vec![self.state(&this, &model, p(), &whole)];
        requires.extend(modifies.iter().map(|x| held(x)));
        let mut gives: Vec<Expr> = modifies.iter().map(|x| held(x)).collect();
        for x in &modifies {
            let final_value = field(this.clone(), &format!("{x}$H"));
            gives.push(eq(final_value.clone(), old(final_value)));
            gives.push(perm(field(this.clone(), x), write(span)));
            gives.push(perm(field(this.clone(), &format!("{x}$A")), write(span)));
        }
        begin_params.insert(0, param(TypeKind::Frac, "p", span));
        begin_params.extend(rest_params.iter().cloned());
        self.add_trusted(
            &model,
            trusted(
                &begin,
                begin_params,
                star(requires, span),
                star(gives, span),
                span,
            ),
        );
        let mut takes = Vec::new();
        for x in &modifies {
            takes.push(perm(field(this.clone(), x), write(span)));
            takes.push(perm(field(this.clone(), &format!("{x}$A")), write(span)));
        }
        let ends_in = self.state(&this, &model, p(), &rest_named);
        let mut end_params = vec![param(TypeKind::Frac, "p", span)];
        end_params.extend(rest_params);
        self.add_trusted(
            &model,
            trusted(&end, end_params, star(takes, span), ends_in, span),
        );
        // The block.
        let fraction = self.expr(&header.fraction, scope, false);
        let rest_args: Vec<Expr> = rest.args();
        let mut begin_args = vec![fraction.clone()];
        begin_args.extend(args.iter().cloned());
        begin_args.extend(rest_args.iter().cloned());
        let mut stmts = vec![call_stmt(m.clone(), &begin, begin_args, span)];
        let types: BTreeMap<String, Type> = self.models[&model].fields.iter().cloned().collect();
        let object = match &m.kind {
            ExprKind::Name(id) => id.name.clone(),
            _ => String::new(),
        };
        let old_name = |x: &str| format!("{object}$old${x}");
        for x in &modifies {
            stmts.push(stmt(
                StmtKind::Ghost(Box::new(stmt(
                    StmtKind::LocalDecl {
                        ty: types[x].clone(),
                        vars: vec![LocalVar {
                            name: Ident {
                                name: old_name(x),
                                span,
                            },
                            init: Some(field(m.clone(), x)),
                            span,
                        }],
                    },
                    span,
                ))),
                span,
            ));
        }
        // A field the action only reads keeps its final value (the relation `create` assumed
        // reads it so) at the action's start and end.
        let accessible = self.models[&model].actions[&a].accessible.clone();
        let unchanged = |x: &str| {
            stmt(
                StmtKind::Assert(eq(field(m.clone(), x), field(m.clone(), &format!("{x}$H")))),
                span,
            )
        };
        stmts.extend(accessible.iter().map(|x| unchanged(x)));
        stmts.extend(body.stmts.into_iter().map(|s| self.stmt(s, scope)));
        stmts.extend(accessible.iter().map(|x| unchanged(x)));
        let fields = self.models[&model].field_names();
        for e in &ensures {
            let now = |x: &str, sp: Span| {
                field(
                    Expr {
                        span: sp,
                        ..m.clone()
                    },
                    x,
                )
            };
            // A field the action only reads has one value throughout.
            let before = |x: &str, sp: Span| {
                if modifies.iter().any(|y| y == x) {
                    name_expr(&old_name(x), sp)
                } else {
                    now(x, sp)
                }
            };
            let goal = instantiate(&over_fields(e, &fields, &now, &before), &params, &args);
            stmts.push(stmt(StmtKind::Assert(goal), e.span));
        }
        let mut end_args = vec![fraction];
        end_args.extend(rest_args);
        stmts.push(call_stmt(m, &end, end_args, span));
        stmt(
            StmtKind::Block(Block {
                stmts,
                span: body.span,
            }),
            span,
        )
    }

    /// A verified method per declared process that states a contract: its precondition over
    /// the initial values and an interleaving of its body to the final ones must give its
    /// postcondition (and, with `modifies`, the other fields unchanged).
    fn contract_checks(&mut self, name: &str, model: &Model) -> Vec<Member> {
        let mut out = feasibility_checks(model);
        for (p, process) in &model.processes {
            let span = process.span;
            let Some(body) = self.process(&process.body, None, name) else {
                self.failed = true;
                continue;
            };
            if process.ensures.is_empty() && process.modifies.is_none() {
                continue;
            }
            let initial = |x: &str| name_expr(&format!("{x}$0"), span);
            let last = |x: &str| name_expr(&format!("{x}$1"), span);
            let Some(relation) = relation(model, &body, &initial, &last, span) else {
                self.failed = true;
                continue;
            };
            let fields = model.field_names();
            let mut clauses: Vec<ClauseKind> = process
                .requires
                .iter()
                .map(|e| {
                    ClauseKind::Requires(over_fields(
                        e,
                        &fields,
                        &|x, sp| name_expr(&format!("{x}$0"), sp),
                        &|x, sp| name_expr(&format!("{x}$0"), sp),
                    ))
                })
                .collect();
            clauses.push(ClauseKind::Requires(relation));
            for e in &process.ensures {
                clauses.push(ClauseKind::Ensures(over_fields(
                    e,
                    &fields,
                    &|x, sp| name_expr(&format!("{x}$1"), sp),
                    &|x, sp| name_expr(&format!("{x}$0"), sp),
                )));
            }
            if let Some(modifies) = &process.modifies {
                for (x, _) in &model.fields {
                    if !modifies.contains(x) {
                        clauses.push(ClauseKind::Ensures(eq(last(x), initial(x))));
                    }
                }
            }
            let mut params = process.params.clone();
            for (x, ty) in &model.fields {
                params.push(typed_param(ty.clone(), &format!("{x}$0"), span));
                params.push(typed_param(ty.clone(), &format!("{x}$1"), span));
            }
            out.push(routine(
                &format!("{p}$contract"),
                params,
                clauses,
                Some(Block {
                    stmts: Vec::new(),
                    span,
                }),
                span,
            ));
        }
        out
    }
}

/// A verified method per action with a postcondition: from any values, some values after
/// it satisfy it. `create` assumes that some run of its process reaches the final values;
/// an action no values can follow (`ensures false`) would make that assumption `false`.
fn feasibility_checks(model: &Model) -> Vec<Member> {
    let mut out = Vec::new();
    for (a, action) in &model.actions {
        let Some(span) = action.ensures.first().map(|e| e.span) else {
            continue;
        };
        // Only the fields it modifies are bound: the others keep their values.
        let modified = |x: &str| action.modifies.iter().any(|m| m == x);
        let before = |x: &str| name_expr(&format!("{x}$0"), span);
        let after = |x: &str| name_expr(&format!("{x}${}", if modified(x) { 1 } else { 0 }), span);
        let args: Vec<Expr> = action
            .params
            .iter()
            .map(|p| name_expr(&p.name.name, span))
            .collect();
        let binders = model
            .fields
            .iter()
            .filter(|(x, _)| modified(x))
            .map(|(x, ty)| binder(ty, &format!("{x}$1"), span))
            .collect();
        let some_after = exists(binders, step(model, a, &args, &before, &after), span);
        let mut params = action.params.clone();
        for (x, ty) in &model.fields {
            params.push(typed_param(ty.clone(), &format!("{x}$0"), span));
        }
        out.push(routine(
            &format!("{a}$feasible"),
            params,
            vec![ClauseKind::Ensures(some_after)],
            Some(Block {
                stmts: Vec::new(),
                span,
            }),
            span,
        ));
    }
    out
}
