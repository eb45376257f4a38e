//! Placement and well-formedness of `gpuopt` annotations (E04xx).
//!
//! What is checked here is what a transformation would otherwise have to assume: the
//! annotation stands before something of the right kind, names what it must name, and its
//! numbers are positive literals. Whether the optimisation *applies* (e.g. the loop really runs
//! K times) is the transformation's applicability check, not ours.

use std::collections::HashMap;

use crate::syntax::*;

use super::env::Ty;
use super::error::CheckError;
use super::resolve::{positive_literal, Checker};

pub fn kind_name(kind: &GpuOptKind) -> &'static str {
    match kind {
        GpuOptKind::LoopUnroll { .. } => "loop_unroll",
        GpuOptKind::IterMerge { .. } => "iter_merge",
        GpuOptKind::MatrixLin { .. } => "matrix_lin",
        GpuOptKind::GlobToReg { .. } => "glob_to_reg",
        GpuOptKind::Tile { .. } => "tile",
        GpuOptKind::Fuse { .. } => "fuse",
    }
}

/// What one kind of annotation must stand before.
fn expected_target(kind: &GpuOptKind) -> &'static str {
    match kind {
        GpuOptKind::LoopUnroll { .. } | GpuOptKind::IterMerge { .. } => "a while or for loop",
        GpuOptKind::Fuse { .. } => "a par block",
        GpuOptKind::MatrixLin { .. } | GpuOptKind::GlobToReg { .. } | GpuOptKind::Tile { .. } => {
            "a method"
        }
    }
}

fn require_positive(
    checker: &mut Checker<'_>,
    kind: &'static str,
    what: &'static str,
    e: &Expr,
) -> Option<u64> {
    let value = positive_literal(e);
    if value.is_none() {
        checker.err(CheckError::GpuOptBadNumber {
            kind,
            what,
            span: e.span,
        });
    }
    value
}

/// Annotations before a method (the method's parameters are in scope).
pub(crate) fn check_method_opts<'a>(
    checker: &mut Checker<'a>,
    member: &'a Member,
    method: &'a Method,
) {
    // "The same kind on the same target": two `tile`s, or two `matrix_lin m` (`glob_to_reg`
    // lines add up).
    let mut seen: HashMap<(&'static str, &str), Span> = HashMap::new();
    for opt in &member.gpuopts {
        let kind = kind_name(&opt.kind);
        let target = match &opt.kind {
            GpuOptKind::MatrixLin { matrix, .. } => matrix.name.as_str(),
            _ => "",
        };
        // Several `glob_to_reg` lines for one array are one request (one line per index, as
        // published kernels write them).
        let repeatable = matches!(opt.kind, GpuOptKind::GlobToReg { .. });
        if let Some(&first) = seen.get(&(kind, target)).filter(|_| !repeatable) {
            checker.err(CheckError::GpuOptDuplicate {
                kind,
                span: opt.span,
                first,
            });
        } else {
            seen.insert((kind, target), opt.span);
        }

        match &opt.kind {
            GpuOptKind::LoopUnroll { .. }
            | GpuOptKind::IterMerge { .. }
            | GpuOptKind::Fuse { .. } => {
                checker.err(CheckError::GpuOptMisplaced {
                    kind,
                    expected: expected_target(&opt.kind),
                    span: opt.span,
                });
            }
            GpuOptKind::MatrixLin {
                matrix, rows, cols, ..
            } => {
                // A parameter, or a local matrix the method declares, or else a field (a
                // parameter of the name hides the field).
                let ty = checker
                    .param_type(&matrix.name)
                    .or_else(|| checker.field_type(&matrix.name));
                let is_matrix = method
                    .local_type(&matrix.name)
                    .is_some_and(Type::is_scalar_matrix)
                    || matches!(
                        ty,
                        Some(Ty::Array(ref row)) if matches!(**row, Ty::Array(ref e) if matches!(**e, Ty::Int | Ty::Bool | Ty::Unknown))
                    );
                if !is_matrix {
                    checker.err(CheckError::GpuOptNotMatrixParam {
                        name: matrix.name.clone(),
                        span: matrix.span,
                    });
                }
                // Dimensions may be literals or expressions over the parameters (`N`).
                for (what, e) in [("row count", rows), ("column count", cols)] {
                    if let ExprKind::IntLit(_) = e.kind {
                        require_positive(checker, kind, what, e);
                    } else {
                        checker.expect(e, &Ty::Int, "matrix dimension");
                    }
                }
            }
            GpuOptKind::GlobToReg {
                array,
                rows,
                indices,
            } => {
                // A parameter, or else a field (a parameter of the name hides the field); with
                // rows (`m[i] j`), an array of arrays, one level per row.
                let mut ty = checker
                    .param_type(&array.name)
                    .or_else(|| checker.field_type(&array.name));
                for _ in rows {
                    ty = match ty {
                        Some(Ty::Array(elem)) => Some(*elem),
                        _ => None,
                    };
                }
                if !matches!(ty, Some(Ty::Array(_))) {
                    checker.err(CheckError::GpuOptNotArrayParam {
                        name: array.name.clone(),
                        span: array.span,
                    });
                }
                // Indices are written in terms of the kernel's thread ids and locals.
                checker.push_scope();
                if let MethodBody::Block(body) = &method.body {
                    let mut names: Vec<(&'a Ident, &'a Type)> = Vec::new();
                    collect_declarations(&body.stmts, &mut names);
                    let mut declared: Vec<&str> = Vec::new();
                    for (id, ty) in names {
                        if !declared.contains(&id.name.as_str()) {
                            declared.push(&id.name);
                            let t = checker.tables.resolve_type(&ty.kind, &mut Vec::new());
                            checker.declare_readonly(id, t);
                        }
                    }
                }
                for index in rows.iter().chain(indices) {
                    checker.expect(index, &Ty::Int, "glob_to_reg index");
                }
                checker.pop_scope();
            }
            GpuOptKind::Tile { size, .. } => {
                require_positive(checker, kind, "tile size", size);
                let one_par = match &method.body {
                    MethodBody::Block(b) => matches!(
                        b.stmts.as_slice(),
                        [Stmt { kind: StmtKind::Par(g), .. }] if g.blocks.len() == 1
                    ),
                    _ => false,
                };
                if !one_par {
                    let body = match &method.body {
                        MethodBody::Block(b) => b.span,
                        MethodBody::Expr(e) => e.span,
                        MethodBody::Abstract => method.span,
                    };
                    checker.err(CheckError::GpuOptTileBody {
                        span: opt.span,
                        body,
                    });
                }
            }
        }
    }
}

/// Par iterators and locals declared anywhere in `stmts`, in order.
fn collect_declarations<'a>(stmts: &'a [Stmt], out: &mut Vec<(&'a Ident, &'a Type)>) {
    for s in stmts {
        collect_in_stmt(s, out);
    }
}

fn collect_in_stmt<'a>(s: &'a Stmt, out: &mut Vec<(&'a Ident, &'a Type)>) {
    match &s.kind {
        StmtKind::LocalDecl { ty, vars } => out.extend(vars.iter().map(|v| (&v.name, ty))),
        StmtKind::Par(group) => {
            for b in &group.blocks {
                out.extend(b.iters.iter().map(|it| (&it.name, &it.ty)));
                collect_declarations(&b.body.stmts, out);
            }
        }
        StmtKind::Block(b) => collect_declarations(&b.stmts, out),
        StmtKind::If {
            then_branch,
            else_branch,
            ..
        } => {
            collect_in_stmt(then_branch, out);
            if let Some(e) = else_branch {
                collect_in_stmt(e, out);
            }
        }
        StmtKind::While { body, .. } => collect_in_stmt(body, out),
        StmtKind::For { init, body, .. } => {
            if let Some(i) = init {
                collect_in_stmt(i, out);
            }
            collect_in_stmt(body, out);
        }
        StmtKind::Ghost(inner) => collect_in_stmt(inner, out),
        StmtKind::Barrier(b) => collect_declarations(&b.body.stmts, out),
        StmtKind::Invariant { body, .. } | StmtKind::Atomic { body, .. } => {
            collect_declarations(&body.stmts, out)
        }
        _ => {}
    }
}

/// Annotations in statement position: each must be followed, after any further annotations,
/// by the loop or par blocks it targets.
pub(crate) fn check_block_opts(checker: &mut Checker<'_>, stmts: &[Stmt]) {
    let mut i = 0;
    while i < stmts.len() {
        if !matches!(stmts[i].kind, StmtKind::GpuOpt(_)) {
            i += 1;
            continue;
        }
        // A run of stacked annotations stmts[i..target] and the statement they annotate.
        let mut target = i;
        while target < stmts.len() && matches!(stmts[target].kind, StmtKind::GpuOpt(_)) {
            target += 1;
        }
        let annotated = stmts.get(target);
        let mut seen: HashMap<&'static str, Span> = HashMap::new();
        for s in &stmts[i..target] {
            let StmtKind::GpuOpt(opt) = &s.kind else {
                continue;
            };
            let kind = kind_name(&opt.kind);
            if let Some(&first) = seen.get(kind) {
                checker.err(CheckError::GpuOptDuplicate {
                    kind,
                    span: opt.span,
                    first,
                });
            } else {
                seen.insert(kind, opt.span);
            }
            check_statement_opt(checker, opt, annotated, &stmts[target.min(stmts.len())..]);
        }
        i = target;
    }
}

fn check_statement_opt(
    checker: &mut Checker<'_>,
    opt: &GpuOpt,
    annotated: Option<&Stmt>,
    following: &[Stmt],
) {
    let kind = kind_name(&opt.kind);
    let misplaced = |checker: &mut Checker<'_>| {
        checker.err(CheckError::GpuOptMisplaced {
            kind,
            expected: expected_target(&opt.kind),
            span: opt.span,
        })
    };
    match &opt.kind {
        GpuOptKind::LoopUnroll { var, factor } | GpuOptKind::IterMerge { var, factor } => {
            require_positive(checker, kind, "factor", factor);
            let Some(stmt) = annotated else {
                return misplaced(checker);
            };
            let cond = match &stmt.kind {
                StmtKind::While { cond, .. } => Some(cond),
                StmtKind::For { cond, .. } => cond.as_ref(),
                _ => return misplaced(checker),
            };
            // A `for` loop's own `int i = 0` counts: the shared walker lists declarations.
            let assigned = stmt.assigns(&var.name);
            let in_guard = cond.is_some_and(|c| mentions(c, &var.name));
            if !(in_guard && assigned) {
                checker.err(CheckError::GpuOptLoopVar {
                    var: var.name.clone(),
                    span: var.span,
                    loop_span: stmt.span,
                });
            }
        }
        GpuOptKind::Fuse { count, block_hint } => {
            let needed = require_positive(checker, kind, "kernel count", count);
            // The number of work-groups: a literal must be positive (the optimisation refuses
            // a name, e.g. a 1.x `N` thread-block hint, with its own message).
            if let Some(
                hint @ Expr {
                    kind: ExprKind::IntLit(_),
                    ..
                },
            ) = block_hint
            {
                require_positive(checker, kind, "thread-block hint", hint);
            }
            // Par blocks after it in the same block; a statement between two of them is the
            // optimisation's refusal (E0963, with that statement's span), not a misplacement.
            if !following
                .first()
                .is_some_and(|s| matches!(s.kind, StmtKind::Par(_)))
            {
                return misplaced(checker);
            }
            let found = following
                .iter()
                .filter(|s| matches!(s.kind, StmtKind::Par(_)))
                .count();
            if let Some(needed) = needed {
                if (found as u64) < needed {
                    checker.err(CheckError::GpuOptFuseCount {
                        needed,
                        found,
                        span: opt.span,
                    });
                }
            }
        }
        GpuOptKind::MatrixLin { .. } | GpuOptKind::GlobToReg { .. } | GpuOptKind::Tile { .. } => {
            misplaced(checker)
        }
    }
}

/// Does `e` mention the variable `name`?
fn mentions(e: &Expr, name: &str) -> bool {
    let m = |x: &Expr| mentions(x, name);
    match &e.kind {
        ExprKind::Name(id) => id.name == name,
        ExprKind::IntLit(_)
        | ExprKind::BoolLit(_)
        | ExprKind::Null
        | ExprKind::This
        | ExprKind::Result
        | ExprKind::AllIndices
        | ExprKind::PermLit(_)
        | ExprKind::NewArray { .. }
        | ExprKind::Collection { .. }
        | ExprKind::MapLit { .. } => false,
        ExprKind::Tuple { first, second, .. } => m(first) || m(second),
        ExprKind::Scaled { amount, pred } => m(amount) || m(pred),
        ExprKind::Unary { operand, .. } => m(operand),
        ExprKind::Binary { lhs, rhs, .. } => m(lhs) || m(rhs),
        ExprKind::Cond {
            cond,
            then_expr,
            else_expr,
        } => m(cond) || m(then_expr) || m(else_expr),
        ExprKind::Index { base, index } => m(base) || m(index),
        ExprKind::Slice { base, from, to } => {
            m(base) || from.as_deref().is_some_and(m) || to.as_deref().is_some_and(m)
        }
        ExprKind::Update { base, index, value } => m(base) || m(index) || m(value),
        ExprKind::Field { base, .. } => m(base),
        ExprKind::Call { receiver, args, .. } => {
            receiver.as_deref().is_some_and(m) || args.iter().any(m)
        }
        ExprKind::New { args, .. } | ExprKind::Builtin { args, .. } => args.iter().any(m),
        ExprKind::Old(x) | ExprKind::Length(x) | ExprKind::Trigger(x, _) => m(x),
        ExprKind::Quantifier(q) => q.cond.as_ref().is_some_and(m) || m(&q.body),
        ExprKind::Let { value, body, .. } => m(value) || m(body),
        ExprKind::Unfolding { pred, body } => m(pred) || m(body),
    }
}
