//! VerCors' process-algebra models (`--check-history`), lowered into what the checker knows:
//! a class, an abstract predicate and trusted bodiless methods whose contracts are the model
//! theory's rules. Runs between `parse` and `check`; a program it cannot lower entirely keeps
//! its model constructs, and `check` refuses the first (E0227), so nothing is dropped.
//!
//! The subset lowered: a model's fields of type `int` or `boolean`; actions without parameters
//! whose contracts are `modifies` and `ensures` clauses over the modified fields (and their
//! `\old` values); processes written as sequences of such actions (`a() * b()`, `empty`) in
//! `m.create(P)`, `m.state(p, P)` and `action(m, p, rest, m.a()) { .. }`; `m.destroy()`;
//! `m.abstractState(e)` in contracts and assertions; `Perm`, `HPerm`, `APerm` on a model
//! object's fields. Anything else (declared processes, `||`, `+`, `split`/`merge`,
//! `accessible`, action parameters or preconditions) is left for E0227.
//!
//! The encoding (for a field `x` of model `M`; `m` a model object):
//! - Three tokens beside the value: `Perm(m.x, p)` is `Perm(m.x, p) ** Perm(m.x$P, p)`,
//!   `APerm(m.x, p)` is `Perm(m.x, p) ** Perm(m.x$A, p)`, and `HPerm(m.x, p)` is
//!   `Perm(m.x$H, p)` — no permission to the value at all, so it neither reads nor writes it
//!   (writes need the value's full permission, which only `Perm` and `APerm` give). The three
//!   tokens are distinct locations, so one never stands for another. `new M()` gives `Perm`
//!   only (the lowered constructor's postcondition; the other tokens leak).
//! - `m.create(P)` exchanges `Perm` of every field for `HPerm` and gives the process state
//!   `m.state(1, P)`, an instance of the abstract predicate `state$(frac, int)` keyed by the
//!   fraction and a code of `P`: a count, not a fraction of one instance, so two
//!   `state(1\2, P)` are never one `state(1, P)`. The value of `m.x$H` is the field's value
//!   in the *final* abstract state: `create` assumes only that the process relates the
//!   current values to those (an action's `ensures` with `\old` the values before it; the
//!   fields it does not modify unchanged).
//! - `m.abstractState(e)` is `e` over the `m.x$H` values (so it needs `HPerm`, which keeps them
//!   framed). It is lowered only in contracts and assertions: executable code never sees the
//!   final values, so they may be chosen once, at `create`, as any values the process allows.
//! - `action(m, p, rest, m.a()) { body }` takes `m.state(p, a * rest)` and needs the full
//!   `HPerm` of each field `a` modifies; the body gets `APerm` of those fields with unknown
//!   values (other threads' actions ran since), must establish `a`'s `ensures` over their
//!   values before and after (an assertion at the block's end), and gives `m.state(p, rest)`.
//!   `HPerm` stays with the block, so the final values do not change.
//! - `m.destroy()` takes `m.state(1, empty)` and the full `HPerm` of every field, and gives
//!   `Perm` back with every field equal to its final value: all of the process ran, each
//!   action as its contract says, so the concrete values are values the process allows.

use std::collections::{BTreeMap, BTreeSet};

use crate::syntax::*;

/// The program with its models lowered, or `None` where it has none or one this module does
/// not lower entirely (then `check` refuses it with E0227).
pub fn lower(program: &Program) -> Option<Program> {
    let models = collect(program)?;
    if models.is_empty() {
        return None;
    }
    let mut lowering = Lowering {
        models: &models,
        codes: BTreeMap::new(),
        creates: BTreeSet::new(),
        actions: BTreeSet::new(),
        failed: false,
    };
    lowering.codes.insert((String::new(), Vec::new()), 0);
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
    if lowering.failed {
        return None;
    }
    for item in &mut out.items {
        if let Item::Class(class) = item {
            if let Some(model) = models.get(&class.name.name) {
                *class = lowering.model_class(class, model);
            }
        }
    }
    Some(out)
}

struct Action {
    modifies: Vec<String>,
    ensures: Vec<Expr>,
}

struct Model {
    /// Field name and type, in declaration order.
    fields: Vec<(String, Type)>,
    actions: BTreeMap<String, Action>,
}

/// The models, if every one is in the subset lowered.
fn collect(program: &Program) -> Option<BTreeMap<String, Model>> {
    let mut models = BTreeMap::new();
    for item in &program.items {
        let Item::Class(class) = item else { continue };
        if !class.is_model {
            continue;
        }
        if !class.contract.clauses.is_empty() {
            return None;
        }
        let mut model = Model {
            fields: Vec::new(),
            actions: BTreeMap::new(),
        };
        for member in &class.members {
            match &member.kind {
                MemberKind::Field(f) => {
                    if !member.contract.clauses.is_empty() || !member.gpuopts.is_empty() {
                        return None;
                    }
                    if !matches!(f.ty.kind, TypeKind::Int | TypeKind::Bool) {
                        return None;
                    }
                    model.fields.push((f.name.name.clone(), f.ty.clone()));
                }
                MemberKind::Method(m) if m.model_member == Some(ModelMember::Action) => {
                    if !m.params.is_empty() || !member.gpuopts.is_empty() {
                        return None;
                    }
                    let mut action = Action {
                        modifies: Vec::new(),
                        ensures: Vec::new(),
                    };
                    for clause in &member.contract.clauses {
                        match &clause.kind {
                            ClauseKind::Modifies(fs) => {
                                action.modifies.extend(fs.iter().map(|f| f.name.clone()))
                            }
                            ClauseKind::Ensures(e) => action.ensures.push(e.clone()),
                            _ => return None,
                        }
                    }
                    model.actions.insert(m.name.name.clone(), action);
                }
                MemberKind::Method(_) => return None,
            }
        }
        let fields: BTreeSet<&str> = model.fields.iter().map(|(f, _)| f.as_str()).collect();
        for action in model.actions.values() {
            // What an action's contract may name: the fields it modifies, nothing else (no
            // `accessible` fields are lowered yet).
            let modified: BTreeSet<&str> = action.modifies.iter().map(String::as_str).collect();
            if !modified.iter().all(|f| fields.contains(f)) {
                return None;
            }
            let mut names = BTreeSet::new();
            let mut this = false;
            for e in &action.ensures {
                e.names(&mut names);
                e.visit(&mut |x| this |= matches!(x.kind, ExprKind::This));
            }
            // Fields are named bare in an action's contract (`this.x` is not lowered).
            if this {
                return None;
            }
            if !names.iter().all(|n| modified.contains(n.as_str())) {
                return None;
            }
        }
        models.insert(class.name.name.clone(), model);
    }
    Some(models)
}

struct Lowering<'m> {
    models: &'m BTreeMap<String, Model>,
    /// Process codes: (model, the actions in sequence) → code; `empty` is 0 for every model.
    codes: BTreeMap<(String, Vec<String>), i64>,
    /// (model, code) of every `create` written.
    creates: BTreeSet<(String, i64)>,
    /// (model, action, rest code) of every `action` block written.
    actions: BTreeSet<(String, String, i64)>,
    failed: bool,
}

/// The names in scope of one routine and their declared class (params, `given`, locals).
struct Scope {
    classes: BTreeMap<String, String>,
}

fn param(kind: TypeKind, name: &str, span: Span) -> Param {
    Param {
        ty: Type { kind, span },
        name: Ident {
            name: name.to_string(),
            span,
        },
        span,
    }
}

fn name_expr(name: &str, span: Span) -> Expr {
    Expr::name(name, span)
}

fn field(base: Expr, name: &str) -> Expr {
    let span = base.span;
    Expr {
        kind: ExprKind::Field {
            base: Box::new(base),
            name: Ident {
                name: name.to_string(),
                span,
            },
        },
        span,
    }
}

fn perm(loc: Expr, amount: Expr) -> Expr {
    let span = loc.span;
    Expr {
        kind: ExprKind::Builtin {
            op: Builtin::Perm,
            args: vec![loc, amount],
        },
        span,
    }
}

fn write(span: Span) -> Expr {
    Expr {
        kind: ExprKind::PermLit(PermLit::Write),
        span,
    }
}

fn int(v: i64, span: Span) -> Expr {
    Expr {
        kind: ExprKind::IntLit(num_bigint::BigUint::from(v as u64)),
        span,
    }
}

fn star(parts: Vec<Expr>, span: Span) -> Expr {
    parts
        .into_iter()
        .reduce(|a, b| Expr::binary(BinaryOp::Star, a, b))
        .unwrap_or(Expr {
            kind: ExprKind::BoolLit(true),
            span,
        })
}

fn call(receiver: Expr, name: &str, args: Vec<Expr>, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Call {
            receiver: Some(Box::new(receiver)),
            name: Ident {
                name: name.to_string(),
                span,
            },
            type_args: Vec::new(),
            args,
            given: Vec::new(),
            yields: Vec::new(),
        },
        span,
    }
}

fn stmt(kind: StmtKind, span: Span) -> Stmt {
    Stmt { kind, span }
}

/// `e` with the model's field names read through `now` (outside `\old`) and `old` (inside).
fn over_fields(
    e: &Expr,
    fields: &BTreeSet<String>,
    now: &dyn Fn(&str, Span) -> Expr,
    old: &dyn Fn(&str, Span) -> Expr,
) -> Expr {
    match &e.kind {
        ExprKind::Name(id) if fields.contains(&id.name) => now(&id.name, e.span),
        ExprKind::Old(inner) => over_fields(inner, fields, old, old),
        _ => {
            let mut out = e.clone();
            out.for_each_child_mut(&mut |c| *c = over_fields(c, fields, now, old));
            out
        }
    }
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
        member
            .contract
            .for_each_expr_mut(&mut |e| *e = self.assertion(e, &scope));
        if let MethodBody::Block(body) = &mut method.body {
            let stmts = std::mem::take(&mut body.stmts);
            body.stmts = stmts.into_iter().map(|s| self.stmt(s, &scope)).collect();
        }
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

    /// The code of the process `p` of model object `m`: `empty`, `m.a()`, `P * Q`.
    fn process(&mut self, p: &Expr, m: &Expr, model: &str) -> Option<i64> {
        fn actions(p: &Expr, m: &Expr, model: &Model, out: &mut Vec<String>) -> bool {
            match &p.kind {
                ExprKind::Name(id) if id.name == "empty" => true,
                ExprKind::Binary {
                    op: BinaryOp::Mul,
                    lhs,
                    rhs,
                } => actions(lhs, m, model, out) && actions(rhs, m, model, out),
                ExprKind::Call {
                    receiver: Some(r),
                    name,
                    args,
                    type_args,
                    given,
                    yields,
                } if args.is_empty()
                    && type_args.is_empty()
                    && given.is_empty()
                    && yields.is_empty()
                    && same_name(r, m)
                    && model.actions.contains_key(&name.name) =>
                {
                    out.push(name.name.clone());
                    true
                }
                _ => false,
            }
        }
        let mut seq = Vec::new();
        if !actions(p, m, &self.models[model], &mut seq) {
            return None;
        }
        let next = self.codes.len() as i64;
        Some(
            *self
                .codes
                .entry((
                    if seq.is_empty() {
                        String::new()
                    } else {
                        model.to_string()
                    },
                    seq,
                ))
                .or_insert(next),
        )
    }

    /// The number of actions in the process of `code`.
    fn length(&self, code: i64) -> usize {
        self.sequence(code).len()
    }

    /// The actions of the process of `code`, in order (none for `empty`).
    fn sequence(&self, code: i64) -> Vec<String> {
        self.codes
            .iter()
            .find(|(_, c)| **c == code)
            .map(|((_, seq), _)| seq.clone())
            .unwrap_or_default()
    }

    fn fail<T>(&mut self) -> Option<T> {
        self.failed = true;
        None
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
                if !self.models[model]
                    .fields
                    .iter()
                    .any(|(f, _)| *f == name.name)
                {
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
                    _ => perm(tag("H"), amount),
                }
            }
            ExprKind::Builtin {
                op: Builtin::HPerm | Builtin::APerm,
                ..
            } => {
                self.failed = true;
                e.clone()
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
                        let Some(code) = self.process(process, r, &model) else {
                            return self.fail().unwrap_or_else(|| e.clone());
                        };
                        let p = self.expr(p, scope, spec);
                        call((**r).clone(), "state$", vec![p, int(code, e.span)], e.span)
                    }
                    ("abstractState", [inner]) if spec => {
                        let fields: BTreeSet<String> = self.models[&model]
                            .fields
                            .iter()
                            .map(|(f, _)| f.clone())
                            .collect();
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
                match (name.name.as_str(), &args[..]) {
                    ("create", [process]) => match self.process(process, &r, &model) {
                        // The process's relation is written for `empty` and one action only.
                        Some(code) if self.length(code) <= 1 => {
                            self.creates.insert((model, code));
                            stmt(
                                StmtKind::Expr(call(
                                    *r,
                                    &format!("create${code}"),
                                    vec![],
                                    call_span,
                                )),
                                span,
                            )
                        }
                        _ => self
                            .fail()
                            .unwrap_or_else(|| stmt(StmtKind::Label(name), span)),
                    },
                    ("destroy", []) => stmt(
                        StmtKind::Expr(call(*r, "destroy$", vec![], call_span)),
                        span,
                    ),
                    _ => self
                        .fail()
                        .unwrap_or_else(|| stmt(StmtKind::Label(name), span)),
                }
            }
            StmtKind::Action { header, body } => self.action(*header, body, span, scope),
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

    /// `action(m, p, rest, m.a()) { body }` →
    /// `{ m.begin$a$R(p); ghost T old$x = m.x; ..; body; assert ensures(a); m.end$a$R(p); }`.
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
        let ExprKind::Call {
            receiver: Some(r),
            name: action_name,
            args,
            ..
        } = &header.action.kind
        else {
            return failed(self, header, body);
        };
        // A `return` or `goto` would leave the block before its action's contract is checked.
        let mut leaves = false;
        for s in &body.stmts {
            s.visit(&mut |s| {
                leaves |= matches!(s.kind, StmtKind::Return(_) | StmtKind::Goto(_));
            });
        }
        if !args.is_empty() || !same_name(r, &header.model) || leaves {
            return failed(self, header, body);
        }
        let Some(action) = self.models[&model].actions.get(&action_name.name) else {
            return failed(self, header, body);
        };
        let Some(rest) = self.process(&header.rest, &header.model, &model) else {
            return failed(self, header, body);
        };
        let action_name = action_name.name.clone();
        self.actions
            .insert((model.clone(), action_name.clone(), rest));
        let m = header.model.clone();
        let fraction = self.expr(&header.fraction, scope, false);
        let mut stmts = vec![stmt(
            StmtKind::Expr(call(
                m.clone(),
                &format!("begin${action_name}${rest}"),
                vec![fraction.clone()],
                span,
            )),
            span,
        )];
        let fields: BTreeSet<String> = action.modifies.iter().cloned().collect();
        let types: BTreeMap<&str, &Type> = self.models[&model]
            .fields
            .iter()
            .map(|(f, t)| (f.as_str(), t))
            .collect();
        let object = match &m.kind {
            ExprKind::Name(id) => id.name.clone(),
            _ => String::new(),
        };
        let old_name = |x: &str| format!("{object}$old${x}");
        for x in &action.modifies {
            stmts.push(stmt(
                StmtKind::Ghost(Box::new(stmt(
                    StmtKind::LocalDecl {
                        ty: types[x.as_str()].clone(),
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
        let ensures: Vec<Expr> = action.ensures.clone();
        stmts.extend(body.stmts.into_iter().map(|s| self.stmt(s, scope)));
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
            let old = |x: &str, sp: Span| name_expr(&old_name(x), sp);
            let goal = over_fields(e, &fields, &now, &old);
            stmts.push(stmt(StmtKind::Assert(goal), e.span));
        }
        stmts.push(stmt(
            StmtKind::Expr(call(
                m,
                &format!("end${action_name}${rest}"),
                vec![fraction],
                span,
            )),
            span,
        ));
        stmt(
            StmtKind::Block(Block {
                stmts,
                span: body.span,
            }),
            span,
        )
    }

    /// The model as a class: its fields, the tokens, the constructor, the process-state
    /// predicate and the trusted methods the lowered uses call.
    fn model_class(&self, class: &Class, model: &Model) -> Class {
        let span = class.name.span;
        let this = || Expr {
            kind: ExprKind::This,
            span,
        };
        let this_field = |x: &str| field(this(), x);
        let bool_ty = Type {
            kind: TypeKind::Bool,
            span,
        };
        let mut members = Vec::new();
        let field_member = |name: String, ty: Type| Member {
            gpuopts: Vec::new(),
            contract: Contract::default(),
            kind: MemberKind::Field(Field {
                ty,
                name: Ident { name, span },
                span,
            }),
            span,
        };
        for (x, ty) in &model.fields {
            members.push(field_member(x.clone(), ty.clone()));
            members.push(field_member(format!("{x}$P"), bool_ty.clone()));
            members.push(field_member(format!("{x}$A"), bool_ty.clone()));
            members.push(field_member(format!("{x}$H"), ty.clone()));
        }
        let all_fields: BTreeSet<String> = model.fields.iter().map(|(f, _)| f.clone()).collect();
        let method =
            |name: &str, params: Vec<Param>, clauses: Vec<ClauseKind>, ctor: bool| Member {
                gpuopts: Vec::new(),
                contract: Contract {
                    clauses: clauses
                        .into_iter()
                        .map(|kind| Clause { kind, span })
                        .collect(),
                },
                kind: MemberKind::Method(Method {
                    modifiers: Vec::new(),
                    return_type: if ctor {
                        None
                    } else {
                        Some(Type {
                            kind: TypeKind::Void,
                            span,
                        })
                    },
                    name: Ident {
                        name: name.to_string(),
                        span,
                    },
                    type_params: Vec::new(),
                    params,
                    body: if ctor {
                        MethodBody::Block(Block {
                            stmts: Vec::new(),
                            span,
                        })
                    } else {
                        MethodBody::Abstract
                    },
                    span,
                    is_run: false,
                    model_member: None,
                }),
                span,
            };
        let perms = |tags: &[&str]| -> Vec<Expr> {
            model
                .fields
                .iter()
                .flat_map(|(x, _)| {
                    tags.iter().map(move |t| {
                        let name = if t.is_empty() {
                            x.clone()
                        } else {
                            format!("{x}${t}")
                        };
                        (name, *t)
                    })
                })
                .map(|(name, _)| perm(this_field(&name), write(span)))
                .collect()
        };
        let state = |p: Expr, code: i64| call(this(), "state$", vec![p, int(code, span)], span);
        let defaults: Vec<Expr> = model
            .fields
            .iter()
            .map(|(x, ty)| {
                let zero = match ty.kind {
                    TypeKind::Bool => Expr {
                        kind: ExprKind::BoolLit(false),
                        span,
                    },
                    _ => int(0, span),
                };
                Expr::binary(BinaryOp::Eq, this_field(x), zero)
            })
            .collect();
        // `new M()`: the value and `Perm`'s token only.
        let mut ensures = perms(&["", "P"]);
        ensures.extend(defaults);
        members.push(method(
            &class.name.name,
            Vec::new(),
            vec![ClauseKind::Ensures(star(ensures, span))],
            true,
        ));
        // The process state: an abstract predicate instance per (fraction, process).
        members.push(Member {
            gpuopts: Vec::new(),
            contract: Contract::default(),
            kind: MemberKind::Method(Method {
                modifiers: Vec::new(),
                return_type: Some(Type {
                    kind: TypeKind::Resource,
                    span,
                }),
                name: Ident {
                    name: "state$".into(),
                    span,
                },
                type_params: Vec::new(),
                params: vec![
                    param(TypeKind::Frac, "p", span),
                    param(TypeKind::Int, "code", span),
                ],
                body: MethodBody::Abstract,
                span,
                is_run: false,
                model_member: None,
            }),
            span,
        });
        let one = || int(1, span);
        for (m, code) in &self.creates {
            if *m != class.name.name {
                continue;
            }
            let seq = self.sequence(*code);
            // The process's relation from the current values (`\old(this.x)`) to the final ones
            // (`this.x$H`); only single actions and `empty` so far.
            let relation: Vec<Expr> = match &seq[..] {
                [] => model
                    .fields
                    .iter()
                    .map(|(x, _)| {
                        Expr::binary(
                            BinaryOp::Eq,
                            this_field(&format!("{x}$H")),
                            Expr {
                                kind: ExprKind::Old(Box::new(this_field(x))),
                                span,
                            },
                        )
                    })
                    .collect(),
                [a] => {
                    let action = &model.actions[a];
                    let now = |x: &str, _: Span| this_field(&format!("{x}$H"));
                    let old = |x: &str, _: Span| Expr {
                        kind: ExprKind::Old(Box::new(this_field(x))),
                        span,
                    };
                    let mut out: Vec<Expr> = action
                        .ensures
                        .iter()
                        .map(|e| over_fields(e, &all_fields, &now, &old))
                        .collect();
                    for (x, _) in &model.fields {
                        if !action.modifies.contains(x) {
                            out.push(Expr::binary(
                                BinaryOp::Eq,
                                this_field(&format!("{x}$H")),
                                old(x, span),
                            ));
                        }
                    }
                    out
                }
                _ => continue,
            };
            let mut ensures = perms(&["H"]);
            ensures.push(state(one(), *code));
            ensures.extend(relation);
            members.push(method(
                &format!("create${code}"),
                Vec::new(),
                vec![
                    ClauseKind::Requires(star(perms(&["", "P"]), span)),
                    ClauseKind::Ensures(star(ensures, span)),
                ],
                false,
            ));
        }
        // destroy: `state(1, empty)` and every `HPerm` back to `Perm`, at the final values.
        let mut requires = vec![state(one(), 0)];
        requires.extend(perms(&["H"]));
        let mut ensures = perms(&["", "P"]);
        for (x, _) in &model.fields {
            ensures.push(Expr::binary(
                BinaryOp::Eq,
                this_field(x),
                Expr {
                    kind: ExprKind::Old(Box::new(this_field(&format!("{x}$H")))),
                    span,
                },
            ));
        }
        members.push(method(
            "destroy$",
            Vec::new(),
            vec![
                ClauseKind::Requires(star(requires, span)),
                ClauseKind::Ensures(star(ensures, span)),
            ],
            false,
        ));
        let frac_param = || param(TypeKind::Frac, "p", span);
        let p = || name_expr("p", span);
        for (m, a, rest) in &self.actions {
            if *m != class.name.name {
                continue;
            }
            let action = &model.actions[a];
            // The code of `a * rest`.
            let rest_seq = self.sequence(*rest);
            let mut seq = vec![a.clone()];
            seq.extend(rest_seq);
            let Some(code) = self.codes.get(&(class.name.name.clone(), seq)) else {
                continue;
            };
            let held = |x: &str| perm(this_field(&format!("{x}$H")), write(span));
            let mut requires = vec![state(p(), *code)];
            requires.extend(action.modifies.iter().map(|x| held(x)));
            let mut ensures: Vec<Expr> = action.modifies.iter().map(|x| held(x)).collect();
            for x in &action.modifies {
                ensures.push(Expr::binary(
                    BinaryOp::Eq,
                    this_field(&format!("{x}$H")),
                    Expr {
                        kind: ExprKind::Old(Box::new(this_field(&format!("{x}$H")))),
                        span,
                    },
                ));
                ensures.push(perm(this_field(x), write(span)));
                ensures.push(perm(this_field(&format!("{x}$A")), write(span)));
            }
            members.push(method(
                &format!("begin${a}${rest}"),
                vec![frac_param()],
                vec![
                    ClauseKind::Requires(star(requires, span)),
                    ClauseKind::Ensures(star(ensures, span)),
                ],
                false,
            ));
            let mut requires = Vec::new();
            for x in &action.modifies {
                requires.push(perm(this_field(x), write(span)));
                requires.push(perm(this_field(&format!("{x}$A")), write(span)));
            }
            members.push(method(
                &format!("end${a}${rest}"),
                vec![frac_param()],
                vec![
                    ClauseKind::Requires(star(requires, span)),
                    ClauseKind::Ensures(state(p(), *rest)),
                ],
                false,
            ));
        }
        Class {
            contract: Contract::default(),
            name: class.name.clone(),
            members,
            span: class.span,
            is_model: false,
        }
    }
}

/// `m.x` → `m.x$tag` for the model's fields `x`, `m` the model object.
fn rewrite_fields(e: &mut Expr, m: &Expr, fields: &BTreeSet<String>, tag: &str) {
    if let ExprKind::Field { base, name } = &mut e.kind {
        if same_name(base, m) && fields.contains(&name.name) {
            name.name = format!("{}${tag}", name.name);
            return;
        }
    }
    e.for_each_child_mut(&mut |c| rewrite_fields(c, m, fields, tag));
}

fn same_name(a: &Expr, b: &Expr) -> bool {
    matches!((&a.kind, &b.kind), (ExprKind::Name(x), ExprKind::Name(y)) if x.name == y.name)
}
