//! Barrier uniformity (design.md, `barrier`, item 3): every thread of a par block must reach
//! a barrier of that block under the same conditions and agree on the locals its contract
//! mentions. Checked by a flow-sensitive taint analysis over the IR, not by syntax.
//!
//! Taint sources: the iterators (thread ids) of the par blocks in scope, heap reads (`a[i]` on
//! an array, `o.f`, a bare name that is no local or parameter, so an implicit field, `\old`,
//! `Perm(..)` and friends), `new` inside a par block, and calls other than heap-free pure functions of uniform
//! arguments. Taint flows through expressions, assignments (explicitly) and conditions
//! (implicitly: a local assigned under a tainted `if`/loop condition is tainted), and around
//! loops to a fixpoint (the state at a loop head joins the entry state with the state after the
//! body). `a.length` is as uniform as `a`; indexing a `seq`/`map` local or parameter is pure.
//!
//! # Invariants
//! - **Conservative.** Nothing derived, even indirectly, from a thread id is ever called
//!   uniform: joins only add taint, strong updates happen only for assignments under a uniform
//!   condition, anything the analysis does not model is tainted. Heap reads taint also outside
//!   par blocks (design.md: "not derived from a heap read"), which may reject a correct program.
//!   The one exception is relative to the barrier's block L: a local that neither L nor a
//!   sibling block of its group assigns (`Stmt::assigned_locals`) holds, in all of L's threads,
//!   the value it had when L started — one value, however it was derived from the thread id of
//!   an enclosing block (a work-group's local array allocated by its group thread).
//! - Never panics; an unknown barrier label (E0205, `check`'s) is simply skipped.
//! - Errors are deduplicated per (barrier, guard or name) and come in source order.
//!
//! # Limits
//! - Calls are tainted unless the callee is known to be a pure function without heap reads
//!   (only [`check_program_uniformity`] knows the callees; [`check_barrier_uniformity`] sees
//!   one method and taints every call).
//! - A `return` under a tainted condition inside a par block taints all that follows it to
//!   the end of the outermost par block, not only what the returning threads skip.
//! - Names are not resolved through scopes: a local shadowing another is the same variable
//!   here (which can only add taint).

use std::collections::{HashMap, HashSet};

use crate::syntax::{
    Barrier, ClauseKind, Expr, ExprKind, Item, Member, MemberKind, Method, MethodBody, Modifier,
    ParGroup, Program, Span, Stmt, StmtKind, TypeKind,
};

/// A barrier that the threads of its block might not reach or agree on together. Codes E051x.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum UniformityError {
    /// An `if` or loop condition between the par block and the barrier depends on a thread id
    /// or a heap read.
    #[error("barrier under a thread-dependent condition")]
    #[diagnostic(
        code(E0510),
        help("all threads of the block must reach the barrier: its guards must be uniform")
    )]
    ThreadDependentGuard {
        #[label("this barrier")]
        barrier: Span,
        #[label("guarded by this condition")]
        guard: Span,
        #[label("thread-dependent because of this")]
        origin: Span,
    },

    /// A local other than a thread id, used in the barrier's contract, is not uniform.
    #[error("barrier contract uses a thread-dependent local `{name}`")]
    #[diagnostic(
        code(E0511),
        help("locals in a barrier contract must have the same value in every thread")
    )]
    ThreadDependentLocal {
        name: String,
        #[label("this barrier")]
        barrier: Span,
        #[label("used here")]
        usage: Span,
        #[label("thread-dependent because of this")]
        origin: Span,
    },
}

impl UniformityError {
    /// The primary span: the offending barrier statement.
    pub fn span(&self) -> Span {
        match self {
            UniformityError::ThreadDependentGuard { barrier, .. }
            | UniformityError::ThreadDependentLocal { barrier, .. } => *barrier,
        }
    }

    /// Where the taint came from: the thread id, heap read or call in a condition, the
    /// assignment that made a local thread-dependent, or the condition it was assigned under.
    pub fn origin(&self) -> Span {
        match self {
            UniformityError::ThreadDependentGuard { origin, .. }
            | UniformityError::ThreadDependentLocal { origin, .. } => *origin,
        }
    }

    /// The stable code, e.g. `"E0510"`.
    pub fn code_str(&self) -> &'static str {
        match self {
            UniformityError::ThreadDependentGuard { .. } => "E0510",
            UniformityError::ThreadDependentLocal { .. } => "E0511",
        }
    }
}

/// Checks the barriers of one method, knowing nothing of other methods: every call taints.
pub fn check_barrier_uniformity(method: &Method) -> Vec<UniformityError> {
    Analysis::new(method, &HashSet::new(), &[]).run(method)
}

/// Checks the barriers of every method of `program`. Calls to pure functions whose bodies
/// (transitively) read no heap and take only value parameters are uniform when their
/// arguments are; `given` parameters count as parameters.
pub fn check_program_uniformity(program: &Program) -> Vec<UniformityError> {
    let members = all_members(program);
    let pure = heap_free_functions(&members);
    let mut errors = Vec::new();
    for member in members {
        let MemberKind::Method(method) = &member.kind else {
            continue;
        };
        let given: Vec<&str> = member
            .contract
            .clauses
            .iter()
            .filter_map(|c| match &c.kind {
                ClauseKind::Given(p) | ClauseKind::Yields(p) => Some(p.name.name.as_str()),
                _ => None,
            })
            .collect();
        errors.extend(Analysis::new(method, &pure, &given).run(method));
    }
    errors
}

fn all_members(program: &Program) -> Vec<&Member> {
    let mut out = Vec::new();
    for item in &program.items {
        match item {
            Item::Class(class) => out.extend(class.members.iter()),
            Item::Member(m) => out.push(m),
        }
    }
    out
}

fn is_value_type(ty: &TypeKind) -> bool {
    !matches!(ty, TypeKind::Array { .. } | TypeKind::Class(_))
}

/// Names of pure functions with an expression body, only value parameters, and no heap read
/// in the body or in any function it calls (greatest fixpoint: recursion reads no heap). A
/// name overloaded with anything else is left out.
fn heap_free_functions(members: &[&Member]) -> HashSet<String> {
    let mut candidates: HashMap<&str, (&Method, &Expr)> = HashMap::new();
    let mut excluded: HashSet<&str> = HashSet::new();
    for m in members {
        let MemberKind::Method(method) = &m.kind else {
            continue;
        };
        let name = method.name.name.as_str();
        let ok = method.modifiers.contains(&Modifier::Pure)
            && method.params.iter().all(|p| is_value_type(&p.ty.kind));
        match (&method.body, ok) {
            (MethodBody::Expr(e), true) if !candidates.contains_key(name) => {
                candidates.insert(name, (method, e));
            }
            _ => {
                excluded.insert(name);
            }
        }
    }
    for name in &excluded {
        candidates.remove(name);
    }
    let mut set: HashSet<String> = candidates.keys().map(|s| s.to_string()).collect();
    loop {
        let before = set.len();
        for (name, (method, body)) in &candidates {
            let params: HashSet<&str> =
                method.params.iter().map(|p| p.name.name.as_str()).collect();
            if set.contains(*name) && !reads_no_heap(body, &params, &mut Vec::new(), &set) {
                set.remove(*name);
            }
        }
        if set.len() == before {
            return set;
        }
    }
}

/// Whether `e` (over value-typed `params`) reads no heap and calls only functions in `pure`.
fn reads_no_heap(
    e: &Expr,
    params: &HashSet<&str>,
    bound: &mut Vec<String>,
    pure: &HashSet<String>,
) -> bool {
    match &e.kind {
        ExprKind::Name(id) => params.contains(id.name.as_str()) || bound.contains(&id.name),
        ExprKind::Call {
            receiver,
            name,
            args,
            given,
            yields,
            ..
        } => {
            receiver.is_none()
                && given.is_empty()
                && yields.is_empty()
                && pure.contains(&name.name)
                && args.iter().all(|a| reads_no_heap(a, params, bound, pure))
        }
        ExprKind::Let {
            name, value, body, ..
        } => {
            if !reads_no_heap(value, params, bound, pure) {
                return false;
            }
            bound.push(name.name.clone());
            let ok = reads_no_heap(body, params, bound, pure);
            bound.pop();
            ok
        }
        ExprKind::Quantifier(q) => {
            let depth = bound.len();
            let mut ok = true;
            for b in &q.binders {
                if let Some((lo, hi)) = &b.range {
                    ok = ok
                        && reads_no_heap(lo, params, bound, pure)
                        && reads_no_heap(hi, params, bound, pure);
                }
                bound.push(b.name.name.clone());
            }
            ok = ok
                && q.cond
                    .as_ref()
                    .is_none_or(|c| reads_no_heap(c, params, bound, pure))
                && reads_no_heap(&q.body, params, bound, pure);
            bound.truncate(depth);
            ok
        }
        ExprKind::This
        | ExprKind::Field { .. }
        | ExprKind::New { .. }
        | ExprKind::NewArray { .. }
        | ExprKind::Old(_)
        | ExprKind::Builtin { .. }
        | ExprKind::Unfolding { .. } => false,
        // Literals, operators, collections, and indexing: with only value parameters, indexing
        // is on sequences and maps.
        _ => {
            let mut ok = true;
            e.for_each_child(&mut |c| ok = ok && reads_no_heap(c, params, bound, pure));
            ok
        }
    }
}

/// Taint of a value: `None` when uniform, else the span that made it thread-dependent.
type Taint = Option<Span>;

fn join(a: Taint, b: Taint) -> Taint {
    a.or(b)
}

/// Taint of each local of the method at one program point.
type State = HashMap<String, Taint>;

fn join_states(a: &State, b: &State) -> State {
    let mut out = a.clone();
    for (k, v) in b {
        let slot = out.entry(k.clone()).or_insert(None);
        *slot = join(*slot, *v);
    }
    out
}

fn same_taintedness(a: &State, b: &State) -> bool {
    let tainted = |s: &State| -> HashSet<String> {
        s.iter()
            .filter(|(_, v)| v.is_some())
            .map(|(k, _)| k.clone())
            .collect()
    };
    tainted(a) == tainted(b)
}

/// A par block being walked.
struct Frame {
    label: Option<String>,
    /// The names of its iterators (thread ids).
    iters: Vec<String>,
    /// `conds.len()` when the block was entered.
    cond_depth: usize,
    /// The locals that this block or a sibling block of its group may assign: every other
    /// local keeps, for all threads of the block, the value it had when the block started.
    assigned: HashSet<String>,
}

struct Analysis<'a> {
    /// Parameters and `given`/`yields` names: uniform.
    params: HashSet<String>,
    /// Every name declared as a local somewhere in the method.
    locals: HashSet<String>,
    /// Names of locals and parameters of value type (their indexing reads no heap).
    value_typed: HashSet<String>,
    /// Heap-free pure functions.
    pure: &'a HashSet<String>,
    frames: Vec<Frame>,
    /// Enclosing conditions (span, taint), outermost first.
    conds: Vec<(Span, Taint)>,
    /// Set by a `return` under a tainted condition inside a par block: (the condition, its
    /// taint). Everything after it, to the end of the outermost par block, runs only in the
    /// threads that did not return.
    returned: Option<(Span, Span)>,
    errors: Vec<UniformityError>,
    seen: HashSet<(Span, Span, String)>,
}

impl<'a> Analysis<'a> {
    fn new(method: &Method, pure: &'a HashSet<String>, given: &[&str]) -> Analysis<'a> {
        let mut params: HashSet<String> =
            method.params.iter().map(|p| p.name.name.clone()).collect();
        params.extend(given.iter().map(|s| s.to_string()));
        let mut value_typed: HashSet<String> = method
            .params
            .iter()
            .filter(|p| is_value_type(&p.ty.kind))
            .map(|p| p.name.name.clone())
            .collect();
        let mut locals = HashSet::new();
        let mut reference_typed = HashSet::new();
        if let MethodBody::Block(b) = &method.body {
            for s in &b.stmts {
                collect_decls(s, &mut locals, &mut value_typed, &mut reference_typed);
            }
        }
        // A name declared with a reference type anywhere is not trusted as a value.
        for name in &reference_typed {
            value_typed.remove(name);
        }
        for p in &method.params {
            if !is_value_type(&p.ty.kind) {
                value_typed.remove(&p.name.name);
            }
        }
        Analysis {
            params,
            locals,
            value_typed,
            pure,
            frames: Vec::new(),
            conds: Vec::new(),
            returned: None,
            errors: Vec::new(),
            seen: HashSet::new(),
        }
    }

    fn run(mut self, method: &Method) -> Vec<UniformityError> {
        if let MethodBody::Block(b) = &method.body {
            let mut state = State::new();
            for s in &b.stmts {
                self.stmt(s, &mut state);
            }
        }
        self.errors.sort_by_key(|e| {
            let at = match e {
                UniformityError::ThreadDependentGuard { guard, .. } => *guard,
                UniformityError::ThreadDependentLocal { usage, .. } => *usage,
            };
            (e.span(), at, e.origin())
        });
        self.errors
    }

    /// The taint of the control flow at this point: the span of the first tainted enclosing
    /// condition. Conditions outside the outermost par block count too (conservative).
    fn pc(&self) -> Taint {
        let cond = self.conds.iter().find_map(|(span, t)| t.map(|_| *span));
        join(cond, self.returned.map(|(guard, _)| guard))
    }

    /// The first tainted enclosing condition: (its span, its taint).
    fn tainted_cond(&self) -> Option<(Span, Span)> {
        self.conds
            .iter()
            .find_map(|(span, t)| t.map(|origin| (*span, origin)))
    }

    fn is_thread_id(&self, name: &str) -> bool {
        self.frames
            .iter()
            .any(|f| f.iters.iter().any(|i| i == name))
    }

    fn expr(&self, e: &Expr, state: &State, bound: &mut Vec<(String, Taint)>) -> Taint {
        match &e.kind {
            ExprKind::Name(id) => {
                let name = id.name.as_str();
                if let Some((_, t)) = bound.iter().rev().find(|(n, _)| n == name) {
                    *t
                } else if self.is_thread_id(name) {
                    Some(e.span)
                } else if let Some(t) = state.get(name) {
                    *t
                } else if self.params.contains(name) || self.locals.contains(name) {
                    None
                } else {
                    // An implicit field of `this`: a heap read.
                    Some(e.span)
                }
            }
            ExprKind::Index { base, .. } => {
                let pure_base = matches!(&base.kind, ExprKind::Name(id)
                    if self.value_typed.contains(&id.name)
                        || bound.iter().any(|(n, _)| n == &id.name));
                if pure_base {
                    self.children(e, state, bound)
                } else {
                    Some(e.span)
                }
            }
            ExprKind::Field { base, name } if name.name == "length" => {
                self.expr(base, state, bound)
            }
            ExprKind::Call {
                receiver,
                name,
                yields,
                ..
            } => {
                if receiver.is_none() && yields.is_empty() && self.pure.contains(&name.name) {
                    self.children(e, state, bound)
                } else {
                    Some(e.span)
                }
            }
            ExprKind::Let {
                name, value, body, ..
            } => {
                let v = self.expr(value, state, bound);
                bound.push((name.name.clone(), v));
                let t = self.expr(body, state, bound);
                bound.pop();
                join(v, t)
            }
            ExprKind::Quantifier(q) => {
                let depth = bound.len();
                let mut t = None;
                for b in &q.binders {
                    let mut range = None;
                    if let Some((lo, hi)) = &b.range {
                        range = join(self.expr(lo, state, bound), self.expr(hi, state, bound));
                    }
                    t = join(t, range);
                    bound.push((b.name.name.clone(), range));
                }
                if let Some(c) = &q.cond {
                    t = join(t, self.expr(c, state, bound));
                }
                t = join(t, self.expr(&q.body, state, bound));
                bound.truncate(depth);
                t
            }
            // One allocation before the launch is one reference for all threads; inside a
            // par block each thread allocates its own.
            ExprKind::New { .. } | ExprKind::NewArray { .. } if self.frames.is_empty() => {
                self.children(e, state, bound)
            }
            ExprKind::Field { .. }
            | ExprKind::New { .. }
            | ExprKind::NewArray { .. }
            | ExprKind::Old(_)
            | ExprKind::Builtin { .. }
            | ExprKind::Unfolding { .. } => Some(e.span),
            // Literals, operators, `?:`, slices, updates, `|s|`, triggers, collections.
            _ => self.children(e, state, bound),
        }
    }

    /// The join of the taints of the direct subexpressions of `e`.
    fn children(&self, e: &Expr, state: &State, bound: &mut Vec<(String, Taint)>) -> Taint {
        let mut t = None;
        e.for_each_child(&mut |c| t = join(t, self.expr(c, state, bound)));
        t
    }

    fn eval(&self, e: &Expr, state: &State) -> Taint {
        self.expr(e, state, &mut Vec::new())
    }

    /// `name = value` at `at`: explicit flow from the value, implicit flow from the conditions.
    fn assign(&self, name: &str, value: Taint, at: Span, state: &mut State) {
        let t = match value {
            Some(_) => Some(at),
            None => self.pc(),
        };
        state.insert(name.to_string(), t);
    }

    fn stmt(&mut self, s: &Stmt, state: &mut State) {
        match &s.kind {
            StmtKind::LocalDecl { vars, .. } => {
                for v in vars {
                    let t = v.init.as_ref().and_then(|e| self.eval(e, state));
                    self.assign(&v.name.name, t, v.span, state);
                    if let Some(init) = &v.init {
                        self.ghost_results(init, v.span, state);
                    }
                }
            }
            StmtKind::Assign { target, value } => {
                if let ExprKind::Name(id) = &target.kind {
                    let t = self.eval(value, state);
                    self.assign(&id.name, t, s.span, state);
                }
                self.ghost_results(value, s.span, state);
                // Writes to the heap change no local; reads of it are tainted anyway.
            }
            StmtKind::Increment(target) | StmtKind::Decrement(target) => {
                if let ExprKind::Name(id) = &target.kind {
                    let t = self.eval(target, state);
                    self.assign(&id.name, t, s.span, state);
                }
            }
            StmtKind::Expr(e) => self.ghost_results(e, s.span, state),
            StmtKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let t = self.eval(cond, state);
                self.conds.push((cond.span, t));
                let mut then_state = state.clone();
                self.stmt(then_branch, &mut then_state);
                let mut else_state = state.clone();
                if let Some(e) = else_branch {
                    self.stmt(e, &mut else_state);
                }
                self.conds.pop();
                *state = join_states(&then_state, &else_state);
            }
            StmtKind::While { cond, body, .. } => self.looop(Some(cond), body, None, state),
            StmtKind::For {
                init,
                cond,
                update,
                body,
                ..
            } => {
                if let Some(i) = init {
                    self.stmt(i, state);
                }
                self.looop(cond.as_ref(), body, update.as_deref(), state);
            }
            StmtKind::Block(b) => {
                for x in &b.stmts {
                    self.stmt(x, state);
                }
            }
            StmtKind::Par(group) => self.par(group, state),
            StmtKind::Barrier(b) => {
                self.barrier(b, s.span, state);
                for x in &b.body.stmts {
                    self.stmt(x, state);
                }
            }
            StmtKind::Ghost(inner) => self.stmt(inner, state),
            StmtKind::Invariant { body, .. }
            | StmtKind::Atomic { body, .. }
            | StmtKind::Action { body, .. } => {
                for x in &body.stmts {
                    self.stmt(x, state);
                }
            }
            StmtKind::Return(_) => {
                if !self.frames.is_empty() && self.returned.is_none() {
                    self.returned = self.tainted_cond();
                }
            }
            StmtKind::Assert(_)
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

    /// Locals receiving ghost results (`then { y = z; }`) of a call statement are tainted: the
    /// callee is not analysed.
    fn ghost_results(&self, e: &Expr, at: Span, state: &mut State) {
        // The caller's local is the target `y` (`Expr::ghost_result_targets`), not `z`, the
        // callee's yields name.
        e.ghost_result_targets(&mut |y| self.assign(&y.name, Some(at), at, state));
    }

    /// A loop, to a fixpoint: the head state joins the entry state with the state after the
    /// body (and update). Errors found on any pass are kept (passes only add taint).
    fn looop(
        &mut self,
        cond: Option<&Expr>,
        body: &Stmt,
        update: Option<&Stmt>,
        state: &mut State,
    ) {
        let mut head = state.clone();
        loop {
            let t = cond.and_then(|c| self.eval(c, &head));
            let span = cond.map_or(body.span, |c| c.span);
            self.conds.push((span, t));
            let mut after = head.clone();
            self.stmt(body, &mut after);
            if let Some(u) = update {
                self.stmt(u, &mut after);
            }
            self.conds.pop();
            let next = join_states(&head, &after);
            if same_taintedness(&next, &head) {
                *state = next;
                return;
            }
            head = next;
        }
    }

    fn par(&mut self, group: &ParGroup, state: &mut State) {
        let mut out = state.clone();
        let assigned: HashSet<String> = group
            .blocks
            .iter()
            .flat_map(|block| block.body.stmts.iter())
            .flat_map(Stmt::assigned_locals)
            .map(|a| a.name)
            .collect();
        for block in &group.blocks {
            // Iterator bounds are evaluated once, before the threads start: not checked here.
            self.frames.push(Frame {
                label: block.label.as_ref().map(|l| l.name.clone()),
                iters: block.iters.iter().map(|i| i.name.name.clone()).collect(),
                cond_depth: self.conds.len(),
                assigned: assigned.clone(),
            });
            let mut inner = state.clone();
            for s in &block.body.stmts {
                self.stmt(s, &mut inner);
            }
            self.frames.pop();
            if self.frames.is_empty() {
                self.returned = None;
            }
            // Outer locals are read-only in a par block; should one be written anyway, keep
            // its taint (conservative). Locals of the block go out of scope but staying in the
            // map is harmless.
            out = join_states(&out, &inner);
        }
        *state = out;
    }

    fn barrier(&mut self, b: &Barrier, at: Span, state: &State) {
        let Some(pos) = self
            .frames
            .iter()
            .rposition(|f| f.label.as_deref() == Some(b.label.name.as_str()))
        else {
            return; // `check` reports an unknown label (E0205).
        };
        let depth = self.frames[pos].cond_depth;
        let guards = self.conds[depth..].iter().copied();
        for (guard, taint) in guards.chain(self.returned.map(|(g, o)| (g, Some(o)))) {
            if let Some(origin) = taint {
                if self.seen.insert((at, guard, String::new())) {
                    self.errors.push(UniformityError::ThreadDependentGuard {
                        barrier: at,
                        guard,
                        origin,
                    });
                }
            }
        }
        // Thread ids of block L and the blocks around it may appear in the contract.
        let allowed: HashSet<&str> = self.frames[..=pos]
            .iter()
            .flat_map(|f| f.iters.iter().map(String::as_str))
            .collect();
        let mut uses = Vec::new();
        for clause in &b.contract.clauses {
            match &clause.kind {
                ClauseKind::Requires(e) | ClauseKind::Ensures(e) | ClauseKind::Context(e) => {
                    free_names(e, &mut Vec::new(), &mut uses);
                }
                _ => {}
            }
        }
        for (name, usage) in uses {
            if allowed.contains(name.as_str()) || self.params.contains(&name) {
                continue;
            }
            let taint = if self.is_thread_id(&name) {
                // A thread id of a block nested inside L.
                Some(usage)
            } else if self.locals.contains(&name) && self.frames[pos].assigned.contains(&name) {
                state.get(&name).copied().flatten()
            } else {
                // A local set before block L started and not written by it: one value for all
                // its threads, however it depends on an enclosing thread. Not a local: a field
                // or a ghost name, framed by the contract itself.
                None
            };
            if let Some(origin) = taint {
                if self.seen.insert((at, Span::default(), name.clone())) {
                    self.errors.push(UniformityError::ThreadDependentLocal {
                        name,
                        barrier: at,
                        usage,
                        origin,
                    });
                }
            }
        }
    }
}

/// Records the names declared as locals (and which have value types) in `s`.
fn collect_decls(
    s: &Stmt,
    locals: &mut HashSet<String>,
    value_typed: &mut HashSet<String>,
    reference_typed: &mut HashSet<String>,
) {
    let mut rec = |x: &Stmt| collect_decls(x, locals, value_typed, reference_typed);
    match &s.kind {
        StmtKind::LocalDecl { ty, vars } => {
            for v in vars {
                locals.insert(v.name.name.clone());
                if is_value_type(&ty.kind) {
                    value_typed.insert(v.name.name.clone());
                } else {
                    reference_typed.insert(v.name.name.clone());
                }
            }
        }
        StmtKind::If {
            then_branch,
            else_branch,
            ..
        } => {
            rec(then_branch);
            if let Some(e) = else_branch {
                rec(e);
            }
        }
        StmtKind::While { body, .. } => rec(body),
        StmtKind::For {
            init, update, body, ..
        } => {
            for x in [init, update].into_iter().flatten() {
                rec(x);
            }
            rec(body);
        }
        StmtKind::Block(b)
        | StmtKind::Invariant { body: b, .. }
        | StmtKind::Atomic { body: b, .. }
        | StmtKind::Action { body: b, .. }
        | StmtKind::Barrier(Barrier { body: b, .. }) => b.stmts.iter().for_each(rec),
        StmtKind::Par(g) => {
            for block in &g.blocks {
                block.body.stmts.iter().for_each(&mut rec);
            }
        }
        StmtKind::Ghost(inner) => rec(inner),
        _ => {}
    }
}

/// The free names of `e` with the span of each occurrence, quantifier and `\let` binders
/// excluded.
fn free_names(e: &Expr, bound: &mut Vec<String>, out: &mut Vec<(String, Span)>) {
    match &e.kind {
        ExprKind::Name(id) => {
            if !bound.contains(&id.name) {
                out.push((id.name.clone(), e.span));
            }
        }
        ExprKind::Let {
            name, value, body, ..
        } => {
            free_names(value, bound, out);
            bound.push(name.name.clone());
            free_names(body, bound, out);
            bound.pop();
        }
        ExprKind::Quantifier(q) => {
            let depth = bound.len();
            for b in &q.binders {
                if let Some((lo, hi)) = &b.range {
                    free_names(lo, bound, out);
                    free_names(hi, bound, out);
                }
                bound.push(b.name.name.clone());
            }
            if let Some(c) = &q.cond {
                free_names(c, bound, out);
            }
            free_names(&q.body, bound, out);
            bound.truncate(depth);
        }
        _ => e.for_each_child(&mut |c| free_names(c, bound, out)),
    }
}

#[cfg(test)]
mod tests;
