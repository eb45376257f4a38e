//! Declarations of a checked program as the verifier needs them: fields with their location
//! ids, methods and pure functions by name, and PVL types as checker types.

use std::collections::{BTreeMap, BTreeSet};

use crate::syntax::{
    print_expr, BinaryOp, Builtin, ClauseKind, Contract, Expr, ExprKind, Item, Member, MemberKind,
    Method, MethodBody, Modifier, Program, Span, Type, TypeKind,
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

    /// A pure function: `pure`, or `T f(..) = e;` written without it (as the type checker
    /// reads it); a predicate (`resource`) is not one.
    pub fn is_pure(&self) -> bool {
        self.method.is_function()
            && !self
                .method
                .return_type
                .as_ref()
                .is_some_and(|t| t.kind == TypeKind::Resource)
    }

    /// Declared `inline`: as in VerCors, the routine is its body, substituted where it is used.
    pub fn is_inline(&self) -> bool {
        self.method.modifiers.contains(&Modifier::Inline)
    }

    /// A method proper — neither a pure function nor a predicate (abstract or not): calling
    /// it is a statement's work, with an effect on the state.
    pub fn is_method(&self) -> bool {
        !self.method.is_function()
            && !self
                .method
                .return_type
                .as_ref()
                .is_some_and(|t| t.kind == TypeKind::Resource)
    }

    /// `C(..) { .. }` / `constructor(..) { .. }`: no return type.
    pub fn is_constructor(&self) -> bool {
        self.method.return_type.is_none()
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

/// The locations (as written) that `clauses` name with `AutoValue`.
fn auto_value_locations(clauses: &[&Expr]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for e in clauses {
        e.visit(&mut |x| {
            if let ExprKind::Builtin {
                op: Builtin::AutoValue,
                args,
            } = &x.kind
            {
                found.extend(args.first().map(|l| print_expr(l.peel_triggers())));
            }
        });
    }
    found
}

/// The leak check of a precondition clause `e`: its `AutoValue`s of the `unreturned`
/// locations, under the same conditions and `\let`s, everything else dropped; `None` where
/// it has none. (`check` refuses `AutoValue` anywhere a contract's walk could not reach it
/// here: under a quantifier it is refused by the checker.)
fn give_back(e: &Expr, unreturned: &BTreeSet<String>) -> Option<Expr> {
    let boxed = |e: Expr| Box::new(e);
    let kind = match &e.kind {
        ExprKind::Builtin {
            op: Builtin::AutoValue,
            args,
        } if args
            .first()
            .is_some_and(|l| unreturned.contains(&print_expr(l.peel_triggers()))) =>
        {
            return Some(e.clone())
        }
        ExprKind::Binary {
            op: BinaryOp::Star | BinaryOp::And,
            lhs,
            rhs,
        } => match (give_back(lhs, unreturned), give_back(rhs, unreturned)) {
            (Some(l), Some(r)) => ExprKind::Binary {
                op: BinaryOp::Star,
                lhs: boxed(l),
                rhs: boxed(r),
            },
            (one, other) => return one.or(other),
        },
        ExprKind::Binary {
            op: BinaryOp::Implies,
            lhs,
            rhs,
        } => ExprKind::Binary {
            op: BinaryOp::Implies,
            lhs: lhs.clone(),
            rhs: boxed(give_back(rhs, unreturned)?),
        },
        ExprKind::Cond {
            cond,
            then_expr,
            else_expr,
        } => {
            let (t, f) = (
                give_back(then_expr, unreturned),
                give_back(else_expr, unreturned),
            );
            if t.is_none() && f.is_none() {
                return None;
            }
            let nothing = || Expr {
                kind: ExprKind::BoolLit(true),
                span: e.span,
            };
            ExprKind::Cond {
                cond: cond.clone(),
                then_expr: boxed(t.unwrap_or_else(nothing)),
                else_expr: boxed(f.unwrap_or_else(nothing)),
            }
        }
        ExprKind::Let {
            ty,
            name,
            value,
            body,
        } => ExprKind::Let {
            ty: ty.clone(),
            name: name.clone(),
            value: value.clone(),
            body: boxed(give_back(body, unreturned)?),
        },
        ExprKind::Trigger(inner, _) => return give_back(inner, unreturned),
        _ => return None,
    };
    Some(Expr { kind, span: e.span })
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
    /// Routines that ghost code may run, so their recursion must terminate (computed once; see
    /// `termination.rs`).
    pub ghost_reached: BTreeSet<String>,
    /// Names whose lookup may reach the wrong declaration: a name declared by two routines
    /// (in two classes, or a class and the top level; constructors aside), and every routine
    /// whose contract — or body, for a function or predicate — uses such a name. Calls,
    /// function applications and predicates are resolved by name, so a routine that uses one
    /// of these is refused ([`ProgramInfo::ambiguous_use`]), never verified against another
    /// class's contract.
    ambiguous: BTreeMap<String, String>,
    /// What a routine (by its span) ensures without saying so:
    /// - `idle(this)`, at the constructor's name, for each constructor of a class with a `run`
    ///   method whose contract names no thread token: VerCors 1.x gives a new thread object
    ///   its `idle` token whatever the constructor says, so such a constructor ensures it
    ///   implicitly (and its body must keep it); one that names a token (2.x writes `ensures
    ///   idle(this);`) gives what it says;
    /// - for a method whose precondition borrows a location with `AutoValue` that its
    ///   postcondition does not name, VerCors' leak check: the borrowed amount given back,
    ///   under the precondition's conditions ([`give_back`]).
    implicit_posts: Vec<(Span, Expr)>,
    /// Each class's lock invariant: `lock_invariant R;` before the class (2.x) or the body of
    /// its predicate `resource lock_invariant() = R;` (1.x).
    lock_invariants: BTreeMap<String, Vec<&'p Expr>>,
    /// Whether locks are committed explicitly (`commit o;`, VerCors 2.x): the program says
    /// `commit` or `committed` somewhere. Otherwise (1.x) a constructor hands the invariant to
    /// the lock where it ends, and every object outside its constructor is committed.
    pub explicit_commit: bool,
    /// Whether the program takes a sequence's `.tail` anywhere: only then does an update state
    /// its tail (`Eval::seq_update`'s fact costs a quantifier per update, and nothing else
    /// reads it).
    pub takes_tails: bool,
    /// Pure functions whose body applies themselves: the only ones whose unfoldings build
    /// applications of their limited twin (see `Eval::limited_triggers`).
    pub self_recursive: BTreeSet<String>,
    /// The program's classes in the order declared: a class as a value (`\type(C)`) is its
    /// position here, from 1.
    classes: Vec<String>,
}

impl<'p> ProgramInfo<'p> {
    pub fn new(program: &'p Program) -> ProgramInfo<'p> {
        let mut info = ProgramInfo {
            fields: BTreeMap::new(),
            routines: BTreeMap::new(),
            order: Vec::new(),
            cyclic: BTreeSet::new(),
            may_not_terminate: BTreeMap::new(),
            ghost_reached: BTreeSet::new(),
            ambiguous: BTreeMap::new(),
            implicit_posts: Vec::new(),
            lock_invariants: BTreeMap::new(),
            explicit_commit: false,
            takes_tails: false,
            self_recursive: BTreeSet::new(),
            classes: Vec::new(),
        };
        let mut next_field = 0i64;
        let mut add =
            |info: &mut ProgramInfo<'p>, class: Option<&'p str>, m: &'p Member| match &m.kind {
                MemberKind::Field(f) => {
                    // A set-typed field is not registered: its uses are refused (`Ty::Set`).
                    let ty = ty_of(&f.ty).ok().filter(|t| {
                        !matches!(t, Ty::Set(_) | Ty::Map(..) | Ty::Bag(_) | Ty::Tuple(..))
                    });
                    if let (Some(class), Some(ty)) = (class, ty) {
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
        info.ambiguous = ambiguous_names(&info.order);
        for item in &program.items {
            let Item::Class(c) = item else { continue };
            info.classes.push(c.name.name.clone());
            let mut inv: Vec<&'p Expr> = clauses(&c.contract, |k| match k {
                ClauseKind::LockInvariant(e) => Some(e),
                _ => None,
            });
            for m in &c.members {
                if let MemberKind::Method(method) = &m.kind {
                    if let (true, MethodBody::Expr(body)) =
                        (method.name.name == "lock_invariant", &method.body)
                    {
                        inv.push(body);
                    }
                }
            }
            if !inv.is_empty() {
                info.lock_invariants.insert(c.name.name.clone(), inv);
            }
        }
        info.explicit_commit = mentions_commit(program, &info.order);
        info.takes_tails = takes_tails(&info.order);
        info.self_recursive = self_recursive(&info.order);
        info.implicit_posts = info
            .order
            .iter()
            .filter(|r| r.is_constructor() && !names_thread_token(r.contract))
            .filter(|r| r.class.is_some_and(|c| info.run_of(c).is_some()))
            .map(|r| {
                let at = r.method.name.span;
                let idle = Expr {
                    kind: ExprKind::Builtin {
                        op: Builtin::Idle,
                        args: vec![Expr {
                            kind: ExprKind::This,
                            span: at,
                        }],
                    },
                    span: at,
                };
                (r.span, idle)
            })
            .collect();
        let leak_checks: Vec<(Span, Expr)> = info
            .order
            .iter()
            .filter(|r| !r.is_pure())
            .flat_map(|r| {
                let returned = auto_value_locations(&r.post());
                let unreturned: BTreeSet<String> = auto_value_locations(&r.pre())
                    .difference(&returned)
                    .cloned()
                    .collect();
                r.pre()
                    .into_iter()
                    .filter_map(|e| give_back(e, &unreturned))
                    .map(|e| (r.span, e))
                    .collect::<Vec<_>>()
            })
            .collect();
        info.implicit_posts.extend(leak_checks);
        info.cyclic = super::recursion::mutually_recursive(&info);
        info.may_not_terminate = super::termination::summaries(&info);
        info.ghost_reached = super::termination::reached_from_ghost(&info);
        info
    }

    /// What the verification of one routine reads from the **bodies** of the other routines,
    /// in words: the facts computed once per program from every body. The verified-method cache
    /// (`crate::cache`) keys a routine on its own text, the other routines' contracts and
    /// expression bodies, and this — not on the other routines' statements.
    ///
    /// Architecture invariant: a new program-wide fact derived from block bodies must appear
    /// here, or a cached verdict could outlive the body it depended on.
    pub fn cross_routine_facts(&self) -> String {
        let mut out = format!("explicit_commit {}\n", self.explicit_commit);
        for name in &self.cyclic {
            out.push_str(&format!("cyclic {name}\n"));
        }
        for (name, why) in &self.may_not_terminate {
            out.push_str(&format!("may_not_terminate {name}: {}\n", why.reason));
        }
        for name in &self.ghost_reached {
            out.push_str(&format!("ghost_reached {name}\n"));
        }
        for (name, why) in &self.ambiguous {
            out.push_str(&format!("ambiguous {name}: {why}\n"));
        }
        out
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

    /// `\type(class)`: the class's number (distinct classes, distinct numbers; none is 0).
    pub fn class_number(&self, class: &str) -> Option<i64> {
        let at = self.classes.iter().position(|c| c == class)?;
        Some(at as i64 + 1)
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

    /// The constructor of `class` that takes `arity` arguments: `Ok(None)` where the class
    /// declares none (`new C()` then gives write permission to every field), an error where
    /// it declares several of that arity (overloads are resolved by arity only).
    pub fn constructor_of(
        &self,
        class: &str,
        arity: usize,
        span: Span,
    ) -> Result<Option<Routine<'p>>, EncodeError> {
        let of_class: Vec<&Routine<'p>> = self
            .order
            .iter()
            .filter(|r| r.class == Some(class) && r.is_constructor())
            .collect();
        if of_class.is_empty() {
            return Ok(None);
        }
        let fitting: Vec<&Routine<'p>> = of_class
            .into_iter()
            .filter(|r| r.method.params.len() == arity)
            .collect();
        match fitting[..] {
            [one] => Ok(Some(*one)),
            _ => Err(EncodeError::Unsupported {
                what: format!(
                    "`new {class}(..)` with {} constructors of {arity} parameters",
                    fitting.len()
                ),
                span,
            }),
        }
    }

    /// Whether `class` declares a constructor.
    pub fn has_constructor(&self, class: &str) -> bool {
        self.order
            .iter()
            .any(|r| r.class == Some(class) && r.is_constructor())
    }

    /// The thread body of `class`: its `run` method (`run { .. }`, or 1.x `void run()`).
    pub fn run_of(&self, class: &str) -> Option<Routine<'p>> {
        self.order.iter().copied().find(|r| {
            r.class == Some(class)
                && r.method.name.name == "run"
                && r.method.params.is_empty()
                && r.has_this()
        })
    }

    /// What routine `r` ensures without saying so ([`ProgramInfo::implicit_posts`]).
    pub fn implicit_post<'s>(&'s self, r: &Routine<'_>) -> impl Iterator<Item = &'s Expr> + 's {
        let span = r.span;
        self.implicit_posts
            .iter()
            .filter(move |(at, _)| *at == span)
            .map(|(_, e)| e)
    }

    /// The lock invariant of `class` (empty: `true`), with `this` the locked object.
    pub fn lock_invariant(&self, class: &str) -> Vec<&'p Expr> {
        self.lock_invariants.get(class).cloned().unwrap_or_default()
    }

    /// The fields of `class`, by name, in declaration order.
    pub fn fields_of(&self, class: &str) -> Vec<(&str, &FieldInfo)> {
        let mut fields: Vec<(&str, &FieldInfo)> = self
            .fields
            .iter()
            .filter(|((c, _), _)| c == class)
            .map(|((_, name), info)| (name.as_str(), info))
            .collect();
        fields.sort_by_key(|(_, info)| -info.index);
        fields
    }

    /// The first use in `r` (contract, body, nested contracts) of a name whose lookup may
    /// reach the wrong declaration, as an "unsupported" error at that use.
    pub fn ambiguous_use(&self, r: &Routine<'_>) -> Option<EncodeError> {
        self.ambiguous_in(|f| super::recursion::routine_exprs(r, f))
    }

    /// [`ProgramInfo::ambiguous_use`] in the contract of `r` only: what a caller, `fork` or
    /// `join` reads of it.
    pub fn ambiguous_in_contract(&self, r: &Routine<'_>) -> Option<EncodeError> {
        self.ambiguous_in(|f| r.contract.for_each_expr(f))
    }

    fn ambiguous_in(&self, walk: impl FnOnce(&mut dyn FnMut(&Expr))) -> Option<EncodeError> {
        if self.ambiguous.is_empty() {
            return None;
        }
        let mut found = None;
        walk(&mut |e: &Expr| {
            e.visit(&mut |x| {
                if let (None, ExprKind::Call { name, .. }) = (&found, &x.kind) {
                    if let Some(why) = self.ambiguous.get(&name.name) {
                        found = Some((name.clone(), why.clone()));
                    }
                }
            })
        });
        let (name, why) = found?;
        Some(EncodeError::Unsupported {
            what: format!(
                "a use of `{}`, {why}: calls are resolved by name, so which declaration is \
                 meant is not decided",
                name.name
            ),
            span: name.span,
        })
    }
}

/// Whether the program says `commit o;` or `committed(o)` anywhere.
fn mentions_commit(program: &Program, order: &[Routine<'_>]) -> bool {
    let mut found = false;
    program.visit_stmts(&mut |s| found |= matches!(s.kind, crate::syntax::StmtKind::Commit(_)));
    for r in order {
        super::recursion::routine_exprs(r, &mut |e| found |= applies(e, &[Builtin::Committed]));
    }
    found
}

/// The pure functions whose body applies themselves.
fn self_recursive(order: &[Routine<'_>]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for r in order.iter().filter(|r| r.method.is_function()) {
        let MethodBody::Expr(body) = &r.method.body else {
            continue;
        };
        let name = &r.method.name.name;
        let mut applies_itself = false;
        body.visit(&mut |x| {
            applies_itself |= matches!(&x.kind, ExprKind::Call { name: n, .. } if n.name == *name)
        });
        if applies_itself {
            out.insert(name.clone());
        }
    }
    out
}

/// Whether some routine's text takes `.tail` (or the 1.x `tail(s)`).
fn takes_tails(order: &[Routine<'_>]) -> bool {
    let mut found = false;
    for r in order {
        super::recursion::routine_exprs(r, &mut |e| {
            e.visit(&mut |x| {
                found |= matches!(&x.kind,
                    ExprKind::Field { name, .. } | ExprKind::Call { name, .. } if name.name == "tail")
            })
        });
    }
    found
}

/// Whether a contract mentions `idle(..)` or `running(..)`.
fn names_thread_token(contract: &Contract) -> bool {
    let mut found = false;
    contract.for_each_expr(&mut |e| found |= applies(e, &[Builtin::Idle, Builtin::Running]));
    found
}

/// Whether `e` applies one of the built-ins `ops` anywhere.
fn applies(e: &Expr, ops: &[Builtin]) -> bool {
    let mut found = false;
    e.visit(&mut |x| found |= matches!(&x.kind, ExprKind::Builtin { op, .. } if ops.contains(op)));
    found
}

/// Names whose lookup may reach the wrong declaration, with why: names declared by more
/// than one routine (constructors aside: `new C(..)` names its class), and every routine
/// whose contract — or whole text, for a function or predicate, which the checker unfolds —
/// uses a name already found (a fixpoint, so a chain of such uses is followed to its end).
fn ambiguous_names(order: &[Routine<'_>]) -> BTreeMap<String, String> {
    let mut declared: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for r in order.iter().filter(|r| !r.is_constructor()) {
        declared
            .entry(&r.method.name.name)
            .or_default()
            .push(match r.class {
                Some(c) => format!("class `{c}`"),
                None => "the top level".to_string(),
            });
    }
    let mut out: BTreeMap<String, String> = declared
        .into_iter()
        .filter(|(_, places)| places.len() > 1)
        .map(|(n, places)| {
            (
                n.to_string(),
                format!("declared in {}", places.join(" and ")),
            )
        })
        .collect();
    loop {
        let mut found = Vec::new();
        for r in order.iter().filter(|r| !r.is_constructor()) {
            let name = &r.method.name.name;
            if out.contains_key(name) {
                continue;
            }
            let mut used = None;
            let mut look = |e: &Expr| {
                e.visit(&mut |x| match &x.kind {
                    ExprKind::Call { name, .. } if out.contains_key(&name.name) => {
                        used.get_or_insert(name.name.clone());
                    }
                    _ => {}
                })
            };
            if r.method.is_function() {
                super::recursion::routine_exprs(r, &mut look);
            } else {
                r.contract.for_each_expr(&mut look);
            }
            if let Some(u) = used {
                found.push((name.clone(), format!("whose specification uses `{u}`")));
            }
        }
        if found.is_empty() {
            return out;
        }
        out.extend(found);
    }
}

/// `t` where it may be an element of `what` (sets, bags, maps, tuples), else unsupported.
pub fn element(t: Ty, what: &str, span: Span) -> Result<Ty, EncodeError> {
    if t.is_element() {
        Ok(t)
    } else {
        Err(EncodeError::Unsupported {
            what: format!(
                "{what} of this element type (elements may be int, boolean or references)"
            ),
            span,
        })
    }
}

/// The checker type of a PVL type, or an "unsupported" error.
pub fn ty_of(ty: &Type) -> Result<Ty, EncodeError> {
    Ok(match &ty.kind {
        TypeKind::Int => Ty::Int,
        TypeKind::Bool => Ty::Bool,
        TypeKind::Frac | TypeKind::ZFrac | TypeKind::Rational => Ty::Perm,
        TypeKind::Array { elem, .. } => match ty_of(elem)? {
            Ty::Set(_) => {
                return Err(EncodeError::Unsupported {
                    what: "sets in the heap (fields and array cells of a set type)".into(),
                    span: ty.span,
                })
            }
            e => Ty::Array(Box::new(e)),
        },
        TypeKind::Class(c) => Ty::Object(c.name.clone()),
        TypeKind::Set(elem) => match ty_of(elem)? {
            e @ Ty::Tuple(..) => Ty::Set(Box::new(e)),
            e => Ty::Set(Box::new(element(e, "sets", ty.span)?)),
        },
        TypeKind::Bag(elem) => Ty::Bag(Box::new(element(ty_of(elem)?, "bags", ty.span)?)),
        TypeKind::Map(key, value) => Ty::Map(
            Box::new(element(ty_of(key)?, "maps", ty.span)?),
            Box::new(element(ty_of(value)?, "maps", ty.span)?),
        ),
        TypeKind::Tuple(a, b) => Ty::Tuple(
            Box::new(element(ty_of(a)?, "tuples", ty.span)?),
            Box::new(element(ty_of(b)?, "tuples", ty.span)?),
        ),
        TypeKind::Option(elem) => match ty_of(&Type {
            kind: TypeKind::Seq(elem.clone()),
            span: ty.span,
        })? {
            Ty::Seq(elem) => Ty::Option(elem),
            _ => unreachable!("a sequence type encodes as a sequence"),
        },
        TypeKind::Seq(elem) => {
            let elem_ty = ty_of(elem)?;
            // Nested to any depth as values; the heap holds two levels at most
            // (`World::heap_kind` refuses deeper ones).
            if elem_ty == Ty::Perm || matches!(elem_ty, Ty::Option(_) | Ty::Set(_)) {
                return Err(EncodeError::Unsupported {
                    what: "sequences (and options) of this element type (elements may be int, \
                           boolean, references, or sequences of those)"
                        .into(),
                    span: ty.span,
                });
            }
            Ty::Seq(Box::new(elem_ty))
        }
        TypeKind::Void | TypeKind::Resource => {
            return Err(EncodeError::Unsupported {
                what: "values of this type (resources are not encoded yet)".into(),
                span: ty.span,
            })
        }
    })
}
