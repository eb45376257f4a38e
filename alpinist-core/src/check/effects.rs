//! Ghost code has no real effect.
//!
//! The checker verifies ghost code (`ghost` statements, `with { }` values, `then { }`
//! assignments and the methods they call) as if it ran, but the interpreter skips it and code
//! generation erases it. The three agree only if nothing ghost can change what runs, so ghost
//! code may assign ghost variables (declared in ghost code, or `given`/`yields` parameters) and
//! write the heap only inside arrays and objects that ghost code itself allocated; it may not
//! contain a par block, a barrier, a `return` or a lock operation, nor call a method that may
//! have a real effect.
//!
//! What is decided while walking (a write to a non-ghost variable, a par block in ghost code)
//! is reported by `resolve.rs` at once. What needs the whole program is collected here in an
//! [`EffectLog`] and decided by [`EffectLog::finish`] once every method has been walked:
//! - Whether a write reaches freshly allocated memory, flow-insensitively: a local's *fresh
//!   depth* is the minimum over every store into it (its initialisation included) of the
//!   store's path depth plus the number of levels the stored value allocated (`new int[N]` one,
//!   `new int[M][N]` two, `new C()` one, `null` all of them, anything else none). A write `x[i]`
//!   (depth 1), `x[i][j]` (2), `x.f` (1) is to fresh memory iff its depth is at most `x`'s fresh
//!   depth. So `ghost int[] b = new int[N]; ghost b[0] = 1;` writes fresh memory, but not once
//!   some statement anywhere in the method stores another array into `b` (an alias).
//! - Each method's effect summary, transitively over calls: it may have a real effect when its
//!   body writes memory it did not allocate (a field, a cell of a parameter; in a constructor,
//!   `this.f` itself is the new object's), contains a par block, a barrier or a lock
//!   operation, or calls a method that may. Bodiless methods and pure functions have none: a
//!   lemma's contract is trusted, as `verify` reports.

use std::collections::{HashMap, HashSet};

use crate::syntax::Span;

use super::error::CheckError;

/// What the location an assignment writes is reached from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Root {
    /// A local variable or parameter, by its declaration's span.
    Var { decl: Span, ghost: bool },
    /// The current object: `this.f`, or a bare field name.
    This,
    /// Anything else (a call's result, a static field): never fresh.
    Other,
}

/// A write to a heap location (`depth` ≥ 1 steps of `[i]` or `.f` below the root).
#[derive(Debug)]
struct HeapWrite {
    method: Option<Span>,
    root: Root,
    depth: usize,
    span: Span,
    in_ghost: bool,
    in_constructor: bool,
}

#[derive(Debug)]
struct Call {
    caller: Option<Span>,
    callee: Span,
    callee_name: String,
    span: Span,
    in_ghost: bool,
}

/// Why a method may have a real effect: the first place found, for the diagnostic.
#[derive(Clone, Debug)]
struct Witness {
    span: Span,
    why: String,
}

/// What the walk records for the decisions that need the whole program. Methods are keyed by
/// the span of their name (unique in a file).
#[derive(Debug, Default)]
pub(crate) struct EffectLog {
    /// Locals by declaration span: the fresh depth so far (see the module docs). A variable
    /// missing here (a parameter) has none.
    fresh_depth: HashMap<Span, usize>,
    heap_writes: Vec<HeapWrite>,
    /// Par blocks, barriers and lock operations, by method.
    direct: Vec<(Span, Witness)>,
    calls: Vec<Call>,
    /// Ghost calls already reported, so a call is reported once.
    reported: HashSet<Span>,
}

/// How many levels of fresh memory `value` refers to.
pub(crate) fn allocated_levels(value: Option<&crate::syntax::Expr>) -> usize {
    use crate::syntax::ExprKind;
    match value.map(|v| &v.kind) {
        // An uninitialised local or `null` refers to nothing: every write through it would
        // need a later store, which is counted on its own.
        None | Some(ExprKind::Null) => usize::MAX,
        Some(ExprKind::NewArray { dims, .. }) => dims.len(),
        // The constructor may store references it was given in the object's fields, so only
        // the object's own fields are fresh.
        Some(ExprKind::New { .. }) => 1,
        Some(_) => 0,
    }
}

impl EffectLog {
    /// `decl` (a local) receives, at `depth` steps below it, a value that allocated `levels`.
    pub fn store(&mut self, decl: Span, depth: usize, levels: usize) {
        let fresh = depth.saturating_add(levels);
        self.fresh_depth
            .entry(decl)
            .and_modify(|d| *d = (*d).min(fresh))
            .or_insert(fresh);
    }

    pub fn heap_write(
        &mut self,
        method: Option<Span>,
        (root, depth): (Root, usize),
        span: Span,
        in_ghost: bool,
        in_constructor: bool,
    ) {
        self.heap_writes.push(HeapWrite {
            method,
            root,
            depth,
            span,
            in_ghost,
            in_constructor,
        });
    }

    /// A par block, barrier or lock operation in `method`'s body.
    pub fn direct_effect(&mut self, method: Option<Span>, span: Span, why: &str) {
        if let Some(m) = method {
            self.direct.push((
                m,
                Witness {
                    span,
                    why: why.to_string(),
                },
            ));
        }
    }

    pub fn call(
        &mut self,
        caller: Option<Span>,
        callee: Span,
        callee_name: &str,
        span: Span,
        in_ghost: bool,
    ) {
        self.calls.push(Call {
            caller,
            callee,
            callee_name: callee_name.to_string(),
            span,
            in_ghost,
        });
    }

    fn is_fresh(&self, w: &HeapWrite) -> bool {
        match w.root {
            Root::Var { decl, .. } => self.fresh_depth.get(&decl).copied().unwrap_or(0) >= w.depth,
            // A constructor's own object: its fields, not what they point to.
            Root::This => w.in_constructor && w.depth <= 1,
            Root::Other => false,
        }
    }

    /// The errors that need the whole program: ghost writes to memory ghost code did not
    /// allocate (E0219) and ghost calls of methods that may have a real effect (E0220).
    pub fn finish(mut self) -> Vec<CheckError> {
        let mut errors = Vec::new();
        let mut effectful: HashMap<Span, Witness> = HashMap::new();
        for (method, witness) in &self.direct {
            effectful.entry(*method).or_insert_with(|| witness.clone());
        }
        for w in &self.heap_writes {
            let fresh = self.is_fresh(w);
            if let (Some(m), false) = (w.method, fresh) {
                effectful.entry(m).or_insert_with(|| Witness {
                    span: w.span,
                    why: "writes a heap location it did not allocate".into(),
                });
            }
            let ghost_root = matches!(w.root, Root::Var { ghost: true, .. });
            if w.in_ghost && !(fresh && ghost_root) {
                errors.push(CheckError::GhostWritesHeap { span: w.span });
            }
        }
        // Transitively over calls, to a fixpoint (recursion included).
        loop {
            let mut changed = false;
            for c in &self.calls {
                let Some(caller) = c.caller else { continue };
                if effectful.contains_key(&caller) || !effectful.contains_key(&c.callee) {
                    continue;
                }
                effectful.insert(
                    caller,
                    Witness {
                        span: c.span,
                        why: format!("calls `{}`, which may have a real effect", c.callee_name),
                    },
                );
                changed = true;
            }
            if !changed {
                break;
            }
        }
        for c in &self.calls {
            if !c.in_ghost || !self.reported.insert(c.span) {
                continue;
            }
            if let Some(w) = effectful.get(&c.callee) {
                errors.push(CheckError::GhostCallHasEffect {
                    name: c.callee_name.clone(),
                    span: c.span,
                    effect: w.span,
                    why: w.why.clone(),
                });
            }
        }
        errors
    }
}
