//! Statement execution (big-step): locals, assignments, `++`/`--`, control flow, calls, and the
//! skipping of specification statements. Par blocks are handed to `par.rs`.

use crate::syntax::{Block, Expr, ExprKind, Span, Stmt, StmtKind, TypeKind};

use super::{Access, InterpError, Machine, Value};

/// How a statement ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    Normal,
    Return(Option<Value>),
}

/// The variables of one method activation (or one thread): a stack of scopes. `None` is a
/// declared local without a value yet.
#[derive(Clone, Debug)]
pub(crate) struct Env<'p> {
    vars: Vec<(&'p str, Option<Value>)>,
    marks: Vec<usize>,
    /// The class whose method is running: bare calls resolve there first.
    pub(crate) class: Option<usize>,
    /// A thread of a par block: `return` is not allowed (a kernel thread cannot return from
    /// the launching method).
    pub(crate) in_thread: bool,
    /// The permissions this activation holds (followed only with `Limits::check_specs`).
    pub(crate) perms: super::specs::Ledger,
    /// The memory where the method started, for `\old` (only with `Limits::check_specs`).
    pub(crate) old: Option<std::rc::Rc<super::Memory>>,
}

impl<'p> Env<'p> {
    pub(crate) fn new(class: Option<usize>) -> Env<'p> {
        Env {
            vars: Vec::new(),
            marks: Vec::new(),
            class,
            in_thread: false,
            perms: Default::default(),
            old: None,
        }
    }

    pub(crate) fn declare(&mut self, name: &'p str, v: Option<Value>) {
        self.vars.push((name, v));
    }

    pub(crate) fn get(&self, name: &str) -> Option<Option<Value>> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }

    pub(crate) fn set(&mut self, name: &str, v: Value) -> bool {
        match self.vars.iter_mut().rev().find(|(n, _)| *n == name) {
            Some(slot) => {
                slot.1 = Some(v);
                true
            }
            None => false,
        }
    }

    /// Removes the most recent declaration (a quantifier binder).
    pub(crate) fn pop_var(&mut self) {
        self.vars.pop();
    }

    pub(crate) fn push_scope(&mut self) {
        self.marks.push(self.vars.len());
    }

    pub(crate) fn pop_scope(&mut self) {
        if let Some(mark) = self.marks.pop() {
            self.vars.truncate(mark);
        }
    }
}

impl<'p> Machine<'p, '_> {
    pub(crate) fn exec_block(
        &mut self,
        env: &mut Env<'p>,
        block: &'p Block,
    ) -> Result<Flow, InterpError> {
        env.push_scope();
        let result = self.exec_stmts(env, &block.stmts);
        env.pop_scope();
        result
    }

    fn exec_stmts(&mut self, env: &mut Env<'p>, stmts: &'p [Stmt]) -> Result<Flow, InterpError> {
        for stmt in stmts {
            if let Flow::Return(v) = self.exec(env, stmt)? {
                return Ok(Flow::Return(v));
            }
        }
        Ok(Flow::Normal)
    }

    pub(crate) fn exec(&mut self, env: &mut Env<'p>, stmt: &'p Stmt) -> Result<Flow, InterpError> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.exec_inner(env, stmt))
    }

    fn exec_inner(&mut self, env: &mut Env<'p>, stmt: &'p Stmt) -> Result<Flow, InterpError> {
        self.tick(stmt.span)?;
        let mut started = false;
        match &stmt.kind {
            StmtKind::LocalDecl { vars, .. } => {
                for var in vars {
                    let v = match &var.init {
                        Some(e) => Some(self.eval(env, e)?),
                        None => None,
                    };
                    env.declare(&var.name.name, v);
                }
            }
            StmtKind::Assign { target, value } => self.assign(env, target, value)?,
            StmtKind::Increment(target) => self.step_by(env, target, 1, stmt.span)?,
            StmtKind::Decrement(target) => self.step_by(env, target, -1, stmt.span)?,
            StmtKind::Expr(e) => {
                self.eval_effect(env, e)?;
            }
            StmtKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                if self.eval_bool(env, cond)? {
                    return self.exec_scoped(env, then_branch);
                } else if let Some(e) = else_branch {
                    return self.exec_scoped(env, e);
                }
            }
            StmtKind::While {
                cond,
                body,
                contract,
            } => loop {
                self.check_invariants(env, contract, started)?;
                started = true;
                self.tick(cond.span)?;
                if !self.eval_bool(env, cond)? {
                    break;
                }
                if let Flow::Return(v) = self.exec_scoped(env, body)? {
                    return Ok(Flow::Return(v));
                }
            },
            StmtKind::For {
                init,
                cond,
                update,
                body,
                contract,
            } => {
                env.push_scope();
                let result =
                    self.exec_for(env, init.as_deref(), cond.as_ref(), update, body, contract);
                env.pop_scope();
                return result;
            }
            StmtKind::Block(block) => return self.exec_block(env, block),
            StmtKind::Return(_) if env.in_thread => {
                return Err(InterpError::unsupported(
                    "`return` inside a par block",
                    stmt.span,
                ))
            }
            StmtKind::Return(e) => {
                let v = match e {
                    Some(e) => Some(self.eval(env, e)?),
                    None => None,
                };
                return Ok(Flow::Return(v));
            }
            StmtKind::Par(group) => self.run_group(env, group)?,
            StmtKind::Barrier(b) => {
                return Err(InterpError::unsupported(
                    format!(
                        "`barrier({})` outside the par block it synchronises (in a nested par block or a called method)",
                        b.label.name
                    ),
                    stmt.span,
                ));
            }
            StmtKind::Assert(e) => self.assert(env, e, stmt.span)?,
            // Specifications: never executed (with `check_specs`, an assumption must hold of
            // the run, and ghost code that may move permissions ends permission checking).
            StmtKind::Assume(e) if self.limits.check_specs => {
                self.check_assume(env, e, stmt.span)?
            }
            StmtKind::Ghost(_)
            | StmtKind::Fold(_)
            | StmtKind::Unfold(_)
            | StmtKind::Inhale(_)
            | StmtKind::Exhale(_)
                if self.limits.check_specs =>
            {
                self.skip_ghost(env, stmt)
            }
            StmtKind::Assume(_)
            | StmtKind::Refute(_)
            | StmtKind::Inhale(_)
            | StmtKind::Exhale(_)
            | StmtKind::Ghost(_)
            | StmtKind::Fold(_)
            | StmtKind::Unfold(_)
            | StmtKind::GpuOpt(_) => {}
            StmtKind::Invariant { .. } => {
                return Err(InterpError::unsupported("`invariant` blocks", stmt.span))
            }
            StmtKind::Atomic { .. } => {
                return Err(InterpError::unsupported("`atomic` blocks", stmt.span))
            }
            StmtKind::Action { .. } => {
                return Err(InterpError::unsupported("`action` blocks", stmt.span))
            }
            StmtKind::Lock(_)
            | StmtKind::Unlock(_)
            | StmtKind::Commit(_)
            | StmtKind::Wait(_)
            | StmtKind::Notify(_) => return Err(InterpError::unsupported("locks", stmt.span)),
            StmtKind::Fork(_) | StmtKind::Join(_) => {
                return Err(InterpError::unsupported("`fork`/`join`", stmt.span))
            }
            StmtKind::Goto(_) | StmtKind::Label(_) => {
                return Err(InterpError::unsupported("`goto` and `label`", stmt.span))
            }
        }
        Ok(Flow::Normal)
    }

    /// A branch or loop body: a declaration in it is local to it.
    pub(crate) fn exec_scoped(
        &mut self,
        env: &mut Env<'p>,
        stmt: &'p Stmt,
    ) -> Result<Flow, InterpError> {
        env.push_scope();
        let result = self.exec(env, stmt);
        env.pop_scope();
        result
    }

    fn exec_for(
        &mut self,
        env: &mut Env<'p>,
        init: Option<&'p Stmt>,
        cond: Option<&'p Expr>,
        update: &'p Option<Box<Stmt>>,
        body: &'p Stmt,
        contract: &'p crate::syntax::Contract,
    ) -> Result<Flow, InterpError> {
        if let Some(init) = init {
            self.exec(env, init)?;
        }
        let mut started = false;
        loop {
            self.check_invariants(env, contract, started)?;
            started = true;
            self.tick(body.span)?;
            if let Some(c) = cond {
                if !self.eval_bool(env, c)? {
                    return Ok(Flow::Normal);
                }
            }
            if let Flow::Return(v) = self.exec_scoped(env, body)? {
                return Ok(Flow::Return(v));
            }
            if let Some(u) = update {
                self.exec(env, u)?;
            }
        }
    }

    /// `assert e;`: evaluated when executable, else counted as skipped. Top-level `**`/`&&`
    /// conjuncts that are permissions only (`Perm`, `PointsTo`, `\forall*` over them,
    /// `c ==> Perm(..)`) are left out — they are about the verifier's state, not the program's —
    /// and the rest is evaluated left to right; an assert of permissions only is skipped.
    pub(crate) fn assert(
        &mut self,
        env: &mut Env<'p>,
        e: &'p Expr,
        span: Span,
    ) -> Result<(), InterpError> {
        let mut conjuncts = Vec::new();
        e.flatten_and(&mut conjuncts);
        conjuncts.retain(|c| !super::specs::is_permission(c));
        if conjuncts.is_empty() {
            self.asserts_skipped += 1;
            return Ok(());
        }
        for c in conjuncts {
            match self.eval(env, c) {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => {
                    self.asserts_evaluated += 1;
                    return Err(InterpError::AssertFailed {
                        thread: self.thread_suffix(),
                        span,
                    });
                }
                Ok(other) => {
                    return Err(InterpError::TypeMismatch {
                        expected: "boolean",
                        found: other.kind(),
                        span: c.span,
                    })
                }
                Err(InterpError::Unsupported { .. }) => {
                    self.asserts_skipped += 1;
                    return Ok(());
                }
                Err(other) => return Err(other),
            }
        }
        self.asserts_evaluated += 1;
        Ok(())
    }

    fn assign(
        &mut self,
        env: &mut Env<'p>,
        target: &'p Expr,
        value: &'p Expr,
    ) -> Result<(), InterpError> {
        match &target.kind {
            ExprKind::Name(id) => {
                let v = self.eval(env, value)?;
                if env.set(&id.name, v) {
                    Ok(())
                } else {
                    Err(InterpError::unsupported(
                        format!("assignment to `{}`, which is not a local variable", id.name),
                        target.span,
                    ))
                }
            }
            ExprKind::Index { base, index } => {
                let (r, i) = self.cell_of(env, base, index, target.span)?;
                let v = self.eval(env, value)?;
                self.check_access(env, (r, i), Access::Write, target.span)?;
                self.write_cell(r, i, v, target.span)
            }
            _ => Err(InterpError::unsupported(
                "assignment to this kind of location (only locals and array cells)",
                target.span,
            )),
        }
    }

    /// `x++` / `x--` (`delta` is 1 or -1).
    fn step_by(
        &mut self,
        env: &mut Env<'p>,
        target: &'p Expr,
        delta: i128,
        span: Span,
    ) -> Result<(), InterpError> {
        let bump = |v: Value| -> Result<Value, InterpError> {
            match v {
                Value::Int(x) => x
                    .checked_add(delta)
                    .map(Value::Int)
                    .ok_or(InterpError::Overflow { span }),
                other => Err(InterpError::TypeMismatch {
                    expected: "int",
                    found: other.kind(),
                    span: target.span,
                }),
            }
        };
        match &target.kind {
            ExprKind::Name(id) => {
                let old = self.eval(env, target)?;
                let new = bump(old)?;
                if env.set(&id.name, new) {
                    Ok(())
                } else {
                    Err(InterpError::unsupported(
                        format!("`{}` is not a local variable", id.name),
                        target.span,
                    ))
                }
            }
            ExprKind::Index { base, index } => {
                let (r, i) = self.cell_of(env, base, index, target.span)?;
                self.check_access(env, (r, i), Access::Write, target.span)?;
                let old = self.read_cell(r, i, target.span)?;
                let new = bump(old)?;
                self.write_cell(r, i, new, target.span)
            }
            _ => Err(InterpError::unsupported(
                "`++`/`--` on this kind of location (only locals and array cells)",
                target.span,
            )),
        }
    }

    /// The default cell value of a new array whose element type is `elem`.
    pub(crate) fn default_value(elem: &TypeKind) -> Option<Value> {
        match elem {
            TypeKind::Int => Some(Value::Int(0)),
            TypeKind::Bool => Some(Value::Bool(false)),
            TypeKind::Array { .. } | TypeKind::Class(_) => Some(Value::Null),
            _ => None,
        }
    }
}
