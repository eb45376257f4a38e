//! IR kernel → OpenCL C, with the element type and the operator left as macros.
//!
//! # What a scan kernel looks like
//! One method of the program contains a par block: that method is the kernel. Its parameters
//! are exactly one `int` (the size, bound to n by the harness) and one or two `int[]` arrays:
//! one array is scanned in place, two are (input, output) in that order; each array holds N
//! elements (the harness batches runs at that stride). Before the par block
//! the method may allocate scratch arrays (`int[] t = new int[e];`); everything else outside
//! the par block must be specification (contracts, `assert`, `assume`, ghost code), which is
//! erased. The par block has one iterator `int tid = lo .. hi`: one work-group of hi − lo
//! work-items, `tid = lo + get_local_id(0)`.
//!
//! # Memory spaces
//! Array parameters of the method → `__global ELEM*` kernel arguments; arrays allocated with
//! `new` inside the method → `__local ELEM*` kernel arguments whose size the host evaluates
//! from the `new` expression at N := n, filled with `IDENTITY` by the work-group before the
//! kernel's first statement (`new` gives zeros, the identity; local memory starts undefined).
//! Runs are batched: work-group g sees the global arrays offset by g · n, so one launch of R
//! groups performs R independent scans.
//!
//! # The element convention (what makes the interval test sound)
//! PVL kernels are written over `int`. Every cell of a kernel array is an *element*; a local
//! variable is an element variable when it is assigned an element value. Elements may only be
//! read from / written to array cells and element variables, combined with `+` (which becomes
//! `OP(a, b)`, operand order kept), and created as the literal `0` (which becomes `IDENTITY`).
//! Anything else that touches an element — `a[i] * 2`, `a[i] + 1`, comparing elements, an
//! element as an index or in a condition, an element passed to a function — is refused with
//! [`CodegenError::ElementMisuse`] and its span. So the generated kernel is generic: it works
//! for every monoid, which is what the interval theorem needs.
//!
//! # Erased
//! Contracts, loop invariants, barrier contracts, `assert`, `assume`, `ghost` statements,
//! `fold`/`unfold`, `gpuopt` lines. A barrier becomes
//! `barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)`.
//!
//! # Checked elsewhere: 32-bit arithmetic
//! PVL integers are unbounded, OpenCL's `int` has 32 bits, and C's `/` `%` truncate where PVL's
//! do not for negative operands. `scan-test` proves the kernel's integer arithmetic free of
//! overflow and of negative `/` `%` operands with `verify --int32`, exempting exactly the
//! element combinations this generator emits as `OP` ([`Kernel::element_ops`]); it tests only
//! sizes the kernel's precondition allows ([`Kernel::check_size`]).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use crate::syntax::{
    BinaryOp, Block, Contract, ExprKind, Item, Member, MemberKind, Method, MethodBody, Modifier,
    Program, Span, Stmt, StmtKind, TypeKind, UnaryOp,
};
use crate::syntax::{Expr, ParBlock};

/// Why a kernel cannot be generated. Codes E06xx are stable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum CodegenError {
    #[error("not a scan kernel: {reason}")]
    #[diagnostic(code(E0801))]
    NotAScanKernel {
        reason: String,
        #[label("here")]
        span: Span,
    },
    #[error("element value used other than through the operator and the identity: {reason}")]
    #[diagnostic(
        code(E0802),
        help(
            "a scan kernel may only move elements, combine them with `+` (the monoid \
             operator) and create the identity `0`; anything else makes the interval test \
             unsound"
        )
    )]
    ElementMisuse {
        reason: String,
        #[label("touches an element value")]
        span: Span,
    },
    #[error("not supported by the OpenCL code generator: {what}")]
    #[diagnostic(code(E0803))]
    Unsupported {
        what: String,
        #[label("unsupported here")]
        span: Span,
    },
}

impl CodegenError {
    pub fn span(&self) -> Span {
        match self {
            CodegenError::NotAScanKernel { span, .. }
            | CodegenError::ElementMisuse { span, .. }
            | CodegenError::Unsupported { span, .. } => *span,
        }
    }
}

/// One argument of the generated kernel, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelArg {
    /// An array parameter: `__global ELEM*`, n elements per run.
    Global { name: String },
    /// The size parameter: bound to n.
    Size { name: String },
    /// A scratch array allocated in the method: `__local ELEM*` of `size` elements.
    Local { name: String, size: Expr },
}

impl KernelArg {
    /// The parameter as the kernel function declares it. A global array is the whole
    /// batch's buffer (`alp_` + its name); the kernel body sees its work-group's slice under
    /// the PVL name.
    pub fn declaration(&self) -> String {
        match self {
            KernelArg::Global { name } => format!("__global ELEM* alp_{name}"),
            KernelArg::Size { name } => format!("int {name}"),
            KernelArg::Local { name, .. } => format!("__local ELEM* {name}"),
        }
    }
}

/// A generated kernel and what the host needs to launch it.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// The PVL method's name.
    pub method: String,
    /// The OpenCL C source, without the monoid prelude (which defines `ELEM`, `IDENTITY` and
    /// `OP`). The kernel function is always called [`KERNEL_NAME`].
    pub source: String,
    pub args: Vec<KernelArg>,
    /// The name of the size parameter.
    pub size_param: String,
    /// The par iterator's range [lo, hi), to evaluate at N := n.
    pub threads: (Expr, Expr),
    /// The spans of the `+` emitted as `OP(a, b)`: element combinations, which run in the
    /// monoid's type and are exempt from `verify --int32` (`verify::Int32::exempt`).
    pub element_ops: BTreeSet<Span>,
    /// What the method's precondition says about N: the harness runs the kernel only at
    /// sizes it admits, since the proof covers no other.
    pub precondition: SizePrecondition,
}

/// The name of the generated kernel function.
pub const KERNEL_NAME: &str = "alp_scan";

impl Kernel {
    /// Does the method's precondition admit N := n? Conjuncts about data (heap values,
    /// permissions, quantifiers) are not decided by a size and are not checked.
    pub fn check_size(&self, n: i64) -> Result<(), SizeRefused> {
        self.precondition.check(n)
    }

    /// FNV-1a (64 bits) of [`Kernel::source`]: the integer run and the interval run use the
    /// source with this hash.
    pub fn source_hash(&self) -> u64 {
        fnv1a(self.source.as_bytes())
    }

    /// Global array arguments in order.
    pub fn globals(&self) -> impl Iterator<Item = &str> {
        self.args.iter().filter_map(|a| match a {
            KernelArg::Global { name } => Some(name.as_str()),
            _ => None,
        })
    }

    /// Number of work-items per run at N := n.
    pub fn work_items(&self, n: i64) -> Result<i64, EvalError> {
        let env = HashMap::from([(self.size_param.clone(), n)]);
        Ok(eval_int(&self.threads.1, &env)? - eval_int(&self.threads.0, &env)?)
    }

    /// The size of a local array at N := n.
    pub fn local_len(&self, size: &Expr, n: i64) -> Result<i64, EvalError> {
        eval_int(size, &HashMap::from([(self.size_param.clone(), n)]))
    }
}

/// The OpenCL C name of a routine's PVL name: the name itself, or for an overload (named
/// `pick(int)` by [`crate::check::Overloads`]) a C identifier made from it that no PVL name
/// can be (`alp_o_`, the name's letters, a digest of the whole name).
pub(crate) fn c_name(name: &str) -> String {
    if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return name.to_string();
    }
    let letters: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("alp_o_{letters}_{:08x}", fnv1a(name.as_bytes()) as u32)
}

pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// A host-side evaluation of a size expression failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error(
        "cannot evaluate `{0}` on the host: only integer arithmetic over the size parameter, \
         without overflow or division by zero"
    )]
    NotConstant(String),
}

/// Evaluates an integer expression over the size parameter (sizes of local arrays, the par
/// range) with [`crate::inputs::int_value`], the one host-side evaluator of such expressions.
pub fn eval_int(expr: &Expr, env: &HashMap<String, i64>) -> Result<i64, EvalError> {
    crate::inputs::int_value(expr, &|name| env.get(name).copied().map(i128::from))
        .and_then(|v| i64::try_from(v).ok())
        .ok_or_else(|| EvalError::NotConstant(crate::syntax::print_expr(expr)))
}

/// Generates the OpenCL C of the one method of `program` that contains a par block.
pub fn generate(program: &Program) -> Result<Kernel, CodegenError> {
    let mut kernels = Vec::new();
    let mut functions: HashMap<String, &Method> = HashMap::new();
    for item in &program.items {
        match item {
            Item::Class(class) => {
                for member in &class.members {
                    collect(member, &mut kernels, &mut functions);
                }
            }
            Item::Member(member) => collect(member, &mut kernels, &mut functions),
        }
    }
    let member = match kernels.as_slice() {
        [one] => *one,
        [] => {
            return Err(CodegenError::NotAScanKernel {
                reason: "no method contains a par block".into(),
                span: program.span,
            })
        }
        [_, second, ..] => {
            return Err(CodegenError::NotAScanKernel {
                reason: "more than one method contains a par block".into(),
                span: kernel_method(second).name.span,
            })
        }
    };
    Generator::new(member, functions).kernel()
}

/// The method of a member `collect` took as a kernel.
fn kernel_method(member: &Member) -> &Method {
    match &member.kind {
        MemberKind::Method(method) => method,
        _ => unreachable!("`collect` takes only methods as kernels"),
    }
}

fn collect<'a>(
    member: &'a Member,
    kernels: &mut Vec<&'a Member>,
    functions: &mut HashMap<String, &'a Method>,
) {
    let MemberKind::Method(method) = &member.kind else {
        return;
    };
    match &method.body {
        MethodBody::Block(block) if block_has_par(block) => kernels.push(member),
        MethodBody::Expr(_) if method.modifiers.contains(&Modifier::Pure) => {
            functions.insert(method.name.name.clone(), method);
        }
        _ => {}
    }
}

/// Does `block` contain a par statement (at any depth of its statements)?
pub fn block_has_par(block: &Block) -> bool {
    block_contains(block, &|kind| matches!(kind, StmtKind::Par(_)))
}

/// Does a statement of `block` satisfy `hit`, looking into blocks, branches, loops and ghost
/// statements but not into par blocks (their statements are their threads')? The one walker
/// for "is there a par block" and "is there a barrier".
fn block_contains(block: &Block, hit: &dyn Fn(&StmtKind) -> bool) -> bool {
    fn stmt(s: &Stmt, hit: &dyn Fn(&StmtKind) -> bool) -> bool {
        hit(&s.kind)
            || match &s.kind {
                StmtKind::Block(b) => block_contains(b, hit),
                StmtKind::If {
                    then_branch,
                    else_branch,
                    ..
                } => stmt(then_branch, hit) || else_branch.as_deref().is_some_and(|e| stmt(e, hit)),
                StmtKind::While { body, .. } | StmtKind::For { body, .. } => stmt(body, hit),
                StmtKind::Ghost(inner) => stmt(inner, hit),
                _ => false,
            }
    }
    block.stmts.iter().any(|s| stmt(s, hit))
}

/// Statements that are specification only and vanish from the generated code.
fn erased(stmt: &Stmt) -> bool {
    matches!(
        stmt.kind,
        StmtKind::Assert(_)
            | StmtKind::Assume(_)
            | StmtKind::Refute(_)
            | StmtKind::Inhale(_)
            | StmtKind::Exhale(_)
            | StmtKind::Ghost(_)
            | StmtKind::Fold(_)
            | StmtKind::Unfold(_)
            | StmtKind::GpuOpt(_)
    )
}

fn is_int_array(kind: &TypeKind) -> bool {
    matches!(kind, TypeKind::Array { elem, .. } if elem.kind == TypeKind::Int)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scalar {
    Int,
    Bool,
}

struct Generator<'a> {
    method: &'a Method,
    /// The kernel method's contract: its size conjuncts become [`Kernel::precondition`].
    contract: &'a Contract,
    functions: HashMap<String, &'a Method>,
    /// Kernel arrays (global and local): their cells are elements.
    arrays: HashSet<String>,
    /// Integer/boolean scalars in scope of the kernel body (size parameter, iterator, locals).
    scalars: HashMap<String, Scalar>,
    /// Local variables that hold elements.
    elems: HashSet<String>,
    /// Pure functions called from the kernel, in first-call order.
    called: Vec<String>,
    /// Spans of the `+` emitted as `OP`.
    element_ops: BTreeSet<Span>,
    /// How array cells are typed: generic elements (scan kernels) or concrete integers.
    cells: Cells,
    /// Concrete mode: the launching method's variables a kernel may capture as arguments.
    host: HashMap<String, HostVar>,
    /// Concrete mode: the host variables the kernel body reads, in first-use order.
    captured: Vec<(String, HostVar)>,
    /// Concrete mode: the launching method's arrays that live in the local memory of the one
    /// launch that uses them.
    locals: HashSet<String>,
    /// Concrete mode, a whole method as one work-item: `return` writes `*alp_result` (when
    /// the method has a result) and ends the kernel.
    whole_method: bool,
}

/// How the generator treats the cells of kernel arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cells {
    /// Scan kernels: cells are elements of an unknown monoid (`ELEM`, `OP`, `IDENTITY`).
    Generic,
    /// Every other kernel: cells are integers (or booleans stored as integers) of this
    /// OpenCL type.
    Concrete(IntWidth),
}

/// The OpenCL integer type PVL's `int` becomes in a concretely typed kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IntWidth {
    /// `int`: 32 bits, the type the proof's `--int32` mode checks.
    #[default]
    Bits32,
    /// `long`: 64 bits (`--int64`).
    Bits64,
}

impl IntWidth {
    /// The OpenCL C type name.
    pub fn c_type(self) -> &'static str {
        match self {
            IntWidth::Bits32 => "int",
            IntWidth::Bits64 => "long",
        }
    }
}

/// A variable of the launching method that a kernel may read: it becomes a kernel argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostVar {
    Int,
    Bool,
    IntArray,
    BoolArray,
    /// The length of the array of this name (`a.length`): an integer argument
    /// `alp_len_a`.
    Length,
    /// An array of the launching method that lives in the work-group's local memory of the
    /// one launch that uses it (`__local`): the host passes its size, never its cells
    /// (`codegen::program`'s module docs say which arrays).
    LocalIntArray,
    LocalBoolArray,
}

impl HostVar {
    fn of(kind: &TypeKind) -> Option<HostVar> {
        match kind {
            TypeKind::Int => Some(HostVar::Int),
            TypeKind::Bool => Some(HostVar::Bool),
            TypeKind::Array { elem, .. } if elem.kind == TypeKind::Int => Some(HostVar::IntArray),
            TypeKind::Array { elem, .. } if elem.kind == TypeKind::Bool => Some(HostVar::BoolArray),
            _ => None,
        }
    }

    pub fn is_array(self) -> bool {
        matches!(
            self,
            HostVar::IntArray
                | HostVar::BoolArray
                | HostVar::LocalIntArray
                | HostVar::LocalBoolArray
        )
    }

    /// An array in local memory.
    pub fn is_local(self) -> bool {
        matches!(self, HostVar::LocalIntArray | HostVar::LocalBoolArray)
    }
}

impl<'a> Generator<'a> {
    fn new(member: &'a Member, functions: HashMap<String, &'a Method>) -> Self {
        Generator {
            method: kernel_method(member),
            contract: &member.contract,
            functions,
            arrays: HashSet::new(),
            scalars: HashMap::new(),
            elems: HashSet::new(),
            called: Vec::new(),
            element_ops: BTreeSet::new(),
            cells: Cells::Generic,
            host: HashMap::new(),
            captured: Vec::new(),
            locals: HashSet::new(),
            whole_method: false,
        }
    }

    /// The OpenCL type of PVL's `int` in this kernel.
    fn int_type(&self) -> &'static str {
        match self.cells {
            Cells::Generic => "int",
            Cells::Concrete(width) => width.c_type(),
        }
    }

    /// Concrete mode: `name` is a variable of the launching method that the kernel may read;
    /// the first read makes it a kernel argument.
    fn capture(&mut self, name: &str) -> Option<HostVar> {
        let var = match *self.host.get(name)? {
            HostVar::IntArray if self.locals.contains(name) => HostVar::LocalIntArray,
            HostVar::BoolArray if self.locals.contains(name) => HostVar::LocalBoolArray,
            var => var,
        };
        if !self
            .captured
            .iter()
            .any(|(n, v)| n == name && *v != HostVar::Length)
        {
            self.captured.push((name.to_string(), var));
            if var.is_array() {
                self.arrays.insert(name.to_string());
            } else {
                let scalar = if var == HostVar::Int {
                    Scalar::Int
                } else {
                    Scalar::Bool
                };
                self.scalars.insert(name.to_string(), scalar);
            }
        }
        Some(var)
    }

    /// Is `name` (a base of an index) an array of the kernel, capturing it if needed?
    fn is_kernel_array(&mut self, name: &str) -> bool {
        self.arrays.contains(name) || self.capture(name).is_some_and(HostVar::is_array)
    }

    /// Concrete mode: `array.length`, an argument the host fills in (`alp_len_array`).
    fn length_of(&mut self, array: &str) -> Option<String> {
        if !self.is_kernel_array(array) {
            return None;
        }
        if !self
            .captured
            .iter()
            .any(|(n, v)| n == array && *v == HostVar::Length)
        {
            self.captured.push((array.to_string(), HostVar::Length));
        }
        Some(format!("alp_len_{array}"))
    }

    fn kernel(mut self) -> Result<Kernel, CodegenError> {
        let method = self.method;
        let mut args = Vec::new();
        let mut size_param = None;
        for param in &method.params {
            match &param.ty.kind {
                TypeKind::Int if size_param.is_none() => {
                    size_param = Some(param.name.name.clone());
                    args.push(KernelArg::Size {
                        name: param.name.name.clone(),
                    });
                }
                kind if is_int_array(kind) => {
                    self.arrays.insert(param.name.name.clone());
                    args.push(KernelArg::Global {
                        name: param.name.name.clone(),
                    });
                }
                _ => {
                    return Err(CodegenError::NotAScanKernel {
                        reason: "a scan kernel's parameters are one `int` size and one or two \
                                 `int[]` arrays"
                            .into(),
                        span: param.span,
                    })
                }
            }
        }
        let Some(size_param) = size_param else {
            return Err(CodegenError::NotAScanKernel {
                reason: "the kernel method has no `int` size parameter".into(),
                span: method.name.span,
            });
        };
        let globals = args
            .iter()
            .filter(|a| matches!(a, KernelArg::Global { .. }))
            .count();
        if !(1..=2).contains(&globals) {
            return Err(CodegenError::NotAScanKernel {
                reason: format!("a scan kernel has one or two array parameters, not {globals}"),
                span: method.name.span,
            });
        }
        self.scalars.insert(size_param.clone(), Scalar::Int);

        let MethodBody::Block(body) = &method.body else {
            unreachable!("only methods with a block body are collected as kernels")
        };
        let mut par: Option<&ParBlock> = None;
        for stmt in &body.stmts {
            match &stmt.kind {
                _ if erased(stmt) => {}
                StmtKind::LocalDecl { ty, vars } if is_int_array(&ty.kind) && par.is_none() => {
                    for var in vars {
                        let size = match var.init.as_ref().map(|e| &e.kind) {
                            Some(ExprKind::NewArray { elem, dims })
                                if elem.kind == TypeKind::Int && dims.len() == 1 =>
                            {
                                dims[0].clone()
                            }
                            _ => {
                                return Err(CodegenError::Unsupported {
                                    what: "a scratch array must be allocated with \
                                           `new int[size]`"
                                        .into(),
                                    span: var.span,
                                })
                            }
                        };
                        self.arrays.insert(var.name.name.clone());
                        args.push(KernelArg::Local {
                            name: var.name.name.clone(),
                            size,
                        });
                    }
                }
                StmtKind::Par(group) if par.is_none() => {
                    let [block] = group.blocks.as_slice() else {
                        return Err(CodegenError::Unsupported {
                            what: "par blocks launched together".into(),
                            span: stmt.span,
                        });
                    };
                    par = Some(block);
                }
                StmtKind::Par(_) => {
                    return Err(CodegenError::Unsupported {
                        what: "consecutive kernel launches (a second par block)".into(),
                        span: stmt.span,
                    })
                }
                _ => {
                    return Err(CodegenError::Unsupported {
                        what: "host code other than scratch-array allocation around the par \
                               block"
                            .into(),
                        span: stmt.span,
                    })
                }
            }
        }
        let par = par.ok_or_else(|| CodegenError::NotAScanKernel {
            reason: "the par block must stand directly in the kernel method's body".into(),
            span: method.name.span,
        })?;
        let [iter] = par.iters.as_slice() else {
            return Err(CodegenError::Unsupported {
                what: "a par block without exactly one iterator".into(),
                span: par.span,
            });
        };
        if iter.ty.kind != TypeKind::Int {
            return Err(CodegenError::Unsupported {
                what: "a non-int par iterator".into(),
                span: iter.span,
            });
        }
        self.scalars.insert(iter.name.name.clone(), Scalar::Int);
        self.infer_elements(&par.body);

        let mut body = String::new();
        let tid = &iter.name.name;
        let lo = self.int(&iter.lo)?;
        writeln!(body, "  int {tid} = {lo} + (int)get_local_id(0);").unwrap();
        // Scratch arrays start as `new` leaves them, zeros: the identity.
        let mut fills = Vec::new();
        for arg in &args {
            if let KernelArg::Local { name, size } = arg {
                fills.push((name.clone(), self.int(size)?));
            }
        }
        body.push_str(&fill_local_arrays(&fills, "IDENTITY", "int"));
        self.block_stmts(&par.body, 1, &mut body)?;

        // The kernel signature.
        let mut params = Vec::new();
        let mut prologue = String::new();
        for arg in &args {
            params.push(arg.declaration());
            match arg {
                KernelArg::Global { name } => {
                    writeln!(
                        prologue,
                        "  __global ELEM* {name} = alp_{name} + (size_t)get_group_id(0) * (size_t){size_param};"
                    )
                    .unwrap();
                }
                KernelArg::Size { .. } | KernelArg::Local { .. } => {}
            }
        }

        let mut source = String::new();
        writeln!(
            source,
            "/* generated by alpinist from `{}`; ELEM, IDENTITY and OP(a, b) come from the monoid prelude */",
            method.name.name
        )
        .unwrap();
        source.push_str(&self.functions_source()?);
        writeln!(
            source,
            "__kernel void {KERNEL_NAME}({}) {{",
            params.join(", ")
        )
        .unwrap();
        source.push_str(&prologue);
        source.push_str(&body);
        source.push_str("}\n");
        let precondition = size::precondition(self.contract, &self.functions, &args, &size_param);
        Ok(Kernel {
            method: method.name.name.clone(),
            source,
            args,
            size_param,
            threads: (iter.lo.clone(), iter.hi.clone()),
            element_ops: self.element_ops,
            precondition,
        })
    }

    /// A local variable holds elements when it is assigned (or initialised with) an element
    /// value; computed to a fixpoint over the par body.
    fn infer_elements(&mut self, body: &Block) {
        let mut assignments = Vec::new();
        for stmt in &body.stmts {
            assignments_of(stmt, &mut assignments);
        }
        loop {
            let before = self.elems.len();
            for (name, value) in &assignments {
                if !self.elems.contains(*name) && self.is_element_valued(value) {
                    self.elems.insert((*name).to_string());
                }
            }
            if self.elems.len() == before {
                break;
            }
        }
    }

    fn is_element_valued(&self, expr: &Expr) -> bool {
        match &expr.kind {
            ExprKind::Index { base, .. } => {
                matches!(&base.kind, ExprKind::Name(id) if self.arrays.contains(&id.name))
            }
            ExprKind::Name(id) => self.elems.contains(&id.name),
            ExprKind::Binary {
                op: BinaryOp::Add,
                lhs,
                rhs,
            } => self.is_element_valued(lhs) || self.is_element_valued(rhs),
            ExprKind::Cond {
                then_expr,
                else_expr,
                ..
            } => self.is_element_valued(then_expr) || self.is_element_valued(else_expr),
            _ => false,
        }
    }

    fn block_stmts(
        &mut self,
        block: &Block,
        depth: usize,
        out: &mut String,
    ) -> Result<(), CodegenError> {
        for stmt in &block.stmts {
            self.stmt(stmt, depth, out)?;
        }
        Ok(())
    }

    /// The body of an `if` or a loop: a block's statements go straight inside the braces.
    fn body(&mut self, stmt: &Stmt, depth: usize, out: &mut String) -> Result<(), CodegenError> {
        match &stmt.kind {
            StmtKind::Block(block) => self.block_stmts(block, depth, out),
            _ => self.stmt(stmt, depth, out),
        }
    }

    /// A condition without the outer parentheses (clang warns about `if ((a == b))`).
    fn condition(&mut self, expr: &Expr) -> Result<String, CodegenError> {
        Ok(strip_outer_parens(self.int(expr)?))
    }

    fn stmt(&mut self, stmt: &Stmt, depth: usize, out: &mut String) -> Result<(), CodegenError> {
        let pad = "  ".repeat(depth);
        let unsupported = |what: &str| CodegenError::Unsupported {
            what: what.into(),
            span: stmt.span,
        };
        match &stmt.kind {
            _ if erased(stmt) => {}
            StmtKind::LocalDecl { ty, vars } => {
                let scalar = match ty.kind {
                    TypeKind::Int => Scalar::Int,
                    TypeKind::Bool => Scalar::Bool,
                    _ => return Err(unsupported("a local that is not `int` or `boolean`")),
                };
                for var in vars {
                    let name = &var.name.name;
                    if self.elems.contains(name) {
                        if scalar != Scalar::Int {
                            return Err(unsupported("a boolean element variable"));
                        }
                        match &var.init {
                            Some(init) => {
                                let init = self.elem(init)?;
                                writeln!(out, "{pad}ELEM {name} = {init};").unwrap();
                            }
                            None => writeln!(out, "{pad}ELEM {name};").unwrap(),
                        }
                    } else {
                        self.scalars.insert(name.clone(), scalar);
                        let cty = if scalar == Scalar::Int {
                            self.int_type()
                        } else {
                            "bool"
                        };
                        match &var.init {
                            Some(init) => {
                                let init = self.int(init)?;
                                writeln!(out, "{pad}{cty} {name} = {init};").unwrap();
                            }
                            None => writeln!(out, "{pad}{cty} {name};").unwrap(),
                        }
                    }
                }
            }
            StmtKind::Assign { target, value } => {
                let line = self.assignment(target, value)?;
                writeln!(out, "{pad}{line};").unwrap();
            }
            StmtKind::Increment(target) | StmtKind::Decrement(target) => {
                let op = if matches!(stmt.kind, StmtKind::Increment(_)) {
                    "++"
                } else {
                    "--"
                };
                if let Some(e) = self.assigns_host(target) {
                    return Err(e);
                }
                let target = self.int(target)?;
                writeln!(out, "{pad}{target}{op};").unwrap();
            }
            StmtKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let cond = self.condition(cond)?;
                writeln!(out, "{pad}if ({cond}) {{").unwrap();
                self.body(then_branch, depth + 1, out)?;
                if let Some(else_branch) = else_branch {
                    writeln!(out, "{pad}}} else {{").unwrap();
                    self.body(else_branch, depth + 1, out)?;
                }
                writeln!(out, "{pad}}}").unwrap();
            }
            StmtKind::While { cond, body, .. } => {
                let cond = self.condition(cond)?;
                writeln!(out, "{pad}while ({cond}) {{").unwrap();
                self.body(body, depth + 1, out)?;
                writeln!(out, "{pad}}}").unwrap();
            }
            StmtKind::For {
                init,
                cond,
                update,
                body,
                ..
            } => {
                // Emitted as a block with a while loop: C's for header cannot hold our
                // statement forms uniformly.
                writeln!(out, "{pad}{{").unwrap();
                if let Some(init) = init {
                    self.stmt(init, depth + 1, out)?;
                }
                let cond = match cond {
                    Some(cond) => self.condition(cond)?,
                    None => "true".into(),
                };
                writeln!(out, "{pad}  while ({cond}) {{").unwrap();
                self.body(body, depth + 2, out)?;
                if let Some(update) = update {
                    self.stmt(update, depth + 2, out)?;
                }
                writeln!(out, "{pad}  }}").unwrap();
                writeln!(out, "{pad}}}").unwrap();
            }
            StmtKind::Block(block) => {
                writeln!(out, "{pad}{{").unwrap();
                self.block_stmts(block, depth + 1, out)?;
                writeln!(out, "{pad}}}").unwrap();
            }
            StmtKind::Barrier(barrier) => {
                if let Some(code) = barrier.body.stmts.iter().find(|s| !erased(s)) {
                    return Err(CodegenError::Unsupported {
                        what: "code inside a barrier block".into(),
                        span: code.span,
                    });
                }
                writeln!(
                    out,
                    "{pad}barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"
                )
                .unwrap();
            }
            StmtKind::Return(value) if self.whole_method => match value {
                Some(value) => {
                    let value = self.int(value)?;
                    writeln!(out, "{pad}*alp_result = {value};").unwrap();
                    writeln!(out, "{pad}return;").unwrap();
                }
                None => writeln!(out, "{pad}return;").unwrap(),
            },
            StmtKind::Return(_) => return Err(unsupported("`return` inside a par block")),
            StmtKind::Par(_) => return Err(unsupported("a nested par block")),
            StmtKind::Expr(_) => return Err(unsupported("a call statement in kernel code")),
            _ => return Err(unsupported("this statement in kernel code")),
        }
        Ok(())
    }

    /// Concrete mode: `name` is a variable of the launching method (not a kernel local
    /// shadowing one), which a thread cannot assign: a kernel argument is a copy.
    fn assigns_host(&self, target: &Expr) -> Option<CodegenError> {
        let ExprKind::Name(id) = &target.kind else {
            return None;
        };
        let name = &id.name;
        let host = self.cells != Cells::Generic
            && self.host.contains_key(name)
            && (!self.scalars.contains_key(name) || self.captured.iter().any(|(n, _)| n == name));
        host.then(|| CodegenError::Unsupported {
            what: format!(
                "a thread assigns `{name}`, a variable of the launching method (a kernel \
                 argument is a copy)"
            ),
            span: target.span,
        })
    }

    fn assignment(&mut self, target: &Expr, value: &Expr) -> Result<String, CodegenError> {
        if let Some(e) = self.assigns_host(target) {
            return Err(e);
        }
        match &target.kind {
            ExprKind::Name(id) if self.elems.contains(&id.name) => {
                Ok(format!("{} = {}", id.name, self.elem(value)?))
            }
            ExprKind::Name(id) if self.scalars.contains_key(&id.name) => {
                Ok(format!("{} = {}", id.name, self.int(value)?))
            }
            ExprKind::Index { .. } if self.cells == Cells::Generic => {
                let target = self.elem(target)?;
                Ok(format!("{target} = {}", self.elem(value)?))
            }
            ExprKind::Index { .. } => {
                let target = self.int(target)?;
                Ok(format!("{target} = {}", self.int(value)?))
            }
            _ => Err(CodegenError::Unsupported {
                what: "an assignment to something other than a local or an array cell".into(),
                span: target.span,
            }),
        }
    }

    /// `c ? a : b` with the branches generated by `branch` (element or integer position).
    fn conditional(
        &mut self,
        cond: &Expr,
        then_expr: &Expr,
        else_expr: &Expr,
        branch: fn(&mut Self, &Expr) -> Result<String, CodegenError>,
    ) -> Result<String, CodegenError> {
        let cond = self.int(cond)?;
        Ok(format!(
            "({cond} ? {} : {})",
            branch(self, then_expr)?,
            branch(self, else_expr)?
        ))
    }

    /// An expression in element position.
    fn elem(&mut self, expr: &Expr) -> Result<String, CodegenError> {
        let misuse = |reason: &str| CodegenError::ElementMisuse {
            reason: reason.into(),
            span: expr.span,
        };
        match &expr.kind {
            ExprKind::IntLit(value) if *value == 0u32.into() => Ok("IDENTITY".into()),
            ExprKind::IntLit(_) => Err(misuse(
                "an element is created from a literal other than the identity `0`",
            )),
            ExprKind::Name(id) if self.elems.contains(&id.name) => Ok(id.name.clone()),
            ExprKind::Name(_) => Err(misuse("an integer is used as an element")),
            ExprKind::Index { base, index } => match &base.kind {
                ExprKind::Name(id) if self.arrays.contains(&id.name) => {
                    let index = self.int(index)?;
                    Ok(format!("{}[{index}]", id.name))
                }
                _ => Err(CodegenError::Unsupported {
                    what: "indexing something other than a kernel array".into(),
                    span: expr.span,
                }),
            },
            ExprKind::Binary {
                op: BinaryOp::Add,
                lhs,
                rhs,
            } => {
                self.element_ops.insert(expr.span);
                Ok(format!("OP({}, {})", self.elem(lhs)?, self.elem(rhs)?))
            }
            ExprKind::Cond {
                cond,
                then_expr,
                else_expr,
            } => self.conditional(cond, then_expr, else_expr, Self::elem),
            ExprKind::Binary { op, .. } => Err(misuse(&format!(
                "`{}` on elements (only `+`, the monoid operator, is generic)",
                op.symbol()
            ))),
            _ => Err(misuse("an element is computed by something other than `+`")),
        }
    }

    /// An expression in integer or boolean position.
    fn int(&mut self, expr: &Expr) -> Result<String, CodegenError> {
        let unsupported = |what: &str| CodegenError::Unsupported {
            what: what.into(),
            span: expr.span,
        };
        match &expr.kind {
            ExprKind::IntLit(value) => match self.cells {
                Cells::Concrete(IntWidth::Bits64) => {
                    let value = i64::try_from(value)
                        .map_err(|_| unsupported("a literal beyond 64 bits"))?;
                    Ok(format!("{value}L"))
                }
                _ => {
                    let value = i32::try_from(value)
                        .map_err(|_| unsupported("a literal beyond 32 bits"))?;
                    Ok(value.to_string())
                }
            },
            ExprKind::BoolLit(b) => Ok(if *b { "true" } else { "false" }.into()),
            ExprKind::Name(id) if self.elems.contains(&id.name) => {
                Err(CodegenError::ElementMisuse {
                    reason: format!("element variable `{}` used as an integer", id.name),
                    span: expr.span,
                })
            }
            ExprKind::Name(id) if self.scalars.contains_key(&id.name) => Ok(id.name.clone()),
            ExprKind::Name(id)
                if self.cells != Cells::Generic
                    && self.capture(&id.name).is_some_and(|v| !v.is_array()) =>
            {
                Ok(id.name.clone())
            }
            ExprKind::Name(id) => Err(unsupported(&format!(
                "`{}` is not a kernel variable (ghost or outside the kernel)",
                id.name
            ))),
            ExprKind::Field { base, name }
                if self.cells != Cells::Generic && name.name == "length" =>
            {
                match &base.kind {
                    ExprKind::Name(id) => self.length_of(&id.name).ok_or_else(|| {
                        unsupported("the length of something other than a kernel array")
                    }),
                    _ => Err(unsupported(
                        "the length of something other than a kernel array",
                    )),
                }
            }
            ExprKind::Index { base, index } if self.cells != Cells::Generic => match &base.kind {
                ExprKind::Name(id) if self.is_kernel_array(&id.name) => {
                    let index = self.int(index)?;
                    Ok(format!("{}[{index}]", id.name))
                }
                _ => Err(unsupported(
                    "indexing something other than an `int[]` or `boolean[]` variable",
                )),
            },
            ExprKind::Index { base, .. } if matches!(&base.kind, ExprKind::Name(id) if self.arrays.contains(&id.name)) => {
                Err(CodegenError::ElementMisuse {
                    reason: "an array cell is read as an integer (compared, used as an index, \
                             in a condition or in integer arithmetic)"
                        .into(),
                    span: expr.span,
                })
            }
            ExprKind::Unary { op, operand } => {
                let operand = self.int(operand)?;
                Ok(match op {
                    UnaryOp::Not => format!("(!{operand})"),
                    UnaryOp::Neg => format!("(-{operand})"),
                })
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let symbol = match op {
                    BinaryOp::Or => "||",
                    BinaryOp::And => "&&",
                    BinaryOp::Eq => "==",
                    BinaryOp::Neq => "!=",
                    BinaryOp::Lt => "<",
                    BinaryOp::Le => "<=",
                    BinaryOp::Gt => ">",
                    BinaryOp::Ge => ">=",
                    BinaryOp::Add => "+",
                    BinaryOp::Sub => "-",
                    BinaryOp::Mul => "*",
                    BinaryOp::Div => "/",
                    BinaryOp::Mod => "%",
                    BinaryOp::Implies => {
                        let (a, b) = (self.int(lhs)?, self.int(rhs)?);
                        return Ok(format!("(!{a} || {b})"));
                    }
                    _ => return Err(unsupported(&format!("`{}` in code", op.symbol()))),
                };
                let (a, b) = (self.int(lhs)?, self.int(rhs)?);
                Ok(format!("({a} {symbol} {b})"))
            }
            ExprKind::Cond {
                cond,
                then_expr,
                else_expr,
            } => self.conditional(cond, then_expr, else_expr, Self::int),
            ExprKind::Call {
                receiver,
                name,
                args,
                ..
            } if matches!(
                receiver.as_deref(),
                None | Some(Expr {
                    kind: ExprKind::This,
                    ..
                })
            ) =>
            {
                if !self.functions.contains_key(&name.name) {
                    return Err(unsupported(&format!(
                        "a call of `{}`, which is not a pure function with an expression body",
                        name.name
                    )));
                }
                if !self.called.contains(&name.name) {
                    self.called.push(name.name.clone());
                }
                let args = args
                    .iter()
                    .map(|a| self.int(a))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(format!("{}({})", c_name(&name.name), args.join(", ")))
            }
            _ => Err(unsupported("this expression in kernel code")),
        }
    }

    /// C definitions of the pure functions the kernel calls (transitively), prototypes first.
    /// Recursive functions are refused: OpenCL C has no recursion.
    fn functions_source(&mut self) -> Result<String, CodegenError> {
        let mut done: BTreeSet<String> = BTreeSet::new();
        let mut prototypes = String::new();
        let mut bodies = String::new();
        let mut i = 0;
        while i < self.called.len() {
            let name = self.called[i].clone();
            i += 1;
            if !done.insert(name.clone()) {
                continue;
            }
            let function = self.functions[&name];
            let (signature, body) = self.function(function)?;
            writeln!(prototypes, "{signature};").unwrap();
            writeln!(bodies, "{signature} {{\n  return {body};\n}}").unwrap();
        }
        self.check_no_recursion()?;
        Ok(format!("{prototypes}{bodies}"))
    }

    fn function(&mut self, function: &Method) -> Result<(String, String), CodegenError> {
        let int_type = self.int_type();
        let cty = |kind: &TypeKind, span: Span| match kind {
            TypeKind::Int => Ok(int_type),
            TypeKind::Bool => Ok("bool"),
            _ => Err(CodegenError::Unsupported {
                what: "a function over types other than `int` and `boolean` in kernel code".into(),
                span,
            }),
        };
        let ret = function
            .return_type
            .as_ref()
            .map(|t| cty(&t.kind, t.span))
            .transpose()?
            .unwrap_or("void");
        let mut params = Vec::new();
        let mut scalars = HashMap::new();
        for param in &function.params {
            let ty = cty(&param.ty.kind, param.span)?;
            params.push(format!("{ty} {}", param.name.name));
            let scalar = if ty == int_type {
                Scalar::Int
            } else {
                Scalar::Bool
            };
            scalars.insert(param.name.name.clone(), scalar);
        }
        let MethodBody::Expr(body) = &function.body else {
            unreachable!("only expression-bodied pure functions are collected")
        };
        // The body sees only its parameters: no kernel arrays, no element variables.
        let saved = (
            std::mem::replace(&mut self.scalars, scalars),
            std::mem::take(&mut self.elems),
            std::mem::take(&mut self.arrays),
            std::mem::take(&mut self.host),
        );
        let body = self.int(body);
        (self.scalars, self.elems, self.arrays, self.host) = saved;
        Ok((
            format!(
                "static {ret} {}({})",
                c_name(&function.name.name),
                if params.is_empty() {
                    "void".to_string()
                } else {
                    params.join(", ")
                }
            ),
            body?,
        ))
    }

    fn check_no_recursion(&self) -> Result<(), CodegenError> {
        // A call graph over the collected functions; any cycle is refused.
        let mut graph: HashMap<&str, Vec<&str>> = HashMap::new();
        for name in &self.called {
            let function = self.functions[name];
            let mut callees = Vec::new();
            if let MethodBody::Expr(body) = &function.body {
                calls_in(body, &mut callees);
            }
            graph.insert(name.as_str(), callees);
        }
        fn visit<'g>(
            node: &'g str,
            graph: &HashMap<&'g str, Vec<&'g str>>,
            stack: &mut Vec<&'g str>,
            done: &mut HashSet<&'g str>,
        ) -> Option<&'g str> {
            if stack.contains(&node) {
                return Some(node);
            }
            if !done.insert(node) {
                return None;
            }
            stack.push(node);
            for callee in graph.get(node).into_iter().flatten() {
                if let Some(cycle) = visit(callee, graph, stack, done) {
                    return Some(cycle);
                }
            }
            stack.pop();
            None
        }
        let mut done = HashSet::new();
        for name in &self.called {
            if let Some(cycle) = visit(name, &graph, &mut Vec::new(), &mut done) {
                return Err(CodegenError::Unsupported {
                    what: format!("the recursive function `{cycle}` in kernel code"),
                    span: self.functions[cycle].name.span,
                });
            }
        }
        Ok(())
    }
}

/// `(a) + (b)` stays, `(a + b)` becomes `a + b`.
/// The code by which a work-group fills its local arrays (`fills`: name, length as C) with
/// `value` and then waits for every thread (`int`: the index type): each thread takes every
/// k-th cell from its linear local id on, for any number of dimensions. Nothing where there
/// are none. `new` gives zeros, and OpenCL's local memory starts undefined.
fn fill_local_arrays(fills: &[(String, String)], value: &str, int: &str) -> String {
    if fills.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for (name, len) in fills {
        writeln!(
            out,
            "  for ({int} alp_k = ({int})(get_local_id(0) + get_local_size(0) * \
             (get_local_id(1) + get_local_size(1) * get_local_id(2))); alp_k < {len}; \
             alp_k += ({int})(get_local_size(0) * get_local_size(1) * get_local_size(2))) \
             {name}[alp_k] = {value};"
        )
        .unwrap();
    }
    out.push_str("  barrier(CLK_LOCAL_MEM_FENCE);\n");
    out
}

fn strip_outer_parens(text: String) -> String {
    if !(text.starts_with('(') && text.ends_with(')')) {
        return text;
    }
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 && i + 1 < text.len() {
                    return text;
                }
            }
            _ => {}
        }
    }
    text[1..text.len() - 1].to_string()
}

fn calls_in<'e>(expr: &'e Expr, out: &mut Vec<&'e str>) {
    match &expr.kind {
        ExprKind::Call { name, args, .. } => {
            out.push(&name.name);
            for arg in args {
                calls_in(arg, out);
            }
        }
        ExprKind::Unary { operand, .. } => calls_in(operand, out),
        ExprKind::Binary { lhs, rhs, .. } => {
            calls_in(lhs, out);
            calls_in(rhs, out);
        }
        ExprKind::Cond {
            cond,
            then_expr,
            else_expr,
        } => {
            calls_in(cond, out);
            calls_in(then_expr, out);
            calls_in(else_expr, out);
        }
        _ => {}
    }
}

/// (variable, value) for every assignment and initialised declaration of a local, outside
/// erased code.
fn assignments_of<'s>(stmt: &'s Stmt, out: &mut Vec<(&'s str, &'s Expr)>) {
    if erased(stmt) {
        return;
    }
    match &stmt.kind {
        StmtKind::LocalDecl { vars, .. } => {
            for var in vars {
                if let Some(init) = &var.init {
                    out.push((&var.name.name, init));
                }
            }
        }
        StmtKind::Assign { target, value } => {
            if let ExprKind::Name(id) = &target.kind {
                out.push((&id.name, value));
            }
        }
        StmtKind::If {
            then_branch,
            else_branch,
            ..
        } => {
            assignments_of(then_branch, out);
            if let Some(e) = else_branch {
                assignments_of(e, out);
            }
        }
        StmtKind::While { body, .. } => assignments_of(body, out),
        StmtKind::For {
            init, update, body, ..
        } => {
            for s in [init, update].into_iter().flatten() {
                assignments_of(s, out);
            }
            assignments_of(body, out);
        }
        StmtKind::Block(block) => {
            for s in &block.stmts {
                assignments_of(s, out);
            }
        }
        _ => {}
    }
}

mod program;
mod size;
pub use program::{generate_method, DeviceOnly, Launch, LaunchArg, MethodKernels, ThreadShape};
pub use size::{SizePrecondition, SizeRefused};

#[cfg(test)]
mod tests;
