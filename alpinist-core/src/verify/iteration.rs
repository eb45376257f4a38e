//! Loops with an *iteration contract* (VerCors): `requires`/`ensures` (and `context`) on a
//! `for` loop describe one iteration, not an invariant, and say that the iterations are
//! independent. Such a loop is checked as the par block it states:
//!
//! ```text
//! requires P(i); ensures Q(i);            par (int i = lo .. hi)
//! for (int i = lo; i < hi; i++) { S }  ⇒     requires P(i); ensures Q(i); { S }
//! ```
//!
//! Sound for the sequential loop: the par rule proves each iteration from its own contract
//! with the permissions it states, disjoint from the others', so running the iterations in
//! order (one of the interleavings the par rule covers) ends where the par block ends. That
//! needs the shape to mean the same in both: the loop variable declared by the loop, stepping
//! by one and assigned nowhere else; the bound fixed while the loop runs (built from locals the
//! body does not assign, as `termination.rs` checks a template loop's bound); a body that
//! assigns no local declared before the loop (threads may not share a written local) and does
//! not `return` or jump. A loop of another shape is left as it is, and the checker refuses its
//! contract (`exec.rs`).

use std::collections::BTreeSet;

use crate::syntax::{
    BinaryOp, Block, ClauseKind, Contract, Expr, ExprKind, MethodBody, ParBlock, ParGroup,
    ParGroupStyle, ParIter, Program, Stmt, StmtKind, Type, TypeKind,
};

/// `program` with every loop that has an iteration contract of the supported shape written as
/// its par block, or `None` when there is no such loop.
pub fn as_par_blocks(program: &Program) -> Option<Program> {
    // Any loop with an iteration contract: one of another shape only costs the clone.
    let wanted = |s: &Stmt| matches!(&s.kind, StmtKind::For { contract, .. } if is_iteration_contract(contract));
    program.rewritten(wanted, |_, method| {
        let mut locals: BTreeSet<String> =
            method.params.iter().map(|p| p.name.name.clone()).collect();
        if let MethodBody::Block(body) = &mut method.body {
            for stmt in &body.stmts {
                super::termination::declared(stmt, &mut locals);
            }
            for stmt in &mut body.stmts {
                rewrite(stmt, &locals);
            }
        }
    })
}

/// `locals`: the method's parameters and every local it declares (fields are not: a call in
/// the body may write them).
fn rewrite(stmt: &mut Stmt, locals: &BTreeSet<String>) {
    if let Some(par) = as_par(stmt, locals) {
        *stmt = par;
    }
    for child in stmt.children_mut() {
        rewrite(child, locals);
    }
}

/// Whether a loop contract is an iteration contract: it has `requires` or `ensures` (a
/// contract of only `context` and `loop_invariant` clauses is read as invariants).
pub fn is_iteration_contract(contract: &Contract) -> bool {
    contract
        .clauses
        .iter()
        .any(|c| matches!(c.kind, ClauseKind::Requires(_) | ClauseKind::Ensures(_)))
}

/// The par block a `for` loop with an iteration contract states, where its shape allows
/// (module docs).
fn as_par(stmt: &Stmt, locals: &BTreeSet<String>) -> Option<Stmt> {
    let StmtKind::For {
        contract,
        init: Some(init),
        cond: Some(cond),
        update: Some(update),
        body,
    } = &stmt.kind
    else {
        return None;
    };
    let only_iteration_clauses = contract.clauses.iter().all(|c| {
        matches!(
            c.kind,
            ClauseKind::Requires(_) | ClauseKind::Ensures(_) | ClauseKind::Context(_)
        )
    });
    if !is_iteration_contract(contract) || !only_iteration_clauses {
        return None;
    }
    let StmtKind::LocalDecl { ty, vars } = &init.kind else {
        return None;
    };
    let [var] = vars.as_slice() else {
        return None;
    };
    let (TypeKind::Int, Some(lo)) = (&ty.kind, &var.init) else {
        return None;
    };
    let i = var.name.name.as_str();
    let is_i = |e: &Expr| matches!(&e.kind, ExprKind::Name(id) if id.name == i);
    let ExprKind::Binary { op, lhs, rhs } = &cond.kind else {
        return None;
    };
    let hi = match op {
        BinaryOp::Lt if is_i(lhs) => (**rhs).clone(),
        BinaryOp::Le if is_i(lhs) => super::syn::bin(
            BinaryOp::Add,
            (**rhs).clone(),
            super::syn::int(1, rhs.span),
            rhs.span,
        ),
        _ => return None,
    };
    if !steps_by_one(update, is_i) {
        return None;
    }
    // Locals the body declares (its own per iteration) and assigns.
    let mut inner = BTreeSet::new();
    super::termination::declared(body, &mut inner);
    let assigned: Vec<String> = body.assigned_locals().into_iter().map(|a| a.name).collect();
    if inner.contains(i) || assigned.iter().any(|a| a == i || !inner.contains(a)) {
        return None;
    }
    let mut jumps = false;
    body.visit(&mut |s| {
        jumps |= matches!(
            s.kind,
            StmtKind::Return(_)
                | StmtKind::Goto(_)
                | StmtKind::Label(_)
                | StmtKind::Barrier(_)
                | StmtKind::Par(_)
        );
    });
    if jumps || !super::termination::stable(&hi, locals, &assigned) {
        return None;
    }
    let block = match &body.kind {
        StmtKind::Block(b) => b.clone(),
        _ => Block {
            stmts: vec![(**body).clone()],
            span: body.span,
        },
    };
    Some(Stmt {
        kind: StmtKind::Par(ParGroup {
            blocks: vec![ParBlock {
                label: None,
                iters: vec![ParIter {
                    ty: Type {
                        kind: TypeKind::Int,
                        span: ty.span,
                    },
                    name: var.name.clone(),
                    lo: lo.clone(),
                    hi,
                    span: init.span,
                }],
                contract: contract.clone(),
                body: block,
                span: stmt.span,
            }],
            style: ParGroupStyle::And,
        }),
        span: stmt.span,
    })
}

/// `i++`, `i = i + 1` or `i = 1 + i`.
fn steps_by_one(update: &Stmt, is_i: impl Fn(&Expr) -> bool) -> bool {
    let one = |e: &Expr| matches!(&e.kind, ExprKind::IntLit(n) if *n == 1u32.into());
    match &update.kind {
        StmtKind::Increment(t) => is_i(t),
        StmtKind::Assign { target, value } if is_i(target) => matches!(&value.kind,
            ExprKind::Binary { op: BinaryOp::Add, lhs, rhs }
                if (is_i(lhs) && one(rhs)) || (one(lhs) && is_i(rhs))),
        _ => false,
    }
}
