//! Declarations of a checked program as the verifier needs them: fields with their location
//! ids, methods and pure functions by name, and PVL types as checker types.

use std::collections::{BTreeMap, BTreeSet};

use crate::syntax::{
    ClauseKind, Contract, Expr, Item, Member, MemberKind, Method, MethodBody, Modifier, Program,
    Span, Type, TypeKind,
};

use super::expr::EncodeError;
use super::state::{HeapKind, Ty, BASE_HEAP_KINDS};

/// A field: its location index (negative, see `state.rs`) and type.
#[derive(Clone, Debug)]
pub struct FieldInfo {
    pub index: i64,
    pub ty: Ty,
}

/// A method or pure function with the contract it was declared with.
#[derive(Clone, Copy, Debug)]
pub struct Routine<'p> {
    /// The class it is declared in (`None` at top level).
    pub class: Option<&'p str>,
    pub contract: &'p Contract,
    pub method: &'p Method,
    pub span: Span,
}

impl<'p> Routine<'p> {
    /// An instance method: it has a `this`.
    pub fn has_this(&self) -> bool {
        self.class.is_some() && !self.method.modifiers.contains(&Modifier::Static)
    }

    pub fn is_pure(&self) -> bool {
        self.method.modifiers.contains(&Modifier::Pure)
    }

    /// `requires` and `context` clauses, in order (the callee's side of a call).
    pub fn pre(&self) -> Vec<&'p Expr> {
        pre_clauses(self.contract)
    }

    pub fn post(&self) -> Vec<&'p Expr> {
        post_clauses(self.contract)
    }

    pub fn everywhere(&self) -> Vec<&'p Expr> {
        clauses(self.contract, |k| match k {
            ClauseKind::ContextEverywhere(e) => Some(e),
            _ => None,
        })
    }

    pub fn body(&self) -> &'p MethodBody {
        &self.method.body
    }
}

/// `requires` and `context` clauses, in order: what a method, par block or barrier asks for.
pub fn pre_clauses(contract: &Contract) -> Vec<&Expr> {
    clauses(contract, |k| match k {
        ClauseKind::Requires(e) | ClauseKind::Context(e) => Some(e),
        _ => None,
    })
}

/// `ensures` and `context` clauses, in order: what it gives back.
pub fn post_clauses(contract: &Contract) -> Vec<&Expr> {
    clauses(contract, |k| match k {
        ClauseKind::Ensures(e) | ClauseKind::Context(e) => Some(e),
        _ => None,
    })
}

pub fn clauses<'p>(
    contract: &'p Contract,
    pick: impl Fn(&'p ClauseKind) -> Option<&'p Expr>,
) -> Vec<&'p Expr> {
    contract
        .clauses
        .iter()
        .filter_map(|c| pick(&c.kind))
        .collect()
}

/// The program's declarations.
pub struct ProgramInfo<'p> {
    fields: BTreeMap<(String, String), FieldInfo>,
    routines: BTreeMap<String, Routine<'p>>,
    pub order: Vec<Routine<'p>>,
    /// Routines in a call cycle through another routine (computed once; see `recursion.rs`).
    pub cyclic: BTreeSet<String>,
    /// Methods that may not terminate, with why (computed once; see `termination.rs`).
    pub may_not_terminate: BTreeMap<String, super::termination::NonTermination>,
}

impl<'p> ProgramInfo<'p> {
    pub fn new(program: &'p Program) -> ProgramInfo<'p> {
        let mut info = ProgramInfo {
            fields: BTreeMap::new(),
            routines: BTreeMap::new(),
            order: Vec::new(),
            cyclic: BTreeSet::new(),
            may_not_terminate: BTreeMap::new(),
        };
        let mut next_field = 0i64;
        let mut add =
            |info: &mut ProgramInfo<'p>, class: Option<&'p str>, m: &'p Member| match &m.kind {
                MemberKind::Field(f) => {
                    if let (Some(class), Ok(ty)) = (class, ty_of(&f.ty)) {
                        info.fields.insert(
                            (class.to_string(), f.name.name.clone()),
                            FieldInfo {
                                index: -1 - next_field,
                                ty,
                            },
                        );
                        next_field += 1;
                    }
                }
                MemberKind::Method(method) => {
                    let r = Routine {
                        class,
                        contract: &m.contract,
                        method,
                        span: m.span,
                    };
                    // Names are unique per program as far as the type checker lets them through;
                    // the first declaration wins for lookups, every one is verified.
                    info.routines.entry(method.name.name.clone()).or_insert(r);
                    info.order.push(r);
                }
            };
        for item in &program.items {
            match item {
                Item::Class(c) => {
                    for m in &c.members {
                        add(&mut info, Some(&c.name.name), m);
                    }
                }
                Item::Member(m) => add(&mut info, None, m),
            }
        }
        info.cyclic = super::recursion::mutually_recursive(&info);
        info.may_not_terminate = super::termination::summaries(&info);
        info
    }

    /// The heap kinds beyond [`BASE_HEAP_KINDS`] that the program's fields need.
    pub fn extra_heap_kinds(&self) -> Vec<HeapKind> {
        let mut kinds: Vec<HeapKind> = self
            .fields
            .values()
            .map(|f| f.ty.heap_kind())
            .filter(|k| !BASE_HEAP_KINDS.contains(k))
            .collect();
        kinds.sort();
        kinds.dedup();
        kinds
    }

    pub fn field(&self, class: &str, name: &str) -> Option<&FieldInfo> {
        self.fields.get(&(class.to_string(), name.to_string()))
    }

    pub fn routine(&self, name: &str) -> Option<&Routine<'p>> {
        self.routines.get(name)
    }

    pub fn functions(&self) -> impl Iterator<Item = &Routine<'p>> {
        self.routines.values().filter(|r| r.is_pure())
    }
}

/// The checker type of a PVL type, or an "unsupported" error.
pub fn ty_of(ty: &Type) -> Result<Ty, EncodeError> {
    Ok(match &ty.kind {
        TypeKind::Int => Ty::Int,
        TypeKind::Bool => Ty::Bool,
        TypeKind::Frac | TypeKind::ZFrac | TypeKind::Rational => Ty::Perm,
        TypeKind::Array { elem, .. } => Ty::Array(Box::new(ty_of(elem)?)),
        TypeKind::Class(c) => Ty::Object(c.name.clone()),
        TypeKind::Seq(elem) => {
            let elem_ty = ty_of(elem)?;
            let nested_once =
                |t: &Ty| matches!(t, Ty::Seq(inner) if !matches!(**inner, Ty::Seq(_)));
            if elem_ty == Ty::Perm || (matches!(elem_ty, Ty::Seq(_)) && !nested_once(&elem_ty)) {
                return Err(EncodeError::Unsupported {
                    what: "sequences of this element type (elements may be int, boolean, \
                           references, or sequences of those)"
                        .into(),
                    span: ty.span,
                });
            }
            Ty::Seq(Box::new(elem_ty))
        }
        TypeKind::Void
        | TypeKind::Resource
        | TypeKind::Set(_)
        | TypeKind::Bag(_)
        | TypeKind::Option(_)
        | TypeKind::Map(..) => {
            return Err(EncodeError::Unsupported {
                what: "values of this type (sets, bags, options, maps and resources are not \
                       encoded yet)"
                    .into(),
                span: ty.span,
            })
        }
    })
}
