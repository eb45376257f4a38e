//! Matrix linearisation (`gpuopt matrix_lin m R|C M N;`, the Alpinist paper's "Matrix
//! linearization"): the two-dimensional array `m` (`T[][]`, `T` an `int` or `boolean`),
//! `M` rows of `N` cells, becomes one array of `M * N` cells, row-major (`R`) or
//! column-major (`C`).
//!
//! Template, in code and annotations alike (contracts, loop invariants, par and barrier
//! contracts, asserts, `\old(..)`, `Perm(..)`):
//!
//! ```text
//! T[][] m                 ->  T[] m              (parameter, local or field; T[M][N] -> T[M * N])
//! new T[M][N]             ->  new T[M * N]       (the matrix's allocation)
//! m[r][c]                 ->  m[N * r + c]       (R)   m[M * c + r]   (C)
//! m[r].length             ->  N
//! m.length                ->  M                  (the rows; the linear array has M * N cells)
//! \matrix(m, A, B)        ->  \array(m, A * B)
//! m == null, m != null    ->  unchanged
//! ```
//!
//! The *group*: a parameter matrix is linearised in the annotated method and in every method
//! of the same class that carries the same line (a call between them passes the linear array;
//! one of them may allocate the matrix as a local, `T[][] m = new T[M][N];`, and pass it to
//! the others); a field matrix in every member of its class that mentions it (one may
//! allocate it, `m = new T[M][N];`, typically the constructor). The group's lines are
//! consumed.
//!
//! An allocation is a statement of the method's body itself (not nested), with the sizes
//! `new T[M][N]` exactly as the line writes them, and nothing before it (the method's
//! precondition included) mentions `m`; at most one per method (E0958, sizes E0954). Its new
//! rows are distinct arrays of `N` cells that no other name holds, so the method that
//! allocates needs no Z3 query: the probes below are for the methods that receive the matrix.
//!
//! Applicability. Syntactically (refused with the span of the first offence): every
//! occurrence of `m` is one of the forms above (a row `m[r]` used on its own escapes, E0951;
//! `m` assigned, passed to a method outside the group or compared, E0952); nothing outside
//! the group calls a group method (E0953); the sizes `M` and `N` are expressions over
//! parameters of every group method that no method assigns, and no binder or local of a group
//! method is named like them or like `m` (E0954, E0958); a local array of `m`'s element type
//! is only ever a new array (otherwise it might be a row of `m`, E0958).
//! With Z3, where each group method starts (one probe per method, each query in a branch of
//! its own, see `fuse::ask`): `m` is non-null with `M` rows of length `N` (E0955), so every
//! access the input verifies in bounds has `0 <= r < M` and `0 <= c < N`, and the linear index
//! is a bijection; since rows are never assigned (no row escapes) and the sizes never change,
//! that holds throughout. Where `m` is written, its rows are distinct; where `m` or another
//! array `b` of the same element type is written, no row of `m` is `b` (nor a row of another
//! matrix): otherwise a write through one name is seen through the other in the input, and
//! not in the output, whose linear array is an array of its own (E0956).

use std::collections::BTreeSet;

use super::unroll::{mark, prove_in_probe};
use super::{parse_expr, parse_stmts, respan, FreshNames, Refusal, Timings};
use crate::syntax::{
    print_expr, BinaryOp, Builtin, Class, ClauseKind, Expr, ExprKind, GpuOptKind, Item,
    MatrixOrder, Member, MemberKind, Method, MethodBody, Program, Span, Stmt, StmtKind, Type,
    TypeKind,
};
use crate::verify::{Limits, Status};

/// Linearises the matrix `matrix` of the method at `method` (its group, see the module
/// documentation), after checking that it applies.
pub fn linearise(
    program: &Program,
    method: Span,
    matrix: &str,
    order: MatrixOrder,
    rows: &str,
    cols: &str,
    limits: &Limits,
) -> Result<(Program, Timings), Refusal> {
    super::timed(
        || plan(program, method, matrix, order, rows, cols),
        |plan| check_applicable(program, plan, limits),
        |plan, ()| Ok(apply(program, &plan)),
    )
}

/// Where the matrix lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Home {
    /// A parameter of each group method, or a local that one allocates
    /// (`T[][] m = new T[M][N];`) and passes to the others.
    Method,
    /// A field of the class.
    Field,
}

/// What the syntactic check found out.
#[derive(Clone, Debug)]
pub struct Plan {
    matrix: String,
    order: MatrixOrder,
    rows: Expr,
    cols: Expr,
    home: Home,
    /// The spans of the group's members (rewritten).
    members: Vec<Span>,
    /// The group's `gpuopt matrix_lin` lines (removed).
    lines: Vec<Span>,
    /// The span of the class holding the group (`None`: top level).
    class: Option<Span>,
    /// One per group method with statements: the facts to prove where it starts.
    probes: Vec<Probe>,
}

#[derive(Clone, Debug)]
struct Probe {
    /// The method (the probe cuts where its body starts) and its name's span.
    method_span: Span,
    method: String,
    name_span: Span,
    queries: Vec<Query>,
}

#[derive(Clone, Debug)]
struct Query {
    kind: QueryKind,
    text: String,
}

#[derive(Clone, Debug)]
enum QueryKind {
    /// Non-null, `M` rows of length `N`.
    Shape,
    /// Two different rows are different arrays.
    DistinctRows,
    /// No row of the matrix is the array (or a row of the matrix) `other`.
    Apart { other: String },
}

fn unsupported(what: impl Into<String>, span: Span) -> Refusal {
    Refusal::LineariseUnsupported {
        what: what.into(),
        span,
    }
}

/// The scalar element type of `T[]` or `T[][]` (`None` for another type).
fn scalar_of(ty: &Type) -> Option<&TypeKind> {
    match &ty.kind {
        TypeKind::Array { elem, .. } => match &elem.kind {
            TypeKind::Int | TypeKind::Bool => Some(&elem.kind),
            TypeKind::Array { elem, .. } => match &elem.kind {
                k @ (TypeKind::Int | TypeKind::Bool) => Some(k),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

fn dims(ty: &Type) -> usize {
    match &ty.kind {
        TypeKind::Array { elem, .. } => 1 + dims(elem),
        _ => 0,
    }
}

/// The method of `member`, if it is one.
fn method_of(member: &Member) -> Option<&Method> {
    match &member.kind {
        MemberKind::Method(m) => Some(m),
        MemberKind::Field(_) => None,
    }
}

fn member_stmts<'a>(member: &'a Member, f: &mut dyn FnMut(&'a Stmt)) {
    if let Some(Method {
        body: MethodBody::Block(b),
        ..
    }) = method_of(member)
    {
        b.stmts.iter().for_each(|s| s.visit(f));
    }
}

/// The line of `member` that requests the same linearisation.
fn same_lines(
    member: &Member,
    matrix: &str,
    order: MatrixOrder,
    rows: &str,
    cols: &str,
) -> Vec<Span> {
    member
        .gpuopts
        .iter()
        .filter(|g| match &g.kind {
            GpuOptKind::MatrixLin {
                matrix: m,
                order: o,
                rows: r,
                cols: c,
            } => m.name == matrix && *o == order && print_expr(r) == rows && print_expr(c) == cols,
            _ => false,
        })
        .map(|g| g.span)
        .collect()
}

/// Whether `e` is the matrix itself (`m`, or `this.m` for a field).
fn is_matrix(e: &Expr, matrix: &str, home: Home) -> bool {
    match &e.kind {
        ExprKind::Name(id) => id.name == matrix,
        ExprKind::Field { base, name } => {
            home == Home::Field && name.name == matrix && matches!(base.kind, ExprKind::This)
        }
        _ => false,
    }
}

/// The array `e` is a cell or row of: `a` of `a[i]`, `a[i][j]`, `this.a[i]`.
fn root_name(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Index { base, .. } => root_name(base),
        ExprKind::Name(id) => Some(&id.name),
        ExprKind::Field { base, name } if matches!(base.kind, ExprKind::This) => Some(&name.name),
        _ => None,
    }
}

/// The names a member declares inside itself: locals, quantifier and `\let` binders, par
/// iterators, with where.
fn declared_names(member: &Member) -> Vec<(String, Span)> {
    let mut out = Vec::new();
    member.for_each_expr_deep(&mut |e| {
        e.visit(&mut |x| match &x.kind {
            ExprKind::Quantifier(q) => {
                out.extend(q.binders.iter().map(|b| (b.name.name.clone(), b.span)))
            }
            ExprKind::Let { name, .. } => out.push((name.name.clone(), name.span)),
            _ => {}
        })
    });
    member_stmts(member, &mut |s| match &s.kind {
        StmtKind::LocalDecl { vars, .. } => {
            out.extend(vars.iter().map(|v| (v.name.name.clone(), v.span)))
        }
        StmtKind::Par(group) => out.extend(
            group
                .blocks
                .iter()
                .flat_map(|b| &b.iters)
                .map(|it| (it.name.name.clone(), it.span)),
        ),
        _ => {}
    });
    out
}

/// An allocation of the matrix in a method: `m = new T[A][B];` (`this.m = ..`, a field) or
/// the declaration `T[][] m = new T[A][B];` (a method's own matrix).
struct Allocation<'p> {
    stmt: &'p Stmt,
    /// The assigned `m` (`None` for a declaration).
    target: Option<&'p Expr>,
    /// The declared local's span (`None` for an assignment).
    local: Option<Span>,
    /// `A` and `B` of `new T[A][B]`.
    dims: &'p [Expr],
}

/// The allocations of the matrix in `member`, anywhere in its body.
fn allocations<'p>(member: &'p Member, matrix: &str, home: Home) -> Vec<Allocation<'p>> {
    let two_dims = |e: &'p Expr| match &e.kind {
        ExprKind::NewArray { dims, .. } if dims.len() == 2 => Some(&dims[..]),
        _ => None,
    };
    let mut out = Vec::new();
    member_stmts(member, &mut |s| match &s.kind {
        StmtKind::Assign { target, value } if is_matrix(target, matrix, home) => {
            if let Some(dims) = two_dims(value) {
                out.push(Allocation {
                    stmt: s,
                    target: Some(target),
                    local: None,
                    dims,
                })
            }
        }
        StmtKind::LocalDecl { ty, vars }
            if home == Home::Method && ty.is_scalar_matrix() && vars.len() == 1 =>
        {
            for v in vars.iter().filter(|v| v.name.name == matrix) {
                if let Some(dims) = v.init.as_ref().and_then(two_dims) {
                    out.push(Allocation {
                        stmt: s,
                        target: None,
                        local: Some(v.span),
                        dims,
                    });
                }
            }
        }
        _ => {}
    });
    out
}

/// A method's allocation: at most one, a statement of the body itself, nothing before it
/// mentions the matrix (the precondition included), the sizes are the line's.
fn check_allocation(
    member: &Member,
    method: &Method,
    allocs: &[Allocation],
    matrix: &str,
    home: Home,
    (rows, cols): (&str, &str),
) -> Result<(), Refusal> {
    let Some(first) = allocs.first() else {
        return Ok(());
    };
    if let Some(second) = allocs.get(1) {
        return Err(unsupported(
            format!(
                "`{matrix}` is allocated more than once in `{}`",
                method.name.name
            ),
            second.stmt.span,
        ));
    }
    let top_level = match &method.body {
        MethodBody::Block(b) => b.stmts.iter().position(|s| std::ptr::eq(s, first.stmt)),
        _ => None,
    };
    let Some(at) = top_level else {
        return Err(unsupported(
            format!(
                "`{matrix}` is allocated inside another statement; the allocation must be a statement of `{}`'s body itself",
                method.name.name
            ),
            first.stmt.span,
        ));
    };
    // The field's own permission, `Perm(m, p)`, is about the location that holds the
    // matrix (the method needs it to allocate), not about the matrix.
    fn first_use(e: &Expr, matrix: &str, home: Home) -> Option<Span> {
        match &e.kind {
            ExprKind::Builtin {
                op: Builtin::Perm | Builtin::Value | Builtin::AutoValue,
                args,
            } if home == Home::Field
                && args.first().is_some_and(|a| is_matrix(a, matrix, home)) =>
            {
                args[1..].iter().find_map(|a| first_use(a, matrix, home))
            }
            _ if is_matrix(e, matrix, home) => Some(e.span),
            _ => {
                let mut found = None;
                e.for_each_child(&mut |c| found = found.or_else(|| first_use(c, matrix, home)));
                found
            }
        }
    }
    let mut early = None;
    let mut look = |e: &Expr| early = early.or_else(|| first_use(e, matrix, home));
    for c in &member.contract.clauses {
        if let ClauseKind::Requires(e) | ClauseKind::Context(e) | ClauseKind::ContextEverywhere(e) =
            &c.kind
        {
            look(e);
        }
    }
    if let MethodBody::Block(b) = &method.body {
        for s in &b.stmts[..at] {
            s.for_each_expr_deep(&mut look);
        }
    }
    if let Some(span) = early {
        return Err(unsupported(
            format!(
                "`{matrix}` is used before `{}` allocates it; only its postcondition may speak of it",
                method.name.name
            ),
            span,
        ));
    }
    for (dim, want) in first.dims.iter().zip([rows, cols]) {
        let got = print_expr(dim);
        if got != want {
            return Err(Refusal::LineariseSize {
                size: got,
                why: format!("is not `{want}`, the size the line gives"),
                span: dim.span,
            });
        }
    }
    Ok(())
}

/// The syntactic part of the check: the group, the forms of every occurrence, the sizes, and
/// the facts to prove.
pub fn plan(
    program: &Program,
    method_span: Span,
    matrix: &str,
    order: MatrixOrder,
    rows_text: &str,
    cols_text: &str,
) -> Result<Plan, Refusal> {
    let members = program.members();
    let (class, target) = members
        .iter()
        .find(|(_, m)| method_of(m).is_some_and(|x| x.span == method_span))
        .copied()
        .ok_or_else(|| unsupported("the target is not a method", method_span))?;
    let method = method_of(target).expect("found as a method");
    let name_span = method.name.span;
    let size = |text: &str| {
        parse_expr(text).ok_or_else(|| {
            unsupported(format!("the size `{text}` is not an expression"), name_span)
        })
    };
    let (rows, cols) = (size(rows_text)?, size(cols_text)?);
    // Printed as the group's lines print them.
    let (rows_text, cols_text) = (print_expr(&rows), print_expr(&cols));
    let siblings: Vec<&Member> = match class {
        Some(c) => c.members.iter().collect(),
        None => members
            .iter()
            .filter(|(c, _)| c.is_none())
            .map(|(_, m)| *m)
            .collect(),
    };
    let field = class.and_then(|c: &Class| {
        c.members.iter().find_map(|m| match &m.kind {
            MemberKind::Field(f) if f.name.name == matrix => Some(f),
            _ => None,
        })
    });
    let param = method.params.iter().find(|p| p.name.name == matrix);
    let own_local = allocations(target, matrix, Home::Method)
        .iter()
        .any(|a| a.local.is_some());
    let home = match (param, field) {
        (Some(p), _) if p.ty.is_scalar_matrix() => Home::Method,
        (None, _) if own_local => Home::Method,
        (None, Some(f)) if f.ty.is_scalar_matrix() => Home::Field,
        _ => {
            return Err(Refusal::LineariseNoMatrix {
                matrix: matrix.to_string(),
                span: name_span,
            })
        }
    };
    let mentions = |m: &Member| {
        let mut found = false;
        m.for_each_expr_deep(&mut |e| {
            e.visit(&mut |x| found |= is_matrix(x, matrix, home) || root_name(x) == Some(matrix))
        });
        found
    };
    let group: Vec<&Member> = match home {
        Home::Method => siblings
            .iter()
            .copied()
            .filter(|m| {
                m.span == target.span
                    || !same_lines(m, matrix, order, &rows_text, &cols_text).is_empty()
            })
            .collect(),
        Home::Field => siblings
            .iter()
            .copied()
            .filter(|m| {
                method_of(m).is_some_and(|x| x.params.iter().all(|p| p.name.name != matrix))
                    && mentions(m)
            })
            .collect(),
    };
    let lines: Vec<Span> = siblings
        .iter()
        .flat_map(|m| same_lines(m, matrix, order, &rows_text, &cols_text))
        .collect();
    let group_spans: Vec<Span> = group.iter().map(|m| m.span).collect();
    // Group methods called with the matrix at its parameter's position.
    let group_params: Vec<(String, usize)> = match home {
        Home::Method => group
            .iter()
            .filter_map(|m| method_of(m))
            .filter_map(|x| {
                let k = x.params.iter().position(|p| p.name.name == matrix)?;
                Some((x.name.name.clone(), k))
            })
            .collect(),
        Home::Field => Vec::new(),
    };
    // The group methods that allocate the matrix (they need no probe).
    let mut allocating = Vec::new();
    for m in &group {
        let Some(x) = method_of(m) else { continue };
        let allocs = allocations(m, matrix, home);
        if !allocs.is_empty() {
            allocating.push(m.span);
        }
        let local = allocs.iter().find_map(|a| a.local);
        if home == Home::Method
            && local.is_none()
            && !x
                .params
                .iter()
                .any(|p| p.name.name == matrix && p.ty.is_scalar_matrix())
        {
            return Err(Refusal::LineariseNoMatrix {
                matrix: matrix.to_string(),
                span: x.name.span,
            });
        }
        check_allocation(m, x, &allocs, matrix, home, (&rows_text, &cols_text))?;
        check_sizes(m, x, matrix, &rows, &cols, local)?;
        let allocated: Vec<Span> = allocs
            .iter()
            .filter_map(|a| a.target)
            .map(|t| t.span)
            .collect();
        let mut result = Ok(());
        m.for_each_expr_deep(&mut |e| {
            if result.is_ok() {
                result = scan(e, matrix, home, &group_params, &allocated);
            }
        });
        result?;
        check_local_arrays(class, m, x, matrix, home)?;
    }
    // Nothing outside the group reaches the matrix: no call into a group method that passes
    // one (a parameter), no `x.m` of another object (a field).
    for (_, other) in &members {
        if group_spans.contains(&other.span) {
            continue;
        }
        let mut offence: Option<Refusal> = None;
        other.for_each_expr_deep(&mut |e| {
            e.visit(&mut |x| {
                if offence.is_some() {
                    return;
                }
                match &x.kind {
                    ExprKind::Call { name, .. }
                        if group_params.iter().any(|(g, _)| *g == name.name) =>
                    {
                        offence = Some(Refusal::LineariseCaller {
                            matrix: matrix.to_string(),
                            callee: name.name.clone(),
                            span: x.span,
                        })
                    }
                    ExprKind::Field { name, .. } if home == Home::Field && name.name == matrix => {
                        offence = Some(Refusal::LineariseMatrixEscapes {
                            matrix: matrix.to_string(),
                            span: x.span,
                        })
                    }
                    _ => {}
                }
            })
        });
        if let Some(r) = offence {
            return Err(r);
        }
    }
    let written = group.iter().any(|m| writes_array(m, matrix));
    let mut names = FreshNames::new(program);
    let mut probes = Vec::new();
    for m in &group {
        let Some(x) = method_of(m) else { continue };
        let MethodBody::Block(body) = &x.body else {
            continue;
        };
        // An empty body reads nothing; a method that allocates the matrix knows its shape
        // and that no other name holds a row (see the module documentation).
        if body.stmts.is_empty() || allocating.contains(&m.span) {
            continue;
        }
        let queries = queries(
            program, class, m, x, matrix, home, &rows_text, &cols_text, written, &mut names,
        );
        probes.push(Probe {
            method_span: x.span,
            method: x.name.name.clone(),
            name_span: x.name.span,
            queries,
        });
    }
    Ok(Plan {
        matrix: matrix.to_string(),
        order,
        rows,
        cols,
        home,
        members: group_spans,
        lines,
        class: class.map(|c| c.span),
        probes,
    })
}

/// The sizes are expressions over the method's parameters that it never assigns, and no name
/// declared inside it is a size's or the matrix's (the rewrite puts the sizes there).
/// `own_local`: the declaration of the method's own matrix (not a redeclaration).
fn check_sizes(
    member: &Member,
    method: &Method,
    matrix: &str,
    rows: &Expr,
    cols: &Expr,
    own_local: Option<Span>,
) -> Result<(), Refusal> {
    let mut names = BTreeSet::new();
    rows.names(&mut names);
    cols.names(&mut names);
    for n in &names {
        if !method.params.iter().any(|p| p.name.name == *n) {
            return Err(Refusal::LineariseSize {
                size: n.clone(),
                why: format!("is not a parameter of `{}`", method.name.name),
                span: method.name.span,
            });
        }
    }
    let mut assigned = None;
    member_stmts(member, &mut |s| {
        if assigned.is_none() {
            assigned = s
                .assigned_locals()
                .into_iter()
                .find(|a| names.contains(&a.name));
        }
    });
    if let Some(a) = assigned {
        return Err(Refusal::LineariseSize {
            size: a.name,
            why: format!("is assigned in `{}`", method.name.name),
            span: a.span,
        });
    }
    if let Some((n, span)) = declared_names(member)
        .into_iter()
        .find(|(n, span)| names.contains(n) || (n == matrix && Some(*span) != own_local))
    {
        return Err(unsupported(
            format!(
                "`{n}` is declared again inside `{}`, where the rewrite needs the outer one",
                method.name.name
            ),
            span,
        ));
    }
    Ok(())
}

/// Every occurrence of the matrix in `e` has one of the rewritten forms.
///
/// `allocated`: the spans of the matrix assigned by its allocations (no escape).
fn scan(
    e: &Expr,
    matrix: &str,
    home: Home,
    group_params: &[(String, usize)],
    allocated: &[Span],
) -> Result<(), Refusal> {
    let is_m = |x: &Expr| is_matrix(x, matrix, home);
    fn row_of<'e>(x: &'e Expr, matrix: &str, home: Home) -> Option<&'e Expr> {
        match &x.kind {
            ExprKind::Index { base, index } if is_matrix(base, matrix, home) => Some(index),
            _ => None,
        }
    }
    let row_of_m = |x| row_of(x, matrix, home);
    let go = |x: &Expr| scan(x, matrix, home, group_params, allocated);
    match &e.kind {
        ExprKind::Index { base, index } if row_of_m(base).is_some() => {
            go(row_of_m(base).expect("matched"))?;
            go(index)
        }
        ExprKind::Field { base, name } if name.name == "length" && is_m(base) => Ok(()),
        ExprKind::Field { base, name } if name.name == "length" && row_of_m(base).is_some() => {
            go(row_of_m(base).expect("matched"))
        }
        ExprKind::Builtin {
            op: Builtin::Matrix,
            args,
        } if args.len() == 3 && is_m(&args[0]) => {
            go(&args[1])?;
            go(&args[2])
        }
        // The field's own permission (the location that holds the matrix, not its cells).
        ExprKind::Builtin {
            op: Builtin::Perm | Builtin::Value | Builtin::AutoValue,
            args,
        } if home == Home::Field && args.first().is_some_and(is_m) => {
            args[1..].iter().try_for_each(go)
        }
        ExprKind::Binary {
            op: BinaryOp::Eq | BinaryOp::Neq,
            lhs,
            rhs,
        } if (is_m(lhs) && matches!(rhs.kind, ExprKind::Null))
            || (is_m(rhs) && matches!(lhs.kind, ExprKind::Null)) =>
        {
            Ok(())
        }
        ExprKind::Index { base, .. } if is_m(base) => Err(Refusal::LineariseRowEscapes {
            matrix: matrix.to_string(),
            row: print_expr(e),
            span: e.span,
        }),
        _ if is_m(e) && allocated.contains(&e.span) => Ok(()),
        _ if is_m(e) => Err(Refusal::LineariseMatrixEscapes {
            matrix: matrix.to_string(),
            span: e.span,
        }),
        ExprKind::Call { name, args, .. } => {
            // The matrix passed to a group method at that method's matrix parameter.
            let passed = group_params
                .iter()
                .find(|(g, _)| *g == name.name)
                .and_then(|(_, k)| args.get(*k))
                .filter(|a| is_m(a));
            let mut result = Ok(());
            e.for_each_child(&mut |c| {
                if result.is_ok() && !passed.is_some_and(|p| std::ptr::eq(p, c)) {
                    result = go(c);
                }
            });
            result
        }
        _ => {
            let mut result = Ok(());
            e.for_each_child(&mut |c| {
                if result.is_ok() {
                    result = go(c);
                }
            });
            result
        }
    }
}

/// The matrix's scalar element type (`int` or `boolean`).
fn element_type<'p>(
    class: Option<&'p Class>,
    method: &'p Method,
    matrix: &str,
    home: Home,
) -> Option<&'p TypeKind> {
    match home {
        Home::Method => match method.params.iter().find(|p| p.name.name == matrix) {
            Some(p) => scalar_of(&p.ty),
            // The method's own matrix: its declaration's type.
            None => method.local_type(matrix).and_then(scalar_of),
        },
        Home::Field => class.and_then(|c| {
            c.members.iter().find_map(|m| match &m.kind {
                MemberKind::Field(f) if f.name.name == matrix => scalar_of(&f.ty),
                _ => None,
            })
        }),
    }
}

/// A local array of the matrix's element type is only ever a new array: any other value
/// (another array, a call's result) could be a row of the matrix under another name.
fn check_local_arrays(
    class: Option<&Class>,
    member: &Member,
    method: &Method,
    matrix: &str,
    home: Home,
) -> Result<(), Refusal> {
    let elem = element_type(class, method, matrix, home);
    let fresh = |e: &Expr| matches!(e.kind, ExprKind::NewArray { .. } | ExprKind::Null);
    let mut locals: BTreeSet<String> = BTreeSet::new();
    let mut offence = None;
    member_stmts(member, &mut |s| {
        if let StmtKind::LocalDecl { ty, vars } = &s.kind {
            if scalar_of(ty).is_some_and(|k| elem.is_none_or(|e| e == k)) {
                for v in vars {
                    locals.insert(v.name.name.clone());
                    if v.init.as_ref().is_some_and(|i| !fresh(i)) && offence.is_none() {
                        offence = Some(v.span);
                    }
                }
            }
        }
    });
    member_stmts(member, &mut |s| {
        if let StmtKind::Assign { target, value } = &s.kind {
            if let ExprKind::Name(id) = &target.kind {
                if locals.contains(&id.name) && !fresh(value) && offence.is_none() {
                    offence = Some(s.span);
                }
            }
        }
    });
    match offence {
        Some(span) => Err(unsupported(
            format!(
                "a local array that is not a new one may be a row of `{matrix}` under another name"
            ),
            span,
        )),
        None => Ok(()),
    }
}

/// Whether an assignment in `member` writes a cell of the array `name` (a cell of a row, for
/// a matrix).
fn writes_array(member: &Member, name: &str) -> bool {
    let mut found = false;
    member_stmts(member, &mut |s| match &s.kind {
        StmtKind::Assign { target, .. }
        | StmtKind::Increment(target)
        | StmtKind::Decrement(target) => {
            found |=
                matches!(target.kind, ExprKind::Index { .. }) && root_name(target) == Some(name)
        }
        _ => {}
    });
    found
}

/// Whether the array `name` is passed whole to a call in `member` (the callee may write it).
fn passed_to_call(member: &Member, name: &str) -> bool {
    let mut found = false;
    member.for_each_expr_deep(&mut |e| {
        e.visit(&mut |x| {
            if let ExprKind::Call { args, .. } = &x.kind {
                found |= args.iter().any(|a| match &a.kind {
                    ExprKind::Name(id) => id.name == name,
                    ExprKind::Field { base, name: f } => {
                        matches!(base.kind, ExprKind::This) && f.name == name
                    }
                    _ => false,
                });
            }
        })
    });
    found
}

/// The facts to prove where `method` starts.
#[allow(clippy::too_many_arguments)]
fn queries(
    program: &Program,
    class: Option<&Class>,
    member: &Member,
    method: &Method,
    matrix: &str,
    home: Home,
    rows: &str,
    cols: &str,
    written: bool,
    names: &mut FreshNames,
) -> Vec<Query> {
    let (r, s) = (names.fresh("r"), names.fresh("s"));
    let in_rows = |v: &str| format!("0 <= {v} && {v} < ({rows})");
    let mut out = vec![Query {
        kind: QueryKind::Shape,
        text: format!(
            "{matrix} != null && {matrix}.length == ({rows}) && (\\forall int {r}; {}; {matrix}[{r}].length == ({cols}))",
            in_rows(&r)
        ),
    }];
    if written {
        out.push(Query {
            kind: QueryKind::DistinctRows,
            text: format!(
                "(\\forall int {r}, int {s}; {} && {} && {r} != {s}; {matrix}[{r}] != {matrix}[{s}])",
                in_rows(&r),
                in_rows(&s)
            ),
        });
    }
    let elem = element_type(class, method, matrix, home);
    // The other arrays of the element type this method can reach: its parameters, and the
    // class's fields it mentions (not hidden by a parameter).
    let mut others: Vec<(String, usize)> = method
        .params
        .iter()
        .filter(|p| p.name.name != matrix && scalar_of(&p.ty) == elem)
        .map(|p| (p.name.name.clone(), dims(&p.ty)))
        .collect();
    if let Some(c) = class {
        let mut mentioned = BTreeSet::new();
        member.for_each_expr_deep(&mut |e| {
            e.visit(&mut |x| match &x.kind {
                ExprKind::Name(id) => {
                    mentioned.insert(id.name.clone());
                }
                ExprKind::Field { base, name } if matches!(base.kind, ExprKind::This) => {
                    mentioned.insert(name.name.clone());
                }
                _ => {}
            })
        });
        for m in &c.members {
            if let MemberKind::Field(f) = &m.kind {
                let n = &f.name.name;
                if n != matrix
                    && scalar_of(&f.ty) == elem
                    && mentioned.contains(n)
                    && !method.params.iter().any(|p| p.name.name == *n)
                {
                    others.push((n.clone(), dims(&f.ty)));
                }
            }
        }
    }
    // A field is written wherever in the program a cell of it is assigned.
    let written_anywhere = |n: &str| {
        program
            .members()
            .iter()
            .any(|(_, m)| writes_array(m, n) || passed_to_call(m, n))
    };
    for (b, dims) in others {
        let b_written =
            writes_array(member, &b) || passed_to_call(member, &b) || written_anywhere(&b);
        if !(written || b_written) {
            continue;
        }
        let text = match dims {
            1 => format!(
                "{b} == null || (\\forall int {r}; {}; {matrix}[{r}] != {b})",
                in_rows(&r)
            ),
            _ => format!(
                "{b} == null || (\\forall int {r}, int {s}; {} && 0 <= {s} && {s} < {b}.length; {matrix}[{r}] != {b}[{s}])",
                in_rows(&r)
            ),
        };
        out.push(Query {
            kind: QueryKind::Apart { other: b },
            text,
        });
    }
    out
}

/// The Z3 part: each probe's facts where its method starts.
pub fn check_applicable(program: &Program, plan: &Plan, limits: &Limits) -> Result<(), Refusal> {
    for probe in &plan.probes {
        let mut names = FreshNames::new(program);
        let mut asserts = Vec::new();
        let mut branches = BTreeSet::new();
        for (k, q) in probe.queries.iter().enumerate() {
            let b = names.fresh("linearise_probe");
            branches.insert(b.clone());
            let stmts = parse_stmts(&format!("boolean {b}; if ({b}) {{ assert {}; }}", q.text))
                .ok_or_else(|| Refusal::LineariseCannotCheck {
                    reason: format!("internal: the query `{}` does not parse", q.text),
                    span: probe.name_span,
                })?;
            asserts.extend(respan(stmts, mark(k as u32)));
        }
        let statuses =
            prove_in_probe(program, probe.method_span, asserts, limits).map_err(|reason| {
                Refusal::LineariseCannotCheck {
                    reason,
                    span: probe.name_span,
                }
            })?;
        for (q, status) in probe.queries.iter().zip(statuses) {
            let why = match status {
                Status::Verified => continue,
                // The probe's own branch variables are no part of the user's state.
                Status::Failed { model } if model.iter().any(|(n, _)| !branches.contains(n)) => {
                    format!(
                        "a counterexample: {}",
                        model
                            .iter()
                            .filter(|(n, _)| !branches.contains(n))
                            .map(|(n, v)| format!("{n} = {v}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
                Status::Failed { .. } => "Z3 found a state where it fails".to_string(),
                Status::Unknown { reason } => format!("Z3 could not decide it: {reason}"),
            };
            let matrix = plan.matrix.clone();
            return Err(match &q.kind {
                QueryKind::Shape => Refusal::LineariseShape {
                    matrix,
                    dims: format!("{}, {}", print_expr(&plan.rows), print_expr(&plan.cols)),
                    method: probe.method.clone(),
                    why,
                    span: probe.name_span,
                },
                QueryKind::DistinctRows => Refusal::LineariseAlias {
                    what: format!("two rows of `{matrix}` may be the same array"),
                    method: probe.method.clone(),
                    why,
                    span: probe.name_span,
                },
                QueryKind::Apart { other } => Refusal::LineariseAlias {
                    what: format!("a row of `{matrix}` may be `{other}` (or one of its rows)"),
                    method: probe.method.clone(),
                    why,
                    span: probe.name_span,
                },
            });
        }
    }
    Ok(())
}

/// The rewrite (see the module documentation).
pub fn apply(program: &Program, plan: &Plan) -> Program {
    let mut out = program.clone();
    for item in &mut out.items {
        match item {
            Item::Class(c) => {
                let here = plan.class == Some(c.span);
                for m in &mut c.members {
                    if here {
                        rewrite_member(m, plan);
                    }
                }
            }
            Item::Member(m) => {
                if plan.class.is_none() {
                    rewrite_member(m, plan)
                }
            }
        }
    }
    out
}

fn rewrite_member(member: &mut Member, plan: &Plan) {
    member.gpuopts.retain(|g| !plan.lines.contains(&g.span));
    match &mut member.kind {
        MemberKind::Field(f) if plan.home == Home::Field && f.name.name == plan.matrix => {
            f.ty = linear_type(&f.ty);
            return;
        }
        MemberKind::Field(_) => return,
        MemberKind::Method(_) => {}
    }
    if !plan.members.contains(&member.span) {
        return;
    }
    member.contract.for_each_expr_mut(&mut |e| rewrite(e, plan));
    let MemberKind::Method(method) = &mut member.kind else {
        return;
    };
    if plan.home == Home::Method {
        for p in &mut method.params {
            if p.name.name == plan.matrix {
                p.ty = linear_type(&p.ty);
            }
        }
    }
    match &mut method.body {
        MethodBody::Block(b) => {
            for s in &mut b.stmts {
                rewrite_allocation(s, plan);
                s.for_each_expr_deep_mut(&mut |e| rewrite(e, plan));
            }
        }
        MethodBody::Expr(e) => rewrite(e, plan),
        MethodBody::Abstract => {}
    }
}

/// `m = new T[A][B];` as `m = new T[A * B];`, `T[][] m = new T[A][B];` as
/// `T[] m = new T[A * B];` (an allocation is a statement of the body itself).
fn rewrite_allocation(s: &mut Stmt, plan: &Plan) {
    let new = match &mut s.kind {
        StmtKind::Assign { target, value } if is_matrix(target, &plan.matrix, plan.home) => value,
        StmtKind::LocalDecl { ty, vars }
            if plan.home == Home::Method
                && ty.is_scalar_matrix()
                && vars.len() == 1
                && vars[0].name.name == plan.matrix =>
        {
            let Some(init) = vars[0].init.as_mut() else {
                return;
            };
            *ty = linear_type(ty);
            init
        }
        _ => return,
    };
    if let ExprKind::NewArray { dims, .. } = &mut new.kind {
        if let [rows, cols] = &dims[..] {
            *dims = vec![Expr::binary(BinaryOp::Mul, rows.clone(), cols.clone())];
        }
    }
}

/// `T[][]` as `T[]` (`T[M][N]` as `T[M * N]`).
fn linear_type(ty: &Type) -> Type {
    let TypeKind::Array {
        elem: row,
        size: outer,
    } = &ty.kind
    else {
        return ty.clone();
    };
    let TypeKind::Array { elem, size: inner } = &row.kind else {
        return ty.clone();
    };
    let size = match (outer, inner) {
        (Some(m), Some(n)) => Some(Box::new(Expr::binary(
            BinaryOp::Mul,
            (**m).clone(),
            (**n).clone(),
        ))),
        _ => None,
    };
    Type {
        kind: TypeKind::Array {
            elem: elem.clone(),
            size,
        },
        span: ty.span,
    }
}

/// Rewrites the matrix's forms in `e`, innermost first.
fn rewrite(e: &mut Expr, plan: &Plan) {
    e.for_each_child_mut(&mut |c| rewrite(c, plan));
    let is_m = |x: &Expr| is_matrix(x, &plan.matrix, plan.home);
    let span = e.span;
    let size = |x: &Expr| respan(x.clone(), span);
    let replacement = match &e.kind {
        ExprKind::Index { base, index: col } => match &base.kind {
            ExprKind::Index {
                base: m,
                index: row,
            } if is_m(m) => {
                let (slope, major, minor) = match plan.order {
                    MatrixOrder::RowMajor => (&plan.cols, row, col),
                    MatrixOrder::ColumnMajor => (&plan.rows, col, row),
                };
                let scaled = Expr::binary(BinaryOp::Mul, size(slope), (**major).clone());
                Some(Expr {
                    kind: ExprKind::Index {
                        base: m.clone(),
                        index: Box::new(Expr::binary(BinaryOp::Add, scaled, (**minor).clone())),
                    },
                    span,
                })
            }
            _ => None,
        },
        ExprKind::Field { base, name } if name.name == "length" => match &base.kind {
            ExprKind::Index { base: m, .. } if is_m(m) => Some(size(&plan.cols)),
            _ if is_m(base) => Some(size(&plan.rows)),
            _ => None,
        },
        ExprKind::Builtin {
            op: Builtin::Matrix,
            args,
        } if args.len() == 3 && is_m(&args[0]) => Some(Expr {
            kind: ExprKind::Builtin {
                op: Builtin::Array,
                args: vec![
                    args[0].clone(),
                    Expr::binary(BinaryOp::Mul, args[1].clone(), args[2].clone()),
                ],
            },
            span,
        }),
        _ => None,
    };
    if let Some(r) = replacement {
        *e = r;
    }
}
