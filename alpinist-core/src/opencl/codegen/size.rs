//! Does a size n satisfy the kernel's precondition? The checker proves a kernel for every N
//! its precondition allows; a scan test at an n outside that set would pair a proof with a run
//! it does not cover (`requires N <= 268435456` and n = 2^29, `N == 16` and n = 32).
//!
//! Every top-level conjunct (`&&`, `**`) of the kernel method's `requires`, `context` and
//! `context_everywhere` clauses is evaluated on the host at N := n, with what the harness
//! guarantees about the array parameters (each is non-null with n cells: `a != null`,
//! `a.length`, `\array(a, e)`), integer arithmetic in `i128`, and the pure functions of the
//! program (bounded recursion depth). A conjunct that mentions anything else — heap values,
//! permissions, ghost inputs, quantifiers — is about the data, which the harness chooses, and is
//! not evaluated; one that the size makes false refuses the size.

use std::collections::HashMap;

use crate::syntax::{
    BinaryOp, Builtin, ClauseKind, Contract, Expr, ExprKind, Method, MethodBody, Span, UnaryOp,
};

use super::KernelArg;

/// A size the kernel's precondition excludes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "n = {n} violates the kernel's precondition `{conjunct}`: its proof does not cover this size"
)]
pub struct SizeRefused {
    pub n: i64,
    /// The conjunct, printed.
    pub conjunct: String,
    pub span: Span,
}

/// The recursion depth of pure functions evaluated on the host.
const MAX_DEPTH: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Val {
    Int(i128),
    Bool(bool),
}

/// What a kernel's precondition says about its size, owned by the [`super::Kernel`] so that the
/// harness can check every size it launches the kernel at — n itself and, for
/// reduce-then-scan, the block — without the program.
#[derive(Clone, Debug)]
pub struct SizePrecondition {
    /// The top-level conjuncts of the `requires`, `context` and `context_everywhere` clauses.
    conjuncts: Vec<Expr>,
    /// The program's pure functions, by name.
    functions: HashMap<String, Method>,
    /// The array parameters (non-null, n cells each).
    arrays: Vec<String>,
    size_param: String,
}

struct Host<'p> {
    functions: &'p HashMap<String, Method>,
    arrays: &'p [String],
    n: i128,
}

/// The size precondition of a kernel: the conjuncts of its method's `contract`, with the
/// program's pure `functions` they may call, its arguments and its size parameter.
pub(super) fn precondition(
    contract: &Contract,
    functions: &HashMap<String, &Method>,
    args: &[KernelArg],
    size_param: &str,
) -> SizePrecondition {
    let mut conjuncts = Vec::new();
    for clause in &contract.clauses {
        if let ClauseKind::Requires(e) | ClauseKind::Context(e) | ClauseKind::ContextEverywhere(e) =
            &clause.kind
        {
            e.flatten_and(&mut conjuncts);
        }
    }
    SizePrecondition {
        conjuncts: conjuncts.into_iter().cloned().collect(),
        functions: functions
            .iter()
            .map(|(name, method)| (name.clone(), (*method).clone()))
            .collect(),
        arrays: args
            .iter()
            .filter_map(|a| match a {
                KernelArg::Global { name } => Some(name.clone()),
                _ => None,
            })
            .collect(),
        size_param: size_param.to_string(),
    }
}

impl SizePrecondition {
    /// Checks every conjunct that the size decides at N := n.
    pub fn check(&self, n: i64) -> Result<(), SizeRefused> {
        let host = Host {
            functions: &self.functions,
            arrays: &self.arrays,
            n: i128::from(n),
        };
        let env = HashMap::from([(self.size_param.clone(), Val::Int(i128::from(n)))]);
        for c in &self.conjuncts {
            if host.eval(c, &env, 0) == Some(Val::Bool(false)) {
                return Err(SizeRefused {
                    n,
                    conjunct: crate::syntax::print_expr(c),
                    span: c.span,
                });
            }
        }
        Ok(())
    }
}

impl Host<'_> {
    fn is_array(&self, e: &Expr) -> bool {
        matches!(&e.kind, ExprKind::Name(id) if self.arrays.contains(&id.name))
    }

    /// The value of `e`, or `None` where it is not decided by the size alone.
    fn eval(&self, e: &Expr, env: &HashMap<String, Val>, depth: usize) -> Option<Val> {
        let int = |v: Option<Val>| match v {
            Some(Val::Int(i)) => Some(i),
            _ => None,
        };
        let boolean = |v: Option<Val>| match v {
            Some(Val::Bool(b)) => Some(b),
            _ => None,
        };
        Some(match &e.kind {
            ExprKind::IntLit(v) => Val::Int(i128::try_from(v).ok()?),
            ExprKind::BoolLit(b) => Val::Bool(*b),
            ExprKind::Name(id) => *env.get(&id.name)?,
            ExprKind::Field { base, name } if name.name == "length" && self.is_array(base) => {
                Val::Int(self.n)
            }
            ExprKind::Builtin {
                op: Builtin::Array,
                args,
            } if args.len() == 2 && self.is_array(&args[0]) => {
                Val::Bool(int(self.eval(&args[1], env, depth))? == self.n)
            }
            ExprKind::Binary {
                op: BinaryOp::Neq,
                lhs,
                rhs,
            } if (self.is_array(lhs) && matches!(rhs.kind, ExprKind::Null))
                || (self.is_array(rhs) && matches!(lhs.kind, ExprKind::Null)) =>
            {
                Val::Bool(true)
            }
            ExprKind::Unary { op, operand } => match op {
                UnaryOp::Not => Val::Bool(!boolean(self.eval(operand, env, depth))?),
                UnaryOp::Neg => Val::Int(int(self.eval(operand, env, depth))?.checked_neg()?),
            },
            ExprKind::Binary { op, lhs, rhs } => {
                use BinaryOp::*;
                match op {
                    // Short-circuit as PVL does: the right side may be undefined otherwise.
                    And | Star | Or | Implies => {
                        let a = boolean(self.eval(lhs, env, depth))?;
                        let decided = match op {
                            Or => a,
                            Implies => !a,
                            _ => !a,
                        };
                        if decided {
                            return Some(Val::Bool(matches!(op, Or | Implies)));
                        }
                        Val::Bool(boolean(self.eval(rhs, env, depth))?)
                    }
                    Eq | Neq => {
                        let equal = self.eval(lhs, env, depth)? == self.eval(rhs, env, depth)?;
                        Val::Bool(equal == (*op == Eq))
                    }
                    _ => {
                        let a = int(self.eval(lhs, env, depth))?;
                        let b = int(self.eval(rhs, env, depth))?;
                        match op {
                            Lt => Val::Bool(a < b),
                            Le => Val::Bool(a <= b),
                            Gt => Val::Bool(a > b),
                            Ge => Val::Bool(a >= b),
                            Add => Val::Int(a.checked_add(b)?),
                            Sub => Val::Int(a.checked_sub(b)?),
                            Mul => Val::Int(a.checked_mul(b)?),
                            // Every semantics agrees on non-negative operands only.
                            Div if a >= 0 && b > 0 => Val::Int(a / b),
                            Mod if a >= 0 && b > 0 => Val::Int(a % b),
                            _ => return None,
                        }
                    }
                }
            }
            ExprKind::Cond {
                cond,
                then_expr,
                else_expr,
            } => {
                if boolean(self.eval(cond, env, depth))? {
                    self.eval(then_expr, env, depth)?
                } else {
                    self.eval(else_expr, env, depth)?
                }
            }
            ExprKind::Call {
                receiver: None,
                name,
                args,
                given,
                ..
            } if given.is_empty() && depth < MAX_DEPTH => {
                let function = self.functions.get(&name.name)?;
                let MethodBody::Expr(body) = &function.body else {
                    return None;
                };
                if function.params.len() != args.len() {
                    return None;
                }
                let mut inner = HashMap::new();
                for (p, a) in function.params.iter().zip(args) {
                    inner.insert(p.name.name.clone(), self.eval(a, env, depth)?);
                }
                self.eval(body, &inner, depth + 1)?
            }
            _ => return None,
        })
    }
}
