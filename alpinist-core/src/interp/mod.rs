//! A reference interpreter for PVL kernels: the *meaning* against which transformations are
//! tested (original and optimised program, same inputs, same final state, no race).
//!
//! Entry points: [`run`] (and [`run_with_ghosts`], which also takes `given` ghost inputs) —
//! a program, a method name, argument values and a [`Memory`] holding the arrays they refer
//! to, and [`Limits`]; it returns an [`Outcome`] (return value, final
//! memory, assert counts) or the first [`InterpError`] with the span where it happened.
//!
//! ```
//! use alpinist_core::interp::{self, Limits, Memory, Value};
//! let src = "class C { void inc(int n, int[] a) { par p(int t = 0 .. n) { a[t] = a[t] + 1; } } }";
//! let program = alpinist_core::syntax::parse(src).unwrap().program;
//! let mut memory = Memory::new();
//! let a = memory.alloc_ints(&[1, 2, 3]);
//! let args = [Value::Int(3), Value::Array(a)];
//! let out = interp::run(&program, "inc", &args, memory, &Limits::default()).unwrap();
//! assert_eq!(out.memory.ints(a), Some(vec![2, 3, 4]));
//! ```
//!
//! # Semantics
//! - **Specifications are never executed** (unless [`Limits::check_specs`], see `specs.rs`,
//!   which evaluates what the verifier must prove and follows permissions). Contracts, loop
//!   invariants, `assume`, `ghost`
//!   statements, `fold`/`unfold` and `given`/`yields` arguments are skipped. `assert e` is
//!   evaluated when `e` is executable — no permission, fraction, `\old`, ghost variable,
//!   predicate or unbounded quantifier; a `\forall`/`\exists`/`\sum` whose condition bounds
//!   every binder by computable bounds (`lo <= i && i < hi`, or `int i = lo .. hi`) is
//!   enumerated — and otherwise skipped. [`Outcome`] counts both. Top-level conjuncts that
//!   are permissions only (`Perm(a[i], p) ** a[i] == v`) are left out and the rest evaluated. An assert's reads count as
//!   reads of the thread for race detection, also when evaluation then stops at a
//!   non-executable part (conservative: a verified program frames what its asserts read).
//!   An evaluated false assert is an error.
//! - **Integers** are `i128`, every operation checked: overflow is an error, never a wrapped
//!   value. `/` and `%` truncate toward zero like C and OpenCL (`-7 / 2 == -3`, `-7 % 2 == -1`);
//!   a zero divisor is an error. (`verify` does not encode `/`, `%` yet; design.md asks the
//!   three to agree, and they do where code generation emits division: dividend ≥ 0, divisor > 0.)
//! - **Par blocks**: every thread of a block runs up to its next `barrier` of that block (or
//!   its end), then all are released together. Within such an interval the threads run one
//!   after another in thread order; that is faithful because any two accesses to one array
//!   cell by different threads in one interval, at least one a write, are reported as a
//!   [`InterpError::DataRace`] — **a race is an error, never a nondeterministic result**.
//!   Blocks launched together (`and`, `parallel { }`) run one after another, and any
//!   conflicting access between two of them is a race (they never synchronise); nested par
//!   blocks' accesses count as their enclosing thread's. A barrier reached by some threads of a
//!   block but not others, or threads waiting at different barriers, is a
//!   [`InterpError::DivergentBarrier`]. Consecutive par statements and `sequential { }` blocks
//!   are separate launches. Iterator bounds are evaluated where the block is launched (a bound
//!   that mentions another iterator is `Unsupported`); `return` inside a par block and
//!   statements inside a barrier's braces are `Unsupported`.
//! - Calls run the callee's body (methods) or evaluate it (pure functions); a bodiless
//!   non-pure method (lemma) or predicate cannot be run: [`InterpError::Unsupported`].
//!   Anything else that would affect state and is not modelled (objects and fields, `new C()`,
//!   sets, bags, maps, `lock`, `atomic`, ...) is `Unsupported` too, never silently skipped.
//! - Sequences are values ([`SeqRef`] into the memory's sequence store, compared by contents):
//!   literals, `|s|`, `s[i]`, slices, `s[i -> v]`, `++` (and 1.x `+`), `::`, `in`, `head`,
//!   `tail`, `isEmpty`; out-of-range indices and slices are [`InterpError::OutOfBounds`].
//! - Every statement, loop iteration, call and quantifier instance costs one step of
//!   [`Limits::max_steps`]; calls nest at most [`Limits::max_call_depth`] deep, so no program
//!   hangs or overflows the stack. Nothing here panics, whatever the program.
//!
//! `run` expects a program that passed [`crate::check::check`]; on one that did not it still
//! does not panic, but may report [`InterpError::TypeMismatch`] or `Unsupported`.

pub mod call;
mod error;
mod eval;
mod exec;
mod par;
mod specs;
mod value;

#[cfg(test)]
mod tests;

use std::collections::HashMap;

pub use error::{Access, InterpError, Spec};
pub use value::{ArrayRef, Memory, SeqRef, Value};
// (`Launcher` and `LaunchScope` are declared below, beside `run_launching`.)

use crate::syntax::{
    ClauseKind, Expr, Item, Member, MemberKind, Method, MethodBody, ParBlock, Program, Span,
    TypeKind,
};

/// Budgets that keep every run finite (and its memory modest: a cell is 32 bytes, a thread
/// a copy of the launching scope's variables), and the thread order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Statements, loop iterations, calls and quantifier instances, over all threads.
    pub max_steps: u64,
    /// Nesting of method and function calls.
    pub max_call_depth: usize,
    /// Threads of one par block (the product of its iterator ranges).
    pub max_threads: u64,
    /// Array cells over the whole memory, arguments included.
    pub max_cells: u64,
    /// The order threads (and blocks launched together) run in within a barrier interval. No
    /// result depends on it — a dependence would be a race, which is an error — and tests run
    /// both orders to check exactly that.
    pub order: Order,
    /// Also evaluate what the verifier must prove, where it must prove it, and follow
    /// permissions (`specs.rs`); a false one is [`InterpError::SpecFailed`]. Off by default:
    /// then specifications are never executed (see the module documentation).
    pub check_specs: bool,
    /// With `check_specs`: an entry precondition whose values hold but whose permissions
    /// cannot be followed exactly (`\matrix`, fields, predicates) admits the input, with
    /// permission checks off for the run — for a caller that needs the values decided, not
    /// permission failures found (the differential test: a top-level caller owns every
    /// cell it drew). Off: such an input is `Infeasible`.
    pub admit_untracked_permissions: bool,
}

/// See [`Limits::order`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    #[default]
    Ascending,
    Descending,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_steps: 10_000_000,
            max_call_depth: 1_000,
            max_threads: 1 << 16,
            max_cells: 1 << 22,
            order: Order::Ascending,
            check_specs: false,
            admit_untracked_permissions: false,
        }
    }
}

impl Limits {
    /// The limits for host code whose par blocks run on a device (`alpinist run` beyond the
    /// interpreter's sizes, a Rust kernel's launcher): the steps of the host code grow, the
    /// threads of a launch are the device's business, and the cells four times these.
    pub fn beyond_the_interpreter(&self) -> Limits {
        Limits {
            max_steps: self.max_steps.saturating_mul(100),
            max_threads: u64::MAX,
            max_cells: self.max_cells.saturating_mul(4),
            ..self.clone()
        }
    }
}

/// The result of a successful run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The method's return value; `None` for a void method.
    pub result: Option<Value>,
    /// The final memory: the arrays passed in keep their references; arrays allocated by the
    /// program follow them. To compare two programs, compare the arrays passed in (a rewritten
    /// program may allocate differently).
    pub memory: Memory,
    /// `assert`s executed (each execution counts: one per thread, per iteration).
    pub asserts_evaluated: u64,
    /// `assert`s met but not executable (permissions, ghost variables, unbounded quantifiers).
    pub asserts_skipped: u64,
    /// Steps used, see [`Limits::max_steps`].
    pub steps: u64,
}

/// Runs `method` of `program` on `args` (one per parameter, arrays as references into
/// `memory`). `method` is `name` when that name is unique in the program, or `Class.name`.
pub fn run(
    program: &Program,
    method: &str,
    args: &[Value],
    memory: Memory,
    limits: &Limits,
) -> Result<Outcome, InterpError> {
    run_with_ghosts(program, method, args, &[], memory, limits)
}

/// [`run`], also giving values to some of the method's ghost inputs (`given T x;` clauses), by
/// name. Ghost code is still never executed; the values only make the `assert`s that mention
/// those names executable (Kogge-Stone's `seg(xs, ..)` with the ghost copy `xs`, say).
pub fn run_with_ghosts(
    program: &Program,
    method: &str,
    args: &[Value],
    ghosts: &[(&str, Value)],
    memory: Memory,
    limits: &Limits,
) -> Result<Outcome, InterpError> {
    run_entry(program, method, args, ghosts, memory, limits, None, false)
}

/// Whether the input satisfies `method`'s entry precondition, values and permissions, as a
/// run with [`Limits::check_specs`] checks it at entry — without running the body: for a run
/// too large for the interpreter whose par blocks go to a device ([`run_launching`], which
/// checks no specifications). `Err(Infeasible)` where it does not hold.
pub fn admits(
    program: &Program,
    method: &str,
    args: &[Value],
    ghosts: &[(&str, Value)],
    memory: Memory,
    limits: &Limits,
) -> Result<(), InterpError> {
    let checked = Limits {
        check_specs: true,
        ..limits.clone()
    };
    run_entry(program, method, args, ghosts, memory, &checked, None, true).map(|_| ())
}

/// [`run`], with every par block the host code reaches (outside any thread) handed to
/// `launcher` instead of run here: the interpreter is the host program of a device run
/// (`alpinist run`). Specifications are not checked (`limits.check_specs` must be off: a
/// launched block's accesses are not followed).
pub fn run_launching(
    program: &Program,
    method: &str,
    args: &[Value],
    memory: Memory,
    limits: &Limits,
    launcher: &mut dyn Launcher,
) -> Result<Outcome, InterpError> {
    if limits.check_specs {
        return Err(InterpError::BadCall(
            "specifications cannot be checked in a run that launches par blocks elsewhere".into(),
        ));
    }
    run_entry(
        program,
        method,
        args,
        &[],
        memory,
        limits,
        Some(launcher),
        false,
    )
}

/// Runs par blocks somewhere else than the interpreter (an OpenCL device); see
/// [`run_launching`].
pub trait Launcher {
    /// Runs `block` to completion in `scope`, the launching method's variables and memory
    /// (arrays are read from and written back to [`LaunchScope::memory`]). An `Err` stops the
    /// run with [`InterpError::Launch`] at the block.
    fn launch<'p>(
        &mut self,
        block: &'p ParBlock,
        scope: &mut dyn LaunchScope<'p>,
    ) -> Result<(), String>;
}

/// What a [`Launcher`] sees of the launching method.
pub trait LaunchScope<'p> {
    /// A variable's value (`None`: not declared, or declared without a value).
    fn value(&self, name: &str) -> Option<Value>;
    /// Evaluates an integer expression of the program (a par iterator's bound) here, with
    /// `bound` (an enclosing block's iterator and a value of it) in scope when given.
    fn eval_int(
        &mut self,
        expr: &'p Expr,
        bound: Option<(&'p str, i128)>,
    ) -> Result<i128, InterpError>;
    fn memory(&mut self) -> &mut Memory;
}

#[allow(clippy::too_many_arguments)]
fn run_entry(
    program: &Program,
    method: &str,
    args: &[Value],
    ghosts: &[(&str, Value)],
    memory: Memory,
    limits: &Limits,
    launcher: Option<&mut dyn Launcher>,
    stop_after_entry: bool,
) -> Result<Outcome, InterpError> {
    // Methods are keyed by name: overloads get names of their own first
    // (`sumArray(int[], int)`, which is also how an entry names one of them).
    let resolved = crate::check::resolve_overloads(program);
    let program = resolved.as_ref().unwrap_or(program);
    let index = Index::new(program);
    let (class, target) = index.find_entry(method)?;
    let m = match &target.kind {
        MemberKind::Method(m) => m,
        MemberKind::Field(_) => {
            return Err(InterpError::BadCall(format!("`{method}` is a field")));
        }
    };
    if m.params.len() != args.len() {
        return Err(InterpError::BadCall(format!(
            "`{method}` takes {} arguments, {} given",
            m.params.len(),
            args.len()
        )));
    }
    for (p, v) in m.params.iter().zip(args) {
        if !fits(&p.ty.kind, *v, &memory) {
            return Err(InterpError::BadCall(format!(
                "argument `{}` does not fit its type (got {})",
                p.name.name,
                v.kind()
            )));
        }
    }
    let mut ghost_bindings = Vec::with_capacity(ghosts.len());
    for &(name, v) in ghosts {
        let param = target.contract.clauses.iter().find_map(|c| match &c.kind {
            ClauseKind::Given(p) if p.name.name == name => Some(p),
            _ => None,
        });
        let Some(param) = param else {
            return Err(InterpError::BadCall(format!(
                "`{method}` has no `given` parameter `{name}`"
            )));
        };
        if !fits(&param.ty.kind, v, &memory) {
            return Err(InterpError::BadCall(format!(
                "ghost `{name}` does not fit its type (got {})",
                v.kind()
            )));
        }
        ghost_bindings.push((param.name.name.as_str(), v));
    }
    if memory.total_cells() as u64 > limits.max_cells {
        // A limit, not a bad call: `run` then takes its reference from a device.
        return Err(InterpError::ResourceLimit {
            what: "memory cells (in the arguments)",
            limit: limits.max_cells,
            span: m.name.span,
        });
    }
    let mut machine = Machine::new(&index, memory, limits);
    machine.stop_after_entry = stop_after_entry;
    if let Some(launcher) = launcher {
        // Re-borrowed for the machine's lifetime (an `Option` would not coerce).
        machine.launcher = Some(launcher);
    }
    let result = machine.call(
        None,
        class,
        target,
        m,
        args.to_vec(),
        ghost_bindings,
        m.name.span,
    )?;
    Ok(Outcome {
        result,
        memory: machine.memory,
        asserts_evaluated: machine.asserts_evaluated,
        asserts_skipped: machine.asserts_skipped,
        steps: machine.steps,
    })
}

/// Whether an argument value fits a parameter type (deeply, along the type).
fn fits(ty: &TypeKind, v: Value, memory: &Memory) -> bool {
    match (ty, v) {
        (TypeKind::Int, Value::Int(_)) | (TypeKind::Bool, Value::Bool(_)) => true,
        (TypeKind::Array { .. }, Value::Null) => true,
        (TypeKind::Array { elem, .. }, Value::Array(r)) => match memory.get(r) {
            Some(cells) => cells.iter().all(|&c| fits(&elem.kind, c, memory)),
            None => false,
        },
        (TypeKind::Seq(elem), Value::Seq(r)) => match memory.seq(r) {
            Some(elems) => elems.iter().all(|&e| fits(&elem.kind, e, memory)),
            None => false,
        },
        _ => false,
    }
}

/// The program's methods by name: per class, and top-level.
pub(crate) struct Index<'p> {
    classes: HashMap<&'p str, usize>,
    class_names: Vec<&'p str>,
    members: Vec<HashMap<&'p str, &'p Member>>,
    globals: HashMap<&'p str, &'p Member>,
}

impl<'p> Index<'p> {
    fn new(program: &'p Program) -> Index<'p> {
        let mut index = Index {
            classes: HashMap::new(),
            class_names: Vec::new(),
            members: Vec::new(),
            globals: HashMap::new(),
        };
        for item in &program.items {
            match item {
                Item::Class(class) => {
                    let id = index.members.len();
                    index.classes.entry(&class.name.name).or_insert(id);
                    index.class_names.push(&class.name.name);
                    let mut table = HashMap::new();
                    for member in &class.members {
                        if let MemberKind::Method(m) = &member.kind {
                            if m.return_type.is_some() {
                                table.entry(m.name.name.as_str()).or_insert(member);
                            }
                        }
                    }
                    index.members.push(table);
                }
                Item::Member(member) => {
                    if let MemberKind::Method(m) = &member.kind {
                        index.globals.entry(m.name.name.as_str()).or_insert(member);
                    }
                }
            }
        }
        index
    }

    fn find_entry(&self, name: &str) -> Result<(Option<usize>, &'p Member), InterpError> {
        if let Some((class, method)) = name.split_once('.') {
            let id = *self
                .classes
                .get(class)
                .ok_or_else(|| InterpError::BadCall(format!("no class `{class}`")))?;
            let m = self.members[id]
                .get(method)
                .ok_or_else(|| InterpError::BadCall(format!("no method `{name}`")))?;
            return Ok((Some(id), m));
        }
        let mut found: Vec<(Option<usize>, &'p Member)> = Vec::new();
        if let Some(m) = self.globals.get(name) {
            found.push((None, m));
        }
        for (id, table) in self.members.iter().enumerate() {
            if let Some(m) = table.get(name) {
                found.push((Some(id), m));
            }
        }
        match found.len() {
            0 => Err(InterpError::BadCall(format!("no method `{name}`"))),
            1 => Ok(found[0]),
            _ => Err(InterpError::BadCall(format!(
                "`{name}` is ambiguous: write `Class.{name}`"
            ))),
        }
    }

    /// A method called from code in `class` by bare name or `this.`/`C.` prefix.
    fn lookup(&self, class: Option<usize>, name: &str) -> Option<(Option<usize>, &'p Member)> {
        if let Some(id) = class {
            if let Some(m) = self.members[id].get(name) {
                return Some((Some(id), m));
            }
        }
        self.globals.get(name).map(|m| (None, *m))
    }

    fn class_id(&self, name: &str) -> Option<usize> {
        self.classes.get(name).copied()
    }
}

/// The interpreter's state for one run.
pub(crate) struct Machine<'p, 'i> {
    index: &'i Index<'p>,
    memory: Memory,
    limits: &'i Limits,
    steps: u64,
    depth: usize,
    asserts_evaluated: u64,
    asserts_skipped: u64,
    /// Race logs of the enclosing par levels, innermost last (see `par.rs`).
    levels: Vec<par::Level>,
    /// Whether a statement contains a barrier (outside nested par blocks), by address.
    barrier_cache: HashMap<usize, bool>,
    /// Inside a specification (`specs.rs`): reads are not recorded nor permission-checked.
    in_spec: u32,
    /// Permissions are followed exactly (`specs.rs`); once off, off for the run.
    tracking: bool,
    /// Whether a member mentions `\old`, by address (`specs.rs`).
    old_cache: HashMap<usize, bool>,
    /// Where par blocks reached outside any thread run ([`run_launching`]); `None`: here.
    launcher: Option<&'i mut dyn Launcher>,
    /// [`admits`]: the entry method's precondition is checked, its body not run.
    stop_after_entry: bool,
}

impl<'p, 'i> Machine<'p, 'i> {
    fn new(index: &'i Index<'p>, memory: Memory, limits: &'i Limits) -> Machine<'p, 'i> {
        Machine {
            index,
            memory,
            limits,
            steps: 0,
            depth: 0,
            asserts_evaluated: 0,
            asserts_skipped: 0,
            levels: Vec::new(),
            barrier_cache: HashMap::new(),
            in_spec: 0,
            tracking: limits.check_specs,
            old_cache: HashMap::new(),
            launcher: None,
            stop_after_entry: false,
        }
    }

    /// Charges one step.
    fn tick(&mut self, span: Span) -> Result<(), InterpError> {
        self.steps += 1;
        if self.steps > self.limits.max_steps {
            Err(InterpError::StepLimit {
                limit: self.limits.max_steps,
                span,
            })
        } else {
            Ok(())
        }
    }

    /// Runs a method or function body with `args` bound to its parameters, called from code
    /// running in `caller` (its permissions pay for the callee's precondition).
    fn call_method(
        &mut self,
        caller: &mut exec::Env<'p>,
        class: Option<usize>,
        member: &'p Member,
        m: &'p Method,
        args: Vec<Value>,
        call_span: Span,
    ) -> Result<Option<Value>, InterpError> {
        self.call(Some(caller), class, member, m, args, Vec::new(), call_span)
    }

    /// A call with values for some `given` ghost inputs as well; `caller` is `None` for the
    /// entry method (whose precondition, with `Limits::check_specs`, must hold of the input).
    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        mut caller: Option<&mut exec::Env<'p>>,
        class: Option<usize>,
        member: &'p Member,
        m: &'p Method,
        args: Vec<Value>,
        ghosts: Vec<(&'p str, Value)>,
        call_span: Span,
    ) -> Result<Option<Value>, InterpError> {
        self.tick(call_span)?;
        if self.depth >= self.limits.max_call_depth {
            return Err(InterpError::ResourceLimit {
                what: "call depth",
                limit: self.limits.max_call_depth as u64,
                span: call_span,
            });
        }
        let mut env = exec::Env::new(class);
        for &(name, v) in &ghosts {
            env.declare(name, Some(v));
        }
        for (p, v) in m.params.iter().zip(&args) {
            env.declare(&p.name.name, Some(*v));
        }
        // Pure functions are run, not checked: their contracts are their own routines'
        // obligations (and an `inline` function's postcondition is ignored altogether).
        let checking = self.limits.check_specs && !m.is_function();
        if checking {
            self.enter(caller.as_deref_mut(), &mut env, member, m, call_span)?;
            if caller.is_none() && self.stop_after_entry {
                return Ok(None);
            }
        } else if self.limits.check_specs && !m.modifiers.contains(&crate::syntax::Modifier::Inline)
        {
            self.apply(&mut env, member, m, call_span)?;
        }
        // A pure function reads with its caller's permissions, like a specification.
        let as_spec = self.limits.check_specs && m.is_function();
        self.in_spec += u32::from(as_spec);
        self.depth += 1;
        let result = stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &m.body {
            MethodBody::Abstract => Err(InterpError::unsupported(
                format!(
                    "a call to `{}`, which has no body (its contract cannot be executed)",
                    m.name.name
                ),
                call_span,
            )),
            MethodBody::Expr(e) => self.eval(&mut env, e).map(Some),
            MethodBody::Block(block) => match self.exec_block(&mut env, block)? {
                exec::Flow::Return(v) => Ok(v),
                exec::Flow::Normal => Ok(None),
            },
        });
        self.depth -= 1;
        self.in_spec -= u32::from(as_spec);
        let result = result?;
        if checking {
            self.leave(caller, env, member, m, &args, &ghosts, result, call_span)?;
        }
        let is_void = matches!(
            m.return_type.as_ref().map(|t| &t.kind),
            None | Some(TypeKind::Void)
        );
        match (is_void, result) {
            (true, _) => Ok(None),
            (false, Some(v)) => Ok(Some(v)),
            (false, None) => Err(InterpError::MissingReturn {
                method: m.name.name.clone(),
                span: m.name.span,
            }),
        }
    }
}
