//! Types and the declaration tables (classes, fields, methods) that later stages consume.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::syntax::{Method, MethodBody, Modifier, Span, TypeKind};

use super::error::CheckError;

/// Index into [`Checked::classes`](super::Checked::classes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClassId(pub u32);

/// A resolved type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    Int,
    Bool,
    Void,
    /// `frac`, and `write`/`read`.
    Frac,
    /// `zfrac`, and `none`.
    ZFrac,
    /// `rational`, and the result of fraction arithmetic (`1\2`, `p + q`).
    Rational,
    Resource,
    Seq(Box<Ty>),
    Set(Box<Ty>),
    Bag(Box<Ty>),
    Option(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    /// `tuple<A, B>`: a pair, read with `.fst` and `.snd`.
    Tuple(Box<Ty>, Box<Ty>),
    Array(Box<Ty>),
    Class(ClassId),
    /// A type parameter `T` of the generic method being checked: a type about which nothing
    /// is known but equality.
    Param(String),
    /// A class as a value: `\type(C)`, `\typeof(e)`.
    Type,
    /// The type of `null`.
    Null,
    /// The type of an expression that already produced an error (or whose type the checker
    /// deliberately does not model): compatible with everything, so one mistake gives one error.
    Unknown,
}

impl Ty {
    pub fn is_numeric(&self) -> bool {
        matches!(self, Ty::Int | Ty::Frac | Ty::ZFrac | Ty::Rational)
    }

    pub fn is_fraction(&self) -> bool {
        matches!(self, Ty::Frac | Ty::ZFrac | Ty::Rational)
    }

    pub fn is_reference(&self) -> bool {
        matches!(self, Ty::Array(_) | Ty::Class(_) | Ty::Null | Ty::Option(_))
    }

    /// This type with the type parameters in `map` replaced.
    pub fn substitute(&self, map: &HashMap<&str, &Ty>) -> Ty {
        let sub = |t: &Ty| Box::new(t.substitute(map));
        match self {
            Ty::Param(name) => map
                .get(name.as_str())
                .map_or_else(|| self.clone(), |t| (*t).clone()),
            Ty::Seq(e) => Ty::Seq(sub(e)),
            Ty::Set(e) => Ty::Set(sub(e)),
            Ty::Bag(e) => Ty::Bag(sub(e)),
            Ty::Option(e) => Ty::Option(sub(e)),
            Ty::Array(e) => Ty::Array(sub(e)),
            Ty::Map(k, v) => Ty::Map(sub(k), sub(v)),
            Ty::Tuple(a, b) => Ty::Tuple(sub(a), sub(b)),
            _ => self.clone(),
        }
    }

    /// The element type of a sequence, set or bag.
    pub fn collection_elem(&self) -> Option<&Ty> {
        match self {
            Ty::Seq(e) | Ty::Set(e) | Ty::Bag(e) => Some(e),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct FieldInfo {
    pub name: String,
    pub ty: Ty,
    pub span: Span,
}

/// What a method is, which decides where it may be called and how `verify` treats it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MethodKind {
    /// `C(..) { .. }` / `constructor(..) { .. }`: no return type.
    Constructor,
    /// `resource p(..) = e;` or a bodiless `resource p(..);`.
    Predicate,
    /// `pure T f(..) = e;`, `pure T f(..) { return e; }`, or a bodiless `pure T f(..);`.
    PureFunction,
    /// A non-pure method without a body: a lemma or abstract method whose contract is trusted.
    Abstract,
    /// An ordinary method with a body.
    Method,
}

impl MethodKind {
    /// Callable from specifications and pure functions.
    pub fn is_pure(self) -> bool {
        matches!(self, MethodKind::Predicate | MethodKind::PureFunction)
    }
}

#[derive(Clone, Debug)]
pub struct ParamInfo {
    pub name: String,
    pub ty: Ty,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct MethodSig {
    pub name: String,
    pub kind: MethodKind,
    pub is_static: bool,
    pub params: Vec<ParamInfo>,
    /// `given T x;` clauses.
    pub given: Vec<ParamInfo>,
    /// `yields T x;` clauses.
    pub yields: Vec<ParamInfo>,
    /// [`Ty::Void`] for void methods and constructors.
    pub return_type: Ty,
    /// The span of the name, for "declared here" labels.
    pub span: Span,
    /// `f<T, U>`: the type parameters of a generic method (their types are [`Ty::Param`]).
    pub type_params: Vec<String>,
}

impl MethodSig {
    /// This signature with its type parameters replaced by `args` (as many as there are
    /// parameters), as a call `f<int>(..)` sees it.
    pub fn instantiate(&self, args: &[Ty]) -> MethodSig {
        let map: HashMap<&str, &Ty> = self
            .type_params
            .iter()
            .map(String::as_str)
            .zip(args)
            .collect();
        let sub = |ps: &[ParamInfo]| {
            ps.iter()
                .map(|p| ParamInfo {
                    ty: p.ty.substitute(&map),
                    ..p.clone()
                })
                .collect()
        };
        MethodSig {
            params: sub(&self.params),
            given: sub(&self.given),
            yields: sub(&self.yields),
            return_type: self.return_type.substitute(&map),
            type_params: Vec::new(),
            ..self.clone()
        }
    }
}

#[derive(Clone, Debug)]
pub struct ClassInfo {
    pub name: String,
    pub span: Span,
    pub fields: Vec<FieldInfo>,
    /// Everything but constructors.
    pub methods: Vec<MethodSig>,
    /// Empty when the class declares none: `new C()` then uses the implicit no-argument one.
    pub constructors: Vec<MethodSig>,
    pub(crate) field_index: HashMap<String, usize>,
    pub(crate) method_index: HashMap<String, usize>,
}

impl ClassInfo {
    pub fn field(&self, name: &str) -> Option<&FieldInfo> {
        self.field_index.get(name).map(|&i| &self.fields[i])
    }

    /// The first method named `name` (constructors aside).
    pub fn method(&self, name: &str) -> Option<&MethodSig> {
        self.method_index.get(name).map(|&i| &self.methods[i])
    }

    /// Every method named `name`: several where the name is overloaded (by the number or the
    /// types of the parameters).
    pub fn methods_named<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s MethodSig> {
        self.methods.iter().filter(move |m| m.name == name)
    }
}

/// All declarations of a program.
#[derive(Clone, Debug, Default)]
pub struct Tables {
    pub classes: Vec<ClassInfo>,
    /// Top-level (class-less) methods, functions and predicates: visible everywhere.
    pub globals: Vec<MethodSig>,
    pub(crate) class_index: HashMap<String, ClassId>,
    pub(crate) global_index: HashMap<String, usize>,
}

impl Tables {
    pub fn class(&self, id: ClassId) -> &ClassInfo {
        &self.classes[id.0 as usize]
    }

    pub fn class_by_name(&self, name: &str) -> Option<ClassId> {
        self.class_index.get(name).copied()
    }

    /// The first top-level routine named `name`.
    pub fn global(&self, name: &str) -> Option<&MethodSig> {
        self.global_index.get(name).map(|&i| &self.globals[i])
    }

    /// Every top-level routine named `name` (see [`ClassInfo::methods_named`]).
    pub fn globals_named<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s MethodSig> {
        self.globals.iter().filter(move |m| m.name == name)
    }

    /// The name under which `sig`, one of several routines of one name in its scope, is told
    /// apart from the others: the name and the parameters' types, `sumArray(int[], int)`. No
    /// identifier contains `(`, so it names nothing else.
    pub fn overload_name(&self, sig: &MethodSig) -> String {
        let params: Vec<String> = sig.params.iter().map(|p| self.show(&p.ty)).collect();
        format!("{}({})", sig.name, params.join(", "))
    }

    /// How a type is written in PVL, for messages.
    pub fn show(&self, ty: &Ty) -> String {
        let mut s = String::new();
        self.write_ty(&mut s, ty);
        s
    }

    fn write_ty(&self, s: &mut String, ty: &Ty) {
        let simple = match ty {
            Ty::Int => "int",
            Ty::Bool => "boolean",
            Ty::Void => "void",
            Ty::Frac => "frac",
            Ty::ZFrac => "zfrac",
            Ty::Rational => "rational",
            Ty::Resource => "resource",
            Ty::Null => "null",
            Ty::Type => "a class (`\\type(C)`)",
            Ty::Unknown => "?",
            Ty::Param(name) => name,
            Ty::Class(id) => {
                s.push_str(
                    self.classes
                        .get(id.0 as usize)
                        .map_or("?", |c| c.name.as_str()),
                );
                return;
            }
            Ty::Array(e) => {
                self.write_ty(s, e);
                s.push_str("[]");
                return;
            }
            Ty::Map(k, v) | Ty::Tuple(k, v) => {
                s.push_str(if matches!(ty, Ty::Map(..)) {
                    "map<"
                } else {
                    "tuple<"
                });
                self.write_ty(s, k);
                s.push_str(", ");
                self.write_ty(s, v);
                s.push('>');
                return;
            }
            Ty::Seq(e) | Ty::Set(e) | Ty::Bag(e) | Ty::Option(e) => {
                let head = match ty {
                    Ty::Seq(_) => "seq",
                    Ty::Set(_) => "set",
                    Ty::Bag(_) => "bag",
                    _ => "option",
                };
                let _ = write!(s, "{head}<");
                self.write_ty(s, e);
                s.push('>');
                return;
            }
        };
        s.push_str(simple);
    }

    /// Resolves a written type. Array sizes (`int[N]`) are informative and checked by the
    /// caller, which knows their scope.
    pub(crate) fn resolve_type(&self, kind: &TypeKind, errors: &mut Vec<CheckError>) -> Ty {
        self.resolve_type_in(kind, &[], errors)
    }

    /// Resolves a written type where the type parameters `type_params` are in scope (they
    /// shadow classes of the same name).
    pub(crate) fn resolve_type_in(
        &self,
        kind: &TypeKind,
        type_params: &[String],
        errors: &mut Vec<CheckError>,
    ) -> Ty {
        let sub = |t: &crate::syntax::Type, errors: &mut Vec<CheckError>| {
            Box::new(self.resolve_type_in(&t.kind, type_params, errors))
        };
        match kind {
            TypeKind::Int => Ty::Int,
            TypeKind::Bool => Ty::Bool,
            TypeKind::Void => Ty::Void,
            TypeKind::Frac => Ty::Frac,
            TypeKind::ZFrac => Ty::ZFrac,
            TypeKind::Rational => Ty::Rational,
            TypeKind::Resource => Ty::Resource,
            TypeKind::Seq(t) => Ty::Seq(sub(t, errors)),
            TypeKind::Set(t) => Ty::Set(sub(t, errors)),
            TypeKind::Bag(t) => Ty::Bag(sub(t, errors)),
            TypeKind::Option(t) => Ty::Option(sub(t, errors)),
            TypeKind::Map(k, v) => Ty::Map(sub(k, errors), sub(v, errors)),
            TypeKind::Tuple(a, b) => Ty::Tuple(sub(a, errors), sub(b, errors)),
            TypeKind::Array { elem, .. } => Ty::Array(sub(elem, errors)),
            TypeKind::Class(name) if type_params.contains(&name.name) => {
                Ty::Param(name.name.clone())
            }
            TypeKind::Class(name) => match self.class_by_name(&name.name) {
                Some(id) => Ty::Class(id),
                None => {
                    errors.push(CheckError::UnknownClass {
                        name: name.name.clone(),
                        span: name.span,
                    });
                    Ty::Unknown
                }
            },
        }
    }
}

pub(crate) fn method_kind(method: &Method) -> MethodKind {
    let is_pure = method.modifiers.contains(&Modifier::Pure);
    match (&method.return_type, &method.body) {
        (None, _) => MethodKind::Constructor,
        (Some(t), _) if t.kind == TypeKind::Resource => MethodKind::Predicate,
        _ if is_pure => MethodKind::PureFunction,
        // `T f(..) = e;` is a function even where `pure` was left out.
        (_, MethodBody::Expr(_)) => MethodKind::PureFunction,
        (_, MethodBody::Abstract) => MethodKind::Abstract,
        (_, MethodBody::Block(_)) => MethodKind::Method,
    }
}
