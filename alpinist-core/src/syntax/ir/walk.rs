//! Statement walkers shared by every stage (verification, transformations, analyses), next to
//! the expression walkers of [`Expr`]: no stage keeps its own copy of "which statements are
//! inside this one" or "which locals may this one assign".
//!
//! Invariant: each walker matches every [`StmtKind`] explicitly (no `_ =>` arm), so a new
//! statement kind does not compile until every walker has been told what it contains.

use super::{
    Block, Class, ClauseKind, Contract, Decreases, Expr, ExprKind, Ident, Item, Member, MemberKind,
    Method, MethodBody, Modifier, Program, Span, Type,
};
use super::{Stmt, StmtKind};

/// A local variable a statement may assign: its name and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssignedLocal {
    pub name: String,
    /// The assignment (the statement, the `then { r = y; }` item, or the declared variable).
    pub span: Span,
}

/// The statements directly inside a statement, shared by [`Stmt::children`] and
/// [`Stmt::children_mut`] (`$iter`: `iter` or `iter_mut`; `$deref`: `as_deref` or
/// `as_deref_mut`; `mut` for the mutable one).
macro_rules! stmt_children {
    ($s:expr, $iter:ident, $deref:ident $(, $m:tt)?) => {
        match & $($m)* $s.kind {
            StmtKind::If {
                then_branch,
                else_branch,
                ..
            } => std::iter::once(& $($m)* **then_branch)
                .chain(else_branch.$deref())
                .collect(),
            StmtKind::While { body, .. } => vec![body],
            StmtKind::For {
                init, update, body, ..
            } => init
                .$deref()
                .into_iter()
                .chain([& $($m)* **body])
                .chain(update.$deref())
                .collect(),
            StmtKind::Block(b) => b.stmts.$iter().collect(),
            StmtKind::Par(group) => group
                .blocks
                .$iter()
                .flat_map(|b| & $($m)* b.body.stmts)
                .collect(),
            StmtKind::Barrier(b) => b.body.stmts.$iter().collect(),
            StmtKind::Ghost(g) => vec![g],
            StmtKind::Invariant { body, .. }
            | StmtKind::Atomic { body, .. }
            | StmtKind::Action { body, .. } => body.stmts.$iter().collect(),
            StmtKind::LocalDecl { .. }
            | StmtKind::Assign { .. }
            | StmtKind::Increment(_)
            | StmtKind::Decrement(_)
            | StmtKind::Expr(_)
            | StmtKind::Return(_)
            | StmtKind::Assert(_)
            | StmtKind::Assume(_)
            | StmtKind::Inhale(_)
            | StmtKind::Exhale(_)
            | StmtKind::Refute(_)
            | StmtKind::Lock(_)
            | StmtKind::Unlock(_)
            | StmtKind::Fork(_)
            | StmtKind::Join(_)
            | StmtKind::Commit(_)
            | StmtKind::Wait(_)
            | StmtKind::Notify(_)
            | StmtKind::Fold(_)
            | StmtKind::Unfold(_)
            | StmtKind::GpuOpt(_)
            | StmtKind::Goto(_)
            | StmtKind::Label(_) => Vec::new(),
        }
    };
}

/// The expressions written directly in a statement, shared by [`Stmt::for_each_expr`] and
/// [`Stmt::for_each_expr_mut`] (`$iter`: `iter` or `iter_mut`; `$as_ref`: `as_ref` or
/// `as_mut`; `mut` for the mutable one).
macro_rules! stmt_exprs {
    ($s:expr, $f:ident, $iter:ident, $as_ref:ident $(, $m:tt)?) => {
        match & $($m)* $s.kind {
            StmtKind::LocalDecl { vars, .. } => {
                vars.$iter().filter_map(|v| v.init.$as_ref()).for_each($f)
            }
            StmtKind::Assign { target, value } => {
                $f(target);
                $f(value);
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
            | StmtKind::Unfold(e) => $f(e),
            StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => $f(cond),
            StmtKind::For { cond, .. } => {
                if let Some(c) = cond {
                    $f(c);
                }
            }
            StmtKind::Return(value) => {
                if let Some(v) = value {
                    $f(v);
                }
            }
            StmtKind::Par(group) => {
                for it in group.blocks.$iter().flat_map(|b| & $($m)* b.iters) {
                    $f(& $($m)* it.lo);
                    $f(& $($m)* it.hi);
                }
            }
            StmtKind::Invariant { inv, .. } => $f(inv),
            StmtKind::Action { header, .. } => {
                $f(& $($m)* header.model);
                $f(& $($m)* header.fraction);
                $f(& $($m)* header.rest);
                $f(& $($m)* header.action);
                for (field, amount) in header.converts.$iter() {
                    $f(field);
                    $f(amount);
                }
            }
            StmtKind::Block(_)
            | StmtKind::Barrier(_)
            | StmtKind::Ghost(_)
            | StmtKind::Atomic { .. }
            | StmtKind::GpuOpt(_)
            | StmtKind::Goto(_)
            | StmtKind::Label(_) => {}
        }
    };
}

impl Stmt {
    /// The statements directly inside `self` (branches, a loop's body with a `for`'s init and
    /// update, block items, par and barrier bodies, the statement under `ghost`,
    /// `invariant`/`atomic` bodies), in execution order.
    pub fn children(&self) -> Vec<&Stmt> {
        stmt_children!(self, iter, as_deref)
    }

    /// Calls `f` on `self` and every statement nested in it, outermost first.
    pub fn visit<'a>(&'a self, f: &mut dyn FnMut(&'a Stmt)) {
        f(self);
        for c in self.children() {
            c.visit(f);
        }
    }

    /// Calls `f` on each expression written directly in `self` (not in nested statements nor
    /// in contracts): conditions, targets, values, initialisers, iterator bounds, asserted
    /// and folded assertions.
    pub fn for_each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        stmt_exprs!(self, f, iter, as_ref)
    }

    /// [`Stmt::children`], mutably.
    pub fn children_mut(&mut self) -> Vec<&mut Stmt> {
        stmt_children!(self, iter_mut, as_deref_mut, mut)
    }

    /// [`Stmt::for_each_expr`], mutably.
    pub fn for_each_expr_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        stmt_exprs!(self, f, iter_mut, as_mut, mut)
    }

    /// Every local variable `self` may assign, itself or in any statement nested in it, in
    /// source order (a name once per assignment): plain assignments and `++`/`--` of a
    /// name, declarations (a local declared inside gets a value there), and the targets of
    /// `then { r = y; }` on calls — in code, ghost code, `invariant`/`atomic` blocks, nested
    /// loops and par blocks alike. A bare field name written as `x = e` is listed too (the
    /// caller knows which names are locals). This is the one answer to "what may this
    /// statement assign": the loop havoc of `verify`, the loop shapes of `transform` and the
    /// `gpuopt` placement checks all ask it.
    pub fn assigned_locals(&self) -> Vec<AssignedLocal> {
        let mut out = Vec::new();
        self.visit(&mut |s| {
            match &s.kind {
                StmtKind::Assign { target, .. } => {
                    if let ExprKind::Name(id) = &target.kind {
                        out.push(AssignedLocal {
                            name: id.name.clone(),
                            span: s.span,
                        });
                    }
                }
                StmtKind::Increment(target) | StmtKind::Decrement(target) => {
                    if let ExprKind::Name(id) = &target.kind {
                        out.push(AssignedLocal {
                            name: id.name.clone(),
                            span: s.span,
                        });
                    }
                }
                StmtKind::LocalDecl { vars, .. } => {
                    for v in vars {
                        out.push(AssignedLocal {
                            name: v.name.name.clone(),
                            span: v.span,
                        });
                    }
                }
                StmtKind::Expr(_)
                | StmtKind::If { .. }
                | StmtKind::While { .. }
                | StmtKind::For { .. }
                | StmtKind::Block(_)
                | StmtKind::Return(_)
                | StmtKind::Par(_)
                | StmtKind::Barrier(_)
                | StmtKind::Assert(_)
                | StmtKind::Assume(_)
                | StmtKind::Inhale(_)
                | StmtKind::Exhale(_)
                | StmtKind::Refute(_)
                | StmtKind::Ghost(_)
                | StmtKind::Invariant { .. }
                | StmtKind::Atomic { .. }
                | StmtKind::Action { .. }
                | StmtKind::Lock(_)
                | StmtKind::Unlock(_)
                | StmtKind::Fork(_)
                | StmtKind::Join(_)
                | StmtKind::Commit(_)
                | StmtKind::Wait(_)
                | StmtKind::Notify(_)
                | StmtKind::Fold(_)
                | StmtKind::Unfold(_)
                | StmtKind::GpuOpt(_)
                | StmtKind::Goto(_)
                | StmtKind::Label(_) => {}
            }
            // Ghost results may be received wherever a call can stand.
            s.for_each_expr(&mut |e| {
                e.ghost_result_targets(&mut |target| {
                    out.push(AssignedLocal {
                        name: target.name.clone(),
                        span: target.span,
                    })
                })
            });
        });
        out
    }

    /// Whether `self` may assign the local `name` (see [`Stmt::assigned_locals`]).
    pub fn assigns(&self, name: &str) -> bool {
        self.assigned_locals().iter().any(|a| a.name == name)
    }
}

/// The expressions of a contract's clauses and `decreases` measures, shared by
/// [`Contract::for_each_expr`] and [`Contract::for_each_expr_mut`].
macro_rules! contract_exprs {
    ($c:expr, $f:expr, $iter:ident $(, $m:tt)?) => {
        for clause in $c.clauses.$iter() {
            match & $($m)* clause.kind {
                ClauseKind::Requires(e)
                | ClauseKind::Ensures(e)
                | ClauseKind::Context(e)
                | ClauseKind::ContextEverywhere(e)
                | ClauseKind::LoopInvariant(e)
                | ClauseKind::LockInvariant(e) => $f(e),
                ClauseKind::Decreases(Decreases::Measure(es)) => {
                    for e in es.$iter() {
                        $f(e);
                    }
                }
                ClauseKind::Decreases(Decreases::Assume)
                | ClauseKind::Given(_)
                | ClauseKind::Yields(_)
                | ClauseKind::Modifies(_)
                | ClauseKind::Accessible(_) => {}
            }
        }
    };
}

impl Contract {
    /// Calls `f` on every expression of the contract: its clauses and `decreases` measures.
    pub fn for_each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        contract_exprs!(self, f, iter)
    }

    /// [`Contract::for_each_expr`], mutably.
    pub fn for_each_expr_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        contract_exprs!(self, f, iter_mut, mut)
    }
}

/// The contracts written on a statement itself, shared by [`Stmt::own_contracts`] and
/// [`Stmt::own_contracts_mut`].
macro_rules! own_contracts {
    ($s:expr, $iter:ident $(, $m:tt)?) => {
        match & $($m)* $s.kind {
            StmtKind::While { contract, .. } | StmtKind::For { contract, .. } => vec![contract],
            StmtKind::Par(group) => group.blocks.$iter().map(|b| & $($m)* b.contract).collect(),
            StmtKind::Barrier(b) => vec![& $($m)* b.contract],
            StmtKind::LocalDecl { .. }
            | StmtKind::Assign { .. }
            | StmtKind::Increment(_)
            | StmtKind::Decrement(_)
            | StmtKind::Expr(_)
            | StmtKind::If { .. }
            | StmtKind::Block(_)
            | StmtKind::Return(_)
            | StmtKind::Assert(_)
            | StmtKind::Assume(_)
            | StmtKind::Inhale(_)
            | StmtKind::Exhale(_)
            | StmtKind::Refute(_)
            | StmtKind::Ghost(_)
            | StmtKind::Invariant { .. }
            | StmtKind::Atomic { .. }
            | StmtKind::Action { .. }
            | StmtKind::Lock(_)
            | StmtKind::Unlock(_)
            | StmtKind::Fork(_)
            | StmtKind::Join(_)
            | StmtKind::Commit(_)
            | StmtKind::Wait(_)
            | StmtKind::Notify(_)
            | StmtKind::Fold(_)
            | StmtKind::Unfold(_)
            | StmtKind::GpuOpt(_)
            | StmtKind::Goto(_)
            | StmtKind::Label(_) => Vec::new(),
        }
    };
}

impl Stmt {
    /// The contracts written on `self` itself (not on nested statements): a loop's invariants,
    /// each par block's thread contract, a barrier's contract.
    pub fn own_contracts(&self) -> Vec<&Contract> {
        own_contracts!(self, iter)
    }

    /// [`Stmt::own_contracts`], mutably.
    pub fn own_contracts_mut(&mut self) -> Vec<&mut Contract> {
        own_contracts!(self, iter_mut, mut)
    }

    /// Calls `f` on every expression in `self` and the statements nested in it, contracts
    /// included ([`Stmt::for_each_expr`] and each statement's own contracts).
    pub fn for_each_expr_deep(&self, f: &mut dyn FnMut(&Expr)) {
        self.visit(&mut |s| {
            s.for_each_expr(f);
            for c in s.own_contracts() {
                c.for_each_expr(f);
            }
        });
    }

    /// [`Stmt::for_each_expr_deep`], mutably.
    pub fn for_each_expr_deep_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        self.for_each_expr_mut(f);
        for c in self.own_contracts_mut() {
            c.for_each_expr_mut(f);
        }
        for child in self.children_mut() {
            child.for_each_expr_deep_mut(f);
        }
    }
}

impl Expr {
    /// Calls `f` on the caller's local of every `then { r = y; }` item (`r`) of the calls in
    /// `self`: the locals that receive ghost results.
    pub fn ghost_result_targets(&self, f: &mut dyn FnMut(&Ident)) {
        self.visit(&mut |e| {
            if let ExprKind::Call { yields, .. } = &e.kind {
                yields.iter().for_each(|g| f(&g.name));
            }
        });
    }
}

impl Member {
    /// Calls `f` on every expression of the member: its contract, and its body (statements
    /// with their own contracts, deep, or a function's expression).
    pub fn for_each_expr_deep(&self, f: &mut dyn FnMut(&Expr)) {
        self.contract.for_each_expr(f);
        if let MemberKind::Method(method) = &self.kind {
            match &method.body {
                MethodBody::Block(b) => b.stmts.iter().for_each(|s| s.for_each_expr_deep(f)),
                MethodBody::Expr(e) => f(e),
                MethodBody::Abstract => {}
            }
        }
    }

    /// [`Member::for_each_expr_deep`], mutably.
    pub fn for_each_expr_deep_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        self.contract.for_each_expr_mut(f);
        if let MemberKind::Method(method) = &mut self.kind {
            match &mut method.body {
                MethodBody::Block(b) => {
                    b.stmts.iter_mut().for_each(|s| s.for_each_expr_deep_mut(f))
                }
                MethodBody::Expr(e) => f(e),
                MethodBody::Abstract => {}
            }
        }
    }
}

impl Method {
    /// A pure function (`= expr;` body or `pure` modifier): it reads with its caller's
    /// permissions and moves none.
    pub fn is_function(&self) -> bool {
        matches!(self.body, MethodBody::Expr(_)) || self.modifiers.contains(&Modifier::Pure)
    }

    /// The type the body's first declaration of a local `name` gives it, at any depth.
    pub fn local_type(&self, name: &str) -> Option<&Type> {
        let MethodBody::Block(body) = &self.body else {
            return None;
        };
        let mut found = None;
        for s in &body.stmts {
            s.visit(&mut |s| {
                if let StmtKind::LocalDecl { ty, vars } = &s.kind {
                    if found.is_none() && vars.iter().any(|v| v.name.name == name) {
                        found = Some(ty);
                    }
                }
            });
        }
        found
    }
}

impl Program {
    /// Every member with its class (`None` at top level), in file order.
    pub fn members(&self) -> Vec<(Option<&Class>, &Member)> {
        let mut out = Vec::new();
        for item in &self.items {
            match item {
                Item::Class(c) => out.extend(c.members.iter().map(|m| (Some(c), m))),
                Item::Member(m) => out.push((None, m)),
            }
        }
        out
    }

    /// A copy of the program with `rewrite` applied to every method (with its member's
    /// contract), or `None`, without a copy, where no statement is `wanted`: the checker's
    /// rewrites before verification (`verify/vector.rs`, `verify/iteration.rs`).
    pub fn rewritten(
        &self,
        wanted: impl Fn(&Stmt) -> bool,
        mut rewrite: impl FnMut(&Contract, &mut Method),
    ) -> Option<Program> {
        let mut any = false;
        self.visit_stmts(&mut |s| any |= wanted(s));
        if !any {
            return None;
        }
        let mut out = self.clone();
        for member in out.members_mut() {
            if let MemberKind::Method(method) = &mut member.kind {
                rewrite(&member.contract, method);
            }
        }
        Some(out)
    }

    /// [`Program::members`] without their classes, mutably.
    pub fn members_mut(&mut self) -> Vec<&mut Member> {
        let mut out = Vec::new();
        for item in &mut self.items {
            match item {
                Item::Class(c) => out.extend(c.members.iter_mut()),
                Item::Member(m) => out.push(m),
            }
        }
        out
    }

    /// The block bodies of every method, in file order.
    pub fn method_bodies(&self) -> Vec<&Block> {
        self.members()
            .into_iter()
            .filter_map(|(_, m)| match &m.kind {
                MemberKind::Method(Method {
                    body: MethodBody::Block(b),
                    ..
                }) => Some(b),
                _ => None,
            })
            .collect()
    }

    /// Calls `f` on every statement of every method body, outermost first.
    pub fn visit_stmts<'a>(&'a self, f: &mut dyn FnMut(&'a Stmt)) {
        for body in self.method_bodies() {
            body.stmts.iter().for_each(|s| s.visit(f));
        }
    }

    /// Calls `f` on every statement list (blocks, par bodies, barrier bodies, `invariant` and
    /// `atomic` bodies) of every method, outermost first; `f` may splice the list.
    pub fn visit_stmt_lists_mut(&mut self, f: &mut dyn FnMut(&mut Vec<Stmt>)) {
        fn list(stmts: &mut Vec<Stmt>, f: &mut dyn FnMut(&mut Vec<Stmt>)) {
            f(stmts);
            for s in stmts.iter_mut() {
                stmt(s, f);
            }
        }
        fn stmt(s: &mut Stmt, f: &mut dyn FnMut(&mut Vec<Stmt>)) {
            match &mut s.kind {
                StmtKind::If {
                    then_branch,
                    else_branch,
                    ..
                } => {
                    stmt(then_branch, f);
                    if let Some(e) = else_branch {
                        stmt(e, f);
                    }
                }
                StmtKind::While { body, .. } => stmt(body, f),
                StmtKind::For {
                    init, update, body, ..
                } => {
                    for s in [init, update].into_iter().flatten() {
                        stmt(s, f);
                    }
                    stmt(body, f);
                }
                StmtKind::Block(b) => list(&mut b.stmts, f),
                StmtKind::Par(group) => group
                    .blocks
                    .iter_mut()
                    .for_each(|b| list(&mut b.body.stmts, f)),
                StmtKind::Barrier(b) => list(&mut b.body.stmts, f),
                StmtKind::Ghost(g) => stmt(g, f),
                StmtKind::Invariant { body, .. }
                | StmtKind::Atomic { body, .. }
                | StmtKind::Action { body, .. } => list(&mut body.stmts, f),
                StmtKind::LocalDecl { .. }
                | StmtKind::Assign { .. }
                | StmtKind::Increment(_)
                | StmtKind::Decrement(_)
                | StmtKind::Expr(_)
                | StmtKind::Return(_)
                | StmtKind::Assert(_)
                | StmtKind::Assume(_)
                | StmtKind::Inhale(_)
                | StmtKind::Exhale(_)
                | StmtKind::Refute(_)
                | StmtKind::Lock(_)
                | StmtKind::Unlock(_)
                | StmtKind::Fork(_)
                | StmtKind::Join(_)
                | StmtKind::Commit(_)
                | StmtKind::Wait(_)
                | StmtKind::Notify(_)
                | StmtKind::Fold(_)
                | StmtKind::Unfold(_)
                | StmtKind::GpuOpt(_)
                | StmtKind::Goto(_)
                | StmtKind::Label(_) => {}
            }
        }
        for m in self.members_mut() {
            if let MemberKind::Method(method) = &mut m.kind {
                if let MethodBody::Block(b) = &mut method.body {
                    list(&mut b.stmts, f);
                }
            }
        }
    }
}

/// The types written in a statement itself (not in nested statements or expressions).
fn own_types_mut(s: &mut Stmt) -> Vec<&mut Type> {
    match &mut s.kind {
        StmtKind::LocalDecl { ty, .. } => vec![ty],
        StmtKind::Par(group) => group
            .blocks
            .iter_mut()
            .flat_map(|b| b.iters.iter_mut().map(|it| &mut it.ty))
            .collect(),
        StmtKind::Assign { .. }
        | StmtKind::Increment(_)
        | StmtKind::Decrement(_)
        | StmtKind::Expr(_)
        | StmtKind::If { .. }
        | StmtKind::While { .. }
        | StmtKind::For { .. }
        | StmtKind::Block(_)
        | StmtKind::Return(_)
        | StmtKind::Assert(_)
        | StmtKind::Assume(_)
        | StmtKind::Inhale(_)
        | StmtKind::Exhale(_)
        | StmtKind::Refute(_)
        | StmtKind::Ghost(_)
        | StmtKind::Barrier(_)
        | StmtKind::Invariant { .. }
        | StmtKind::Atomic { .. }
        | StmtKind::Action { .. }
        | StmtKind::Lock(_)
        | StmtKind::Unlock(_)
        | StmtKind::Fork(_)
        | StmtKind::Join(_)
        | StmtKind::Commit(_)
        | StmtKind::Wait(_)
        | StmtKind::Notify(_)
        | StmtKind::Fold(_)
        | StmtKind::Unfold(_)
        | StmtKind::GpuOpt(_)
        | StmtKind::Goto(_)
        | StmtKind::Label(_) => Vec::new(),
    }
}

impl Expr {
    /// Calls `f` on every type written in `self` and its subexpressions: type arguments,
    /// `new T[n]`, `\let` and binder types, collection and map literal types. Nested types
    /// (`seq<T>`'s `T`) are `f`'s business.
    pub fn for_each_type_mut(&mut self, f: &mut dyn FnMut(&mut Type)) {
        match &mut self.kind {
            ExprKind::Call { type_args, .. } => type_args.iter_mut().for_each(&mut *f),
            ExprKind::NewArray { elem, .. } => f(elem),
            ExprKind::Let { ty, .. } => f(ty),
            ExprKind::Collection { elem: Some(t), .. } => f(t),
            ExprKind::MapLit { key, value, .. } => {
                f(key);
                f(value);
            }
            ExprKind::Tuple {
                types: Some(types), ..
            } => {
                f(&mut types.0);
                f(&mut types.1);
            }
            ExprKind::Quantifier(q) => q.binders.iter_mut().for_each(|b| f(&mut b.ty)),
            _ => {}
        }
        self.for_each_child_mut(&mut |c| c.for_each_type_mut(f));
    }
}

impl Contract {
    /// Calls `f` on every type written in the contract: `given`/`yields` parameters and the
    /// types inside its expressions.
    pub fn for_each_type_mut(&mut self, f: &mut dyn FnMut(&mut Type)) {
        for c in &mut self.clauses {
            if let ClauseKind::Given(p) | ClauseKind::Yields(p) = &mut c.kind {
                f(&mut p.ty);
            }
        }
        self.for_each_expr_mut(&mut |e| e.for_each_type_mut(f));
    }
}

impl Stmt {
    /// Calls `f` on every type written in `self` and the statements nested in it, contracts
    /// and expressions included: the one answer to "which types does this code write" (a
    /// generic method's instance substitutes its type parameters through it).
    pub fn for_each_type_mut(&mut self, f: &mut dyn FnMut(&mut Type)) {
        own_types_mut(self).into_iter().for_each(&mut *f);
        self.for_each_expr_mut(&mut |e| e.for_each_type_mut(f));
        for c in self.own_contracts_mut() {
            c.for_each_type_mut(f);
        }
        for child in self.children_mut() {
            child.for_each_type_mut(f);
        }
    }
}

impl Member {
    /// Calls `f` on every type written in the member: a field's type; a method's return and
    /// parameter types, its contract's and its body's.
    pub fn for_each_type_mut(&mut self, f: &mut dyn FnMut(&mut Type)) {
        self.contract.for_each_type_mut(f);
        match &mut self.kind {
            MemberKind::Field(field) => f(&mut field.ty),
            MemberKind::Method(method) => {
                if let Some(t) = &mut method.return_type {
                    f(t);
                }
                method.params.iter_mut().for_each(|p| f(&mut p.ty));
                match &mut method.body {
                    MethodBody::Block(b) => b.stmts.iter_mut().for_each(|s| s.for_each_type_mut(f)),
                    MethodBody::Expr(e) => e.for_each_type_mut(f),
                    MethodBody::Abstract => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::syntax::{parse, MemberKind, MethodBody, Program};

    fn body_of(program: &Program, name: &str) -> Vec<String> {
        let mut names = Vec::new();
        for item in &program.items {
            let crate::syntax::Item::Class(c) = item else {
                continue;
            };
            for m in &c.members {
                if let MemberKind::Method(m) = &m.kind {
                    if let (true, MethodBody::Block(b)) = (m.name.name == name, &m.body) {
                        for s in &b.stmts {
                            names.extend(s.assigned_locals().into_iter().map(|a| a.name));
                        }
                    }
                }
            }
        }
        names
    }

    #[test]
    fn assigned_locals_sees_every_way_of_writing_a_local() {
        let src = "class C {\n  int f;\n  yields int out;\n  void g(int x) { out = x; }\n  \
                   void m(int n) {\n    int a = 0;\n    int b = 0;\n    int c = 0;\n    \
                   int d = 0;\n    int e = 0;\n    int h = 0;\n    int k = 0;\n    \
                   invariant inv(Perm(f, write)) {\n      atomic(inv) { a++; }\n      \
                   b = 1;\n    }\n    ghost g(1) then { c = out; };\n    \
                   while (n > 0) { if (n > 1) { d--; } else { int q = g(2) then { e = out; }; } }\n    \
                   par p(int t = 0 .. n) { int w = 0; w = 1; }\n    \
                   for (h = 0; h < n; h++) { f = 3; }\n    k = k;\n  }\n}\n";
        let parsed = parse(src).unwrap_or_else(|e| panic!("{e:?}"));
        let names = body_of(&parsed.program, "m");
        for expected in ["a", "b", "c", "d", "e", "q", "w", "h", "k"] {
            assert!(
                names.iter().any(|n| n == expected),
                "{expected} missing: {names:?}"
            );
        }
        // `f = 3` is a bare field name: listed, the caller knows it is no local; `out` is the
        // callee's yields, never written by the caller.
        assert!(!names.iter().any(|n| n == "out"), "{names:?}");
        assert!(names.iter().any(|n| n == "f"), "{names:?}");
    }
}
