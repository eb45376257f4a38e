//! Pure IR expressions → Z3 terms.
//!
//! Covered: integer and boolean literals, names (bound by an enclosing quantifier or `\let`,
//! else looked up in an [`Env`] that gives their [`Sort`]), `!` and unary `-`, `+ - *`,
//! comparisons, `== !=` on integers and booleans, `&& || ==>`, `?:`, `\let`, and `\forall` /
//! `\exists` (also `\forall*` with a pure body, which means `\forall`) over `int` binders with
//! an optional condition and the range form `int i = lo .. hi`. Triggers `{: e :}` mean `e`;
//! their pattern is not passed to Z3 (which only affects how Z3 instantiates, never what is
//! true).
//!
//! Everything else is an [`EncodeError::Unsupported`] with the construct's span — never a
//! panic, never a silently dropped conjunct. In particular `/` and `%` are refused: see
//! [`EncodeError::Unsupported`]'s use in [`Encoder::term`] and the module docs of
//! [`crate::verify`] for why.
//!
//! The [`Encoder`] keeps its own sorts ([`Term`]) and never asks Z3 for the kind of a sort or
//! declaration (those enums changed numbering between Z3 releases; we link the system's 4.8.12).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use z3::ast::{self, Ast, Bool, Int};

use crate::syntax::{BinaryOp, Expr, ExprKind, QuantifierKind, Span, TypeKind, UnaryOp};

/// The sorts this encoding knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sort {
    Int,
    Bool,
}

impl fmt::Display for Sort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Sort::Int => "int",
            Sort::Bool => "boolean",
        })
    }
}

/// The free variables an expression may mention, with their sorts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, Sort>,
}

impl Env {
    pub fn new() -> Env {
        Env::default()
    }

    /// Builder form of [`Env::insert`].
    pub fn with(mut self, name: impl Into<String>, sort: Sort) -> Env {
        self.insert(name, sort);
        self
    }

    pub fn insert(&mut self, name: impl Into<String>, sort: Sort) {
        self.vars.insert(name.into(), sort);
    }

    pub fn get(&self, name: &str) -> Option<Sort> {
        self.vars.get(name).copied()
    }
}

/// A Z3 term with the sort we gave it. Belongs to the Z3 context of the thread that built it.
#[derive(Clone, Debug)]
pub enum Term {
    Int(Int),
    Bool(Bool),
}

impl Term {
    pub fn sort(&self) -> Sort {
        match self {
            Term::Int(_) => Sort::Int,
            Term::Bool(_) => Sort::Bool,
        }
    }
}

/// Why an expression could not be encoded. Codes E05xx (`verify`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum EncodeError {
    /// A construct the checker does not encode (yet). Input the user can change: exit 2.
    #[error("not supported by the checker yet: {what}")]
    #[diagnostic(code(E0501))]
    Unsupported {
        what: String,
        #[label("not supported here")]
        span: Span,
    },

    /// A name neither bound in the expression nor given a sort by the environment.
    #[error("`{name}` has no sort in the verification environment")]
    #[diagnostic(code(E0502))]
    UnboundName {
        name: String,
        #[label("unknown to the encoding")]
        span: Span,
    },

    /// A sort mismatch the type checker should have rejected: our bug (exit 4).
    #[error("internal error: expected {expected}, found {found} (the type checker should have rejected this)")]
    #[diagnostic(code(E0503))]
    IllSorted {
        expected: Sort,
        found: Sort,
        #[label("ill-sorted")]
        span: Span,
    },
}

impl EncodeError {
    pub fn span(&self) -> Span {
        match self {
            EncodeError::Unsupported { span, .. }
            | EncodeError::UnboundName { span, .. }
            | EncodeError::IllSorted { span, .. } => *span,
        }
    }

    /// The stable code, e.g. `"E0501"`.
    pub fn code_str(&self) -> &'static str {
        match self {
            EncodeError::Unsupported { .. } => "E0501",
            EncodeError::UnboundName { .. } => "E0502",
            EncodeError::IllSorted { .. } => "E0503",
        }
    }
}

fn unsupported(what: impl Into<String>, span: Span) -> EncodeError {
    EncodeError::Unsupported {
        what: what.into(),
        span,
    }
}

/// Translates expressions into terms of the calling thread's current Z3 context (use it inside
/// [`super::in_fresh_context`]). One encoder may translate several expressions of one
/// obligation; free variables are shared between them.
pub struct Encoder<'e> {
    env: &'e Env,
    /// Quantifier and `\let` binders in scope, innermost last.
    scopes: Vec<(String, Term)>,
    /// The environment's variables met so far, as Z3 constants.
    free: BTreeMap<String, Term>,
}

impl<'e> Encoder<'e> {
    pub fn new(env: &'e Env) -> Encoder<'e> {
        Encoder {
            env,
            scopes: Vec::new(),
            free: BTreeMap::new(),
        }
    }

    /// The free variables used so far (sorted by name), for counterexamples.
    pub fn free_vars(&self) -> Vec<(String, Term)> {
        self.free
            .iter()
            .map(|(n, t)| (n.clone(), t.clone()))
            .collect()
    }

    pub fn bool(&mut self, e: &Expr) -> Result<Bool, EncodeError> {
        match self.term(e)? {
            Term::Bool(b) => Ok(b),
            t => Err(ill_sorted(Sort::Bool, &t, e.span)),
        }
    }

    pub fn int(&mut self, e: &Expr) -> Result<Int, EncodeError> {
        match self.term(e)? {
            Term::Int(i) => Ok(i),
            t => Err(ill_sorted(Sort::Int, &t, e.span)),
        }
    }

    pub fn term(&mut self, e: &Expr) -> Result<Term, EncodeError> {
        let span = e.span;
        Ok(match &e.kind {
            ExprKind::IntLit(n) => match Int::from_str(&n.to_string()) {
                Ok(i) => Term::Int(i),
                Err(()) => return Err(unsupported(format!("the integer literal {n}"), span)),
            },
            ExprKind::BoolLit(b) => Term::Bool(Bool::from_bool(*b)),
            ExprKind::Name(id) => self.name(&id.name, span)?,
            ExprKind::Unary { op, operand } => match op {
                UnaryOp::Not => Term::Bool(self.bool(operand)?.not()),
                UnaryOp::Neg => Term::Int(self.int(operand)?.unary_minus()),
            },
            ExprKind::Binary { op, lhs, rhs } => self.binary(*op, lhs, rhs, span)?,
            ExprKind::Cond {
                cond,
                then_expr,
                else_expr,
            } => {
                let c = self.bool(cond)?;
                match (self.term(then_expr)?, self.term(else_expr)?) {
                    (Term::Int(a), Term::Int(b)) => Term::Int(c.ite(&a, &b)),
                    (Term::Bool(a), Term::Bool(b)) => Term::Bool(c.ite(&a, &b)),
                    (a, b) => return Err(ill_sorted(a.sort(), &b, else_expr.span)),
                }
            }
            ExprKind::Let {
                ty,
                name,
                value,
                body,
            } => {
                let sort = self.binder_sort(&ty.kind, ty.span, "a `\\let` of this type")?;
                let v = self.term(value)?;
                if v.sort() != sort {
                    return Err(ill_sorted(sort, &v, value.span));
                }
                // A `\let` is pure: binding the name to the value's term is exact.
                self.scopes.push((name.name.clone(), v));
                let r = self.term(body);
                self.scopes.pop();
                r?
            }
            ExprKind::Quantifier(q) => {
                let (is_forall, what) = match q.kind {
                    QuantifierKind::Forall => (true, "`\\forall`"),
                    // Reached only with a pure body (a permission in it is refused below),
                    // where `\forall*` means `\forall`.
                    QuantifierKind::ForallStar => (true, "`\\forall*`"),
                    QuantifierKind::Exists => (false, "`\\exists`"),
                    QuantifierKind::Sum => return Err(unsupported("`\\sum`", span)),
                };
                let depth = self.scopes.len();
                let r = self.quantifier(q, is_forall, what);
                self.scopes.truncate(depth);
                Term::Bool(r?)
            }
            ExprKind::Trigger(inner) => self.term(inner)?,
            ExprKind::Null => return Err(unsupported("`null` (references)", span)),
            ExprKind::This => return Err(unsupported("`this` (references)", span)),
            ExprKind::Result => return Err(unsupported("`\\result`", span)),
            ExprKind::PermLit(_) => {
                return Err(unsupported("permission amounts (fractions)", span))
            }
            ExprKind::Index { .. } => {
                return Err(unsupported("indexing (heap or sequence reads)", span))
            }
            ExprKind::Slice { .. } => return Err(unsupported("sequence slices", span)),
            ExprKind::Update { .. } => return Err(unsupported("sequence updates", span)),
            ExprKind::Field { .. } => {
                return Err(unsupported("field access and `.length` (heap reads)", span))
            }
            ExprKind::Call { .. } => return Err(unsupported("calls", span)),
            ExprKind::New { .. } | ExprKind::NewArray { .. } => {
                return Err(unsupported("allocation", span))
            }
            ExprKind::Old(_) => return Err(unsupported("`\\old`", span)),
            ExprKind::Length(_) => return Err(unsupported("sequence length", span)),
            ExprKind::Builtin { op, .. } => {
                return Err(unsupported(format!("`{}`", op.spelling()), span))
            }
            ExprKind::Collection { .. } | ExprKind::MapLit { .. } => {
                return Err(unsupported("sequence, set, bag and map values", span))
            }
            ExprKind::Unfolding { .. } => return Err(unsupported("`unfolding`", span)),
        })
    }

    fn name(&mut self, name: &str, span: Span) -> Result<Term, EncodeError> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Ok(t.clone());
        }
        if let Some(t) = self.free.get(name) {
            return Ok(t.clone());
        }
        let t = match self.env.get(name) {
            Some(Sort::Int) => Term::Int(Int::new_const(name)),
            Some(Sort::Bool) => Term::Bool(Bool::new_const(name)),
            None => {
                return Err(EncodeError::UnboundName {
                    name: name.to_string(),
                    span,
                })
            }
        };
        self.free.insert(name.to_string(), t.clone());
        Ok(t)
    }

    fn binary(
        &mut self,
        op: BinaryOp,
        lhs: &Expr,
        rhs: &Expr,
        span: Span,
    ) -> Result<Term, EncodeError> {
        use BinaryOp::*;
        Ok(match op {
            Add | Sub | Mul => {
                let (a, b) = (self.int(lhs)?, self.int(rhs)?);
                Term::Int(match op {
                    Add => Int::add(&[a, b]),
                    Sub => Int::sub(&[a, b]),
                    _ => Int::mul(&[a, b]),
                })
            }
            Lt | Le | Gt | Ge => {
                let (a, b) = (self.int(lhs)?, self.int(rhs)?);
                Term::Bool(match op {
                    Lt => a.lt(&b),
                    Le => a.le(&b),
                    Gt => a.gt(&b),
                    _ => a.ge(&b),
                })
            }
            Eq | Neq => {
                let eq = match (self.term(lhs)?, self.term(rhs)?) {
                    (Term::Int(a), Term::Int(b)) => a.eq(&b),
                    (Term::Bool(a), Term::Bool(b)) => a.iff(&b),
                    (a, b) => return Err(ill_sorted(a.sort(), &b, rhs.span)),
                };
                Term::Bool(if op == Eq { eq } else { eq.not() })
            }
            And | Or | Implies => {
                let (a, b) = (self.bool(lhs)?, self.bool(rhs)?);
                Term::Bool(match op {
                    And => Bool::and(&[a, b]),
                    Or => Bool::or(&[a, b]),
                    _ => a.implies(&b),
                })
            }
            // Integer division and remainder. Z3's `div`/`mod` are Euclidean (remainder ≥ 0),
            // C and OpenCL truncate, and which of these PVL's `/` and `%` follow in VerCors
            // (and what they say about a zero divisor) must be settled together with the
            // definedness obligations (`b != 0`) they need. Until then: refused, not guessed.
            Div | Mod => {
                return Err(unsupported(
                    format!(
                        "integer `{}` (its semantics on negative operands and its \
                         zero-divisor check are not encoded yet)",
                        op.symbol()
                    ),
                    span,
                ))
            }
            Star => return Err(unsupported("the separating conjunction `**`", span)),
            FracDiv => return Err(unsupported("fraction division `\\`", span)),
            In => return Err(unsupported("membership `in`", span)),
            Concat => return Err(unsupported("sequence concatenation `++`", span)),
            Cons => return Err(unsupported("sequence cons `::`", span)),
        })
    }

    /// `∀xs. guard ⇒ body` or `∃xs. guard ∧ body`, where the guard is the binders' ranges and
    /// the condition. Binders are fresh Z3 constants, so they never capture a free variable of
    /// the same name. The caller pops the binders' scopes.
    fn quantifier(
        &mut self,
        q: &crate::syntax::Quantifier,
        is_forall: bool,
        what: &str,
    ) -> Result<Bool, EncodeError> {
        let mut bound = Vec::with_capacity(q.binders.len());
        let mut guard = Vec::new();
        for b in &q.binders {
            if b.ty.kind != TypeKind::Int {
                return Err(unsupported(
                    format!("{what} over a binder that is not an `int`"),
                    b.ty.span,
                ));
            }
            // As in the type checker: a binder's range sees the earlier binders, not itself.
            let range = match &b.range {
                Some((lo, hi)) => Some((self.int(lo)?, self.int(hi)?)),
                None => None,
            };
            let x = Int::fresh_const(&b.name.name);
            if let Some((lo, hi)) = range {
                guard.push(lo.le(&x));
                guard.push(x.lt(&hi));
            }
            self.scopes
                .push((b.name.name.clone(), Term::Int(x.clone())));
            bound.push(x);
        }
        if let Some(c) = &q.cond {
            guard.push(self.bool(c)?);
        }
        let body = self.bool(&q.body)?;
        let guard = Bool::and(&guard);
        let bounds: Vec<&dyn Ast> = bound.iter().map(|x| x as &dyn Ast).collect();
        Ok(if is_forall {
            ast::forall_const(&bounds, &[], &guard.implies(&body))
        } else {
            ast::exists_const(&bounds, &[], &Bool::and(&[guard, body]))
        })
    }

    fn binder_sort(&self, ty: &TypeKind, span: Span, what: &str) -> Result<Sort, EncodeError> {
        match ty {
            TypeKind::Int => Ok(Sort::Int),
            TypeKind::Bool => Ok(Sort::Bool),
            _ => Err(unsupported(what, span)),
        }
    }
}

fn ill_sorted(expected: Sort, found: &Term, span: Span) -> EncodeError {
    EncodeError::IllSorted {
        expected,
        found: found.sort(),
        span,
    }
}
