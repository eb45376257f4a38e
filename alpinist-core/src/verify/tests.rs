//! Translation tests: expressions parsed from small PVL programs, checked with Z3.
//! (Known verdicts on hand-built terms are in `solver.rs`.)

use super::*;
use crate::syntax::{self, Item, MemberKind, MethodBody, StmtKind};

/// The `assume`d and `assert`ed expressions of the first method of `src`, in order. The
/// program must parse and type-check.
fn specs(src: &str) -> (Vec<Expr>, Vec<Expr>) {
    let parsed = syntax::parse(src).unwrap_or_else(|e| panic!("syntax: {e:?}"));
    crate::check::check(&parsed.program).unwrap_or_else(|e| panic!("check: {e:?}"));
    let (mut assumes, mut asserts) = (Vec::new(), Vec::new());
    for item in &parsed.program.items {
        let Item::Class(class) = item else { continue };
        for m in &class.members {
            let MemberKind::Method(method) = &m.kind else {
                continue;
            };
            let MethodBody::Block(block) = &method.body else {
                continue;
            };
            for s in &block.stmts {
                match &s.kind {
                    StmtKind::Assume(e) => assumes.push(e.clone()),
                    StmtKind::Assert(e) => asserts.push(e.clone()),
                    _ => {}
                }
            }
            return (assumes, asserts);
        }
    }
    panic!("no method in {src}")
}

fn env() -> Env {
    Env::new()
        .with("x", Sort::Int)
        .with("y", Sort::Int)
        .with("z", Sort::Int)
        .with("n", Sort::Int)
        .with("i", Sort::Int)
        .with("b", Sort::Bool)
        .with("c", Sort::Bool)
}

/// Wraps `body` in a method with the variables of [`env`] as parameters.
fn program(body: &str) -> String {
    format!(
        "class C {{\n  void m(int x, int y, int z, int n, int i, boolean b, boolean c) {{\n{body}\n  }}\n}}\n"
    )
}

/// The verdict of every `assert` of `body`, each under all the `assume`s.
fn verdicts_with(body: &str, limits: &Limits) -> Vec<Result<Verdict, EncodeError>> {
    let (assumes, asserts) = specs(&program(body));
    let assumes: Vec<&Expr> = assumes.iter().collect();
    asserts
        .iter()
        .map(|goal| check_pure(&env(), &assumes, goal, limits))
        .collect()
}

fn verdict(body: &str) -> Result<Verdict, EncodeError> {
    let mut all = verdicts_with(body, &Limits::default());
    assert_eq!(all.len(), 1, "one assert expected in {body}");
    all.pop().unwrap()
}

#[track_caller]
fn assert_verified(body: &str) {
    assert_eq!(verdict(body), Ok(Verdict::Verified), "{body}");
}

#[track_caller]
fn assert_failed(body: &str) -> Vec<(String, String)> {
    match verdict(body) {
        Ok(Verdict::Failed { model }) => model,
        other => panic!("expected Failed for {body}, got {other:?}"),
    }
}

#[test]
fn arithmetic_and_comparisons() {
    assert_verified("assert x + 1 > x;");
    assert_verified("assert x - y == -(y - x);");
    assert_verified("assert 2 * x == x + x;");
    assert_verified("assert x <= y || x > y;");
    assert_verified("assert x >= y || y >= x;");
    assert_verified("assert x != x + 1;");
    assert_verified(
        "assert 123456789012345678901234567890 * 10 > 1234567890123456789012345678900 - 1;",
    );
}

#[test]
fn booleans_conditionals_and_let() {
    assert_verified("assert b == (b && true);");
    assert_verified("assert (b ==> c) || b;");
    assert_verified("assert !(b && !b);");
    assert_verified("assert b != !b;");
    assert_verified("assert (x > 0 ? x : -x) >= 0;");
    assert_verified("assert (b ? 1 : 2) > 0;");
    assert_verified("assert (\\let int w = x + 1; w > x);");
    assert_verified("assert (\\let boolean d = b || c; d == (c || b));");
}

#[test]
fn assumptions_are_used() {
    assert_verified("assume x > 0;\n assume y > x;\n assert y > 1;");
    assert_verified("assume false;\n assert x == 1;");
}

#[test]
fn quantifiers() {
    assert_verified("assert (\\forall int j; 0 <= j && j < n; j < n + 1);");
    assert_verified("assert (\\forall int j = 0 .. n; j >= 0);");
    assert_verified("assert n > 0 ==> (\\exists int j; 0 <= j && j < n; j == n - 1);");
    assert_verified("assert (\\forall int j, int k; j < k; j + 1 <= k);");
    assert_verified(
        "assume (\\forall int j; 0 <= j && j < n; j != 3);\n assume n > 5;\n assert false;",
    );
    assert_verified("assert (\\forall int j; {: j + 1 :} > j);");
}

#[test]
fn false_claims_fail_with_a_model() {
    let model = assert_failed("assume x > 0;\n assert x > 1;");
    assert_eq!(model, [("x".to_string(), "1".to_string())]);

    let model = assert_failed("assume x > y;\n assert y - x > -2;");
    let names: Vec<&str> = model.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["x", "y"]);
    let (x, y): (i64, i64) = (model[0].1.parse().unwrap(), model[1].1.parse().unwrap());
    assert!(x > y && y - x <= -2, "not a counterexample: {model:?}");

    assert_failed("assert b ==> c;");
    assert_failed("assert (\\forall int j; 0 <= j; j < n);");
    assert_failed("assert (\\exists int j; 0 <= j && j < n; true);");
    assert_failed("assert (\\forall int j = 0 .. n; j > 0);");
}

#[test]
fn binders_do_not_capture_free_variables() {
    // The environment has an `i`; the quantifier's own `i` is a different variable.
    let model = assert_failed("assume i == 5;\n assert (\\forall int i; i == 5);");
    assert_eq!(model, [("i".to_string(), "5".to_string())]);
    assert_verified("assume i == 5;\n assert (\\forall int i; i == i) && i == 5;");
    assert_verified("assume x == 1;\n assert (\\let int x = 2; x) == x + 1;");
}

#[test]
fn nonlinear_goal_under_a_tiny_rlimit_is_unknown() {
    let v = verdicts_with(
        "assume x > 0 && y > 0 && z > 0;\n assert x * x * x + y * y * y != z * z * z;",
        &Limits {
            rlimit: 1000,
            ..Limits::default()
        },
    );
    match &v[..] {
        [Ok(Verdict::Unknown { reason })] => assert!(!reason.is_empty()),
        other => panic!("expected one Unknown, got {other:?}"),
    }
}

#[test]
fn verdicts_are_deterministic_and_work_on_any_thread() {
    let body = "assume x > 0;\n assert x > 1;";
    let here = verdict(body);
    let there = std::thread::spawn(move || verdict(body)).join().unwrap();
    assert_eq!(here, there);
    assert_eq!(here, verdict(body));
}

/// The source text an error points at.
fn error_text(body: &str) -> (EncodeError, String) {
    let src = program(body);
    let (assumes, asserts) = specs(&src);
    let assumes: Vec<&Expr> = assumes.iter().collect();
    let err = check_pure(&env(), &assumes, &asserts[0], &Limits::default())
        .expect_err("expected an encoding error");
    let text = src[err.span().range()].to_string();
    (err, text)
}

#[test]
fn division_agrees_with_every_semantics_only_on_non_negative_operands() {
    // x >= 0, divisor > 0: Z3's div/mod, where C, floor and Euclidean division agree.
    assert_verified("assume x >= 0;\n assert x / 2 <= x;");
    assert_verified("assume x >= 0;\n assert x % 2 >= 0 && x % 2 < 2;");
    assert_verified("assume x >= 0 && y > 0;\n assert x == (x / y) * y + x % y;");
    // A negative dividend: truncation says -1 / 2 == 0, floor says -1; neither is provable.
    assert_failed("assume x == -1;\n assert x / 2 == 0;");
    assert_failed("assume x == -1;\n assert x / 2 == -1;");
    assert_failed("assume x == -1;\n assert x % 2 == 1;");
    // Fractions are exact rationals.
    assert_verified("assert 1\\2 + 1\\2 == 1;");
    assert_verified("assert 1\\3 < 1\\2;");
}

#[test]
fn unsupported_constructs_are_typed_errors() {
    let cases = [
        ("assert x > 0 && \\old(x) > 0;", "\\old(x)"),
        (
            "assert (\\sum int j; 0 <= j; j) >= 0;",
            "(\\sum int j; 0 <= j; j)",
        ),
        // Fractions: their sort (reals) holds values outside the type.
        ("assert (\\forall frac d; d > 0);", "frac"),
    ];
    for (body, text) in cases {
        let (err, got) = error_text(body);
        assert!(
            matches!(err, EncodeError::Unsupported { .. }),
            "{body}: {err:?}"
        );
        assert_eq!(err.code_str(), "E0501");
        assert_eq!(got, text, "{body}");
    }
}

#[test]
fn unsupported_in_an_assumption_or_a_conjunct_is_never_dropped() {
    // A heap read in an assumption: an error, not a check without that assumption.
    let src = "class C {\n  int[] a;\n  void m(int x) {\n    assume a[0] == x;\n    assert x == 0;\n  }\n}\n";
    let (assumes, asserts) = specs(src);
    let env = Env::new().with("x", Sort::Int).with("a", Sort::Int);
    let assumes: Vec<&Expr> = assumes.iter().collect();
    let err = check_pure(&env, &assumes, &asserts[0], &Limits::default()).unwrap_err();
    assert_eq!(&src[err.span().range()], "a[0]");

    // One conjunct the pure context cannot encode (a field of `this`, which a pure context
    // does not have) in a goal that would otherwise be false: still an error.
    let src = "class C {\n  int f;\n  void m(int x) {\n    assert x > x && this.f == 1;\n  }\n}\n";
    let (_, asserts) = specs(src);
    let env = Env::new().with("x", Sort::Int);
    let err = check_pure(&env, &[], &asserts[0], &Limits::default()).unwrap_err();
    assert!(
        matches!(err, EncodeError::UnboundName { ref name, .. } if name == "this"),
        "{err:?}"
    );
    assert_eq!(&src[err.span().range()], "this");
}

#[test]
fn permissions_and_calls_are_unsupported() {
    let src = "class C {\n  int f;\n  pure int g(int v) = v;\n  void m(int x) {\n    assert Perm(this.f, write);\n    assert g(x) == x;\n  }\n}\n";
    let (_, asserts) = specs(src);
    let env = Env::new().with("x", Sort::Int);
    let texts: Vec<String> = asserts
        .iter()
        .map(|g| {
            let err = check_pure(&env, &[], g, &Limits::default()).unwrap_err();
            assert_eq!(err.code_str(), "E0501", "{err:?}");
            // Trimmed: the parser's spans of postfix expressions (calls, `.f`) currently
            // end after the following whitespace.
            src[err.span().range()].trim_end().to_string()
        })
        .collect();
    assert_eq!(texts, ["Perm(this.f, write)", "g(x)"]);
}

#[test]
fn names_outside_the_environment_are_errors() {
    let src = program("assert x == y;");
    let (_, asserts) = specs(&src);
    let env = Env::new().with("x", Sort::Int);
    let err = check_pure(&env, &[], &asserts[0], &Limits::default()).unwrap_err();
    assert_eq!(
        err,
        EncodeError::UnboundName {
            name: "y".into(),
            span: err.span()
        }
    );
    assert_eq!(&src[err.span().range()], "y");
}

#[test]
fn sums_unfold_at_either_end_and_never_prove_too_much() {
    // A constant range is summed out.
    assert_verified("assert (\\sum int j; 0 <= j && j < 4; j) == 6;");
    assert_failed("assert (\\sum int j; 0 <= j && j < 4; j) == 5;");
    // A symbolic range: one unfolding at either end of every `sum` term.
    assert_verified(
        "assume x > 0;\n assert (\\sum int j; 0 <= j && j < x; j) == (\\sum int j; 0 <= j && j < x - 1; j) + x - 1;",
    );
    assert_verified(
        "assume x > 0;\n assert (\\sum int j; 0 <= j && j < x; y) == y + (\\sum int j; 1 <= j && j < x; y);",
    );
    assert_verified("assume x <= 0;\n assert (\\sum int j; 0 <= j && j < x; y) == 0;");
    // The definition does not make every sum equal.
    let v = verdict("assume x > 0;\n assert (\\sum int j; 0 <= j && j < x; j) == 0;");
    assert!(!matches!(v, Ok(Verdict::Verified)), "{v:?}");
}

#[test]
fn inline_predicates_expand_without_capture_and_with_swapped_arguments() {
    let src =
        "inline resource P(int a, int b) = a < b ** (\\forall int k; 0 <= k && k < a; k < b);\n\
               class C {\n  requires P(k, a);\n  void m(int a, int k) {\n  }\n}\n";
    let parsed = syntax::parse(src).unwrap_or_else(|e| panic!("syntax: {e:?}"));
    crate::check::check(&parsed.program).unwrap_or_else(|e| panic!("check: {e:?}"));
    let info = program::ProgramInfo::new(&parsed.program);
    let m = info.routine("m").expect("method m");
    let pre = m.pre();
    let expanded = inline::expand(pre[0], &info).expect("an inline call to expand");
    let text = syntax::print_expr(&expanded);
    // `a` and `b` swap to `k` and `a`; the body's binder `k` is renamed away from the
    // argument `k`, whose occurrences stay free.
    assert!(text.starts_with("k < a ** (\\forall int k'"), "{text}");
    assert!(text.contains(" < k; k'"), "{text}");
    assert!(text.ends_with("< a)"), "{text}");
    // A call that is not an inline predicate is left alone.
    let (_, asserts) = specs(&program("assert x < y;"));
    assert!(inline::expand(&asserts[0], &info).is_none());
}

/// `Int32::unsigned` (kernels written in Rust): an operation named there must not go below zero
/// (E0641). The broken program — `n - 1` of a `usize` where `n` may be 0 — verified before the
/// obligation existed (PVL integers are unbounded), and still does outside the mode; its twin,
/// with `n >= 1`, verifies in it.
#[test]
fn an_unsigned_operation_must_not_go_below_zero() {
    let outcome = |lower: &str, unsigned: bool| {
        let src = format!(
            "requires {lower} <= n && n <= 100;\nint m(int n) {{\n  int k = n - 1;\n  return k;\n}}\n"
        );
        let parsed = syntax::parse(&src).unwrap_or_else(|e| panic!("syntax: {e:?}"));
        crate::check::check(&parsed.program).unwrap_or_else(|e| panic!("check: {e:?}"));
        let mut subtraction = None;
        parsed.program.items.iter().for_each(|item| {
            let Item::Member(m) = item else { return };
            let MemberKind::Method(method) = &m.kind else {
                return;
            };
            let MethodBody::Block(block) = &method.body else {
                return;
            };
            for s in &block.stmts {
                if let StmtKind::LocalDecl { vars, .. } = &s.kind {
                    subtraction = vars[0].init.as_ref().map(|e| e.span);
                }
            }
        });
        let mode = Int32 {
            unsigned: subtraction.into_iter().filter(|_| unsigned).collect(),
            ..Int32::all()
        };
        let reports = verify_program_with(&parsed.program, &Limits::default(), Some(&mode), 1);
        let failed: Vec<&str> = reports
            .iter()
            .flat_map(|r| &r.obligations)
            .filter(|o| matches!(o.status, Status::Failed { .. }))
            .map(|o| o.kind.code())
            .collect();
        (
            reports.iter().map(MethodReport::outcome).max().unwrap(),
            failed,
        )
    };
    assert_eq!(outcome("0", true), (Outcome::Failed, vec!["E0641"]));
    assert_eq!(outcome("0", false), (Outcome::Verified, vec![]));
    assert_eq!(outcome("1", true), (Outcome::Verified, vec![]));
}
