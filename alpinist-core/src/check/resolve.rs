//! The walker: resolves every name in method bodies and contracts and types every expression.
//!
//! One pass, one scope stack. Errors are collected, never thrown: an expression that failed
//! gets [`Ty::Unknown`], which is compatible with everything, so one mistake is one error.

use std::collections::{HashMap, HashSet};

use crate::syntax::*;

use super::effects::{allocated_levels, EffectLog, Root};
use super::env::{ClassId, MethodKind, MethodSig, ParamInfo, Tables, Ty};
use super::error::{CheckError, CheckWarning};
use super::gpuopt;
use super::types::{arith, assignable, comparable, is_assertion, join};

/// Where a variable comes from: decides whether it may be assigned, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum VarKind {
    Local,
    Param,
    /// `given`/`yields` ghost parameters: assignable like parameters.
    Ghost,
    ParIter,
    /// Quantifier and `\let` binders: expressions only, never assigned.
    Binder,
}

struct Var<'a> {
    name: &'a str,
    ty: Ty,
    kind: VarKind,
    /// How many par blocks enclose the declaration: a write from a deeper par is a write to a
    /// variable shared by all threads.
    par_depth: usize,
    /// Declared in ghost code, or a `given`/`yields` parameter: ghost code may assign it.
    ghost: bool,
    span: Span,
}

pub(crate) struct Checker<'a> {
    pub tables: &'a Tables,
    pub errors: Vec<CheckError>,
    pub warnings: Vec<CheckWarning>,
    vars: Vec<Var<'a>>,
    scope_starts: Vec<usize>,
    class: Option<ClassId>,
    method: Option<&'a MethodSig>,
    /// The type parameters of the generic method being checked (usually none).
    type_params: Vec<String>,
    /// Labels of the enclosing par blocks, innermost last (`None` for an unlabelled one).
    pars: Vec<Option<&'a Ident>>,
    invariants: Vec<&'a str>,
    /// `Some(context)` where only pure functions and predicates may be called.
    pure_context: Option<&'static str>,
    /// `Some(return type)` while checking a postcondition of a method with a result.
    result_ty: Option<Ty>,
    /// Checking a `requires`, `ensures` or `context` of a routine: where `AutoValue` may stand.
    auto_value_allowed: bool,
    /// Inside ghost code: a `ghost` statement, a `with` value or a `then` assignment.
    ghost: bool,
    /// Facts for the checks of ghost code that need the whole program (`effects.rs`).
    pub effects: EffectLog,
    /// The declarations later stages rename (overloads, and names other scopes declare too),
    /// by the span of their name: a call that reaches one is recorded in `renamed_calls`.
    pub renamed: HashSet<Span>,
    /// Calls of a declaration in `renamed`: the span of the name at the call → the span of
    /// the chosen declaration's name (see [`crate::check::Overloads`]).
    pub renamed_calls: HashMap<Span, Span>,
    /// Calls of a static routine through its class's name (`Seq.empty()`), by the span of
    /// the routine's name at the call.
    pub class_receivers: HashSet<Span>,
}

/// The value of a positive integer literal (saturated to `u64::MAX`), or `None` for anything
/// else: zero, a negation, a name, an expression.
pub(crate) fn positive_literal(e: &Expr) -> Option<u64> {
    match &e.kind {
        ExprKind::IntLit(n) if n.bits() > 64 => Some(u64::MAX),
        ExprKind::IntLit(n) if n.bits() > 0 => n.to_u64_digits().first().copied(),
        _ => None,
    }
}

impl<'a> Checker<'a> {
    pub fn new(tables: &'a Tables) -> Self {
        Checker {
            tables,
            errors: Vec::new(),
            warnings: Vec::new(),
            vars: Vec::new(),
            scope_starts: Vec::new(),
            class: None,
            method: None,
            type_params: Vec::new(),
            pars: Vec::new(),
            invariants: Vec::new(),
            pure_context: None,
            auto_value_allowed: false,
            result_ty: None,
            ghost: false,
            effects: EffectLog::default(),
            renamed: HashSet::new(),
            renamed_calls: HashMap::new(),
            class_receivers: HashSet::new(),
        }
    }

    pub(crate) fn err(&mut self, e: CheckError) {
        self.errors.push(e);
    }

    fn show(&self, t: &Ty) -> String {
        self.tables.show(t)
    }

    // ---- scopes --------------------------------------------------------------------------

    pub(crate) fn push_scope(&mut self) {
        self.scope_starts.push(self.vars.len());
    }

    pub(crate) fn pop_scope(&mut self) {
        let start = self.scope_starts.pop().unwrap_or(0);
        self.vars.truncate(start);
    }

    fn lookup(&self, name: &str) -> Option<&Var<'a>> {
        self.vars.iter().rev().find(|v| v.name == name)
    }

    /// Makes `name` visible, read-only, in the current scope (for annotation expressions).
    pub(crate) fn declare_readonly(&mut self, name: &'a Ident, ty: Ty) {
        self.declare(name, ty, VarKind::Binder);
    }

    fn declare(&mut self, name: &'a Ident, ty: Ty, kind: VarKind) {
        let start = self.scope_starts.last().copied().unwrap_or(0);
        if let Some(first) = self.vars[start..].iter().find(|v| v.name == name.name) {
            self.errors.push(CheckError::Duplicate {
                name: name.name.clone(),
                span: name.span,
                first: first.span,
            });
        } else if kind == VarKind::Local {
            if let Some(outer) = self.lookup(&name.name) {
                if matches!(
                    outer.kind,
                    VarKind::Local | VarKind::Param | VarKind::ParIter
                ) {
                    self.warnings.push(CheckWarning::Shadowing {
                        name: name.name.clone(),
                        span: name.span,
                        shadowed: outer.span,
                    });
                }
            }
        }
        self.vars.push(Var {
            name: &name.name,
            ty,
            kind,
            par_depth: self.pars.len(),
            ghost: self.ghost || kind == VarKind::Ghost,
            span: name.span,
        });
    }

    pub(crate) fn resolve_type(&mut self, t: &'a Type) -> Ty {
        let ty = self
            .tables
            .resolve_type_in(&t.kind, &self.type_params, &mut self.errors);
        self.check_type_sizes(t);
        ty
    }

    /// `int[N]`: the size is informative, but its names must exist.
    fn check_type_sizes(&mut self, t: &'a Type) {
        match &t.kind {
            TypeKind::Array { elem, size } => {
                if let Some(size) = size {
                    self.expect(size, &Ty::Int, "array size");
                }
                self.check_type_sizes(elem);
            }
            TypeKind::Seq(e) | TypeKind::Set(e) | TypeKind::Bag(e) | TypeKind::Option(e) => {
                self.check_type_sizes(e)
            }
            TypeKind::Map(k, v) | TypeKind::Tuple(k, v) => {
                self.check_type_sizes(k);
                self.check_type_sizes(v);
            }
            _ => {}
        }
    }

    // ---- members -------------------------------------------------------------------------

    /// Clauses written before a class (1.x `lock_invariant`): they speak about its fields.
    pub fn check_class_contract(&mut self, contract: &'a Contract, class: ClassId) {
        self.class = Some(class);
        for clause in &contract.clauses {
            self.check_clause(clause, ClauseSite::Class);
        }
        self.class = None;
    }

    pub fn check_member(&mut self, member: &'a Member, class: Option<ClassId>) {
        self.class = class;
        match &member.kind {
            MemberKind::Field(field) => {
                for opt in &member.gpuopts {
                    self.err(CheckError::GpuOptOnField {
                        kind: gpuopt::kind_name(&opt.kind),
                        span: opt.span,
                    });
                }
                self.check_type_sizes(&field.ty);
                // A parser may attach class-level clauses (1.x `lock_invariant`) here.
                for clause in &member.contract.clauses {
                    self.check_clause(clause, ClauseSite::Field);
                }
            }
            MemberKind::Method(method) => {
                let sig = self.signature_of(method, class);
                self.check_method(member, method, sig);
            }
        }
        self.class = None;
    }

    fn signature_of(&self, method: &Method, class: Option<ClassId>) -> Option<&'a MethodSig> {
        let tables = self.tables;
        let is_this = |s: &&MethodSig| s.span == method.name.span && s.name == method.name.name;
        // The name index finds it at once; a duplicate or constructor needs the scan.
        let (indexed, all, ctors): (Option<&'a MethodSig>, &'a [MethodSig], &'a [MethodSig]) =
            match class {
                Some(c) => {
                    let info = tables.class(c);
                    (
                        info.method(&method.name.name),
                        &info.methods,
                        &info.constructors,
                    )
                }
                None => (tables.global(&method.name.name), &tables.globals, &[]),
            };
        indexed
            .filter(is_this)
            .or_else(|| all.iter().find(is_this))
            .or_else(|| ctors.iter().find(is_this))
    }

    fn check_method(&mut self, member: &'a Member, method: &'a Method, sig: Option<&'a MethodSig>) {
        self.method = sig;
        self.ghost = false;
        self.type_params.clear();
        for (i, t) in method.type_params.iter().enumerate() {
            if let Some(first) = method.type_params[..i].iter().find(|u| u.name == t.name) {
                self.err(CheckError::Duplicate {
                    name: t.name.clone(),
                    span: t.span,
                    first: first.span,
                });
            }
            self.type_params.push(t.name.clone());
        }
        self.push_scope();
        for p in &method.params {
            let ty = self
                .tables
                .resolve_type_in(&p.ty.kind, &self.type_params, &mut Vec::new());
            self.declare(&p.name, ty, VarKind::Param);
        }
        for clause in &member.contract.clauses {
            if let ClauseKind::Given(p) | ClauseKind::Yields(p) = &clause.kind {
                let ty =
                    self.tables
                        .resolve_type_in(&p.ty.kind, &self.type_params, &mut Vec::new());
                self.declare(&p.name, ty, VarKind::Ghost);
            }
        }
        // Types are resolved once more with error reporting, now that sizes like
        // `int[N] a` can see every parameter.
        for p in &method.params {
            self.resolve_type(&p.ty);
        }
        for clause in &member.contract.clauses {
            if let ClauseKind::Given(p) | ClauseKind::Yields(p) = &clause.kind {
                self.resolve_type(&p.ty);
            }
        }
        if let Some(t) = &method.return_type {
            self.resolve_type(t);
        }

        gpuopt::check_method_opts(self, member, method);

        let return_type = sig.map_or(Ty::Unknown, |s| s.return_type.clone());
        let kind = sig.map_or(MethodKind::Method, |s| s.kind);
        for clause in &member.contract.clauses {
            if let ClauseKind::Ensures(_) = clause.kind {
                if return_type != Ty::Void {
                    self.result_ty = Some(return_type.clone());
                }
            }
            self.auto_value_allowed = matches!(
                clause.kind,
                ClauseKind::Requires(_) | ClauseKind::Ensures(_) | ClauseKind::Context(_)
            );
            self.check_clause(clause, ClauseSite::Method);
            self.auto_value_allowed = false;
            self.result_ty = None;
            if kind == MethodKind::Constructor {
                if let ClauseKind::Requires(e) | ClauseKind::Context(e) = &clause.kind {
                    self.constructor_precondition(e);
                }
            }
        }
        self.check_one_decreases(&member.contract.clauses);
        self.check_auto_values(&member.contract.clauses, kind);

        if kind.is_pure() {
            self.pure_context = Some("a pure function");
        }
        match &method.body {
            MethodBody::Abstract => {}
            MethodBody::Block(block) => {
                self.check_labels(block);
                self.check_block(block);
            }
            MethodBody::Expr(e) => {
                let what = if kind == MethodKind::Predicate {
                    "predicate body"
                } else {
                    "function body"
                };
                self.expect(e, &return_type, what);
            }
        }
        self.pure_context = None;
        self.pop_scope();
        self.method = None;
        self.type_params.clear();
    }

    /// Every `goto` names exactly one `label` of its method (where the label stands is the
    /// checker's question: `verify` follows jumps to labels of the method's own body).
    fn check_labels(&mut self, body: &'a Block) {
        let mut labels: Vec<&Ident> = Vec::new();
        let mut gotos: Vec<&Ident> = Vec::new();
        for stmt in &body.stmts {
            stmt.visit(&mut |s| match &s.kind {
                StmtKind::Label(l) => labels.push(l),
                StmtKind::Goto(l) => gotos.push(l),
                _ => {}
            });
        }
        for (i, l) in labels.iter().enumerate() {
            if let Some(first) = labels[..i].iter().find(|m| m.name == l.name) {
                self.err(CheckError::LabelTwice {
                    name: l.name.clone(),
                    span: l.span,
                    first: first.span,
                });
            }
        }
        for g in gotos {
            if !labels.iter().any(|l| l.name == g.name) {
                self.err(CheckError::UnknownLabel {
                    name: g.name.clone(),
                    span: g.span,
                });
            }
        }
    }

    /// Contract clauses are assertions: booleans or resources. `given`/`yields` were declared
    /// by the caller.
    fn check_clause(&mut self, clause: &'a Clause, site: ClauseSite) {
        if !site.allows(&clause.kind) {
            self.err(CheckError::ClauseMisplaced {
                clause: clause.kind.keyword(),
                site: site.describe(),
                span: clause.span,
            });
        }
        let saved = self.pure_context.replace("a specification");
        match &clause.kind {
            ClauseKind::Requires(e)
            | ClauseKind::Ensures(e)
            | ClauseKind::Context(e)
            | ClauseKind::ContextEverywhere(e)
            | ClauseKind::LoopInvariant(e)
            | ClauseKind::LockInvariant(e) => self.expect(e, &Ty::Resource, "contract clause"),
            // Models are refused before this (`model_constructs`).
            ClauseKind::Given(_)
            | ClauseKind::Yields(_)
            | ClauseKind::Modifies(_)
            | ClauseKind::Accessible(_) => {}
            ClauseKind::Decreases(Decreases::Measure(measure)) => {
                for e in measure {
                    self.expect(e, &Ty::Int, "termination measure");
                }
            }
            ClauseKind::Decreases(Decreases::Assume) => {}
        }
        self.pure_context = saved;
    }

    /// A routine's `AutoValue`s: none beside another permission of the same location in the
    /// precondition or in the postcondition (VerCors' `combinedAutoValue`: which of the two
    /// would the caller's part be?), and a method's postcondition gives back only what its
    /// precondition borrowed (a function's `AutoValue` is `Value`, and it has no
    /// postcondition permissions).
    fn check_auto_values(&mut self, clauses: &'a [Clause], kind: MethodKind) {
        let atoms = |pre: bool| {
            let mut found = Vec::new();
            for clause in clauses {
                let e = match &clause.kind {
                    ClauseKind::Requires(e) if pre => e,
                    ClauseKind::Ensures(e) if !pre => e,
                    ClauseKind::Context(e) => e,
                    _ => continue,
                };
                e.visit(&mut |x| {
                    if let ExprKind::Builtin { op, args } = &x.kind {
                        let location = matches!(
                            op,
                            Builtin::Perm
                                | Builtin::PointsTo
                                | Builtin::Value
                                | Builtin::AutoValue
                                | Builtin::HPerm
                                | Builtin::APerm
                        );
                        if let (true, Some(loc)) = (location, args.first()) {
                            found.push((*op, print_expr(loc.peel_triggers()), x.span));
                        }
                    }
                });
            }
            found
        };
        let (pre, post) = (atoms(true), atoms(false));
        for side in [&pre, &post] {
            for (op, loc, span) in side {
                if *op != Builtin::AutoValue {
                    continue;
                }
                if let Some((_, _, other)) = side.iter().find(|(_, l, s)| l == loc && s != span) {
                    self.err(CheckError::AutoValueCombined {
                        loc: loc.clone(),
                        span: *span,
                        other: *other,
                    });
                }
            }
        }
        if kind.is_pure() {
            return;
        }
        for (op, loc, span) in &post {
            let borrowed = pre
                .iter()
                .any(|(o, l, _)| *o == Builtin::AutoValue && l == loc);
            if *op == Builtin::AutoValue && !borrowed {
                self.err(CheckError::AutoValueNotBorrowed {
                    loc: loc.clone(),
                    span: *span,
                });
            }
        }
    }

    /// A routine or loop has at most one termination measure (VerCors' rule too): two would
    /// leave open which one the checker proves.
    fn check_one_decreases(&mut self, clauses: &'a [Clause]) {
        let mut seen = false;
        for clause in clauses {
            if let ClauseKind::Decreases(_) = clause.kind {
                if seen {
                    self.err(CheckError::DuplicateDecreases { span: clause.span });
                }
                seen = true;
            }
        }
    }

    /// Contracts of loops, par blocks and barriers, which may declare no ghost parameters of
    /// their own that anything could supply; any given there is simply in scope.
    fn check_inner_contract(&mut self, contract: &'a Contract, site: ClauseSite) {
        for clause in &contract.clauses {
            if let ClauseKind::Given(p) | ClauseKind::Yields(p) = &clause.kind {
                let ty = self.resolve_type(&p.ty);
                self.declare(&p.name, ty, VarKind::Ghost);
            }
        }
        for clause in &contract.clauses {
            self.check_clause(clause, site);
        }
        self.check_one_decreases(&contract.clauses);
    }

    // ---- statements ----------------------------------------------------------------------

    fn check_block(&mut self, block: &'a Block) {
        self.push_scope();
        gpuopt::check_block_opts(self, &block.stmts);
        for stmt in &block.stmts {
            self.check_stmt(stmt);
        }
        self.pop_scope();
    }

    /// A statement in a position of its own (a branch, a loop body): its declarations end
    /// with it.
    fn check_nested(&mut self, stmt: &'a Stmt) {
        self.push_scope();
        self.check_stmt(stmt);
        self.pop_scope();
    }

    fn check_stmt(&mut self, stmt: &'a Stmt) {
        match &stmt.kind {
            StmtKind::LocalDecl { ty, vars } => {
                let declared = self.resolve_type(ty);
                for var in vars {
                    if let Some(init) = &var.init {
                        self.expect(init, &declared, "initialisation");
                    }
                    self.declare(&var.name, declared.clone(), VarKind::Local);
                    self.effects
                        .store(var.name.span, 0, allocated_levels(var.init.as_ref()));
                }
            }
            StmtKind::Assign { target, value } => {
                let target_ty = self.assign_target(target);
                self.expect(value, &target_ty, "assignment");
                self.note_write(target, &target_ty, allocated_levels(Some(value)));
            }
            StmtKind::Increment(target) | StmtKind::Decrement(target) => {
                let t = self.assign_target(target);
                self.note_write(target, &t, 0);
                if !matches!(t, Ty::Int | Ty::Unknown) {
                    let found = self.show(&t);
                    self.err(CheckError::Mismatch {
                        what: "increment".into(),
                        expected: "int".into(),
                        found,
                        span: target.span,
                    });
                }
            }
            StmtKind::Expr(e) => {
                self.expr(e);
            }
            StmtKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                self.expect(cond, &Ty::Bool, "condition");
                self.check_nested(then_branch);
                if let Some(e) = else_branch {
                    self.check_nested(e);
                }
            }
            StmtKind::While {
                contract,
                cond,
                body,
            } => {
                self.push_scope();
                self.check_inner_contract(contract, ClauseSite::Loop);
                self.expect(cond, &Ty::Bool, "loop condition");
                self.check_nested(body);
                self.pop_scope();
            }
            StmtKind::For {
                contract,
                init,
                cond,
                update,
                body,
            } => {
                self.push_scope();
                if let Some(init) = init {
                    self.check_stmt(init);
                }
                self.check_inner_contract(contract, ClauseSite::Loop);
                if let Some(cond) = cond {
                    self.expect(cond, &Ty::Bool, "loop condition");
                }
                if let Some(update) = update {
                    self.check_stmt(update);
                }
                self.check_nested(body);
                self.pop_scope();
            }
            StmtKind::Block(block) => self.check_block(block),
            StmtKind::Return(value) => {
                self.no_ghost_control("a `return`", stmt.span);
                self.check_return(stmt.span, value.as_ref())
            }
            StmtKind::Par(group) => {
                self.no_ghost_control("a par block", stmt.span);
                self.effects
                    .direct_effect(self.method_key(), stmt.span, "contains a par block");
                for block in &group.blocks {
                    self.check_par(block);
                }
            }
            StmtKind::Barrier(barrier) => {
                self.no_ghost_control("a barrier", stmt.span);
                self.effects
                    .direct_effect(self.method_key(), stmt.span, "contains a barrier");
                for name in &barrier.invariants {
                    self.check_invariant_name(name);
                }
                self.check_barrier(barrier);
            }
            StmtKind::Assert(e)
            | StmtKind::Assume(e)
            | StmtKind::Refute(e)
            | StmtKind::Inhale(e)
            | StmtKind::Exhale(e) => self.spec_assertion(e, "assertion"),
            StmtKind::Ghost(inner) => {
                let outer = std::mem::replace(&mut self.ghost, true);
                self.check_stmt(inner);
                self.ghost = outer;
            }
            StmtKind::Invariant { name, inv, body } => {
                self.spec_assertion(inv, "invariant");
                self.invariants.push(&name.name);
                self.check_block(body);
                self.invariants.pop();
            }
            StmtKind::Atomic { name, body } => {
                self.check_invariant_name(name);
                self.check_block(body);
            }
            // Models are refused before this (`model_constructs`).
            StmtKind::Action { body, .. } => self.check_block(body),
            StmtKind::Lock(e)
            | StmtKind::Unlock(e)
            | StmtKind::Commit(e)
            | StmtKind::Wait(e)
            | StmtKind::Notify(e) => {
                let what = match stmt.kind {
                    StmtKind::Lock(_) => "a `lock`",
                    StmtKind::Unlock(_) => "an `unlock`",
                    StmtKind::Commit(_) => "a `commit`",
                    StmtKind::Wait(_) => "a `wait`",
                    _ => "a `notify`",
                };
                self.no_ghost_control(what, stmt.span);
                self.effects.direct_effect(
                    self.method_key(),
                    stmt.span,
                    "takes or releases a lock",
                );
                self.lock_object(e, what);
            }
            StmtKind::Fork(e) | StmtKind::Join(e) => {
                let what = if matches!(stmt.kind, StmtKind::Fork(_)) {
                    "a `fork`"
                } else {
                    "a `join`"
                };
                self.no_ghost_control(what, stmt.span);
                self.effects.direct_effect(
                    self.method_key(),
                    stmt.span,
                    "starts or joins a thread",
                );
                self.thread_object(e, what);
            }
            StmtKind::Fold(e) | StmtKind::Unfold(e) => {
                let what = if matches!(stmt.kind, StmtKind::Fold(_)) {
                    "fold"
                } else {
                    "unfold"
                };
                let saved = self.pure_context.replace("a specification");
                self.predicate_application(e, what);
                self.pure_context = saved;
            }
            StmtKind::Goto(_) | StmtKind::Label(_) => {
                self.no_ghost_control("a `goto` or `label`", stmt.span)
            }
            // Placement is checked with the enclosing block (`check_block_opts`); a `fuse`
            // thread-block hint may name an int in scope (`gpuopt fuse 2 N;`).
            StmtKind::GpuOpt(opt) => {
                if let GpuOptKind::Fuse {
                    block_hint: Some(hint),
                    ..
                } = &opt.kind
                {
                    self.expect(hint, &Ty::Int, "thread-block hint");
                }
            }
        }
    }

    fn check_barrier(&mut self, barrier: &'a Barrier) {
        let known = self
            .pars
            .iter()
            .any(|l| l.is_some_and(|l| l.name == barrier.label.name));
        if !known {
            self.err(CheckError::UnknownParLabel {
                name: barrier.label.name.clone(),
                span: barrier.label.span,
            });
        }
        self.push_scope();
        self.check_inner_contract(&barrier.contract, ClauseSite::Barrier);
        self.check_block(&barrier.body);
        self.pop_scope();
    }

    /// `atomic(inv)` and `barrier(L; inv)` name an enclosing `invariant inv(..) { .. }`.
    fn check_invariant_name(&mut self, name: &'a Ident) {
        if !self.invariants.contains(&name.name.as_str()) {
            self.err(CheckError::UnknownInvariant {
                name: name.name.clone(),
                span: name.span,
            });
        }
    }

    fn spec_assertion(&mut self, e: &'a Expr, what: &str) {
        let saved = self.pure_context.replace("a specification");
        self.expect(e, &Ty::Resource, what);
        self.pure_context = saved;
    }

    fn check_return(&mut self, span: Span, value: Option<&'a Expr>) {
        let Some(sig) = self.method else {
            if let Some(v) = value {
                self.expr(v);
            }
            return;
        };
        let ret = sig.return_type.clone();
        match (value, &ret) {
            (Some(v), Ty::Void) => {
                self.expr(v);
                self.err(CheckError::BadReturn {
                    message: format!("`{}` returns no value", sig.name),
                    span: v.span,
                });
            }
            (None, Ty::Void) => {}
            (None, _) => {
                let ty = self.show(&ret);
                self.err(CheckError::BadReturn {
                    message: format!("`{}` must return a value of type {ty}", sig.name),
                    span,
                });
            }
            (Some(v), _) => self.expect(v, &ret, "return value"),
        }
    }

    fn check_par(&mut self, block: &'a ParBlock) {
        // Ranges are evaluated by the launching code, outside the threads.
        for it in &block.iters {
            self.expect(&it.lo, &Ty::Int, "par range");
            self.expect(&it.hi, &Ty::Int, "par range");
        }
        self.pars.push(block.label.as_ref());
        self.push_scope();
        for it in &block.iters {
            let ty = self.resolve_type(&it.ty);
            if !matches!(ty, Ty::Int | Ty::Unknown) {
                let found = self.show(&ty);
                self.err(CheckError::Mismatch {
                    what: "par iterator".into(),
                    expected: "int".into(),
                    found,
                    span: it.ty.span,
                });
            }
            self.declare(&it.name, Ty::Int, VarKind::ParIter);
        }
        self.check_inner_contract(&block.contract, ClauseSite::Par);
        self.check_block(&block.body);
        self.pop_scope();
        self.pars.pop();
    }

    // ---- ghost code (see `effects.rs`) -----------------------------------------------------

    /// The method being checked, as `effects.rs` keys it.
    fn method_key(&self) -> Option<Span> {
        self.method.map(|s| s.span)
    }

    /// A constructor's precondition (its `requires`, the first half of a `context`) is
    /// evaluated before the object exists: `this` and the class's fields have no meaning there.
    fn constructor_precondition(&mut self, e: &Expr) {
        let mut found = None;
        e.visit(&mut |x| {
            if found.is_none() && matches!(x.kind, ExprKind::This) {
                found = Some(("`this`".to_string(), x.span));
            }
        });
        let mut names = std::collections::BTreeSet::new();
        e.names(&mut names);
        if found.is_none() {
            if let Some(field) = names
                .iter()
                .find(|n| self.lookup(n).is_none() && self.current_field(n).is_some())
            {
                let mut at = None;
                e.visit(&mut |x| {
                    if matches!(&x.kind, ExprKind::Name(id) if id.name == *field) {
                        at.get_or_insert(x.span);
                    }
                });
                found = Some((format!("its field `{field}`"), at.unwrap_or(e.span)));
            }
        }
        if let Some((what, span)) = found {
            self.err(CheckError::ConstructorRequiresThis { what, span });
        }
    }

    fn in_constructor(&self) -> bool {
        self.method
            .is_some_and(|s| s.kind == MethodKind::Constructor)
    }

    /// `what` (a par block, barrier, `return`, lock operation) would change what runs.
    fn no_ghost_control(&mut self, what: &'static str, span: Span) {
        if self.ghost {
            self.err(CheckError::GhostControl { what, span });
        }
    }

    /// What the location `target` writes is reached from, and how many `[i]`/`.f` steps below
    /// it: 0 for a variable itself.
    fn write_path(&self, target: &Expr) -> (Root, usize) {
        match &target.kind {
            ExprKind::Name(id) => self.write_path_of_name(id),
            ExprKind::This => (Root::This, 0),
            ExprKind::Field { base, .. } if self.is_class_name(base) => (Root::Other, 1),
            ExprKind::Field { base, .. } | ExprKind::Index { base, .. } => {
                let (root, depth) = self.write_path(base);
                (root, depth + 1)
            }
            _ => (Root::Other, 0),
        }
    }

    /// Records the write of a value that allocated `levels` (`effects::allocated_levels`) to
    /// `target`, of type `ty`, and checks it is allowed if this is ghost code.
    fn note_write(&mut self, target: &'a Expr, ty: &Ty, levels: usize) {
        if let ExprKind::Name(id) = &target.kind {
            return self.note_name_write(id, ty, levels);
        }
        let (root, depth) = self.write_path(target);
        if depth == 0 {
            // `this` or an expression: not assignable, already reported.
            return;
        }
        self.effects.heap_write(
            self.method_key(),
            (root, depth),
            target.span,
            self.ghost,
            self.in_constructor(),
        );
        if let Root::Var { decl, .. } = root {
            if holds_references(ty) {
                self.effects.store(decl, depth, levels);
            }
        }
    }

    /// `name = ..` (a statement or a `then` assignment): a variable, or a field of `this`.
    fn note_name_write(&mut self, id: &'a Ident, ty: &Ty, levels: usize) {
        let (root, depth) = self.write_path_of_name(id);
        match root {
            Root::Var { decl, ghost } => {
                let kind = self.lookup(&id.name).map(|v| v.kind);
                if self.ghost && !ghost && matches!(kind, Some(VarKind::Local | VarKind::Param)) {
                    self.err(CheckError::GhostWritesLocal {
                        name: id.name.clone(),
                        span: id.span,
                        decl,
                    });
                }
                if holds_references(ty) {
                    self.effects.store(decl, depth, levels);
                }
            }
            Root::This => self.effects.heap_write(
                self.method_key(),
                (root, depth),
                id.span,
                self.ghost,
                self.in_constructor(),
            ),
            Root::Other => {}
        }
    }

    fn write_path_of_name(&self, id: &Ident) -> (Root, usize) {
        match self.lookup(&id.name) {
            Some(v) => (
                Root::Var {
                    decl: v.span,
                    ghost: v.ghost,
                },
                0,
            ),
            None if self.current_field(&id.name).is_some() => (Root::This, 1),
            None => (Root::Other, 0),
        }
    }

    /// Checks that the variable (or field) `id` may be written here and returns its type.
    fn assign_var(&mut self, id: &'a Ident, span: Span) -> Ty {
        let Some(var) = self.lookup(&id.name) else {
            // Fields are heap locations: writable anywhere (with permission).
            return self.name(id);
        };
        let (ty, kind, depth, decl) = (var.ty.clone(), var.kind, var.par_depth, var.span);
        match kind {
            VarKind::ParIter => self.err(CheckError::WriteToParIterator {
                name: id.name.clone(),
                span,
                decl,
            }),
            VarKind::Binder => self.err(CheckError::NotAssignable { span }),
            _ if depth < self.pars.len() => self.err(CheckError::WriteToOuterLocalInPar {
                name: id.name.clone(),
                span,
                decl,
            }),
            _ => {}
        }
        ty
    }

    /// Checks that `target` may be written here and returns its type.
    fn assign_target(&mut self, target: &'a Expr) -> Ty {
        match &target.kind {
            ExprKind::Name(id) => self.assign_var(id, target.span),
            ExprKind::Field { base, name } => {
                let base_ty = self.expr(base);
                let ty = self.member(&base_ty, name);
                if !matches!(base_ty, Ty::Class(_) | Ty::Unknown) && !self.is_class_name(base) {
                    self.err(CheckError::NotAssignable { span: target.span });
                }
                ty
            }
            ExprKind::Index { base, index } => {
                let base_ty = self.expr(base);
                let ty = self.index(&base_ty, base, index);
                if matches!(base_ty, Ty::Seq(_) | Ty::Map(..)) {
                    let ty = self.show(&base_ty);
                    self.err(CheckError::SeqElementAssign {
                        span: target.span,
                        ty,
                    });
                }
                ty
            }
            _ => {
                self.expr(target);
                self.err(CheckError::NotAssignable { span: target.span });
                Ty::Unknown
            }
        }
    }

    // ---- expressions ---------------------------------------------------------------------

    /// Checks `e` against `expected`, reporting a mismatch as being in `what`.
    pub(crate) fn expect(&mut self, e: &'a Expr, expected: &Ty, what: &str) {
        let found = self.expr(e);
        if !assignable(expected, &found) {
            let (expected, found) = (self.show(expected), self.show(&found));
            self.err(CheckError::Mismatch {
                what: what.to_string(),
                expected,
                found,
                span: e.span,
            });
        }
    }

    fn is_class_name(&self, e: &Expr) -> bool {
        self.static_class(e).is_some()
    }

    /// `C` in `C.m(..)`: a name that is no variable or field but a class.
    fn static_class(&self, e: &Expr) -> Option<ClassId> {
        let ExprKind::Name(id) = &e.kind else {
            return None;
        };
        if self.lookup(&id.name).is_some() || self.current_field(&id.name).is_some() {
            return None;
        }
        self.tables.class_by_name(&id.name)
    }

    fn current_field(&self, name: &str) -> Option<Ty> {
        let c = self.class?;
        self.tables.class(c).field(name).map(|f| f.ty.clone())
    }

    fn name(&mut self, id: &'a Ident) -> Ty {
        if let Some(v) = self.lookup(&id.name) {
            return v.ty.clone();
        }
        if let Some(t) = self.current_field(&id.name) {
            return t;
        }
        if id.name == "None" {
            return Ty::Option(Box::new(Ty::Unknown));
        }
        self.err(CheckError::UnknownVariable {
            name: id.name.clone(),
            span: id.span,
        });
        Ty::Unknown
    }

    /// `base.name` where `base` has type `base_ty`.
    fn member(&mut self, base_ty: &Ty, name: &'a Ident) -> Ty {
        let n = name.name.as_str();
        let found = match base_ty {
            Ty::Unknown => Some(Ty::Unknown),
            Ty::Class(c) => match self.tables.class(*c).field(n) {
                Some(f) => Some(f.ty.clone()),
                None => {
                    let ty = self.show(base_ty);
                    self.err(CheckError::UnknownField {
                        name: n.to_string(),
                        ty,
                        span: name.span,
                    });
                    return Ty::Unknown;
                }
            },
            Ty::Array(_) => (n == "length").then_some(Ty::Int),
            Ty::Seq(e) => match n {
                "size" | "length" => Some(Ty::Int),
                "head" => Some((**e).clone()),
                "tail" => Some(base_ty.clone()),
                "isEmpty" => Some(Ty::Bool),
                _ => None,
            },
            Ty::Set(_) | Ty::Bag(_) => match n {
                "size" => Some(Ty::Int),
                "isEmpty" => Some(Ty::Bool),
                _ => None,
            },
            Ty::Map(k, v) => match n {
                "size" => Some(Ty::Int),
                "keys" => Some(Ty::Set(k.clone())),
                "values" => Some(Ty::Set(v.clone())),
                "items" => Some(Ty::Set(Box::new(Ty::Tuple(k.clone(), v.clone())))),
                "isEmpty" => Some(Ty::Bool),
                _ => None,
            },
            Ty::Tuple(a, b) => match n {
                "fst" => Some((**a).clone()),
                "snd" => Some((**b).clone()),
                _ => None,
            },
            Ty::Option(e) => (n == "get").then(|| (**e).clone()),
            _ => None,
        };
        found.unwrap_or_else(|| {
            let ty = self.show(base_ty);
            self.err(CheckError::NoSuchMember {
                name: n.to_string(),
                ty,
                span: name.span,
            });
            Ty::Unknown
        })
    }

    /// `base[index]` where `base` has type `base_ty`.
    fn index(&mut self, base_ty: &Ty, base: &'a Expr, index: &'a Expr) -> Ty {
        match base_ty {
            Ty::Array(e) | Ty::Seq(e) => {
                self.expect(index, &Ty::Int, "index");
                (**e).clone()
            }
            Ty::Map(k, v) => {
                self.expect(index, k, "map key");
                (**v).clone()
            }
            Ty::Unknown => {
                self.expr(index);
                Ty::Unknown
            }
            _ => {
                self.expr(index);
                let ty = self.show(base_ty);
                self.err(CheckError::NotIndexable {
                    ty,
                    span: base.span,
                });
                Ty::Unknown
            }
        }
    }

    pub(crate) fn expr(&mut self, e: &'a Expr) -> Ty {
        match &e.kind {
            ExprKind::IntLit(_) => Ty::Int,
            ExprKind::BoolLit(_) => Ty::Bool,
            ExprKind::Null => Ty::Null,
            ExprKind::This => match self.class {
                Some(c) => Ty::Class(c),
                None => {
                    self.err(CheckError::ThisOutsideClass { span: e.span });
                    Ty::Unknown
                }
            },
            ExprKind::AllIndices => {
                self.err(CheckError::AllIndicesOutsideLocation { span: e.span });
                Ty::Int
            }
            ExprKind::Result => match &self.result_ty {
                Some(t) => t.clone(),
                None => {
                    self.err(CheckError::ResultOutsidePostcondition { span: e.span });
                    Ty::Unknown
                }
            },
            ExprKind::PermLit(PermLit::None) => Ty::ZFrac,
            ExprKind::PermLit(_) => Ty::Frac,
            ExprKind::Name(id) => self.name(id),
            ExprKind::Unary { op, operand } => {
                let t = self.expr(operand);
                match op {
                    UnaryOp::Not if matches!(t, Ty::Bool | Ty::Unknown) => Ty::Bool,
                    UnaryOp::Neg if matches!(t, Ty::Int | Ty::Unknown) => t,
                    UnaryOp::Neg if t.is_numeric() => Ty::Rational,
                    _ => {
                        let (expected, found) = match op {
                            UnaryOp::Not => ("boolean", self.show(&t)),
                            UnaryOp::Neg => ("a number", self.show(&t)),
                        };
                        self.err(CheckError::Mismatch {
                            what: format!(
                                "operand of `{}`",
                                if *op == UnaryOp::Not { "!" } else { "-" }
                            ),
                            expected: expected.into(),
                            found,
                            span: operand.span,
                        });
                        Ty::Unknown
                    }
                }
            }
            ExprKind::Binary { op, lhs, rhs } => self.binary(e, *op, lhs, rhs),
            ExprKind::Cond {
                cond,
                then_expr,
                else_expr,
            } => {
                self.expect(cond, &Ty::Bool, "condition");
                let a = self.expr(then_expr);
                let b = self.expr(else_expr);
                match join(&a, &b) {
                    Some(t) => t,
                    None => {
                        let (lhs, rhs) = (self.show(&a), self.show(&b));
                        self.err(CheckError::BadOperands {
                            op: "?:",
                            lhs,
                            rhs,
                            span: e.span,
                        });
                        Ty::Unknown
                    }
                }
            }
            ExprKind::Index { base, index } => {
                let bt = self.expr(base);
                self.index(&bt, base, index)
            }
            ExprKind::Slice { base, from, to } => {
                let bt = self.expr(base);
                for bound in [from, to].into_iter().flatten() {
                    self.expect(bound, &Ty::Int, "slice bound");
                }
                match bt {
                    Ty::Seq(_) | Ty::Unknown => bt,
                    _ => {
                        let found = self.show(&bt);
                        self.err(CheckError::Mismatch {
                            what: "slice".into(),
                            expected: "a sequence".into(),
                            found,
                            span: base.span,
                        });
                        Ty::Unknown
                    }
                }
            }
            ExprKind::Update { base, index, value } => {
                let bt = self.expr(base);
                match &bt {
                    Ty::Seq(elem) => {
                        self.expect(index, &Ty::Int, "index");
                        self.expect(value, elem, "sequence update");
                    }
                    Ty::Map(k, v) => {
                        self.expect(index, k, "map key");
                        self.expect(value, v, "map update");
                    }
                    Ty::Unknown => {
                        self.expr(index);
                        self.expr(value);
                    }
                    _ => {
                        self.expr(index);
                        self.expr(value);
                        let found = self.show(&bt);
                        self.err(CheckError::Mismatch {
                            what: "update `s[i -> v]`".into(),
                            expected: "a sequence or map".into(),
                            found,
                            span: base.span,
                        });
                        return Ty::Unknown;
                    }
                }
                bt
            }
            ExprKind::Field { base, name } => {
                if let Some(c) = self.static_class(base) {
                    return self.member(&Ty::Class(c), name);
                }
                let bt = self.expr(base);
                self.member(&bt, name)
            }
            ExprKind::Call {
                receiver,
                name,
                type_args,
                args,
                given,
                yields,
            } => self.call(receiver.as_deref(), name, type_args, args, given, yields),
            ExprKind::New {
                class,
                args,
                given,
                yields,
            } => self.new_object(class, args, given, yields),
            ExprKind::NewArray { elem, dims } => {
                let mut ty = self.resolve_type(elem);
                for d in dims {
                    self.expect(d, &Ty::Int, "array size");
                    ty = Ty::Array(Box::new(ty));
                }
                ty
            }
            ExprKind::Old(inner) => self.expr(inner),
            ExprKind::Length(inner) => {
                let t = self.expr(inner);
                if !matches!(
                    t,
                    Ty::Seq(_) | Ty::Set(_) | Ty::Bag(_) | Ty::Map(..) | Ty::Array(_) | Ty::Unknown
                ) {
                    let found = self.show(&t);
                    self.err(CheckError::Mismatch {
                        what: "`|..|`".into(),
                        expected: "a sequence, set, bag or map".into(),
                        found,
                        span: inner.span,
                    });
                }
                Ty::Int
            }
            ExprKind::Builtin { op, args } => self.builtin(e, *op, args),
            ExprKind::Quantifier(q) => self.quantifier(q),
            ExprKind::Let {
                ty,
                name,
                value,
                body,
            } => {
                let t = self.resolve_type(ty);
                self.expect(value, &t, "`\\let` binding");
                self.push_scope();
                self.declare(name, t, VarKind::Binder);
                let result = self.expr(body);
                self.pop_scope();
                result
            }
            ExprKind::Collection { kind, elem, elems } => {
                let t = match elem {
                    Some(elem) => self.resolve_type(elem),
                    // `[e1, .., en]`: the type of the first element.
                    None => elems.first().map_or(Ty::Unknown, |x| self.expr(x)),
                };
                for x in elems.iter().skip(usize::from(elem.is_none())) {
                    self.expect(x, &t, "collection element");
                }
                let t = Box::new(t);
                match kind {
                    CollectionKind::Seq => Ty::Seq(t),
                    CollectionKind::Set => Ty::Set(t),
                    CollectionKind::Bag => Ty::Bag(t),
                }
            }
            ExprKind::Tuple {
                types,
                first,
                second,
            } => match types.as_deref() {
                Some((a, b)) => {
                    let (a, b) = (self.resolve_type(a), self.resolve_type(b));
                    self.expect(first, &a, "tuple element");
                    self.expect(second, &b, "tuple element");
                    Ty::Tuple(Box::new(a), Box::new(b))
                }
                None => Ty::Tuple(Box::new(self.expr(first)), Box::new(self.expr(second))),
            },
            ExprKind::MapLit {
                key,
                value,
                entries,
            } => {
                let k = self.resolve_type(key);
                let v = self.resolve_type(value);
                for (ke, ve) in entries {
                    self.expect(ke, &k, "map key");
                    self.expect(ve, &v, "map value");
                }
                Ty::Map(Box::new(k), Box::new(v))
            }
            ExprKind::Trigger(inner, _) => self.expr(inner),
            ExprKind::Unfolding { pred, body } => {
                self.predicate_application(pred, "unfolding");
                self.expr(body)
            }
            ExprKind::Scaled { .. } => {
                self.predicate_application(e, "`[p]`");
                Ty::Resource
            }
        }
    }

    fn predicate_application(&mut self, e: &'a Expr, what: &'static str) {
        if let ExprKind::Scaled { amount, pred } = &e.kind {
            self.expect(amount, &Ty::Frac, "scale of a predicate");
            return self.predicate_application(pred, what);
        }
        let t = self.expr(e);
        let is_call = matches!(e.kind, ExprKind::Call { .. });
        if !(is_call && matches!(t, Ty::Resource | Ty::Unknown)) {
            let found = if is_call {
                self.show(&t)
            } else {
                "an expression that is no call".to_string()
            };
            self.err(CheckError::NotAPredicate {
                what,
                found,
                span: e.span,
            });
        }
    }

    fn binary(&mut self, e: &'a Expr, op: BinaryOp, lhs: &'a Expr, rhs: &'a Expr) -> Ty {
        use BinaryOp::*;
        if let (Eq | Neq, Some(c)) = (op, Expr::class_compared_with_typeof(lhs, rhs)) {
            let is_variable =
                self.lookup(&c.name).is_some() || self.current_field(&c.name).is_some();
            if !is_variable && self.tables.class_by_name(&c.name).is_some() {
                let of = if matches!(lhs.kind, ExprKind::Name(_)) {
                    rhs
                } else {
                    lhs
                };
                self.expr(of);
                return Ty::Bool;
            }
        }
        let a = self.expr(lhs);
        let b = self.expr(rhs);
        let result = match op {
            Implies => match (&a, &b) {
                (Ty::Bool | Ty::Unknown, Ty::Bool) => Some(Ty::Bool),
                (Ty::Bool | Ty::Unknown, Ty::Resource) => Some(Ty::Resource),
                (Ty::Bool | Ty::Unknown, Ty::Unknown) => Some(Ty::Unknown),
                _ => None,
            },
            And | Or => matches!((&a, &b), (Ty::Bool | Ty::Unknown, Ty::Bool | Ty::Unknown))
                .then_some(Ty::Bool),
            Star => (is_assertion(&a) && is_assertion(&b)).then_some(Ty::Resource),
            Eq | Neq => comparable(&a, &b).then_some(Ty::Bool),
            Lt | Le | Gt | Ge => {
                let ordered = arith(&a, &b).is_some()
                    || (matches!(
                        (&a, &b),
                        (Ty::Set(_), Ty::Set(_)) | (Ty::Bag(_), Ty::Bag(_))
                    ) && comparable(&a, &b));
                ordered.then_some(Ty::Bool)
            }
            In => match &b {
                Ty::Seq(el) | Ty::Set(el) => assignable(el, &a).then_some(Ty::Bool),
                // Bag membership is the multiplicity.
                Ty::Bag(el) => assignable(el, &a).then_some(Ty::Int),
                Ty::Map(k, _) => assignable(k, &a).then_some(Ty::Bool),
                Ty::Unknown => Some(Ty::Unknown),
                _ => None,
            },
            Add | Sub | Mul => arith(&a, &b).or_else(|| match (&a, &b) {
                // 1.x writes `s + t` for concatenation.
                (Ty::Seq(_), Ty::Seq(_)) if op == Add => join(&a, &b),
                // Union, difference, intersection.
                (Ty::Set(_), Ty::Set(_)) | (Ty::Bag(_), Ty::Bag(_)) => join(&a, &b),
                (Ty::Seq(_) | Ty::Set(_) | Ty::Bag(_), Ty::Unknown) => Some(a.clone()),
                (Ty::Unknown, Ty::Seq(_) | Ty::Set(_) | Ty::Bag(_)) => Some(b.clone()),
                _ => None,
            }),
            Div => arith(&a, &b),
            Mod => matches!((&a, &b), (Ty::Int | Ty::Unknown, Ty::Int | Ty::Unknown))
                .then_some(Ty::Int),
            FracDiv => arith(&a, &b).map(|t| if t == Ty::Unknown { t } else { Ty::Rational }),
            Concat => match (&a, &b) {
                // Two sequences of one type are concatenated; else `s ++ x` appends one
                // element (so `ss ++ s` appends the sequence `s` to a sequence of sequences).
                (Ty::Seq(el), x) => matches!(x, Ty::Seq(_))
                    .then(|| join(&a, &b))
                    .flatten()
                    .or_else(|| assignable(el, x).then(|| a.clone())),
                // `m ++ (k, v)` adds (or replaces) an entry.
                (Ty::Map(k, v), Ty::Tuple(x, y)) if assignable(k, x) && assignable(v, y) => {
                    Some(a.clone())
                }
                (Ty::Unknown, Ty::Seq(_)) => Some(b.clone()),
                (Ty::Unknown, _) => Some(Ty::Unknown),
                _ => None,
            },
            Cons => match (&a, &b) {
                (x, Ty::Seq(el)) if assignable(el, x) => Some(b.clone()),
                (_, Ty::Unknown) => Some(Ty::Unknown),
                _ => None,
            },
        };
        result.unwrap_or_else(|| {
            let (l, r) = (self.show(&a), self.show(&b));
            self.err(CheckError::BadOperands {
                op: op.symbol(),
                lhs: l,
                rhs: r,
                span: e.span,
            });
            // `&&`, `==`, ... still produce a boolean; keeping it avoids a second error above.
            match op {
                And | Or | Eq | Neq | Lt | Le | Gt | Ge => Ty::Bool,
                _ => Ty::Unknown,
            }
        })
    }

    /// The object of `fork`, `join`, `idle(..)` or `running(..)`: an object of a class with
    /// a `run` method (`run { .. }`, or 1.x `void run()`).
    fn thread_object(&mut self, e: &'a Expr, what: &str) {
        let t = self.expr(e);
        let runnable = match &t {
            Ty::Class(id) => self
                .tables
                .class(*id)
                .method("run")
                .is_some_and(|m| m.params.is_empty() && !m.is_static),
            Ty::Unknown => true,
            _ => false,
        };
        if !runnable {
            let found = self.show(&t);
            self.err(CheckError::Mismatch {
                what: what.to_string(),
                expected: "an object of a class with a `run` method".into(),
                found,
                span: e.span,
            });
        }
    }

    /// An operand that must be an object: of a lock operation, `held(..)`, `committed(..)`,
    /// `\typeof(..)`.
    fn lock_object(&mut self, e: &'a Expr, what: &str) {
        let t = self.expr(e);
        if !matches!(t, Ty::Class(_) | Ty::Unknown) {
            let found = self.show(&t);
            self.err(CheckError::Mismatch {
                what: what.to_string(),
                expected: "an object".into(),
                found,
                span: e.span,
            });
        }
    }

    fn builtin(&mut self, e: &'a Expr, op: Builtin, args: &'a [Expr]) -> Ty {
        let expected = match op {
            Builtin::Perm | Builtin::HPerm | Builtin::APerm => 2,
            Builtin::PointsTo => 3,
            Builtin::Value | Builtin::AutoValue => 1,
            Builtin::Array => 2,
            Builtin::Matrix => 3,
            Builtin::Idle | Builtin::Running | Builtin::Held | Builtin::Committed => 1,
            Builtin::TypeOf | Builtin::Type => 1,
            Builtin::Values => 3,
        };
        if args.len() != expected {
            self.err(CheckError::ArgCount {
                name: op.spelling().to_string(),
                expected,
                found: args.len(),
                span: e.span,
                decl: e.span,
            });
            for a in args {
                self.expr(a);
            }
            return match op {
                Builtin::Array | Builtin::Matrix | Builtin::Committed => Ty::Bool,
                Builtin::TypeOf | Builtin::Type => Ty::Type,
                Builtin::Values => Ty::Unknown,
                _ => Ty::Resource,
            };
        }
        match op {
            Builtin::Perm
            | Builtin::HPerm
            | Builtin::APerm
            | Builtin::PointsTo
            | Builtin::Value
            | Builtin::AutoValue => {
                if op == Builtin::AutoValue && !self.auto_value_allowed {
                    self.err(CheckError::AutoValueMisplaced { span: e.span });
                }
                let loc_ty = self.heap_location(&args[0]);
                if let Some(p) = args.get(1) {
                    self.expect(p, &Ty::ZFrac, "permission amount");
                }
                if let Some(v) = args.get(2) {
                    self.expect(v, &loc_ty, "`PointsTo` value");
                }
                Ty::Resource
            }
            // Pure facts (non-null, lengths, distinct rows): booleans, which VerCors accepts
            // wherever a resource is expected as well.
            Builtin::Array => {
                self.expect_array(&args[0], 1);
                self.expect(&args[1], &Ty::Int, "array length");
                Ty::Bool
            }
            Builtin::Matrix => {
                self.expect_array(&args[0], 2);
                self.expect(&args[1], &Ty::Int, "row count");
                self.expect(&args[2], &Ty::Int, "column count");
                Ty::Bool
            }
            Builtin::Idle | Builtin::Running => {
                self.thread_object(
                    &args[0],
                    if op == Builtin::Idle {
                        "`idle`"
                    } else {
                        "`running`"
                    },
                );
                Ty::Resource
            }
            Builtin::Held => {
                self.lock_object(&args[0], "`held`");
                Ty::Resource
            }
            Builtin::Committed => {
                self.lock_object(&args[0], "`committed`");
                Ty::Bool
            }
            Builtin::TypeOf => {
                self.lock_object(&args[0], "`\\typeof`");
                Ty::Type
            }
            Builtin::Type => {
                self.class_value(&args[0]);
                Ty::Type
            }
            Builtin::Values => {
                let elem = self.expect_array(&args[0], 1);
                self.expect(&args[1], &Ty::Int, "first index of `\\values`");
                self.expect(&args[2], &Ty::Int, "end index of `\\values`");
                Ty::Seq(Box::new(elem))
            }
        }
    }

    /// The class named by `e` in `\type(C)` (or a bare `C` compared with a `\typeof`).
    fn class_value(&mut self, e: &'a Expr) {
        match &e.kind {
            ExprKind::Name(c) if self.tables.class_by_name(&c.name).is_some() => {}
            ExprKind::Name(c) => self.err(CheckError::UnknownClass {
                name: c.name.clone(),
                span: c.span,
            }),
            _ => {
                let found = "an expression".to_string();
                self.err(CheckError::Mismatch {
                    what: "`\\type`".to_string(),
                    expected: "a class name".into(),
                    found,
                    span: e.span,
                });
            }
        }
    }

    /// Checks that `e` is an array of `dims` dimensions; its element type (`Unknown` where it
    /// is not such an array).
    fn expect_array(&mut self, e: &'a Expr, dims: usize) -> Ty {
        let t = self.expr(e);
        let mut cur = &t;
        for _ in 0..dims {
            match cur {
                Ty::Array(inner) => cur = inner,
                Ty::Unknown => return Ty::Unknown,
                _ => {
                    let found = self.show(&t);
                    self.err(CheckError::Mismatch {
                        what: "array argument".into(),
                        expected: if dims == 1 {
                            "an array".into()
                        } else {
                            "a two-dimensional array".into()
                        },
                        found,
                        span: e.span,
                    });
                    return Ty::Unknown;
                }
            }
        }
        cur.clone()
    }

    /// The location argument of `Perm`/`PointsTo`/`Value`: a field or an array cell.
    fn heap_location(&mut self, e: &'a Expr) -> Ty {
        let not_heap = |this: &mut Self, found: String| {
            this.err(CheckError::NotHeapLocation {
                found,
                span: e.span,
            });
        };
        match &e.kind {
            ExprKind::Trigger(inner, _) => self.heap_location(inner),
            ExprKind::Name(id) => {
                if let Some(v) = self.lookup(&id.name) {
                    let t = v.ty.clone();
                    not_heap(self, format!("`{}` is a local variable", id.name));
                    t
                } else {
                    self.name(id)
                }
            }
            ExprKind::Field { base, name } => {
                if let Some(c) = self.static_class(base) {
                    return self.member(&Ty::Class(c), name);
                }
                let bt = self.expr(base);
                let t = self.member(&bt, name);
                if !matches!(bt, Ty::Class(_) | Ty::Unknown) {
                    let shown = self.show(&bt);
                    not_heap(self, format!("`.{}` of a {shown}", name.name));
                }
                t
            }
            ExprKind::Index { base, index } => {
                let bt = self.expr(base);
                let t = match (&index.kind, &bt) {
                    // `a[*]`: every cell.
                    (ExprKind::AllIndices, Ty::Array(elem)) => (**elem).clone(),
                    (ExprKind::AllIndices, _) => Ty::Unknown,
                    _ => self.index(&bt, base, index),
                };
                if !matches!(bt, Ty::Array(_) | Ty::Unknown) {
                    let shown = self.show(&bt);
                    not_heap(self, format!("an element of a {shown}"));
                }
                t
            }
            _ => {
                let t = self.expr(e);
                not_heap(self, "an expression".to_string());
                t
            }
        }
    }

    fn quantifier(&mut self, q: &'a Quantifier) -> Ty {
        self.push_scope();
        for b in &q.binders {
            let t = self.resolve_type(&b.ty);
            if let Some((lo, hi)) = &b.range {
                self.expect(lo, &t, "quantifier range");
                self.expect(hi, &t, "quantifier range");
            }
            self.declare(&b.name, t, VarKind::Binder);
        }
        if let Some(c) = &q.cond {
            self.expect(c, &Ty::Bool, "quantifier condition");
        }
        let result = match q.kind {
            QuantifierKind::Forall | QuantifierKind::Exists => {
                self.expect(&q.body, &Ty::Bool, "quantifier body");
                self.warnings.extend(unusable_triggers(q));
                Ty::Bool
            }
            QuantifierKind::ForallStar => {
                self.expect(&q.body, &Ty::Resource, "`\\forall*` body");
                Ty::Resource
            }
            QuantifierKind::Sum => {
                let t = self.expr(&q.body);
                if t.is_numeric() || t == Ty::Unknown {
                    t
                } else {
                    let found = self.show(&t);
                    self.err(CheckError::Mismatch {
                        what: "`\\sum` body".into(),
                        expected: "a number".into(),
                        found,
                        span: q.body.span,
                    });
                    Ty::Int
                }
            }
        };
        self.pop_scope();
        result
    }

    fn new_object(
        &mut self,
        class: &'a Ident,
        args: &'a [Expr],
        given: &'a [GhostArg],
        yields: &'a [GhostArg],
    ) -> Ty {
        let Some(id) = self.tables.class_by_name(&class.name) else {
            self.err(CheckError::UnknownClass {
                name: class.name.clone(),
                span: class.span,
            });
            for a in args {
                self.expr(a);
            }
            return Ty::Unknown;
        };
        let info = self.tables.class(id);
        if info.constructors.is_empty() {
            if !args.is_empty() {
                self.err(CheckError::ArgCount {
                    name: class.name.clone(),
                    expected: 0,
                    found: args.len(),
                    span: class.span,
                    decl: info.span,
                });
                for a in args {
                    self.expr(a);
                }
            }
        } else {
            let ctor = info
                .constructors
                .iter()
                .find(|c| c.params.len() == args.len())
                .unwrap_or(&info.constructors[0]);
            self.effects.call(
                self.method_key(),
                ctor.span,
                &ctor.name,
                class.span,
                self.ghost,
            );
            self.check_args(ctor, class.span, args);
            // Named by its class in messages (a 2.x constructor is called `constructor`).
            self.ghost_args(&class.name, (&ctor.given, &ctor.yields), given, yields);
            return Ty::Class(id);
        }
        // The default constructor has no ghost parameters.
        self.ghost_args(&class.name, (&[], &[]), given, yields);
        Ty::Class(id)
    }

    fn check_args(&mut self, sig: &MethodSig, span: Span, args: &'a [Expr]) {
        if sig.params.len() != args.len() {
            self.err(CheckError::ArgCount {
                name: sig.name.clone(),
                expected: sig.params.len(),
                found: args.len(),
                span,
                decl: sig.span,
            });
            for a in args {
                self.expr(a);
            }
            return;
        }
        for (i, (a, p)) in args.iter().zip(&sig.params).enumerate() {
            self.expect(a, &p.ty, &format!("argument {} of `{}`", i + 1, sig.name));
        }
    }

    /// The routines a call of `name` without a receiver may reach: the enclosing class's
    /// methods of that name, else the top-level ones (several where it is overloaded).
    fn find_methods(&self, name: &'a str) -> Vec<&'a MethodSig> {
        let tables = self.tables;
        let in_class: Vec<&'a MethodSig> = self
            .class
            .map(|c| tables.class(c).methods_named(name).collect())
            .unwrap_or_default();
        if in_class.is_empty() {
            tables.globals_named(name).collect()
        } else {
            in_class
        }
    }

    /// The one overload of `name` among `candidates` (two or more) whose parameters take the
    /// arguments' types; the arguments are checked here (each once). `None` after an error: no overload fits, or several do.
    fn select_overload(
        &mut self,
        name: &'a Ident,
        candidates: &[&'a MethodSig],
        type_args: &[Ty],
        args: &'a [Expr],
    ) -> Option<&'a MethodSig> {
        let found: Vec<Ty> = args.iter().map(|a| self.expr(a)).collect();
        let fits = |sig: &MethodSig| {
            let sig = if sig.type_params.len() == type_args.len() {
                sig.instantiate(type_args)
            } else {
                sig.instantiate(&vec![Ty::Unknown; sig.type_params.len()])
            };
            sig.params.len() == found.len()
                && sig
                    .params
                    .iter()
                    .zip(&found)
                    .all(|(p, f)| assignable(&p.ty, f))
        };
        let mut fitting: Vec<&'a MethodSig> =
            candidates.iter().copied().filter(|s| fits(s)).collect();
        // Where several fit (an `int` argument fits an `int` and a `frac` parameter), the one
        // whose parameters have exactly the arguments' types is meant.
        let exact = |sig: &&MethodSig| sig.params.iter().zip(&found).all(|(p, f)| p.ty == *f);
        if fitting.len() > 1 && fitting.iter().filter(|s| exact(s)).count() == 1 {
            fitting.retain(exact);
        }
        // An argument that already failed fits anything: one mistake, one error.
        let failed_before = found.contains(&Ty::Unknown);
        match fitting[..] {
            [one] => Some(one),
            [] if !failed_before => {
                let found: Vec<String> = found.iter().map(|t| self.show(t)).collect();
                let declared: Vec<String> = candidates
                    .iter()
                    .map(|s| format!("`{}`", self.tables.overload_name(s)))
                    .collect();
                self.err(CheckError::NoOverload {
                    name: name.name.clone(),
                    found: found.join(", "),
                    declared: declared.join(", "),
                    span: name.span,
                });
                None
            }
            [first, second, ..] if !failed_before => {
                self.err(CheckError::AmbiguousCall {
                    name: name.name.clone(),
                    span: name.span,
                    first: first.span,
                    second: second.span,
                });
                None
            }
            _ => None,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        receiver: Option<&'a Expr>,
        name: &'a Ident,
        type_args: &'a [Type],
        args: &'a [Expr],
        given: &'a [GhostArg],
        yields: &'a [GhostArg],
    ) -> Ty {
        let n = name.name.as_str();
        let type_arg_tys: Vec<Ty> = type_args.iter().map(|t| self.resolve_type(t)).collect();
        let tables = self.tables;
        // Find the callee: a user method (one of several where the name is overloaded), or a
        // built-in function on a value.
        let mut static_receiver = false;
        let candidates: Vec<&'a MethodSig> = match receiver {
            None => match self.find_methods(n) {
                found if !found.is_empty() => found,
                _ => {
                    self.check_type_arg_count(name, type_args, None);
                    return self.builtin_call(None, name, args, given, yields);
                }
            },
            Some(r) if matches!(r.kind, ExprKind::This) => {
                self.expr(r);
                match self.class {
                    Some(c) => tables.class(c).methods_named(n).collect(),
                    None => return self.unknown_call(name, args, given, yields, ""),
                }
            }
            Some(r) => {
                if let Some(c) = self.static_class(r) {
                    static_receiver = true;
                    tables.class(c).methods_named(n).collect()
                } else {
                    let rt = self.expr(r);
                    match rt {
                        Ty::Class(c) => tables.class(c).methods_named(n).collect(),
                        _ => {
                            self.check_type_arg_count(name, type_args, None);
                            return self.builtin_call(Some(rt), name, args, given, yields);
                        }
                    }
                }
            }
        };
        let args_checked = candidates.len() > 1;
        let sig = match candidates[..] {
            [] => None,
            [one] => Some(one),
            _ => match self.select_overload(name, &candidates, &type_arg_tys, args) {
                Some(chosen) => Some(chosen),
                None => {
                    for g in given {
                        self.expr(&g.value);
                    }
                    return Ty::Unknown;
                }
            },
        };
        let Some(sig) = sig else {
            let in_what = match receiver {
                Some(r) => match self.receiver_class(r) {
                    Some(c) => format!(" in class `{}`", tables.class(c).name),
                    None => String::new(),
                },
                None => String::new(),
            };
            return self.unknown_call(name, args, given, yields, &in_what);
        };

        if self.renamed.contains(&sig.span) {
            self.renamed_calls.insert(name.span, sig.span);
        }
        if static_receiver && sig.is_static {
            self.class_receivers.insert(name.span);
        }
        if let Some(context) = self.pure_context {
            if !sig.kind.is_pure() {
                self.err(CheckError::ImpureCall {
                    name: n.to_string(),
                    context,
                    span: name.span,
                    decl: sig.span,
                });
            }
        }
        self.effects
            .call(self.method_key(), sig.span, n, name.span, self.ghost);
        let instance;
        let sig = if sig.type_params.len() == type_arg_tys.len() {
            instance = sig.instantiate(&type_arg_tys);
            &instance
        } else {
            self.check_type_arg_count(name, type_args, Some(sig));
            // Checked against the generic signature: its parameters' types stay unknown.
            let unknown = vec![Ty::Unknown; sig.type_params.len()];
            instance = sig.instantiate(&unknown);
            &instance
        };
        if !args_checked {
            self.check_args(sig, name.span, args);
        }
        self.ghost_args(&sig.name, (&sig.given, &sig.yields), given, yields);
        sig.return_type.clone()
    }

    /// The `with` values and `then` assignments of a call or a `new` against the `given` and
    /// `yields` parameters of `callee` (its name in messages).
    fn ghost_args(
        &mut self,
        callee: &str,
        (params_given, params_yields): (&[ParamInfo], &[ParamInfo]),
        given: &'a [GhostArg],
        yields: &'a [GhostArg],
    ) {
        // `with` values and `then` assignments are ghost code, whatever the call is.
        let outer_ghost = std::mem::replace(&mut self.ghost, true);
        for g in given {
            match params_given.iter().find(|p| p.name == g.name.name) {
                Some(p) => self.expect(&g.value, &p.ty, "`with` argument"),
                None => {
                    self.expr(&g.value);
                    self.err(CheckError::UnknownGhostParam {
                        name: g.name.name.clone(),
                        which: "given",
                        method: callee.to_string(),
                        span: g.name.span,
                    });
                }
            }
        }
        // `then { r = y; }`: the caller's variable `r` receives the callee's yields `y`.
        for y in yields {
            let target = self.assign_var(&y.name, y.name.span);
            self.note_name_write(&y.name, &target, 0);
            let source = match &y.value.kind {
                ExprKind::Name(id) => params_yields.iter().find(|p| p.name == id.name).ok_or(id),
                _ => {
                    self.expr(&y.value);
                    self.err(CheckError::UnknownGhostParam {
                        name: "(an expression)".into(),
                        which: "yields",
                        method: callee.to_string(),
                        span: y.value.span,
                    });
                    continue;
                }
            };
            match source {
                Ok(p) => {
                    if !assignable(&target, &p.ty) {
                        let (expected, found) = (self.show(&target), self.show(&p.ty));
                        self.err(CheckError::Mismatch {
                            what: "`then` assignment".into(),
                            expected,
                            found,
                            span: y.span,
                        });
                    }
                }
                Err(id) => self.err(CheckError::UnknownGhostParam {
                    name: id.name.clone(),
                    which: "yields",
                    method: callee.to_string(),
                    span: id.span,
                }),
            }
        }
        self.ghost = outer_ghost;
    }

    /// A call whose type arguments do not match its callee's type parameters (`sig`; `None`
    /// for a built-in function, which has none).
    fn check_type_arg_count(&mut self, name: &Ident, type_args: &[Type], sig: Option<&MethodSig>) {
        let expected = sig.map_or(0, |s| s.type_params.len());
        if type_args.len() != expected {
            let span = match (type_args.first(), type_args.last()) {
                (Some(a), Some(b)) => a.span.to(b.span),
                _ => name.span,
            };
            self.err(CheckError::TypeArgCount {
                name: name.name.clone(),
                expected,
                found: type_args.len(),
                span,
                decl: sig.map_or(name.span, |s| s.span),
            });
        }
    }

    fn receiver_class(&self, r: &Expr) -> Option<ClassId> {
        if matches!(r.kind, ExprKind::This) {
            return self.class;
        }
        self.static_class(r)
    }

    fn unknown_call(
        &mut self,
        name: &'a Ident,
        args: &'a [Expr],
        given: &'a [GhostArg],
        yields: &'a [GhostArg],
        in_what: &str,
    ) -> Ty {
        self.err(CheckError::UnknownMethod {
            name: name.name.clone(),
            in_what: in_what.to_string(),
            span: name.span,
        });
        for a in args {
            self.expr(a);
        }
        for g in given.iter().chain(yields) {
            self.expr(&g.value);
        }
        Ty::Unknown
    }

    /// Functions on values written as calls: `head(s)`, `tail(s)`, `isEmpty(s)`, `Some(x)`,
    /// `o.getOrElse(d)`, `o.get()`, `s.head()`...
    fn builtin_call(
        &mut self,
        receiver_ty: Option<Ty>,
        name: &'a Ident,
        args: &'a [Expr],
        given: &'a [GhostArg],
        yields: &'a [GhostArg],
    ) -> Ty {
        let (subject, rest): (Option<Ty>, &'a [Expr]) = match receiver_ty {
            Some(t) => (Some(t), args),
            None => match name.name.as_str() {
                "head" | "tail" | "isEmpty" if args.len() == 1 => {
                    (Some(self.expr(&args[0])), &args[1..])
                }
                "removeAt" if args.len() == 2 => (Some(self.expr(&args[0])), &args[1..]),
                // 1.x map functions: `getFromMap(m, k)`, `buildMap(m, k, v)`, ...
                "getFromMap" | "buildMap" | "removeFromMap" | "keysMap" | "valuesMap"
                | "disjointMap" | "equalsMap" | "cardMap" | "itemsMap"
                    if !args.is_empty() =>
                {
                    (Some(self.expr(&args[0])), &args[1..])
                }
                // 1.x: `getOption(o)`, `getOrElseOption(o, d)`.
                "getOption" | "getOrElseOption" if !args.is_empty() => {
                    (Some(self.expr(&args[0])), &args[1..])
                }
                "Some" if args.len() == 1 => {
                    let t = self.expr(&args[0]);
                    return Ty::Option(Box::new(t));
                }
                "None" if args.is_empty() => return Ty::Option(Box::new(Ty::Unknown)),
                // `perm(x.f)`: the permission held to a location where it is evaluated.
                "perm" if args.len() == 1 && given.is_empty() && yields.is_empty() => {
                    self.heap_location(&args[0]);
                    return Ty::ZFrac;
                }
                _ => return self.unknown_call(name, args, given, yields, ""),
            },
        };
        let subject = subject.unwrap_or(Ty::Unknown);
        let n = name.name.as_str();
        let result = match (&subject, n, rest.len()) {
            (Ty::Unknown, _, _) => {
                for a in rest {
                    self.expr(a);
                }
                return Ty::Unknown;
            }
            (Ty::Seq(el), "head", 0) => Some((**el).clone()),
            (Ty::Seq(_), "tail", 0) => Some(subject.clone()),
            (Ty::Seq(el), "contains", 1) => {
                self.expect(&rest[0], el, "`contains` element");
                Some(Ty::Bool)
            }
            (Ty::Seq(_), "removeAt", 1) => {
                self.expect(&rest[0], &Ty::Int, "`removeAt` index");
                Some(subject.clone())
            }
            (Ty::Seq(_) | Ty::Set(_) | Ty::Bag(_) | Ty::Map(..), "isEmpty", 0) => Some(Ty::Bool),
            (Ty::Map(k, v), "add" | "buildMap", 2) => {
                self.expect(&rest[0], k, "map key");
                self.expect(&rest[1], v, "map value");
                Some(subject.clone())
            }
            (Ty::Map(k, _), "remove" | "removeFromMap", 1) => {
                self.expect(&rest[0], k, "map key");
                Some(subject.clone())
            }
            (Ty::Map(k, v), "get" | "getFromMap", 1) => {
                self.expect(&rest[0], k, "map key");
                Some((**v).clone())
            }
            (Ty::Map(..), "disjoint" | "disjointMap" | "equals" | "equalsMap", 1) => {
                self.expect(&rest[0], &subject, "map");
                Some(Ty::Bool)
            }
            (Ty::Map(k, _), "keys" | "keysMap", 0) => Some(Ty::Set(k.clone())),
            (Ty::Map(_, v), "values" | "valuesMap", 0) => Some(Ty::Set(v.clone())),
            (Ty::Map(..), "size" | "cardMap", 0) => Some(Ty::Int),
            (Ty::Map(k, v), "items" | "itemsMap", 0) => {
                Some(Ty::Set(Box::new(Ty::Tuple(k.clone(), v.clone()))))
            }
            (Ty::Option(el), "get" | "getOption", 0) => Some((**el).clone()),
            (Ty::Option(el), "getOrElse" | "getOrElseOption", 1) => {
                let el = (**el).clone();
                self.expect(&rest[0], &el, "`getOrElse` default");
                Some(el)
            }
            _ => None,
        };
        result.unwrap_or_else(|| {
            for a in rest {
                self.expr(a);
            }
            let ty = self.show(&subject);
            self.err(CheckError::NoSuchMember {
                name: n.to_string(),
                ty,
                span: name.span,
            });
            Ty::Unknown
        })
    }

    // ---- helpers for gpuopt ----------------------------------------------------------------

    /// The type of a field of the class being checked, if `name` is one.
    pub(crate) fn field_type(&self, name: &str) -> Option<Ty> {
        self.current_field(name)
    }

    /// The type of a parameter of the method being checked, if `name` is one.
    pub(crate) fn param_type(&self, name: &str) -> Option<Ty> {
        self.method?
            .params
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.ty.clone())
    }
}

/// Whether a value of type `ty` may refer to memory (an array, an object, a collection of
/// them): storing one into a variable may alias it with memory ghost code did not allocate.
fn holds_references(ty: &Ty) -> bool {
    !matches!(
        ty,
        Ty::Int | Ty::Bool | Ty::Frac | Ty::ZFrac | Ty::Rational | Ty::Resource | Ty::Void
    )
}

/// Where a contract stands, which decides the clause kinds it may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClauseSite {
    Class,
    Field,
    Method,
    Loop,
    Par,
    Barrier,
}

impl ClauseSite {
    fn allows(self, clause: &ClauseKind) -> bool {
        use ClauseKind::*;
        match self {
            // 1.x: `lock_invariant` before a class or on its constructor.
            ClauseSite::Class | ClauseSite::Field => matches!(clause, LockInvariant(_)),
            ClauseSite::Method => !matches!(clause, LoopInvariant(_)),
            // VerCors also accepts requires/ensures on loops (iteration contracts).
            ClauseSite::Loop => !matches!(clause, Given(_) | Yields(_) | LockInvariant(_)),
            ClauseSite::Par => {
                !matches!(clause, LoopInvariant(_) | LockInvariant(_) | Decreases(_))
            }
            ClauseSite::Barrier => matches!(clause, Requires(_) | Ensures(_) | Context(_)),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            ClauseSite::Class => "before a class",
            ClauseSite::Field => "before a field",
            ClauseSite::Method => "in a method contract",
            ClauseSite::Loop => "before a loop",
            ClauseSite::Par => "in a par block contract",
            ClauseSite::Barrier => "in a barrier contract",
        }
    }
}

/// W0203 for each trigger group of `q` ([`Expr::trigger_groups`]) that can be no pattern: a
/// bare binder, or a binder of `q` it does not mention. The verifier leaves such a group out
/// (`verify::expr::user_patterns`); this says so where the user wrote it.
fn unusable_triggers(q: &Quantifier) -> Vec<CheckWarning> {
    fn names(e: &Expr, out: &mut Vec<String>) {
        if let ExprKind::Name(id) = &e.kind {
            out.push(id.name.clone());
        }
        e.for_each_child(&mut |c| names(c, out));
    }
    let binders: Vec<&str> = q.binders.iter().map(|b| b.name.name.as_str()).collect();
    let mut warnings = Vec::new();
    for group in q.body.trigger_groups() {
        let terms: Vec<&Expr> = group
            .iter()
            .filter_map(|t| match &t.kind {
                ExprKind::Trigger(term, _) => Some(&**term),
                _ => None,
            })
            .collect();
        let bare = terms.iter().find_map(|t| match &t.kind {
            ExprKind::Name(id) if binders.contains(&id.name.as_str()) => Some(id.name.clone()),
            _ => None,
        });
        let mut mentioned = Vec::new();
        for t in &terms {
            names(t, &mut mentioned);
        }
        let missing = binders.iter().find(|b| !mentioned.iter().any(|m| m == *b));
        let reason = match (bare, missing) {
            (Some(b), _) => format!("it is the binder `{b}` alone"),
            (None, Some(b)) => format!("it does not mention the binder `{b}`"),
            (None, None) => continue,
        };
        warnings.push(CheckWarning::UnusableTrigger {
            reason,
            span: group[0].span,
        });
    }
    warnings
}
