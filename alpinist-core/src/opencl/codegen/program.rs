//! Every par block of a method → an OpenCL kernel over concrete integers (`alpinist run`,
//! `emit-opencl` for kernels that are not scans).
//!
//! # The mapping
//! - The method's body is **host code**: it runs on the host (the interpreter runs it and
//!   hands each par block it reaches to a launcher, `interp::Launcher`). Each par block the
//!   host code reaches — at any depth of its blocks, branches and loops, but not inside another
//!   par block — is one kernel launch; blocks launched together (`and`, `parallel { }`) and
//!   `sequential { }` blocks are launched one after another, which is faithful because the
//!   checker proved them free of races with each other.
//! - A block's iterators (one to three, `int`) are the NDRange's dimensions:
//!   `i = lo + get_global_id(d)`, global size `hi − lo` evaluated on the host at the launch.
//!   A block with a barrier runs as **one work-group** (local size = global size; the launcher
//!   refuses it when the device's work-group limit is smaller), since OpenCL barriers
//!   synchronise a work-group only. A block whose whole body is one nested par block with one
//!   iterator each is **groups × local threads**: `g = lo + get_group_id(0)`,
//!   `t = lo' + get_local_id(0)`, barriers in the inner block.
//! - Every variable of the launching method the kernel reads becomes an argument, in
//!   first-use order: `int` → PVL's integer type (`int`, or `long` with
//!   [`IntWidth::Bits64`]), `boolean` → `int`, `int[]` → `__global T*`, `boolean[]` →
//!   `__global int*` (0 or 1). The host copies arrays in before and out after each launch.
//!   A thread that assigns a variable of the launching method is refused (an OpenCL argument
//!   is a copy).
//! - **Local memory.** An array the method allocates (`T[] t = new T[size]`, one dimension)
//!   lives in the work-group's `__local` memory when exactly one launch uses it and that
//!   launch is one work-group (a flat block with a barrier), the block's `par` statement
//!   standing after the declaration in the same statement list, and nothing else in the
//!   method mentions it — no host code, no ghost code, no other block — and no other
//!   declaration has its name. Then nothing can observe the difference: the array is born,
//!   used by one group of threads and dies with the launch. The kernel takes `__local T* t`
//!   and its length, and its threads first zero it together (`new` gives zeros; OpenCL's
//!   local memory starts undefined) behind a barrier; the host passes the size and copies
//!   nothing ([`MethodKernels::local_arrays`]).
//! - Statements and expressions are translated by the scan generator's code (one mapping):
//!   specifications and ghost code are erased, a barrier is
//!   `barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)`, pure functions with an expression
//!   body become `static` functions (not recursive).
//! - A method whose host code reaches no par block runs as **one work-item**: its body is
//!   the kernel, its parameters the arguments in order (a kernel's by-value copies, as PVL's
//!   parameters are), and a result is written to a last argument `__global T* alp_result`.
//!
//! Not yet: par blocks in methods the launching method calls (the launcher reports them),
//! `vec` blocks.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::{
    block_contains, erased, kernel_method, Cells, CodegenError, Generator, HostVar, IntWidth,
    Scalar,
};
use crate::syntax::{
    Block, Expr, ExprKind, Item, Member, MemberKind, Method, MethodBody, Modifier, ParBlock,
    ParGroupStyle, Program, Span, Stmt, StmtKind, TypeKind,
};

/// The kernels of one method and how to launch them.
#[derive(Clone, Debug)]
pub struct MethodKernels {
    /// The method as the interpreter names it (`name`, or `Class.name`).
    pub method: String,
    pub width: IntWidth,
    /// The whole OpenCL C program: pure functions, then one kernel per launch.
    pub source: String,
    pub launches: Vec<Launch>,
    /// Where the method is its par blocks alone (ghost code aside, scratch arrays allocated
    /// before them) and returns nothing: it runs with its arrays left in device buffers, each
    /// block launched in turn (`opencl::kernel_run::DeviceKernel`). `None` where host code
    /// runs between the launches, or a parameter is no kernel argument (an object, a matrix).
    pub device_only: Option<DeviceOnly>,
    /// The method's arrays that live in work-group local memory (see the module docs), in
    /// declaration order.
    pub local_arrays: Vec<String>,
}

/// A method that runs on device buffers alone: [`MethodKernels::device_only`].
#[derive(Clone, Debug)]
pub struct DeviceOnly {
    /// The parameters, in order.
    pub params: Vec<LaunchArg>,
    /// The `int` arrays the method allocates (`int[] t = new int[size]`), zero-filled at each
    /// run (new buffers, or local memory: [`MethodKernels::local_arrays`]), with their sizes
    /// over the parameters.
    pub scratch: Vec<(String, Expr)>,
}

impl MethodKernels {
    /// The launch of the par block whose span is `block`.
    pub fn launch_of(&self, block: Span) -> Option<&Launch> {
        self.launches.iter().find(|l| l.block == block)
    }
}

/// One par block as a kernel launch.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The par block's span: the interpreter names the block it reaches by it.
    pub block: Span,
    /// The kernel function's name.
    pub kernel: String,
    /// The kernel's arguments in order: variables of the launching method.
    pub args: Vec<LaunchArg>,
    pub shape: ThreadShape,
}

/// A kernel argument: a variable of the launching method, read when the block is launched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchArg {
    pub name: String,
    pub var: HostVar,
}

/// The NDRange of a launch; bounds are evaluated on the host in the launching scope.
#[derive(Clone, Debug)]
pub enum ThreadShape {
    /// One par block: one dimension per iterator, `(lo, hi)`; `one_group` when it has a
    /// barrier.
    Flat {
        dims: Vec<(Expr, Expr)>,
        one_group: bool,
    },
    /// A par block over work-groups whose body is a par block over each group's threads.
    Groups {
        /// The work-group iterator's name, which the threads' range may mention.
        group: String,
        groups: Box<(Expr, Expr)>,
        threads: Box<(Expr, Expr)>,
    },
    /// The whole method (it has no par block) as one work-item; `result` is the type of the
    /// value it returns through `alp_result`, if any.
    Single { result: Option<HostVar> },
}

/// Generates the kernels of `method` (`name` when unique, or `Class.name`).
pub fn generate_method(
    program: &Program,
    method: &str,
    width: IntWidth,
) -> Result<MethodKernels, CodegenError> {
    // Functions and methods are keyed by name: overloads get names of their own first.
    let resolved = crate::check::resolve_overloads(program);
    let program = resolved.as_ref().unwrap_or(program);
    let mut functions = HashMap::new();
    let mut found: Vec<(String, &Member)> = Vec::new();
    for item in &program.items {
        let (class, members) = match item {
            Item::Class(class) => (Some(class.name.name.as_str()), class.members.as_slice()),
            Item::Member(member) => (None, std::slice::from_ref(member)),
        };
        for member in members {
            let MemberKind::Method(m) = &member.kind else {
                continue;
            };
            if let MethodBody::Expr(_) = &m.body {
                if m.modifiers.contains(&Modifier::Pure) {
                    functions.insert(m.name.name.clone(), m);
                }
            }
            let qualified = match class {
                Some(c) => format!("{c}.{}", m.name.name),
                None => m.name.name.clone(),
            };
            if (m.name.name == method || qualified == method)
                && matches!(m.body, MethodBody::Block(_))
            {
                found.push((qualified, member));
            }
        }
    }
    let (name, member) = match found.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(CodegenError::Unsupported {
                what: format!("no method `{method}` with a body"),
                span: program.span,
            })
        }
        [_, second, ..] => {
            return Err(CodegenError::Unsupported {
                what: format!("`{method}` names several methods; write `Class.{method}`"),
                span: kernel_method(second.1).name.span,
            })
        }
    };
    let mut generator = Generator::new(member, functions);
    generator.cells = Cells::Concrete(width);
    let m = generator.method;
    let mut host = HashMap::new();
    for param in &m.params {
        if let Some(var) = HostVar::of(&param.ty.kind) {
            host.insert(param.name.name.clone(), var);
        }
    }
    let MethodBody::Block(body) = &m.body else {
        unreachable!("only methods with a block body are selected")
    };
    let mut blocks = Vec::new();
    host_code(body, &mut host, &mut blocks)?;
    generator.host = host;
    let local_arrays = local_arrays(body);
    generator.locals = local_arrays.iter().cloned().collect();
    let device_only = device_only(m, body, !blocks.is_empty());

    let mut kernels = String::new();
    let mut launches = Vec::new();
    if blocks.is_empty() {
        let kernel = format!("alp_{}_body", super::c_name(&m.name.name));
        launches.push(generator.whole_kernel(body, kernel, width, &mut kernels)?);
    }
    for (k, block) in blocks.into_iter().enumerate() {
        let kernel = format!("alp_{}_{k}", super::c_name(&m.name.name));
        let launch = generator.block_kernel(block, kernel, width, &mut kernels)?;
        launches.push(launch);
    }
    let mut source = String::new();
    writeln!(
        source,
        "/* generated by alpinist from `{name}`: one kernel per par block, PVL's int as {} */",
        width.c_type()
    )
    .unwrap();
    source.push_str(&generator.functions_source()?);
    source.push_str(&kernels);
    Ok(MethodKernels {
        method: name,
        width,
        source,
        launches,
        device_only,
        local_arrays,
    })
}

/// The arrays of the method with body `body` that live in local memory (module docs).
fn local_arrays(body: &Block) -> Vec<String> {
    let mut found = Vec::new();
    host_lists(&body.stmts, &mut |stmts| {
        for (k, stmt) in stmts.iter().enumerate() {
            let StmtKind::LocalDecl { ty, vars } = &stmt.kind else {
                continue;
            };
            if !HostVar::of(&ty.kind).is_some_and(HostVar::is_array) || erased(stmt) {
                continue;
            }
            for var in vars {
                let name = var.name.name.as_str();
                let allocated = matches!(
                    var.init.as_ref().map(|e| &e.kind),
                    Some(ExprKind::NewArray { dims, .. }) if dims.len() == 1
                );
                let mut users = stmts[k + 1..].iter().filter(|s| stmt_mentions(s, name));
                let (Some(user), None) = (users.next(), users.next()) else {
                    continue;
                };
                let StmtKind::Par(group) = &user.kind else {
                    continue;
                };
                let mut blocks = group.blocks.iter().filter(|b| block_mentions(b, name));
                let (Some(block), None) = (blocks.next(), blocks.next()) else {
                    continue;
                };
                if allocated
                    && is_one_group(block)
                    && declarations(body, name) == 1
                    && !body
                        .stmts
                        .iter()
                        .any(|s| mentioned_outside(s, name, block.span))
                {
                    found.push(name.to_string());
                }
            }
        }
    });
    found
}

/// Calls `f` on every statement list of host code in `stmts`, outermost first, in textual
/// order: the list itself and those of its blocks, branches and loop bodies, not par blocks'.
fn host_lists<'a>(stmts: &'a [Stmt], f: &mut dyn FnMut(&'a [Stmt])) {
    f(stmts);
    for stmt in stmts {
        host_lists_in(stmt, f);
    }
}

fn host_lists_in<'a>(stmt: &'a Stmt, f: &mut dyn FnMut(&'a [Stmt])) {
    match &stmt.kind {
        StmtKind::Block(b) => host_lists(&b.stmts, f),
        StmtKind::If {
            then_branch,
            else_branch,
            ..
        } => {
            host_lists_in(then_branch, f);
            if let Some(e) = else_branch {
                host_lists_in(e, f);
            }
        }
        StmtKind::While { body, .. } | StmtKind::For { body, .. } => host_lists_in(body, f),
        _ => {}
    }
}

/// Whether `name` occurs in `stmt`, its nested statements or their contracts.
fn stmt_mentions(stmt: &Stmt, name: &str) -> bool {
    let mut hit = false;
    stmt.for_each_expr_deep(&mut |e| hit = hit || e.mentions(name));
    hit
}

/// Whether `name` occurs in the par block `block`: its ranges, contract and body.
fn block_mentions(block: &ParBlock, name: &str) -> bool {
    let mut hit = block
        .iters
        .iter()
        .any(|i| i.lo.mentions(name) || i.hi.mentions(name));
    block
        .contract
        .for_each_expr(&mut |e| hit = hit || e.mentions(name));
    hit || block.body.stmts.iter().any(|s| stmt_mentions(s, name))
}

/// Whether `name` occurs in `stmt` outside the par block whose span is `block`.
fn mentioned_outside(stmt: &Stmt, name: &str, block: Span) -> bool {
    if let StmtKind::Par(group) = &stmt.kind {
        return group
            .blocks
            .iter()
            .any(|b| b.span != block && block_mentions(b, name));
    }
    let mut hit = false;
    stmt.for_each_expr(&mut |e| hit = hit || e.mentions(name));
    for contract in stmt.own_contracts() {
        contract.for_each_expr(&mut |e| hit = hit || e.mentions(name));
    }
    hit || stmt
        .children()
        .into_iter()
        .any(|c| mentioned_outside(c, name, block))
}

/// How many local declarations in `body` (at any depth) declare `name`.
fn declarations(body: &Block, name: &str) -> usize {
    let mut count = 0;
    for stmt in &body.stmts {
        stmt.visit(&mut |s| {
            if let StmtKind::LocalDecl { vars, .. } = &s.kind {
                count += vars.iter().filter(|v| v.name.name == name).count();
            }
        });
    }
    count
}

/// The par block a block over work-groups nests in it, if `block` is one: its kept body is
/// exactly one par statement (`ThreadShape::Groups`).
fn nested_par(block: &ParBlock) -> Option<&crate::syntax::ParGroup> {
    match kept(&block.body).as_slice() {
        [Stmt {
            kind: StmtKind::Par(group),
            ..
        }] if group.style != ParGroupStyle::Vector => Some(group),
        _ => None,
    }
}

/// Whether `block` is launched as one work-group: flat, with a barrier.
fn is_one_group(block: &ParBlock) -> bool {
    nested_par(block).is_none() && has_barrier(&block.body)
}

/// What runs `m` on device buffers, where its body is par statements alone (erased ghost code
/// aside, at least one block, `int` scratch arrays allocated by `new int[size]` before them)
/// and it returns nothing: see [`MethodKernels::device_only`].
fn device_only(m: &Method, body: &Block, has_blocks: bool) -> Option<DeviceOnly> {
    let returns_nothing = m
        .return_type
        .as_ref()
        .is_some_and(|t| t.kind == TypeKind::Void);
    if !has_blocks || !returns_nothing {
        return None;
    }
    let mut scratch = Vec::new();
    let mut launched = false;
    for stmt in &body.stmts {
        match &stmt.kind {
            _ if erased(stmt) => {}
            StmtKind::Par(group) if group.style != ParGroupStyle::Vector => launched = true,
            StmtKind::LocalDecl { ty, vars }
                if !launched && HostVar::of(&ty.kind) == Some(HostVar::IntArray) =>
            {
                for var in vars {
                    match var.init.as_ref().map(|e| &e.kind) {
                        Some(ExprKind::NewArray { elem, dims })
                            if elem.kind == TypeKind::Int && dims.len() == 1 =>
                        {
                            scratch.push((var.name.name.clone(), dims[0].clone()));
                        }
                        _ => return None,
                    }
                }
            }
            _ => return None,
        }
    }
    let params = m
        .params
        .iter()
        .map(|p| {
            Some(LaunchArg {
                name: p.name.name.clone(),
                var: HostVar::of(&p.ty.kind)?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(DeviceOnly { params, scratch })
}

/// Collects the host variables (locals outside par blocks) and the par blocks host code
/// reaches, in textual order.
fn host_code<'a>(
    block: &'a Block,
    host: &mut HashMap<String, HostVar>,
    blocks: &mut Vec<&'a ParBlock>,
) -> Result<(), CodegenError> {
    for stmt in &block.stmts {
        host_stmt(stmt, host, blocks)?;
    }
    Ok(())
}

fn host_stmt<'a>(
    stmt: &'a Stmt,
    host: &mut HashMap<String, HostVar>,
    blocks: &mut Vec<&'a ParBlock>,
) -> Result<(), CodegenError> {
    if erased(stmt) {
        return Ok(());
    }
    match &stmt.kind {
        StmtKind::LocalDecl { ty, vars } => {
            if let Some(var) = HostVar::of(&ty.kind) {
                for v in vars {
                    host.insert(v.name.name.clone(), var);
                }
            }
        }
        StmtKind::Par(group) => {
            if group.style == ParGroupStyle::Vector {
                return Err(CodegenError::Unsupported {
                    what: "a `vec` block as a kernel launch".into(),
                    span: stmt.span,
                });
            }
            blocks.extend(group.blocks.iter());
        }
        StmtKind::Block(b) => host_code(b, host, blocks)?,
        StmtKind::If {
            then_branch,
            else_branch,
            ..
        } => {
            host_stmt(then_branch, host, blocks)?;
            if let Some(e) = else_branch {
                host_stmt(e, host, blocks)?;
            }
        }
        StmtKind::While { body, .. } => host_stmt(body, host, blocks)?,
        StmtKind::For {
            init, update, body, ..
        } => {
            for s in [init, update].into_iter().flatten() {
                host_stmt(s, host, blocks)?;
            }
            host_stmt(body, host, blocks)?;
        }
        _ => {}
    }
    Ok(())
}

/// A kernel parameter: `int` is PVL's integer type `int_type`, a boolean an `int`.
fn parameter(name: &str, var: HostVar, int_type: &str) -> String {
    match var {
        HostVar::Int => format!("{int_type} {name}"),
        HostVar::Bool => format!("int {name}"),
        HostVar::IntArray => format!("__global {int_type}* {name}"),
        HostVar::BoolArray => format!("__global int* {name}"),
        HostVar::LocalIntArray => format!("__local {int_type}* {name}"),
        HostVar::LocalBoolArray => format!("__local int* {name}"),
        HostVar::Length => format!("{int_type} alp_len_{name}"),
    }
}

/// The statements of a block that code generation keeps.
fn kept(block: &Block) -> Vec<&Stmt> {
    block.stmts.iter().filter(|s| !erased(s)).collect()
}

fn has_barrier(block: &Block) -> bool {
    block_contains(block, &|kind| matches!(kind, StmtKind::Barrier(_)))
}

impl Generator<'_> {
    /// A method without par blocks → one `__kernel` run by one work-item.
    fn whole_kernel(
        &mut self,
        body: &Block,
        kernel: String,
        width: IntWidth,
        out: &mut String,
    ) -> Result<Launch, CodegenError> {
        let m = self.method;
        let int = width.c_type();
        self.host.clear();
        let mut args = Vec::new();
        let mut params = Vec::new();
        for param in &m.params {
            let name = param.name.name.clone();
            let var = HostVar::of(&param.ty.kind).ok_or_else(|| CodegenError::Unsupported {
                what: "a parameter other than `int`, `boolean`, `int[]` or `boolean[]` on a \
                       device"
                    .into(),
                span: param.span,
            })?;
            match var {
                HostVar::Int => self.scalars.insert(name.clone(), Scalar::Int),
                HostVar::Bool => self.scalars.insert(name.clone(), Scalar::Bool),
                HostVar::IntArray | HostVar::BoolArray => {
                    self.arrays.insert(name.clone());
                    None
                }
                HostVar::Length | HostVar::LocalIntArray | HostVar::LocalBoolArray => None,
            };
            params.push(parameter(&name, var, int));
            args.push(LaunchArg { name, var });
        }
        let result = match &m.return_type {
            None => None,
            Some(ty) if ty.kind == TypeKind::Void => None,
            Some(ty) => Some(match HostVar::of(&ty.kind) {
                Some(var @ (HostVar::Int | HostVar::Bool)) => var,
                _ => {
                    return Err(CodegenError::Unsupported {
                        what: "a result other than `int` or `boolean` on a device".into(),
                        span: ty.span,
                    })
                }
            }),
        };
        self.captured.clear();
        self.whole_method = true;
        let mut code = String::new();
        let generated = self.block_stmts(body, 1, &mut code);
        self.whole_method = false;
        generated?;
        // Lengths the body reads (`a.length`) follow the parameters; the result is the last
        // argument, where the launcher (`device_run.rs`) sets it.
        for (name, var) in std::mem::take(&mut self.captured) {
            params.push(parameter(&name, var, int));
            args.push(LaunchArg { name, var });
        }
        if let Some(var) = result {
            let array = if var == HostVar::Int {
                HostVar::IntArray
            } else {
                HostVar::BoolArray
            };
            params.push(parameter("alp_result", array, int));
        }
        writeln!(out, "__kernel void {kernel}({}) {{", params.join(", ")).unwrap();
        out.push_str(&code);
        out.push_str("}\n");
        Ok(Launch {
            block: m.name.span,
            kernel,
            args,
            shape: ThreadShape::Single { result },
        })
    }

    /// One par block → one `__kernel` appended to `out`.
    fn block_kernel(
        &mut self,
        block: &ParBlock,
        kernel: String,
        width: IntWidth,
        out: &mut String,
    ) -> Result<Launch, CodegenError> {
        self.scalars.clear();
        self.arrays.clear();
        self.captured.clear();
        let int = width.c_type();
        let mut prologue = String::new();
        let mut iterator = |this: &mut Self, iter: &crate::syntax::ParIter, id: String| {
            if iter.ty.kind != TypeKind::Int {
                return Err(CodegenError::Unsupported {
                    what: "a par iterator that is not `int`".into(),
                    span: iter.span,
                });
            }
            let lo = this.int(&iter.lo)?;
            this.scalars.insert(iter.name.name.clone(), Scalar::Int);
            writeln!(prologue, "  {int} {} = {lo} + ({int}){id};", iter.name.name).unwrap();
            Ok(())
        };
        let nested = match nested_par(block) {
            Some(group) => match group.blocks.as_slice() {
                [inner] => Some(inner),
                _ => {
                    return Err(CodegenError::Unsupported {
                        what: "several par blocks nested in one".into(),
                        span: block.span,
                    })
                }
            },
            None => None,
        };
        let (shape, body) = match nested {
            Some(inner) => {
                let ([outer_iter], [inner_iter]) = (block.iters.as_slice(), inner.iters.as_slice())
                else {
                    return Err(CodegenError::Unsupported {
                        what: "nested par blocks other than one iterator over work-groups and \
                               one over each group's threads"
                            .into(),
                        span: block.span,
                    });
                };
                iterator(self, outer_iter, "get_group_id(0)".into())?;
                iterator(self, inner_iter, "get_local_id(0)".into())?;
                let shape = ThreadShape::Groups {
                    group: outer_iter.name.name.clone(),
                    groups: Box::new((outer_iter.lo.clone(), outer_iter.hi.clone())),
                    threads: Box::new((inner_iter.lo.clone(), inner_iter.hi.clone())),
                };
                (shape, &inner.body)
            }
            None => {
                if block.iters.is_empty() || block.iters.len() > 3 {
                    return Err(CodegenError::Unsupported {
                        what: "a par block with no iterator or more than three".into(),
                        span: block.span,
                    });
                }
                for (d, iter) in block.iters.iter().enumerate() {
                    iterator(self, iter, format!("get_global_id({d})"))?;
                }
                let shape = ThreadShape::Flat {
                    dims: block
                        .iters
                        .iter()
                        .map(|i| (i.lo.clone(), i.hi.clone()))
                        .collect(),
                    one_group: has_barrier(&block.body),
                };
                (shape, &block.body)
            }
        };
        let mut code = String::new();
        self.block_stmts(body, 1, &mut code)?;
        // Local arrays: their length is an argument, and the threads zero them first.
        let locals: Vec<String> = self
            .captured
            .iter()
            .filter(|(_, var)| var.is_local())
            .map(|(name, _)| name.clone())
            .collect();
        let mut fills = Vec::new();
        for name in locals {
            let len = self.length_of(&name).expect("a captured array");
            fills.push((name, len));
        }
        prologue.push_str(&super::fill_local_arrays(&fills, "0", int));
        let args: Vec<LaunchArg> = self
            .captured
            .iter()
            .map(|(name, var)| LaunchArg {
                name: name.clone(),
                var: *var,
            })
            .collect();
        let params: Vec<String> = args
            .iter()
            .map(|a| parameter(&a.name, a.var, int))
            .collect();
        writeln!(out, "__kernel void {kernel}({}) {{", params.join(", ")).unwrap();
        out.push_str(&prologue);
        out.push_str(&code);
        out.push_str("}\n");
        Ok(Launch {
            block: block.span,
            kernel,
            args,
            shape,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernels(src: &str, method: &str) -> Result<MethodKernels, CodegenError> {
        let program = crate::syntax::parse(src).expect("parses").program;
        generate_method(&program, method, IntWidth::Bits32)
    }

    #[test]
    fn host_variables_become_arguments_in_first_use_order() {
        let k = kernels(
            "void f(int n, int[] a, int[] b) { int k = 2; \
             par (int i = 0 .. n) { b[i] = a[i] * k; } }",
            "f",
        )
        .unwrap();
        let names: Vec<&str> = k.launches[0].args.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["b", "a", "k"]);
        assert!(k
            .source
            .contains("__kernel void alp_f_0(__global int* b, __global int* a, int k)"));
        assert!(k.source.contains("int i = 0 + (int)get_global_id(0);"));
    }

    /// A method that is its par blocks alone (scratch arrays allocated before them, ghost code
    /// aside) runs on device buffers; host code between launches, a result, or a parameter
    /// that is no kernel argument rules that out.
    #[test]
    fn methods_of_par_blocks_alone_run_on_device_buffers() {
        let only = |src: &str| kernels(src, "f").unwrap().device_only;
        let scratch = only(
            "void f(int n, int[] a) { int[] t = new int[n]; assert n >= 0; \
             par (int i = 0 .. n) { t[i] = a[i]; } par (int i = 0 .. n) { a[i] = t[i] + 1; } }",
        )
        .expect("par blocks alone");
        let params: Vec<(&str, HostVar)> = scratch
            .params
            .iter()
            .map(|p| (p.name.as_str(), p.var))
            .collect();
        assert_eq!(params, [("n", HostVar::Int), ("a", HostVar::IntArray)]);
        assert_eq!(scratch.scratch.len(), 1);
        assert_eq!(scratch.scratch[0].0, "t");
        for host_code in [
            "void f(int n, int[] a) { par (int i = 0 .. n) { a[i] = 0; } a[0] = 1; }",
            "int f(int n, int[] a) { par (int i = 0 .. n) { a[i] = 0; } return 1; }",
            "void f(int n, int[] a) { int k = 2; par (int i = 0 .. n) { a[i] = k; } }",
            "void f(int n, int[] a) { if (n > 2) { par (int i = 0 .. n) { a[i] = 0; } } }",
        ] {
            assert!(only(host_code).is_none(), "{host_code}");
        }
    }

    /// A scratch array lives in local memory exactly where nothing but one one-group launch
    /// can see it; its threads zero it first (`new` gives zeros).
    #[test]
    fn scratch_arrays_of_one_group_launches_live_in_local_memory() {
        let block = "par (int i = 0 .. n) { t[i] = a[i]; barrier(f) { } a[i] = t[n - 1 - i]; }";
        let local = |src: &str| kernels(src, "f").unwrap().local_arrays;
        let k = kernels(
            &format!(
                "void f(int n, int[] a) {{ int[] t = new int[n]; boolean[] s = new boolean[n]; \
                 {block} par (int i = 0 .. n) {{ s[i] = true; barrier(f) {{ }} \
                 a[i] = s[i] ? 1 : 0; }} }}"
            ),
            "f",
        )
        .unwrap();
        assert_eq!(k.local_arrays, ["t", "s"]);
        assert!(
            k.source.contains(
                "__kernel void alp_f_0(__local int* t, __global int* a, int n, int alp_len_t)"
            ),
            "{}",
            k.source
        );
        assert!(k.source.contains("__local int* s"), "{}", k.source);
        // The zeroing comes before the kernel's first statement, behind a barrier.
        let zero = k.source.find("t[alp_k] = 0;").expect("zeroed");
        let fence = k.source.find("barrier(CLK_LOCAL_MEM_FENCE);\n").unwrap();
        let first = k.source.find("t[i] = a[i];").unwrap();
        assert!(zero < fence && fence < first, "{}", k.source);
        let args: Vec<(&str, HostVar)> = k.launches[0]
            .args
            .iter()
            .map(|a| (a.name.as_str(), a.var))
            .collect();
        assert!(args.contains(&("t", HostVar::LocalIntArray)), "{args:?}");
        assert!(args.contains(&("t", HostVar::Length)), "{args:?}");

        for global in [
            // No barrier: many work-groups, which would each have a copy.
            "void f(int n, int[] a) { int[] t = new int[n]; \
             par (int i = 0 .. n) { t[i] = a[i]; a[i] = t[i]; } }",
            // Two launches share it.
            &format!("void f(int n, int[] a) {{ int[] t = new int[n]; {block} {block} }}"),
            // Host code reads it after the launch; ghost code mentions it.
            &format!("void f(int n, int[] a) {{ int[] t = new int[n]; {block} a[0] = t[0]; }}"),
            &format!(
                "void f(int n, int[] a) {{ int[] t = new int[n]; {block} assert t.length == n; }}"
            ),
            // The launch repeats in a loop the array outlives.
            &format!(
                "void f(int n, int[] a) {{ int[] t = new int[n]; int k = 0; \
                 while (k < 2) {{ {block} k = k + 1; }} }}"
            ),
            // Not allocated here: another name of an array the caller sees.
            &format!("void f(int n, int[] a) {{ int[] t = a; {block} }}"),
            // Work-groups of threads: one copy per group would be several arrays.
            "void f(int n, int[] a) { int[] t = new int[n]; \
             par (int g = 0 .. 1) { par (int i = 0 .. n) { t[i] = a[i]; barrier(f) { } \
             a[i] = t[i]; } } }",
        ] {
            assert!(local(global).is_empty(), "{global}");
        }
        // Declared (and launched) inside a loop's body: each iteration's array is its own.
        assert_eq!(
            local(&format!(
                "void f(int n, int[] a) {{ int k = 0; \
                 while (k < 2) {{ int[] t = new int[n]; {block} k = k + 1; }} }}"
            )),
            ["t"]
        );
    }

    #[test]
    fn overloaded_functions_get_c_names_of_their_own() {
        let k = kernels(
            "pure int f(int x) = x + 1; pure int f(int x, int y) = x * y; \
             void g(int n, int[] a) { par (int i = 0 .. n) { a[i] = f(a[i]) + f(a[i], 2); } }",
            "g",
        )
        .unwrap();
        // The definition (after the prototypes) of each overload, by the C name its call uses.
        let defined = |c_name: &str| {
            let at = k
                .source
                .rfind(&format!("static int {c_name}(int x"))
                .unwrap();
            let body = &k.source[at..];
            body[body.find('{').unwrap()..body.find('}').unwrap()].to_string()
        };
        let call = k.source.lines().find(|l| l.contains("a[i] = ")).unwrap();
        let names: Vec<&str> = call
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("alp_o_f_"))
            .collect();
        assert_eq!(names.len(), 2, "{call}");
        assert_ne!(names[0], names[1]);
        assert!(
            defined(names[0]).contains("return (x + 1);"),
            "{}",
            k.source
        );
        assert!(
            defined(names[1]).contains("return (x * y);"),
            "{}",
            k.source
        );
    }

    #[test]
    fn a_thread_writing_a_host_scalar_is_refused() {
        let e = kernels(
            "void f(int n, int[] a) { int s = 0; par (int i = 0 .. n) { s = a[i]; } }",
            "f",
        )
        .unwrap_err();
        assert!(e.to_string().contains("assigns `s`"), "{e}");
    }

    #[test]
    fn a_block_with_a_barrier_is_one_group_and_nested_blocks_are_groups() {
        let k = kernels(
            "void f(int n, int[] a) { \
               par (int i = 0 .. n) { a[i] = 1; barrier(f) { } a[i] = 2; } \
               par (int g = 0 .. 4) { par (int t = 0 .. n) { a[t] = g; } } }",
            "f",
        )
        .unwrap();
        assert!(matches!(
            k.launches[0].shape,
            ThreadShape::Flat {
                one_group: true,
                ..
            }
        ));
        assert!(matches!(k.launches[1].shape, ThreadShape::Groups { .. }));
        assert!(k.source.contains("int g = 0 + (int)get_group_id(0);"));
        assert!(k.source.contains("int t = 0 + (int)get_local_id(0);"));
    }

    #[test]
    fn long_integers() {
        let k = generate_method(
            &crate::syntax::parse(
                "void f(int n, int[] a) { par (int i = 0 .. n) { a[i] = 3000000000; } }",
            )
            .unwrap()
            .program,
            "f",
            IntWidth::Bits64,
        )
        .unwrap();
        assert!(k.source.contains("__global long* a"));
        assert!(k.source.contains("a[i] = 3000000000L;"));
        assert!(kernels(
            "void f(int n, int[] a) { par (int i = 0 .. n) { a[i] = 3000000000; } }",
            "f"
        )
        .is_err());
    }
}
