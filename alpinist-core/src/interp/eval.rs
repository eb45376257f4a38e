//! Expression evaluation: arithmetic (checked `i128`, truncating `/` `%`), logic with
//! short-circuit, array reads (recorded for race detection), `new int[..]`, calls to methods
//! and pure functions, `\let`, and quantifiers enumerated over computable bounds.
//!
//! Whatever has no runtime meaning (permissions, fractions, `\old`, `\result`, sets, bags,
//! maps, objects, predicates, ghost variables) is [`InterpError::Unsupported`]; `assert` turns that
//! into "skipped", code turns it into an error.

use crate::syntax::{
    BinaryOp, Binder, Builtin, CollectionKind, Expr, ExprKind, Quantifier, QuantifierKind, Span,
    TypeKind, UnaryOp,
};

use super::exec::Env;
use super::{Access, ArrayRef, InterpError, Machine, SeqRef, Value};

impl<'p> Machine<'p, '_> {
    pub(crate) fn eval(&mut self, env: &mut Env<'p>, e: &'p Expr) -> Result<Value, InterpError> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.eval_inner(env, e))
    }

    pub(crate) fn eval_bool(
        &mut self,
        env: &mut Env<'p>,
        e: &'p Expr,
    ) -> Result<bool, InterpError> {
        match self.eval(env, e)? {
            Value::Bool(b) => Ok(b),
            other => Err(mismatch("boolean", other, e.span)),
        }
    }

    pub(crate) fn eval_int(&mut self, env: &mut Env<'p>, e: &'p Expr) -> Result<i128, InterpError> {
        match self.eval(env, e)? {
            Value::Int(v) => Ok(v),
            other => Err(mismatch("int", other, e.span)),
        }
    }

    /// An expression statement: a call whose result (if any) is dropped.
    pub(crate) fn eval_effect(
        &mut self,
        env: &mut Env<'p>,
        e: &'p Expr,
    ) -> Result<(), InterpError> {
        match &e.kind {
            ExprKind::Call { .. } => self.eval_call(env, e).map(drop),
            _ => self.eval(env, e).map(drop),
        }
    }

    fn eval_inner(&mut self, env: &mut Env<'p>, e: &'p Expr) -> Result<Value, InterpError> {
        let span = e.span;
        match &e.kind {
            ExprKind::IntLit(n) => i128::try_from(n)
                .map(Value::Int)
                .map_err(|_| InterpError::Overflow { span }),
            ExprKind::BoolLit(b) => Ok(Value::Bool(*b)),
            ExprKind::Null => Ok(Value::Null),
            ExprKind::AllIndices => Err(InterpError::unsupported("`a[*]`", span)),
            ExprKind::Name(id) => match env.get(&id.name) {
                Some(Some(v)) => Ok(v),
                Some(None) => Err(InterpError::Uninitialised {
                    name: id.name.clone(),
                    span,
                }),
                None => Err(InterpError::unsupported(
                    format!(
                        "`{}` has no runtime value (a ghost variable, `given` parameter or field)",
                        id.name
                    ),
                    span,
                )),
            },
            ExprKind::Unary { op, operand } => match op {
                UnaryOp::Not => Ok(Value::Bool(!self.eval_bool(env, operand)?)),
                UnaryOp::Neg => {
                    let v = self.eval_int(env, operand)?;
                    v.checked_neg()
                        .map(Value::Int)
                        .ok_or(InterpError::Overflow { span })
                }
            },
            ExprKind::Binary { op, lhs, rhs } => self.binary(env, *op, lhs, rhs, span),
            ExprKind::Cond {
                cond,
                then_expr,
                else_expr,
            } => {
                if self.eval_bool(env, cond)? {
                    self.eval(env, then_expr)
                } else {
                    self.eval(env, else_expr)
                }
            }
            ExprKind::Index { base, index } => {
                let b = self.eval(env, base)?;
                if let Value::Seq(q) = b {
                    let i = self.eval_int(env, index)?;
                    let elems = self.seq_elems(q, span)?;
                    return match usize::try_from(i) {
                        Ok(k) if k < elems.len() => Ok(elems[k]),
                        _ => Err(InterpError::OutOfBounds {
                            index: i,
                            len: elems.len(),
                            span,
                        }),
                    };
                }
                let (r, i) = self.cell_in(env, b, base.span, index, span)?;
                self.check_access(env, (r, i), Access::Read, span)?;
                self.read_cell(r, i, span)
            }
            ExprKind::Field { base, name } => match self.eval(env, base)? {
                Value::Array(r) if name.name == "length" => match self.memory.get(r) {
                    Some(cells) => int_of_len(cells.len(), span),
                    None => Err(InterpError::unsupported("a dangling array reference", span)),
                },
                Value::Seq(q) => self.seq_op(q, &name.name, span),
                Value::Null if name.name == "length" => {
                    Err(InterpError::NullDereference { span: base.span })
                }
                _ => Err(InterpError::unsupported("fields of objects", span)),
            },
            ExprKind::Call { .. } => match self.eval_call(env, e)? {
                Some(v) => Ok(v),
                None => Err(InterpError::TypeMismatch {
                    expected: "a value",
                    found: "void",
                    span,
                }),
            },
            ExprKind::NewArray { elem, dims } => self.new_array(env, &elem.kind, dims, span),
            ExprKind::Builtin { op, args } => self.builtin(env, *op, args, span),
            // A predicate at a fraction of its permissions: as the predicate itself (the
            // interpreter tracks no permissions).
            ExprKind::Scaled { pred, .. } => self.eval(env, pred),
            ExprKind::Quantifier(q) => self.quantifier(env, q, span),
            ExprKind::Let {
                name, value, body, ..
            } => {
                let v = self.eval(env, value)?;
                env.push_scope();
                env.declare(&name.name, Some(v));
                let result = self.eval(env, body);
                env.pop_scope();
                result
            }
            ExprKind::Trigger(inner, _) => self.eval(env, inner),
            // `unfolding p in e` means `e` at run time.
            ExprKind::Unfolding { body, .. } => self.eval(env, body),
            ExprKind::This | ExprKind::New { .. } => Err(InterpError::unsupported(
                "objects (`this`, `new C()`)",
                span,
            )),
            ExprKind::Result => match env.get("\\result") {
                Some(Some(v)) => Ok(v),
                _ => Err(InterpError::unsupported("`\\result`", span)),
            },
            ExprKind::Old(inner) => self.eval_old(env, inner, span),
            ExprKind::PermLit(_) => Err(InterpError::unsupported("permissions", span)),
            ExprKind::Length(inner) => match self.eval(env, inner)? {
                Value::Seq(q) => self.seq_op(q, "size", span),
                _ => Err(InterpError::unsupported("sets, bags and maps", span)),
            },
            ExprKind::Slice { base, from, to } => {
                let q = self.eval_seq(env, base)?;
                let len = self.seq_elems(q, span)?.len();
                let lo = match from {
                    Some(f) => self.eval_int(env, f)?,
                    None => 0,
                };
                let hi = match to {
                    Some(t) => self.eval_int(env, t)?,
                    None => len as i128,
                };
                let (a, b) = range_within(lo, hi, len, span)?;
                let elems = self.seq_elems(q, span)?[a..b].to_vec();
                self.new_seq(elems, span)
            }
            ExprKind::Update { base, index, value } => {
                let q = self.eval_seq(env, base)?;
                let i = self.eval_int(env, index)?;
                let v = self.eval(env, value)?;
                let mut elems = self.seq_elems(q, span)?.to_vec();
                match usize::try_from(i) {
                    Ok(k) if k < elems.len() => elems[k] = v,
                    _ => {
                        return Err(InterpError::OutOfBounds {
                            index: i,
                            len: elems.len(),
                            span,
                        })
                    }
                }
                self.new_seq(elems, span)
            }
            ExprKind::Collection {
                kind: CollectionKind::Seq,
                elems,
                ..
            } => {
                let mut values = Vec::with_capacity(elems.len());
                for e in elems {
                    values.push(self.eval(env, e)?);
                }
                self.new_seq(values, span)
            }
            ExprKind::Collection { .. } | ExprKind::MapLit { .. } | ExprKind::Tuple { .. } => Err(
                InterpError::unsupported("sets, bags, maps and tuples", span),
            ),
        }
    }

    fn binary(
        &mut self,
        env: &mut Env<'p>,
        op: BinaryOp,
        lhs: &'p Expr,
        rhs: &'p Expr,
        span: Span,
    ) -> Result<Value, InterpError> {
        use BinaryOp::*;
        match op {
            // `**` between booleans is `&&`; with a permission in it, evaluation of the
            // permission reports it unsupported.
            And | Star => Ok(Value::Bool(
                self.eval_bool(env, lhs)? && self.eval_bool(env, rhs)?,
            )),
            Or => Ok(Value::Bool(
                self.eval_bool(env, lhs)? || self.eval_bool(env, rhs)?,
            )),
            Implies => Ok(Value::Bool(
                !self.eval_bool(env, lhs)? || self.eval_bool(env, rhs)?,
            )),
            Eq | Neq => {
                let a = self.eval(env, lhs)?;
                let b = self.eval(env, rhs)?;
                let same = self.equal(a, b, span)?;
                Ok(Value::Bool(same == (op == Eq)))
            }
            Lt | Le | Gt | Ge => {
                let a = self.eval_int(env, lhs)?;
                let b = self.eval_int(env, rhs)?;
                Ok(Value::Bool(match op {
                    Lt => a < b,
                    Le => a <= b,
                    Gt => a > b,
                    _ => a >= b,
                }))
            }
            Add | Sub | Mul | Div | Mod => {
                let a = match self.eval(env, lhs)? {
                    // 1.x writes concatenation `s + t`.
                    Value::Seq(q) if op == Add => {
                        let b = self.eval(env, rhs)?;
                        return self.concat(q, b, span);
                    }
                    Value::Int(a) => a,
                    other => return Err(mismatch("int", other, lhs.span)),
                };
                let b = self.eval_int(env, rhs)?;
                if matches!(op, Div | Mod) && b == 0 {
                    return Err(InterpError::DivisionByZero { span: rhs.span });
                }
                // Rust's `/` and `%` on integers truncate toward zero, as C and OpenCL do.
                let r = match op {
                    Add => a.checked_add(b),
                    Sub => a.checked_sub(b),
                    Mul => a.checked_mul(b),
                    Div => a.checked_div(b),
                    _ => a.checked_rem(b),
                };
                r.map(Value::Int).ok_or(InterpError::Overflow { span })
            }
            FracDiv => Err(InterpError::unsupported("fractions", span)),
            Concat => {
                let q = self.eval_seq(env, lhs)?;
                let b = self.eval(env, rhs)?;
                self.concat(q, b, span)
            }
            Cons => {
                let x = self.eval(env, lhs)?;
                let q = self.eval_seq(env, rhs)?;
                let mut elems = Vec::with_capacity(self.seq_elems(q, span)?.len() + 1);
                elems.push(x);
                elems.extend_from_slice(self.seq_elems(q, span)?);
                self.new_seq(elems, span)
            }
            In => {
                let x = self.eval(env, lhs)?;
                let q = self.eval_seq(env, rhs)?;
                Ok(Value::Bool(self.seq_contains(q, x, span)?))
            }
        }
    }

    /// `x in q`, also `q.contains(x)`.
    fn seq_contains(&mut self, q: SeqRef, x: Value, span: Span) -> Result<bool, InterpError> {
        let elems = self.seq_elems(q, span)?.to_vec();
        for e in elems {
            if self.equal(x, e, span)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn eval_seq(&mut self, env: &mut Env<'p>, e: &'p Expr) -> Result<SeqRef, InterpError> {
        match self.eval(env, e)? {
            Value::Seq(q) => Ok(q),
            _ => Err(InterpError::unsupported(
                "sets, bags and maps (or not a sequence)",
                e.span,
            )),
        }
    }

    fn seq_elems(&self, q: SeqRef, span: Span) -> Result<&[Value], InterpError> {
        self.memory
            .seq(q)
            .ok_or_else(|| InterpError::unsupported("a dangling sequence reference", span))
    }

    fn new_seq(&mut self, elems: Vec<Value>, span: Span) -> Result<Value, InterpError> {
        if (elems.len() as u64).saturating_add(self.memory.total_cells() as u64)
            > self.limits.max_cells
        {
            return Err(self.cells_exceeded(span));
        }
        Ok(Value::Seq(self.memory.alloc_seq(elems)))
    }

    /// `s ++ t`, or `s ++ x` appending one element.
    fn concat(&mut self, q: SeqRef, b: Value, span: Span) -> Result<Value, InterpError> {
        let mut elems = self.seq_elems(q, span)?.to_vec();
        match b {
            Value::Seq(t) => elems.extend_from_slice(self.seq_elems(t, span)?),
            x => elems.push(x),
        }
        self.new_seq(elems, span)
    }

    /// `s.removeAt(i)`: `s` without its element at `i`, which must be an index of `s`.
    fn remove_at(
        &mut self,
        env: &mut Env<'p>,
        q: SeqRef,
        index: &'p Expr,
        span: Span,
    ) -> Result<Value, InterpError> {
        let i = self.eval_int(env, index)?;
        let mut elems = self.seq_elems(q, span)?.to_vec();
        match usize::try_from(i).ok().filter(|k| *k < elems.len()) {
            Some(k) => {
                elems.remove(k);
                self.new_seq(elems, span)
            }
            None => Err(InterpError::OutOfBounds {
                index: i,
                len: elems.len(),
                span: index.span,
            }),
        }
    }

    /// `|s|` (`size`, `length`), `head`, `tail`, `isEmpty`.
    fn seq_op(&mut self, q: SeqRef, op: &str, span: Span) -> Result<Value, InterpError> {
        let elems = self.seq_elems(q, span)?;
        match op {
            "size" | "length" => int_of_len(elems.len(), span),
            "isEmpty" => Ok(Value::Bool(elems.is_empty())),
            "head" => elems.first().copied().ok_or(InterpError::OutOfBounds {
                index: 0,
                len: 0,
                span,
            }),
            "tail" => {
                if elems.is_empty() {
                    return Err(InterpError::OutOfBounds {
                        index: 0,
                        len: 0,
                        span,
                    });
                }
                let rest = elems[1..].to_vec();
                self.new_seq(rest, span)
            }
            other => Err(InterpError::unsupported(
                format!("`{other}` on a sequence"),
                span,
            )),
        }
    }

    /// `==` on values: references by identity, sequences by contents.
    fn equal(&self, a: Value, b: Value, span: Span) -> Result<bool, InterpError> {
        match (a, b) {
            (Value::Int(x), Value::Int(y)) => Ok(x == y),
            (Value::Bool(x), Value::Bool(y)) => Ok(x == y),
            (Value::Null | Value::Array(_), Value::Null | Value::Array(_)) => Ok(a == b),
            (Value::Seq(x), Value::Seq(y)) => {
                let (xs, ys) = (self.seq_elems(x, span)?, self.seq_elems(y, span)?);
                if xs.len() != ys.len() {
                    return Ok(false);
                }
                for (&u, &v) in xs.iter().zip(ys) {
                    if !self.equal(u, v, span)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            _ => Err(InterpError::TypeMismatch {
                expected: a.kind(),
                found: b.kind(),
                span,
            }),
        }
    }

    /// The array and index of `base[index]`, null- and bounds-checked.
    pub(crate) fn cell_of(
        &mut self,
        env: &mut Env<'p>,
        base: &'p Expr,
        index: &'p Expr,
        span: Span,
    ) -> Result<(ArrayRef, usize), InterpError> {
        let b = self.eval(env, base)?;
        self.cell_in(env, b, base.span, index, span)
    }

    /// The cell `index` of the array `base` (already evaluated; `base_span` is its text).
    fn cell_in(
        &mut self,
        env: &mut Env<'p>,
        base: Value,
        base_span: Span,
        index: &'p Expr,
        span: Span,
    ) -> Result<(ArrayRef, usize), InterpError> {
        let r = match base {
            Value::Array(r) => r,
            Value::Null => return Err(InterpError::NullDereference { span: base_span }),
            other => return Err(mismatch("array", other, base_span)),
        };
        let i = self.eval_int(env, index)?;
        let len = self.memory.get(r).map_or(0, <[Value]>::len);
        match usize::try_from(i) {
            Ok(i) if i < len => Ok((r, i)),
            _ => Err(InterpError::OutOfBounds {
                index: i,
                len,
                span,
            }),
        }
    }

    pub(crate) fn read_cell(
        &mut self,
        r: ArrayRef,
        i: usize,
        span: Span,
    ) -> Result<Value, InterpError> {
        self.record(r, i, Access::Read, span)?;
        self.memory
            .cell(r, i)
            .ok_or_else(|| InterpError::unsupported("a dangling array reference", span))
    }

    pub(crate) fn write_cell(
        &mut self,
        r: ArrayRef,
        i: usize,
        v: Value,
        span: Span,
    ) -> Result<(), InterpError> {
        self.record(r, i, Access::Write, span)?;
        if self.memory.set_cell(r, i, v) {
            Ok(())
        } else {
            Err(InterpError::unsupported("a dangling array reference", span))
        }
    }

    /// `f(args)`, `this.f(args)`, `C.f(args)`: `None` for a void method.
    pub(crate) fn eval_call(
        &mut self,
        env: &mut Env<'p>,
        e: &'p Expr,
    ) -> Result<Option<Value>, InterpError> {
        let ExprKind::Call {
            receiver,
            name,
            args,
            ..
        } = &e.kind
        else {
            return self.eval(env, e).map(Some);
        };
        let class = match receiver.as_deref().map(|r| &r.kind) {
            None if args.len() == 1
                && matches!(name.name.as_str(), "head" | "tail" | "isEmpty") =>
            {
                // The checker reads these as sequence operations, whatever is declared.
                let q = self.eval_seq(env, &args[0])?;
                return self.seq_op(q, &name.name, e.span).map(Some);
            }
            None if args.len() == 2
                && name.name == "removeAt"
                && self.index.lookup(env.class, "removeAt").is_none() =>
            {
                let q = self.eval_seq(env, &args[0])?;
                return self.remove_at(env, q, &args[1], e.span).map(Some);
            }
            None | Some(ExprKind::This) => env.class,
            Some(ExprKind::Name(c)) if env.get(&c.name).is_none() => {
                match self.index.class_id(&c.name) {
                    Some(id) => Some(id),
                    None => {
                        return Err(InterpError::unsupported(
                            format!("a call on `{}`, which is not a class", c.name),
                            e.span,
                        ))
                    }
                }
            }
            Some(_) => {
                let subject = match receiver.as_deref() {
                    Some(r) => self.eval(env, r)?,
                    None => Value::Null,
                };
                return match subject {
                    Value::Seq(q) if args.is_empty() => {
                        self.seq_op(q, &name.name, e.span).map(Some)
                    }
                    Value::Seq(q) if name.name == "contains" && args.len() == 1 => {
                        let x = self.eval(env, &args[0])?;
                        self.seq_contains(q, x, e.span)
                            .map(|b| Some(Value::Bool(b)))
                    }
                    Value::Seq(q) if name.name == "removeAt" && args.len() == 1 => {
                        self.remove_at(env, q, &args[0], e.span).map(Some)
                    }
                    _ => Err(InterpError::unsupported("method calls on objects", e.span)),
                };
            }
        };
        let Some((class, member)) = self.index.lookup(class, &name.name) else {
            return Err(InterpError::unsupported(
                format!("a call to unknown method `{}`", name.name),
                name.span,
            ));
        };
        let crate::syntax::MemberKind::Method(m) = &member.kind else {
            return Err(InterpError::unsupported("a call to a field", name.span));
        };
        if matches!(
            m.return_type.as_ref().map(|t| &t.kind),
            Some(TypeKind::Resource)
        ) {
            return Err(InterpError::unsupported(
                format!("predicate `{}`", name.name),
                e.span,
            ));
        }
        if m.params.len() != args.len() {
            return Err(InterpError::unsupported(
                format!(
                    "a call to `{}` with the wrong number of arguments",
                    name.name
                ),
                e.span,
            ));
        }
        let mut values = Vec::with_capacity(args.len());
        for a in args {
            values.push(self.eval(env, a)?);
        }
        self.call_method(env, class, member, m, values, e.span)
    }

    fn new_array(
        &mut self,
        env: &mut Env<'p>,
        elem: &TypeKind,
        dims: &'p [Expr],
        span: Span,
    ) -> Result<Value, InterpError> {
        let Some(default) = Self::default_value(elem) else {
            return Err(InterpError::unsupported(
                "arrays of this element type",
                span,
            ));
        };
        let mut sizes = Vec::with_capacity(dims.len());
        for d in dims {
            let n = self.eval_int(env, d)?;
            match usize::try_from(n) {
                Ok(n) => sizes.push(n),
                Err(_) if n < 0 => {
                    return Err(InterpError::NegativeSize {
                        size: n,
                        span: d.span,
                    })
                }
                Err(_) => return Err(self.cells_exceeded(span)),
            }
        }
        if sizes.is_empty() {
            return Err(InterpError::unsupported("`new` without a size", span));
        }
        // Cells over all levels: n1 + n1*n2 + ...
        let mut total: u64 = 0;
        let mut level: u64 = 1;
        for &n in &sizes {
            level = level
                .checked_mul(n as u64)
                .ok_or_else(|| self.cells_exceeded(span))?;
            total = total
                .checked_add(level)
                .ok_or_else(|| self.cells_exceeded(span))?;
        }
        if total.saturating_add(self.memory.total_cells() as u64) > self.limits.max_cells {
            return Err(self.cells_exceeded(span));
        }
        let v = self.alloc_dims(&sizes, default);
        if self.in_spec == 0 {
            self.own_new(env, v);
        }
        Ok(v)
    }

    fn alloc_dims(&mut self, sizes: &[usize], default: Value) -> Value {
        match sizes {
            [] => default,
            [n, rest @ ..] => {
                let cells = (0..*n).map(|_| self.alloc_dims(rest, default)).collect();
                Value::Array(self.memory.alloc(cells))
            }
        }
    }

    fn cells_exceeded(&self, span: Span) -> InterpError {
        InterpError::ResourceLimit {
            what: "memory cells",
            limit: self.limits.max_cells,
            span,
        }
    }

    fn builtin(
        &mut self,
        env: &mut Env<'p>,
        op: Builtin,
        args: &'p [Expr],
        span: Span,
    ) -> Result<Value, InterpError> {
        match (op, args) {
            (Builtin::Array, [a, n]) => {
                let n = self.eval_int(env, n)?;
                Ok(Value::Bool(match self.eval(env, a)? {
                    Value::Array(r) => self.memory.get(r).map(|c| c.len() as i128) == Some(n),
                    _ => false,
                }))
            }
            (Builtin::Matrix, [m, rows, cols]) => {
                let rows = self.eval_int(env, rows)?;
                let cols = self.eval_int(env, cols)?;
                let Value::Array(r) = self.eval(env, m)? else {
                    return Ok(Value::Bool(false));
                };
                let cells = self
                    .memory
                    .get(r)
                    .map(<[Value]>::to_vec)
                    .unwrap_or_default();
                if cells.len() as i128 != rows {
                    return Ok(Value::Bool(false));
                }
                let mut seen = std::collections::HashSet::new();
                for (i, _) in cells.iter().enumerate() {
                    let row = self.read_cell(r, i, span)?;
                    let ok = match row {
                        Value::Array(rr) => {
                            seen.insert(rr)
                                && self.memory.get(rr).map(|c| c.len() as i128) == Some(cols)
                        }
                        _ => false,
                    };
                    if !ok {
                        return Ok(Value::Bool(false));
                    }
                }
                Ok(Value::Bool(true))
            }
            (Builtin::Values, [a, from, to]) => {
                let array = self.eval(env, a)?;
                let lo = self.eval_int(env, from)?;
                let hi = self.eval_int(env, to)?;
                let r = match array {
                    Value::Array(r) => r,
                    Value::Null => return Err(InterpError::NullDereference { span: a.span }),
                    _ => return Err(InterpError::unsupported("`\\values` of a non-array", span)),
                };
                let len =
                    self.memory.get(r).map(<[Value]>::len).ok_or_else(|| {
                        InterpError::unsupported("a dangling array reference", span)
                    })?;
                let (a, b) = range_within(lo, hi, len, span)?;
                let mut elems = Vec::with_capacity(b - a);
                for k in a..b {
                    self.check_access(env, (r, k), Access::Read, span)?;
                    elems.push(self.read_cell(r, k, span)?);
                }
                self.new_seq(elems, span)
            }
            (Builtin::TypeOf | Builtin::Type, _) => Err(InterpError::unsupported(
                format!("classes as values (`{}`)", op.spelling()),
                span,
            )),
            _ => Err(InterpError::unsupported(
                format!("permissions (`{}`)", op.spelling()),
                span,
            )),
        }
    }

    /// `\forall`, `\forall*`, `\exists`, `\sum` over int binders whose ranges are computable.
    fn quantifier(
        &mut self,
        env: &mut Env<'p>,
        q: &'p Quantifier,
        span: Span,
    ) -> Result<Value, InterpError> {
        let mut acc = match q.kind {
            QuantifierKind::Forall | QuantifierKind::ForallStar => Value::Bool(true),
            QuantifierKind::Exists => Value::Bool(false),
            QuantifierKind::Sum => Value::Int(0),
        };
        env.push_scope();
        let result = self.enumerate(env, q, 0, &mut acc, span);
        env.pop_scope();
        result.map(|()| acc)
    }

    /// Binds binder `k` to every value of its range, then the next; at the end evaluates the
    /// condition and body into `acc`. Stops early once a `\forall`/`\exists` is decided.
    fn enumerate(
        &mut self,
        env: &mut Env<'p>,
        q: &'p Quantifier,
        k: usize,
        acc: &mut Value,
        span: Span,
    ) -> Result<(), InterpError> {
        let Some(binder) = q.binders.get(k) else {
            if let Some(c) = &q.cond {
                if !self.eval_bool(env, c)? {
                    return Ok(());
                }
            }
            *acc = match (q.kind, *acc) {
                (QuantifierKind::Sum, Value::Int(s)) => {
                    let v = self.eval_int(env, &q.body)?;
                    Value::Int(s.checked_add(v).ok_or(InterpError::Overflow { span })?)
                }
                (QuantifierKind::Exists, _) => Value::Bool(self.eval_bool(env, &q.body)?),
                _ => Value::Bool(self.eval_bool(env, &q.body)?),
            };
            return Ok(());
        };
        if binder.ty.kind != TypeKind::Int {
            return Err(InterpError::unsupported(
                "quantifiers over non-int binders",
                binder.span,
            ));
        }
        let (lo, hi) = self.binder_range(env, q, k, binder)?;
        let mut i = lo;
        while i < hi {
            self.tick(span)?;
            env.declare(&binder.name.name, Some(Value::Int(i)));
            let r = self.enumerate(env, q, k + 1, acc, span);
            env.pop_var();
            r?;
            let decided = match q.kind {
                QuantifierKind::Forall | QuantifierKind::ForallStar => *acc == Value::Bool(false),
                QuantifierKind::Exists => *acc == Value::Bool(true),
                QuantifierKind::Sum => false,
            };
            if decided {
                return Ok(());
            }
            i += 1;
        }
        Ok(())
    }

    /// The half-open range of binder `k`: from `int i = lo .. hi`, or the tightest bounds the
    /// condition's (or premise's) top-level conjuncts give (`lo <= i`, `i < hi`, ...) that mention no binder
    /// from `k` on. None found: unsupported (an unbounded quantifier is not executable).
    pub(crate) fn binder_range(
        &mut self,
        env: &mut Env<'p>,
        q: &'p Quantifier,
        k: usize,
        binder: &'p Binder,
    ) -> Result<(i128, i128), InterpError> {
        if let Some((lo, hi)) = &binder.range {
            return Ok((self.eval_int(env, lo)?, self.eval_int(env, hi)?));
        }
        let later: Vec<&str> = q.binders[k..]
            .iter()
            .map(|b| b.name.name.as_str())
            .collect();
        let name = binder.name.name.as_str();
        // Where the bounds are: the condition, or in the two-part forms the premise of a
        // `\forall`'s implication / the conjuncts of an `\exists` (outside them the body is
        // true, resp. false, so enumerating only the bounded range is exact).
        let mut conjuncts = Vec::new();
        match (&q.cond, q.kind, &q.body.kind) {
            (Some(c), _, _) => c.flatten_and(&mut conjuncts),
            (
                None,
                QuantifierKind::Forall | QuantifierKind::ForallStar,
                ExprKind::Binary {
                    op: BinaryOp::Implies,
                    lhs,
                    ..
                },
            ) => lhs.flatten_and(&mut conjuncts),
            (None, QuantifierKind::Exists, _) => q.body.flatten_and(&mut conjuncts),
            _ => {}
        }
        let mut lo: Option<i128> = None;
        let mut hi: Option<i128> = None;
        for c in conjuncts {
            let ExprKind::Binary { op, lhs, rhs } = &c.kind else {
                continue;
            };
            // Normalise to `name OP bound`.
            let (op, bound) = if is_name(lhs, name) && !mentions_any(rhs, &later) {
                (*op, rhs)
            } else if is_name(rhs, name) && !mentions_any(lhs, &later) {
                let flipped = match op {
                    BinaryOp::Lt => BinaryOp::Gt,
                    BinaryOp::Le => BinaryOp::Ge,
                    BinaryOp::Gt => BinaryOp::Lt,
                    BinaryOp::Ge => BinaryOp::Le,
                    other => *other,
                };
                (flipped, lhs)
            } else {
                continue;
            };
            let adjust = |v: i128, d: i128| {
                v.checked_add(d)
                    .ok_or(InterpError::Overflow { span: c.span })
            };
            match op {
                BinaryOp::Lt => {
                    let v = self.eval_int(env, bound)?;
                    hi = Some(hi.map_or(v, |h| h.min(v)));
                }
                BinaryOp::Le => {
                    let v = adjust(self.eval_int(env, bound)?, 1)?;
                    hi = Some(hi.map_or(v, |h| h.min(v)));
                }
                BinaryOp::Gt => {
                    let v = adjust(self.eval_int(env, bound)?, 1)?;
                    lo = Some(lo.map_or(v, |l| l.max(v)));
                }
                BinaryOp::Ge => {
                    let v = self.eval_int(env, bound)?;
                    lo = Some(lo.map_or(v, |l| l.max(v)));
                }
                _ => {}
            }
        }
        match (lo, hi) {
            (Some(lo), Some(hi)) => Ok((lo, hi)),
            _ => Err(InterpError::unsupported(
                format!("a quantifier whose binder `{name}` has no computable bounds"),
                binder.span,
            )),
        }
    }
}

fn int_of_len(len: usize, span: Span) -> Result<Value, InterpError> {
    i128::try_from(len)
        .map(Value::Int)
        .map_err(|_| InterpError::Overflow { span })
}

fn mismatch(expected: &'static str, found: Value, span: Span) -> InterpError {
    InterpError::TypeMismatch {
        expected,
        found: found.kind(),
        span,
    }
}

fn is_name(e: &Expr, name: &str) -> bool {
    matches!(&e.kind, ExprKind::Name(id) if id.name == name)
}

/// Whether `e` mentions one of `names` (conservatively: shadowing is ignored). Iterative, so
/// no input can overflow the stack.
fn mentions_any(e: &Expr, names: &[&str]) -> bool {
    let mut found = false;
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        if found {
            break;
        }
        match &e.kind {
            ExprKind::Name(id) => found = names.contains(&id.name.as_str()),
            _ => children(e, &mut stack),
        }
    }
    found
}

/// Pushes the direct subexpressions of `e`.
fn children<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match &e.kind {
        ExprKind::IntLit(_)
        | ExprKind::BoolLit(_)
        | ExprKind::Null
        | ExprKind::This
        | ExprKind::Result
        | ExprKind::AllIndices
        | ExprKind::PermLit(_)
        | ExprKind::Name(_) => {}
        ExprKind::NewArray { dims, .. } => out.extend(dims),
        ExprKind::Unary { operand, .. } => out.push(operand),
        ExprKind::Binary { lhs, rhs, .. }
        | ExprKind::Scaled {
            amount: lhs,
            pred: rhs,
        } => out.extend([&**lhs, &**rhs]),
        ExprKind::Cond {
            cond,
            then_expr,
            else_expr,
        } => out.extend([&**cond, &**then_expr, &**else_expr]),
        ExprKind::Index { base, index } => out.extend([&**base, &**index]),
        ExprKind::Slice { base, from, to } => {
            out.push(base);
            out.extend(from.as_deref());
            out.extend(to.as_deref());
        }
        ExprKind::Update { base, index, value } => out.extend([&**base, &**index, &**value]),
        ExprKind::Field { base, .. } => out.push(base),
        ExprKind::Call { receiver, args, .. } => {
            out.extend(receiver.as_deref());
            out.extend(args);
        }
        ExprKind::New { args, .. } => out.extend(args),
        ExprKind::Old(x) | ExprKind::Length(x) | ExprKind::Trigger(x, _) => out.push(x),
        ExprKind::Builtin { args, .. } => out.extend(args),
        ExprKind::Quantifier(q) => {
            for b in &q.binders {
                if let Some((lo, hi)) = &b.range {
                    out.extend([lo, hi]);
                }
            }
            out.extend(q.cond.as_ref());
            out.push(&q.body);
        }
        ExprKind::Let { value, body, .. } => out.extend([&**value, &**body]),
        ExprKind::Collection { elems, .. } => out.extend(elems),
        ExprKind::MapLit { entries, .. } => {
            for (k, v) in entries {
                out.extend([k, v]);
            }
        }
        ExprKind::Tuple { first, second, .. } => out.extend([&**first, &**second]),
        ExprKind::Unfolding { pred, body } => out.extend([&**pred, &**body]),
    }
}

/// `lo .. hi` as indices of something of length `len` (a slice, `\values`): `0 <= lo <= hi <=
/// len`, else out of bounds at the end that is.
fn range_within(lo: i128, hi: i128, len: usize, span: Span) -> Result<(usize, usize), InterpError> {
    let (Ok(a), Ok(b)) = (usize::try_from(lo), usize::try_from(hi)) else {
        let index = if lo < 0 { lo } else { hi };
        return Err(InterpError::OutOfBounds { index, len, span });
    };
    if a > b || b > len {
        let index = if b > len { hi } else { lo };
        return Err(InterpError::OutOfBounds { index, len, span });
    }
    Ok((a, b))
}
