//! What a model declares: its fields, actions and processes, collected where every one is in
//! the subset lowered.

use std::collections::{BTreeMap, BTreeSet};

use crate::syntax::*;

pub(super) struct Action {
    pub(super) params: Vec<Param>,
    pub(super) modifies: Vec<String>,
    pub(super) accessible: Vec<String>,
    pub(super) ensures: Vec<Expr>,
}

pub(super) struct Process {
    pub(super) params: Vec<Param>,
    pub(super) body: Expr,
    /// `None` where the process states no `modifies` (then it claims nothing about the
    /// fields its postcondition does not name).
    pub(super) modifies: Option<Vec<String>>,
    pub(super) accessible: Vec<String>,
    pub(super) requires: Vec<Expr>,
    pub(super) ensures: Vec<Expr>,
    pub(super) span: Span,
}

pub(super) struct Model {
    /// Field name and type, in declaration order.
    pub(super) fields: Vec<(String, Type)>,
    pub(super) actions: BTreeMap<String, Action>,
    pub(super) processes: BTreeMap<String, Process>,
}

impl Model {
    /// Whether no action modifies `x`: then it keeps its value while a process runs.
    pub(super) fn frozen(&self, x: &str) -> bool {
        !self
            .actions
            .values()
            .any(|a| a.modifies.iter().any(|m| m == x))
    }

    pub(super) fn field_names(&self) -> BTreeSet<String> {
        self.fields.iter().map(|(f, _)| f.clone()).collect()
    }
}

pub(super) fn scalar(ty: &Type) -> bool {
    matches!(ty.kind, TypeKind::Int | TypeKind::Bool)
}

/// The models, if every one is in the subset lowered.
pub(super) fn collect(program: &Program) -> Option<BTreeMap<String, Model>> {
    let mut models = BTreeMap::new();
    for item in &program.items {
        let Item::Class(class) = item else { continue };
        if !class.is_model {
            continue;
        }
        if !class.contract.clauses.is_empty() {
            return None;
        }
        let mut model = Model {
            fields: Vec::new(),
            actions: BTreeMap::new(),
            processes: BTreeMap::new(),
        };
        for member in &class.members {
            if !member.gpuopts.is_empty() {
                return None;
            }
            match &member.kind {
                MemberKind::Field(f) => {
                    if !member.contract.clauses.is_empty() || !scalar(&f.ty) {
                        return None;
                    }
                    model.fields.push((f.name.name.clone(), f.ty.clone()));
                }
                // VerCors 1.x declares an action as a process without a body.
                MemberKind::Method(m)
                    if m.model_member == Some(ModelMember::Action)
                        || (m.model_member == Some(ModelMember::Process)
                            && matches!(m.body, MethodBody::Abstract)) =>
                {
                    if !m.params.iter().all(|p| scalar(&p.ty)) {
                        return None;
                    }
                    let mut action = Action {
                        params: m.params.clone(),
                        modifies: Vec::new(),
                        accessible: Vec::new(),
                        ensures: Vec::new(),
                    };
                    for clause in &member.contract.clauses {
                        match &clause.kind {
                            ClauseKind::Modifies(fs) => {
                                action.modifies.extend(fs.iter().map(|f| f.name.clone()))
                            }
                            ClauseKind::Accessible(fs) => {
                                action.accessible.extend(fs.iter().map(|f| f.name.clone()))
                            }
                            ClauseKind::Ensures(e) => action.ensures.push(e.clone()),
                            _ => return None,
                        }
                    }
                    model.actions.insert(m.name.name.clone(), action);
                }
                MemberKind::Method(m) if m.model_member == Some(ModelMember::Process) => {
                    let MethodBody::Expr(body) = &m.body else {
                        return None;
                    };
                    if !m.params.iter().all(|p| scalar(&p.ty)) {
                        return None;
                    }
                    let mut process = Process {
                        params: m.params.clone(),
                        body: body.clone(),
                        modifies: None,
                        accessible: Vec::new(),
                        requires: Vec::new(),
                        ensures: Vec::new(),
                        span: m.name.span,
                    };
                    for clause in &member.contract.clauses {
                        match &clause.kind {
                            ClauseKind::Modifies(fs) => process
                                .modifies
                                .get_or_insert_with(Vec::new)
                                .extend(fs.iter().map(|f| f.name.clone())),
                            ClauseKind::Accessible(fs) => {
                                process.accessible.extend(fs.iter().map(|f| f.name.clone()))
                            }
                            ClauseKind::Requires(e) => process.requires.push(e.clone()),
                            ClauseKind::Ensures(e) => process.ensures.push(e.clone()),
                            _ => return None,
                        }
                    }
                    model.processes.insert(m.name.name.clone(), process);
                }
                MemberKind::Method(_) => return None,
            }
        }
        let fields = model.field_names();
        for action in model.actions.values() {
            // What an action's contract may name: the fields it modifies or may read, its
            // parameters. A field it may read must be one no action modifies.
            let named: BTreeSet<&str> = action
                .modifies
                .iter()
                .chain(&action.accessible)
                .map(String::as_str)
                .collect();
            if !named.iter().all(|f| fields.contains(*f))
                || !action.accessible.iter().all(|f| model.frozen(f))
            {
                return None;
            }
            let mut names = BTreeSet::new();
            let mut this = false;
            for e in &action.ensures {
                e.names(&mut names);
                e.visit(&mut |x| this |= matches!(x.kind, ExprKind::This));
            }
            // Fields are named bare in an action's contract (`this.x` is not lowered).
            if this {
                return None;
            }
            let params: BTreeSet<&str> =
                action.params.iter().map(|p| p.name.name.as_str()).collect();
            // A parameter named like a field would be read as the field.
            if params.iter().any(|p| fields.contains(*p)) {
                return None;
            }
            if !names
                .iter()
                .all(|n| named.contains(n.as_str()) || params.contains(n.as_str()))
            {
                return None;
            }
        }
        for process in model.processes.values() {
            let mut names = BTreeSet::new();
            let mut this = false;
            for e in process.requires.iter().chain(&process.ensures) {
                e.names(&mut names);
                e.visit(&mut |x| this |= matches!(x.kind, ExprKind::This));
            }
            let params: BTreeSet<&str> = process
                .params
                .iter()
                .map(|p| p.name.name.as_str())
                .collect();
            let stated = process.modifies.iter().flatten().chain(&process.accessible);
            if this
                || !names
                    .iter()
                    .all(|n| fields.contains(n) || params.contains(n.as_str()))
                || !stated.into_iter().all(|f| fields.contains(f))
            {
                return None;
            }
        }
        models.insert(class.name.name.clone(), model);
    }
    Some(models)
}
