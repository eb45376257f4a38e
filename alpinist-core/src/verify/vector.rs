//! Vector blocks: `vec(int j = lo .. hi) { body }` runs its body in lock-step for every `j`
//! and, as in VerCors, needs no iteration contract. The checker gives such a block (one written
//! without a contract) the contract its straight-line body implies, and then checks it as a par
//! block with that contract: each lane holds write permission to the cells it writes and read
//! permission ([`READ_SHARE`]) to the cells it only reads, within their arrays' bounds,
//! and ensures the value it leaves in each written cell, stated over the values the cells had
//! when the block started (`\old`).
//!
//! Nothing here is trusted: the inferred contract goes through the par rule like a written one
//! (each lane's body is checked against it, the lanes' permissions must be disjoint where they
//! write, the caller must hold what they take). Lanes whose permissions are disjoint do not
//! interfere, so lock-step and interleaved execution agree and the par rule's verdict is the
//! vector block's. An inference that guesses wrong therefore costs a failure, never a wrong
//! "verified". A body the inference does not cover (loops, branches, calls, fields, binders) is
//! refused as unsupported with the reason ([`infer`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::syntax::print_expr;
use crate::syntax::{
    BinaryOp, Clause, ClauseKind, Contract, Expr, ExprKind, Ident, MethodBody, ParBlock,
    ParGroupStyle, PermLit, Program, Span, Stmt, StmtKind,
};

/// `program` with every contract-less vector block given its inferred contract, or `None`
/// when no block needed one. Blocks whose contract cannot be inferred keep the empty one; the
/// checker refuses them where it meets them, with [`infer`]'s reason.
pub fn with_contracts(program: &Program) -> Option<Program> {
    program.rewritten(needs_contract, |contract, method| {
        let outer = method_names(method);
        let held = held_amounts(contract, &BTreeMap::new());
        if let MethodBody::Block(body) = &mut method.body {
            for stmt in &mut body.stmts {
                give_contracts(stmt, &outer, &held);
            }
        }
    })
}

/// A vector block written without a contract.
pub fn needs_contract(stmt: &Stmt) -> bool {
    matches!(&stmt.kind, StmtKind::Par(g) if g.style == ParGroupStyle::Vector
        && g.blocks.iter().any(|b| b.contract.clauses.is_empty()))
}

fn give_contracts(stmt: &mut Stmt, outer: &BTreeSet<String>, held: &BTreeMap<String, Expr>) {
    let mut held = held;
    let inner;
    if let StmtKind::Par(group) = &mut stmt.kind {
        if group.style == ParGroupStyle::Vector {
            for block in &mut group.blocks {
                if block.contract.clauses.is_empty() {
                    if let Ok(contract) = infer(block, outer, held) {
                        block.contract = contract;
                    }
                }
            }
        } else if let [block] = group.blocks.as_slice() {
            // A vector block inside a par block: the thread's own amounts.
            inner = held_amounts(&block.contract, held);
            held = &inner;
        }
    }
    for child in stmt.children_mut() {
        give_contracts(child, outer, held);
    }
}

/// Per array, an amount a contract gives of its cells (`Perm(a[e], p)`, alone or under
/// `\forall*`) where `p` is a literal (`write`, `1\2`): the first one, over `outer`'s. A lane
/// reading `a` takes half of it, which the method then keeps too. The amount is only a
/// choice: where the method holds less, the block's exhale fails, as it would for a
/// written contract.
fn held_amounts(contract: &Contract, outer: &BTreeMap<String, Expr>) -> BTreeMap<String, Expr> {
    let mut held = outer.clone();
    let mut own = BTreeMap::new();
    for clause in &contract.clauses {
        let (ClauseKind::Requires(e) | ClauseKind::Context(e) | ClauseKind::ContextEverywhere(e)) =
            &clause.kind
        else {
            continue;
        };
        e.visit(&mut |x| {
            let ExprKind::Builtin {
                op: crate::syntax::Builtin::Perm,
                args,
            } = &x.kind
            else {
                return;
            };
            let [cell, amount] = args.as_slice() else {
                return;
            };
            let ExprKind::Index { base, .. } = &cell.peel_triggers().kind else {
                return;
            };
            let ExprKind::Name(array) = &base.kind else {
                return;
            };
            let mut literal = !matches!(amount.kind, ExprKind::PermLit(PermLit::Read));
            amount.visit(&mut |n| {
                literal &= !matches!(n.kind, ExprKind::Name(_) | ExprKind::PermLit(PermLit::Read))
            });
            if literal {
                own.entry(array.name.clone())
                    .or_insert_with(|| amount.clone());
            }
        });
    }
    held.extend(own);
    held
}

/// The parameters and locals of a method: the names a lane may read but not assign, and whose
/// arrays it may index. Any other name is a field (refused: a lane would share its location).
pub fn method_names(method: &crate::syntax::Method) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = method.params.iter().map(|p| p.name.name.clone()).collect();
    if let MethodBody::Block(body) = &method.body {
        for s in &body.stmts {
            s.visit(&mut |s| {
                if let StmtKind::LocalDecl { vars, .. } = &s.kind {
                    names.extend(vars.iter().map(|v| v.name.name.clone()));
                }
            });
        }
    }
    names
}

/// The amount of a cell a lane only reads (followed by the cell's number: one share per cell,
/// so that each is bounded by one array's amounts): a positive share no larger than half of what the
/// method holds of any such cell when the block starts (the checker binds it there, after proving the
/// method holds some of each: `Verifier::vector_read_share`). A definite amount, unlike the
/// wildcard `read`, comes back whole, so the method keeps its fractions across the block. No
/// source can write the name (`'` is not an identifier character).
pub const READ_SHARE: &str = "vec'read";

/// The cells a lane of an inferred contract only reads (`Perm(cell, READ_SHARE)`), with the
/// clause's span.
pub fn read_cells(block: &ParBlock) -> Vec<(&Expr, &str)> {
    let mut out = Vec::new();
    for clause in &block.contract.clauses {
        if let ClauseKind::Context(e) = &clause.kind {
            let mut conjuncts = Vec::new();
            e.flatten_and(&mut conjuncts);
            for x in conjuncts {
                if let ExprKind::Builtin {
                    op: crate::syntax::Builtin::Perm,
                    args,
                } = &x.kind
                {
                    if let ExprKind::Name(n) = &args[1].kind {
                        if n.name.starts_with(READ_SHARE) {
                            out.push((&args[0], n.name.as_str()));
                        }
                    }
                }
            }
        }
    }
    out
}

/// Why a vector block's contract cannot be inferred: what, and where.
pub struct Refusal {
    pub what: String,
    pub span: Span,
}

fn refuse<T>(what: &str, span: Span) -> Result<T, Refusal> {
    Err(Refusal {
        what: what.to_string(),
        span,
    })
}

/// One cell a lane touches: the array (a name of the method) and the index, both over the
/// lane's iterator and the method's names.
struct Cell {
    array: Ident,
    index: Expr,
    text: String,
    span: Span,
    /// The value the lane leaves in it, where it writes it.
    written: Option<Expr>,
}

struct Lane<'o> {
    outer: &'o BTreeSet<String>,
    /// The block's iterators.
    iters: BTreeSet<String>,
    /// The lane's own locals with their current values (`None`: declared, not yet assigned).
    locals: Vec<(String, Option<Expr>)>,
    cells: Vec<Cell>,
}

/// The contract of a vector block's lane, from its body (see the module's comment); `outer`
/// are the method's parameters and locals ([`method_names`]).
/// `held` gives, per array, an amount the enclosing contracts grant ([`held_amounts`]): a
/// read-only cell of such an array is taken at half of it, any other at [`READ_SHARE`].
pub fn infer(
    block: &ParBlock,
    outer: &BTreeSet<String>,
    held: &BTreeMap<String, Expr>,
) -> Result<Contract, Refusal> {
    let mut lane = Lane {
        outer,
        iters: block.iters.iter().map(|i| i.name.name.clone()).collect(),
        locals: Vec::new(),
        cells: Vec::new(),
    };
    for stmt in &block.body.stmts {
        lane.stmt(stmt)?;
    }
    let mut clauses = Vec::new();
    let clause = |kind, span| Clause { kind, span };
    for (number, cell) in lane.cells.iter().enumerate() {
        let array = || Expr {
            kind: ExprKind::Name(cell.array.clone()),
            span: cell.span,
        };
        let bounds = Expr::binary(
            BinaryOp::And,
            Expr::binary(BinaryOp::Le, int_zero(cell.span), cell.index.clone()),
            Expr::binary(
                BinaryOp::Lt,
                cell.index.clone(),
                Expr {
                    kind: ExprKind::Field {
                        base: Box::new(array()),
                        name: Ident {
                            name: "length".into(),
                            span: cell.span,
                        },
                    },
                    span: cell.span,
                },
            ),
        );
        let not_null = Expr::binary(
            BinaryOp::Neq,
            array(),
            Expr {
                kind: ExprKind::Null,
                span: cell.span,
            },
        );
        let literal = |kind| Expr {
            kind,
            span: cell.span,
        };
        let amount = if cell.written.is_some() {
            ExprKind::PermLit(PermLit::Write)
        } else if let Some(amount) = held.get(&cell.array.name) {
            let half = Expr::binary(
                BinaryOp::FracDiv,
                literal(ExprKind::IntLit(1u32.into())),
                literal(ExprKind::IntLit(2u32.into())),
            );
            ExprKind::Binary {
                op: BinaryOp::Mul,
                lhs: Box::new(Expr {
                    kind: amount.kind.clone(),
                    span: cell.span,
                }),
                rhs: Box::new(half),
            }
        } else {
            ExprKind::Name(Ident {
                name: format!("{READ_SHARE}{number}"),
                span: cell.span,
            })
        };
        let perm = Expr {
            kind: ExprKind::Builtin {
                op: crate::syntax::Builtin::Perm,
                args: vec![
                    cell_expr(cell),
                    Expr {
                        kind: amount,
                        span: cell.span,
                    },
                ],
            },
            span: cell.span,
        };
        let access = Expr::binary(
            BinaryOp::Star,
            Expr::binary(BinaryOp::And, not_null, bounds),
            perm,
        );
        clauses.push(clause(ClauseKind::Context(access), cell.span));
    }
    for cell in &lane.cells {
        if let Some(value) = &cell.written {
            let post = Expr::binary(BinaryOp::Eq, cell_expr(cell), value.clone());
            clauses.push(clause(ClauseKind::Ensures(post), cell.span));
        }
    }
    Ok(Contract { clauses })
}

fn reads_a_cell(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| found |= matches!(x.kind, ExprKind::Index { .. }));
    found
}

fn int_zero(span: Span) -> Expr {
    Expr {
        kind: ExprKind::IntLit(0u32.into()),
        span,
    }
}

fn cell_expr(cell: &Cell) -> Expr {
    index_expr(&cell.array, cell.index.clone(), cell.span)
}

/// `array[index]`, every node carrying `span`.
fn index_expr(array: &Ident, index: Expr, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Index {
            base: Box::new(Expr {
                kind: ExprKind::Name(array.clone()),
                span,
            }),
            index: Box::new(index),
        },
        span,
    }
}

impl Lane<'_> {
    fn stmt(&mut self, stmt: &Stmt) -> Result<(), Refusal> {
        match &stmt.kind {
            StmtKind::LocalDecl { vars, .. } => {
                for v in vars {
                    let value = match &v.init {
                        Some(e) => Some(self.value(e)?),
                        None => None,
                    };
                    self.locals.push((v.name.name.clone(), value));
                }
                Ok(())
            }
            StmtKind::Assign { target, value } => {
                let value = self.value(value)?;
                match &target.kind {
                    ExprKind::Name(x) => {
                        match self.locals.iter_mut().rev().find(|(n, _)| *n == x.name) {
                            Some(local) => {
                                local.1 = Some(value);
                                Ok(())
                            }
                            None => refuse(
                                "a vector lane assigns a variable of the method (lanes may assign \
                             their own locals and array cells only)",
                                target.span,
                            ),
                        }
                    }
                    ExprKind::Index { base, index } => {
                        let array = self.array(base)?;
                        let index = self.value(index)?;
                        let text = format!("{}[{}]", array.name, print_expr(&index));
                        match self.cells.iter_mut().find(|c| c.text == text) {
                            Some(cell) => cell.written = Some(value),
                            None => self.cells.push(Cell {
                                array,
                                index,
                                text,
                                span: target.span,
                                written: Some(value),
                            }),
                        }
                        Ok(())
                    }
                    _ => refuse(
                        "a vector lane writes something other than its locals and array cells",
                        target.span,
                    ),
                }
            }
            StmtKind::Assert(e) => self.value(e).map(|_| ()),
            StmtKind::Block(b) => {
                let depth = self.locals.len();
                for s in &b.stmts {
                    self.stmt(s)?;
                }
                self.locals.truncate(depth);
                Ok(())
            }
            _ => refuse(
                "this statement in a vector block without a contract (its contract is inferred \
                 from declarations, assignments and assertions only: write one)",
                stmt.span,
            ),
        }
    }

    /// The array a lane indexes: a parameter or local of the method.
    fn array(&self, base: &Expr) -> Result<Ident, Refusal> {
        match &base.kind {
            ExprKind::Name(a) if self.outer.contains(&a.name) && !self.is_local(&a.name) => {
                Ok(a.clone())
            }
            _ => refuse(
                "a vector lane indexes something other than an array parameter or local of the \
                 method",
                base.span,
            ),
        }
    }

    fn is_local(&self, name: &str) -> bool {
        self.locals.iter().any(|(n, _)| n == name)
    }

    /// `e` over the lane's iterator and the method's names: the lane's locals replaced by their
    /// values, a cell the lane wrote by what it wrote, any other cell by its value where the
    /// block started (`\old`), recorded as read.
    fn value(&mut self, e: &Expr) -> Result<Expr, Refusal> {
        match &e.kind {
            ExprKind::Name(x) => {
                if let Some((_, value)) = self.locals.iter().rev().find(|(n, _)| *n == x.name) {
                    return match value {
                        Some(v) => Ok(v.clone()),
                        None => refuse("a lane's local read before it is assigned", e.span),
                    };
                }
                if self.outer.contains(&x.name) || self.iters.contains(&x.name) {
                    Ok(e.clone())
                } else {
                    refuse(
                        "a field read in a vector block without a contract (every lane would \
                         share its location: write the contract)",
                        e.span,
                    )
                }
            }
            ExprKind::Index { base, index } => {
                let array = self.array(base)?;
                let index = self.value(index)?;
                let text = format!("{}[{}]", array.name, print_expr(&index));
                if let Some(cell) = self.cells.iter().find(|c| c.text == text) {
                    if let Some(v) = &cell.written {
                        return Ok(v.clone());
                    }
                } else {
                    self.cells.push(Cell {
                        array: array.clone(),
                        index: index.clone(),
                        text,
                        span: e.span,
                        written: None,
                    });
                }
                Ok(Expr {
                    kind: ExprKind::Old(Box::new(index_expr(&array, index, e.span))),
                    span: e.span,
                })
            }
            ExprKind::Field { base, name } if name.name == "length" => {
                let array = self.array(base)?;
                Ok(Expr {
                    kind: ExprKind::Field {
                        base: Box::new(Expr {
                            kind: ExprKind::Name(array),
                            span: base.span,
                        }),
                        name: name.clone(),
                    },
                    span: e.span,
                })
            }
            // A cell read only on some paths would still be claimed for every lane (with its
            // index in bounds), failing correct guards like `j > 0 ? a[j - 1] : 0`: refused.
            ExprKind::Cond {
                then_expr,
                else_expr,
                ..
            } if reads_a_cell(then_expr) || reads_a_cell(else_expr) => refuse(
                "a cell read under a condition in a vector block without a contract (write one)",
                e.span,
            ),
            ExprKind::Binary {
                op: BinaryOp::And | BinaryOp::Or | BinaryOp::Implies,
                rhs,
                ..
            } if reads_a_cell(rhs) => refuse(
                "a cell read under a condition in a vector block without a contract (write one)",
                rhs.span,
            ),
            ExprKind::IntLit(_)
            | ExprKind::BoolLit(_)
            | ExprKind::Unary { .. }
            | ExprKind::Binary { .. }
            | ExprKind::Cond { .. } => {
                let mut out = e.clone();
                let mut failed = None;
                out.for_each_child_mut(&mut |c| {
                    if failed.is_some() {
                        return;
                    }
                    match self.value(c) {
                        Ok(v) => *c = v,
                        Err(r) => failed = Some(r),
                    }
                });
                match failed {
                    Some(r) => Err(r),
                    None => Ok(out),
                }
            }
            _ => refuse(
                "this expression in a vector block without a contract (its contract is \
                 inferred over arithmetic, comparisons and array cells only: write one)",
                e.span,
            ),
        }
    }
}
