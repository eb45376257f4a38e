//! The fast path: a hand-written recursive-descent reading of the common part of the grammar,
//! straight from bytes to IR, tried before pest.
//!
//! Contract: [`parse`] either gives exactly what the pest path ([`super::parse_with_pest`])
//! would give on success — the same IR, spans included, and the same warnings in the same
//! order — or gives up (`None`), and the caller runs the pest path, which alone reports
//! errors. So it need not cover the whole language or any error: at every point where it is
//! not sure to follow pest's ordered choices it gives up (a `Bail`). What it mirrors exactly:
//! - pest's implicit `WHITESPACE`/`COMMENT` skipping (between the elements of a sequence, and
//!   between the iterations of a repetition, where a failed iteration gives its skip back), so
//!   that a rule ending in an empty optional part ends after the white space, as in pest;
//! - the choices of the grammar, decided by the same first words and characters; where pest
//!   would backtrack into another alternative, this gives up instead;
//! - the tree builder: the same precedence climbing, depth limit and W0101 checks, in the
//!   same order.
//!
//! Not covered (gives up, pest reads the file): `parallel`/`sequential` blocks, map literals,
//! the 1.x length `(\| s \|)` (its `\` reads as an operator first), words such as `seq`,
//! `new` or `unfolding` used as plain names where the construct they begin fails, and every
//! syntax error. A file given up on late costs the fast attempt plus pest (about 1.15 times
//! pest alone).
//! `tests::fast_path_agrees_with_pest` compares both paths on every example, every test file
//! and thousands of mutations of them.

use num_bigint::BigUint;

use super::{apply_prefixes, binary_node, nest_conditionals, Built, CallTail, Res, MAX_EXPR_DEPTH};
use crate::syntax::ir::*;
use crate::syntax::SyntaxWarning;

/// Not read by the fast path; the caller falls back to pest.
struct Bail;

type R<T> = Result<T, Bail>;

/// The program and its warnings, or `None` where the pest path must decide.
pub(super) fn parse(source: &str) -> Option<(Program, Vec<SyntaxWarning>)> {
    let mut p = Fast {
        b: source.as_bytes(),
        src: source,
        pos: 0,
        groups: 0,
        warnings: Vec::new(),
    };
    let program = p.program().ok()?;
    Some((program, p.warnings))
}

struct Fast<'s> {
    b: &'s [u8],
    src: &'s str,
    pos: usize,
    /// Infix operators consumed so far (to tell whether a `binary` had any).
    groups: usize,
    warnings: Vec<SyntaxWarning>,
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_clause_keyword(w: &str) -> bool {
    matches!(
        w,
        "requires"
            | "ensures"
            | "context_everywhere"
            | "context"
            | "loop_invariant"
            | "lock_invariant"
            | "given"
            | "yields"
            | "decreases"
    )
}

fn bail<T>() -> R<T> {
    Err(Bail)
}

/// The tree builder's errors (too deep) are pest's to report.
#[inline]
fn ours<T>(result: Res<T>) -> R<T> {
    result.map_err(|_| Bail)
}

impl<'s> Fast<'s> {
    // ------------------------------------------------------------------ lexical helpers

    fn at(&self, i: usize) -> u8 {
        self.b.get(i).copied().unwrap_or(0)
    }

    fn peek(&self) -> u8 {
        self.at(self.pos)
    }

    fn starts_with(&self, s: &[u8]) -> bool {
        self.b[self.pos..].starts_with(s)
    }

    /// pest's implicit `(WHITESPACE | COMMENT)*`, from `i`.
    fn skip_from(&self, mut i: usize) -> usize {
        let b = self.b;
        loop {
            match b.get(i) {
                Some(b' ' | b'\t' | b'\n' | b'\x0C' | b'\r') => i += 1,
                Some(0xEF) if b[i..].starts_with("\u{FEFF}".as_bytes()) => i += 3,
                Some(b'/') => match b.get(i + 1) {
                    Some(b'/') => {
                        i = b[i..]
                            .iter()
                            .position(|&c| c == b'\n')
                            .map_or(b.len(), |p| i + p);
                    }
                    Some(b'*') => {
                        let mut j = i + 2;
                        loop {
                            if j + 1 >= b.len() {
                                // Unterminated: not a comment for pest.
                                return i;
                            }
                            if b[j] == b'*' && b[j + 1] == b'/' {
                                break;
                            }
                            j += 1;
                        }
                        i = j + 2;
                    }
                    _ => return i,
                },
                Some(b'[') if b.get(i + 1) == Some(&b'/') => {
                    let rest = &b[i + 2..];
                    if rest.starts_with(b"expect") {
                        let mut j = i + 8;
                        while j < b.len() && b[j] != b']' && b[j] != b'\n' {
                            j += 1;
                        }
                        if b.get(j) == Some(&b']') {
                            i = j + 1;
                        } else {
                            return i;
                        }
                    } else if rest.starts_with(b"end]") {
                        i += 6;
                    } else {
                        return i;
                    }
                }
                _ => return i,
            }
        }
    }

    fn skip(&mut self) {
        self.pos = self.skip_from(self.pos);
    }

    /// The identifier-like word at `i` (empty if none starts there).
    fn word_at(&self, i: usize) -> &'s str {
        if !is_ident_start(self.at(i)) {
            return "";
        }
        let mut j = i + 1;
        while is_ident_char(self.at(j)) {
            j += 1;
        }
        &self.src[i..j]
    }

    fn word(&self) -> &'s str {
        self.word_at(self.pos)
    }

    fn expect(&mut self, s: &[u8]) -> R<()> {
        if self.starts_with(s) {
            self.pos += s.len();
            Ok(())
        } else {
            bail()
        }
    }

    /// Consume the keyword `w` (known to be the word here).
    fn keyword(&mut self, w: &str) {
        self.pos += w.len();
    }

    /// The `\\` of a 2.x keyword such as `\\in`, where 1.x spells it without one.
    fn skip_backslash(&mut self) {
        if self.peek() == b'\\' {
            self.pos += 1;
        }
    }

    fn ident(&mut self) -> R<Ident> {
        let w = self.word();
        if w.is_empty() {
            return bail();
        }
        let start = self.pos;
        self.pos += w.len();
        Ok(Ident {
            name: w.to_string(),
            span: Span::new(start, self.pos),
        })
    }

    /// `(item ~ ("," ~ item)*)? ~ close`, as pest reads it when `item` cannot start with
    /// `close`.
    fn list<T>(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> R<T>) -> R<Vec<T>> {
        let mut items = Vec::new();
        if self.peek() != close {
            loop {
                items.push(item(self)?);
                self.skip();
                if self.peek() != b',' {
                    break;
                }
                self.pos += 1;
                self.skip();
            }
        }
        self.expect(&[close])?;
        Ok(items)
    }

    fn span_from(&self, start: usize) -> Span {
        Span::new(start, self.pos)
    }

    // ------------------------------------------------------------------ declarations

    fn program(&mut self) -> R<Program> {
        self.skip();
        let mut items = Vec::new();
        while self.pos < self.b.len() {
            self.item(&mut items)?;
            self.skip();
        }
        Ok(Program {
            items,
            span: Span::new(0, self.b.len()),
        })
    }

    fn item(&mut self, items: &mut Vec<Item>) -> R<()> {
        let start = self.pos;
        let warnings = self.warnings.len();
        // class_decl = clause* ~ k_class ~ ...; otherwise it is a member.
        let mut contract = Contract::default();
        while is_clause_keyword(self.word()) {
            contract.clauses.push(self.clause()?);
            self.skip();
        }
        if self.word() == "model" {
            return bail();
        }
        if self.word() == "class" {
            self.keyword("class");
            self.skip();
            let name = self.ident()?;
            self.skip();
            self.expect(b"{")?;
            self.skip();
            let mut members = Vec::new();
            while self.peek() != b'}' {
                members.extend(self.member()?);
                self.skip();
            }
            self.pos += 1;
            items.push(Item::Class(Class {
                contract,
                name,
                members,
                span: self.span_from(start),
                is_model: false,
            }));
            return Ok(());
        }
        self.pos = start;
        self.warnings.truncate(warnings);
        items.extend(self.member()?.into_iter().map(Item::Member));
        Ok(())
    }

    fn member(&mut self) -> R<Vec<Member>> {
        let start = self.pos;
        let mut gpuopts = Vec::new();
        let mut contract = Contract::default();
        loop {
            let w = self.word();
            if w == "gpuopt" {
                gpuopts.push(self.gpuopt()?);
            } else if is_clause_keyword(w) {
                contract.clauses.push(self.clause()?);
            } else if matches!(w, "modifies" | "accessible" | "action" | "process") {
                // Models' clauses and members are pest's.
                return bail();
            } else {
                break;
            }
            self.skip();
        }
        let decl_start = self.pos;
        let mut modifiers = Vec::new();
        loop {
            let m = match self.word() {
                "static" => Modifier::Static,
                "pure" => Modifier::Pure,
                "inline" => Modifier::Inline,
                "thread_local" => Modifier::ThreadLocal,
                _ => break,
            };
            modifiers.push(m);
            self.pos += self.word().len();
            self.skip();
        }
        // run_decl = k_run ~ &"{" ~ block
        if self.word() == "run" && self.at(self.skip_from(self.pos + 3)) == b'{' {
            if !modifiers.is_empty() {
                return bail();
            }
            let at = Span::new(self.pos, self.pos + 3);
            self.pos += 3;
            self.skip();
            let body = MethodBody::Block(self.block()?);
            let method = Method {
                modifiers,
                return_type: Some(Type {
                    kind: TypeKind::Void,
                    span: at,
                }),
                name: Ident {
                    name: "run".to_string(),
                    span: at,
                },
                type_params: Vec::new(),
                params: Vec::new(),
                body,
                span: self.span_from(decl_start),
                is_run: true,
                model_member: None,
            };
            return Ok(vec![Member {
                gpuopts,
                contract,
                kind: MemberKind::Method(method),
                span: self.span_from(start),
            }]);
        }
        if !is_ident_start(self.peek()) {
            return bail();
        }
        let type_start = self.pos;
        let ty = self.ty()?;
        self.skip();
        let (return_type, name) = if is_ident_start(self.peek()) {
            let name = self.ident()?;
            self.skip();
            if self.peek() == b'<' {
                // type_params: generic methods are rare, pest reads them.
                return bail();
            }
            if self.peek() != b'(' {
                if !modifiers.is_empty() {
                    return bail();
                }
                // field_decl = type_ ~ ident ~ ("," ~ ident)* ~ ";"
                let mut names = vec![name];
                loop {
                    if self.peek() == b',' {
                        self.pos += 1;
                        self.skip();
                        names.push(self.ident()?);
                        self.skip();
                    } else {
                        break;
                    }
                }
                self.expect(b";")?;
                let decl_span = self.span_from(type_start);
                let span = self.span_from(start);
                let mut members = Vec::new();
                for name in names {
                    members.push(Member {
                        gpuopts: std::mem::take(&mut gpuopts),
                        contract: std::mem::take(&mut contract),
                        kind: MemberKind::Field(Field {
                            ty: ty.clone(),
                            name,
                            span: decl_span,
                        }),
                        span,
                    });
                }
                return Ok(members);
            }
            (Some(ty), name)
        } else if self.peek() == b'(' {
            // A constructor `Name(params)`: the type was the bare name (method_decl failed
            // for want of a name; constructor_decl reads the same word as its name).
            match ty.kind {
                TypeKind::Class(name) => (None, name),
                _ => return bail(),
            }
        } else {
            return bail();
        };
        // "(" ~ params ~ ")" ~ method_body
        self.pos += 1;
        self.skip();
        let params = self.list(b')', Self::param)?;
        self.skip();
        let body = match self.peek() {
            b'{' => MethodBody::Block(self.block()?),
            b'=' => {
                self.pos += 1;
                self.skip();
                let e = self.expr()?.expr;
                self.skip();
                self.expect(b";")?;
                MethodBody::Expr(e)
            }
            b';' => {
                self.pos += 1;
                MethodBody::Abstract
            }
            _ => return bail(),
        };
        let method = Method {
            modifiers,
            return_type,
            name,
            type_params: Vec::new(),
            params,
            body,
            span: self.span_from(decl_start),
            is_run: false,
            model_member: None,
        };
        Ok(vec![Member {
            gpuopts,
            contract,
            kind: MemberKind::Method(method),
            span: self.span_from(start),
        }])
    }

    fn param(&mut self) -> R<Param> {
        let start = self.pos;
        let ty = self.ty()?;
        self.skip();
        let name = self.ident()?;
        Ok(Param {
            ty,
            name,
            span: self.span_from(start),
        })
    }

    fn clause(&mut self) -> R<Clause> {
        let start = self.pos;
        let w = self.word();
        self.keyword(w);
        self.skip();
        let kind = match w {
            // `k_decreases ~ (k_assume | decreases_measure)? ~ ";"`
            "decreases" => {
                if self.peek() == b';' {
                    ClauseKind::Decreases(Decreases::Measure(Vec::new()))
                } else if self.word() == "assume" {
                    self.keyword("assume");
                    ClauseKind::Decreases(Decreases::Assume)
                } else {
                    let mut measure = vec![self.expr()?.expr];
                    loop {
                        let after = self.pos;
                        self.skip();
                        if self.peek() != b',' {
                            self.pos = after;
                            break;
                        }
                        self.pos += 1;
                        self.skip();
                        measure.push(self.expr()?.expr);
                    }
                    ClauseKind::Decreases(Decreases::Measure(measure))
                }
            }
            "given" | "yields" => {
                let ty = self.ty()?;
                self.skip();
                let name = self.ident()?;
                let param = Param {
                    span: ty.span.to(name.span),
                    ty,
                    name,
                };
                if w == "given" {
                    ClauseKind::Given(param)
                } else {
                    ClauseKind::Yields(param)
                }
            }
            _ => {
                let e = self.expr()?.expr;
                match w {
                    "requires" => ClauseKind::Requires(e),
                    "ensures" => ClauseKind::Ensures(e),
                    "context" => ClauseKind::Context(e),
                    "context_everywhere" => ClauseKind::ContextEverywhere(e),
                    "loop_invariant" => ClauseKind::LoopInvariant(e),
                    _ => ClauseKind::LockInvariant(e),
                }
            }
        };
        self.skip();
        self.expect(b";")?;
        Ok(Clause {
            kind,
            span: self.span_from(start),
        })
    }

    fn gpuopt(&mut self) -> R<GpuOpt> {
        let start = self.pos;
        self.keyword("gpuopt");
        self.skip();
        let w = self.word();
        self.keyword(w);
        self.skip();
        let kind = match w {
            "loop_unroll" | "iter_merge" => {
                let var = self.ident()?;
                self.skip();
                let factor = self.expr()?.expr;
                if w == "loop_unroll" {
                    GpuOptKind::LoopUnroll { var, factor }
                } else {
                    GpuOptKind::IterMerge { var, factor }
                }
            }
            "matrix_lin" => {
                let matrix = self.ident()?;
                self.skip();
                let order = match self.ident()?.name.as_str() {
                    "R" => MatrixOrder::RowMajor,
                    "C" => MatrixOrder::ColumnMajor,
                    _ => return bail(),
                };
                self.skip();
                let rows = self.expr()?.expr;
                self.skip();
                let cols = self.expr()?.expr;
                GpuOptKind::MatrixLin {
                    matrix,
                    order,
                    rows,
                    cols,
                }
            }
            "glob_to_reg" => {
                let array = self.ident()?;
                self.skip();
                let mut rows = Vec::new();
                while self.peek() == b'[' {
                    self.pos += 1;
                    self.skip();
                    rows.push(self.expr()?.expr);
                    self.skip();
                    if self.peek() != b']' {
                        return bail();
                    }
                    self.pos += 1;
                    self.skip();
                }
                let mut indices = vec![self.expr()?.expr];
                self.skip();
                let mut first = true;
                loop {
                    let save = self.pos;
                    if !first {
                        self.skip();
                    }
                    let comma = self.peek() == b',';
                    if comma {
                        self.pos += 1;
                        self.skip();
                    }
                    if self.peek() == b';' {
                        if comma {
                            return bail();
                        }
                        self.pos = save;
                        break;
                    }
                    indices.push(self.expr()?.expr);
                    first = false;
                }
                GpuOptKind::GlobToReg {
                    array,
                    rows,
                    indices,
                }
            }
            "tile" => {
                let layout = match self.ident()?.name.as_str() {
                    "inter" => TileLayout::Inter,
                    "intra" => TileLayout::Intra,
                    _ => return bail(),
                };
                self.skip();
                let size = self.expr()?.expr;
                GpuOptKind::Tile { layout, size }
            }
            "fuse" => {
                let count = self.expr()?.expr;
                self.skip();
                let block_hint = if self.peek() == b';' {
                    None
                } else {
                    Some(self.expr()?.expr)
                };
                GpuOptKind::Fuse { count, block_hint }
            }
            _ => return bail(),
        };
        self.skip();
        self.expect(b";")?;
        Ok(GpuOpt {
            kind,
            span: self.span_from(start),
        })
    }

    // ------------------------------------------------------------------ types

    /// type_ = base_type ~ array_dim*
    fn ty(&mut self) -> R<Type> {
        let start = self.pos;
        let base = self.base_type()?;
        self.skip();
        let mut sizes = Vec::new();
        loop {
            let save = self.pos;
            if !sizes.is_empty() {
                self.skip();
            }
            if self.peek() != b'[' {
                self.pos = save;
                break;
            }
            self.pos += 1;
            self.skip();
            let size = if self.peek() == b']' {
                None
            } else {
                let e = self.expr()?.expr;
                self.skip();
                Some(Box::new(e))
            };
            self.expect(b"]")?;
            sizes.push(size);
        }
        let span = self.span_from(start);
        let mut ty = base;
        for size in sizes.into_iter().rev() {
            ty = Type {
                kind: TypeKind::Array {
                    elem: Box::new(ty),
                    size,
                },
                span,
            };
        }
        Ok(ty)
    }

    fn base_type(&mut self) -> R<Type> {
        let start = self.pos;
        let w = self.word();
        if w.is_empty() {
            return bail();
        }
        self.pos += w.len();
        let after_word = self.pos;
        let kind = match w {
            "int" => TypeKind::Int,
            "boolean" | "bool" => TypeKind::Bool,
            "void" => TypeKind::Void,
            "frac" => TypeKind::Frac,
            "zfrac" => TypeKind::ZFrac,
            "rational" => TypeKind::Rational,
            "resource" => TypeKind::Resource,
            "tuple" if self.at(self.skip_from(after_word)) == b'<' => return bail(),
            "seq" | "set" | "bag" | "option" | "map"
                if self.at(self.skip_from(after_word)) == b'<' =>
            {
                self.skip();
                self.pos += 1;
                self.skip();
                let first = Box::new(self.ty()?);
                self.skip();
                let kind = match w {
                    "seq" => TypeKind::Seq(first),
                    "set" => TypeKind::Set(first),
                    "bag" => TypeKind::Bag(first),
                    "option" => TypeKind::Option(first),
                    _ => {
                        self.expect(b",")?;
                        self.skip();
                        let second = Box::new(self.ty()?);
                        self.skip();
                        TypeKind::Map(first, second)
                    }
                };
                self.expect(b">")?;
                kind
            }
            _ => TypeKind::Class(Ident {
                name: w.to_string(),
                span: Span::new(start, after_word),
            }),
        };
        Ok(Type {
            kind,
            span: self.span_from(start),
        })
    }

    // ------------------------------------------------------------------ statements

    fn block(&mut self) -> R<Block> {
        let start = self.pos;
        self.expect(b"{")?;
        self.skip();
        let mut stmts = Vec::new();
        while self.peek() != b'}' {
            stmts.push(self.stmt()?);
            self.skip();
        }
        self.pos += 1;
        Ok(Block {
            stmts,
            span: self.span_from(start),
        })
    }

    fn contract(&mut self) -> R<Contract> {
        let mut contract = Contract::default();
        while is_clause_keyword(self.word()) {
            contract.clauses.push(self.clause()?);
            self.skip();
        }
        Ok(contract)
    }

    fn stmt(&mut self) -> R<Stmt> {
        let start = self.pos;
        if self.peek() == b'{' {
            let block = self.block()?;
            let span = block.span;
            return Ok(Stmt {
                kind: StmtKind::Block(block),
                span,
            });
        }
        let w = self.word();
        let kind = match w {
            "if" => return self.if_stmt(),
            "while" | "for" => return self.loop_stmt(),
            w if is_clause_keyword(w) => return self.loop_stmt(),
            "par" => return self.par_stmt(),
            "parallel" | "sequential" | "goto" | "label" | "vec" | "action" | "create"
            | "destroy" | "split" | "merge" => return bail(),
            "barrier" => self.barrier()?,
            "return" => {
                self.keyword(w);
                self.skip();
                let e = if self.peek() == b';' {
                    None
                } else {
                    let e = self.expr()?.expr;
                    self.skip();
                    Some(e)
                };
                self.expect(b";")?;
                StmtKind::Return(e)
            }
            "assert" | "assume" | "refute" | "inhale" | "exhale" | "lock" | "unlock" | "fold"
            | "unfold" | "fork" | "join" | "commit" | "wait" | "notify" => {
                self.keyword(w);
                self.skip();
                let e = self.expr()?.expr;
                self.skip();
                self.expect(b";")?;
                match w {
                    "assert" => StmtKind::Assert(e),
                    "assume" => StmtKind::Assume(e),
                    "refute" => StmtKind::Refute(e),
                    "inhale" => StmtKind::Inhale(e),
                    "exhale" => StmtKind::Exhale(e),
                    "lock" => StmtKind::Lock(e),
                    "unlock" => StmtKind::Unlock(e),
                    "fold" => StmtKind::Fold(e),
                    "fork" => StmtKind::Fork(e),
                    "join" => StmtKind::Join(e),
                    "commit" => StmtKind::Commit(e),
                    "wait" => StmtKind::Wait(e),
                    "notify" => StmtKind::Notify(e),
                    _ => StmtKind::Unfold(e),
                }
            }
            "ghost" => {
                self.keyword(w);
                self.skip();
                StmtKind::Ghost(Box::new(self.stmt()?))
            }
            "invariant" => {
                self.keyword(w);
                self.skip();
                let name = self.ident()?;
                self.skip();
                self.expect(b"(")?;
                self.skip();
                let inv = self.expr()?.expr;
                self.skip();
                self.expect(b")")?;
                self.skip();
                let body = self.block()?;
                StmtKind::Invariant { name, inv, body }
            }
            "atomic" => {
                self.keyword(w);
                self.skip();
                self.expect(b"(")?;
                self.skip();
                let name = self.ident()?;
                self.skip();
                self.expect(b")")?;
                self.skip();
                let body = self.block()?;
                StmtKind::Atomic { name, body }
            }
            "gpuopt" => StmtKind::GpuOpt(self.gpuopt()?),
            _ => {
                let mut stmt = self.simple_or_decl()?;
                self.skip();
                self.expect(b";")?;
                stmt.span = self.span_from(start);
                return Ok(stmt);
            }
        };
        Ok(Stmt {
            kind,
            span: self.span_from(start),
        })
    }

    fn if_stmt(&mut self) -> R<Stmt> {
        let mut branches: Vec<(usize, Expr, Stmt)> = Vec::new();
        let mut branch_start = self.pos;
        self.keyword("if");
        loop {
            self.skip();
            self.expect(b"(")?;
            self.skip();
            let cond = self.expr()?.expr;
            self.skip();
            self.expect(b")")?;
            self.skip();
            let body = self.stmt()?;
            branches.push((branch_start, cond, body));
            // (else_if ~ "(" ~ expr ~ ")" ~ stmt)*, each `else_if` being `else`, at least one
            // white space or comment, `if`; the skip after the repetition is pest's anyway.
            self.skip();
            if self.word() == "else" {
                let after_else = self.pos + 4;
                let k_if = self.skip_from(after_else);
                if k_if > after_else && self.word_at(k_if) == "if" {
                    self.pos = k_if;
                    branch_start = k_if;
                    self.keyword("if");
                    continue;
                }
            }
            break;
        }
        // ~ (k_else ~ stmt)?
        self.skip();
        let mut acc = None;
        if self.word() == "else" {
            self.keyword("else");
            self.skip();
            acc = Some(self.stmt()?);
        }
        let end = self.pos;
        for (start, cond, then_branch) in branches.into_iter().rev() {
            acc = Some(Stmt {
                kind: StmtKind::If {
                    cond,
                    then_branch: Box::new(then_branch),
                    else_branch: acc.map(Box::new),
                },
                span: Span::new(start, end),
            });
        }
        acc.ok_or(Bail)
    }

    fn loop_stmt(&mut self) -> R<Stmt> {
        let start = self.pos;
        let contract = self.contract()?;
        let kind = match self.word() {
            "while" => {
                self.keyword("while");
                self.skip();
                self.expect(b"(")?;
                self.skip();
                let cond = self.expr()?.expr;
                self.skip();
                self.expect(b")")?;
                self.skip();
                let body = Box::new(self.stmt()?);
                StmtKind::While {
                    contract,
                    cond,
                    body,
                }
            }
            "for" => {
                self.keyword("for");
                self.skip();
                self.expect(b"(")?;
                self.skip();
                let init = if self.peek() == b';' {
                    None
                } else {
                    let s = self.simple_or_decl()?;
                    self.skip();
                    Some(Box::new(s))
                };
                self.expect(b";")?;
                self.skip();
                let cond = if self.peek() == b';' {
                    None
                } else {
                    let e = self.expr()?.expr;
                    self.skip();
                    Some(e)
                };
                self.expect(b";")?;
                self.skip();
                let update = if self.peek() == b')' {
                    None
                } else {
                    let s = self.simple()?;
                    self.skip();
                    Some(Box::new(s))
                };
                self.expect(b")")?;
                self.skip();
                let body = Box::new(self.stmt()?);
                StmtKind::For {
                    contract,
                    init,
                    cond,
                    update,
                    body,
                }
            }
            _ => return bail(),
        };
        Ok(Stmt {
            kind,
            span: self.span_from(start),
        })
    }

    /// `local_decl` or `simple`: a declaration when a type and a name lead.
    fn simple_or_decl(&mut self) -> R<Stmt> {
        let start = self.pos;
        if is_ident_start(self.peek()) {
            let warnings = self.warnings.len();
            let ty = self.ty()?;
            self.skip();
            if is_ident_start(self.peek()) {
                // local_var ~ ("," ~ local_var)*: the skip before the repetition stays, the
                // one before a failed further iteration does not.
                let mut vars = vec![self.local_var()?];
                self.skip();
                loop {
                    let save = self.pos;
                    if vars.len() > 1 {
                        self.skip();
                    }
                    if self.peek() == b',' {
                        self.pos += 1;
                        self.skip();
                        vars.push(self.local_var()?);
                    } else {
                        self.pos = save;
                        break;
                    }
                }
                return Ok(Stmt {
                    kind: StmtKind::LocalDecl { ty, vars },
                    span: self.span_from(start),
                });
            }
            self.pos = start;
            self.warnings.truncate(warnings);
        }
        self.simple()
    }

    fn local_var(&mut self) -> R<LocalVar> {
        let start = self.pos;
        let name = self.ident()?;
        self.skip();
        let init = if self.peek() == b'=' {
            self.pos += 1;
            self.skip();
            if self.peek() == b'=' {
                return bail();
            }
            Some(self.expr()?.expr)
        } else {
            None
        };
        Ok(LocalVar {
            name,
            init,
            span: self.span_from(start),
        })
    }

    /// simple = expr ~ (incr | decr | "=" ~ !"=" ~ expr)?
    fn simple(&mut self) -> R<Stmt> {
        let start = self.pos;
        let target = self.expr()?.expr;
        self.skip();
        let kind = if self.starts_with(b"++") {
            self.pos += 2;
            StmtKind::Increment(target)
        } else if self.starts_with(b"--") {
            self.pos += 2;
            StmtKind::Decrement(target)
        } else if self.peek() == b'=' {
            self.pos += 1;
            self.skip();
            if self.peek() == b'=' {
                return bail();
            }
            StmtKind::Assign {
                target,
                value: self.expr()?.expr,
            }
        } else {
            StmtKind::Expr(target)
        };
        Ok(Stmt {
            kind,
            span: self.span_from(start),
        })
    }

    fn par_stmt(&mut self) -> R<Stmt> {
        let start = self.pos;
        let mut blocks = vec![self.par_block(true)?];
        self.skip();
        let mut first = true;
        loop {
            let save = self.pos;
            if !first {
                self.skip();
            }
            if self.word() != "and" {
                self.pos = save;
                break;
            }
            self.keyword("and");
            self.skip();
            blocks.push(self.par_block(false)?);
            first = false;
        }
        Ok(Stmt {
            kind: StmtKind::Par(ParGroup {
                blocks,
                style: ParGroupStyle::And,
            }),
            span: self.span_from(start),
        })
    }

    /// par_block = k_par ~ par_label? ~ par_iters? ~ clause* ~ block (and_block without `par`)
    fn par_block(&mut self, with_par: bool) -> R<ParBlock> {
        let start = self.pos;
        if with_par {
            self.keyword("par");
            self.skip();
        }
        let w = self.word();
        let label = if !w.is_empty() && !is_clause_keyword(w) {
            let l = self.ident()?;
            self.skip();
            Some(l)
        } else {
            None
        };
        let mut iters = Vec::new();
        if self.peek() == b'(' {
            self.pos += 1;
            self.skip();
            iters = self.list(b')', Self::par_iter)?;
            self.skip();
        }
        let contract = self.contract()?;
        let body = self.block()?;
        Ok(ParBlock {
            label,
            iters,
            contract,
            body,
            span: self.span_from(start),
        })
    }

    fn par_iter(&mut self) -> R<ParIter> {
        let start = self.pos;
        let ty = self.ty()?;
        self.skip();
        let name = self.ident()?;
        self.skip();
        self.expect(b"=")?;
        self.skip();
        let lo = self.expr()?.expr;
        self.skip();
        self.expect(b"..")?;
        self.skip();
        let hi = self.expr()?.expr;
        Ok(ParIter {
            ty,
            name,
            lo,
            hi,
            span: self.span_from(start),
        })
    }

    fn barrier(&mut self) -> R<StmtKind> {
        self.keyword("barrier");
        self.skip();
        self.expect(b"(")?;
        self.skip();
        let label = self.ident()?;
        self.skip();
        // barrier_invs? ~ ")": `;` and a list of names.
        let invariants = if self.peek() == b';' {
            self.pos += 1;
            self.skip();
            self.list(b')', Self::ident)?
        } else {
            self.expect(b")")?;
            Vec::new()
        };
        self.skip();
        let barrier = if self.peek() == b'{' {
            // barrier_inside = "{" ~ (!k_loop_invariant ~ clause)* ~ stmt* ~ "}"
            let start = self.pos;
            self.pos += 1;
            self.skip();
            let mut contract = Contract::default();
            loop {
                let w = self.word();
                if !is_clause_keyword(w) || w == "loop_invariant" {
                    break;
                }
                contract.clauses.push(self.clause()?);
                self.skip();
            }
            let mut stmts = Vec::new();
            while self.peek() != b'}' {
                stmts.push(self.stmt()?);
                self.skip();
            }
            self.pos += 1;
            Barrier {
                label,
                invariants,
                contract,
                body: Block {
                    stmts,
                    span: self.span_from(start),
                },
                style: BarrierStyle::ClausesInside,
            }
        } else {
            if !is_clause_keyword(self.word()) {
                return bail();
            }
            let contract = self.contract()?;
            let body = self.block()?;
            Barrier {
                label,
                invariants,
                contract,
                body,
                style: BarrierStyle::ClausesBefore,
            }
        };
        Ok(StmtKind::Barrier(barrier))
    }

    // ------------------------------------------------------------------ expressions

    /// The builder's `checked`, without making the error that pest will report.
    fn checked(&self, expr: Expr, bare_op: Option<BinaryOp>, depth: u32) -> R<Built> {
        if depth > MAX_EXPR_DEPTH {
            return bail();
        }
        Ok(Built {
            expr,
            bare_op,
            depth,
        })
    }

    /// expr = binary ~ ("?" ~ expr ~ ":" ~ !":" ~ binary)*
    fn expr(&mut self) -> R<Built> {
        let first = self.binary()?;
        self.skip();
        if self.peek() != b'?' {
            return Ok(first);
        }
        let mut conds = vec![first];
        let mut thens = Vec::new();
        loop {
            let save = self.pos;
            if !thens.is_empty() {
                self.skip();
            }
            if self.peek() != b'?' {
                self.pos = save;
                break;
            }
            self.pos += 1;
            self.skip();
            thens.push(self.expr()?);
            self.skip();
            self.expect(b":")?;
            self.skip();
            if self.peek() == b':' {
                return bail();
            }
            conds.push(self.binary()?);
        }
        ours(nest_conditionals(conds, thens, Span::default()))
    }

    /// binary = unary ~ (&infix_start ~ infix ~ unary)*, ending where pest's does.
    fn binary(&mut self) -> R<Built> {
        let groups = self.groups;
        let b = self.climb(0)?;
        if self.groups == groups {
            self.skip();
        }
        Ok(b)
    }

    /// The infix operator at `i`, in the grammar's order of alternatives, and its length.
    fn infix_at(&self, i: usize) -> Option<(BinaryOp, usize)> {
        let c = self.at(i);
        let n = self.at(i + 1);
        Some(match c {
            b'=' if n == b'=' => {
                if self.at(i + 2) == b'>' {
                    (BinaryOp::Implies, 3)
                } else {
                    (BinaryOp::Eq, 2)
                }
            }
            b'|' if n == b'|' => (BinaryOp::Or, 2),
            b'&' if n == b'&' => (BinaryOp::And, 2),
            b'*' if n == b'*' => (BinaryOp::Star, 2),
            b'*' => (BinaryOp::Mul, 1),
            b'!' if n == b'=' => (BinaryOp::Neq, 2),
            b'<' if n == b'=' => (BinaryOp::Le, 2),
            b'<' => (BinaryOp::Lt, 1),
            b'>' if n == b'=' => (BinaryOp::Ge, 2),
            b'>' => (BinaryOp::Gt, 1),
            b'i' if n == b'n' && !is_ident_char(self.at(i + 2)) => (BinaryOp::In, 2),
            b'+' if n == b'+' => (BinaryOp::Concat, 2),
            b'+' => (BinaryOp::Add, 1),
            b'-' if n != b'>' => (BinaryOp::Sub, 1),
            b':' if n == b':' => (BinaryOp::Cons, 2),
            b'/' => (BinaryOp::Div, 1),
            b'%' => (BinaryOp::Mod, 1),
            b'\\' if self.word_at(i + 1) == "in" => (BinaryOp::In, 3),
            b'\\' => (BinaryOp::FracDiv, 1),
            _ => return None,
        })
    }

    /// Whether a `unary` can match at `i`; `false` only where pest's surely fails.
    fn unary_may_start(&self, mut i: usize) -> bool {
        loop {
            i = self.skip_from(i);
            match self.at(i) {
                b'!' | b'-' => i += 1,
                c => {
                    return c.is_ascii_digit()
                        || is_ident_start(c)
                        || matches!(c, b'(' | b'\\' | b'|')
                        || (c == b'{' && self.at(i + 1) == b':')
                        || (c == b'[' && self.at(i + 1) != b'/')
                }
            }
        }
    }

    /// Precedence climbing as the tree builder's `binary`, reading operators as it goes.
    fn climb(&mut self, min_prec: u8) -> R<Built> {
        let mut lhs = self.unary()?;
        loop {
            let save = self.pos;
            self.skip();
            let Some((op, len)) = self.infix_at(self.pos) else {
                self.pos = save;
                break;
            };
            if !self.unary_may_start(self.pos + len) {
                self.pos = save;
                break;
            }
            let prec = op.precedence();
            if prec < min_prec {
                self.pos = save;
                break;
            }
            self.pos += len;
            self.groups += 1;
            self.skip();
            let next_min = if matches!(op, BinaryOp::Implies | BinaryOp::Cons) {
                prec
            } else {
                prec + 1
            };
            let rhs = self.climb(next_min)?;
            lhs = ours(binary_node(lhs, op, rhs, &mut self.warnings))?;
        }
        Ok(lhs)
    }

    /// unary = prefix* ~ primary ~ postfix*
    fn unary(&mut self) -> R<Built> {
        let mut prefixes = Vec::new();
        loop {
            match self.peek() {
                b'!' => prefixes.push((UnaryOp::Not, self.pos)),
                b'-' => prefixes.push((UnaryOp::Neg, self.pos)),
                _ => break,
            }
            self.pos += 1;
            self.skip();
        }
        let mut acc = self.primary()?;
        self.skip();
        let mut first = true;
        loop {
            let save = self.pos;
            if !first {
                self.skip();
            }
            match self.peek() {
                b'[' => acc = self.bracket_suffix(acc)?,
                b'.' if is_ident_start(self.at(self.skip_from(self.pos + 1))) => {
                    acc = self.member_suffix(acc)?
                }
                _ => {
                    self.pos = save;
                    break;
                }
            }
            first = false;
        }
        if prefixes.is_empty() {
            return Ok(acc);
        }
        ours(apply_prefixes(acc, prefixes))
    }

    fn bracket_suffix(&mut self, base: Built) -> R<Built> {
        let start = self.pos;
        self.pos += 1;
        self.skip();
        let mut depth = base.depth + 1;
        let mut sub = |b: Built| {
            depth = depth.max(b.depth + 1);
            Box::new(b.expr)
        };
        let base_span = base.expr.span;
        let base = Box::new(base.expr);
        let kind = if self.peek() == b'*' && self.at(self.skip_from(self.pos + 1)) == b']' {
            // all_indices = "*" ~ &"]"
            let star = Span::new(self.pos, self.pos + 1);
            self.pos += 1;
            self.skip();
            ExprKind::Index {
                base,
                index: Box::new(Expr {
                    kind: ExprKind::AllIndices,
                    span: star,
                }),
            }
        } else if self.starts_with(b"..") {
            self.pos += 2;
            self.skip();
            let to = sub(self.expr()?);
            ExprKind::Slice {
                base,
                from: None,
                to: Some(to),
            }
        } else {
            let e = sub(self.expr()?);
            self.skip();
            if self.starts_with(b"..") {
                self.pos += 2;
                self.skip();
                let to = if self.peek() == b']' {
                    None
                } else {
                    Some(sub(self.expr()?))
                };
                ExprKind::Slice {
                    base,
                    from: Some(e),
                    to,
                }
            } else if self.starts_with(b"->") {
                self.pos += 2;
                self.skip();
                let value = sub(self.expr()?);
                ExprKind::Update {
                    base,
                    index: e,
                    value,
                }
            } else {
                ExprKind::Index { base, index: e }
            }
        };
        self.skip();
        self.expect(b"]")?;
        let span = base_span.to(self.span_from(start));
        self.checked(Expr { kind, span }, None, depth)
    }

    fn member_suffix(&mut self, base: Built) -> R<Built> {
        let start = self.pos;
        self.pos += 1;
        self.skip();
        let name = self.ident()?;
        self.skip();
        let mut depth = base.depth + 1;
        let base_span = base.expr.span;
        self.bail_on_type_args()?;
        let kind = if self.peek() == b'(' {
            let tail = self.call_tail()?;
            depth = depth.max(tail.depth + 1);
            tail.into_call(Some(Box::new(base.expr)), name)
        } else {
            ExprKind::Field {
                base: Box::new(base.expr),
                name,
            }
        };
        let span = base_span.to(self.span_from(start));
        self.checked(Expr { kind, span }, None, depth)
    }

    /// Gives up where pest reads type arguments `f<T>(..)` (the `type_args` of a
    /// `call_tail`): after a name, a `<` that opens types closed by `>` before a `(`. Anything
    /// else after the `<` is a comparison, read on as one.
    fn bail_on_type_args(&mut self) -> R<()> {
        if self.peek() != b'<' || !is_ident_start(self.at(self.skip_from(self.pos + 1))) {
            return Ok(());
        }
        let resume = self.pos;
        self.pos += 1;
        let reads_types = loop {
            self.skip();
            // A type this path cannot read may still be one for pest: give up.
            self.ty()?;
            self.skip();
            match self.peek() {
                b',' => self.pos += 1,
                b'>' => break self.at(self.skip_from(self.pos + 1)) == b'(',
                _ => break false,
            }
        };
        if reads_types {
            return bail();
        }
        self.pos = resume;
        Ok(())
    }

    /// call_tail = type_args? ~ call_args ~ with_block? ~ then_block? (without type arguments:
    /// [`Self::bail_on_type_args`] gave up on those)
    fn call_tail(&mut self) -> R<CallTail> {
        let (args, mut depth) = self.call_args()?;
        let mut given = Vec::new();
        let mut yields = Vec::new();
        self.skip();
        if matches!(self.word(), "with" | "given") {
            self.pos += self.word().len();
            depth = depth.max(self.ghost_block(&mut given)?);
        }
        self.skip();
        if matches!(self.word(), "then" | "yields") {
            self.pos += self.word().len();
            depth = depth.max(self.ghost_block(&mut yields)?);
        }
        Ok(CallTail {
            type_args: Vec::new(),
            args,
            given,
            yields,
            depth,
        })
    }

    fn ghost_block(&mut self, into: &mut Vec<GhostArg>) -> R<u32> {
        let mut depth = 0;
        self.skip();
        self.expect(b"{")?;
        self.skip();
        while self.peek() != b'}' {
            let start = self.pos;
            let name = self.ident()?;
            self.skip();
            self.expect(b"=")?;
            self.skip();
            let b = self.expr()?;
            depth = depth.max(b.depth);
            self.skip();
            match self.peek() {
                b';' | b',' => self.pos += 1,
                b'}' => {}
                _ => return bail(),
            }
            into.push(GhostArg {
                name,
                value: b.expr,
                span: self.span_from(start),
            });
            self.skip();
        }
        self.pos += 1;
        Ok(depth)
    }

    /// call_args = "(" ~ (expr ~ ("," ~ expr)*)? ~ ")", and the deepest argument.
    fn call_args(&mut self) -> R<(Vec<Expr>, u32)> {
        self.expect(b"(")?;
        self.skip();
        self.exprs_until(b')')
    }

    /// `(expr ~ ("," ~ expr)*)? ~ close`, after the opening bracket: the expressions and the
    /// deepest of them.
    fn exprs_until(&mut self, close: u8) -> R<(Vec<Expr>, u32)> {
        let mut depth = 0;
        let exprs = self.list(close, |p| {
            let b = p.expr()?;
            depth = depth.max(b.depth);
            Ok(b.expr)
        })?;
        Ok((exprs, depth))
    }

    fn primary(&mut self) -> R<Built> {
        let start = self.pos;
        let c = self.peek();
        if c.is_ascii_digit() {
            let mut j = start;
            while self.at(j).is_ascii_digit() {
                j += 1;
            }
            // A literal too long is an error, and errors are pest's to report.
            if is_ident_char(self.at(j)) || j - start > crate::syntax::MAX_LITERAL_DIGITS {
                return bail();
            }
            self.pos = j;
            let text = &self.src[start..j];
            let value = match text.parse::<u64>() {
                Ok(small) => BigUint::from(small),
                Err(_) => text.parse::<BigUint>().map_err(|_| Bail)?,
            };
            return Ok(self.leaf(ExprKind::IntLit(value), start));
        }
        match c {
            b'(' => return self.paren_like(),
            b'[' if self.at(start + 1) != b'/' => return self.seq_list(),
            b'\\' => return self.backslash(),
            b'|' => {
                self.pos += 1;
                self.skip();
                let b = self.expr()?;
                self.skip();
                self.expect(b"|")?;
                return self.wrap(ExprKind::Length(Box::new(b.expr)), start, b.depth);
            }
            b'{' if self.at(start + 1) == b':' => {
                self.pos += 2;
                self.skip();
                // `{:n: e :}`: pest's atomic `trigger_group`, digits and `:` with nothing
                // between; once it is read, `e` must follow (`{:1:}` is an error in pest,
                // which this leaves to pest by giving up).
                let digits = self.b[self.pos..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                let group = if digits > 0 && self.at(self.pos + digits) == b':' {
                    let span = Span::new(self.pos, self.pos + digits + 1);
                    let n = super::trigger_group(&self.src[self.pos..self.pos + digits], span)
                        .map_err(|_| Bail)?;
                    self.pos += digits + 1;
                    self.skip();
                    Some(n)
                } else {
                    None
                };
                let b = self.expr()?;
                self.skip();
                self.expect(b":}")?;
                return self.wrap(ExprKind::Trigger(Box::new(b.expr), group), start, b.depth);
            }
            _ => {}
        }
        let w = self.word();
        if w.is_empty() {
            return bail();
        }
        let leaf = match w {
            "true" => Some(ExprKind::BoolLit(true)),
            "false" => Some(ExprKind::BoolLit(false)),
            "null" => Some(ExprKind::Null),
            "this" => Some(ExprKind::This),
            "write" => Some(ExprKind::PermLit(PermLit::Write)),
            "read" => Some(ExprKind::PermLit(PermLit::Read)),
            "none" => Some(ExprKind::PermLit(PermLit::None)),
            _ => None,
        };
        if let Some(kind) = leaf {
            self.pos += w.len();
            return Ok(self.leaf(kind, start));
        }
        let next = self.at(self.skip_from(start + w.len()));
        match w {
            "new" => return self.new_expr(),
            "unfolding" => return self.unfolding(),
            "seq" | "set" | "bag" if next == b'<' => return self.collection(),
            "map" if next == b'<' => return self.map_literal(),
            // Tuples are pest's (`tuple<A, B>{a, b}` would read as comparisons here).
            "tuple" if next == b'<' => return bail(),
            "HPerm" | "APerm" if next == b'(' => return bail(),
            "Perm" | "PointsTo" | "Value" | "AutoValue" | "idle" | "running" | "held"
            | "committed"
                if next == b'(' =>
            {
                let op = match w {
                    "Perm" => Builtin::Perm,
                    "PointsTo" => Builtin::PointsTo,
                    "idle" => Builtin::Idle,
                    "running" => Builtin::Running,
                    "held" => Builtin::Held,
                    "committed" => Builtin::Committed,
                    "AutoValue" => Builtin::AutoValue,
                    _ => Builtin::Value,
                };
                self.pos += w.len();
                self.skip();
                let (args, d) = self.call_args()?;
                return self.wrap(ExprKind::Builtin { op, args }, start, d);
            }
            _ => {}
        }
        // call_or_name = ident ~ call_tail?
        let name = self.ident()?;
        self.skip();
        self.bail_on_type_args()?;
        if self.peek() != b'(' {
            let span = name.span;
            return self.checked(
                Expr {
                    kind: ExprKind::Name(name),
                    span,
                },
                None,
                1,
            );
        }
        let tail = self.call_tail()?;
        let depth = tail.depth + 1;
        let span = name.span.to(self.span_from(start));
        self.checked(
            Expr {
                kind: tail.into_call(None, name),
                span,
            },
            None,
            depth,
        )
    }

    fn leaf(&self, kind: ExprKind, start: usize) -> Built {
        Built::leaf(Expr {
            kind,
            span: self.span_from(start),
        })
    }

    /// A node over sub-expressions at most `sub` deep, spanning from `start` to here.
    fn wrap(&self, kind: ExprKind, start: usize, sub: u32) -> R<Built> {
        self.checked(
            Expr {
                kind,
                span: self.span_from(start),
            },
            None,
            sub + 1,
        )
    }

    /// quantifier | let_expr | old_length | paren
    fn paren_like(&mut self) -> R<Built> {
        let start = self.pos;
        self.pos += 1;
        self.skip();
        let quantifier = if self.starts_with(b"\\forall*") {
            Some((QuantifierKind::ForallStar, 8))
        } else {
            let w = self.word_at(self.pos + 1);
            if self.peek() != b'\\' {
                None
            } else {
                match w {
                    "forall" => Some((QuantifierKind::Forall, 7)),
                    "exists" => Some((QuantifierKind::Exists, 7)),
                    "sum" => Some((QuantifierKind::Sum, 4)),
                    _ => None,
                }
            }
        };
        if let Some((kind, len)) = quantifier {
            self.pos += len;
            self.skip();
            let mut binders = vec![self.binder()?];
            loop {
                self.skip();
                if self.peek() != b',' {
                    break;
                }
                self.pos += 1;
                self.skip();
                binders.push(self.binder()?);
            }
            self.expect(b";")?;
            self.skip();
            let first = self.expr()?;
            let mut sub = first.depth;
            self.skip();
            let (cond, body) = if self.peek() == b';' {
                self.pos += 1;
                self.skip();
                let body = self.expr()?;
                sub = sub.max(body.depth);
                self.skip();
                (Some(first.expr), body.expr)
            } else {
                (None, first.expr)
            };
            self.expect(b")")?;
            return self.wrap(
                ExprKind::Quantifier(Box::new(Quantifier {
                    kind,
                    binders,
                    cond,
                    body,
                })),
                start,
                sub,
            );
        }
        if self.starts_with(b"\\let") {
            self.pos += 4;
            self.skip();
            let ty = self.ty()?;
            self.skip();
            let name = self.ident()?;
            self.skip();
            self.expect(b"=")?;
            self.skip();
            let value = self.expr()?;
            self.skip();
            self.expect(b";")?;
            self.skip();
            let body = self.expr()?;
            self.skip();
            self.expect(b")")?;
            let sub = value.depth.max(body.depth);
            return self.wrap(
                ExprKind::Let {
                    ty,
                    name,
                    value: Box::new(value.expr),
                    body: Box::new(body.expr),
                },
                start,
                sub,
            );
        }
        if self.starts_with(b"\\|") {
            self.pos += 2;
            self.skip();
            let b = self.expr()?;
            self.skip();
            self.expect(b"\\|")?;
            self.skip();
            self.expect(b")")?;
            return self.wrap(ExprKind::Length(Box::new(b.expr)), start, b.depth);
        }
        // Parentheses are not in the IR, but they do silence the W0101 check.
        let mut b = self.expr()?;
        self.skip();
        self.expect(b")")?;
        b.bare_op = None;
        Ok(b)
    }

    fn binder(&mut self) -> R<Binder> {
        let start = self.pos;
        let ty = self.ty()?;
        self.skip();
        let name = self.ident()?;
        self.skip();
        let range = if self.peek() == b'=' {
            self.pos += 1;
            self.skip();
            let lo = self.expr()?.expr;
            self.skip();
            self.expect(b"..")?;
            self.skip();
            let hi = self.expr()?.expr;
            Some((lo, hi))
        } else {
            None
        };
        Ok(Binder {
            ty,
            name,
            range,
            span: self.span_from(start),
        })
    }

    /// lit_result | old_expr | builtin (`\array`, `\matrix`, `\typeof`, `\type`)
    fn backslash(&mut self) -> R<Built> {
        let start = self.pos;
        let w = self.word_at(start + 1);
        match w {
            "result" => {
                self.pos += 7;
                Ok(self.leaf(ExprKind::Result, start))
            }
            "old" => {
                self.pos += 4;
                self.skip();
                self.expect(b"(")?;
                self.skip();
                let b = self.expr()?;
                self.skip();
                self.expect(b")")?;
                self.wrap(ExprKind::Old(Box::new(b.expr)), start, b.depth)
            }
            "unfolding" => self.unfolding(),
            "array" | "matrix" | "typeof" | "type" | "values" => {
                let op = match w {
                    "array" => Builtin::Array,
                    "matrix" => Builtin::Matrix,
                    "typeof" => Builtin::TypeOf,
                    "values" => Builtin::Values,
                    _ => Builtin::Type,
                };
                self.pos += 1 + w.len();
                self.skip();
                let (args, d) = self.call_args()?;
                self.wrap(ExprKind::Builtin { op, args }, start, d)
            }
            _ => bail(),
        }
    }

    /// new_expr = k_new ~ (base_type ~ new_dim+ | ident ~ call_args)
    fn new_expr(&mut self) -> R<Built> {
        let start = self.pos;
        self.keyword("new");
        self.skip();
        let type_start = self.pos;
        let elem = self.base_type()?;
        self.skip();
        if self.peek() == b'[' {
            // new_dim+ is pest's `new_dim ~ new_dim*`: the skip after the first one stays.
            let mut dims = Vec::new();
            let mut sub = 0;
            loop {
                let save = self.pos;
                if !dims.is_empty() {
                    self.skip();
                }
                if self.peek() != b'[' {
                    if dims.len() > 1 {
                        self.pos = save;
                    }
                    break;
                }
                self.pos += 1;
                self.skip();
                let b = self.expr()?;
                sub = sub.max(b.depth);
                dims.push(b.expr);
                self.skip();
                self.expect(b"]")?;
            }
            return self.wrap(ExprKind::NewArray { elem, dims }, start, sub);
        }
        self.pos = type_start;
        let class = self.ident()?;
        self.skip();
        let tail = self.call_tail()?;
        self.wrap(
            ExprKind::New {
                class,
                args: tail.args,
                given: tail.given,
                yields: tail.yields,
            },
            start,
            tail.depth,
        )
    }

    /// unfolding_expr = k_unfolding ~ unary ~ k_in ~ expr (each keyword with or without `\\`)
    fn unfolding(&mut self) -> R<Built> {
        let start = self.pos;
        self.skip_backslash();
        self.keyword("unfolding");
        self.skip();
        let pred = self.unary()?;
        self.skip();
        self.skip_backslash();
        if self.word() != "in" {
            return bail();
        }
        self.keyword("in");
        self.skip();
        let body = self.expr()?;
        let sub = pred.depth.max(body.depth);
        self.wrap(
            ExprKind::Unfolding {
                pred: Box::new(pred.expr),
                body: Box::new(body.expr),
            },
            start,
            sub,
        )
    }

    /// The head of a typed literal, `map<K, V>{` or `seq<T>{` (set, bag): its type, read by
    /// [`Self::ty`], and the brace.
    fn literal_head(&mut self) -> R<Type> {
        let ty = self.ty()?;
        self.skip();
        self.expect(b"{")?;
        self.skip();
        Ok(ty)
    }

    /// map_lit = w_map ~ "<" ~ type_ ~ "," ~ type_ ~ ">" ~ "{" ~ (map_entry ~ ("," ~ map_entry)*)? ~ "}"
    /// map_entry = expr ~ "->" ~ expr
    fn map_literal(&mut self) -> R<Built> {
        let start = self.pos;
        let TypeKind::Map(key, value) = self.literal_head()?.kind else {
            return bail();
        };
        let mut sub = 0;
        let entries = self.list(b'}', |p| {
            let k = p.expr()?;
            p.skip();
            p.expect(b"->")?;
            p.skip();
            let v = p.expr()?;
            sub = sub.max(k.depth).max(v.depth);
            Ok((k.expr, v.expr))
        })?;
        self.wrap(
            ExprKind::MapLit {
                key: *key,
                value: *value,
                entries,
            },
            start,
            sub,
        )
    }

    /// seq_list = "[" ~ !"/" ~ expr ~ ("," ~ expr)* ~ "]", where neither a name nor a `[`
    /// follows the `]`: there pest decides between a literal and a scaled predicate
    /// `[p]P(..)` (`[a] in s`, `[x][0]` are left to it too).
    fn seq_list(&mut self) -> R<Built> {
        let start = self.pos;
        self.pos += 1;
        self.skip();
        if self.peek() == b']' {
            return bail();
        }
        let (elems, sub) = self.exprs_until(b']')?;
        let next = self.at(self.skip_from(self.pos));
        if is_ident_start(next) || next == b'[' {
            return bail();
        }
        self.wrap(
            ExprKind::Collection {
                kind: CollectionKind::Seq,
                elem: None,
                elems,
            },
            start,
            sub,
        )
    }

    /// collection = (w_seq | w_set | w_bag) ~ "<" ~ type_ ~ ">" ~ "{" ~ (expr ~ ("," ~ expr)*)? ~ "}"
    fn collection(&mut self) -> R<Built> {
        let start = self.pos;
        let (kind, elem) = match self.literal_head()?.kind {
            TypeKind::Seq(elem) => (CollectionKind::Seq, *elem),
            TypeKind::Set(elem) => (CollectionKind::Set, *elem),
            TypeKind::Bag(elem) => (CollectionKind::Bag, *elem),
            _ => return bail(),
        };
        let (elems, sub) = self.exprs_until(b'}')?;
        self.wrap(
            ExprKind::Collection {
                kind,
                elem: Some(elem),
                elems,
            },
            start,
            sub,
        )
    }
}
