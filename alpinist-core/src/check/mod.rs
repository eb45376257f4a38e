//! Name resolution and type checking: the gate every program passes before anything else.
//!
//! Entry point: [`check`]. It returns the declaration tables ([`Checked`]) or *every* error
//! found (not only the first), each with a span and a stable code (E02xx resolution, E03xx
//! types, E04xx `gpuopt` annotations; see [`CheckError`]).
//!
//! # Guarantees, when [`check`] returns `Ok`
//! - Every name resolves: variables (locals, parameters, `given`/`yields` ghosts, par
//!   iterators, quantifier and `\let` binders, fields of the enclosing class), fields after a
//!   `.`, methods (of the class, of another class by `C.m`/`o.m`, top-level ones), classes,
//!   barrier labels (an enclosing par block), `atomic` names (an enclosing `invariant`) and
//!   ghost arguments (`with`/`then` name `given`/`yields` parameters of the callee).
//! - No name is declared twice in one scope (classes, fields, parameters, locals of one
//!   block, binders of one quantifier); a method, function or predicate only with other
//!   parameters (an overload), and every call reaches exactly one declaration
//!   ([`Checked::overloads`] records which, where a name is overloaded).
//! - Every expression has a type under VerCors' rules, so a later Z3 encoding is well-sorted:
//!   `&&`/`||`/`!` on booleans only (a resource under `&&` is an error, as in VerCors); `**`,
//!   `\forall*`, `Perm`, `PointsTo`, predicate applications and `b ==> R` are resources, and a
//!   boolean is accepted wherever a resource is expected (contract clauses, `assert`);
//!   integers coerce to fractions (`frac`, `zfrac`, `rational`), never back; calls have the
//!   callee's arity and argument types; `Perm`'s location is a field or an array cell.
//! - Writes are legal: no par iterator is assigned; no local or parameter declared outside a
//!   par block is assigned inside it (the threads share it); no sequence element is assigned
//!   (sequences are values).
//! - Ghost code (`ghost` statements, `with` values, `then` assignments) has no real effect, so
//!   the checker, which verifies it, agrees with the interpreter and code generation, which
//!   skip it: it assigns only ghost variables (declared in ghost code, `given`/`yields`), writes
//!   only memory ghost code allocated, holds no par block, barrier, `return` or lock operation,
//!   and calls only methods without a real effect, transitively (`effects.rs`; E0218–E0221).
//! - Specifications (contracts, `assert`, `assume`, `fold`) and pure function bodies call only
//!   pure functions and predicates; `\result` appears only in `ensures` of a method or
//!   function with a result.
//! - `gpuopt` annotations stand before what they target (method, loop, par blocks), are not
//!   duplicated, name a loop's own iteration variable / a matching parameter, and their
//!   numbers are positive literals.
//!
//! # Deliberately not checked here
//! - Anything semantic: permissions, bounds, non-nullness, framing, termination, and whether
//!   an optimisation is applicable — that is `verify` and `transform`.
//! - `invariant`/`atomic`/`lock`/`unlock`: names inside are resolved, the constructs are
//!   accepted; `verify` reports them unsupported.
//! - Java-style definite assignment, missing returns on some paths, dead code.
//! - Where VerCors is more permissive than we model (fraction range coercions, set and bag
//!   operators), we accept: a false error on a correct program is worse than a missing check.
//!   `Ty::Unknown` marks expressions that already failed, so one mistake gives one error.

mod effects;
mod env;
mod error;
mod gpuopt;
mod resolve;
mod types;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};

pub use env::{ClassId, ClassInfo, FieldInfo, MethodKind, MethodSig, ParamInfo, Tables, Ty};
pub use error::{CheckError, CheckWarning};
pub use types::{assignable, comparable};

use crate::syntax::{
    Builtin, ClauseKind, Expr, ExprKind, Item, Member, MemberKind, Method, ModelMember, Program,
    Span, StmtKind,
};
use env::method_kind;
use resolve::Checker;

/// What later stages need from a checked program.
#[derive(Clone, Debug)]
pub struct Checked {
    /// Classes (indexed by [`ClassId`]) with their fields and method signatures, and the
    /// top-level methods, functions and predicates.
    pub tables: Tables,
    pub warnings: Vec<CheckWarning>,
    /// Misplaced or malformed `gpuopt` annotations (E04xx), in source order. They never stop
    /// `check` or `verify` (a `gpuopt` line means nothing to a proof); `optimise` refuses
    /// the program on them (exit 2).
    pub gpuopt_errors: Vec<CheckError>,
    /// Which declaration each use of an overloaded name reaches.
    pub overloads: Overloads,
}

/// Overloading resolved: where one scope (a class, or the top level) declares a name more than
/// once with different parameters, which declaration each call reaches; and where several
/// scopes declare one name (`List.is_empty`, `Seq.is_empty`), which class's. Later stages key
/// routines by name; [`Overloads::apply`] gives them a program in which every overload has a
/// name of its own, [`Overloads::apply_qualified`] one in which every routine does.
#[derive(Clone, Debug, Default)]
pub struct Overloads {
    /// The span of an overloaded declaration's name → its [`Tables::overload_name`].
    pub declarations: HashMap<Span, String>,
    /// The span of the name of a class's routine whose name another scope declares too → the
    /// name the checker knows it by (see [`qualified_declarations`]).
    pub qualified: HashMap<Span, String>,
    /// The span of the name at a call of a declaration in either map → the span of the
    /// declaration's name.
    pub calls: HashMap<Span, Span>,
    /// Calls of a static routine through its class's name (`Seq.empty()`), by the span of the
    /// routine's name: [`Overloads::apply_qualified`] leaves the class out, as the routine has
    /// no `this` and its name is its own there.
    pub class_receivers: HashSet<Span>,
}

impl Overloads {
    /// `program` (the one checked) with every overloaded declaration and every call of one
    /// renamed to the overload's own name, `sumArray(int[], int)`; `None` where nothing is
    /// overloaded. Spans stay, so every diagnostic still points at the source.
    pub fn apply(&self, program: &Program) -> Option<Program> {
        self.rename(program, &self.declarations, false)
    }

    /// [`Overloads::apply`], and every routine of a class whose name another scope declares
    /// too renamed with its class, `List.is_empty`: what the checker, which looks routines up
    /// by name, needs (the interpreter and the code generator look them up by class).
    pub fn apply_qualified(&self, program: &Program) -> Option<Program> {
        let mut names = self.declarations.clone();
        names.extend(self.qualified.iter().map(|(k, v)| (*k, v.clone())));
        self.rename(program, &names, true)
    }

    /// `program` with the declarations in `names` and their calls renamed, and with
    /// `qualified` ([`Overloads::apply_qualified`]), the class names before static calls left
    /// out.
    fn rename(
        &self,
        program: &Program,
        names: &HashMap<Span, String>,
        qualified: bool,
    ) -> Option<Program> {
        let drops_classes = qualified && !self.class_receivers.is_empty();
        if names.is_empty() && !drops_classes {
            return None;
        }
        // The names some class's routine is renamed away from, as declared.
        let shared: HashSet<String> = match qualified {
            true => (program.members().into_iter())
                .filter_map(|(_, m)| match &m.kind {
                    MemberKind::Method(method)
                        if self.qualified.contains_key(&method.name.span) =>
                    {
                        Some(method.name.name.clone())
                    }
                    _ => None,
                })
                .collect(),
            false => HashSet::new(),
        };
        let rename_calls = |e: &mut Expr| self.rename_calls(e, names, &shared, qualified);
        let mut renamed = program.clone();
        for item in &mut renamed.items {
            if let Item::Class(class) = item {
                class.contract.for_each_expr_mut(&mut |e| rename_calls(e));
            }
        }
        for member in renamed.members_mut() {
            if let MemberKind::Method(method) = &mut member.kind {
                if let Some(name) = names.get(&method.name.span) {
                    method.name.name = name.clone();
                }
            }
            member.for_each_expr_deep_mut(&mut |e| rename_calls(e));
        }
        Some(renamed)
    }

    /// [`Overloads::rename`] in `e`; `shared`: the names some class's routine was renamed
    /// away from.
    fn rename_calls(
        &self,
        e: &mut Expr,
        names: &HashMap<Span, String>,
        shared: &HashSet<String>,
        qualified: bool,
    ) {
        if let ExprKind::Call { name, receiver, .. } = &mut e.kind {
            if let Some(chosen) = self.calls.get(&name.span).and_then(|d| names.get(d)) {
                name.name = chosen.clone();
            } else if shared.contains(name.name.as_str()) {
                // A call of a shared name the type checker did not resolve (none is known):
                // a name no routine has, so that the checker refuses it rather than take the
                // declaration that kept the name.
                name.name = format!("{}(unresolved)", name.name);
            }
            if qualified && self.class_receivers.contains(&name.span) {
                *receiver = None;
            }
        }
        e.for_each_child_mut(&mut |c| self.rename_calls(c, names, shared, qualified));
    }
}

/// `program` with its overloads renamed apart ([`Overloads::apply`]) for the stages that key
/// routines by name (`verify`, the interpreter): `None` where no scope declares a name twice
/// (checked without running the checker) or where the program does not check — its
/// overloaded names then stay ambiguous, and those stages refuse their uses.
pub fn resolve_overloads(program: &Program) -> Option<Program> {
    let scopes = routine_names_by_scope(program);
    if !scopes.iter().any(|names| declares_twice(names)) {
        return None;
    }
    check(program).ok()?.overloads.apply(program)
}

/// [`resolve_overloads`], and the routines of a class whose name another scope declares too
/// renamed with their class ([`Overloads::apply_qualified`]), for the checker, which looks
/// routines up by name: `None` where neither is needed or the program does not check (its
/// names then stay ambiguous, and the checker refuses their uses).
pub fn name_routines_apart(program: &Program) -> Option<Program> {
    let scopes = routine_names_by_scope(program);
    let mut scopes_declaring: HashMap<&str, usize> = HashMap::new();
    for names in &scopes {
        let mut once: Vec<&str> = names.clone();
        once.sort_unstable();
        once.dedup();
        for name in once.into_iter().filter(|n| !is_looked_up_by_class(n)) {
            *scopes_declaring.entry(name).or_default() += 1;
        }
    }
    let shared = scopes_declaring.values().any(|&n| n > 1);
    if !shared
        && !scopes.iter().any(|names| declares_twice(names))
        && !calls_through_a_class(program)
    {
        return None;
    }
    check(program).ok()?.overloads.apply_qualified(program)
}

/// The names of the methods, functions and predicates (constructors aside) of each scope:
/// every class, then the top level.
fn routine_names_by_scope(program: &Program) -> Vec<Vec<&str>> {
    fn names<'m>(members: impl Iterator<Item = &'m Member>) -> Vec<&'m str> {
        members
            .filter_map(|m| match &m.kind {
                MemberKind::Method(method) if method_kind(method) != MethodKind::Constructor => {
                    Some(method.name.name.as_str())
                }
                _ => None,
            })
            .collect()
    }
    let mut scopes: Vec<Vec<&str>> = program
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Class(c) => Some(names(c.members.iter())),
            Item::Member(_) => None,
        })
        .collect();
    scopes.push(names(program.items.iter().filter_map(|i| match i {
        Item::Member(m) => Some(m),
        Item::Class(_) => None,
    })));
    scopes
}

/// Whether some call's receiver is a bare name that names a class (`Seq.empty()`, unless a
/// variable of that name hides the class: the checker decides).
fn calls_through_a_class(program: &Program) -> bool {
    let classes: std::collections::HashSet<&str> = program
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Class(c) => Some(c.name.name.as_str()),
            Item::Member(_) => None,
        })
        .collect();
    let mut found = false;
    let mut look = |e: &Expr| {
        e.visit(&mut |x| {
            if let ExprKind::Call {
                receiver: Some(r), ..
            } = &x.kind
            {
                found |= matches!(&r.kind, ExprKind::Name(n) if classes.contains(n.name.as_str()));
            }
        })
    };
    for item in &program.items {
        if let Item::Class(c) = item {
            c.contract.for_each_expr(&mut look);
        }
    }
    for (_, member) in program.members() {
        member.for_each_expr_deep(&mut look);
    }
    found
}

fn declares_twice(names: &[&str]) -> bool {
    let mut seen = std::collections::HashSet::new();
    names.iter().any(|name| !seen.insert(*name))
}

/// Names the checker finds by class, not by name, whatever other classes declare: `run` (what
/// `fork` starts) and `lock_invariant` (what `lock` takes).
fn is_looked_up_by_class(name: &str) -> bool {
    matches!(name, "run" | "lock_invariant")
}

/// Every method, function or predicate whose scope declares its name more than once, by the
/// span of its name, with its [`Tables::overload_name`].
fn overloaded_declarations(tables: &Tables) -> HashMap<Span, String> {
    let scopes = tables
        .classes
        .iter()
        .map(|c| c.methods.as_slice())
        .chain([tables.globals.as_slice()]);
    let mut out = HashMap::new();
    for scope in scopes {
        for sig in scope {
            if scope.iter().filter(|other| other.name == sig.name).count() > 1 {
                out.insert(sig.span, tables.overload_name(sig));
            }
        }
    }
    out
}

/// Every routine of a class (constructors, `run` and `lock_invariant` aside) whose name
/// another class or the top level declares too, by the span of its name, with `Class.name`
/// (`Class.name(int)` where its class overloads the name), and every top-level routine of
/// such a name with its own name. A `.` is in no identifier, so the name is no other
/// routine's.
fn qualified_declarations(
    tables: &Tables,
    overloads: &HashMap<Span, String>,
) -> HashMap<Span, String> {
    let declares = |scope: &[MethodSig], name: &str| scope.iter().any(|m| m.name == name);
    let mut out = HashMap::new();
    for (i, class) in tables.classes.iter().enumerate() {
        for sig in &class.methods {
            if sig.kind == MethodKind::Constructor || is_looked_up_by_class(&sig.name) {
                continue;
            }
            let elsewhere = declares(&tables.globals, &sig.name)
                || (tables.classes.iter().enumerate())
                    .any(|(j, other)| j != i && declares(&other.methods, &sig.name));
            if elsewhere {
                let own = overloads.get(&sig.span).unwrap_or(&sig.name);
                out.insert(sig.span, format!("{}.{own}", class.name));
            }
        }
    }
    // The top level's keep their names, but their calls are recorded too: an unrecorded call
    // of a shared name is refused (see `Overloads::rename_calls`).
    for sig in &tables.globals {
        if tables
            .classes
            .iter()
            .any(|c| declares(&c.methods, &sig.name))
            && !is_looked_up_by_class(&sig.name)
        {
            let own = overloads.get(&sig.span).unwrap_or(&sig.name);
            out.insert(sig.span, own.clone());
        }
    }
    out
}

impl Checked {
    pub fn classes(&self) -> &[ClassInfo] {
        &self.tables.classes
    }
}

/// Resolves and type-checks `program`. Never panics, whatever the IR.
pub fn check(program: &Program) -> Result<Checked, Vec<CheckError>> {
    // Models are read and printed, not checked: the first construct says why; the rest, and
    // what uses them (`m.create(..)`, `m.state(..)`: unknown methods), would only repeat it.
    if let Some(first) = model_constructs(program).into_iter().next() {
        return Err(vec![first]);
    }
    let mut errors = Vec::new();
    let tables = build_tables(program, &mut errors);

    let declarations = overloaded_declarations(&tables);
    let qualified = qualified_declarations(&tables, &declarations);
    let mut checker = Checker::new(&tables);
    checker.renamed = declarations
        .keys()
        .chain(qualified.keys())
        .copied()
        .collect();
    let mut class_no = 0u32;
    for item in &program.items {
        match item {
            Item::Class(class) => {
                let id = ClassId(class_no);
                checker.check_class_contract(&class.contract, id);
                for member in &class.members {
                    checker.check_member(member, Some(id));
                }
                class_no += 1;
            }
            Item::Member(member) => checker.check_member(member, None),
        }
    }
    errors.append(&mut checker.errors);
    errors.append(&mut std::mem::take(&mut checker.effects).finish());
    let warnings = std::mem::take(&mut checker.warnings);
    let overloads = Overloads {
        declarations,
        qualified,
        calls: std::mem::take(&mut checker.renamed_calls),
        class_receivers: std::mem::take(&mut checker.class_receivers),
    };
    drop(checker);

    let (mut gpuopt_errors, mut errors): (Vec<CheckError>, Vec<CheckError>) =
        errors.into_iter().partition(CheckError::is_gpuopt);
    if errors.is_empty() {
        gpuopt_errors.sort_by_key(|e| e.span().start);
        Ok(Checked {
            tables,
            warnings,
            gpuopt_errors,
            overloads,
        })
    } else {
        // Source order; the sort is stable, so errors at one place keep their discovery order.
        errors.sort_by_key(|e| e.span().start);
        Err(errors)
    }
}

/// Pass 1: every class, field and method signature, so that bodies may refer to declarations
/// that come later in the file.
fn build_tables(program: &Program, errors: &mut Vec<CheckError>) -> Tables {
    let mut tables = Tables::default();
    for item in &program.items {
        if let Item::Class(class) = item {
            let id = ClassId(tables.classes.len() as u32);
            match tables.class_index.get(class.name.name.as_str()) {
                Some(first) => errors.push(CheckError::Duplicate {
                    name: class.name.name.clone(),
                    span: class.name.span,
                    first: tables.classes[first.0 as usize].span,
                }),
                None => {
                    tables.class_index.insert(class.name.name.clone(), id);
                }
            }
            tables.classes.push(ClassInfo {
                name: class.name.name.clone(),
                span: class.name.span,
                fields: Vec::new(),
                methods: Vec::new(),
                constructors: Vec::new(),
                field_index: HashMap::new(),
                method_index: HashMap::new(),
            });
        }
    }

    // Signatures need all class names; types are resolved silently here and reported once,
    // when the member itself is checked (fields excepted: they are reported here).
    let mut class_no = 0usize;
    let mut globals = Vec::new();
    for item in &program.items {
        match item {
            Item::Class(class) => {
                let mut info = std::mem::replace(
                    &mut tables.classes[class_no],
                    ClassInfo {
                        name: String::new(),
                        span: Default::default(),
                        fields: Vec::new(),
                        methods: Vec::new(),
                        constructors: Vec::new(),
                        field_index: HashMap::new(),
                        method_index: HashMap::new(),
                    },
                );
                for member in &class.members {
                    match &member.kind {
                        MemberKind::Field(field) => {
                            let ty = tables.resolve_type(&field.ty.kind, errors);
                            if let Some(&first) = info.field_index.get(field.name.name.as_str()) {
                                errors.push(CheckError::Duplicate {
                                    name: field.name.name.clone(),
                                    span: field.name.span,
                                    first: info.fields[first].span,
                                });
                            } else {
                                info.field_index
                                    .insert(field.name.name.clone(), info.fields.len());
                            }
                            info.fields.push(FieldInfo {
                                name: field.name.name.clone(),
                                ty,
                                span: field.name.span,
                            });
                        }
                        MemberKind::Method(method) => {
                            let sig = signature(&tables, member, method);
                            if sig.kind == MethodKind::Constructor {
                                if method.name.name != class.name.name
                                    && method.name.name != "constructor"
                                {
                                    errors.push(CheckError::ConstructorName {
                                        name: method.name.name.clone(),
                                        class: class.name.name.clone(),
                                        span: method.name.span,
                                    });
                                }
                                info.constructors.push(sig);
                            } else {
                                add_method(&mut info.method_index, &mut info.methods, sig, errors);
                            }
                        }
                    }
                }
                tables.classes[class_no] = info;
                class_no += 1;
            }
            Item::Member(member) => {
                if let MemberKind::Method(method) = &member.kind {
                    globals.push(signature(&tables, member, method));
                }
                // A top-level field cannot be written in PVL; a parser that produced one gets
                // its gpuopts reported by `check_member`, nothing else.
            }
        }
    }
    let mut global_index = HashMap::new();
    let mut global_list = Vec::new();
    for sig in globals {
        add_method(&mut global_index, &mut global_list, sig, errors);
    }
    tables.globals = global_list;
    tables.global_index = global_index;
    tables
}

fn add_method(
    index: &mut HashMap<String, usize>,
    list: &mut Vec<MethodSig>,
    sig: MethodSig,
    errors: &mut Vec<CheckError>,
) {
    // Overloading: one name may be declared again with other parameters (their number or
    // types); calls choose by their arguments (`Checker::select_overload`).
    let same_parameters = |other: &MethodSig| {
        other.name == sig.name
            && other.params.len() == sig.params.len()
            && other
                .params
                .iter()
                .zip(&sig.params)
                .all(|(a, b)| a.ty == b.ty)
    };
    if let Some(first) = list.iter().find(|other| same_parameters(other)) {
        errors.push(CheckError::Duplicate {
            name: sig.name.clone(),
            span: sig.span,
            first: first.span,
        });
    }
    index.entry(sig.name.clone()).or_insert(list.len());
    list.push(sig);
}

fn signature(tables: &Tables, member: &Member, method: &Method) -> MethodSig {
    let mut ignored = Vec::new();
    let type_params: Vec<String> = method.type_params.iter().map(|t| t.name.clone()).collect();
    let mut param = |p: &crate::syntax::Param| ParamInfo {
        name: p.name.name.clone(),
        ty: tables.resolve_type_in(&p.ty.kind, &type_params, &mut ignored),
        span: p.name.span,
    };
    let params = method.params.iter().map(&mut param).collect();
    let mut given = Vec::new();
    let mut yields = Vec::new();
    for clause in &member.contract.clauses {
        match &clause.kind {
            ClauseKind::Given(p) => given.push(param(p)),
            ClauseKind::Yields(p) => yields.push(param(p)),
            _ => {}
        }
    }
    let return_type = method.return_type.as_ref().map_or(Ty::Void, |t| {
        tables.resolve_type_in(&t.kind, &type_params, &mut ignored)
    });
    MethodSig {
        name: method.name.name.clone(),
        kind: method_kind(method),
        is_static: method.modifiers.contains(&crate::syntax::Modifier::Static),
        params,
        given,
        yields,
        return_type,
        span: method.name.span,
        type_params,
    }
}

/// Every use of VerCors' process-algebra models in `program` (declarations, their clauses and
/// members, `action` blocks, `HPerm`/`APerm`), in source order: not supported yet (E0227).
fn model_constructs(program: &Program) -> Vec<CheckError> {
    let mut out = Vec::new();
    let mut found = |what: &'static str, span: Span| {
        out.push(CheckError::ModelNotSupported { what, span });
    };
    for item in &program.items {
        if let Item::Class(class) = item {
            if class.is_model {
                found("a `model` declaration", class.name.span);
            }
        }
    }
    for (_, member) in program.members() {
        for clause in &member.contract.clauses {
            match clause.kind {
                ClauseKind::Modifies(_) => found("a `modifies` clause", clause.span),
                ClauseKind::Accessible(_) => found("an `accessible` clause", clause.span),
                _ => {}
            }
        }
        if let MemberKind::Method(method) = &member.kind {
            match method.model_member {
                Some(ModelMember::Action) => found("an `action` declaration", method.name.span),
                Some(ModelMember::Process) => found("a `process` declaration", method.name.span),
                None => {}
            }
        }
        member.for_each_expr_deep(&mut |e| {
            e.visit(&mut |e| {
                if let ExprKind::Builtin {
                    op: op @ (Builtin::HPerm | Builtin::APerm),
                    ..
                } = &e.kind
                {
                    found(
                        if *op == Builtin::HPerm {
                            "`HPerm`"
                        } else {
                            "`APerm`"
                        },
                        e.span,
                    );
                }
            });
        });
    }
    program.visit_stmts(&mut |s| {
        if let StmtKind::Action { .. } = s.kind {
            found("an `action` block", s.span);
        }
        for contract in s.own_contracts() {
            for clause in &contract.clauses {
                if let ClauseKind::Modifies(_) | ClauseKind::Accessible(_) = clause.kind {
                    found("a `modifies` or `accessible` clause", clause.span);
                }
            }
        }
    });
    out.sort_by_key(|e| e.span().start);
    out
}
