//! IR → PVL text in the house style.
//!
//! Guarantees:
//! - **Round trip.** Parsing the output gives back the same IR up to spans. No parentheses are
//!   stored in the IR: they are recomputed from [`BinaryOp::precedence`] and
//!   [`BinaryOp::assoc`] and kept minimal, with two deliberate exceptions: mixed `&&`/`||` (and
//!   `**`/`||`) are always parenthesised, because VerCors 1.x read them on one level
//!   (design.md, "Front end"), and so is a comparison that is an operand of a comparison.
//! - **Every comment exactly once.** Comments are interleaved by source position: before a
//!   node (member, clause, `gpuopt`, statement, par block, closing brace) is printed, every
//!   comment that starts before it is flushed, own-line comments on their own line and the
//!   others at the end of the previous line. Comments inside a one-line construct go at the end
//!   of its line. The comments are consumed in source order through one cursor, so a comment
//!   can never be printed twice nor skipped, whatever the spans of transformed nodes (duplicated,
//!   out of order or default); leftovers are printed at the end of the file.
//! - **Blank lines.** One blank line where the source had one or more between two members,
//!   statements, clauses or comments; never two in a row, none right after an opening line.
//! - **Stable.** Printing a parsed printout gives the same text again: every comment is put
//!   where, parsed back, it is put again in the same place.
//! - **No panics**, whatever the IR and trivia.
//!
//! The house style: 4-space indentation, `{` on the header line, contract clauses one per line
//! above what they specify (with the `gpuopt` lines above them), a par block's clauses indented
//! between its header and its `{`. Lines are not wrapped.

use super::ir::*;
use super::trivia::Comment;
use super::Trivia;

/// Prints a whole program, interleaving the comments and blank lines of `trivia`.
pub fn print(program: &Program, trivia: &Trivia) -> String {
    let mut printer = Printer::new(trivia);
    for item in &program.items {
        match item {
            Item::Class(class) => printer.class(class),
            Item::Member(member) => printer.member(member),
        }
    }
    printer.flush_remaining_comments();
    printer.out
}

/// Prints one expression on one line, with minimal parentheses.
pub fn print_expr(expr: &Expr) -> String {
    let mut out = String::new();
    write_expr(&mut out, expr, LOOSEST);
    out
}

/// Prints one statement (and anything nested in it) without comments, at indentation 0.
pub fn print_stmt(stmt: &Stmt) -> String {
    let trivia = Trivia::default();
    let mut printer = Printer::new(&trivia);
    printer.stmt(stmt);
    printer.out
}

/// Prints a type: `int`, `int[N]`, `int[M][N]`, `seq<int>`, `map<K,V>`, ...
pub fn print_type(ty: &Type) -> String {
    let mut out = String::new();
    write_type(&mut out, ty);
    out
}

// ---------------------------------------------------------------------------------------------
// Expressions

/// Binding levels beside the binary operators' (2..=10, from [`BinaryOp::precedence`]).
/// `unfolding p in e` extends as far right as it can, so it is parenthesised as any operand.
const LOOSEST: u8 = 0;
const LEVEL_COND: u8 = 1;
const LEVEL_UNARY: u8 = 11;
const LEVEL_POSTFIX: u8 = 12;
const LEVEL_PRIMARY: u8 = 13;

/// How tightly an expression binds as printed (higher is tighter).
fn level(expr: &Expr) -> u8 {
    match &expr.kind {
        ExprKind::Unfolding { .. } => LOOSEST,
        ExprKind::Cond { .. } => LEVEL_COND,
        ExprKind::Binary { op, .. } => op.precedence(),
        // `new C().f` and `new int[N][i]` would read differently, so `new` only stands as an
        // operand where a unary expression may; the same for a call with ghost arguments, whose
        // `with { .. }` tail is not a postfix.
        // `[p]P().f` would scale `P().f`.
        ExprKind::Unary { .. }
        | ExprKind::New { .. }
        | ExprKind::NewArray { .. }
        | ExprKind::Scaled { .. } => LEVEL_UNARY,
        ExprKind::Call { given, yields, .. } if !given.is_empty() || !yields.is_empty() => {
            LEVEL_UNARY
        }
        ExprKind::Index { .. }
        | ExprKind::Slice { .. }
        | ExprKind::Update { .. }
        | ExprKind::Field { .. }
        | ExprKind::Call { .. } => LEVEL_POSTFIX,
        _ => LEVEL_PRIMARY,
    }
}

/// Writes `expr`, parenthesised when it binds looser than `min_level`.
fn write_expr(out: &mut String, expr: &Expr, min_level: u8) {
    if level(expr) < min_level {
        out.push('(');
        write_expr_bare(out, expr);
        out.push(')');
    } else {
        write_expr_bare(out, expr);
    }
}

fn is_and_like(expr: &Expr) -> bool {
    matches!(
        expr.kind,
        ExprKind::Binary {
            op: BinaryOp::And | BinaryOp::Star,
            ..
        }
    )
}

fn is_or(expr: &Expr) -> bool {
    matches!(
        expr.kind,
        ExprKind::Binary {
            op: BinaryOp::Or,
            ..
        }
    )
}

fn is_comparison(expr: &Expr) -> bool {
    matches!(&expr.kind, ExprKind::Binary { op, .. } if op.assoc() == Assoc::None)
}

/// An operand of a binary operator.
///
/// Beyond precedence: mixed `&&`/`||` are parenthesised (VerCors 1.x put them on one level),
/// and so is a comparison under a comparison (`(a < b) == c`), which no reader parses at a
/// glance and which C-like languages read differently.
fn write_operand(out: &mut String, operand: &Expr, min_level: u8, parent: BinaryOp) {
    let extra_parentheses = match parent {
        BinaryOp::Or => is_and_like(operand),
        BinaryOp::And | BinaryOp::Star => is_or(operand),
        _ if parent.assoc() == Assoc::None => is_comparison(operand),
        _ => false,
    };
    if extra_parentheses {
        out.push('(');
        write_expr_bare(out, operand);
        out.push(')');
    } else {
        write_expr(out, operand, min_level);
    }
}

/// Backslash keywords that a name right after `\` would spell.
const BACKSLASH_WORDS: &[&str] = &[
    "forall", "exists", "old", "result", "array", "matrix", "let", "sum",
];

/// `1\2` and `1\N` are written without spaces, as VerCors users do; anything else gets spaces
/// (also so that `1 \ \result` does not fuse into `1\\result`).
fn is_compact_fraction(lhs: &Expr, rhs: &Expr) -> bool {
    let atomic_lhs = matches!(lhs.kind, ExprKind::IntLit(_) | ExprKind::Name(_));
    let atomic_rhs = match &rhs.kind {
        ExprKind::IntLit(_) => true,
        ExprKind::Name(name) => !BACKSLASH_WORDS.contains(&name.name.as_str()),
        _ => false,
    };
    atomic_lhs && atomic_rhs
}

fn is_atomic(expr: &Expr) -> bool {
    level(expr) >= LEVEL_POSTFIX
}

fn atomic_or_absent(expr: Option<&Expr>) -> bool {
    match expr {
        None => true,
        Some(expr) => is_atomic(expr),
    }
}

fn write_list(out: &mut String, exprs: &[Expr]) {
    for (i, expr) in exprs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_expr(out, expr, LOOSEST);
    }
}

/// `<T, int>` (nothing for none): a generic call's type arguments.
fn write_type_list(out: &mut String, types: &[Type]) {
    if types.is_empty() {
        return;
    }
    out.push('<');
    for (i, ty) in types.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_type(out, ty);
    }
    out.push('>');
}

fn write_ghost_args(out: &mut String, keyword: &str, args: &[GhostArg]) {
    if args.is_empty() {
        return;
    }
    out.push(' ');
    out.push_str(keyword);
    out.push_str(" {");
    for arg in args {
        out.push(' ');
        out.push_str(&arg.name.name);
        out.push_str(" = ");
        write_expr(out, &arg.value, LOOSEST);
        out.push(';');
    }
    out.push_str(" }");
}

/// A literal in decimal; the usual ones without `BigUint`'s formatting (a sixth of the
/// printer's time on the benchmark).
fn write_int(out: &mut String, value: &num_bigint::BigUint) {
    match u64::try_from(value) {
        Ok(mut small) => {
            let mut digits = [0u8; 20];
            let mut i = digits.len();
            loop {
                i -= 1;
                digits[i] = b'0' + (small % 10) as u8;
                small /= 10;
                if small == 0 {
                    break;
                }
            }
            for &d in &digits[i..] {
                out.push(char::from(d));
            }
        }
        Err(_) => out.push_str(&value.to_string()),
    }
}

fn write_expr_bare(out: &mut String, expr: &Expr) {
    match &expr.kind {
        ExprKind::IntLit(value) => write_int(out, value),
        ExprKind::BoolLit(value) => out.push_str(if *value { "true" } else { "false" }),
        ExprKind::Null => out.push_str("null"),
        ExprKind::This => out.push_str("this"),
        ExprKind::Result => out.push_str("\\result"),
        ExprKind::AllIndices => out.push('*'),
        ExprKind::PermLit(perm) => out.push_str(match perm {
            PermLit::Write => "write",
            PermLit::Read => "read",
            PermLit::None => "none",
        }),
        ExprKind::Name(name) => out.push_str(&name.name),
        ExprKind::Unary { op, operand } => {
            out.push(match op {
                UnaryOp::Not => '!',
                UnaryOp::Neg => '-',
            });
            // `--x` would lex as a decrement: negating a negation needs parentheses.
            let double_minus = *op == UnaryOp::Neg
                && matches!(
                    operand.kind,
                    ExprKind::Unary {
                        op: UnaryOp::Neg,
                        ..
                    }
                );
            if double_minus {
                out.push('(');
                write_expr_bare(out, operand);
                out.push(')');
            } else {
                write_expr(out, operand, LEVEL_UNARY);
            }
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let prec = op.precedence();
            let (lhs_min, rhs_min) = match op.assoc() {
                Assoc::Left => (prec, prec + 1),
                Assoc::Right => (prec + 1, prec),
                Assoc::None => (prec + 1, prec + 1),
            };
            write_operand(out, lhs, lhs_min, *op);
            if *op == BinaryOp::FracDiv && is_compact_fraction(lhs, rhs) {
                out.push('\\');
            } else {
                out.push(' ');
                out.push_str(op.symbol());
                out.push(' ');
            }
            write_operand(out, rhs, rhs_min, *op);
        }
        ExprKind::Cond {
            cond,
            then_expr,
            else_expr,
        } => {
            // `?:` nests to the right; a conditional in the middle is parenthesised for clarity.
            write_expr(out, cond, LEVEL_COND + 1);
            out.push_str(" ? ");
            write_expr(out, then_expr, LEVEL_COND + 1);
            out.push_str(" : ");
            write_expr(out, else_expr, LEVEL_COND);
        }
        ExprKind::Index { base, index } => {
            write_expr(out, base, LEVEL_POSTFIX);
            out.push('[');
            write_expr(out, index, LOOSEST);
            out.push(']');
        }
        ExprKind::Slice { base, from, to } => {
            write_expr(out, base, LEVEL_POSTFIX);
            out.push('[');
            let compact = atomic_or_absent(from.as_deref()) && atomic_or_absent(to.as_deref());
            if let Some(from) = from {
                write_expr(out, from, LOOSEST);
            }
            out.push_str(match (compact, from.is_some(), to.is_some()) {
                (true, _, _) => "..",
                (false, true, true) => " .. ",
                (false, true, false) => " ..",
                (false, false, _) => ".. ",
            });
            if let Some(to) = to {
                write_expr(out, to, LOOSEST);
            }
            out.push(']');
        }
        ExprKind::Update { base, index, value } => {
            write_expr(out, base, LEVEL_POSTFIX);
            out.push('[');
            write_expr(out, index, LOOSEST);
            out.push_str(" -> ");
            write_expr(out, value, LOOSEST);
            out.push(']');
        }
        ExprKind::Field { base, name } => {
            write_expr(out, base, LEVEL_POSTFIX);
            out.push('.');
            out.push_str(&name.name);
        }
        ExprKind::Call {
            receiver,
            name,
            type_args,
            args,
            given,
            yields,
        } => {
            if let Some(receiver) = receiver {
                write_expr(out, receiver, LEVEL_POSTFIX);
                out.push('.');
            }
            out.push_str(&name.name);
            write_type_list(out, type_args);
            out.push('(');
            write_list(out, args);
            out.push(')');
            write_ghost_args(out, "with", given);
            write_ghost_args(out, "then", yields);
        }
        ExprKind::New {
            class,
            args,
            given,
            yields,
        } => {
            out.push_str("new ");
            out.push_str(&class.name);
            out.push('(');
            write_list(out, args);
            out.push(')');
            write_ghost_args(out, "with", given);
            write_ghost_args(out, "then", yields);
        }
        ExprKind::NewArray { elem, dims } => {
            out.push_str("new ");
            write_type(out, elem);
            for dim in dims {
                out.push('[');
                write_expr(out, dim, LOOSEST);
                out.push(']');
            }
        }
        ExprKind::Old(inner) => {
            out.push_str("\\old(");
            write_expr(out, inner, LOOSEST);
            out.push(')');
        }
        ExprKind::Length(inner) => {
            // `||s||` would lex as two `||`: parenthesise what starts or ends with a bar.
            let mut text = String::new();
            write_expr(&mut text, inner, LOOSEST);
            out.push('|');
            if text.starts_with('|') || text.ends_with('|') {
                out.push('(');
                out.push_str(&text);
                out.push(')');
            } else {
                out.push_str(&text);
            }
            out.push('|');
        }
        ExprKind::Builtin { op, args } => {
            out.push_str(op.spelling());
            out.push('(');
            write_list(out, args);
            out.push(')');
        }
        ExprKind::Quantifier(quantifier) => write_quantifier(out, quantifier),
        ExprKind::Let {
            ty,
            name,
            value,
            body,
        } => {
            out.push_str("(\\let ");
            write_type(out, ty);
            out.push(' ');
            out.push_str(&name.name);
            out.push_str(" = ");
            write_expr(out, value, LOOSEST);
            out.push_str("; ");
            write_expr(out, body, LOOSEST);
            out.push(')');
        }
        ExprKind::Collection {
            kind,
            elem: None,
            elems,
        } => {
            let (open, close) = match kind {
                CollectionKind::Set => ('{', '}'),
                _ => ('[', ']'),
            };
            out.push(open);
            write_list(out, elems);
            out.push(close);
        }
        ExprKind::Collection {
            kind,
            elem: Some(elem),
            elems,
        } => {
            out.push_str(match kind {
                CollectionKind::Seq => "seq<",
                CollectionKind::Set => "set<",
                CollectionKind::Bag => "bag<",
            });
            write_type(out, elem);
            out.push_str(">{");
            write_list(out, elems);
            out.push('}');
        }
        ExprKind::Tuple {
            types,
            first,
            second,
        } => {
            match types.as_deref() {
                Some((a, b)) => {
                    out.push_str("tuple<");
                    write_type(out, a);
                    out.push(',');
                    write_type(out, b);
                    out.push_str(">{");
                }
                None => out.push('('),
            }
            write_expr(out, first, LOOSEST);
            out.push_str(", ");
            write_expr(out, second, LOOSEST);
            out.push(if types.is_some() { '}' } else { ')' });
        }
        ExprKind::MapLit {
            key,
            value,
            entries,
        } => {
            out.push_str("map<");
            write_type(out, key);
            out.push(',');
            write_type(out, value);
            out.push_str(">{");
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_expr(out, k, LOOSEST);
                out.push_str(" -> ");
                write_expr(out, v, LOOSEST);
            }
            out.push('}');
        }
        ExprKind::Scaled { amount, pred } => {
            out.push('[');
            write_expr(out, amount, LOOSEST);
            out.push(']');
            // A call, or another scale: `[p][q]P()`.
            write_expr(out, pred, LEVEL_UNARY);
        }
        ExprKind::Trigger(inner, group) => {
            match group {
                Some(n) => out.push_str(&format!("{{:{n}: ")),
                None => out.push_str("{: "),
            }
            write_expr(out, inner, LOOSEST);
            out.push_str(" :}");
        }
        ExprKind::Unfolding { pred, body } => {
            out.push_str("unfolding ");
            write_expr(out, pred, LEVEL_POSTFIX);
            out.push_str(" in ");
            write_expr(out, body, LOOSEST);
        }
    }
}

fn write_quantifier(out: &mut String, quantifier: &Quantifier) {
    out.push('(');
    out.push_str(match quantifier.kind {
        QuantifierKind::Forall => "\\forall ",
        QuantifierKind::ForallStar => "\\forall* ",
        QuantifierKind::Exists => "\\exists ",
        QuantifierKind::Sum => "\\sum ",
    });
    for (i, binder) in quantifier.binders.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_type(out, &binder.ty);
        out.push(' ');
        out.push_str(&binder.name.name);
        if let Some((lo, hi)) = &binder.range {
            out.push_str(" = ");
            write_expr(out, lo, LOOSEST);
            out.push_str(" .. ");
            write_expr(out, hi, LOOSEST);
        }
    }
    out.push_str("; ");
    if let Some(cond) = &quantifier.cond {
        write_expr(out, cond, LOOSEST);
        out.push_str("; ");
    }
    write_expr(out, &quantifier.body, LOOSEST);
    out.push(')');
}

// ---------------------------------------------------------------------------------------------
// Types, clauses, annotations: always one line

fn write_type(out: &mut String, ty: &Type) {
    match &ty.kind {
        TypeKind::Int => out.push_str("int"),
        TypeKind::Bool => out.push_str("boolean"),
        TypeKind::Void => out.push_str("void"),
        TypeKind::Frac => out.push_str("frac"),
        TypeKind::ZFrac => out.push_str("zfrac"),
        TypeKind::Rational => out.push_str("rational"),
        TypeKind::Resource => out.push_str("resource"),
        TypeKind::Seq(elem) => write_generic(out, "seq", elem),
        TypeKind::Set(elem) => write_generic(out, "set", elem),
        TypeKind::Bag(elem) => write_generic(out, "bag", elem),
        TypeKind::Option(elem) => write_generic(out, "option", elem),
        TypeKind::Map(key, value) | TypeKind::Tuple(key, value) => {
            out.push_str(if matches!(ty.kind, TypeKind::Map(..)) {
                "map<"
            } else {
                "tuple<"
            });
            write_type(out, key);
            out.push(',');
            write_type(out, value);
            out.push('>');
        }
        TypeKind::Array { .. } => {
            // `int[M][N]` nests as Array(Array(int, N), M): the outermost size is written first.
            let mut sizes = Vec::new();
            let mut base = ty;
            while let TypeKind::Array { elem, size } = &base.kind {
                sizes.push(size.as_deref());
                base = elem;
            }
            write_type(out, base);
            for size in sizes {
                out.push('[');
                if let Some(size) = size {
                    write_expr(out, size, LOOSEST);
                }
                out.push(']');
            }
        }
        TypeKind::Class(name) => out.push_str(&name.name),
    }
}

fn write_generic(out: &mut String, name: &str, elem: &Type) {
    out.push_str(name);
    out.push('<');
    write_type(out, elem);
    out.push('>');
}

fn param_text(param: &Param) -> String {
    let mut out = String::new();
    write_type(&mut out, &param.ty);
    out.push(' ');
    out.push_str(&param.name.name);
    out
}

fn clause_text(clause: &Clause) -> String {
    let keyword = clause.kind.keyword();
    match &clause.kind {
        ClauseKind::Requires(e)
        | ClauseKind::Ensures(e)
        | ClauseKind::Context(e)
        | ClauseKind::ContextEverywhere(e)
        | ClauseKind::LoopInvariant(e)
        | ClauseKind::LockInvariant(e) => {
            let mut out = String::with_capacity(64);
            out.push_str(keyword);
            out.push(' ');
            write_expr(&mut out, e, LOOSEST);
            out.push(';');
            out
        }
        ClauseKind::Given(param) | ClauseKind::Yields(param) => {
            format!("{keyword} {};", param_text(param))
        }
        ClauseKind::Modifies(fields) | ClauseKind::Accessible(fields) => {
            let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
            format!("{keyword} {};", names.join(", "))
        }
        ClauseKind::Decreases(Decreases::Assume) => format!("{keyword} assume;"),
        ClauseKind::Decreases(Decreases::Measure(measure)) => {
            let mut out = String::from(keyword);
            for (i, e) in measure.iter().enumerate() {
                out.push_str(if i == 0 { " " } else { ", " });
                write_expr(&mut out, e, LOOSEST);
            }
            out.push(';');
            out
        }
    }
}

/// Expressions separated only by spaces (`gpuopt matrix_lin m R X Y;`) are read greedily, so
/// every operand but a literal or a name is parenthesised (else `N - 1 -M` reads as one
/// subtraction), and a name too when a parenthesised operand follows it (else `N (M + 1)` reads
/// as a call).
fn spaced_operands(operands: &[&Expr]) -> String {
    let plain = |e: &Expr| matches!(e.kind, ExprKind::IntLit(_) | ExprKind::Name(_));
    let mut out = String::new();
    for (i, operand) in operands.iter().enumerate() {
        let next_parenthesised = operands.get(i + 1).is_some_and(|next| !plain(next));
        let parenthesise =
            !plain(operand) || (next_parenthesised && matches!(operand.kind, ExprKind::Name(_)));
        if i > 0 {
            out.push(' ');
        }
        if parenthesise {
            out.push('(');
            write_expr_bare(&mut out, operand);
            out.push(')');
        } else {
            write_expr_bare(&mut out, operand);
        }
    }
    out
}

fn gpuopt_text(gpuopt: &GpuOpt) -> String {
    match &gpuopt.kind {
        GpuOptKind::LoopUnroll { var, factor } => {
            format!("gpuopt loop_unroll {} {};", var.name, print_expr(factor))
        }
        GpuOptKind::IterMerge { var, factor } => {
            format!("gpuopt iter_merge {} {};", var.name, print_expr(factor))
        }
        GpuOptKind::MatrixLin {
            matrix,
            order,
            rows,
            cols,
        } => format!(
            "gpuopt matrix_lin {} {} {};",
            matrix.name,
            match order {
                MatrixOrder::RowMajor => "R",
                MatrixOrder::ColumnMajor => "C",
            },
            spaced_operands(&[rows, cols])
        ),
        GpuOptKind::GlobToReg {
            array,
            rows,
            indices,
        } => {
            let mut out = format!("gpuopt glob_to_reg {}", array.name);
            for row in rows {
                out.push_str(&format!("[{}]", print_expr(row)));
            }
            if !indices.is_empty() {
                out.push(' ');
                write_list(&mut out, indices);
            }
            out.push(';');
            out
        }
        GpuOptKind::Tile { layout, size } => format!(
            "gpuopt tile {} {};",
            match layout {
                TileLayout::Inter => "inter",
                TileLayout::Intra => "intra",
            },
            print_expr(size)
        ),
        GpuOptKind::Fuse { count, block_hint } => {
            let operands: Vec<&Expr> = std::iter::once(count).chain(block_hint).collect();
            format!("gpuopt fuse {};", spaced_operands(&operands))
        }
    }
}

fn local_decl_text(ty: &Type, vars: &[LocalVar]) -> String {
    let mut out = String::new();
    write_type(&mut out, ty);
    for (i, var) in vars.iter().enumerate() {
        out.push_str(if i == 0 { " " } else { ", " });
        out.push_str(&var.name.name);
        if let Some(init) = &var.init {
            out.push_str(" = ");
            write_expr(&mut out, init, LOOSEST);
        }
    }
    out
}

/// The text of a statement that fits on one line, without its `;` (so that `for` headers can
/// reuse it); `None` for compound statements.
fn simple_stmt_text(stmt: &Stmt) -> Option<String> {
    let keyword = |word: &str, e: &Expr| {
        let mut out = String::with_capacity(64);
        out.push_str(word);
        out.push(' ');
        write_expr(&mut out, e, LOOSEST);
        out
    };
    Some(match &stmt.kind {
        StmtKind::LocalDecl { ty, vars } => local_decl_text(ty, vars),
        StmtKind::Assign { target, value } => {
            let mut out = String::with_capacity(64);
            write_expr(&mut out, target, LOOSEST);
            out.push_str(" = ");
            write_expr(&mut out, value, LOOSEST);
            out
        }
        StmtKind::Increment(target) | StmtKind::Decrement(target) => {
            let mut out = String::new();
            write_expr(&mut out, target, LEVEL_POSTFIX);
            out.push_str(if matches!(stmt.kind, StmtKind::Increment(_)) {
                "++"
            } else {
                "--"
            });
            out
        }
        StmtKind::Expr(e) => print_expr(e),
        StmtKind::Return(None) => "return".to_string(),
        StmtKind::Return(Some(e)) => keyword("return", e),
        StmtKind::Assert(e) => keyword("assert", e),
        StmtKind::Assume(e) => keyword("assume", e),
        StmtKind::Inhale(e) => keyword("inhale", e),
        StmtKind::Exhale(e) => keyword("exhale", e),
        StmtKind::Refute(e) => keyword("refute", e),
        StmtKind::Lock(e) => keyword("lock", e),
        StmtKind::Unlock(e) => keyword("unlock", e),
        StmtKind::Fold(e) => keyword("fold", e),
        StmtKind::Unfold(e) => keyword("unfold", e),
        StmtKind::Fork(e) => keyword("fork", e),
        StmtKind::Join(e) => keyword("join", e),
        StmtKind::Commit(e) => keyword("commit", e),
        StmtKind::Wait(e) => keyword("wait", e),
        StmtKind::Notify(e) => keyword("notify", e),
        StmtKind::Goto(l) => format!("goto {}", l.name),
        StmtKind::Label(l) => format!("label {}", l.name),
        StmtKind::Ghost(inner) => format!("ghost {}", simple_stmt_text(inner)?),
        _ => return None,
    })
}

/// Whether `else` written after `stmt` (without braces) would attach to an `if` inside it.
fn ends_with_open_if(stmt: &Stmt) -> bool {
    match &stmt.kind {
        StmtKind::If {
            else_branch: None, ..
        } => true,
        StmtKind::If {
            else_branch: Some(tail),
            ..
        } => ends_with_open_if(tail),
        StmtKind::While { body, .. } | StmtKind::For { body, .. } => ends_with_open_if(body),
        StmtKind::Ghost(inner) => ends_with_open_if(inner),
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Layout with comments and blank lines

const INDENT: &str = "    ";

struct Printer<'t> {
    out: String,
    indent: usize,
    /// Comments sorted by start; `comments[next_comment..]` are not printed yet. Everything
    /// flushes through this one cursor, which is why each comment is printed exactly once.
    comments: Vec<&'t Comment>,
    next_comment: usize,
    /// Sorted start offsets of the source's blank lines.
    blank_lines: Vec<u32>,
    /// The furthest source offset printed so far; a blank line between it and the next node's
    /// start is reproduced. Never moves back, so that a generated node (default span) or a
    /// node moved by a transformation cannot make an earlier blank line count twice.
    last_end: u32,
    /// A blank line is owed before the next line printed.
    blank_pending: bool,
    /// Nothing printed since an opening line (`{`, a par header): no blank line here.
    at_block_start: bool,
    /// The last line ends in a `//` comment: nothing may be appended to it.
    line_comment_open: bool,
    /// Text that the next code line starts with after its indentation (`ghost `, `} else `).
    prefix: String,
}

impl<'t> Printer<'t> {
    fn new(trivia: &'t Trivia) -> Self {
        let mut comments: Vec<&Comment> = trivia.comments.iter().collect();
        comments.sort_by_key(|c| c.span.start);
        let mut blank_lines = trivia.blank_lines.clone();
        blank_lines.sort_unstable();
        Printer {
            out: String::new(),
            indent: 0,
            comments,
            next_comment: 0,
            blank_lines,
            last_end: 0,
            blank_pending: false,
            at_block_start: true,
            line_comment_open: false,
            prefix: String::new(),
        }
    }

    // --- low level -----------------------------------------------------------------------

    fn write_indent(&mut self) {
        if self.blank_pending {
            self.out.push('\n');
            self.blank_pending = false;
        }
        for _ in 0..self.indent {
            self.out.push_str(INDENT);
        }
    }

    /// One line of code (with the pending prefix, if any).
    fn line(&mut self, text: &str) {
        self.write_indent();
        let prefix = std::mem::take(&mut self.prefix);
        self.out.push_str(&prefix);
        self.out.push_str(text);
        self.out.push('\n');
        self.at_block_start = false;
        self.line_comment_open = false;
    }

    /// A line after which a blank line would look like one at the start of a block.
    fn opening_line(&mut self, text: &str) {
        self.line(text);
        self.at_block_start = true;
    }

    fn open(&mut self, text: &str) {
        self.opening_line(text);
        self.indent += 1;
    }

    /// Flushes the comments before `end` (the end of the construct being closed), then prints
    /// the closing line one level out.
    fn close(&mut self, end: u32, text: &str) {
        self.flush_comments_before(end);
        self.indent = self.indent.saturating_sub(1);
        self.blank_pending = false;
        self.line(text);
        self.advance_to(end);
    }

    fn advance_to(&mut self, offset: u32) {
        self.last_end = self.last_end.max(offset);
    }

    fn has_comment_before(&self, pos: u32) -> bool {
        self.comments
            .get(self.next_comment)
            .is_some_and(|c| c.span.start < pos)
    }

    /// Owe a blank line if the source has one between what was printed last and `start`.
    fn note_blank_line_before(&mut self, start: u32) {
        if self.at_block_start || start <= self.last_end {
            return;
        }
        let first_after = self.blank_lines.partition_point(|&b| b <= self.last_end);
        if self
            .blank_lines
            .get(first_after)
            .is_some_and(|&b| b < start)
        {
            self.blank_pending = true;
        }
    }

    fn emit_comment(&mut self, comment: &Comment, force_trailing: bool) {
        let trailing = (force_trailing || !comment.own_line)
            && !self.line_comment_open
            && self.out.ends_with('\n');
        if trailing {
            self.out.pop();
            self.out.push(' ');
            self.out.push_str(&comment.text);
            self.out.push('\n');
        } else {
            self.note_blank_line_before(comment.span.start);
            self.write_indent();
            self.out.push_str(&comment.text);
            self.out.push('\n');
            self.at_block_start = false;
        }
        self.line_comment_open = comment.text.starts_with("//");
        self.last_end = self.last_end.max(comment.span.end);
    }

    fn flush_comments(&mut self, before: u32, force_trailing: bool) {
        while let Some(&comment) = self.comments.get(self.next_comment) {
            if comment.span.start >= before {
                break;
            }
            self.next_comment += 1;
            self.emit_comment(comment, force_trailing);
        }
    }

    fn flush_comments_before(&mut self, pos: u32) {
        self.flush_comments(pos, false);
    }

    /// After a one-line construct: the comments inside it go at the end of its line.
    fn finish_line_construct(&mut self, end: u32) {
        self.flush_comments(end, true);
        self.advance_to(end);
    }

    /// Before a member, clause, annotation or statement starting at `start`.
    fn begin_node(&mut self, start: u32) {
        self.flush_comments_before(start);
        self.note_blank_line_before(start);
        self.advance_to(start);
    }

    fn flush_remaining_comments(&mut self) {
        self.flush_comments_before(u32::MAX);
        // Comments of a span at u32::MAX cannot exist in a file we can read, but never lose one.
        while let Some(&comment) = self.comments.get(self.next_comment) {
            self.next_comment += 1;
            self.emit_comment(comment, false);
        }
    }

    // --- declarations --------------------------------------------------------------------

    fn class(&mut self, class: &Class) {
        self.begin_node(class.span.start);
        if !class.contract.clauses.is_empty() {
            self.clauses(&class.contract);
            self.flush_comments_before(class.name.span.start);
        }
        let keyword = if class.is_model { "model" } else { "class" };
        let header = format!("{keyword} {}", class.name.name);
        if class.members.is_empty() && !self.has_comment_before(class.span.end) {
            self.line(&format!("{header} {{ }}"));
            self.advance_to(class.span.end);
            return;
        }
        self.open(&format!("{header} {{"));
        for member in &class.members {
            self.member(member);
        }
        self.close(class.span.end, "}");
    }

    fn one_line(&mut self, start: u32, end: u32, text: &str) {
        self.begin_node(start);
        self.line(text);
        self.finish_line_construct(end);
    }

    fn gpuopt(&mut self, gpuopt: &GpuOpt) {
        self.one_line(gpuopt.span.start, gpuopt.span.end, &gpuopt_text(gpuopt));
    }

    fn clauses(&mut self, contract: &Contract) {
        for clause in &contract.clauses {
            self.one_line(clause.span.start, clause.span.end, &clause_text(clause));
        }
    }

    fn member(&mut self, member: &Member) {
        self.begin_node(member.span.start);
        for gpuopt in &member.gpuopts {
            self.gpuopt(gpuopt);
        }
        self.clauses(&member.contract);
        match &member.kind {
            MemberKind::Field(field) => {
                self.flush_comments_before(field.span.start);
                let mut text = String::new();
                write_type(&mut text, &field.ty);
                text.push(' ');
                text.push_str(&field.name.name);
                text.push(';');
                self.line(&text);
                self.finish_line_construct(field.span.end.max(member.span.end));
            }
            MemberKind::Method(method) => self.method(method, member.span.end),
        }
    }

    fn method(&mut self, method: &Method, member_end: u32) {
        // Comments between the contract and the header go above the header.
        let header_start = method
            .return_type
            .as_ref()
            .map_or(method.name.span.start, |ty| {
                ty.span.start.min(method.name.span.start)
            });
        self.flush_comments_before(header_start);

        let mut header = String::new();
        for modifier in &method.modifiers {
            header.push_str(match modifier {
                Modifier::Static => "static ",
                Modifier::Pure => "pure ",
                Modifier::Inline => "inline ",
                Modifier::ThreadLocal => "thread_local ",
            });
        }
        if method.is_run {
            // `run { .. }`: no type, no parameters.
            header.push_str("run");
        } else {
            match method.model_member {
                Some(ModelMember::Action) => header.push_str("action "),
                Some(ModelMember::Process) => header.push_str("process "),
                None => {}
            }
            if let Some(ty) = &method.return_type {
                write_type(&mut header, ty);
                header.push(' ');
            }
            header.push_str(&method.name.name);
            if !method.type_params.is_empty() {
                let names: Vec<&str> = method.type_params.iter().map(|t| t.name.as_str()).collect();
                header.push('<');
                header.push_str(&names.join(", "));
                header.push('>');
            }
            header.push('(');
            for (i, param) in method.params.iter().enumerate() {
                if i > 0 {
                    header.push_str(", ");
                }
                header.push_str(&param_text(param));
            }
            header.push(')');
        }

        let end = method.span.end.max(member_end);
        match &method.body {
            MethodBody::Abstract => {
                header.push(';');
                self.line(&header);
                self.finish_line_construct(end);
            }
            MethodBody::Expr(body) => {
                header.push_str(" = ");
                write_expr(&mut header, body, LOOSEST);
                header.push(';');
                self.line(&header);
                self.finish_line_construct(end);
            }
            MethodBody::Block(block) => self.block_after(&header, block),
        }
    }

    // --- statements ----------------------------------------------------------------------

    fn stmts(&mut self, stmts: &[Stmt]) {
        for stmt in stmts {
            self.stmt(stmt);
        }
    }

    /// `header { stmts }`, or `header { }` when there is nothing inside (not even a comment).
    /// An empty header prints a bare block.
    fn block_after(&mut self, header: &str, block: &Block) {
        let space = if header.is_empty() { "" } else { " " };
        if block.stmts.is_empty() && !self.has_comment_before(block.span.end) {
            self.line(&format!("{header}{space}{{ }}"));
            self.advance_to(block.span.end);
        } else {
            self.open(&format!("{header}{space}{{"));
            self.stmts(&block.stmts);
            self.close(block.span.end, "}");
        }
    }

    /// Prints `header` and a branch body: a block opens on the header line and is left open
    /// (returns true: the caller prints the `}`, maybe as `} else {`); any other statement goes
    /// indented on the next line, unless `force_braces` (then it is wrapped in a block).
    fn branch(&mut self, header: &str, body: &Stmt, force_braces: bool) -> bool {
        match &body.kind {
            StmtKind::Block(block) => {
                self.open(&format!("{header} {{"));
                self.stmts(&block.stmts);
                self.flush_comments_before(block.span.end);
                self.indent = self.indent.saturating_sub(1);
                self.advance_to(block.span.end);
                true
            }
            _ if force_braces => {
                self.open(&format!("{header} {{"));
                self.stmt(body);
                self.indent = self.indent.saturating_sub(1);
                true
            }
            _ => {
                self.opening_line(header);
                self.indent += 1;
                self.stmt(body);
                self.indent -= 1;
                false
            }
        }
    }

    /// A loop or `if` body that nothing follows.
    fn final_branch(&mut self, header: &str, body: &Stmt) {
        if let StmtKind::Block(block) = &body.kind {
            self.block_after(header, block);
        } else {
            self.branch(header, body, false);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        self.begin_node(stmt.span.start);
        self.stmt_started(stmt);
        // A `ghost ` or `else ` prefix belongs to this statement even if it printed nothing
        // (a par group without blocks).
        self.prefix.clear();
        self.advance_to(stmt.span.end);
    }

    /// Prints a statement whose preceding comments and blank line are already dealt with.
    fn stmt_started(&mut self, stmt: &Stmt) {
        if let Some(text) = simple_stmt_text(stmt) {
            self.line(&format!("{text};"));
            self.finish_line_construct(stmt.span.end);
            return;
        }
        match &stmt.kind {
            StmtKind::If {
                cond,
                then_branch,
                else_branch,
            } => self.if_stmt(cond, then_branch, else_branch.as_deref()),
            StmtKind::While {
                contract,
                cond,
                body,
            } => {
                self.clauses(contract);
                self.flush_comments_before(cond.span.start);
                self.final_branch(&format!("while ({})", print_expr(cond)), body);
            }
            StmtKind::For {
                contract,
                init,
                cond,
                update,
                body,
            } => {
                self.clauses(contract);
                let header_start = init
                    .as_ref()
                    .map(|s| s.span.start)
                    .or(cond.as_ref().map(|c| c.span.start))
                    .or(update.as_ref().map(|s| s.span.start))
                    .unwrap_or(body.span.start);
                self.flush_comments_before(header_start);
                let part = |s: &Option<Box<Stmt>>| {
                    s.as_deref().and_then(simple_stmt_text).unwrap_or_default()
                };
                let mut header = format!("for ({};", part(init));
                if let Some(cond) = cond {
                    header.push(' ');
                    header.push_str(&print_expr(cond));
                }
                header.push(';');
                let update = part(update);
                if !update.is_empty() {
                    header.push(' ');
                    header.push_str(&update);
                }
                header.push(')');
                self.final_branch(&header, body);
            }
            StmtKind::Block(block) => self.block_after("", block),
            StmtKind::Par(group) => self.par_group(group, stmt.span.end),
            StmtKind::Barrier(barrier) => self.barrier(barrier, stmt.span.end),
            StmtKind::Ghost(inner) => {
                self.prefix.push_str("ghost ");
                self.stmt_started(inner);
            }
            StmtKind::Invariant { name, inv, body } => {
                let header = format!("invariant {}({})", name.name, print_expr(inv));
                self.block_after(&header, body);
            }
            StmtKind::Atomic { name, body } => {
                self.block_after(&format!("atomic({})", name.name), body);
            }
            StmtKind::Action { header, body } => {
                let mut text = format!(
                    "action({}, {}, {}, {}",
                    print_expr(&header.model),
                    print_expr(&header.fraction),
                    print_expr(&header.rest),
                    print_expr(&header.action)
                );
                for (field, amount) in &header.converts {
                    text.push_str(&format!(", {}, {}", print_expr(field), print_expr(amount)));
                }
                text.push(')');
                self.block_after(&text, body);
            }
            StmtKind::GpuOpt(gpuopt) => {
                self.line(&gpuopt_text(gpuopt));
                self.finish_line_construct(stmt.span.end);
            }
            // One-line statements were printed above.
            _ => {}
        }
    }

    fn if_stmt(&mut self, cond: &Expr, then_branch: &Stmt, else_branch: Option<&Stmt>) {
        let header = format!("if ({})", print_expr(cond));
        let Some(else_branch) = else_branch else {
            self.final_branch(&header, then_branch);
            return;
        };
        // `if (a) if (b) x; else y;` gives the `else` to the inner `if`: braces keep it ours.
        let then_open = self.branch(&header, then_branch, ends_with_open_if(then_branch));
        let keyword = if then_open { "} else" } else { "else" };
        match &else_branch.kind {
            StmtKind::If { .. } => {
                self.prefix = format!("{keyword} ");
                self.stmt_started(else_branch);
            }
            StmtKind::Block(_) => {
                if self.branch(keyword, else_branch, false) {
                    self.line("}");
                }
            }
            _ => {
                self.branch(keyword, else_branch, false);
            }
        }
    }

    fn par_group(&mut self, group: &ParGroup, end: u32) {
        match group.style {
            ParGroupStyle::And => {
                for (i, block) in group.blocks.iter().enumerate() {
                    if i > 0 {
                        self.begin_node(block.span.start);
                    }
                    self.par_block(if i == 0 { "par" } else { "and" }, block);
                }
            }
            ParGroupStyle::Vector => {
                for block in &group.blocks {
                    self.par_block("vec", block);
                }
            }
            ParGroupStyle::Parallel | ParGroupStyle::Sequential => {
                self.open(if group.style == ParGroupStyle::Parallel {
                    "parallel {"
                } else {
                    "sequential {"
                });
                for block in &group.blocks {
                    self.begin_node(block.span.start);
                    self.par_block("par", block);
                }
                self.close(end, "}");
            }
        }
    }

    fn par_block(&mut self, keyword: &str, block: &ParBlock) {
        let mut header = keyword.to_string();
        if let Some(label) = &block.label {
            header.push(' ');
            header.push_str(&label.name);
        }
        if !block.iters.is_empty() {
            if block.label.is_none() {
                header.push(' ');
            }
            header.push('(');
            for (i, iter) in block.iters.iter().enumerate() {
                if i > 0 {
                    header.push_str(", ");
                }
                write_type(&mut header, &iter.ty);
                header.push(' ');
                header.push_str(&iter.name.name);
                header.push_str(" = ");
                write_expr(&mut header, &iter.lo, LOOSEST);
                header.push_str(" .. ");
                write_expr(&mut header, &iter.hi, LOOSEST);
            }
            header.push(')');
        }
        if block.contract.clauses.is_empty() {
            self.block_after(&header, &block.body);
            return;
        }
        self.opening_line(&header);
        self.indent += 1;
        self.clauses(&block.contract);
        self.indent -= 1;
        self.flush_comments_before(block.body.span.start);
        self.block_after("", &block.body);
    }

    fn barrier(&mut self, barrier: &Barrier, end: u32) {
        let mut header = format!("barrier({}", barrier.label.name);
        for (i, invariant) in barrier.invariants.iter().enumerate() {
            header.push_str(if i == 0 { "; " } else { ", " });
            header.push_str(&invariant.name);
        }
        header.push(')');
        let end = end.max(barrier.body.span.end);
        match barrier.style {
            BarrierStyle::ClausesInside => {
                if barrier.contract.clauses.is_empty()
                    && barrier.body.stmts.is_empty()
                    && !self.has_comment_before(end)
                {
                    self.line(&format!("{header} {{ }}"));
                    self.advance_to(end);
                    return;
                }
                self.open(&format!("{header} {{"));
                self.clauses(&barrier.contract);
                self.stmts(&barrier.body.stmts);
                self.close(end, "}");
            }
            BarrierStyle::ClausesBefore => {
                self.opening_line(&header);
                self.indent += 1;
                self.clauses(&barrier.contract);
                self.indent -= 1;
                self.flush_comments_before(barrier.body.span.start);
                self.block_after("", &barrier.body);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_bigint::BigUint;

    // --- IR builders (spans default unless a test cares) ---------------------------------

    fn ident(name: &str) -> Ident {
        Ident {
            name: name.to_string(),
            span: Span::default(),
        }
    }

    fn ex(kind: ExprKind) -> Expr {
        Expr {
            kind,
            span: Span::default(),
        }
    }

    fn var(name: &str) -> Expr {
        ex(ExprKind::Name(ident(name)))
    }

    fn int(value: u64) -> Expr {
        ex(ExprKind::IntLit(BigUint::from(value)))
    }

    fn bin(op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
        ex(ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        })
    }

    fn unary(op: UnaryOp, operand: Expr) -> Expr {
        ex(ExprKind::Unary {
            op,
            operand: Box::new(operand),
        })
    }

    fn cond(c: Expr, a: Expr, b: Expr) -> Expr {
        ex(ExprKind::Cond {
            cond: Box::new(c),
            then_expr: Box::new(a),
            else_expr: Box::new(b),
        })
    }

    fn index(base: Expr, i: Expr) -> Expr {
        ex(ExprKind::Index {
            base: Box::new(base),
            index: Box::new(i),
        })
    }

    fn call(name: &str, args: Vec<Expr>) -> Expr {
        ex(ExprKind::Call {
            receiver: None,
            name: ident(name),
            type_args: vec![],
            args,
            given: vec![],
            yields: vec![],
        })
    }

    fn builtin(op: Builtin, args: Vec<Expr>) -> Expr {
        ex(ExprKind::Builtin { op, args })
    }

    fn frac(a: Expr, b: Expr) -> Expr {
        bin(BinaryOp::FracDiv, a, b)
    }

    fn perm(loc: Expr, amount: Expr) -> Expr {
        builtin(Builtin::Perm, vec![loc, amount])
    }

    fn write() -> Expr {
        ex(ExprKind::PermLit(PermLit::Write))
    }

    fn ty(kind: TypeKind) -> Type {
        Type {
            kind,
            span: Span::default(),
        }
    }

    fn int_ty() -> Type {
        ty(TypeKind::Int)
    }

    fn array_ty(elem: Type, size: Option<Expr>) -> Type {
        ty(TypeKind::Array {
            elem: Box::new(elem),
            size: size.map(Box::new),
        })
    }

    fn binder(name: &str, range: Option<(Expr, Expr)>) -> Binder {
        Binder {
            ty: int_ty(),
            name: ident(name),
            range,
            span: Span::default(),
        }
    }

    fn quant(kind: QuantifierKind, binders: Vec<Binder>, c: Option<Expr>, body: Expr) -> Expr {
        ex(ExprKind::Quantifier(Box::new(Quantifier {
            kind,
            binders,
            cond: c,
            body,
        })))
    }

    fn st(kind: StmtKind) -> Stmt {
        Stmt {
            kind,
            span: Span::default(),
        }
    }

    fn assign(target: Expr, value: Expr) -> Stmt {
        st(StmtKind::Assign { target, value })
    }

    fn block(stmts: Vec<Stmt>) -> Block {
        Block {
            stmts,
            span: Span::default(),
        }
    }

    fn block_stmt(stmts: Vec<Stmt>) -> Stmt {
        st(StmtKind::Block(block(stmts)))
    }

    fn clause(kind: ClauseKind) -> Clause {
        Clause {
            kind,
            span: Span::default(),
        }
    }

    fn contract(clauses: Vec<ClauseKind>) -> Contract {
        Contract {
            clauses: clauses.into_iter().map(clause).collect(),
        }
    }

    fn gpuopt(kind: GpuOptKind) -> GpuOpt {
        GpuOpt {
            kind,
            span: Span::default(),
        }
    }

    fn param(ty: Type, name: &str) -> Param {
        Param {
            ty,
            name: ident(name),
            span: Span::default(),
        }
    }

    fn method_member(gpuopts: Vec<GpuOpt>, clauses: Vec<ClauseKind>, method: Method) -> Member {
        Member {
            gpuopts,
            contract: contract(clauses),
            kind: MemberKind::Method(method),
            span: Span::default(),
        }
    }

    fn method(
        return_type: Option<Type>,
        name: &str,
        params: Vec<Param>,
        body: MethodBody,
    ) -> Method {
        Method {
            modifiers: vec![],
            return_type,
            name: ident(name),
            type_params: vec![],
            params,
            body,
            span: Span::default(),
            is_run: false,
            model_member: None,
        }
    }

    fn class(name: &str, members: Vec<Member>) -> Item {
        Item::Class(Class {
            contract: Contract::default(),
            name: ident(name),
            members,
            span: Span::default(),
            is_model: false,
        })
    }

    fn program(items: Vec<Item>) -> Program {
        Program {
            items,
            span: Span::default(),
        }
    }

    fn par_block(
        label: Option<&str>,
        iters: Vec<(&str, Expr, Expr)>,
        clauses: Vec<ClauseKind>,
        body: Vec<Stmt>,
    ) -> ParBlock {
        ParBlock {
            label: label.map(ident),
            iters: iters
                .into_iter()
                .map(|(name, lo, hi)| ParIter {
                    ty: int_ty(),
                    name: ident(name),
                    lo,
                    hi,
                    span: Span::default(),
                })
                .collect(),
            contract: contract(clauses),
            body: block(body),
            span: Span::default(),
        }
    }

    fn par(blocks: Vec<ParBlock>, style: ParGroupStyle) -> Stmt {
        st(StmtKind::Par(ParGroup { blocks, style }))
    }

    use BinaryOp::*;

    // --- expressions ---------------------------------------------------------------------

    #[test]
    fn parenthesisation_follows_precedence_and_associativity() {
        let (a, b, c) = (var("a"), var("b"), var("c"));
        let cases = [
            (
                bin(Sub, a.clone(), bin(Sub, b.clone(), c.clone())),
                "a - (b - c)",
            ),
            (
                bin(Sub, bin(Sub, a.clone(), b.clone()), c.clone()),
                "a - b - c",
            ),
            (
                bin(Implies, bin(Implies, a.clone(), b.clone()), c.clone()),
                "(a ==> b) ==> c",
            ),
            (
                bin(Implies, a.clone(), bin(Implies, b.clone(), c.clone())),
                "a ==> b ==> c",
            ),
            (
                bin(Eq, bin(Lt, a.clone(), b.clone()), c.clone()),
                "(a < b) == c",
            ),
            (
                bin(Lt, a.clone(), bin(Lt, b.clone(), c.clone())),
                "a < (b < c)",
            ),
            (
                bin(Eq, bin(Eq, a.clone(), b.clone()), c.clone()),
                "(a == b) == c",
            ),
            (
                bin(Lt, bin(Add, a.clone(), b.clone()), c.clone()),
                "a + b < c",
            ),
            (
                bin(Mul, bin(Add, a.clone(), b.clone()), c.clone()),
                "(a + b) * c",
            ),
            (
                bin(Add, a.clone(), bin(Mul, b.clone(), c.clone())),
                "a + b * c",
            ),
            (
                bin(Cons, a.clone(), bin(Cons, b.clone(), c.clone())),
                "a :: b :: c",
            ),
            (
                bin(Cons, bin(Cons, a.clone(), b.clone()), c.clone()),
                "(a :: b) :: c",
            ),
            (
                bin(Concat, bin(Cons, a.clone(), b.clone()), c.clone()),
                "a :: b ++ c",
            ),
            (
                bin(Cons, a.clone(), bin(Concat, b.clone(), c.clone())),
                "a :: (b ++ c)",
            ),
            (
                bin(Eq, bin(In, a.clone(), b.clone()), c.clone()),
                "(a in b) == c",
            ),
            (
                bin(In, bin(Add, a.clone(), b.clone()), c.clone()),
                "a + b in c",
            ),
            (
                bin(In, bin(In, a.clone(), b.clone()), c.clone()),
                "(a in b) in c",
            ),
            (unary(UnaryOp::Neg, unary(UnaryOp::Neg, var("x"))), "-(-x)"),
            (unary(UnaryOp::Neg, unary(UnaryOp::Neg, int(1))), "-(-1)"),
            (unary(UnaryOp::Neg, int(1)), "-1"),
            (
                bin(Sub, a.clone(), unary(UnaryOp::Neg, b.clone())),
                "a - -b",
            ),
            (unary(UnaryOp::Not, unary(UnaryOp::Not, a.clone())), "!!a"),
            (
                unary(UnaryOp::Not, bin(And, a.clone(), b.clone())),
                "!(a && b)",
            ),
            (
                unary(UnaryOp::Neg, bin(Add, a.clone(), b.clone())),
                "-(a + b)",
            ),
            (unary(UnaryOp::Neg, index(a.clone(), b.clone())), "-a[b]"),
            (index(unary(UnaryOp::Neg, a.clone()), b.clone()), "(-a)[b]"),
            (
                index(bin(Add, a.clone(), b.clone()), c.clone()),
                "(a + b)[c]",
            ),
            (index(index(a.clone(), b.clone()), c.clone()), "a[b][c]"),
            (
                cond(cond(a.clone(), b.clone(), c.clone()), a.clone(), b.clone()),
                "(a ? b : c) ? a : b",
            ),
            (
                cond(a.clone(), b.clone(), cond(c.clone(), a.clone(), b.clone())),
                "a ? b : c ? a : b",
            ),
            (
                cond(a.clone(), cond(c.clone(), a.clone(), b.clone()), b.clone()),
                "a ? (c ? a : b) : b",
            ),
            (
                bin(Implies, a.clone(), cond(a.clone(), b.clone(), c.clone())),
                "a ==> (a ? b : c)",
            ),
            (
                cond(bin(Implies, a.clone(), b.clone()), b.clone(), c.clone()),
                "a ==> b ? b : c",
            ),
            (
                bin(Add, cond(a.clone(), b.clone(), c.clone()), a.clone()),
                "(a ? b : c) + a",
            ),
        ];
        for (expr, expected) in cases {
            assert_eq!(print_expr(&expr), expected);
        }
    }

    #[test]
    fn mixed_and_or_is_always_parenthesised() {
        let (a, b, c) = (var("a"), var("b"), var("c"));
        let cases = [
            (
                bin(Or, a.clone(), bin(And, b.clone(), c.clone())),
                "a || (b && c)",
            ),
            (
                bin(Or, bin(And, a.clone(), b.clone()), c.clone()),
                "(a && b) || c",
            ),
            (
                bin(And, bin(Or, a.clone(), b.clone()), c.clone()),
                "(a || b) && c",
            ),
            (
                bin(And, a.clone(), bin(Or, b.clone(), c.clone())),
                "a && (b || c)",
            ),
            (
                bin(Or, bin(Star, a.clone(), b.clone()), c.clone()),
                "(a ** b) || c",
            ),
            (
                bin(Star, bin(And, a.clone(), b.clone()), c.clone()),
                "a && b ** c",
            ),
            (
                bin(And, a.clone(), bin(Star, b.clone(), c.clone())),
                "a && (b ** c)",
            ),
            (
                bin(Or, bin(Or, a.clone(), b.clone()), c.clone()),
                "a || b || c",
            ),
            (
                bin(And, bin(And, a.clone(), b.clone()), c.clone()),
                "a && b && c",
            ),
            (
                bin(
                    Implies,
                    bin(And, a.clone(), b.clone()),
                    bin(Or, b.clone(), c.clone()),
                ),
                "a && b ==> b || c",
            ),
        ];
        for (expr, expected) in cases {
            assert_eq!(print_expr(&expr), expected);
        }
    }

    #[test]
    fn fractions_and_permissions() {
        let amount = frac(int(1), int(2));
        assert_eq!(
            print_expr(&perm(index(var("a"), var("i")), amount)),
            "Perm(a[i], 1\\2)"
        );
        assert_eq!(print_expr(&frac(int(1), var("N"))), "1\\N");
        assert_eq!(
            print_expr(&frac(var("p"), bin(Add, var("N"), int(1)))),
            "p \\ (N + 1)"
        );
        assert_eq!(
            print_expr(&frac(int(1), ex(ExprKind::Result))),
            "1 \\ \\result"
        );
        assert_eq!(print_expr(&frac(int(1), var("old"))), "1 \\ old");
        assert_eq!(
            print_expr(&bin(Mul, int(2), frac(int(1), int(4)))),
            "2 * (1\\4)"
        );
        assert_eq!(
            print_expr(&bin(Add, frac(int(1), int(4)), frac(int(1), int(4)))),
            "1\\4 + 1\\4"
        );
        assert_eq!(
            print_expr(&builtin(Builtin::Array, vec![var("a"), var("n")])),
            "\\array(a, n)"
        );
        assert_eq!(
            print_expr(&builtin(
                Builtin::Matrix,
                vec![var("m"), var("M"), var("N")]
            )),
            "\\matrix(m, M, N)"
        );
        assert_eq!(
            print_expr(&builtin(Builtin::PointsTo, vec![var("x"), write(), int(1)])),
            "PointsTo(x, write, 1)"
        );
        assert_eq!(print_expr(&ex(ExprKind::PermLit(PermLit::Read))), "read");
        assert_eq!(print_expr(&ex(ExprKind::PermLit(PermLit::None))), "none");
    }

    #[test]
    fn quantifiers_let_and_sum() {
        let i = var("i");
        let in_range = bin(
            And,
            bin(Le, int(0), i.clone()),
            bin(Lt, i.clone(), var("n")),
        );
        let forall_star = quant(
            QuantifierKind::ForallStar,
            vec![binder("i", None)],
            Some(in_range.clone()),
            perm(index(var("a"), i.clone()), write()),
        );
        assert_eq!(
            print_expr(&forall_star),
            "(\\forall* int i; 0 <= i && i < n; Perm(a[i], write))"
        );
        let ranged = quant(
            QuantifierKind::ForallStar,
            vec![binder("i", Some((int(0), var("n"))))],
            None,
            perm(index(var("a"), i.clone()), write()),
        );
        assert_eq!(
            print_expr(&ranged),
            "(\\forall* int i = 0 .. n; Perm(a[i], write))"
        );
        let nested = quant(
            QuantifierKind::Forall,
            vec![binder("i", None), binder("j", None)],
            Some(in_range.clone()),
            quant(
                QuantifierKind::Exists,
                vec![binder("k", None)],
                None,
                bin(Eq, var("k"), {
                    let mut trigger = index(var("a"), i.clone());
                    trigger = ex(ExprKind::Trigger(Box::new(trigger), None));
                    trigger
                }),
            ),
        );
        assert_eq!(
            print_expr(&nested),
            "(\\forall int i, int j; 0 <= i && i < n; (\\exists int k; k == {: a[i] :}))"
        );
        let sum = quant(
            QuantifierKind::Sum,
            vec![binder("i", None)],
            Some(in_range),
            index(var("a"), i),
        );
        assert_eq!(print_expr(&sum), "(\\sum int i; 0 <= i && i < n; a[i])");
        let let_expr = ex(ExprKind::Let {
            ty: int_ty(),
            name: ident("x"),
            value: Box::new(bin(Add, var("y"), int(1))),
            body: Box::new(bin(Mul, var("x"), var("x"))),
        });
        assert_eq!(print_expr(&let_expr), "(\\let int x = y + 1; x * x)");
        // A quantifier carries its own parentheses.
        assert_eq!(
            print_expr(&bin(And, var("a"), forall_star.clone())),
            format!("a && {}", print_expr(&forall_star))
        );
    }

    #[test]
    fn sequences_maps_and_postfix_forms() {
        let s = var("s");
        let slice = |from: Option<Expr>, to: Option<Expr>| {
            ex(ExprKind::Slice {
                base: Box::new(s.clone()),
                from: from.map(Box::new),
                to: to.map(Box::new),
            })
        };
        assert_eq!(
            print_expr(&slice(Some(var("a")), Some(var("b")))),
            "s[a..b]"
        );
        assert_eq!(print_expr(&slice(Some(int(1)), None)), "s[1..]");
        assert_eq!(print_expr(&slice(None, Some(var("b")))), "s[..b]");
        assert_eq!(
            print_expr(&slice(Some(bin(Add, var("a"), int(1))), Some(var("b")))),
            "s[a + 1 .. b]"
        );
        let update = ex(ExprKind::Update {
            base: Box::new(s.clone()),
            index: Box::new(var("i")),
            value: Box::new(var("v")),
        });
        assert_eq!(print_expr(&update), "s[i -> v]");
        let length = |e: Expr| ex(ExprKind::Length(Box::new(e)));
        assert_eq!(print_expr(&length(s.clone())), "|s|");
        assert_eq!(
            print_expr(&length(bin(Concat, s.clone(), var("t")))),
            "|s ++ t|"
        );
        assert_eq!(print_expr(&length(length(s.clone()))), "|(|s|)|");
        assert_eq!(
            print_expr(&length(bin(Add, length(s.clone()), int(1)))),
            "|(|s| + 1)|"
        );
        assert_eq!(
            print_expr(&bin(Or, length(s.clone()), var("b"))),
            "|s| || b"
        );
        let seq = ex(ExprKind::Collection {
            kind: CollectionKind::Seq,
            elem: Some(int_ty()),
            elems: vec![int(1), int(2)],
        });
        assert_eq!(print_expr(&seq), "seq<int>{1, 2}");
        let list = ex(ExprKind::Collection {
            kind: CollectionKind::Seq,
            elem: None,
            elems: vec![int(1), int(2)],
        });
        assert_eq!(print_expr(&list), "[1, 2]");
        let empty_set = ex(ExprKind::Collection {
            kind: CollectionKind::Set,
            elem: Some(ty(TypeKind::Bool)),
            elems: vec![],
        });
        assert_eq!(print_expr(&empty_set), "set<boolean>{}");
        let map = ex(ExprKind::MapLit {
            key: int_ty(),
            value: int_ty(),
            entries: vec![(int(1), int(2)), (int(3), int(4))],
        });
        assert_eq!(print_expr(&map), "map<int,int>{1 -> 2, 3 -> 4}");
        let field = |base: Expr, name: &str| {
            ex(ExprKind::Field {
                base: Box::new(base),
                name: ident(name),
            })
        };
        assert_eq!(print_expr(&field(var("a"), "length")), "a.length");
        assert_eq!(print_expr(&field(ex(ExprKind::This), "x")), "this.x");
        let new_c = ex(ExprKind::New {
            class: ident("C"),
            args: vec![var("x")],
            given: Vec::new(),
            yields: Vec::new(),
        });
        assert_eq!(print_expr(&new_c), "new C(x)");
        assert_eq!(print_expr(&field(new_c, "f")), "(new C(x)).f");
        let new_matrix = ex(ExprKind::NewArray {
            elem: int_ty(),
            dims: vec![var("M"), var("N")],
        });
        assert_eq!(print_expr(&new_matrix), "new int[M][N]");
        assert_eq!(print_expr(&index(new_matrix, int(0))), "(new int[M][N])[0]");
        let old = ex(ExprKind::Old(Box::new(index(var("a"), var("i")))));
        assert_eq!(print_expr(&old), "\\old(a[i])");
        let method_call = ex(ExprKind::Call {
            receiver: Some(Box::new(ex(ExprKind::This))),
            name: ident("swap"),
            type_args: vec![],
            args: vec![var("a"), var("i"), var("j")],
            given: vec![],
            yields: vec![],
        });
        assert_eq!(print_expr(&method_call), "this.swap(a, i, j)");
        let ghost_call = ex(ExprKind::Call {
            receiver: None,
            name: ident("f"),
            type_args: vec![],
            args: vec![var("x")],
            given: vec![GhostArg {
                name: ident("a"),
                value: var("e"),
                span: Span::default(),
            }],
            yields: vec![GhostArg {
                name: ident("b"),
                value: var("c"),
                span: Span::default(),
            }],
        });
        assert_eq!(
            print_expr(&ghost_call),
            "f(x) with { a = e; } then { b = c; }"
        );
        assert_eq!(
            print_expr(&field(ghost_call, "g")),
            "(f(x) with { a = e; } then { b = c; }).g"
        );
        let unfolding = ex(ExprKind::Unfolding {
            pred: Box::new(call("p", vec![])),
            body: Box::new(var("x")),
        });
        assert_eq!(print_expr(&unfolding), "unfolding p() in x");
        assert_eq!(
            print_expr(&bin(And, unfolding.clone(), var("y"))),
            "(unfolding p() in x) && y"
        );
        assert_eq!(
            print_expr(&bin(And, var("y"), unfolding.clone())),
            "y && (unfolding p() in x)"
        );
        assert_eq!(
            print_expr(&unary(UnaryOp::Not, unfolding)),
            "!(unfolding p() in x)"
        );
        assert_eq!(
            print_expr(&ex(ExprKind::IntLit(
                "123456789012345678901234567890".parse().unwrap()
            ))),
            "123456789012345678901234567890"
        );
        assert_eq!(print_expr(&ex(ExprKind::Null)), "null");
        assert_eq!(print_expr(&ex(ExprKind::BoolLit(false))), "false");
    }

    #[test]
    fn types() {
        let cases = [
            (int_ty(), "int"),
            (ty(TypeKind::Bool), "boolean"),
            (array_ty(int_ty(), None), "int[]"),
            (array_ty(int_ty(), Some(var("N"))), "int[N]"),
            (
                array_ty(array_ty(int_ty(), Some(var("N"))), Some(var("M"))),
                "int[M][N]",
            ),
            (array_ty(array_ty(int_ty(), None), None), "int[][]"),
            (
                ty(TypeKind::Seq(Box::new(ty(TypeKind::Seq(Box::new(
                    int_ty(),
                )))))),
                "seq<seq<int>>",
            ),
            (ty(TypeKind::Option(Box::new(int_ty()))), "option<int>"),
            (
                ty(TypeKind::Map(
                    Box::new(int_ty()),
                    Box::new(ty(TypeKind::Bool)),
                )),
                "map<int,boolean>",
            ),
            (ty(TypeKind::Class(ident("Ref"))), "Ref"),
            (ty(TypeKind::ZFrac), "zfrac"),
        ];
        for (t, expected) in cases {
            assert_eq!(print_type(&t), expected);
        }
    }

    // --- statements and declarations -----------------------------------------------------

    #[test]
    fn simple_statements() {
        let cases = [
            (
                st(StmtKind::LocalDecl {
                    ty: int_ty(),
                    vars: vec![
                        LocalVar {
                            name: ident("x"),
                            init: None,
                            span: Span::default(),
                        },
                        LocalVar {
                            name: ident("y"),
                            init: Some(int(0)),
                            span: Span::default(),
                        },
                    ],
                }),
                "int x, y = 0;\n",
            ),
            (
                assign(index(index(var("m"), var("i")), var("j")), int(1)),
                "m[i][j] = 1;\n",
            ),
            (st(StmtKind::Increment(var("x"))), "x++;\n"),
            (
                st(StmtKind::Decrement(index(var("a"), var("i")))),
                "a[i]--;\n",
            ),
            (st(StmtKind::Expr(call("f", vec![]))), "f();\n"),
            (st(StmtKind::Return(None)), "return;\n"),
            (st(StmtKind::Return(Some(var("x")))), "return x;\n"),
            (st(StmtKind::Assert(var("x"))), "assert x;\n"),
            (st(StmtKind::Assume(var("x"))), "assume x;\n"),
            (st(StmtKind::Inhale(var("x"))), "inhale x;\n"),
            (st(StmtKind::Exhale(var("x"))), "exhale x;\n"),
            (st(StmtKind::Lock(ex(ExprKind::This))), "lock this;\n"),
            (st(StmtKind::Unlock(ex(ExprKind::This))), "unlock this;\n"),
            (st(StmtKind::Fork(var("t"))), "fork t;\n"),
            (st(StmtKind::Goto(ident("done"))), "goto done;\n"),
            (st(StmtKind::Label(ident("done"))), "label done;\n"),
            (st(StmtKind::Join(var("t"))), "join t;\n"),
            (st(StmtKind::Commit(ex(ExprKind::This))), "commit this;\n"),
            (st(StmtKind::Wait(var("o"))), "wait o;\n"),
            (st(StmtKind::Notify(var("o"))), "notify o;\n"),
            (
                st(StmtKind::Fold(call("p", vec![var("x")]))),
                "fold p(x);\n",
            ),
            (
                st(StmtKind::Unfold(call("p", vec![var("x")]))),
                "unfold p(x);\n",
            ),
            (
                st(StmtKind::Ghost(Box::new(st(StmtKind::LocalDecl {
                    ty: int_ty(),
                    vars: vec![LocalVar {
                        name: ident("x"),
                        init: Some(int(0)),
                        span: Span::default(),
                    }],
                })))),
                "ghost int x = 0;\n",
            ),
            (block_stmt(vec![]), "{ }\n"),
            (
                block_stmt(vec![st(StmtKind::Increment(var("x")))]),
                "{\n    x++;\n}\n",
            ),
        ];
        for (stmt, expected) in cases {
            assert_eq!(print_stmt(&stmt), expected);
        }
    }

    #[test]
    fn gpuopts() {
        let cases = [
            (
                GpuOptKind::LoopUnroll {
                    var: ident("i"),
                    factor: int(2),
                },
                "gpuopt loop_unroll i 2;",
            ),
            (
                GpuOptKind::IterMerge {
                    var: ident("i"),
                    factor: int(4),
                },
                "gpuopt iter_merge i 4;",
            ),
            (
                GpuOptKind::MatrixLin {
                    matrix: ident("m"),
                    order: MatrixOrder::RowMajor,
                    rows: int(4),
                    cols: int(4),
                },
                "gpuopt matrix_lin m R 4 4;",
            ),
            (
                GpuOptKind::MatrixLin {
                    matrix: ident("m"),
                    order: MatrixOrder::ColumnMajor,
                    rows: var("N"),
                    cols: bin(Add, var("M"), int(1)),
                },
                "gpuopt matrix_lin m C (N) (M + 1);",
            ),
            (
                GpuOptKind::MatrixLin {
                    matrix: ident("m"),
                    order: MatrixOrder::RowMajor,
                    rows: bin(Sub, var("N"), int(1)),
                    cols: unary(UnaryOp::Neg, var("M")),
                },
                "gpuopt matrix_lin m R (N - 1) (-M);",
            ),
            (
                GpuOptKind::GlobToReg {
                    array: ident("a"),
                    rows: vec![],
                    indices: vec![var("tid"), bin(Add, var("tid"), int(1))],
                },
                "gpuopt glob_to_reg a tid, tid + 1;",
            ),
            (
                GpuOptKind::GlobToReg {
                    array: ident("m"),
                    rows: vec![var("i")],
                    indices: vec![var("j")],
                },
                "gpuopt glob_to_reg m[i] j;",
            ),
            (
                GpuOptKind::Tile {
                    layout: TileLayout::Inter,
                    size: int(4),
                },
                "gpuopt tile inter 4;",
            ),
            (
                GpuOptKind::Tile {
                    layout: TileLayout::Intra,
                    size: int(8),
                },
                "gpuopt tile intra 8;",
            ),
            (
                GpuOptKind::Fuse {
                    count: int(2),
                    block_hint: Some(int(32)),
                },
                "gpuopt fuse 2 32;",
            ),
            (
                GpuOptKind::Fuse {
                    count: int(2),
                    block_hint: None,
                },
                "gpuopt fuse 2;",
            ),
        ];
        for (kind, expected) in cases {
            assert_eq!(
                print_stmt(&st(StmtKind::GpuOpt(gpuopt(kind)))),
                format!("{expected}\n")
            );
        }
    }

    #[test]
    fn if_while_for() {
        let x_inc = st(StmtKind::Increment(var("x")));
        let if_else = st(StmtKind::If {
            cond: bin(Gt, var("tid"), int(0)),
            then_branch: Box::new(block_stmt(vec![assign(var("a"), int(1))])),
            else_branch: Some(Box::new(block_stmt(vec![assign(var("a"), int(2))]))),
        });
        assert_eq!(
            print_stmt(&if_else),
            "if (tid > 0) {\n    a = 1;\n} else {\n    a = 2;\n}\n"
        );
        let else_if = st(StmtKind::If {
            cond: var("a"),
            then_branch: Box::new(block_stmt(vec![x_inc.clone()])),
            else_branch: Some(Box::new(if_else.clone())),
        });
        assert_eq!(
            print_stmt(&else_if),
            "if (a) {\n    x++;\n} else if (tid > 0) {\n    a = 1;\n} else {\n    a = 2;\n}\n"
        );
        let unbraced = st(StmtKind::If {
            cond: var("a"),
            then_branch: Box::new(x_inc.clone()),
            else_branch: Some(Box::new(x_inc.clone())),
        });
        assert_eq!(print_stmt(&unbraced), "if (a)\n    x++;\nelse\n    x++;\n");
        // The else of the outer if must not attach to the inner one.
        let dangling = st(StmtKind::If {
            cond: var("a"),
            then_branch: Box::new(st(StmtKind::If {
                cond: var("b"),
                then_branch: Box::new(x_inc.clone()),
                else_branch: None,
            })),
            else_branch: Some(Box::new(x_inc.clone())),
        });
        assert_eq!(
            print_stmt(&dangling),
            "if (a) {\n    if (b)\n        x++;\n} else\n    x++;\n"
        );
        let empty_then = st(StmtKind::If {
            cond: var("a"),
            then_branch: Box::new(block_stmt(vec![])),
            else_branch: Some(Box::new(block_stmt(vec![]))),
        });
        assert_eq!(print_stmt(&empty_then), "if (a) {\n} else {\n}\n");

        let while_loop = st(StmtKind::While {
            contract: contract(vec![
                ClauseKind::LoopInvariant(bin(Le, int(0), var("i"))),
                ClauseKind::LoopInvariant(bin(Le, var("i"), var("n"))),
            ]),
            cond: bin(Lt, var("i"), var("n")),
            body: Box::new(block_stmt(vec![st(StmtKind::Increment(var("i")))])),
        });
        assert_eq!(
            print_stmt(&while_loop),
            "loop_invariant 0 <= i;\nloop_invariant i <= n;\nwhile (i < n) {\n    i++;\n}\n"
        );
        let for_loop = st(StmtKind::For {
            contract: contract(vec![ClauseKind::LoopInvariant(bin(Le, int(0), var("i")))]),
            init: Some(Box::new(st(StmtKind::LocalDecl {
                ty: int_ty(),
                vars: vec![LocalVar {
                    name: ident("i"),
                    init: Some(int(0)),
                    span: Span::default(),
                }],
            }))),
            cond: Some(bin(Lt, var("i"), var("n"))),
            update: Some(Box::new(st(StmtKind::Increment(var("i"))))),
            body: Box::new(block_stmt(vec![])),
        });
        assert_eq!(
            print_stmt(&for_loop),
            "loop_invariant 0 <= i;\nfor (int i = 0; i < n; i++) { }\n"
        );
        let forever = st(StmtKind::For {
            contract: Contract::default(),
            init: None,
            cond: None,
            update: None,
            body: Box::new(x_inc.clone()),
        });
        assert_eq!(print_stmt(&forever), "for (;;)\n    x++;\n");
        let ghost_while = st(StmtKind::Ghost(Box::new(st(StmtKind::While {
            contract: Contract::default(),
            cond: var("c"),
            body: Box::new(block_stmt(vec![x_inc])),
        }))));
        assert_eq!(print_stmt(&ghost_while), "ghost while (c) {\n    x++;\n}\n");
    }

    #[test]
    fn par_blocks() {
        let zero = par_block(
            Some("fwd"),
            vec![("tid", int(0), var("N"))],
            vec![
                ClauseKind::Requires(perm(index(var("a"), var("tid")), write())),
                ClauseKind::Ensures(bin(Eq, index(var("a"), var("tid")), int(0))),
            ],
            vec![assign(index(var("a"), var("tid")), int(0))],
        );
        assert_eq!(
            print_stmt(&par(vec![zero.clone()], ParGroupStyle::And)),
            "par fwd(int tid = 0 .. N)\n    requires Perm(a[tid], write);\n    ensures a[tid] == 0;\n{\n    a[tid] = 0;\n}\n"
        );
        let anonymous = par_block(
            None,
            vec![("i", int(0), var("M")), ("j", int(0), var("N"))],
            vec![],
            vec![],
        );
        assert_eq!(
            print_stmt(&par(vec![anonymous.clone()], ParGroupStyle::And)),
            "par (int i = 0 .. M, int j = 0 .. N) { }\n"
        );
        let bare = par_block(
            None,
            vec![],
            vec![ClauseKind::Context(perm(var("x"), int(1)))],
            vec![assign(var("x"), int(0))],
        );
        assert_eq!(
            print_stmt(&par(vec![bare.clone()], ParGroupStyle::And)),
            "par\n    context Perm(x, 1);\n{\n    x = 0;\n}\n"
        );
        assert_eq!(
            print_stmt(&par(vec![zero.clone(), anonymous.clone()], ParGroupStyle::And)),
            "par fwd(int tid = 0 .. N)\n    requires Perm(a[tid], write);\n    ensures a[tid] == 0;\n{\n    a[tid] = 0;\n}\nand (int i = 0 .. M, int j = 0 .. N) { }\n"
        );
        assert_eq!(
            print_stmt(&par(vec![bare, anonymous], ParGroupStyle::Parallel)),
            "parallel {\n    par\n        context Perm(x, 1);\n    {\n        x = 0;\n    }\n    par (int i = 0 .. M, int j = 0 .. N) { }\n}\n"
        );
    }

    #[test]
    fn barriers() {
        let barrier = |style: BarrierStyle, clauses: Vec<ClauseKind>, body: Vec<Stmt>| {
            st(StmtKind::Barrier(Barrier {
                invariants: vec![],
                label: ident("fwd"),
                contract: contract(clauses),
                body: block(body),
                style,
            }))
        };
        let clauses = || {
            vec![
                ClauseKind::Requires(perm(index(var("a"), var("tid")), write())),
                ClauseKind::Ensures(perm(index(var("a"), var("tid")), frac(int(1), int(2)))),
            ]
        };
        assert_eq!(
            print_stmt(&barrier(BarrierStyle::ClausesInside, clauses(), vec![])),
            "barrier(fwd) {\n    requires Perm(a[tid], write);\n    ensures Perm(a[tid], 1\\2);\n}\n"
        );
        assert_eq!(
            print_stmt(&barrier(BarrierStyle::ClausesBefore, clauses(), vec![])),
            "barrier(fwd)\n    requires Perm(a[tid], write);\n    ensures Perm(a[tid], 1\\2);\n{ }\n"
        );
        assert_eq!(
            print_stmt(&barrier(BarrierStyle::ClausesBefore, clauses(), vec![st(StmtKind::Increment(var("x")))])),
            "barrier(fwd)\n    requires Perm(a[tid], write);\n    ensures Perm(a[tid], 1\\2);\n{\n    x++;\n}\n"
        );
        assert_eq!(
            print_stmt(&barrier(BarrierStyle::ClausesInside, vec![], vec![])),
            "barrier(fwd) { }\n"
        );
    }

    #[test]
    fn invariant_and_atomic() {
        let inv = st(StmtKind::Invariant {
            name: ident("inv"),
            inv: bin(Star, perm(var("x"), write()), bin(Eq, var("x"), int(0))),
            body: block(vec![st(StmtKind::Atomic {
                name: ident("inv"),
                body: block(vec![assign(var("x"), int(0))]),
            })]),
        });
        assert_eq!(
            print_stmt(&inv),
            "invariant inv(Perm(x, write) ** x == 0) {\n    atomic(inv) {\n        x = 0;\n    }\n}\n"
        );
    }

    #[test]
    fn methods_with_contracts_and_annotations() {
        let kernel = method_member(
            vec![
                gpuopt(GpuOptKind::MatrixLin {
                    matrix: ident("m"),
                    order: MatrixOrder::RowMajor,
                    rows: int(4),
                    cols: int(4),
                }),
                gpuopt(GpuOptKind::Tile {
                    layout: TileLayout::Inter,
                    size: int(4),
                }),
            ],
            vec![
                ClauseKind::ContextEverywhere(builtin(Builtin::Array, vec![var("a"), var("N")])),
                ClauseKind::Requires(var("p")),
                ClauseKind::Given(param(int_ty(), "g")),
                ClauseKind::Yields(param(ty(TypeKind::Bool), "y")),
            ],
            method(
                Some(ty(TypeKind::Void)),
                "main",
                vec![
                    param(int_ty(), "N"),
                    param(array_ty(int_ty(), Some(var("N"))), "a"),
                ],
                MethodBody::Block(block(vec![assign(var("x"), int(1))])),
            ),
        );
        let mut pure_fn = method(
            Some(int_ty()),
            "sum",
            vec![param(ty(TypeKind::Seq(Box::new(int_ty()))), "s")],
            MethodBody::Expr(cond(
                bin(Eq, ex(ExprKind::Length(Box::new(var("s")))), int(0)),
                int(0),
                bin(
                    Add,
                    call("head", vec![var("s")]),
                    call("sum", vec![call("tail", vec![var("s")])]),
                ),
            )),
        );
        pure_fn.modifiers = vec![Modifier::Static, Modifier::Pure];
        let mut predicate = method(
            Some(ty(TypeKind::Resource)),
            "p",
            vec![],
            MethodBody::Expr(perm(var("x"), write())),
        );
        predicate.modifiers = vec![Modifier::Inline];
        let lemma = method(
            Some(ty(TypeKind::Void)),
            "lemma",
            vec![],
            MethodBody::Abstract,
        );
        let constructor = method(None, "C", vec![], MethodBody::Block(block(vec![])));
        let field = Member {
            gpuopts: vec![],
            contract: Contract::default(),
            kind: MemberKind::Field(Field {
                ty: int_ty(),
                name: ident("x"),
                span: Span::default(),
            }),
            span: Span::default(),
        };
        let prog = program(vec![
            class(
                "C",
                vec![
                    field,
                    kernel,
                    method_member(vec![], vec![], pure_fn),
                    method_member(vec![], vec![], predicate),
                    method_member(vec![], vec![ClauseKind::Ensures(var("q"))], lemma),
                    method_member(vec![], vec![], constructor),
                ],
            ),
            class("D", vec![]),
        ]);
        let expected = "\
class C {
    int x;
    gpuopt matrix_lin m R 4 4;
    gpuopt tile inter 4;
    context_everywhere \\array(a, N);
    requires p;
    given int g;
    yields boolean y;
    void main(int N, int[N] a) {
        x = 1;
    }
    static pure int sum(seq<int> s) = |s| == 0 ? 0 : head(s) + sum(tail(s));
    inline resource p() = Perm(x, write);
    ensures q;
    void lemma();
    C() { }
}
class D { }
";
        assert_eq!(print(&prog, &Trivia::default()), expected);
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let mut expr = var("x");
        for i in 0..300 {
            expr = match i % 4 {
                0 => bin(Add, var("a"), expr),
                1 => unary(UnaryOp::Neg, expr),
                2 => index(var("a"), expr),
                _ => bin(And, expr, var("b")),
            };
        }
        let text = print_expr(&expr);
        assert!(text.len() > 600);
        let mut stmt = assign(var("x"), expr);
        for _ in 0..300 {
            stmt = st(StmtKind::If {
                cond: var("c"),
                then_branch: Box::new(block_stmt(vec![stmt])),
                else_branch: None,
            });
        }
        assert!(print_stmt(&stmt).lines().count() > 600);
    }

    // --- comments and blank lines --------------------------------------------------------

    /// A minimal stand-in for `Trivia::scan` (owned by the parser), enough for these tests.
    fn scan(source: &str) -> Trivia {
        let bytes = source.as_bytes();
        let mut trivia = Trivia::default();
        let mut line_start = 0;
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'\n' {
                line_start = i + 1;
                i += 1;
                continue;
            }
            if bytes[i] == b'/'
                && i + 1 < bytes.len()
                && (bytes[i + 1] == b'/' || bytes[i + 1] == b'*')
            {
                let end = if bytes[i + 1] == b'/' {
                    source[i..].find('\n').map_or(source.len(), |n| i + n)
                } else {
                    source[i + 2..]
                        .find("*/")
                        .map_or(source.len(), |n| i + 2 + n + 2)
                };
                trivia.comments.push(Comment {
                    text: source[i..end].to_string(),
                    span: Span::new(i, end),
                    own_line: source[line_start..i].trim().is_empty(),
                });
                i = end;
                continue;
            }
            i += 1;
        }
        let mut offset = 0;
        for line in source.split_inclusive('\n') {
            if line.trim().is_empty() {
                trivia.blank_lines.push(offset as u32);
            }
            offset += line.len();
        }
        trivia
    }

    /// The span of the first occurrence of `needle` in `source` (at or after `from`).
    fn find(source: &str, needle: &str, from: usize) -> Span {
        let start = from
            + source[from..]
                .find(needle)
                .unwrap_or_else(|| panic!("{needle:?} not in source"));
        Span::new(start, start + needle.len())
    }

    fn stmt_at(kind: StmtKind, span: Span) -> Stmt {
        Stmt { kind, span }
    }

    fn comment_texts(trivia: &Trivia) -> Vec<String> {
        let mut texts: Vec<String> = trivia.comments.iter().map(|c| c.text.clone()).collect();
        texts.sort();
        texts
    }

    /// A class `C` with one method `void m()` whose body holds `stmts`; spans from `source`.
    fn method_program(source: &str, stmts: Vec<Stmt>) -> Program {
        let class_span = find(source, "class C", 0).to(Span::new(
            source.rfind('}').unwrap(),
            source.rfind('}').unwrap() + 1,
        ));
        let method_start = find(source, "void m", 0);
        let body_start = find(source, "{", method_start.end as usize).start as usize;
        let body_end = source[..class_span.end as usize - 1].rfind('}').unwrap() + 1;
        let mut m = method(
            Some(ty(TypeKind::Void)),
            "m",
            vec![],
            MethodBody::Block(Block {
                stmts,
                span: Span::new(body_start, body_end),
            }),
        );
        m.name.span = Span::new(method_start.start as usize + 5, method_start.end as usize);
        m.return_type.as_mut().unwrap().span =
            Span::new(method_start.start as usize, method_start.start as usize + 4);
        m.span = Span::new(method_start.start as usize, body_end);
        let member_start = source[..method_start.start as usize]
            .rfind("requires")
            .filter(|&r| r > find(source, "{", 0).start as usize)
            .unwrap_or(method_start.start as usize);
        let mut member = method_member(vec![], vec![], m);
        member.span = Span::new(member_start, body_end);
        Program {
            items: vec![Item::Class(Class {
                contract: Contract::default(),
                name: ident("C"),
                members: vec![member],
                span: class_span,
                is_model: false,
            })],
            span: Span::new(0, source.len()),
        }
    }

    #[test]
    fn comments_leading_trailing_inside_and_at_ends() {
        let source = "\
//:: verdict Pass
/* header */

class C {
    void m() { // opens
        // leading
        x = 1; // trailing

        a[i] /*[/expect arrayBounds]*/ = 2;
        /* before end */
    }
    // after last member
}
// end of file
";
        let s1 = find(source, "x = 1;", 0);
        let s2 = find(source, "a[i] /*[/expect arrayBounds]*/ = 2;", 0);
        let stmts = vec![
            stmt_at(
                StmtKind::Assign {
                    target: var("x"),
                    value: int(1),
                },
                s1,
            ),
            stmt_at(
                StmtKind::Assign {
                    target: index(var("a"), var("i")),
                    value: int(2),
                },
                s2,
            ),
        ];
        let prog = method_program(source, stmts);
        let trivia = scan(source);
        let printed = print(&prog, &trivia);
        let expected = "\
//:: verdict Pass
/* header */

class C {
    void m() { // opens
        // leading
        x = 1; // trailing

        a[i] = 2; /*[/expect arrayBounds]*/
        /* before end */
    }
    // after last member
}
// end of file
";
        assert_eq!(printed, expected);
        assert_eq!(comment_texts(&scan(&printed)), comment_texts(&trivia));
    }

    #[test]
    fn blank_lines_are_collapsed_and_kept_out_of_block_starts() {
        let source = "class C {\n    void m() {\n\n\n        x = 1;\n\n\n\n        // note\n\n        y = 2;\n\n    }\n}\n";
        let stmts = vec![
            stmt_at(
                StmtKind::Assign {
                    target: var("x"),
                    value: int(1),
                },
                find(source, "x = 1;", 0),
            ),
            stmt_at(
                StmtKind::Assign {
                    target: var("y"),
                    value: int(2),
                },
                find(source, "y = 2;", 0),
            ),
        ];
        let printed = print(&method_program(source, stmts), &scan(source));
        assert_eq!(printed, "class C {\n    void m() {\n        x = 1;\n\n        // note\n\n        y = 2;\n    }\n}\n");
    }

    #[test]
    fn comments_in_contracts_and_par_headers() {
        let source = "\
class C {
    requires a; // why a

    // about b
    requires b;
    void m() {
        par fwd(int tid = 0 .. N) // the kernel
            // contract
            requires c; /* c */
        {
        }
    }
}
";
        let mut par = par_block(
            Some("fwd"),
            vec![("tid", int(0), var("N"))],
            vec![ClauseKind::Requires(var("c"))],
            vec![],
        );
        par.contract.clauses[0].span = find(source, "requires c;", 0);
        let body_start = find(source, "{\n        }", 0);
        par.body.span = Span::new(body_start.start as usize, body_start.end as usize);
        let par_span = find(source, "par fwd", 0).to(body_start);
        par.span = par_span;
        let mut prog = method_program(
            source,
            vec![stmt_at(
                StmtKind::Par(ParGroup {
                    blocks: vec![par],
                    style: ParGroupStyle::And,
                }),
                par_span,
            )],
        );
        let Item::Class(class) = &mut prog.items[0] else {
            unreachable!()
        };
        class.members[0].contract = Contract {
            clauses: vec![
                Clause {
                    kind: ClauseKind::Requires(var("a")),
                    span: find(source, "requires a;", 0),
                },
                Clause {
                    kind: ClauseKind::Requires(var("b")),
                    span: find(source, "requires b;", 0),
                },
            ],
        };
        class.members[0].span.start = find(source, "requires a;", 0).start;
        let trivia = scan(source);
        let printed = print(&prog, &trivia);
        let expected = "\
class C {
    requires a; // why a

    // about b
    requires b;
    void m() {
        par fwd(int tid = 0 .. N) // the kernel
            // contract
            requires c; /* c */
        { }
    }
}
";
        assert_eq!(printed, expected);
    }

    #[test]
    fn line_comment_is_never_followed_on_its_line() {
        // A statement holding a `//` comment and then a block comment: both at its end, the
        // block comment on the next line since `//` runs to the end of the line.
        let source =
            "class C {\n    void m() {\n        x = // one\n            /* two */ 1;\n    }\n}\n";
        let s = find(source, "x = // one\n            /* two */ 1;", 0);
        let prog = method_program(
            source,
            vec![stmt_at(
                StmtKind::Assign {
                    target: var("x"),
                    value: int(1),
                },
                s,
            )],
        );
        let trivia = scan(source);
        let printed = print(&prog, &trivia);
        assert_eq!(
            printed,
            "class C {\n    void m() {\n        x = 1; // one\n        /* two */\n    }\n}\n"
        );
        assert_eq!(comment_texts(&scan(&printed)), comment_texts(&trivia));
    }

    #[test]
    fn every_comment_once_with_duplicated_and_unordered_spans() {
        let source = "class C {\n    void m() {\n        // a\n        x = 1; // b\n        // c\n        y = 2; /* d */\n        // e\n    }\n}\n// f\n";
        let s1 = find(source, "x = 1;", 0);
        let s2 = find(source, "y = 2;", 0);
        let x = |span| {
            stmt_at(
                StmtKind::Assign {
                    target: var("x"),
                    value: int(1),
                },
                span,
            )
        };
        // Transformed code: the second statement duplicated before the first, a copy of the
        // first reusing its span, a generated statement without a span.
        let stmts = vec![x(s2), x(s1), x(s1), x(Span::default()), x(s2)];
        let trivia = scan(source);
        let printed = print(&method_program(source, stmts), &trivia);
        assert_eq!(comment_texts(&scan(&printed)), comment_texts(&trivia));
        // Spans far outside the source and a program with no spans at all.
        let wild = program(vec![class(
            "C",
            vec![method_member(
                vec![],
                vec![],
                method(
                    None,
                    "C",
                    vec![],
                    MethodBody::Block(block(vec![x(Span::new(5000, 6000)), x(Span::new(3, 1))])),
                ),
            )],
        )]);
        let printed = print(&wild, &trivia);
        assert_eq!(comment_texts(&scan(&printed)), comment_texts(&trivia));
    }

    mod comment_properties {
        use super::*;
        use proptest::prelude::*;

        fn stmt_strategy() -> impl Strategy<Value = Stmt> {
            let leaf = (0u32..400, 0u32..40).prop_map(|(start, len)| {
                stmt_at(
                    StmtKind::Increment(var("x")),
                    Span::new(start as usize, (start + len) as usize),
                )
            });
            leaf.prop_recursive(3, 24, 4, |inner| {
                (
                    0u32..400,
                    0u32..200,
                    prop::collection::vec(inner.clone(), 0..4),
                    prop::option::of(inner),
                )
                    .prop_map(|(start, len, stmts, other)| {
                        let span = Span::new(start as usize, (start + len) as usize);
                        let body = Stmt {
                            kind: StmtKind::Block(Block { stmts, span }),
                            span,
                        };
                        stmt_at(
                            StmtKind::If {
                                cond: var("c"),
                                then_branch: Box::new(body),
                                else_branch: other.map(Box::new),
                            },
                            span,
                        )
                    })
            })
        }

        proptest! {
            /// Whatever the spans (overlapping, duplicated, out of order), every comment comes
            /// out exactly once, and no comment is swallowed by a `//` before it.
            #[test]
            fn every_comment_printed_once(
                stmts in prop::collection::vec(stmt_strategy(), 0..6),
                raw_comments in prop::collection::vec((0u32..500, any::<bool>(), any::<bool>()), 0..12),
                blank_lines in prop::collection::vec(0u32..500, 0..10),
            ) {
                let mut comments: Vec<Comment> = raw_comments
                    .iter()
                    .enumerate()
                    .map(|(i, &(start, own_line, line))| {
                        let text = if line { format!("// c{i}") } else { format!("/* c{i} */") };
                        Comment { span: Span::new(start as usize, start as usize + 3), text, own_line }
                    })
                    .collect();
                comments.sort_by_key(|c| c.span.start);
                let trivia = Trivia { comments, blank_lines };
                let prog = program(vec![class(
                    "C",
                    vec![method_member(vec![], vec![], method(None, "C", vec![], MethodBody::Block(block(stmts))))],
                )]);
                let printed = print(&prog, &trivia);
                prop_assert_eq!(comment_texts(&scan(&printed)), comment_texts(&trivia));
                prop_assert!(!printed.contains("\n\n\n"));
            }
        }
    }
}
