//! Differential testing (`alpinist run`): inputs that satisfy a method's precondition, a
//! reference run of the original on the interpreter, and the comparison of any other run —
//! the original on an OpenCL device, an optimised version on the interpreter or a device —
//! with it.
//!
//! # Inputs
//! - An `int` parameter: `--set NAME=VALUE`, else the value a precondition conjunct
//!   `NAME == e` fixes (evaluated over the values chosen before it), else
//!   [`Sizes::default`] (64). A `boolean` parameter: seeded at random.
//! - An array parameter's length: `--set NAME.length=VALUE`, else what the precondition says
//!   (`a.length == e`, `\array(a, e)`, see [`crate::inputs::length_of`]), else the default.
//!   Its cells: seeded at random in `0..CELL_RANGE` (non-negative and small, so `/` and `%`
//!   get non-negative operands and sums stay far from 32 bits), booleans at random. A
//!   sequence parameter (or `given` sequence): the copy of an array argument before it of its
//!   length, where there is one (the usual mirror of the input, related cell by cell), else
//!   drawn as an array's cells.
//! - The input is then **checked by the interpreter**: the reference run evaluates the
//!   precondition (values and permissions, `Limits::check_specs`). An input it refutes or
//!   cannot decide is drawn again from the next seed of the sequence, up to
//!   [`MAX_ATTEMPTS`] times; then the run stops with a clear error, never with an input
//!   outside what the proof covers. A reference run that leaves the kernel's integer type
//!   (an output beyond 32 bits) is drawn again too: it is not a mismatch.
//!
//! Not yet: values from a Z3 model of the precondition (a conjunct like `a[i] == 1` is met
//! only by chance, then reported as infeasible).
//!
//! # Comparison
//! Every array parameter's final contents (by position in the parameter list, so a version
//! that allocates differently still compares) and the returned value; the first difference
//! is the [`Mismatch`], with its location (`b[3]`, `\result`).

use crate::inputs::{fixed_values, int_value, length_of, matrix_dims, preconditions, SplitMix64};
use crate::interp::{self, InterpError, Limits, Memory, Outcome, Value};
use crate::syntax::{
    MatrixOrder, Member, MemberKind, Method, MethodBody, Modifier, Param, Program, TypeKind,
};

/// Array cells are drawn from `0..CELL_RANGE`.
pub const CELL_RANGE: u64 = 16;
/// Inputs drawn before giving up on a precondition.
pub const MAX_ATTEMPTS: u32 = 20;

/// Sizes given on the command line and the default for the others.
#[derive(Clone, Debug)]
pub struct Sizes {
    /// `NAME=VALUE` or `NAME.length=VALUE`, as given.
    pub set: Vec<(String, i128)>,
    pub default: i128,
}

impl Default for Sizes {
    fn default() -> Sizes {
        Sizes {
            set: Vec::new(),
            default: 64,
        }
    }
}

/// One drawn input.
#[derive(Clone, Debug)]
pub struct Input {
    pub args: Vec<Value>,
    pub memory: Memory,
    /// The scalars and lengths as shown to the user (`n = 64`, `a.length = 64`).
    pub sizes: Vec<String>,
    /// The seed that drew the cells (replay with `--seed`).
    pub seed: u64,
    /// Values of the method's `given` ghost inputs, for the interpreter's reference run (its
    /// precondition may speak of them); the other runs never read them.
    pub ghosts: Vec<(String, Value)>,
}

impl Input {
    /// The `given` ghost inputs as the interpreter takes them.
    pub fn ghost_values(&self) -> Vec<(&str, Value)> {
        self.ghosts.iter().map(|(n, v)| (n.as_str(), *v)).collect()
    }
}

/// An admitted input and the original's run on it.
#[derive(Clone, Debug)]
pub struct Case {
    pub input: Input,
    pub reference: Outcome,
}

/// Why no case could be formed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CaseError {
    #[error("parameter `{param}` has type `{ty}`: only `int`, `boolean`, their arrays, matrices and sequences can be drawn")]
    UnsupportedParam { param: String, ty: String },
    #[error("no method `{name}`")]
    NoMethod { name: String },
    #[error("`--set {name}=..` names no parameter (or array length) of the method")]
    UnknownSet { name: String },
    #[error("the length of `{param}` would be {len}")]
    BadLength { param: String, len: i128 },
    #[error("no drawn input satisfies the precondition ({attempts} attempts from seed {seed}; the last: {reason}); give sizes with --set (or --int64 where values leave 32 bits)")]
    Infeasible {
        attempts: u32,
        seed: u64,
        reason: String,
    },
    #[error("the original fails on the interpreter with {input}: {error}")]
    OriginalFails { input: String, error: String },
    /// The interpreter cannot run the original (a construct it does not model).
    #[error("the interpreter cannot run the original: {error}")]
    NotRunnable { error: String },
    /// The original's run needs more than the interpreter's limits (steps, threads, cells,
    /// call depth): too large for a reference run here, not wrong.
    #[error("the original's run is beyond the interpreter's limits: {error}")]
    BeyondLimits { error: String },
}

/// The first difference between two runs of one method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// `b[3]`, `b.length`, `\result`.
    pub location: String,
    pub expected: String,
    pub got: String,
}

/// A method `run` runs by default, and whether it is a kernel (its body has a par block).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runnable {
    /// `name`, or `Class.name`.
    pub name: String,
    pub kernel: bool,
}

/// The methods `run` selects by default: every method with a body, except pure functions,
/// constructors and `run` methods of threads.
pub fn runnable_methods(program: &Program) -> Vec<Runnable> {
    let mut out = Vec::new();
    for (class, member) in program.members() {
        let MemberKind::Method(m) = &member.kind else {
            continue;
        };
        let MethodBody::Block(body) = &m.body else {
            continue;
        };
        // A constructor has no return type (not even `void`).
        let constructor = m.return_type.is_none();
        if m.modifiers.contains(&Modifier::Pure) || constructor || m.is_run {
            continue;
        }
        out.push(Runnable {
            name: match class {
                Some(c) => format!("{}.{}", c.name.name, m.name.name),
                None => m.name.name.clone(),
            },
            kernel: crate::opencl::codegen::block_has_par(body),
        });
    }
    out
}

/// The member and method `name` (`m` or `Class.m`) denotes.
pub fn find_method<'p>(program: &'p Program, name: &str) -> Option<(&'p Member, &'p Method)> {
    program
        .members()
        .into_iter()
        .find_map(|(class, member)| match &member.kind {
            MemberKind::Method(m)
                if m.name.name == name
                    || class
                        .is_some_and(|c| format!("{}.{}", c.name.name, m.name.name) == name) =>
            {
                Some((member, m))
            }
            _ => None,
        })
}

/// Draws the input of `attempt` (the seed is `seed + attempt`).
pub fn draw(member: &Member, m: &Method, sizes: &Sizes, seed: u64) -> Result<Input, CaseError> {
    for (name, _) in &sizes.set {
        let known = m.params.iter().any(|p| {
            let param = &p.name.name;
            *name == *param
                || (matches!(p.ty.kind, TypeKind::Array { .. } | TypeKind::Seq(_))
                    && (*name == format!("{param}.length")
                        || *name == format!("{param}[0].length")))
        });
        if !known {
            return Err(CaseError::UnknownSet { name: name.clone() });
        }
    }
    let given = |name: &str| sizes.set.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    let conjuncts = preconditions(&member.contract);
    let mut random = SplitMix64::new(seed);
    let mut ints: Vec<(String, i128)> = Vec::new();
    // Integers first (lengths may depend on any of them), in parameter order.
    for p in &m.params {
        if p.ty.kind == TypeKind::Int {
            let name = &p.name.name;
            let value_of = |n: &str| ints.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
            let value = given(name)
                .or_else(|| {
                    fixed_values(&conjuncts, name)
                        .into_iter()
                        .find_map(|e| int_value(e, &value_of))
                })
                .unwrap_or(sizes.default);
            ints.push((name.clone(), value));
        }
    }
    let value_of = |n: &str| ints.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
    let mut memory = Memory::new();
    let mut args = Vec::new();
    let mut shown = Vec::new();
    for p in &m.params {
        let name = &p.name.name;
        let unsupported = || CaseError::UnsupportedParam {
            param: name.clone(),
            ty: crate::syntax::print_type(&p.ty),
        };
        match &p.ty.kind {
            TypeKind::Int => {
                let v = value_of(name).unwrap_or(sizes.default);
                shown.push(format!("{name} = {v}"));
                args.push(Value::Int(v));
            }
            TypeKind::Bool => args.push(Value::Bool(random.below(2) == 1)),
            TypeKind::Array { elem, .. } if matches!(elem.kind, TypeKind::Array { .. }) => {
                let TypeKind::Array { elem: cell, .. } = &elem.kind else {
                    unreachable!("matched above")
                };
                let ints_matrix = match cell.kind {
                    TypeKind::Int => true,
                    TypeKind::Bool => false,
                    _ => return Err(unsupported()),
                };
                let dims = matrix_dims(&conjuncts, name);
                let dim = |k: usize, key: String| -> Result<usize, CaseError> {
                    let len = given(&key)
                        .or_else(|| {
                            dims.and_then(|(r, c)| int_value(if k == 0 { r } else { c }, &value_of))
                        })
                        .unwrap_or(sizes.default);
                    usize::try_from(len).ok().filter(|&n| n <= 1 << 12).ok_or(
                        CaseError::BadLength {
                            param: key.clone(),
                            len,
                        },
                    )
                };
                let rows = dim(0, format!("{name}.length"))?;
                let cols = dim(1, format!("{name}[0].length"))?;
                let mut row_refs = Vec::with_capacity(rows);
                for _ in 0..rows {
                    let cells = (0..cols)
                        .map(|_| draw_cell(&mut random, ints_matrix))
                        .collect();
                    row_refs.push(Value::Array(memory.alloc(cells)));
                }
                shown.push(format!("{name}.length = {rows}"));
                shown.push(format!("{name}[0].length = {cols}"));
                args.push(Value::Array(memory.alloc(row_refs)));
            }
            TypeKind::Seq(elem) | TypeKind::Array { elem, .. } => {
                let ints = match elem.kind {
                    TypeKind::Int => true,
                    TypeKind::Bool => false,
                    _ => return Err(unsupported()),
                };
                // `int[N] a` (1.x): the declared size is the length.
                let declared = match &p.ty.kind {
                    TypeKind::Array { size, .. } => size.as_deref(),
                    _ => None,
                };
                let len = given(&format!("{name}.length"))
                    .or_else(|| declared.and_then(|e| int_value(e, &value_of)))
                    .or_else(|| length_of(&conjuncts, name).and_then(|e| int_value(&e, &value_of)))
                    .unwrap_or(sizes.default);
                let n = usize::try_from(len).ok().filter(|&n| n <= 1 << 24).ok_or(
                    CaseError::BadLength {
                        param: name.clone(),
                        len,
                    },
                )?;
                let cells: Vec<Value> = (0..n).map(|_| draw_cell(&mut random, ints)).collect();
                shown.push(format!("{name}.length = {n}"));
                args.push(match &p.ty.kind {
                    // As a `given` sequence: the copy of an array argument drawn before it,
                    // where one has its length (a mirror of the input the contract relates
                    // cell by cell), else random.
                    TypeKind::Seq(_) => {
                        let cells = array_of_length(&args, &memory, n, ints).unwrap_or(cells);
                        Value::Seq(memory.alloc_seq(cells))
                    }
                    _ => Value::Array(memory.alloc(cells)),
                });
            }
            _ => return Err(unsupported()),
        }
    }
    let ghosts = draw_ghosts(
        member,
        &conjuncts,
        &args,
        &mut memory,
        &value_of,
        &mut random,
    );
    Ok(Input {
        args,
        memory,
        sizes: shown,
        seed,
        ghosts,
    })
}

/// The method's `given` inputs of integer or sequence type: an integer as the contract fixes
/// it (else 0), a sequence the copy of an argument array of its length (the usual "ghost
/// copy of the input"), else random; other ghosts are left without a value.
fn draw_ghosts(
    member: &Member,
    conjuncts: &[&crate::syntax::Expr],
    args: &[Value],
    memory: &mut Memory,
    value_of: &dyn Fn(&str) -> Option<i128>,
    random: &mut SplitMix64,
) -> Vec<(String, Value)> {
    let mut ghosts = Vec::new();
    for clause in &member.contract.clauses {
        let crate::syntax::ClauseKind::Given(p) = &clause.kind else {
            continue;
        };
        let name = &p.name.name;
        let value = match &p.ty.kind {
            TypeKind::Int => Value::Int(
                fixed_values(conjuncts, name)
                    .into_iter()
                    .find_map(|e| int_value(e, value_of))
                    .unwrap_or(0),
            ),
            TypeKind::Seq(elem) if matches!(elem.kind, TypeKind::Int | TypeKind::Bool) => {
                let Some(len) = length_of(conjuncts, name)
                    .and_then(|e| int_value(&e, value_of))
                    .and_then(|n| usize::try_from(n).ok())
                else {
                    continue;
                };
                let ints = elem.kind == TypeKind::Int;
                let elems = array_of_length(args, memory, len, ints)
                    .unwrap_or_else(|| (0..len).map(|_| draw_cell(random, ints)).collect());
                Value::Seq(memory.alloc_seq(elems))
            }
            _ => continue,
        };
        ghosts.push((name.clone(), value));
    }
    ghosts
}

/// The cells of the first array argument of length `len` whose cells are integers (`ints`)
/// or booleans: what a sequence input mirroring it starts as.
fn array_of_length(args: &[Value], memory: &Memory, len: usize, ints: bool) -> Option<Vec<Value>> {
    args.iter().find_map(|a| match a {
        Value::Array(r) => memory
            .get(*r)
            .filter(|cells| {
                cells.len() == len
                    && cells
                        .first()
                        .is_none_or(|c| matches!(c, Value::Int(_)) == ints)
            })
            .map(<[Value]>::to_vec),
        _ => None,
    })
}

/// One array cell: an integer in `0..CELL_RANGE`, or a boolean.
fn draw_cell(random: &mut SplitMix64, int: bool) -> Value {
    if int {
        Value::Int(i128::from(random.below(CELL_RANGE)))
    } else {
        Value::Bool(random.below(2) == 1)
    }
}

/// How a version stores a matrix parameter of the original as one array (matrix
/// linearisation): cell `[i][j]` of an R × C matrix at `i * C + j` (row-major) or `j * R + i`
/// (column-major).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub param: String,
    pub order: MatrixOrder,
}

impl Layout {
    fn index(&self, i: usize, j: usize, rows: usize, cols: usize) -> usize {
        match self.order {
            MatrixOrder::RowMajor => i * cols + j,
            MatrixOrder::ColumnMajor => j * rows + i,
        }
    }
}

/// The matrix at `r` as rows of cells (`None`: not a rectangular matrix).
fn matrix_cells(memory: &Memory, r: crate::interp::ArrayRef) -> Option<Vec<Vec<Value>>> {
    let rows = memory.get(r)?;
    let cells: Option<Vec<Vec<Value>>> = rows
        .iter()
        .map(|row| match row {
            Value::Array(row) => memory.get(*row).map(<[Value]>::to_vec),
            _ => None,
        })
        .collect();
    let cells = cells?;
    cells
        .windows(2)
        .all(|w| w[0].len() == w[1].len())
        .then_some(cells)
}

/// The arguments of a version that stores the matrices of `layouts` as one array each: a
/// copy of the input's memory with every such matrix laid out in a new array.
pub fn lay_out(params: &[Param], input: &Input, layouts: &[Layout]) -> (Vec<Value>, Memory) {
    let mut memory = input.memory.clone();
    let mut args = input.args.clone();
    for (k, p) in params.iter().enumerate() {
        let Some(layout) = layouts.iter().find(|l| l.param == p.name.name) else {
            continue;
        };
        let Some(Value::Array(m)) = args.get(k).copied() else {
            continue;
        };
        let Some(cells) = matrix_cells(&memory, m) else {
            continue;
        };
        let (rows, cols) = (cells.len(), cells.first().map_or(0, Vec::len));
        let mut flat = vec![Value::Int(0); rows * cols];
        for (i, row) in cells.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                flat[layout.index(i, j, rows, cols)] = *v;
            }
        }
        args[k] = Value::Array(memory.alloc(flat));
    }
    (args, memory)
}

/// Draws inputs from `seed` on until one satisfies the precondition (the interpreter checks
/// it while running the original with its specifications) and the run stays within
/// `bits`-bit integers; returns it with the original's run.
pub fn admitted_case(
    program: &Program,
    method: &str,
    sizes: &Sizes,
    seed: u64,
    bits: u32,
    limits: &Limits,
) -> Result<Case, CaseError> {
    let mut on_the_interpreter = |input: &Input, checked: &Limits| {
        let ghosts = input.ghost_values();
        interp::run_with_ghosts(
            program,
            method,
            &input.args,
            &ghosts,
            input.memory.clone(),
            checked,
        )
    };
    admitted_case_with(
        program,
        method,
        sizes,
        seed,
        bits,
        limits,
        &mut on_the_interpreter,
    )
}

/// [`admitted_case`] with the original's run made by `reference` (given the input and the
/// limits with specifications checked): a run whose par blocks go to a device where the
/// interpreter alone would exceed its limits (the host code, and with it the entry
/// precondition, still runs on the interpreter).
pub fn admitted_case_with(
    program: &Program,
    method: &str,
    sizes: &Sizes,
    seed: u64,
    bits: u32,
    limits: &Limits,
    reference: &mut dyn FnMut(&Input, &Limits) -> Result<Outcome, InterpError>,
) -> Result<Case, CaseError> {
    let Some((member, m)) = find_method(program, method) else {
        return Err(CaseError::NoMethod {
            name: method.to_string(),
        });
    };
    let checked = Limits {
        check_specs: true,
        admit_untracked_permissions: true,
        ..limits.clone()
    };
    let mut reason = String::new();
    for attempt in 0..MAX_ATTEMPTS {
        let input = draw(member, m, sizes, seed.wrapping_add(u64::from(attempt)))?;
        match reference(&input, &checked) {
            Ok(reference) => {
                if let Some(beyond) = beyond_bits(&input, &reference, m, bits) {
                    reason = beyond;
                    continue;
                }
                return Ok(Case { input, reference });
            }
            Err(InterpError::Infeasible { reason: r, .. }) => reason = r,
            Err(e) if e.is_failure() => {
                return Err(CaseError::OriginalFails {
                    input: show_input(&input),
                    error: e.to_string(),
                })
            }
            Err(e @ (InterpError::StepLimit { .. } | InterpError::ResourceLimit { .. })) => {
                return Err(CaseError::BeyondLimits {
                    error: e.to_string(),
                })
            }
            Err(e) => {
                return Err(CaseError::NotRunnable {
                    error: e.to_string(),
                })
            }
        }
    }
    Err(CaseError::Infeasible {
        attempts: MAX_ATTEMPTS,
        seed,
        reason,
    })
}

/// `n = 64, a.length = 64, seed 7`.
pub fn show_input(input: &Input) -> String {
    let mut parts = input.sizes.clone();
    parts.push(format!("seed {}", input.seed));
    parts.join(", ")
}

/// An output value of the reference run beyond `bits`-bit integers, described.
fn beyond_bits(input: &Input, outcome: &Outcome, m: &Method, bits: u32) -> Option<String> {
    let (lo, hi) = (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1);
    let out_of = |v: &Value| matches!(v, Value::Int(x) if *x < lo || *x > hi);
    for (p, arg) in m.params.iter().zip(&input.args) {
        let Value::Array(r) = arg else { continue };
        let name = &p.name.name;
        if let Some(rows) = matrix_cells(&outcome.memory, *r) {
            for (i, row) in rows.iter().enumerate() {
                if let Some(j) = row.iter().position(out_of) {
                    return Some(format!("{name}[{i}][{j}] leaves {bits}-bit integers"));
                }
            }
        } else if let Some(k) = outcome
            .memory
            .get(*r)
            .and_then(|cells| cells.iter().position(out_of))
        {
            return Some(format!("{name}[{k}] leaves {bits}-bit integers"));
        }
    }
    outcome
        .result
        .as_ref()
        .filter(|v| out_of(v))
        .map(|_| format!("the result leaves {bits}-bit integers"))
}

/// Compares two runs of methods with the parameters `params`: every array parameter's
/// final contents, then the result.
pub fn compare(
    params: &[Param],
    expected: (&[Value], &Outcome),
    got: (&[Value], &Outcome),
    layouts: &[Layout],
) -> Option<Mismatch> {
    for (k, p) in params.iter().enumerate() {
        let (Some(Value::Array(a)), Some(Value::Array(b))) = (expected.0.get(k), got.0.get(k))
        else {
            continue;
        };
        let name = &p.name.name;
        if let Some(layout) = layouts.iter().find(|l| l.param == *name) {
            if let Some(m) =
                compare_laid_out(name, layout, (*a, &expected.1.memory), (*b, &got.1.memory))
            {
                return Some(m);
            }
            continue;
        }
        if let (Some(xs), Some(ys)) = (
            matrix_cells(&expected.1.memory, *a),
            matrix_cells(&got.1.memory, *b),
        ) {
            // Two matrices: cell by cell (their rows are arrays of their own).
            if let Some(m) = compare_rows(name, &xs, &ys) {
                return Some(m);
            }
            continue;
        }
        let (Some(xs), Some(ys)) = (expected.1.memory.get(*a), got.1.memory.get(*b)) else {
            continue;
        };
        if xs.len() != ys.len() {
            return Some(Mismatch {
                location: format!("{name}.length"),
                expected: xs.len().to_string(),
                got: ys.len().to_string(),
            });
        }
        if let Some(i) = (0..xs.len()).find(|&i| xs[i] != ys[i]) {
            return Some(Mismatch {
                location: format!("{name}[{i}]"),
                expected: show(&xs[i]),
                got: show(&ys[i]),
            });
        }
    }
    match (&expected.1.result, &got.1.result) {
        (Some(x), Some(y)) if !same_value(x, &expected.1.memory, y, &got.1.memory) => {
            Some(Mismatch {
                location: "\\result".into(),
                expected: show(x),
                got: show(y),
            })
        }
        _ => None,
    }
}

/// A matrix of the reference against the array a version laid it out in.
fn compare_laid_out(
    name: &str,
    layout: &Layout,
    (matrix, mm): (crate::interp::ArrayRef, &Memory),
    (flat, fm): (crate::interp::ArrayRef, &Memory),
) -> Option<Mismatch> {
    let cells = matrix_cells(mm, matrix)?;
    let flat = fm.get(flat)?;
    let (rows, cols) = (cells.len(), cells.first().map_or(0, Vec::len));
    if flat.len() != rows * cols {
        return Some(Mismatch {
            location: format!("{name}.length"),
            expected: format!("{rows} * {cols}"),
            got: flat.len().to_string(),
        });
    }
    for (i, row) in cells.iter().enumerate() {
        for (j, x) in row.iter().enumerate() {
            let y = &flat[layout.index(i, j, rows, cols)];
            if x != y {
                return Some(Mismatch {
                    location: format!("{name}[{i}][{j}]"),
                    expected: show(x),
                    got: show(y),
                });
            }
        }
    }
    None
}

fn compare_rows(name: &str, xs: &[Vec<Value>], ys: &[Vec<Value>]) -> Option<Mismatch> {
    if xs.len() != ys.len() {
        return Some(Mismatch {
            location: format!("{name}.length"),
            expected: xs.len().to_string(),
            got: ys.len().to_string(),
        });
    }
    for (i, (x, y)) in xs.iter().zip(ys).enumerate() {
        if x.len() != y.len() {
            return Some(Mismatch {
                location: format!("{name}[{i}].length"),
                expected: x.len().to_string(),
                got: y.len().to_string(),
            });
        }
        if let Some(j) = (0..x.len()).find(|&j| x[j] != y[j]) {
            return Some(Mismatch {
                location: format!("{name}[{i}][{j}]"),
                expected: show(&x[j]),
                got: show(&y[j]),
            });
        }
    }
    None
}

fn same_value(x: &Value, xm: &Memory, y: &Value, ym: &Memory) -> bool {
    match (x, y) {
        (Value::Array(a), Value::Array(b)) => xm.get(*a) == ym.get(*b),
        (Value::Seq(a), Value::Seq(b)) => xm.seq(*a) == ym.seq(*b),
        _ => x == y,
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => b.to_string(),
        other => other.kind().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(src: &str) -> Program {
        crate::syntax::parse(src).expect("parses").program
    }

    const SCALE: &str = "context_everywhere n > 0 ** a.length == n ** b.length == n;
        context (\\forall* int i; 0 <= i && i < n; Perm(a[i], 1\\2) ** Perm(b[i], 1));
        ensures (\\forall int i; 0 <= i && i < n; b[i] == 2 * a[i]);
        void scale(int n, int[] a, int[] b) {
          par (int t = 0 .. n)
            context Perm(a[t], 1\\2) ** Perm(b[t], 1);
            ensures b[t] == 2 * a[t];
          { b[t] = 2 * a[t]; }
        }";

    #[test]
    fn sizes_come_from_set_then_the_contract_then_the_default() {
        let p = program(SCALE);
        let (member, m) = find_method(&p, "scale").unwrap();
        let input = draw(member, m, &Sizes::default(), 1).unwrap();
        assert_eq!(input.sizes, ["n = 64", "a.length = 64", "b.length = 64"]);
        let sizes = Sizes {
            set: vec![("n".into(), 5)],
            default: 64,
        };
        let input = draw(member, m, &sizes, 1).unwrap();
        assert_eq!(input.sizes, ["n = 5", "a.length = 5", "b.length = 5"]);
        let bad = Sizes {
            set: vec![("m".into(), 5)],
            default: 64,
        };
        assert!(matches!(
            draw(member, m, &bad, 1),
            Err(CaseError::UnknownSet { .. })
        ));
    }

    #[test]
    fn a_case_satisfies_the_precondition_and_a_wrong_version_mismatches() {
        let p = program(SCALE);
        let case = admitted_case(&p, "scale", &Sizes::default(), 3, 32, &Limits::default())
            .expect("admitted");
        let wrong = program(&SCALE.replace(
            "{ b[t] = 2 * a[t]; }",
            "{ b[t] = a[t] + a[t] + (t == 5 ? 1 : 0); }",
        ));
        let run = interp::run(
            &wrong,
            "scale",
            &case.input.args,
            case.input.memory.clone(),
            &Limits::default(),
        )
        .unwrap();
        let (_, m) = find_method(&p, "scale").unwrap();
        let mismatch = compare(
            &m.params,
            (&case.input.args, &case.reference),
            (&case.input.args, &run),
            &[],
        )
        .expect("differs");
        assert_eq!(mismatch.location, "b[5]");
        let same = interp::run(
            &p,
            "scale",
            &case.input.args,
            case.input.memory.clone(),
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(
            compare(
                &m.params,
                (&case.input.args, &case.reference),
                (&case.input.args, &same),
                &[]
            ),
            None
        );
    }

    #[test]
    fn a_precondition_no_draw_meets_is_reported_not_ignored() {
        let p = program(
            "requires n == 4 ** a.length == n ** a[0] == 100;
             context (\\forall* int i; 0 <= i && i < n; Perm(a[i], 1));
             void f(int n, int[] a) { par (int t = 0 .. n) context Perm(a[t], 1); { a[t] = 0; } }",
        );
        let e = admitted_case(&p, "f", &Sizes::default(), 1, 32, &Limits::default()).unwrap_err();
        assert!(
            matches!(e, CaseError::Infeasible { attempts: 20, .. }),
            "{e}"
        );
    }

    #[test]
    fn a_run_beyond_the_interpreters_limits_is_told_apart_and_another_reference_is_taken() {
        let p = program(SCALE);
        let small = Limits {
            max_threads: 8,
            ..Limits::default()
        };
        let e = admitted_case(&p, "scale", &Sizes::default(), 1, 32, &small).unwrap_err();
        assert!(matches!(e, CaseError::BeyondLimits { .. }), "{e}");
        let tiny_memory = Limits {
            max_cells: 16,
            ..Limits::default()
        };
        let e = admitted_case(&p, "scale", &Sizes::default(), 1, 32, &tiny_memory).unwrap_err();
        assert!(matches!(e, CaseError::BeyondLimits { .. }), "{e}");
        // A reference made elsewhere (a device, in `run`): the precondition still decides
        // which draws are admitted, and its run is the case's reference.
        let mut calls = 0;
        let case = admitted_case_with(
            &p,
            "scale",
            &Sizes::default(),
            1,
            32,
            &Limits::default(),
            &mut |input, checked| {
                calls += 1;
                interp::admits(&p, "scale", &input.args, &[], input.memory.clone(), checked)?;
                interp::run(
                    &p,
                    "scale",
                    &input.args,
                    input.memory.clone(),
                    &Limits::default(),
                )
            },
        )
        .expect("admitted");
        assert_eq!(calls, 1);
        assert!(case.reference.memory.total_cells() > 0);
    }

    #[test]
    fn a_linearised_version_compares_through_its_layout() {
        let original = program(
            "context_everywhere \\matrix(m, X, Y);
             context (\\forall* int i; 0 <= i && i < X; (\\forall* int j; 0 <= j && j < Y; Perm(m[i][j], write)));
             void f(int X, int Y, int[][] m) {
               par (int i = 0 .. X, int j = 0 .. Y) context Perm(m[i][j], write); { m[i][j] = i * 100 + j; }
             }",
        );
        let linear = program(
            "context_everywhere \\array(m, X * Y);
             void f(int X, int Y, int[] m) {
               par (int i = 0 .. X, int j = 0 .. Y) { m[Y * i + j] = i * 100 + j; }
             }",
        );
        let sizes = Sizes {
            set: vec![("X".into(), 3), ("Y".into(), 4)],
            default: 64,
        };
        let case = admitted_case(&original, "f", &sizes, 1, 32, &Limits::default()).unwrap();
        assert_eq!(
            case.input.sizes,
            ["X = 3", "Y = 4", "m.length = 3", "m[0].length = 4"]
        );
        let (_, m) = find_method(&original, "f").unwrap();
        let run_with = |order| {
            let layouts = [Layout {
                param: "m".into(),
                order,
            }];
            let (args, memory) = lay_out(&m.params, &case.input, &layouts);
            let out = interp::run(&linear, "f", &args, memory, &Limits::default()).unwrap();
            compare(
                &m.params,
                (&case.input.args, &case.reference),
                (&args, &out),
                &layouts,
            )
        };
        assert_eq!(run_with(MatrixOrder::RowMajor), None);
        // Read as column-major, the same cells are in other places.
        let wrong = run_with(MatrixOrder::ColumnMajor).expect("differs");
        assert_eq!(wrong.location, "m[0][1]");
    }
}
