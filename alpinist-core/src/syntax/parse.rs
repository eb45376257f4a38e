//! pest grammar (`pvl.pest`) → IR.
//!
//! What [`parse`] guarantees:
//! - It never panics and never overflows the stack, whatever the bytes: nesting is measured by
//!   a linear pre-scan ([`check_nesting`]) and refused beyond [`MAX_NESTING`] levels (E0102)
//!   before pest or the tree builder recurse, on a stack large enough for that depth; expression
//!   trees built from long operator chains are limited to [`MAX_EXPR_DEPTH`].
//! - Every IR node carries the byte span of its text; a member's span covers its `gpuopt` lines
//!   and contract, a loop's its invariants.
//! - Precedence and associativity are exactly [`BinaryOp::precedence`]/[`BinaryOp::assoc`]
//!   (VerCors 2.x); an unparenthesised mix of `&&`/`**` with `||` is warning W0101.
//! - Errors carry stable codes (see `error.rs`) and say in words what was expected.
//! - Work is linear in the input: no alternative of the grammar re-parses a nested expression.
//! - Most files never reach pest: a hand-written fast path (`fast`) reads the common part of
//!   the grammar about six times faster and gives up on the rest, errors included; wherever it
//!   succeeds its result is exactly pest's ([`parse_reference`]).

use std::cell::RefCell;

use num_bigint::BigUint;
use std::iter::Peekable;

use pest::iterators::Pair;
use pest::Parser as _;

use super::ir::*;
use super::{Parsed, SyntaxError, SyntaxWarning, Trivia};

#[derive(pest_derive::Parser)]
#[grammar = "syntax/pvl.pest"]
struct PvlParser;

/// Deepest nesting of brackets, prefix operators, right-associative chains and statement
/// keywords accepted (as counted by [`check_nesting`]).
pub const MAX_NESTING: usize = 200;
/// Deepest expression tree accepted (long left-associative chains nest without brackets).
pub const MAX_EXPR_DEPTH: u32 = 2000;

/// Stack that parsing may need at [`MAX_NESTING`]: pest's recursion and the tree builder's,
/// measured at about 10 MiB in unoptimised builds (a tenth of that optimised).
const PARSE_STACK: usize = 64 << 20;

/// Parse one PVL source file.
pub fn parse(source: &str) -> Result<Parsed, Vec<SyntaxError>> {
    // pest (2.8) does not check the stack: the pre-scan bounds the recursion, and this makes
    // sure that the bounded recursion fits, whatever thread the caller parses on (a fresh
    // stack is mapped lazily when less than `PARSE_STACK` is left).
    stacker::maybe_grow(PARSE_STACK, PARSE_STACK, || {
        parse_on_a_big_stack(source, true)
    })
}

/// [`parse`] without the fast path: pest and the tree builder only. For tests that compare
/// the two paths; not part of the API.
#[doc(hidden)]
pub fn parse_reference(source: &str) -> Result<Parsed, Vec<SyntaxError>> {
    stacker::maybe_grow(PARSE_STACK, PARSE_STACK, || {
        parse_on_a_big_stack(source, false)
    })
}

fn parse_on_a_big_stack(source: &str, fast_path: bool) -> Result<Parsed, Vec<SyntaxError>> {
    if u32::try_from(source.len()).is_err() {
        return Err(vec![SyntaxError::TooLarge { len: source.len() }]);
    }
    check_nesting(source).map_err(|e| vec![e])?;
    // The hand-written fast path reads the common cases; whatever it gives up on (every
    // error among them) goes to pest, which alone reports errors.
    if let Some((program, warnings)) = fast_path.then(|| fast::parse(source)).flatten() {
        return Ok(Parsed {
            program,
            trivia: Trivia::scan(source),
            warnings,
        });
    }
    parse_with_pest(source)
}

/// The reference path: pest, then the tree builder. The only one that reports errors; the fast
/// path must agree with it wherever that succeeds (see `fast`).
fn parse_with_pest(source: &str) -> Result<Parsed, Vec<SyntaxError>> {
    let pairs = match PvlParser::parse(Rule::program, source) {
        Ok(pairs) => pairs,
        Err(err) => return Err(errors_with_recovery(source, err)),
    };
    let builder = Builder::new();
    let program_pair = pairs
        .into_iter()
        .next()
        .ok_or_else(|| vec![unexpected_at(source, 0, "a class or a method".into())])?;
    let program = builder.program(program_pair);
    let mut errors = builder.errors.into_inner();
    match program {
        Ok(program) if errors.is_empty() => Ok(Parsed {
            program,
            trivia: Trivia::scan(source),
            warnings: builder.warnings.into_inner(),
        }),
        Ok(_) => Err(errors),
        Err(e) => {
            errors.push(e);
            errors.sort_by_key(|e| e.span().map(|s| s.start));
            Err(errors)
        }
    }
}

/// At most this many syntax errors are reported for one file.
const MAX_REPORTED_ERRORS: usize = 10;

/// pest stops at the first error. To report more, parse again from the next top-level class
/// after the error (a line starting with `class`), for as long as that finds errors: one
/// mistake per class is what a user fixing a file wants to see, and it costs nothing on
/// programs that parse.
fn errors_with_recovery(source: &str, first: pest::error::Error<Rule>) -> Vec<SyntaxError> {
    let mut errors = vec![describe_pest_error(source, first)];
    while errors.len() < MAX_REPORTED_ERRORS {
        let after = errors
            .last()
            .and_then(SyntaxError::span)
            .map_or(source.len(), |span| span.end as usize);
        let Some(start) = next_top_level_class(source, after) else {
            break;
        };
        let rest = &source[start..];
        match PvlParser::parse(Rule::program, rest) {
            Ok(_) => break,
            Err(err) => errors.push(describe_pest_error(rest, err).shifted(start)),
        }
    }
    errors
}

/// The offset of the first line after `after` that starts, in column 1, with `class `.
fn next_top_level_class(source: &str, after: usize) -> Option<usize> {
    let mut line_start = after + source.get(after..)?.find('\n')? + 1;
    while line_start < source.len() {
        let line = &source[line_start..];
        if line
            .strip_prefix("class")
            .is_some_and(|rest| rest.starts_with(char::is_whitespace))
        {
            return Some(line_start);
        }
        line_start += line.find('\n')? + 1;
    }
    None
}

// ------------------------------------------------------------------------------------------
// Nesting pre-scan

/// One open bracket (or `?`-free construct) on the pre-scan's stack.
struct Frame {
    /// Pending keyword/operator nesting in the enclosing context when the bracket opened.
    saved_pending: usize,
    /// `{` of a statement block: closing it ends a statement, so nothing stays pending.
    statement_brace: bool,
}

/// Refuse inputs nested deeper than [`MAX_NESTING`].
///
/// Counts, conservatively, every source of recursion in the grammar, the Pratt parser and the
/// tree builder: brackets `(` `[` `{`, and — until the statement ends at `;` or `}` — prefix
/// `!`/`-`, right-associative `==>`/`::`, `?`, an opening `|` (length), the `<` of a type
/// argument list (`seq<`, `set<`, `bag<`, `option<`, `map<`), and the keywords whose body is a nested
/// statement or expression (`if`, `while`, `for`, `ghost`, `unfolding`). One linear pass over
/// the bytes, skipping comments exactly as the grammar does.
fn check_nesting(source: &str) -> Result<(), SyntaxError> {
    let bytes = source.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut stack_weight = 0usize;
    let mut pending = 0usize;
    // Whether the last significant token ends an operand (so a following `-` is binary).
    let mut after_operand = false;
    // The last significant byte, to tell a collection literal's `{` (after `>`) from a block.
    let mut last_significant = b';';
    let mut i = 0usize;
    while i < bytes.len() {
        let b = bytes[i];
        let start = i;
        let mut significant = true;
        match b {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = bytes[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(bytes.len(), |p| i + p);
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let mut j = i + 2;
                while j + 1 < bytes.len() && !(bytes[j] == b'*' && bytes[j + 1] == b'/') {
                    j += 1;
                }
                i = (j + 2).min(bytes.len());
                continue;
            }
            b'(' | b'[' | b'{' => {
                let statement_brace =
                    b == b'{' && last_significant != b'>' && bytes.get(i + 1) != Some(&b':');
                stack.push(Frame {
                    saved_pending: pending,
                    statement_brace,
                });
                stack_weight += 1 + pending;
                pending = 0;
                after_operand = false;
                i += 1;
            }
            b')' | b']' | b'}' => {
                if let Some(frame) = stack.pop() {
                    stack_weight -= 1 + frame.saved_pending;
                    pending = if frame.statement_brace {
                        0
                    } else {
                        frame.saved_pending
                    };
                }
                after_operand = b != b'}';
                i += 1;
            }
            b';' => {
                pending = 0;
                after_operand = false;
                i += 1;
            }
            b'!' if bytes.get(i + 1) != Some(&b'=') => {
                pending += 1;
                after_operand = false;
                i += 1;
            }
            b'-' if !after_operand => {
                pending += 1;
                i += 1;
            }
            // After an operand, `||` is the operator (a lone `|` closes a length: see `_`).
            b'|' if after_operand && bytes.get(i + 1) == Some(&b'|') => {
                after_operand = false;
                i += 2;
            }
            // `|` in operand position opens a length `|xs|`.
            b'?' | b'|' => {
                pending += 1;
                after_operand = false;
                i += 1;
            }
            b'=' if bytes[i..].starts_with(b"==>") => {
                pending += 1;
                after_operand = false;
                i += 3;
            }
            b':' if bytes.get(i + 1) == Some(&b':') => {
                pending += 1;
                after_operand = false;
                i += 2;
            }
            b if b.is_ascii_alphanumeric() || b == b'_' => {
                let len = bytes[i..]
                    .iter()
                    .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
                    .unwrap_or(bytes.len() - i);
                let word = &bytes[i..i + len];
                if matches!(
                    word,
                    b"if" | b"while" | b"for" | b"ghost" | b"unfolding" | b"new"
                ) {
                    pending += 1;
                    after_operand = false;
                } else if matches!(word, b"seq" | b"set" | b"bag" | b"option" | b"map")
                    && bytes[i + len..].iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'<')
                {
                    // A type argument list nests like a bracket (`seq<seq<int>>`).
                    pending += 1;
                    after_operand = false;
                } else {
                    after_operand = true;
                }
                i += len;
            }
            b' ' | b'\t' | b'\r' | b'\n' => {
                significant = false;
                i += 1;
            }
            _ => {
                after_operand = false;
                i += 1;
            }
        }
        if significant {
            last_significant = b;
        }
        if stack_weight + pending > MAX_NESTING {
            let end = next_char_boundary(source, start + 1);
            return Err(SyntaxError::TooDeep {
                limit: MAX_NESTING,
                span: Span::new(start, end),
            });
        }
    }
    Ok(())
}

fn next_char_boundary(source: &str, mut i: usize) -> usize {
    while i < source.len() && !source.is_char_boundary(i) {
        i += 1;
    }
    i.min(source.len())
}

// ------------------------------------------------------------------------------------------
// pest errors → E0101

fn describe_pest_error(source: &str, err: pest::error::Error<Rule>) -> SyntaxError {
    use pest::error::{ErrorVariant, InputLocation};
    let offset = match err.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let positives = match &err.variant {
        ErrorVariant::ParsingError { positives, .. } => positives.clone(),
        ErrorVariant::CustomError { message } => {
            // pest's guards: "stack limit reached" / "call limit reached".
            if message.contains("limit") {
                let end = next_char_boundary(source, offset.saturating_add(1));
                return SyntaxError::TooDeep {
                    limit: MAX_NESTING,
                    span: Span::new(offset.min(source.len()), end),
                };
            }
            Vec::new()
        }
    };
    // The literal tokens tried at the error position are only known with pest's error detail
    // on, which slows every parse: collect them by parsing once more, only now.
    let (tokens, furthest) = expected_literals(source);
    // Rules are tracked without error detail, literals only with it: the later of the two
    // positions is where the input stops making sense (e.g. the `}` where a `;` is missing).
    let rules_are_here = furthest.is_none_or(|f| f <= offset);
    let offset = offset.max(furthest.unwrap_or(0));
    let mut words: Vec<String> = Vec::new();
    for t in tokens {
        // Operators are one category: listing twenty of them hides the `;` that is missing.
        let word = if EXPRESSION_START_TOKENS.contains(&t.as_str()) {
            "an expression".to_string()
        } else if OPERATOR_TOKENS.contains(&t.as_str()) {
            "an operator".to_string()
        } else {
            format!("`{t}`")
        };
        push_unique(&mut words, word);
    }
    // Rules tried at an earlier position would only confuse.
    for rule in positives.into_iter().filter(|_| rules_are_here) {
        if let Some(w) = rule_in_words(rule) {
            push_unique(&mut words, w);
        }
    }
    // Punctuation that ends or closes something first (the likely fix), then keywords, then
    // categories; keep it readable.
    words.sort_by_key(|w| {
        let closing = ["`;`", "`)`", "`}`", "`]`", "`,`", "`=`", "`{`", "`(`"];
        if let Some(i) = closing.iter().position(|c| c == w) {
            i
        } else if w.starts_with('`') {
            closing.len()
        } else {
            closing.len() + 1
        }
    });
    const MAX_LISTED: usize = 8;
    if words.len() > MAX_LISTED {
        words.truncate(MAX_LISTED);
        words.push("…".into());
    }
    let expected = if words.is_empty() {
        "something else".to_string()
    } else {
        join_or(&words)
    };
    unexpected_at(source, offset, expected)
}

/// Tokens that can only begin an expression, reported together as "an expression": a user
/// missing an operand wants to hear that, not a list of built-in names.
const EXPRESSION_START_TOKENS: &[&str] = &[
    "!",
    "Perm",
    "HPerm",
    "APerm",
    "PointsTo",
    "Value",
    "AutoValue",
    "idle",
    "running",
    "held",
    "committed",
    "\\array",
    "\\matrix",
    "\\typeof",
    "\\type",
    "\\values",
    "\\old",
    "\\result",
    "\\forall",
    "\\forall*",
    "\\exists",
    "\\sum",
    "\\let",
    "{:",
    "{",
    "tuple",
    "bag",
    "set",
    "seq",
    "map",
    "true",
    "false",
    "null",
    "this",
    "write",
    "read",
    "none",
    "new",
    "unfolding",
];

/// Infix and postfix operator tokens, reported together as "an operator".
const OPERATOR_TOKENS: &[&str] = &[
    "==>", "||", "&&", "**", "==", "!=", "<=", "<", ">=", ">", "in", "++", "+", "-", "::", "*",
    "/", "%", "\\", "?", ".", "[",
    // First characters the grammar tests before trying the operators.
    "&", "|", ":", "i",
];

/// The literal tokens tried at the furthest position reached, and that position.
fn expected_literals(source: &str) -> (Vec<String>, Option<usize>) {
    pest::set_error_detail(true);
    let result = PvlParser::parse(Rule::program, source);
    pest::set_error_detail(false);
    let Err(err) = result else {
        return (Vec::new(), None);
    };
    let Some(attempts) = err.parse_attempts() else {
        return (Vec::new(), None);
    };
    // pest does not export its token type; its `Debug` names the variant. Only literal
    // tokens are useful here (character ranges and built-ins come from identifier rules).
    let tokens = attempts
        .expected_tokens()
        .into_iter()
        .filter(|t| format!("{t:?}").starts_with("Sensitive"))
        .map(|t| t.to_string())
        // Spacing and comment tokens are noise in "expected" lists.
        .filter(|t| {
            // `_` and 1.x's backtick start an identifier, listed separately.
            !(t.trim().is_empty()
                || t == "_"
                || t == "`"
                || t.starts_with('/')
                || t.starts_with("[/")
                || t == "\u{FEFF}")
        })
        .collect();
    (tokens, Some(attempts.max_position))
}

fn push_unique(words: &mut Vec<String>, w: String) {
    if !words.contains(&w) {
        words.push(w);
    }
}

fn join_or(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {}", init.join(", "), last),
    }
}

/// What a grammar rule means to a user, or `None` for rules that add nothing to the message.
fn rule_in_words(rule: Rule) -> Option<String> {
    let name = format!("{rule:?}");
    let word = |s: &str| Some(format!("`{s}`"));
    if let Some(kw) = name.strip_prefix("k_").or_else(|| name.strip_prefix("w_")) {
        return word(kw);
    }
    if name.starts_with("op_") {
        return Some("an operator".into());
    }
    if name.starts_with("t_") {
        return Some("a type".into());
    }
    if name.starts_with("b_") {
        // A built-in (`Perm`, `idle`, ..) is one form of expression.
        return Some("an expression".into());
    }
    match rule {
        Rule::EOI => Some("end of file".into()),
        Rule::ident => Some("an identifier".into()),
        Rule::type_ | Rule::array_dim | Rule::param | Rule::params => Some("a type".into()),
        Rule::expr
        | Rule::int_lit
        | Rule::lit_true
        | Rule::lit_false
        | Rule::lit_null
        | Rule::lit_this
        | Rule::lit_result
        | Rule::perm_write
        | Rule::perm_read
        | Rule::perm_none
        | Rule::quantifier
        | Rule::let_expr
        | Rule::old_length
        | Rule::paren
        | Rule::old_expr
        | Rule::builtin
        | Rule::new_expr
        | Rule::unfolding_expr
        | Rule::length
        | Rule::trigger
        | Rule::collection
        | Rule::map_lit
        | Rule::set_list
        | Rule::set_empty
        | Rule::pair
        | Rule::tuple_lit
        | Rule::op_not
        | Rule::op_neg => Some("an expression".into()),
        Rule::clause => Some("a contract clause".into()),
        Rule::member
        | Rule::method_decl
        | Rule::constructor_decl
        | Rule::run_decl
        | Rule::action_decl
        | Rule::process_decl
        | Rule::field_decl => Some("a declaration".into()),
        Rule::class_decl => word("class"),
        Rule::modifier => Some("a modifier".into()),
        Rule::block | Rule::barrier_inside => word("{"),
        Rule::decl_stmt
        | Rule::simple_stmt
        | Rule::if_stmt
        | Rule::loop_stmt
        | Rule::par_stmt
        | Rule::parallel_stmt
        | Rule::barrier_stmt
        | Rule::return_stmt
        | Rule::assert_stmt
        | Rule::assume_stmt
        | Rule::refute_stmt
        | Rule::ghost_stmt
        | Rule::invariant_stmt
        | Rule::atomic_stmt
        | Rule::lock_stmt
        | Rule::unlock_stmt
        | Rule::fold_stmt
        | Rule::unfold_stmt
        | Rule::fork_stmt
        | Rule::join_stmt
        | Rule::commit_stmt
        | Rule::wait_stmt
        | Rule::notify_stmt
        | Rule::goto_stmt
        | Rule::label_stmt
        | Rule::action_stmt
        | Rule::vec_stmt => Some("a statement".into()),
        Rule::gpuopt => word("gpuopt"),
        Rule::bracket_suffix => word("["),
        Rule::member_suffix => word("."),
        Rule::nullable_suffix => word("?."),
        Rule::call_tail | Rule::new_tail | Rule::call_args | Rule::par_iters => word("("),
        Rule::incr => word("++"),
        Rule::decr => word("--"),
        Rule::dotdot => word(".."),
        Rule::arrow => word("->"),
        Rule::par_block => word("par"),
        Rule::and_block => Some("a par block".into()),
        Rule::else_if => word("else"),
        Rule::with_block => word("with"),
        Rule::then_block => word("then"),
        Rule::q_forall | Rule::q_forall_star | Rule::q_exists | Rule::q_sum => {
            Some("a quantifier".into())
        }
        _ => None,
    }
}

/// E0101 at `offset`, naming the token found there.
fn unexpected_at(source: &str, offset: usize, expected: String) -> SyntaxError {
    let offset = next_char_boundary(source, offset.min(source.len()));
    let rest = &source[offset..];
    let token_len = match rest.chars().next() {
        None => 0,
        Some(c) if c.is_ascii_alphanumeric() || c == '_' => rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len()),
        Some(c) => c.len_utf8(),
    };
    let found = if token_len == 0 {
        "end of file".to_string()
    } else {
        format!("`{}`", &rest[..token_len].escape_debug())
    };
    SyntaxError::Unexpected {
        expected,
        found,
        span: Span::new(offset, offset + token_len),
    }
}

// ------------------------------------------------------------------------------------------
// Tree builder

type Res<T> = Result<T, SyntaxError>;

/// What follows a callee's name: `<types>(args) with { .. } then { .. }`, and the depth of
/// its deepest expression. Shared by both parsers.
struct CallTail {
    type_args: Vec<Type>,
    args: Vec<Expr>,
    given: Vec<GhostArg>,
    yields: Vec<GhostArg>,
    depth: u32,
}

impl CallTail {
    fn into_call(self, receiver: Option<Box<Expr>>, name: Ident) -> ExprKind {
        ExprKind::Call {
            receiver,
            name,
            type_args: self.type_args,
            args: self.args,
            given: self.given,
            yields: self.yields,
        }
    }
}

/// An expression under construction, with what the checks on its parents need to know.
struct Built {
    expr: Expr,
    /// The operator at the top of this expression if it was not parenthesised.
    bare_op: Option<BinaryOp>,
    /// Height of the expression tree.
    depth: u32,
}

impl Built {
    fn leaf(expr: Expr) -> Built {
        Built {
            expr,
            bare_op: None,
            depth: 1,
        }
    }
}

/// `expr` as built, refused (E0102) beyond [`MAX_EXPR_DEPTH`].
#[inline]
fn checked(expr: Expr, bare_op: Option<BinaryOp>, depth: u32) -> Res<Built> {
    if depth > MAX_EXPR_DEPTH {
        return Err(SyntaxError::TooDeep {
            limit: MAX_EXPR_DEPTH as usize,
            span: expr.span,
        });
    }
    Ok(Built {
        expr,
        bare_op,
        depth,
    })
}

/// `conds[0] ? thens[0] : (conds[1] ? thens[1] : ... last)`: one more condition than
/// branches, nested to the right.
fn nest_conditionals(mut conds: Vec<Built>, mut thens: Vec<Built>, span: Span) -> Res<Built> {
    let mut acc = conds.pop().ok_or_else(|| internal(span, "an expression"))?;
    while let (Some(cond), Some(then)) = (conds.pop(), thens.pop()) {
        let depth = 1 + cond.depth.max(then.depth).max(acc.depth);
        let span = cond.expr.span.to(acc.expr.span);
        acc = checked(
            Expr {
                kind: ExprKind::Cond {
                    cond: Box::new(cond.expr),
                    then_expr: Box::new(then.expr),
                    else_expr: Box::new(acc.expr),
                },
                span,
            },
            None,
            depth,
        )?;
    }
    Ok(acc)
}

/// `lhs op rhs`, with the W0101 check.
#[inline]
fn binary_node(
    lhs: Built,
    op: BinaryOp,
    rhs: Built,
    warnings: &mut Vec<SyntaxWarning>,
) -> Res<Built> {
    let span = lhs.expr.span.to(rhs.expr.span);
    // 2.x reads `a && b || c` as `(a && b) || c` and `a || b && c` as `a || (b && c)`;
    // 1.x read both left to right on one level. Only `||` can have a bare `&&`/`**`
    // operand, since those bind tighter.
    let conjunction = |b: &Built| matches!(b.bare_op, Some(BinaryOp::And | BinaryOp::Star));
    if op == BinaryOp::Or && (conjunction(&lhs) || conjunction(&rhs)) {
        warnings.push(SyntaxWarning::MixedAndOr { span });
    }
    let depth = 1 + lhs.depth.max(rhs.depth);
    checked(
        Expr {
            kind: ExprKind::Binary {
                op,
                lhs: Box::new(lhs.expr),
                rhs: Box::new(rhs.expr),
            },
            span,
        },
        Some(op),
        depth,
    )
}

/// Prefix operators (outermost first, each with the offset of its token) around `acc`.
#[inline]
fn apply_prefixes(mut acc: Built, prefixes: Vec<(UnaryOp, usize)>) -> Res<Built> {
    for (op, start) in prefixes.into_iter().rev() {
        let span = Span::new(start, acc.expr.span.end as usize);
        let depth = acc.depth + 1;
        acc = checked(
            Expr {
                kind: ExprKind::Unary {
                    op,
                    operand: Box::new(acc.expr),
                },
                span,
            },
            None,
            depth,
        )?;
    }
    Ok(acc)
}

struct Builder {
    warnings: RefCell<Vec<SyntaxWarning>>,
    /// Errors that do not stop the building (bad `gpuopt` lines); reported together.
    errors: RefCell<Vec<SyntaxError>>,
}

/// The number of a multi-pattern trigger `{:n: e :}`, shared by both parsers: at most nine
/// digits (a `u32`), else E0107 as for any overlong literal.
fn trigger_group(digits: &str, span: Span) -> Result<u32, SyntaxError> {
    const MAX_DIGITS: usize = 9;
    if digits.len() > MAX_DIGITS {
        return Err(SyntaxError::LiteralTooLong {
            digits: digits.len(),
            limit: MAX_DIGITS,
            span,
        });
    }
    Ok(digits.parse().expect("at most nine decimal digits"))
}

fn span_of(pair: &Pair<'_, Rule>) -> Span {
    let s = pair.as_span();
    Span::new(s.start(), s.end())
}

fn ident_of(pair: &Pair<'_, Rule>) -> Ident {
    Ident {
        name: pair.as_str().trim_matches('`').to_string(),
        span: span_of(pair),
    }
}

/// A grammar invariant did not hold: a bug in this file, reported rather than panicking.
fn internal(pair_span: Span, what: &str) -> SyntaxError {
    SyntaxError::Unexpected {
        expected: format!("{what} (internal parser error, please report)"),
        found: "something else".into(),
        span: pair_span,
    }
}

/// Children of a pair, without the keyword tokens that only the grammar needs.
fn children<'i>(pair: &Pair<'i, Rule>) -> Vec<Pair<'i, Rule>> {
    pair.clone()
        .into_inner()
        .filter(|p| !is_keyword(p.as_rule()))
        .collect()
}

fn is_keyword(rule: Rule) -> bool {
    use Rule::*;
    matches!(
        rule,
        k_requires
            | k_ensures
            | k_context
            | k_context_everywhere
            | k_loop_invariant
            | k_lock_invariant
            | k_given
            | k_yields
            | k_decreases
            | k_class
            | k_model
            | k_action
            | k_process
            | k_modifies
            | k_accessible
            | k_static
            | k_pure
            | k_inline
            | k_thread_local
            | k_if
            | k_else
            | k_while
            | k_for
            | k_return
            | k_par
            | k_parallel
            | k_and
            | k_barrier
            | k_assert
            | k_fork
            | k_join
            | k_goto
            | k_label
            | k_vec
            | k_commit
            | k_wait
            | k_notify
            | k_assume
            | k_refute
            | k_inhale
            | k_exhale
            | k_ghost
            | k_invariant
            | k_atomic
            | k_lock
            | k_unlock
            | k_fold
            | k_unfold
            | k_unfolding
            | k_new
            | k_in
            | k_gpuopt
            | w_with
            | w_then
            | w_loop_unroll
            | w_iter_merge
            | w_matrix_lin
            | w_glob_to_reg
            | w_tile
            | w_fuse
            | w_seq
            | w_set
            | w_bag
            | w_option
            | w_map
            | w_tuple
            | w_sequential
    )
}

/// A cursor over a pair's children that reports, instead of panicking, when the grammar gave
/// fewer than expected.
struct Kids<'i> {
    items: std::vec::IntoIter<Pair<'i, Rule>>,
    span: Span,
}

impl<'i> Kids<'i> {
    fn of(pair: &Pair<'i, Rule>) -> Kids<'i> {
        Kids {
            items: children(pair).into_iter(),
            span: span_of(pair),
        }
    }

    fn next(&mut self, what: &str) -> Res<Pair<'i, Rule>> {
        self.items.next().ok_or_else(|| internal(self.span, what))
    }

    fn peek_rule(&self) -> Option<Rule> {
        self.items.as_slice().first().map(|p| p.as_rule())
    }

    fn next_if(&mut self, rule: Rule) -> Option<Pair<'i, Rule>> {
        if self.peek_rule() == Some(rule) {
            self.items.next()
        } else {
            None
        }
    }

    fn rest(self) -> std::vec::IntoIter<Pair<'i, Rule>> {
        self.items
    }
}

impl Builder {
    fn new() -> Builder {
        Builder {
            warnings: RefCell::new(Vec::new()),
            errors: RefCell::new(Vec::new()),
        }
    }

    // ---------------------------------------------------------------- declarations

    fn program(&self, pair: Pair<'_, Rule>) -> Res<Program> {
        let span = span_of(&pair);
        let mut items = Vec::new();
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::class_decl => items.push(self.class(p)?),
                Rule::member => items.extend(self.member(p)?.into_iter().map(Item::Member)),
                _ => {}
            }
        }
        Ok(Program { items, span })
    }

    fn class(&self, pair: Pair<'_, Rule>) -> Res<Item> {
        let span = span_of(&pair);
        let mut contract = Contract::default();
        let mut name = None;
        let mut members = Vec::new();
        let is_model = pair
            .clone()
            .into_inner()
            .any(|p| p.as_rule() == Rule::k_model);
        for p in children(&pair) {
            match p.as_rule() {
                Rule::clause => contract.clauses.push(self.clause(p)?),
                Rule::ident => name = Some(ident_of(&p)),
                Rule::member => members.extend(self.member(p)?),
                _ => {}
            }
        }
        let name = name.ok_or_else(|| internal(span, "a class name"))?;
        // VerCors 1.x declares a model as a class (``class `Future` ``) of processes.
        let is_model = is_model
            || members.iter().any(
                |m| matches!(&m.kind, MemberKind::Method(method) if method.model_member.is_some()),
            );
        Ok(Item::Class(Class {
            contract,
            name,
            members,
            span,
            is_model,
        }))
    }

    /// One declaration; `int x, y;` gives one member per name (the annotations written before
    /// it stay with the first).
    fn member(&self, pair: Pair<'_, Rule>) -> Res<Vec<Member>> {
        let span = span_of(&pair);
        let mut gpuopts = Vec::new();
        let mut contract = Contract::default();
        for p in children(&pair) {
            match p.as_rule() {
                Rule::gpuopt => gpuopts.extend(self.gpuopt(p)),
                Rule::clause => contract.clauses.push(self.clause(p)?),
                Rule::method_decl
                | Rule::constructor_decl
                | Rule::run_decl
                | Rule::action_decl
                | Rule::process_decl => {
                    let method = self.method(p)?;
                    return Ok(vec![Member {
                        gpuopts,
                        contract,
                        kind: MemberKind::Method(method),
                        span,
                    }]);
                }
                Rule::field_decl => {
                    let decl_span = span_of(&p);
                    let mut kids = Kids::of(&p);
                    let ty = self.ty(kids.next("a field type")?)?;
                    let mut members = Vec::new();
                    for name in kids.rest() {
                        members.push(Member {
                            gpuopts: std::mem::take(&mut gpuopts),
                            contract: std::mem::take(&mut contract),
                            kind: MemberKind::Field(Field {
                                ty: ty.clone(),
                                name: ident_of(&name),
                                span: decl_span,
                            }),
                            span,
                        });
                    }
                    return Ok(members);
                }
                _ => {}
            }
        }
        Err(internal(span, "a declaration"))
    }

    fn method(&self, pair: Pair<'_, Rule>) -> Res<Method> {
        let span = span_of(&pair);
        let is_constructor = pair.as_rule() == Rule::constructor_decl;
        let is_run = pair.as_rule() == Rule::run_decl;
        let model_member = match pair.as_rule() {
            Rule::action_decl => Some(ModelMember::Action),
            Rule::process_decl => Some(ModelMember::Process),
            _ => None,
        };
        let mut modifiers = Vec::new();
        let mut return_type = None;
        let mut name = None;
        let mut type_params = Vec::new();
        let mut params = Vec::new();
        let mut body = MethodBody::Abstract;
        for p in children(&pair) {
            match p.as_rule() {
                Rule::modifier => {
                    let m = match p.as_str() {
                        "static" => Modifier::Static,
                        "pure" => Modifier::Pure,
                        "inline" => Modifier::Inline,
                        _ => Modifier::ThreadLocal,
                    };
                    modifiers.push(m);
                }
                Rule::type_ if !is_constructor => return_type = Some(self.ty(p)?),
                Rule::ident => name = Some(ident_of(&p)),
                Rule::k_run => {
                    let at = span_of(&p);
                    return_type = Some(Type {
                        kind: TypeKind::Void,
                        span: at,
                    });
                    name = Some(ident_of(&p));
                }
                Rule::type_params => type_params = p.into_inner().map(|t| ident_of(&t)).collect(),
                Rule::params => {
                    for param in p.into_inner() {
                        params.push(self.param(param)?);
                    }
                }
                Rule::block => body = MethodBody::Block(self.block(p)?),
                Rule::expr_body => {
                    let e = Kids::of(&p).next("a function body")?;
                    body = MethodBody::Expr(self.expr(e)?);
                }
                Rule::abstract_body => body = MethodBody::Abstract,
                _ => {}
            }
        }
        Ok(Method {
            modifiers,
            return_type,
            name: name.ok_or_else(|| internal(span, "a method name"))?,
            type_params,
            params,
            body,
            span,
            is_run,
            model_member,
        })
    }

    fn param(&self, pair: Pair<'_, Rule>) -> Res<Param> {
        let span = span_of(&pair);
        let mut kids = Kids::of(&pair);
        let ty = self.ty(kids.next("a parameter type")?)?;
        let name = ident_of(&kids.next("a parameter name")?);
        Ok(Param { ty, name, span })
    }

    fn contract<'i>(&self, pairs: &mut Kids<'i>) -> Res<Contract> {
        let mut contract = Contract::default();
        while let Some(p) = pairs.next_if(Rule::clause) {
            contract.clauses.push(self.clause(p)?);
        }
        Ok(contract)
    }

    fn clause(&self, pair: Pair<'_, Rule>) -> Res<Clause> {
        let span = span_of(&pair);
        let mut inner = pair.clone().into_inner();
        let kw = inner
            .next()
            .ok_or_else(|| internal(span, "a clause keyword"))?;
        let mut kids = Kids::of(&pair);
        let kind = match kw.as_rule() {
            Rule::k_decreases => match inner.next() {
                Some(p) if p.as_rule() == Rule::k_assume => {
                    ClauseKind::Decreases(Decreases::Assume)
                }
                Some(p) if p.as_rule() == Rule::decreases_measure => {
                    ClauseKind::Decreases(Decreases::Measure(
                        p.into_inner()
                            .map(|e| self.expr(e))
                            .collect::<Res<Vec<_>>>()?,
                    ))
                }
                _ => ClauseKind::Decreases(Decreases::Measure(Vec::new())),
            },
            Rule::k_modifies | Rule::k_accessible => {
                let fields = inner.map(|p| ident_of(&p)).collect();
                if kw.as_rule() == Rule::k_modifies {
                    ClauseKind::Modifies(fields)
                } else {
                    ClauseKind::Accessible(fields)
                }
            }
            Rule::k_given | Rule::k_yields => {
                let ty = self.ty(kids.next("a ghost parameter type")?)?;
                let name_pair = kids.next("a ghost parameter name")?;
                let param = Param {
                    span: ty.span.to(span_of(&name_pair)),
                    ty,
                    name: ident_of(&name_pair),
                };
                if kw.as_rule() == Rule::k_given {
                    ClauseKind::Given(param)
                } else {
                    ClauseKind::Yields(param)
                }
            }
            rule => {
                let e = self.expr(kids.next("a clause expression")?)?;
                match rule {
                    Rule::k_requires => ClauseKind::Requires(e),
                    Rule::k_ensures => ClauseKind::Ensures(e),
                    Rule::k_context => ClauseKind::Context(e),
                    Rule::k_context_everywhere => ClauseKind::ContextEverywhere(e),
                    Rule::k_loop_invariant => ClauseKind::LoopInvariant(e),
                    _ => ClauseKind::LockInvariant(e),
                }
            }
        };
        Ok(Clause { kind, span })
    }

    // ---------------------------------------------------------------- gpuopt

    /// A `gpuopt` line; `None` (with the error recorded) if its arguments are wrong, so that
    /// every bad annotation of the file is reported at once.
    fn gpuopt(&self, pair: Pair<'_, Rule>) -> Option<GpuOpt> {
        let span = span_of(&pair);
        match self.gpuopt_kind(&pair) {
            Ok(kind) => Some(GpuOpt { kind, span }),
            Err(e) => {
                self.errors.borrow_mut().push(e);
                None
            }
        }
    }

    fn gpuopt_kind(&self, pair: &Pair<'_, Rule>) -> Res<GpuOptKind> {
        let form = Kids::of(pair).next("a gpuopt annotation")?;
        let mut kids = Kids::of(&form);
        let kind = match form.as_rule() {
            Rule::go_loop_unroll | Rule::go_iter_merge => {
                let var = ident_of(&kids.next("a loop variable")?);
                let factor = self.expr(kids.next("a factor")?)?;
                if form.as_rule() == Rule::go_loop_unroll {
                    GpuOptKind::LoopUnroll { var, factor }
                } else {
                    GpuOptKind::IterMerge { var, factor }
                }
            }
            Rule::go_matrix_lin => {
                let matrix = ident_of(&kids.next("a matrix")?);
                let order_pair = kids.next("an order")?;
                let order = match order_pair.as_str() {
                    "R" => MatrixOrder::RowMajor,
                    "C" => MatrixOrder::ColumnMajor,
                    other => {
                        return Err(SyntaxError::GpuOptBadWord {
                            annotation: "matrix_lin",
                            what: "order",
                            expected: "`R` (row-major) or `C` (column-major)",
                            found: other.to_string(),
                            span: span_of(&order_pair),
                        })
                    }
                };
                let rows = self.expr(kids.next("a row count")?)?;
                let cols = self.expr(kids.next("a column count")?)?;
                GpuOptKind::MatrixLin {
                    matrix,
                    order,
                    rows,
                    cols,
                }
            }
            Rule::go_glob_to_reg => {
                let array = ident_of(&kids.next("an array")?);
                let mut rows = Vec::new();
                let mut indices = Vec::new();
                for p in kids.rest() {
                    match p.as_rule() {
                        Rule::go_row => {
                            let span = span_of(&p);
                            let inner = p
                                .into_inner()
                                .next()
                                .ok_or_else(|| internal(span, "a row expression"))?;
                            rows.push(self.expr(inner)?)
                        }
                        _ => indices.push(self.expr(p)?),
                    }
                }
                GpuOptKind::GlobToReg {
                    array,
                    rows,
                    indices,
                }
            }
            Rule::go_tile => {
                let layout_pair = kids.next("a layout")?;
                let layout = match layout_pair.as_str() {
                    "inter" => TileLayout::Inter,
                    "intra" => TileLayout::Intra,
                    other => {
                        return Err(SyntaxError::GpuOptBadWord {
                            annotation: "tile",
                            what: "layout",
                            expected: "`inter` or `intra`",
                            found: other.to_string(),
                            span: span_of(&layout_pair),
                        })
                    }
                };
                let size = self.expr(kids.next("a tile size")?)?;
                GpuOptKind::Tile { layout, size }
            }
            Rule::go_fuse => {
                let count = self.expr(kids.next("a kernel count")?)?;
                let block_hint = kids.rest().next().map(|p| self.expr(p)).transpose()?;
                GpuOptKind::Fuse { count, block_hint }
            }
            _ => return Err(malformed_gpuopt(&form)),
        };
        Ok(kind)
    }

    // ---------------------------------------------------------------- types

    fn ty(&self, pair: Pair<'_, Rule>) -> Res<Type> {
        let span = span_of(&pair);
        let mut kids = Kids::of(&pair);
        let base = self.base_type(kids.next("a type")?)?;
        let mut sizes = Vec::new();
        for dim in kids.rest() {
            let size = match dim.into_inner().next() {
                Some(e) => Some(Box::new(self.expr(e)?)),
                None => None,
            };
            sizes.push(size);
        }
        // `int[M][N]` is M rows of N: the last size is the innermost array.
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

    fn base_type(&self, pair: Pair<'_, Rule>) -> Res<Type> {
        let span = span_of(&pair);
        let mut kids = Kids::of(&pair);
        let mut boxed = |what| -> Res<Box<Type>> { Ok(Box::new(self.ty(kids.next(what)?)?)) };
        let kind = match pair.as_rule() {
            Rule::t_int => TypeKind::Int,
            Rule::t_bool => TypeKind::Bool,
            Rule::t_void => TypeKind::Void,
            Rule::t_frac => TypeKind::Frac,
            Rule::t_zfrac => TypeKind::ZFrac,
            Rule::t_rational => TypeKind::Rational,
            Rule::t_resource => TypeKind::Resource,
            Rule::t_seq => TypeKind::Seq(boxed("an element type")?),
            Rule::t_set => TypeKind::Set(boxed("an element type")?),
            Rule::t_bag => TypeKind::Bag(boxed("an element type")?),
            Rule::t_option => TypeKind::Option(boxed("an element type")?),
            Rule::t_map => {
                let k = boxed("a key type")?;
                let v = boxed("a value type")?;
                TypeKind::Map(k, v)
            }
            Rule::t_tuple => {
                let first = boxed("a first type")?;
                let second = boxed("a second type")?;
                TypeKind::Tuple(first, second)
            }
            Rule::t_class => {
                let name = pair
                    .clone()
                    .into_inner()
                    .next()
                    .ok_or_else(|| internal(span, "a class name"))?;
                TypeKind::Class(ident_of(&name))
            }
            _ => return Err(internal(span, "a type")),
        };
        Ok(Type { kind, span })
    }

    // ---------------------------------------------------------------- statements

    fn block(&self, pair: Pair<'_, Rule>) -> Res<Block> {
        let span = span_of(&pair);
        let stmts = pair
            .into_inner()
            .map(|p| self.stmt(p))
            .collect::<Res<Vec<_>>>()?;
        Ok(Block { stmts, span })
    }

    fn stmt(&self, pair: Pair<'_, Rule>) -> Res<Stmt> {
        let span = span_of(&pair);
        let mut kids = Kids::of(&pair);
        let kind = match pair.as_rule() {
            Rule::block => StmtKind::Block(self.block(pair)?),
            Rule::if_stmt => return self.if_chain(pair),
            Rule::loop_stmt => {
                let contract = self.contract(&mut kids)?;
                let lp = kids.next("a loop")?;
                let mut lk = Kids::of(&lp);
                if lp.as_rule() == Rule::while_loop {
                    let cond = self.expr(lk.next("a loop condition")?)?;
                    let body = Box::new(self.stmt(lk.next("a loop body")?)?);
                    StmtKind::While {
                        contract,
                        cond,
                        body,
                    }
                } else {
                    let init = lk.next("a for-loop initialiser")?;
                    let init = match init.into_inner().next() {
                        Some(p) => Some(Box::new(self.simple_or_decl(p)?)),
                        None => None,
                    };
                    let cond = match lk.next("a for-loop condition")?.into_inner().next() {
                        Some(e) => Some(self.expr(e)?),
                        None => None,
                    };
                    let update = match lk.next("a for-loop update")?.into_inner().next() {
                        Some(p) => Some(Box::new(self.simple_or_decl(p)?)),
                        None => None,
                    };
                    let body = Box::new(self.stmt(lk.next("a loop body")?)?);
                    StmtKind::For {
                        contract,
                        init,
                        cond,
                        update,
                        body,
                    }
                }
            }
            Rule::par_stmt => {
                // A contract before a single block (1.x) comes first in the block's own.
                let before = self.contract(&mut kids)?;
                // `par_block` and the 1.x `and_block` differ only in the `par` keyword.
                let mut blocks = kids
                    .rest()
                    .map(|p| self.par_block(p))
                    .collect::<Res<Vec<_>>>()?;
                if let Some(first) = blocks.first_mut() {
                    let own = std::mem::take(&mut first.contract.clauses);
                    first.contract.clauses = before.clauses.into_iter().chain(own).collect();
                }
                StmtKind::Par(ParGroup {
                    blocks,
                    style: ParGroupStyle::And,
                })
            }
            Rule::vec_stmt => StmtKind::Par(ParGroup {
                blocks: vec![self.par_block(pair.clone())?],
                style: ParGroupStyle::Vector,
            }),
            Rule::parallel_stmt => {
                let style = match pair.clone().into_inner().next().map(|p| p.as_rule()) {
                    Some(Rule::w_sequential) => ParGroupStyle::Sequential,
                    _ => ParGroupStyle::Parallel,
                };
                let blocks = kids
                    .rest()
                    .map(|p| self.par_block(p))
                    .collect::<Res<Vec<_>>>()?;
                StmtKind::Par(ParGroup { blocks, style })
            }
            Rule::barrier_stmt => {
                let label = ident_of(&kids.next("a barrier label")?);
                let invariants = kids
                    .next_if(Rule::barrier_invs)
                    .map(|invs| invs.into_inner().map(|i| ident_of(&i)).collect::<Vec<_>>())
                    .unwrap_or_default();
                let form = kids.next("a barrier body")?;
                let form_span = span_of(&form);
                let mut fk = Kids::of(&form);
                let contract = self.contract(&mut fk)?;
                let barrier = if form.as_rule() == Rule::barrier_inside {
                    let stmts = fk.rest().map(|p| self.stmt(p)).collect::<Res<Vec<_>>>()?;
                    Barrier {
                        label,
                        invariants,
                        contract,
                        body: Block {
                            stmts,
                            span: form_span,
                        },
                        style: BarrierStyle::ClausesInside,
                    }
                } else {
                    let body = self.block(fk.next("a barrier block")?)?;
                    Barrier {
                        label,
                        invariants,
                        contract,
                        body,
                        style: BarrierStyle::ClausesBefore,
                    }
                };
                StmtKind::Barrier(barrier)
            }
            Rule::return_stmt => StmtKind::Return(match kids.rest().next() {
                Some(e) => Some(self.expr(e)?),
                None => None,
            }),
            Rule::assert_stmt => StmtKind::Assert(self.expr(kids.next("an assertion")?)?),
            Rule::assume_stmt => StmtKind::Assume(self.expr(kids.next("an assumption")?)?),
            Rule::refute_stmt => StmtKind::Refute(self.expr(kids.next("a refutation")?)?),
            Rule::inhale_stmt => StmtKind::Inhale(self.expr(kids.next("an assertion")?)?),
            Rule::exhale_stmt => StmtKind::Exhale(self.expr(kids.next("an assertion")?)?),
            Rule::ghost_stmt => StmtKind::Ghost(Box::new(self.stmt(kids.next("a statement")?)?)),
            Rule::invariant_stmt => {
                let name = ident_of(&kids.next("an invariant name")?);
                let inv = self.expr(kids.next("an invariant")?)?;
                let body = self.block(kids.next("a block")?)?;
                StmtKind::Invariant { name, inv, body }
            }
            Rule::atomic_stmt => {
                let name = ident_of(&kids.next("an invariant name")?);
                let body = self.block(kids.next("a block")?)?;
                StmtKind::Atomic { name, body }
            }
            Rule::action_stmt => {
                let model = self.expr(kids.next("a model object")?)?;
                let fraction = self.expr(kids.next("a fraction")?)?;
                let rest = self.expr(kids.next("a process")?)?;
                let action = self.expr(kids.next("an action")?)?;
                let mut converts = Vec::new();
                let mut body = None;
                let mut pending = None;
                for p in kids.rest() {
                    if p.as_rule() == Rule::block {
                        body = Some(self.block(p)?);
                    } else if let Some(field) = pending.take() {
                        converts.push((field, self.expr(p)?));
                    } else {
                        pending = Some(self.expr(p)?);
                    }
                }
                StmtKind::Action {
                    header: Box::new(ActionHeader {
                        model,
                        fraction,
                        rest,
                        action,
                        converts,
                    }),
                    body: body.ok_or_else(|| internal(span, "a block"))?,
                }
            }
            Rule::future_stmt => {
                let word = kids.next("create, destroy, split or merge")?;
                let name = Ident {
                    name: word.as_str().to_string(),
                    span: span_of(&word),
                };
                let receiver = self.expr(kids.next("a model object")?)?;
                let args = kids.rest().map(|p| self.expr(p)).collect::<Res<Vec<_>>>()?;
                StmtKind::Expr(Expr {
                    kind: ExprKind::Call {
                        receiver: Some(Box::new(receiver)),
                        name,
                        type_args: Vec::new(),
                        args,
                        given: Vec::new(),
                        yields: Vec::new(),
                    },
                    span,
                })
            }
            Rule::lock_stmt => StmtKind::Lock(self.expr(kids.next("an object")?)?),
            Rule::unlock_stmt => StmtKind::Unlock(self.expr(kids.next("an object")?)?),
            Rule::fold_stmt => StmtKind::Fold(self.expr(kids.next("a predicate")?)?),
            Rule::unfold_stmt => StmtKind::Unfold(self.expr(kids.next("a predicate")?)?),
            Rule::fork_stmt => StmtKind::Fork(self.expr(kids.next("an object")?)?),
            Rule::join_stmt => StmtKind::Join(self.expr(kids.next("an object")?)?),
            Rule::commit_stmt => StmtKind::Commit(self.expr(kids.next("an object")?)?),
            Rule::wait_stmt => StmtKind::Wait(self.expr(kids.next("an object")?)?),
            Rule::notify_stmt => StmtKind::Notify(self.expr(kids.next("an object")?)?),
            Rule::goto_stmt => StmtKind::Goto(ident_of(&kids.next("a label")?)),
            Rule::label_stmt => StmtKind::Label(ident_of(&kids.next("a label")?)),
            Rule::gpuopt => match self.gpuopt(pair) {
                Some(g) => StmtKind::GpuOpt(g),
                // The error is recorded; an empty block keeps the tree well formed meanwhile.
                None => StmtKind::Block(Block {
                    stmts: Vec::new(),
                    span,
                }),
            },
            Rule::decl_stmt | Rule::simple_stmt => {
                let mut stmt = self.simple_or_decl(kids.next("a statement")?)?;
                stmt.span = span; // include the `;`
                return Ok(stmt);
            }
            _ => return Err(internal(span, "a statement")),
        };
        Ok(Stmt { kind, span })
    }

    /// `if (a) s else if (b) t else u`, read as a flat list by the grammar (so long chains
    /// cannot exhaust pest's stack) and nested here from the last branch outwards.
    fn if_chain(&self, pair: Pair<'_, Rule>) -> Res<Stmt> {
        let span = span_of(&pair);
        // (start of the `if` keyword, condition, branch)
        let mut branches: Vec<(usize, Expr, Stmt)> = Vec::new();
        let mut else_branch: Option<Stmt> = None;
        let mut branch_start = span.start as usize;
        let mut inner = pair.into_inner().peekable();
        while let Some(p) = inner.next() {
            match p.as_rule() {
                Rule::k_if => branch_start = p.as_span().start(),
                Rule::else_if => {
                    branch_start = p
                        .clone()
                        .into_inner()
                        .find(|k| k.as_rule() == Rule::k_if)
                        .map_or(p.as_span().start(), |k| k.as_span().start());
                }
                Rule::expr => {
                    let cond = self.expr(p)?;
                    let body = inner.next().ok_or_else(|| internal(span, "a branch"))?;
                    branches.push((branch_start, cond, self.stmt(body)?));
                }
                Rule::k_else => {}
                _ => else_branch = Some(self.stmt(p)?),
            }
        }
        let mut acc = else_branch;
        for (start, cond, then_branch) in branches.into_iter().rev() {
            acc = Some(Stmt {
                kind: StmtKind::If {
                    cond,
                    then_branch: Box::new(then_branch),
                    else_branch: acc.map(Box::new),
                },
                span: Span::new(start, span.end as usize),
            });
        }
        acc.ok_or_else(|| internal(span, "an if statement"))
    }

    /// `local_decl` or `simple` (used by statements and by `for` headers).
    fn simple_or_decl(&self, pair: Pair<'_, Rule>) -> Res<Stmt> {
        let span = span_of(&pair);
        let mut kids = Kids::of(&pair);
        let kind = match pair.as_rule() {
            Rule::local_decl => {
                let ty = self.ty(kids.next("a type")?)?;
                let mut vars = Vec::new();
                for v in kids.rest() {
                    let vspan = span_of(&v);
                    let mut vk = Kids::of(&v);
                    let name = ident_of(&vk.next("a variable name")?);
                    let init = match vk.rest().next() {
                        Some(e) => Some(self.expr(e)?),
                        None => None,
                    };
                    vars.push(LocalVar {
                        name,
                        init,
                        span: vspan,
                    });
                }
                StmtKind::LocalDecl { ty, vars }
            }
            Rule::simple => {
                let target = self.expr(kids.next("an expression")?)?;
                match kids.rest().next() {
                    None => StmtKind::Expr(target),
                    Some(p) if p.as_rule() == Rule::incr => StmtKind::Increment(target),
                    Some(p) if p.as_rule() == Rule::decr => StmtKind::Decrement(target),
                    Some(p) => StmtKind::Assign {
                        target,
                        value: self.expr(p)?,
                    },
                }
            }
            _ => return Err(internal(span, "a simple statement")),
        };
        Ok(Stmt { kind, span })
    }

    fn par_block(&self, pair: Pair<'_, Rule>) -> Res<ParBlock> {
        let span = span_of(&pair);
        let mut kids = Kids::of(&pair);
        let label = kids.next_if(Rule::ident).map(|p| ident_of(&p));
        let mut iters = Vec::new();
        if let Some(its) = kids.next_if(Rule::par_iters) {
            for it in its.into_inner() {
                let ispan = span_of(&it);
                let mut ik = Kids::of(&it);
                let ty = self.ty(ik.next("an iterator type")?)?;
                let name = ident_of(&ik.next("an iterator name")?);
                let lo = self.expr(ik.next("a lower bound")?)?;
                let hi = self.expr(ik.next("an upper bound")?)?;
                iters.push(ParIter {
                    ty,
                    name,
                    lo,
                    hi,
                    span: ispan,
                });
            }
        }
        let contract = self.contract(&mut kids)?;
        let body = self.block(kids.next("a par body")?)?;
        Ok(ParBlock {
            label,
            iters,
            contract,
            body,
            span,
        })
    }

    // ---------------------------------------------------------------- expressions

    fn expr(&self, pair: Pair<'_, Rule>) -> Res<Expr> {
        Ok(self.expr_built(pair)?.expr)
    }

    /// `binary (? expr : binary)*`, nested to the right: `a ? b : c ? d : e`. The children are
    /// the flat stream of the `binary`s (see the grammar), a `then` branch being an `expr`.
    fn expr_built(&self, pair: Pair<'_, Rule>) -> Res<Built> {
        let span = span_of(&pair);
        let mut items = pair.into_inner().peekable();
        let first = self.binary(&mut items, 0)?;
        if items.peek().is_none() {
            return Ok(first);
        }
        // conds[i] ? thens[i] : (conds[i+1] ? ... : last)
        let mut conds = vec![first];
        let mut thens = Vec::new();
        while let Some(then) = items.next() {
            if then.as_rule() != Rule::expr {
                return Err(internal(span, "a conditional expression"));
            }
            thens.push(self.expr_built(then)?);
            conds.push(self.binary(&mut items, 0)?);
        }
        nest_conditionals(conds, thens, span)
    }

    /// Precedence climbing over the stream of one `binary`, for operators binding at least as
    /// tightly as `min_prec`: loosest first exactly as [`BinaryOp::precedence`], `==>` and `::`
    /// to the right, everything else to the left. Stops at the end of the stream or at a
    /// `then` branch. Recursion is bounded by the number of precedence levels, except along
    /// right-associative chains, which the pre-scan counts.
    fn binary<'i, I>(&self, items: &mut Peekable<I>, min_prec: u8) -> Res<Built>
    where
        I: Iterator<Item = Pair<'i, Rule>>,
    {
        let mut lhs = self.unary(items)?;
        while let Some(op) = items.peek().and_then(|p| infix_op(p.as_rule())) {
            let prec = op.precedence();
            if prec < min_prec {
                break;
            }
            items.next();
            let next_min = if matches!(op, BinaryOp::Implies | BinaryOp::Cons) {
                prec
            } else {
                prec + 1
            };
            let rhs = self.binary(items, next_min)?;
            lhs = self.infix(lhs, op, rhs)?;
        }
        Ok(lhs)
    }

    fn infix(&self, lhs: Built, op: BinaryOp, rhs: Built) -> Res<Built> {
        binary_node(lhs, op, rhs, &mut self.warnings.borrow_mut())
    }

    /// `prefix* primary postfix*` from an expression stream: postfix operators bind tighter
    /// than prefix ones. Applied in loops, so long chains (`!!!!x`, `a.b.c.d`) do not recurse.
    fn unary<'i, I>(&self, items: &mut Peekable<I>) -> Res<Built>
    where
        I: Iterator<Item = Pair<'i, Rule>>,
    {
        let mut prefixes = Vec::new();
        let operand = loop {
            let p = items
                .next()
                .ok_or_else(|| internal(Span::default(), "an operand"))?;
            match p.as_rule() {
                Rule::op_not => prefixes.push((UnaryOp::Not, p.as_span().start())),
                Rule::op_neg => prefixes.push((UnaryOp::Neg, p.as_span().start())),
                _ => break p,
            }
        };
        let mut acc = if operand.as_rule() == Rule::ident {
            // A name, or a call when the grammar's silent `call_or_name` gave a `call_tail`.
            let name = ident_of(&operand);
            match items.next_if(|p| p.as_rule() == Rule::call_tail) {
                None => checked(
                    Expr {
                        span: name.span,
                        kind: ExprKind::Name(name),
                    },
                    None,
                    1,
                )?,
                Some(tail) => {
                    let span = name.span.to(span_of(&tail));
                    let tail = self.call_tail(tail)?;
                    let depth = tail.depth + 1;
                    checked(
                        Expr {
                            kind: tail.into_call(None, name),
                            span,
                        },
                        None,
                        depth,
                    )?
                }
            }
        } else {
            self.primary(operand)?
        };
        while let Some(suffix) = items.next_if(|p| {
            matches!(
                p.as_rule(),
                Rule::bracket_suffix | Rule::member_suffix | Rule::nullable_suffix
            )
        }) {
            acc = self.postfix(acc, suffix)?;
        }
        apply_prefixes(acc, prefixes)
    }

    fn postfix(&self, base: Built, suffix: Pair<'_, Rule>) -> Res<Built> {
        let span = base.expr.span.to(span_of(&suffix));
        let mut depth = base.depth + 1;
        let base_box = Box::new(base.expr);
        let kind = match suffix.as_rule() {
            Rule::bracket_suffix => {
                let parts: Vec<Pair<'_, Rule>> = suffix.into_inner().collect();
                let rules: Vec<Rule> = parts.iter().map(|p| p.as_rule()).collect();
                let star = parts
                    .iter()
                    .find(|p| p.as_rule() == Rule::all_indices)
                    .map(span_of);
                let mut exprs = Vec::new();
                for p in parts.into_iter().filter(|p| p.as_rule() == Rule::expr) {
                    let b = self.expr_built(p)?;
                    depth = depth.max(b.depth + 1);
                    exprs.push(Box::new(b.expr));
                }
                let mut exprs = exprs.into_iter();
                match rules.as_slice() {
                    [Rule::all_indices] => ExprKind::Index {
                        base: base_box,
                        index: Box::new(Expr {
                            kind: ExprKind::AllIndices,
                            span: star.unwrap_or(span),
                        }),
                    },
                    [Rule::expr] => ExprKind::Index {
                        base: base_box,
                        index: exprs.next().ok_or_else(|| internal(span, "an index"))?,
                    },
                    [Rule::dotdot, Rule::expr] => ExprKind::Slice {
                        base: base_box,
                        from: None,
                        to: exprs.next(),
                    },
                    [Rule::expr, Rule::dotdot, ..] => ExprKind::Slice {
                        base: base_box,
                        from: exprs.next(),
                        to: exprs.next(),
                    },
                    [Rule::expr, Rule::arrow, Rule::expr] => ExprKind::Update {
                        base: base_box,
                        index: exprs.next().ok_or_else(|| internal(span, "an index"))?,
                        value: exprs.next().ok_or_else(|| internal(span, "a value"))?,
                    },
                    _ => return Err(internal(span, "an index")),
                }
            }
            Rule::member_suffix => {
                let mut kids = Kids::of(&suffix);
                let name = ident_of(&kids.next("a member name")?);
                match kids.rest().next() {
                    None => ExprKind::Field {
                        base: base_box,
                        name,
                    },
                    Some(tail) => {
                        let tail = self.call_tail(tail)?;
                        depth = depth.max(tail.depth + 1);
                        tail.into_call(Some(base_box), name)
                    }
                }
            }
            // Read as what VerCors makes of it, `x != null ==> x.p(args)`: the receiver is
            // pure, so reading it twice changes nothing.
            Rule::nullable_suffix => {
                let mut kids = Kids::of(&suffix);
                let name = ident_of(&kids.next("a predicate name")?);
                let tail = self.call_tail(kids.next("an argument list")?)?;
                depth = depth.max(tail.depth + 1) + 1;
                let receiver = base_box.clone();
                let guard = Expr {
                    kind: ExprKind::Binary {
                        op: BinaryOp::Neq,
                        lhs: base_box,
                        rhs: Box::new(Expr {
                            kind: ExprKind::Null,
                            span: name.span,
                        }),
                    },
                    span,
                };
                let call = Expr {
                    kind: tail.into_call(Some(receiver), name),
                    span,
                };
                ExprKind::Binary {
                    op: BinaryOp::Implies,
                    lhs: Box::new(guard),
                    rhs: Box::new(call),
                }
            }
            _ => return Err(internal(span, "a postfix operator")),
        };
        checked(Expr { kind, span }, None, depth)
    }

    /// `<types>(args) with { .. } then { .. }`.
    fn call_tail(&self, pair: Pair<'_, Rule>) -> Res<CallTail> {
        let mut type_args = Vec::new();
        let mut args = Vec::new();
        let mut given = Vec::new();
        let mut yields = Vec::new();
        let mut depth = 0;
        for part in children(&pair) {
            match part.as_rule() {
                Rule::type_args => {
                    for t in part.into_inner() {
                        type_args.push(self.ty(t)?);
                    }
                }
                Rule::call_args => {
                    for a in part.into_inner() {
                        let b = self.expr_built(a)?;
                        depth = depth.max(b.depth);
                        args.push(b.expr);
                    }
                }
                Rule::with_block | Rule::then_block => {
                    let into = if part.as_rule() == Rule::with_block {
                        &mut given
                    } else {
                        &mut yields
                    };
                    for g in children(&part) {
                        let gspan = span_of(&g);
                        let mut gk = Kids::of(&g);
                        let name = ident_of(&gk.next("a ghost name")?);
                        let b = self.expr_built(gk.next("a ghost value")?)?;
                        depth = depth.max(b.depth);
                        into.push(GhostArg {
                            name,
                            value: b.expr,
                            span: gspan,
                        });
                    }
                }
                _ => {}
            }
        }
        Ok(CallTail {
            type_args,
            args,
            given,
            yields,
            depth,
        })
    }

    fn args(&self, pair: Pair<'_, Rule>) -> Res<(Vec<Expr>, u32)> {
        let mut depth = 0;
        let mut args = Vec::new();
        for a in pair.into_inner() {
            let b = self.expr_built(a)?;
            depth = depth.max(b.depth);
            args.push(b.expr);
        }
        Ok((args, depth))
    }

    fn primary(&self, pair: Pair<'_, Rule>) -> Res<Built> {
        let span = span_of(&pair);
        let leaf = |kind| Ok(Built::leaf(Expr { kind, span }));
        // Leaves first, before their (no) children are collected.
        match pair.as_rule() {
            Rule::int_lit => {
                let text = pair.as_str();
                if text.len() > super::MAX_LITERAL_DIGITS {
                    return Err(SyntaxError::LiteralTooLong {
                        digits: text.len(),
                        limit: super::MAX_LITERAL_DIGITS,
                        span,
                    });
                }
                let value = match text.parse::<u64>() {
                    Ok(small) => BigUint::from(small),
                    Err(_) => text
                        .parse::<BigUint>()
                        .map_err(|_| internal(span, "an integer"))?,
                };
                return leaf(ExprKind::IntLit(value));
            }
            Rule::lit_true => return leaf(ExprKind::BoolLit(true)),
            Rule::lit_false => return leaf(ExprKind::BoolLit(false)),
            Rule::lit_null => return leaf(ExprKind::Null),
            Rule::lit_this => return leaf(ExprKind::This),
            Rule::lit_result => return leaf(ExprKind::Result),
            Rule::perm_write => return leaf(ExprKind::PermLit(PermLit::Write)),
            Rule::perm_read => return leaf(ExprKind::PermLit(PermLit::Read)),
            Rule::perm_none => return leaf(ExprKind::PermLit(PermLit::None)),
            _ => {}
        }
        let mut kids = Kids::of(&pair);
        // Height of the deepest sub-expression, for the depth limit.
        let mut sub = 0u32;
        let mut sub_expr = |b: Built| {
            sub = sub.max(b.depth);
            b.expr
        };
        let rule = pair.as_rule();
        let kind = match rule {
            Rule::paren => {
                // Parentheses are not in the IR, but they do silence the W0101 check.
                let mut b = self.expr_built(kids.next("an expression")?)?;
                b.bare_op = None;
                return Ok(b);
            }
            Rule::quantifier => {
                let mut inner = pair.clone().into_inner();
                let kind = match inner.next().map(|p| p.as_rule()) {
                    Some(Rule::q_forall_star) => QuantifierKind::ForallStar,
                    Some(Rule::q_forall) => QuantifierKind::Forall,
                    Some(Rule::q_exists) => QuantifierKind::Exists,
                    Some(Rule::q_sum) => QuantifierKind::Sum,
                    _ => return Err(internal(span, "a quantifier")),
                };
                let mut binders = Vec::new();
                let mut exprs = Vec::new();
                for p in inner {
                    match p.as_rule() {
                        Rule::binder => binders.push(self.binder(p)?),
                        _ => exprs.push(sub_expr(self.expr_built(p)?)),
                    }
                }
                let body = exprs.pop().ok_or_else(|| internal(span, "a body"))?;
                let cond = exprs.pop();
                ExprKind::Quantifier(Box::new(Quantifier {
                    kind,
                    binders,
                    cond,
                    body,
                }))
            }
            Rule::let_expr => {
                let ty = self.ty(kids.next("a type")?)?;
                let name = ident_of(&kids.next("a name")?);
                let value = sub_expr(self.expr_built(kids.next("a value")?)?);
                let body = sub_expr(self.expr_built(kids.next("a body")?)?);
                ExprKind::Let {
                    ty,
                    name,
                    value: Box::new(value),
                    body: Box::new(body),
                }
            }
            Rule::scaled => {
                let amount = sub_expr(self.expr_built(kids.next("a scale")?)?);
                let pred = sub_expr(self.unary(&mut kids.rest().peekable())?);
                ExprKind::Scaled {
                    amount: Box::new(amount),
                    pred: Box::new(pred),
                }
            }
            Rule::old_length | Rule::length => ExprKind::Length(Box::new(sub_expr(
                self.expr_built(kids.next("a sequence")?)?,
            ))),
            Rule::old_expr => ExprKind::Old(Box::new(sub_expr(
                self.expr_built(kids.next("an expression")?)?,
            ))),
            Rule::trigger => {
                let group = match kids.next_if(Rule::trigger_group) {
                    Some(g) => Some(trigger_group(
                        g.as_str().trim_end_matches(':'),
                        span_of(&g),
                    )?),
                    None => None,
                };
                ExprKind::Trigger(
                    Box::new(sub_expr(self.expr_built(kids.next("an expression")?)?)),
                    group,
                )
            }
            Rule::builtin => {
                let op = match kids.next("a built-in")?.as_rule() {
                    Rule::b_perm => Builtin::Perm,
                    Rule::b_points_to => Builtin::PointsTo,
                    Rule::b_value => Builtin::Value,
                    Rule::b_auto_value => Builtin::AutoValue,
                    Rule::b_array => Builtin::Array,
                    Rule::b_idle => Builtin::Idle,
                    Rule::b_running => Builtin::Running,
                    Rule::b_held => Builtin::Held,
                    Rule::b_committed => Builtin::Committed,
                    Rule::b_hperm => Builtin::HPerm,
                    Rule::b_aperm => Builtin::APerm,
                    Rule::b_typeof => Builtin::TypeOf,
                    Rule::b_type => Builtin::Type,
                    Rule::b_values => Builtin::Values,
                    _ => Builtin::Matrix,
                };
                let (args, d) = self.args(kids.next("arguments")?)?;
                sub = sub.max(d);
                ExprKind::Builtin { op, args }
            }
            Rule::new_expr => {
                let first = kids.next("a type or class")?;
                if first.as_rule() == Rule::ident {
                    let tail = self.call_tail(kids.next("arguments")?)?;
                    sub = sub.max(tail.depth);
                    ExprKind::New {
                        class: ident_of(&first),
                        args: tail.args,
                        given: tail.given,
                        yields: tail.yields,
                    }
                } else {
                    let elem = self.base_type(first)?;
                    let mut dims = Vec::new();
                    for d in kids.rest() {
                        let e = Kids::of(&d).next("a size")?;
                        dims.push(sub_expr(self.expr_built(e)?));
                    }
                    ExprKind::NewArray { elem, dims }
                }
            }
            Rule::unfolding_expr => {
                // `k_unfolding`, the predicate's stream (the grammar's silent `unary`), `expr`.
                let mut items = kids.rest().peekable();
                let pred = sub_expr(self.unary(&mut items)?);
                let body = sub_expr(
                    self.expr_built(items.next().ok_or_else(|| internal(span, "a body"))?)?,
                );
                ExprKind::Unfolding {
                    pred: Box::new(pred),
                    body: Box::new(body),
                }
            }
            Rule::collection => {
                let kind_word = pair.clone().into_inner().next();
                let kind = match kind_word.as_ref().map(|w| w.as_str()) {
                    Some("seq") => CollectionKind::Seq,
                    Some("set") => CollectionKind::Set,
                    _ => CollectionKind::Bag,
                };
                let elem = Some(self.ty(kids.next("an element type")?)?);
                let elems = kids
                    .rest()
                    .map(|p| Ok(sub_expr(self.expr_built(p)?)))
                    .collect::<Res<Vec<_>>>()?;
                ExprKind::Collection { kind, elem, elems }
            }
            Rule::seq_list | Rule::set_list => {
                let elems = kids
                    .rest()
                    .map(|p| Ok(sub_expr(self.expr_built(p)?)))
                    .collect::<Res<Vec<_>>>()?;
                ExprKind::Collection {
                    kind: if rule == Rule::seq_list {
                        CollectionKind::Seq
                    } else {
                        CollectionKind::Set
                    },
                    elem: None,
                    elems,
                }
            }
            Rule::seq_empty | Rule::set_empty => {
                let elem = Some(self.ty(kids.next("an element type")?)?);
                ExprKind::Collection {
                    kind: if rule == Rule::seq_empty {
                        CollectionKind::Seq
                    } else {
                        CollectionKind::Set
                    },
                    elem,
                    elems: Vec::new(),
                }
            }
            Rule::tuple_lit | Rule::pair => {
                let types = if rule == Rule::tuple_lit {
                    let first = self.ty(kids.next("a first type")?)?;
                    let second = self.ty(kids.next("a second type")?)?;
                    Some(Box::new((first, second)))
                } else {
                    None
                };
                let first = sub_expr(self.expr_built(kids.next("a first element")?)?);
                let second = sub_expr(self.expr_built(kids.next("a second element")?)?);
                ExprKind::Tuple {
                    types,
                    first: Box::new(first),
                    second: Box::new(second),
                }
            }
            Rule::map_lit => {
                let key = self.ty(kids.next("a key type")?)?;
                let value = self.ty(kids.next("a value type")?)?;
                let mut entries = Vec::new();
                for entry in kids.rest() {
                    let mut ek = Kids::of(&entry);
                    let k = sub_expr(self.expr_built(ek.next("a key")?)?);
                    let v = sub_expr(self.expr_built(ek.next("a value")?)?);
                    entries.push((k, v));
                }
                ExprKind::MapLit {
                    key,
                    value,
                    entries,
                }
            }
            _ => return Err(internal(span, "an expression")),
        };
        checked(Expr { kind, span }, None, sub + 1)
    }

    fn binder(&self, pair: Pair<'_, Rule>) -> Res<Binder> {
        let span = span_of(&pair);
        let mut kids = Kids::of(&pair);
        let ty = self.ty(kids.next("a type")?)?;
        let name = ident_of(&kids.next("a name")?);
        let range = match (kids.items.next(), kids.items.next()) {
            (Some(lo), Some(hi)) => Some((self.expr(lo)?, self.expr(hi)?)),
            _ => None,
        };
        Ok(Binder {
            ty,
            name,
            range,
            span,
        })
    }
}

/// The operator of an infix operator rule.
fn infix_op(rule: Rule) -> Option<BinaryOp> {
    Some(match rule {
        Rule::op_implies => BinaryOp::Implies,
        Rule::op_or => BinaryOp::Or,
        Rule::op_and => BinaryOp::And,
        Rule::op_star => BinaryOp::Star,
        Rule::op_eq => BinaryOp::Eq,
        Rule::op_neq => BinaryOp::Neq,
        Rule::op_lt => BinaryOp::Lt,
        Rule::op_le => BinaryOp::Le,
        Rule::op_gt => BinaryOp::Gt,
        Rule::op_ge => BinaryOp::Ge,
        Rule::op_in => BinaryOp::In,
        Rule::op_add => BinaryOp::Add,
        Rule::op_sub => BinaryOp::Sub,
        Rule::op_concat => BinaryOp::Concat,
        Rule::op_cons => BinaryOp::Cons,
        Rule::op_mul => BinaryOp::Mul,
        Rule::op_div => BinaryOp::Div,
        Rule::op_mod => BinaryOp::Mod,
        Rule::op_fracdiv => BinaryOp::FracDiv,
        _ => return None,
    })
}

/// E0104/E0105 for a `gpuopt` line the specific forms did not match.
fn malformed_gpuopt(form: &Pair<'_, Rule>) -> SyntaxError {
    let span = span_of(form);
    let text = form.as_str().trim();
    let name: String = text
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let usage = match name.as_str() {
        "loop_unroll" => "gpuopt loop_unroll VAR K;",
        "iter_merge" => "gpuopt iter_merge VAR M;",
        "matrix_lin" => "gpuopt matrix_lin MATRIX R|C ROWS COLS;",
        "glob_to_reg" => "gpuopt glob_to_reg ARRAY INDEX...;",
        "tile" => "gpuopt tile inter|intra SIZE;",
        "fuse" => "gpuopt fuse F [N];",
        _ => {
            return SyntaxError::GpuOptUnknown {
                name: if name.is_empty() {
                    text.chars().take(20).collect()
                } else {
                    name
                },
                span,
            }
        }
    };
    SyntaxError::GpuOptMalformed {
        annotation: name,
        usage,
        span,
    }
}

mod fast;

#[cfg(test)]
mod tests;
