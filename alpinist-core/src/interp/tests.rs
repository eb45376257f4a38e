//! Tests of the interpreter: one group per feature, the repository's examples against host
//! computations, negative tests (races, divergent barriers, failed asserts, runtime errors
//! with their spans) and property tests.

use proptest::prelude::*;

use super::*;
use crate::syntax::{parse, Program};

/// Parses and checks `src` (a test program must pass the front end).
fn program(src: &str) -> Program {
    let parsed = match parse(src) {
        Ok(p) => p,
        Err(e) => panic!("syntax error in test program: {e:?}"),
    };
    if let Err(e) = crate::check::check(&parsed.program) {
        panic!("check error in test program: {e:?}");
    }
    parsed.program
}

fn example(path: &str) -> (String, Program) {
    let full = format!("{}/../examples/{path}", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"));
    let p = program(&src);
    (src, p)
}

fn run_ok(p: &Program, method: &str, args: &[Value], memory: Memory) -> Outcome {
    match run(p, method, args, memory, &Limits::default()) {
        Ok(o) => o,
        Err(e) => panic!("run of `{method}` failed: {e:?}"),
    }
}

fn run_err(p: &Program, method: &str, args: &[Value], memory: Memory) -> InterpError {
    match run(p, method, args, memory, &Limits::default()) {
        Ok(o) => panic!("run of `{method}` succeeded, expected an error: {o:?}"),
        Err(e) => e,
    }
}

/// The source text an error points at.
fn at<'s>(src: &'s str, e: &InterpError) -> &'s str {
    let span = e.span().expect("error without span");
    &src[span.range()]
}

/// Runs a method returning an int on int arguments.
fn int_result(src: &str, method: &str, args: &[i128]) -> Result<i128, InterpError> {
    let p = program(src);
    let args: Vec<Value> = args.iter().map(|&v| Value::Int(v)).collect();
    let out = run(&p, method, &args, Memory::new(), &Limits::default())?;
    match out.result {
        Some(Value::Int(v)) => Ok(v),
        other => panic!("expected an int result, got {other:?}"),
    }
}

fn inclusive_scan(xs: &[i128]) -> Vec<i128> {
    xs.iter()
        .scan(0, |acc, &x| {
            *acc += x;
            Some(*acc)
        })
        .collect()
}

fn exclusive_scan(xs: &[i128]) -> Vec<i128> {
    let mut out = vec![0; xs.len()];
    for i in 1..xs.len() {
        out[i] = out[i - 1] + xs[i - 1];
    }
    out
}

// ---- sequential code ---------------------------------------------------------------------

#[test]
fn arithmetic_and_locals() {
    let src = "class C { int f(int a, int b) { int x = a * b + 3; int y; y = x - a; y++; y--; y++; return -y; } }";
    assert_eq!(int_result(src, "f", &[4, 5]), Ok(-(4 * 5 + 3 - 4 + 1)));
}

#[test]
fn division_truncates_toward_zero() {
    let src =
        "class C { int d(int a, int b) { return a / b; } int m(int a, int b) { return a % b; } }";
    for (a, b) in [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 3), (6, 3)] {
        assert_eq!(int_result(src, "d", &[a, b]), Ok(a / b), "{a} / {b}");
        assert_eq!(int_result(src, "m", &[a, b]), Ok(a % b), "{a} % {b}");
    }
    assert_eq!(int_result(src, "d", &[-7, 2]), Ok(-3));
    assert_eq!(int_result(src, "m", &[-7, 2]), Ok(-1));
}

#[test]
fn division_by_zero_is_an_error_with_span() {
    let src = "class C { int d(int a, int b) { return a / (b - b); } }";
    let p = program(src);
    let e = run_err(&p, "d", &[Value::Int(1), Value::Int(2)], Memory::new());
    assert!(matches!(e, InterpError::DivisionByZero { .. }), "{e:?}");
    assert_eq!(at(src, &e), "b - b");
    let src = "class C { int m(int a) { return a % 0; } }";
    let e = run_err(&program(src), "m", &[Value::Int(1)], Memory::new());
    assert!(matches!(e, InterpError::DivisionByZero { .. }), "{e:?}");
}

#[test]
fn overflow_is_an_error_not_a_wrap() {
    let src =
        "class C { int f(int x) { int i = 0; while (i < 200) { x = x * 2; i++; } return x; } }";
    let e = int_result(src, "f", &[1]).unwrap_err();
    assert!(matches!(e, InterpError::Overflow { .. }), "{e:?}");
    // Far beyond 32 and 64 bits is fine.
    let src = "class C { int f(int x) { return x * x * x; } }";
    assert_eq!(int_result(src, "f", &[1 << 30]), Ok(1 << 90));
}

#[test]
fn control_flow() {
    let src = "class C {
      int f(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
          if (i % 2 == 0) { s = s + i; } else if (i % 3 == 0) { s = s - 1; } else { s = s + 100; }
        }
        int j = n;
        while (j > 0) { j = j - 3; }
        if (j == 0) { return s; }
        return s + 1000;
      }
    }";
    for n in 0..12i128 {
        let mut s = 0;
        for i in 0..n {
            s += if i % 2 == 0 {
                i
            } else if i % 3 == 0 {
                -1
            } else {
                100
            };
        }
        let expect = if n % 3 == 0 { s } else { s + 1000 };
        assert_eq!(int_result(src, "f", &[n]), Ok(expect), "n = {n}");
    }
}

#[test]
fn booleans_short_circuit() {
    // `a[5]` would be out of bounds: short circuit must not evaluate it.
    let src = "class C { boolean f(int[] a) { return (a.length > 5 && a[5] == 0) || !(a.length > 5 ==> a[5] == 1) || a.length == 3 ? true : false; } }";
    let p = program(src);
    let mut m = Memory::new();
    let a = m.alloc_ints(&[1, 2, 3]);
    let out = run_ok(&p, "f", &[Value::Array(a)], m);
    assert_eq!(out.result, Some(Value::Bool(true)));
}

#[test]
fn calls_methods_and_pure_functions() {
    let src = "class C {
      pure int fib(int n) = n < 2 ? n : fib(n - 1) + fib(n - 2);
      pure boolean isPow2(int n) = n == 1 || (n > 1 && n % 2 == 0 && isPow2(n / 2));
      void fill(int[] a, int v) { for (int i = 0; i < a.length; i++) { a[i] = v + i; } }
      int twice(int x) { return 2 * x; }
      int f(int n) {
        int[] a = new int[n];
        this.fill(a, fib(10));
        int s = 0;
        for (int i = 0; i < n; i++) { s = s + a[i]; }
        if (isPow2(n)) { s = s + twice(1000); }
        return s;
      }
    }";
    assert_eq!(int_result(src, "f", &[4]), Ok(55 * 4 + 6 + 2000));
    assert_eq!(int_result(src, "f", &[3]), Ok(55 * 3 + 3));
    assert_eq!(int_result(src, "fib", &[15]), Ok(610));
}

#[test]
fn static_calls_and_top_level_functions() {
    let src = "pure int sq(int x) = x * x;
    class D { static int inc(int x) { return x + 1; } }
    class C { int f(int x) { return D.inc(sq(x)); } }";
    assert_eq!(int_result(src, "f", &[7]), Ok(50));
    assert_eq!(int_result(src, "C.f", &[2]), Ok(5));
}

#[test]
fn arrays_are_references_and_parameters_alias() {
    let src = "class C { void f(int[] a, int[] b) { a[0] = 7; b[0] = b[0] + 1; } }";
    let p = program(src);
    let mut m = Memory::new();
    let a = m.alloc_ints(&[0]);
    let out = run_ok(&p, "f", &[Value::Array(a), Value::Array(a)], m);
    assert_eq!(out.memory.ints(a), Some(vec![8]));
}

#[test]
fn two_dimensional_arrays() {
    let src = "class C { int f(int[][] m) { int[][] n = new int[2][3]; n[1][2] = m[0][1] + 5; m[1][0] = n[1][2]; return n[0][0] + n.length * 10 + n[1].length; } }";
    let p = program(src);
    let mut mem = Memory::new();
    let m = mem.alloc_matrix(&[vec![1, 2], vec![3, 4]]);
    let out = run_ok(&p, "f", &[Value::Array(m)], mem);
    assert_eq!(out.result, Some(Value::Int(23)));
    assert_eq!(out.memory.matrix(m), Some(vec![vec![1, 2], vec![7, 4]]));
}

#[test]
fn out_of_bounds_and_null_with_spans() {
    let src = "class C { int f(int[] a, int i) { return a[i]; } }";
    let p = program(src);
    let mut m = Memory::new();
    let a = m.alloc_ints(&[1, 2]);
    for i in [2, -1] {
        let e = run_err(&p, "f", &[Value::Array(a), Value::Int(i)], m.clone());
        assert!(
            matches!(e, InterpError::OutOfBounds { index, len: 2, .. } if index == i),
            "{e:?}"
        );
        assert_eq!(at(src, &e), "a[i]");
    }
    let e = run_err(&p, "f", &[Value::Null, Value::Int(0)], Memory::new());
    assert!(matches!(e, InterpError::NullDereference { .. }), "{e:?}");
    assert_eq!(at(src, &e), "a");
    let src = "class C { int f(int n) { int[] a = new int[n]; return a.length; } }";
    let e = int_result(src, "f", &[-1]).unwrap_err();
    assert!(
        matches!(e, InterpError::NegativeSize { size: -1, .. }),
        "{e:?}"
    );
    assert_eq!(int_result(src, "f", &[0]), Ok(0));
}

#[test]
fn uninitialised_local_and_missing_return() {
    let src = "class C { int f() { int x; return x + 1; } }";
    let e = int_result(src, "f", &[]).unwrap_err();
    assert!(
        matches!(e, InterpError::Uninitialised { ref name, .. } if name == "x"),
        "{e:?}"
    );
    let src = "class C { int f(int x) { if (x > 0) { return 1; } } }";
    let e = int_result(src, "f", &[0]).unwrap_err();
    assert!(matches!(e, InterpError::MissingReturn { .. }), "{e:?}");
    assert_eq!(int_result(src, "f", &[1]), Ok(1));
}

#[test]
fn step_limit_stops_an_infinite_loop() {
    let src = "class C { void f() { int x = 0; while (true) { x = x + 0; } } }";
    let p = program(src);
    let limits = Limits {
        max_steps: 10_000,
        ..Limits::default()
    };
    let e = run(&p, "f", &[], Memory::new(), &limits).unwrap_err();
    assert!(
        matches!(e, InterpError::StepLimit { limit: 10_000, .. }),
        "{e:?}"
    );
    // The same inside a par block.
    let src = "class C { void f(int n) { par p(int t = 0 .. n) { int x = 0; while (x >= 0) { x = x + 1; } } } }";
    let e = run(&program(src), "f", &[Value::Int(3)], Memory::new(), &limits).unwrap_err();
    assert!(matches!(e, InterpError::StepLimit { .. }), "{e:?}");
}

#[test]
fn unbounded_recursion_is_a_resource_error_not_a_crash() {
    let src = "class C { pure int f(int x) = f(x) + 1; int g(int x) { return g(x + 1); } }";
    let p = program(src);
    for m in ["f", "g"] {
        let e = run_err(&p, m, &[Value::Int(0)], Memory::new());
        assert!(
            matches!(
                e,
                InterpError::ResourceLimit {
                    what: "call depth",
                    ..
                }
            ),
            "{m}: {e:?}"
        );
    }
    // A deep but finite recursion completes (the stack grows as needed).
    let src = "class C { pure int down(int x) = x == 0 ? 0 : 1 + down(x - 1); }";
    assert_eq!(int_result(src, "down", &[900]), Ok(900));
}

#[test]
fn memory_limit() {
    let src = "class C { void f(int n) { int[][] a = new int[n][n]; } }";
    let p = program(src);
    let e = run_err(&p, "f", &[Value::Int(1 << 40)], Memory::new());
    assert!(
        matches!(
            e,
            InterpError::ResourceLimit {
                what: "memory cells",
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn unsupported_constructs_say_which() {
    // A call to a bodiless lemma in code.
    let src = "class C { requires x > 0; void lemma(int x); void f(int x) { lemma(x); } }";
    let e = run_err(&program(src), "f", &[Value::Int(1)], Memory::new());
    assert!(
        matches!(&e, InterpError::Unsupported { what, .. } if what.contains("`lemma`")),
        "{e:?}"
    );
    assert_eq!(at(src, &e), "lemma(x)");
    // Fields of objects.
    let src = "class C { int v; void f() { this.v = 1; } }";
    let e = run_err(&program(src), "f", &[], Memory::new());
    assert!(matches!(e, InterpError::Unsupported { .. }), "{e:?}");
}

#[test]
fn bad_calls_are_reported() {
    let p = program("class C { void f(int n, int[] a) { } } class D { void f() { } }");
    let e = run_err(&p, "f", &[], Memory::new());
    assert!(
        matches!(&e, InterpError::BadCall(m) if m.contains("ambiguous")),
        "{e:?}"
    );
    let e = run_err(&p, "C.f", &[Value::Int(1)], Memory::new());
    assert!(matches!(e, InterpError::BadCall(_)), "{e:?}");
    let e = run_err(&p, "C.f", &[Value::Bool(true), Value::Null], Memory::new());
    assert!(matches!(e, InterpError::BadCall(_)), "{e:?}");
    let e = run_err(
        &p,
        "C.f",
        &[Value::Int(1), Value::Array(ArrayRef(3))],
        Memory::new(),
    );
    assert!(matches!(e, InterpError::BadCall(_)), "{e:?}");
    let mut m = Memory::new();
    let bools = m.alloc_bools(&[true]);
    let e = run_err(&p, "C.f", &[Value::Int(1), Value::Array(bools)], m);
    assert!(matches!(e, InterpError::BadCall(_)), "{e:?}");
    let e = run_err(&p, "nope", &[], Memory::new());
    assert!(matches!(e, InterpError::BadCall(_)), "{e:?}");
    assert_eq!(run_ok(&p, "D.f", &[], Memory::new()).result, None);
}

#[test]
fn sequences_are_values() {
    let src = "class C {
      pure int sum(seq<int> xs) = |xs| == 0 ? 0 : head(xs) + sum(tail(xs));
      int f(seq<int> s, int x) {
        seq<int> t = x :: s ++ seq<int>{7, 8};
        seq<int> u = t[1 -> 100];
        assert t != u && t[1..] == s ++ seq<int>{7} + seq<int>{8} && t[..1] == seq<int>{x};
        assert (x in t) && !(99 in t) && u.size == |t| && seq<int>{}.isEmpty;
        assert t[0 .. |t|] == t && s == s[0 ..];
        return sum(u) * 1000 + |t|;
      }
      int g(seq<int> s, int i, int j) { return |s[i .. j]|; }
      int h(seq<int> s, int i) { return s[i]; }
    }";
    let p = program(src);
    let mut m = Memory::new();
    let s = m.alloc_int_seq(&[1, 2, 3]);
    let out = run_ok(&p, "f", &[Value::Seq(s), Value::Int(5)], m.clone());
    // t = [5, 1, 2, 3, 7, 8], u = [5, 100, 2, 3, 7, 8]
    assert_eq!(out.result, Some(Value::Int(125 * 1000 + 6)));
    assert_eq!((out.asserts_evaluated, out.asserts_skipped), (3, 0));
    let args = |i, j| [Value::Seq(s), Value::Int(i), Value::Int(j)];
    assert_eq!(
        run_ok(&p, "g", &args(1, 3), m.clone()).result,
        Some(Value::Int(2))
    );
    assert_eq!(
        run_ok(&p, "g", &args(3, 3), m.clone()).result,
        Some(Value::Int(0))
    );
    for (i, j) in [(2, 1), (-1, 2), (0, 4)] {
        let e = run_err(&p, "g", &args(i, j), m.clone());
        assert!(
            matches!(e, InterpError::OutOfBounds { len: 3, .. }),
            "{i}..{j}: {e:?}"
        );
        assert_eq!(at(src, &e), "s[i .. j]");
    }
    let e = run_err(&p, "h", &[Value::Seq(s), Value::Int(3)], m);
    assert!(
        matches!(
            e,
            InterpError::OutOfBounds {
                index: 3,
                len: 3,
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn sequence_examples() {
    let (_, p) = example("basic/sum_loop.pvl");
    let mut m = Memory::new();
    let xs = m.alloc_int_seq(&[4, -2, 9, 1]);
    let out = run_ok(&p, "total", &[Value::Seq(xs)], m);
    assert_eq!(out.result, Some(Value::Int(12)));
    // One slice assert per iteration plus the final one, all executable.
    assert_eq!((out.asserts_evaluated, out.asserts_skipped), (5, 0));

    let (_, p) = example("iteration_merging/even_sum.pvl");
    let values: Vec<i128> = (0..16).map(|i| i * i - 7).collect();
    let mut m = Memory::new();
    let a = m.alloc_ints(&values);
    let xs = m.alloc_int_seq(&values);
    let out = run_ok(&p, "sumEven", &[Value::Array(a), Value::Seq(xs)], m);
    let expect: i128 = values.iter().step_by(2).sum();
    assert_eq!(out.result, Some(Value::Int(expect)));
}

// ---- specifications ----------------------------------------------------------------------

#[test]
fn specifications_are_skipped_asserts_counted() {
    let src = "class C {
      requires n >= 0;
      ensures \\result == n;
      int f(int n, int[] a) {
        ghost int g = 5;
        assume n > 100;
        assert n >= 0;
        assert g == 5;
        assert Perm(a[0], write);
        assert Perm(a[1], 1\\2) ** a[1] == 2 ** (\\forall* int j; 0 <= j && j < 2; Perm(a[j], 1\\2));
        assert (\\forall int i; i > 0; i + n > n);
        assert \\array(a, 2) && a[1] == 2;
        int i = 0;
        loop_invariant 0 <= i && i <= n;
        while (i < n) { i++; }
        return i;
      }
    }";
    let p = program(src);
    let mut m = Memory::new();
    let a = m.alloc_ints(&[1, 2]);
    let out = run_ok(&p, "f", &[Value::Int(3), Value::Array(a)], m);
    assert_eq!(out.result, Some(Value::Int(3)));
    assert_eq!(
        out.asserts_evaluated, 3,
        "n >= 0, the value part of Perm(..) ** a[1] == 2, and \\array(a, 2) && a[1] == 2"
    );
    assert_eq!(
        out.asserts_skipped, 3,
        "ghost g, Perm only, unbounded forall"
    );
    // The value part of a mixed assert is checked.
    let src = "class C { void f(int[] a) { assert Perm(a[0], write) ** a[0] == 2; } }";
    let e = run_err(&program(src), "f", &[Value::Array(a)], out.memory);
    assert!(matches!(e, InterpError::AssertFailed { .. }), "{e:?}");
}

#[test]
fn failing_assert_is_reported_with_span() {
    let src = "class C { void f(int n) { assert n > 0; assert n > 5; } }";
    let p = program(src);
    let e = run_err(&p, "f", &[Value::Int(3)], Memory::new());
    assert!(matches!(e, InterpError::AssertFailed { .. }), "{e:?}");
    assert_eq!(at(src, &e), "assert n > 5;");
    assert_eq!(
        run_ok(&p, "f", &[Value::Int(6)], Memory::new()).asserts_evaluated,
        2
    );
}

#[test]
fn bounded_quantifiers_are_enumerated() {
    let src = "class C {
      void f(int n, int[] a) {
        assert (\\forall int i; 0 <= i && i < n; a[i] == i * i);
        assert (\\forall int i = 0 .. n; (\\forall int j; i < j && j < n; a[i] <= a[j]));
        assert (\\exists int i; 1 <= i && i <= n - 1; a[i] == 4);
        assert (\\sum int i; 0 <= i && i < n; a[i]) == 14;
        assert !(\\exists int i; 0 <= i && i < n; a[i] == 5);
        assert (\\forall int i; 0 <= i && i < n ==> a[i] >= i);
        assert (\\exists int i; i >= 2 && i < n && a[i] == 9);
        assert (\\forall int i; i >= 0 ==> i * i >= 0);
      }
      void g(int n, int[] a) {
        assert (\\forall int i; 0 <= i && i < n; n > i ==> a[i] == 0);
      }
    }";
    let p = program(src);
    let mut m = Memory::new();
    let a = m.alloc_ints(&[0, 1, 4, 9]);
    let out = run_ok(&p, "f", &[Value::Int(4), Value::Array(a)], m.clone());
    assert_eq!((out.asserts_evaluated, out.asserts_skipped), (7, 1));
    let e = run_err(&p, "g", &[Value::Int(4), Value::Array(a)], m);
    assert!(matches!(e, InterpError::AssertFailed { .. }), "{e:?}");
}

// ---- par blocks --------------------------------------------------------------------------

#[test]
fn vector_add_example() {
    let (_, p) = example("basic/vector_add.pvl");
    let mut m = Memory::new();
    let a = m.alloc_ints(&[1, 2, 3, 4, 5]);
    let b = m.alloc_ints(&[10, 20, 30, 40, 50]);
    let c = m.alloc_ints(&[0; 5]);
    let args = [
        Value::Int(5),
        Value::Array(a),
        Value::Array(b),
        Value::Array(c),
    ];
    let out = run_ok(&p, "add", &args, m);
    assert_eq!(out.memory.ints(c), Some(vec![11, 22, 33, 44, 55]));
    assert_eq!(out.memory.ints(a), Some(vec![1, 2, 3, 4, 5]));
    assert_eq!(out.result, None);
}

#[test]
fn stencil_example_with_barrier() {
    let (_, p) = example("basic/neighbour_stencil.pvl");
    let xs = [3, 1, 4, 1, 5, 9, 2];
    let mut m = Memory::new();
    let a = m.alloc_ints(&xs);
    let b = m.alloc_ints(&[0; 7]);
    let c = m.alloc_ints(&[0; 7]);
    let args = [
        Value::Int(7),
        Value::Array(a),
        Value::Array(b),
        Value::Array(c),
    ];
    let out = run_ok(&p, "stencil", &args, m);
    let mut expect = vec![xs[0]];
    expect.extend(xs.windows(2).map(|w| w[0] + w[1]));
    assert_eq!(out.memory.ints(c), Some(expect));
}

#[test]
fn simple_examples() {
    let (_, p) = example("basic/array_copy.pvl");
    let mut m = Memory::new();
    let s = m.alloc_ints(&[5, 6, 7]);
    let d = m.alloc_ints(&[0; 3]);
    let out = run_ok(
        &p,
        "copy",
        &[Value::Int(3), Value::Array(s), Value::Array(d)],
        m,
    );
    assert_eq!(out.memory.ints(d), Some(vec![5, 6, 7]));

    let (_, p) = example("basic/zero_array.pvl");
    let mut m = Memory::new();
    let x = m.alloc_ints(&[5, 6, 7]);
    let out = run_ok(&p, "clear", &[Value::Int(3), Value::Array(x)], m);
    assert_eq!(out.memory.ints(x), Some(vec![0; 3]));

    let (_, p) = example("kernel_fusion/add_then_double.pvl");
    let mut m = Memory::new();
    let a = m.alloc_ints(&[1, 2, 3]);
    let b = m.alloc_ints(&[0; 3]);
    let c = m.alloc_ints(&[0; 3]);
    let args = [
        Value::Int(3),
        Value::Array(a),
        Value::Array(b),
        Value::Array(c),
    ];
    let out = run_ok(&p, "twoSteps", &args, m);
    assert_eq!(out.memory.ints(b), Some(vec![2, 3, 4]));
    assert_eq!(out.memory.ints(c), Some(vec![4, 6, 8]));
}

#[test]
fn loop_examples_inside_par_blocks() {
    let (_, p) = example("loop_unroll/multiply.pvl");
    let mut m = Memory::new();
    let a = m.alloc_ints(&[9; 6]);
    let out = run_ok(
        &p,
        "table",
        &[Value::Int(6), Value::Int(3), Value::Array(a)],
        m,
    );
    assert_eq!(out.memory.ints(a), Some((0..6).map(|t| t * 3).collect()));

    let (_, p) = example("loop_unroll/repeated_add.pvl");
    let mut m = Memory::new();
    let x = m.alloc_ints(&[1, 2, 3, 4]);
    let y = m.alloc_ints(&[10, 10, 10, 10]);
    let args = [
        Value::Int(4),
        Value::Int(5),
        Value::Array(x),
        Value::Array(y),
    ];
    let out = run_ok(&p, "repeat", &args, m);
    assert_eq!(out.memory.ints(y), Some(vec![15, 20, 25, 30]));

    let (_, p) = example("loop_unroll/doubling.pvl");
    let mut m = Memory::new();
    let q = m.alloc_ints(&[0; 3]);
    let out = run_ok(
        &p,
        "ceilPow2",
        &[Value::Int(3), Value::Int(5), Value::Array(q)],
        m,
    );
    assert_eq!(out.memory.ints(q), Some(vec![8, 8, 8]));
}

#[test]
fn matrix_example_two_dimensional_par() {
    let (_, p) = example("matrix_linearisation/matrix_add_colmajor.pvl");
    let mut m = Memory::new();
    let a = m.alloc_matrix(&[vec![1, 2, 3], vec![4, 5, 6]]);
    let b = m.alloc_matrix(&[vec![10, 20, 30], vec![40, 50, 60]]);
    let c = m.alloc_matrix(&[vec![0; 3], vec![0; 3]]);
    let args = [
        Value::Int(2),
        Value::Int(3),
        Value::Array(a),
        Value::Array(b),
        Value::Array(c),
    ];
    let out = run_ok(&p, "add", &args, m);
    assert_eq!(
        out.memory.matrix(c),
        Some(vec![vec![11, 22, 33], vec![44, 55, 66]])
    );
}

fn scan_in_place(path: &str, xs: &[i128]) -> Vec<i128> {
    let (_, p) = example(path);
    let mut m = Memory::new();
    let x = m.alloc_ints(xs);
    let out = run_ok(
        &p,
        "scan",
        &[Value::Int(xs.len() as i128), Value::Array(x)],
        m,
    );
    out.memory.ints(x).expect("ints")
}

fn scan_out_of_place(path: &str, xs: &[i128]) -> Vec<i128> {
    let (_, p) = example(path);
    let mut m = Memory::new();
    let input = m.alloc_ints(xs);
    let output = m.alloc_ints(&vec![0; xs.len()]);
    let args = [
        Value::Int(xs.len() as i128),
        Value::Array(input),
        Value::Array(output),
    ];
    let out = run_ok(&p, "scan", &args, m);
    assert_eq!(
        out.memory.ints(input).as_deref(),
        Some(xs),
        "input unchanged"
    );
    out.memory.ints(output).expect("ints")
}

#[test]
fn prefix_sums_compute_prefix_sums() {
    for n in [1usize, 2, 4, 8, 16, 32] {
        let xs: Vec<i128> = (0..n as i128).map(|i| (i * 7 + 3) % 11 - 4).collect();
        assert_eq!(
            scan_in_place("prefix-sum/kogge_stone.pvl", &xs),
            inclusive_scan(&xs),
            "kogge-stone n = {n}"
        );
        assert_eq!(
            scan_in_place("prefix-sum/sklansky.pvl", &xs),
            inclusive_scan(&xs),
            "sklansky n = {n}"
        );
        if n >= 2 {
            assert_eq!(
                scan_out_of_place("prefix-sum/brent_kung.pvl", &xs),
                inclusive_scan(&xs),
                "brent-kung n = {n}"
            );
            assert_eq!(
                scan_out_of_place("prefix-sum/blelloch.pvl", &xs),
                exclusive_scan(&xs),
                "blelloch n = {n}"
            );
        }
    }
    let xs: Vec<i128> = (1..=16).collect();
    assert_eq!(
        scan_out_of_place("prefix-sum/kogge_stone_16.pvl", &xs),
        inclusive_scan(&xs)
    );
}

#[test]
fn kogge_stone_asserts_on_ghost_values_are_skipped() {
    let (_, p) = example("prefix-sum/kogge_stone.pvl");
    let mut m = Memory::new();
    let x = m.alloc_ints(&[1, 2, 3, 4]);
    let out = run_ok(&p, "scan", &[Value::Int(4), Value::Array(x)], m);
    // `assert seg(xs, tid, tid) == 0;` mentions the ghost `xs`: skipped once per thread.
    assert_eq!((out.asserts_evaluated, out.asserts_skipped), (0, 4));
}

#[test]
fn ghost_inputs_make_asserts_executable() {
    let (_, p) = example("prefix-sum/kogge_stone.pvl");
    let xs = [3, 1, 4, 1];
    let mut m = Memory::new();
    let x = m.alloc_ints(&xs);
    let ghost = m.alloc_int_seq(&xs);
    let args = [Value::Int(4), Value::Array(x)];
    let out = run_with_ghosts(
        &p,
        "scan",
        &args,
        &[("xs", Value::Seq(ghost))],
        m.clone(),
        &Limits::default(),
    )
    .unwrap();
    assert_eq!((out.asserts_evaluated, out.asserts_skipped), (4, 0));
    assert_eq!(out.memory.ints(x), Some(inclusive_scan(&xs)));
    for bad in [("ys", Value::Seq(ghost)), ("xs", Value::Int(1))] {
        let e =
            run_with_ghosts(&p, "scan", &args, &[bad], m.clone(), &Limits::default()).unwrap_err();
        assert!(matches!(e, InterpError::BadCall(_)), "{e:?}");
    }
    // A ghost value that contradicts the assert makes it fail.
    let src = "class C { given int g; void f(int n) { assert g == n; } }";
    let p = program(src);
    let run_g = |g| {
        run_with_ghosts(
            &p,
            "f",
            &[Value::Int(2)],
            &[("g", Value::Int(g))],
            Memory::new(),
            &Limits::default(),
        )
    };
    assert_eq!(run_g(2).map(|o| o.asserts_evaluated), Ok(1));
    assert!(matches!(run_g(3), Err(InterpError::AssertFailed { .. })));
    assert_eq!(
        run_ok(&p, "f", &[Value::Int(2)], Memory::new()).asserts_skipped,
        1
    );
}

#[test]
fn racy_kernel_two_threads_write_one_cell() {
    let src = "class C {
      void f(int n, int[] a) {
        par p(int t = 0 .. n) {
          a[t / 2] = t;
        }
      }
    }";
    let p = program(src);
    let mut m = Memory::new();
    let a = m.alloc_ints(&[0; 4]);
    let e = run_err(&p, "f", &[Value::Int(4), Value::Array(a)], m.clone());
    match &e {
        InterpError::DataRace {
            first_thread,
            second_thread,
            first_access: Access::Write,
            second_access: Access::Write,
            first_span,
            ..
        } => {
            assert_eq!(first_thread, "thread p(t = 0)");
            assert_eq!(second_thread, "thread p(t = 1)");
            assert_eq!(&src[first_span.range()], "a[t / 2]");
        }
        _ => panic!("{e:?}"),
    }
    assert_eq!(at(src, &e), "a[t / 2]");
    // One thread: no race.
    let out = run_ok(&p, "f", &[Value::Int(1), Value::Array(a)], m);
    assert_eq!(out.memory.ints(a), Some(vec![0, 0, 0, 0]));
}

/// A two-point stencil in place on `a` through the scratch array `b`; `barrier` goes between
/// the write phase and the neighbour reads.
fn stencil(barrier: &str) -> (String, Program, [Value; 3], Memory, ArrayRef) {
    let src = format!(
        "class C {{
      void f(int n, int[] a, int[] b) {{
        par st(int tid = 0 .. n) {{
          b[tid] = a[tid];
          {barrier}
          if (tid > 0) {{ a[tid] = b[tid - 1] + b[tid]; }}
        }}
      }}
    }}"
    );
    let p = program(&src);
    let mut m = Memory::new();
    let a = m.alloc_ints(&[1, 2, 3]);
    let b = m.alloc_ints(&[0; 3]);
    (
        src,
        p,
        [Value::Int(3), Value::Array(a), Value::Array(b)],
        m,
        a,
    )
}

#[test]
fn stencil_without_barrier_is_a_race_at_the_neighbour_read() {
    let (src, p, args, m, _) = stencil("");
    let src = src.as_str();
    let e = run_err(&p, "f", &args, m);
    match &e {
        InterpError::DataRace {
            first_access,
            second_access,
            first_thread,
            second_thread,
            first_span,
            ..
        } => {
            // Thread 0 wrote b[0]; thread 1 reads it in the same interval.
            assert_eq!(
                (*first_access, *second_access),
                (Access::Write, Access::Read)
            );
            assert_eq!(first_thread, "thread st(tid = 0)");
            assert_eq!(second_thread, "thread st(tid = 1)");
            assert_eq!(&src[first_span.range()], "b[tid]");
        }
        _ => panic!("{e:?}"),
    }
    assert_eq!(at(src, &e), "b[tid - 1]");
}

#[test]
fn same_stencil_with_barrier_is_race_free() {
    let (_, p, args, m, a) = stencil("barrier(st) { requires true; }");
    let out = run_ok(&p, "f", &args, m);
    assert_eq!(out.memory.ints(a), Some(vec![1, 3, 5]));
}

#[test]
fn read_then_write_by_another_thread_is_a_race() {
    // Thread 0 reads a[1], thread 1 later writes it: write-after-read in one interval.
    let src = "class C { void f(int[] a) { par p(int t = 0 .. 2) { if (t == 0) { a[0] = a[1]; } else { a[1] = 5; } } } }";
    let p = program(src);
    let mut m = Memory::new();
    let a = m.alloc_ints(&[0, 0]);
    let e = run_err(&p, "f", &[Value::Array(a)], m);
    assert!(
        matches!(
            e,
            InterpError::DataRace {
                first_access: Access::Read,
                second_access: Access::Write,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(at(src, &e), "a[1]");
    // Concurrent reads are fine.
    let src =
        "class C { void f(int[] a, int[] b) { par p(int t = 0 .. 2) { b[t] = a[0] + a[0]; } } }";
    let p = program(src);
    let mut m = Memory::new();
    let a = m.alloc_ints(&[3]);
    let b = m.alloc_ints(&[0, 0]);
    let out = run_ok(&p, "f", &[Value::Array(a), Value::Array(b)], m);
    assert_eq!(out.memory.ints(b), Some(vec![6, 6]));
}

#[test]
fn aliased_arguments_can_race() {
    let src = "class C { void f(int n, int[] a, int[] b) { par p(int t = 0 .. n - 1) { b[t] = a[t + 1]; } } }";
    let p = program(src);
    let mut m = Memory::new();
    let a = m.alloc_ints(&[1, 2, 3]);
    let b = m.alloc_ints(&[0, 0, 0]);
    let args = [Value::Int(3), Value::Array(a), Value::Array(b)];
    let out = run_ok(&p, "f", &args, m.clone());
    assert_eq!(out.memory.ints(b), Some(vec![2, 3, 0]));
    let e = run_err(
        &p,
        "f",
        &[Value::Int(3), Value::Array(a), Value::Array(a)],
        m,
    );
    assert!(matches!(e, InterpError::DataRace { .. }), "{e:?}");
}

#[test]
fn divergent_barriers() {
    let src = "class C {
      void f(int n) {
        par p(int t = 0 .. n) {
          if (t > 0) { barrier(p) { requires true; } }
        }
      }
      void g(int n) {
        par q(int t = 0 .. n) {
          if (t == 0) { barrier(q) { requires true; } } else { barrier(q) { requires true; } }
        }
      }
      void h(int n) {
        par r(int t = 0 .. n) {
          int i = 0;
          while (i < t) { barrier(r) { requires true; } i++; }
        }
      }
    }";
    let p = program(src);
    for m in ["f", "g", "h"] {
        let e = run_err(&p, m, &[Value::Int(3)], Memory::new());
        assert!(
            matches!(e, InterpError::DivergentBarrier { .. }),
            "{m}: {e:?}"
        );
        assert!(at(src, &e).starts_with("barrier("), "{m}: {}", at(src, &e));
    }
    // With one thread nothing diverges.
    run_ok(&p, "f", &[Value::Int(1)], Memory::new());
}

#[test]
fn barriers_in_for_loops_and_nested_blocks() {
    // Each round, thread t moves a[t + 1] into b[t]; then the barrier; then b[t] back to a[t].
    // A rotation by one, `k` times, with a barrier in a for loop inside a block.
    let src = "class C {
      void rot(int n, int k, int[] a, int[] b) {
        par p(int t = 0 .. n) {
          {
            for (int i = 0; i < k; i++) {
              b[t] = a[(t + 1) % n];
              barrier(p) { requires true; }
              a[t] = b[t];
              barrier(p) { requires true; }
            }
          }
        }
      }
    }";
    let p = program(src);
    let mut m = Memory::new();
    let a = m.alloc_ints(&[0, 1, 2, 3, 4]);
    let b = m.alloc_ints(&[0; 5]);
    let args = [
        Value::Int(5),
        Value::Int(2),
        Value::Array(a),
        Value::Array(b),
    ];
    let out = run_ok(&p, "rot", &args, m);
    assert_eq!(out.memory.ints(a), Some(vec![2, 3, 4, 0, 1]));
}

#[test]
fn blocks_launched_together_race_with_each_other() {
    let src = "class C {
      void f(int n, int[] a, int[] b) {
        par A(int t = 0 .. n) { a[t] = 1; }
        and B(int t = 0 .. n) { b[t] = a[t]; }
      }
      void g(int n, int[] a, int[] b) {
        par A(int t = 0 .. n) { a[t] = 1; }
        par B(int t = 0 .. n) { b[t] = a[t]; }
      }
      void h(int n, int[] a, int[] b) {
        par A(int t = 0 .. n) { a[t] = 1; }
        and B(int t = 0 .. n) { b[t] = 2; }
      }
      void pf(int n, int[] a, int[] b) {
        parallel { par A(int t = 0 .. n) { a[t] = 1; } par B(int t = 0 .. n) { b[t] = a[t]; } }
      }
      void sf(int n, int[] a, int[] b) {
        sequential { par A(int t = 0 .. n) { a[t] = 1; } par B(int t = 0 .. n) { b[t] = a[t]; } }
      }
    }";
    let p = program(src);
    let mut m = Memory::new();
    let a = m.alloc_ints(&[0, 0]);
    let b = m.alloc_ints(&[0, 0]);
    let args = [Value::Int(2), Value::Array(a), Value::Array(b)];
    let e = run_err(&p, "f", &args, m.clone());
    match &e {
        InterpError::DataRace {
            first_thread,
            second_thread,
            ..
        } => {
            assert_eq!(first_thread, "par block A");
            assert_eq!(second_thread, "par block B");
        }
        _ => panic!("{e:?}"),
    }
    // Consecutive launches synchronise.
    let out = run_ok(&p, "g", &args, m.clone());
    assert_eq!(out.memory.ints(b), Some(vec![1, 1]));
    let out = run_ok(&p, "h", &args, m.clone());
    assert_eq!(out.memory.ints(b), Some(vec![2, 2]));
    let e = run_err(&p, "pf", &args, m.clone());
    assert!(matches!(e, InterpError::DataRace { .. }), "{e:?}");
    let out = run_ok(&p, "sf", &args, m);
    assert_eq!(out.memory.ints(b), Some(vec![1, 1]));
}

#[test]
fn nested_par_blocks() {
    // Blocks of threads: outer b, inner t; each block sums its row into s[b] after a barrier.
    let src = "class C {
      void f(int nb, int nt, int[] x, int[] s) {
        par grid(int b = 0 .. nb) {
          par blk(int t = 0 .. nt) {
            x[b * nt + t] = x[b * nt + t] * 2;
            barrier(blk) { requires true; }
            if (t == 0) {
              int acc = 0;
              for (int i = 0; i < nt; i++) { acc = acc + x[b * nt + i]; }
              s[b] = acc;
            }
          }
        }
      }
      void racy(int nb, int nt, int[] x, int[] s) {
        par grid(int b = 0 .. nb) {
          par blk(int t = 0 .. nt) {
            x[t] = b;
          }
        }
      }
    }";
    let p = program(src);
    let mut m = Memory::new();
    let x = m.alloc_ints(&[1, 2, 3, 4, 5, 6]);
    let s = m.alloc_ints(&[0, 0]);
    let args = [
        Value::Int(2),
        Value::Int(3),
        Value::Array(x),
        Value::Array(s),
    ];
    let out = run_ok(&p, "f", &args, m.clone());
    assert_eq!(out.memory.ints(s), Some(vec![12, 30]));
    // Threads of different outer blocks write the same cells: a race between the blocks.
    let e = run_err(&p, "racy", &args, m);
    match &e {
        InterpError::DataRace {
            first_thread,
            second_thread,
            ..
        } => {
            assert_eq!(first_thread, "thread grid(b = 0)");
            assert_eq!(second_thread, "thread grid(b = 1)");
        }
        _ => panic!("{e:?}"),
    }
}

#[test]
fn failing_assert_in_a_thread_names_it() {
    let src = "class C { void f(int n) { par p(int t = 0 .. n) { assert t < 2; } } }";
    let e = run_err(&program(src), "f", &[Value::Int(3)], Memory::new());
    match &e {
        InterpError::AssertFailed { thread, .. } => assert_eq!(thread, " in thread p(t = 2)"),
        _ => panic!("{e:?}"),
    }
    assert_eq!(at(src, &e), "assert t < 2;");
}

#[test]
fn return_inside_par_is_unsupported() {
    let src = "class C { int f(int n) { par p(int t = 0 .. n) { if (t == 1) { return 5; } } return 1; } }";
    assert_eq!(int_result(src, "f", &[1]), Ok(1));
    let e = int_result(src, "f", &[2]).unwrap_err();
    assert!(
        matches!(&e, InterpError::Unsupported { what, .. } if what.contains("return")),
        "{e:?}"
    );
    assert_eq!(at(src, &e), "return 5;");
    // With a barrier in the block, threads are stepped: the same.
    let src = "class C { int f(int n) { par p(int t = 0 .. n) { barrier(p) { requires true; } if (t == 1) { return 5; } } return 1; } }";
    let e = int_result(src, "f", &[2]).unwrap_err();
    assert_eq!(at(src, &e), "return 5;");
}

#[test]
fn empty_and_iteratorless_par_blocks() {
    let src = "class C { void f(int n, int[] a) { par p(int t = 0 .. n) { a[0] = 1; } par { a[1] = 2; } } }";
    let p = program(src);
    let mut m = Memory::new();
    let a = m.alloc_ints(&[0, 0]);
    let out = run_ok(&p, "f", &[Value::Int(0), Value::Array(a)], m);
    assert_eq!(out.memory.ints(a), Some(vec![0, 2]));
}

#[test]
fn two_dimensional_par_with_barrier() {
    // Transpose through a scratch matrix: write phase, barrier, read the mirrored cell.
    let src = "class C {
      void t(int n, int[][] m, int[][] s) {
        par tr(int i = 0 .. n, int j = 0 .. n) {
          s[i][j] = m[i][j];
          barrier(tr) { requires true; }
          m[i][j] = s[j][i];
        }
      }
    }";
    let p = program(src);
    let mut mem = Memory::new();
    let m = mem.alloc_matrix(&[vec![1, 2, 3], vec![4, 5, 6], vec![7, 8, 9]]);
    let s = mem.alloc_matrix(&[vec![0; 3], vec![0; 3], vec![0; 3]]);
    let out = run_ok(
        &p,
        "t",
        &[Value::Int(3), Value::Array(m), Value::Array(s)],
        mem.clone(),
    );
    assert_eq!(
        out.memory.matrix(m),
        Some(vec![vec![1, 4, 7], vec![2, 5, 8], vec![3, 6, 9]])
    );
    // Without the barrier, thread (0, 1) reads s[1][0] before thread (1, 0) writes it.
    let racy = src.replace("barrier(tr) { requires true; }", "");
    let e = run_err(
        &program(&racy),
        "t",
        &[Value::Int(3), Value::Array(m), Value::Array(s)],
        mem,
    );
    match &e {
        InterpError::DataRace {
            first_thread,
            second_thread,
            ..
        } => {
            assert_eq!(first_thread, "thread tr(i = 0, j = 1)");
            assert_eq!(second_thread, "thread tr(i = 1, j = 0)");
        }
        _ => panic!("{e:?}"),
    }
}

#[test]
fn too_many_threads() {
    let src = "class C { void f(int n) { par p(int t = 0 .. n, int u = 0 .. n) { } } }";
    let limits = Limits {
        max_threads: 100,
        ..Limits::default()
    };
    let e = run(
        &program(src),
        "f",
        &[Value::Int(11)],
        Memory::new(),
        &limits,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            InterpError::ResourceLimit {
                what: "threads",
                ..
            }
        ),
        "{e:?}"
    );
    run(
        &program(src),
        "f",
        &[Value::Int(10)],
        Memory::new(),
        &limits,
    )
    .unwrap();
}

/// Arguments for `params` drawn from `seed` (a small linear congruential generator), every one
/// fitting its type; `None` if some parameter type is not one the API accepts.
fn arbitrary_args(
    params: &[crate::syntax::Param],
    seed: u64,
    m: &mut Memory,
) -> Option<Vec<Value>> {
    use crate::syntax::TypeKind;
    let mut state = seed | 1;
    let mut next = move |n: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % n
    };
    let mut args = Vec::new();
    for p in params {
        let small = |v: u64| v as i128 - 3;
        let arg = match &p.ty.kind {
            TypeKind::Int => Value::Int(small(next(24))),
            TypeKind::Bool => Value::Bool(next(2) == 0),
            TypeKind::Seq(e) if e.kind == TypeKind::Int => {
                let xs: Vec<i128> = (0..next(20)).map(|_| small(next(100))).collect();
                Value::Seq(m.alloc_int_seq(&xs))
            }
            TypeKind::Array { elem, .. } => match &elem.kind {
                TypeKind::Int => {
                    let xs: Vec<i128> = (0..next(20)).map(|_| small(next(100))).collect();
                    Value::Array(m.alloc_ints(&xs))
                }
                TypeKind::Array { elem, .. } if elem.kind == TypeKind::Int => {
                    let cols = next(6) as usize;
                    let rows: Vec<Vec<i128>> = (0..next(6))
                        .map(|_| (0..cols).map(|_| small(next(100))).collect())
                        .collect();
                    Value::Array(m.alloc_matrix(&rows))
                }
                _ => return None,
            },
            _ => return None,
        };
        args.push(arg);
    }
    Some(args)
}

/// Coherent arguments: every int parameter is `n`, every `int[]` has `n` cells, every
/// `int[][]` is `n` by `n`, every `seq<int>` has `n` elements, values from `seed`. Most example
/// kernels' preconditions are about such sizes, so many of these runs succeed.
fn sized_args(
    params: &[crate::syntax::Param],
    n: usize,
    seed: u64,
    m: &mut Memory,
) -> Option<Vec<Value>> {
    use crate::syntax::TypeKind;
    let mut args = Vec::new();
    for (j, p) in params.iter().enumerate() {
        // Different contents per parameter, so that copying between arrays shows.
        let value =
            |k: usize| ((seed >> ((k + 7 * j) % 48)) as i128 & 0xff) - 100 + (k * (j + 1)) as i128;
        let ints: Vec<i128> = (0..n).map(value).collect();
        args.push(match &p.ty.kind {
            TypeKind::Int => Value::Int(n as i128),
            TypeKind::Seq(e) if e.kind == TypeKind::Int => Value::Seq(m.alloc_int_seq(&ints)),
            TypeKind::Array { elem, .. } => match &elem.kind {
                TypeKind::Int => Value::Array(m.alloc_ints(&ints)),
                TypeKind::Array { elem, .. } if elem.kind == TypeKind::Int => {
                    Value::Array(m.alloc_matrix(&vec![ints.clone(); n]))
                }
                _ => return None,
            },
            _ => return None,
        });
    }
    Some(args)
}

/// A test program with its class methods (qualified name, parameters).
struct Methods {
    src: String,
    program: Program,
    methods: Vec<(String, Vec<crate::syntax::Param>)>,
}

/// Every class method of every example and of the broken kernels.
fn all_methods() -> Vec<Methods> {
    let mut files = example_files();
    let data = format!("{}/../tests/data/interp", env!("CARGO_MANIFEST_DIR"));
    files.extend(
        std::fs::read_dir(data)
            .expect("tests/data/interp")
            .flatten()
            .map(|e| e.path()),
    );
    files
        .into_iter()
        .map(|path| {
            let src = std::fs::read_to_string(&path).expect("read");
            let p = program(&src);
            let mut methods = Vec::new();
            for item in &p.items {
                let crate::syntax::Item::Class(class) = item else {
                    continue;
                };
                for member in &class.members {
                    let crate::syntax::MemberKind::Method(m) = &member.kind else {
                        continue;
                    };
                    if m.return_type.is_some() {
                        methods.push((
                            format!("{}.{}", class.name.name, m.name.name),
                            m.params.clone(),
                        ));
                    }
                }
            }
            Methods {
                src,
                program: p,
                methods,
            }
        })
        .collect()
}

fn example_files() -> Vec<std::path::PathBuf> {
    let root = format!("{}/../examples", env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut dirs = vec![std::path::PathBuf::from(root)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("examples/").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "pvl") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// `tests/data/interp/*.pvl`: broken kernels with headers `//:: expect CODE LINE:COL` and
/// `//:: run METHOD ARGS` (ints, and int arrays written `[1,2,3]`). Each must fail with that
/// code at that position.
#[test]
fn broken_kernels_in_test_data() {
    use miette::Diagnostic;
    let dir = format!("{}/../tests/data/interp", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/data/interp")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    for path in files {
        let src = std::fs::read_to_string(&path).expect("read");
        let header = |key: &str| {
            src.lines()
                .find_map(|l| l.strip_prefix("//:: ")?.strip_prefix(key))
                .unwrap_or_else(|| panic!("{path:?}: no `//:: {key}` header"))
                .trim()
                .to_string()
        };
        let expect = header("expect");
        let run_line = header("run");
        let mut words = run_line.split_whitespace();
        let method = words.next().expect("method");
        let mut memory = Memory::new();
        let args: Vec<Value> = words
            .map(
                |w| match w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
                    Some(list) => {
                        let xs: Vec<i128> = list
                            .split(',')
                            .filter(|x| !x.is_empty())
                            .map(|x| x.parse().expect("int"))
                            .collect();
                        Value::Array(memory.alloc_ints(&xs))
                    }
                    None => Value::Int(w.parse().expect("int")),
                },
            )
            .collect();
        let e = run_err(&program(&src), method, &args, memory);
        let span = e.span().expect("span");
        let (line, col) = crate::syntax::line_col(&src, span.start as usize);
        let code = e.code().map(|c| c.to_string()).unwrap_or_default();
        assert_eq!(format!("{code} {line}:{col}"), expect, "{path:?}: {e}");
    }
}

// ---- properties --------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Every method of every example, on arbitrary arguments of the right types, ends in an
    /// outcome or a typed error whose span lies in the source — never a panic, never a hang,
    /// never "bad call" (the arguments fit).
    #[test]
    fn examples_never_panic_on_arbitrary_inputs(seed in any::<u64>()) {
        let limits = Limits { max_steps: 20_000, max_cells: 10_000, ..Limits::default() };
        let mut methods_run = 0;
        for Methods { src, program: p, methods } in all_methods() {
            for (name, params) in methods {
                let mut memory = Memory::new();
                let Some(args) = arbitrary_args(&params, seed, &mut memory) else { continue };
                methods_run += 1;
                if let Err(e) = run(&p, &name, &args, memory, &limits) {
                    prop_assert!(!matches!(e, InterpError::BadCall(_)), "{name}: {e}");
                    let span = e.span().expect("span");
                    prop_assert!(span.end as usize <= src.len(), "{name}: {e:?}");
                }
            }
        }
        prop_assert!(methods_run >= 20, "only {methods_run} methods ran");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Thread order never matters: for every method on coherent inputs, running the threads of
    /// each interval in ascending and in descending order either both fail or both succeed
    /// with the same outcome. (A missed race would show up as a difference.)
    #[test]
    fn thread_order_does_not_change_results(n in 1usize..17, seed in any::<u64>()) {
        let up = Limits { max_steps: 200_000, ..Limits::default() };
        let down = Limits { order: Order::Descending, ..up.clone() };
        let mut succeeded = 0;
        for Methods { program: p, methods, .. } in all_methods() {
            for (name, params) in methods {
                let mut memory = Memory::new();
                let Some(args) = sized_args(&params, n, seed, &mut memory) else { continue };
                let a = run(&p, &name, &args, memory.clone(), &up);
                let b = run(&p, &name, &args, memory, &down);
                prop_assert_eq!(a.is_ok(), b.is_ok(), "{}: {:?} vs {:?}", name, a, b);
                if let (Ok(a), Ok(b)) = (a, b) {
                    prop_assert_eq!(a, b, "{}", name);
                    succeeded += 1;
                }
            }
        }
        prop_assert!(succeeded >= 10, "only {} runs succeeded", succeeded);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn vector_add_is_elementwise_addition(
        pairs in proptest::collection::vec((-1000i128..1000, -1000i128..1000), 0..24)
    ) {
        let (_, p) = example("basic/vector_add.pvl");
        let xs: Vec<i128> = pairs.iter().map(|p| p.0).collect();
        let ys: Vec<i128> = pairs.iter().map(|p| p.1).collect();
        let mut m = Memory::new();
        let a = m.alloc_ints(&xs);
        let b = m.alloc_ints(&ys);
        let c = m.alloc_ints(&vec![0; xs.len()]);
        let args = [Value::Int(xs.len() as i128), Value::Array(a), Value::Array(b), Value::Array(c)];
        let out = run(&p, "add", &args, m, &Limits::default()).unwrap();
        let expect: Vec<i128> = xs.iter().zip(&ys).map(|(x, y)| x + y).collect();
        prop_assert_eq!(out.memory.ints(c), Some(expect));
    }

    #[test]
    fn scans_compute_the_host_prefix_sum(
        log in 1u32..6,
        seed in proptest::collection::vec(-10_000i128..10_000, 32)
    ) {
        let xs = &seed[..1 << log];
        prop_assert_eq!(scan_in_place("prefix-sum/kogge_stone.pvl", xs), inclusive_scan(xs));
        prop_assert_eq!(scan_in_place("prefix-sum/sklansky.pvl", xs), inclusive_scan(xs));
        prop_assert_eq!(scan_out_of_place("prefix-sum/brent_kung.pvl", xs), inclusive_scan(xs));
        prop_assert_eq!(scan_out_of_place("prefix-sum/blelloch.pvl", xs), exclusive_scan(xs));
    }
}

#[test]
fn a_barrier_postcondition_reads_the_state_after_the_barrier() {
    // Thread t writes a[t], then the barrier hands it a[n - 1 - t], whose value its
    // postcondition states: another thread wrote that cell *before* the barrier, which is no
    // race. Reading it before the barrier is one.
    let src = "class C {
      requires a.length == n;
      context (\\forall* int i; 0 <= i && i < n; Perm(a[i], write));
      void f(int n, int[] a) {
        par p(int t = 0 .. n)
          requires Perm(a[t], write);
          ensures Perm(a[n - 1 - t], write) ** a[n - 1 - t] == 0;
        {
          a[t] = 0;
          barrier(p) {
            requires Perm(a[t], write) ** a[t] == 0;
            ensures Perm(a[n - 1 - t], write) ** a[n - 1 - t] == 0;
          }
        }
      }
      void g(int n, int[] a) {
        par p(int t = 0 .. n)
        {
          a[t] = a[n - 1 - t];
          barrier(p) { requires true; }
        }
      }
    }";
    let p = program(src);
    let mut m = Memory::new();
    let a = m.alloc_ints(&[4, 5, 6]);
    let specs = Limits {
        check_specs: true,
        ..Limits::default()
    };
    let out = run(
        &p,
        "f",
        &[Value::Int(3), Value::Array(a)],
        m.clone(),
        &specs,
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(out.memory.ints(a), Some(vec![0, 0, 0]));
    let e = run_err(&p, "g", &[Value::Int(3), Value::Array(a)], m);
    assert!(matches!(e, InterpError::DataRace { .. }), "{e:?}");
}

/// A launcher that runs no kernel: it records each block's iterator range and the launching
/// scope's `k`, and fills the array `a` with `k`.
struct Recording {
    seen: Vec<(i128, i128, Option<Value>)>,
}

impl Launcher for Recording {
    fn launch<'p>(
        &mut self,
        block: &'p ParBlock,
        scope: &mut dyn LaunchScope<'p>,
    ) -> Result<(), String> {
        let iter = &block.iters[0];
        let lo = scope.eval_int(&iter.lo, None).map_err(|e| e.to_string())?;
        let hi = scope.eval_int(&iter.hi, None).map_err(|e| e.to_string())?;
        let k = scope.value("k");
        self.seen.push((lo, hi, k));
        let Some(Value::Array(a)) = scope.value("a") else {
            return Err("no array `a`".into());
        };
        let Some(Value::Int(k)) = k else {
            return Err("no `k`".into());
        };
        let len = scope.memory().get(a).map_or(0, <[Value]>::len);
        for i in 0..len {
            scope.memory().set_cell(a, i, Value::Int(k));
        }
        Ok(())
    }
}

#[test]
fn a_launcher_runs_every_par_block_the_host_code_reaches_and_host_code_runs_between() {
    let p = program(
        "void f(int n, int[] a) {
           int k = 3;
           par (int t = 0 .. n) { a[t] = 100; }
           a[0] = a[0] + 1;
           k = a[0];
           for (int r = 0; r < 2; r++) { par (int t = 1 .. n - 1) { a[t] = 7; } }
         }",
    );
    let mut memory = Memory::new();
    let a = memory.alloc_ints(&[0, 0, 0, 0]);
    let mut launcher = Recording { seen: Vec::new() };
    let out = run_launching(
        &p,
        "f",
        &[Value::Int(4), Value::Array(a)],
        memory,
        &Limits::default(),
        &mut launcher,
    )
    .unwrap();
    // The first launch filled `a` with 3, the host added 1 to a[0] and set k = 4; the
    // two launches in the loop filled it with 4.
    assert_eq!(
        launcher.seen,
        [
            (0, 4, Some(Value::Int(3))),
            (1, 3, Some(Value::Int(4))),
            (1, 3, Some(Value::Int(4)))
        ]
    );
    assert_eq!(out.memory.ints(a), Some(vec![4, 4, 4, 4]));
    // A launcher's error stops the run at the block.
    let src = "void g(int n, int[] a) { par (int t = 0 .. n) { a[t] = 1; } }";
    let mut memory = Memory::new();
    let a = memory.alloc_ints(&[0]);
    let e = run_launching(
        &program(src),
        "g",
        &[Value::Int(1), Value::Array(a)],
        memory,
        &Limits::default(),
        &mut Recording { seen: Vec::new() },
    )
    .unwrap_err();
    assert!(matches!(e, InterpError::Launch { ref message, .. } if message == "no `k`"));
    assert_eq!(at(src, &e), "int t = 0 .. n");
}

#[test]
fn overloads_run_the_declaration_their_arguments_choose() {
    let src = "class C {
        pure int pick(int x) = 1;
        pure int pick(boolean b) = 2;
        int bump(int x) { return x + 1; }
        int bump(int x, int y) { return bump(x) + y; }
        int m(int n) { return 100 * pick(true) + 10 * pick(n) + bump(n, 3) - bump(n); }
    }";
    // 200 + 10 + (n + 1 + 3) - (n + 1)
    assert_eq!(int_result(src, "C.m", &[5]).unwrap(), 213);
    // An overload is entered by its own name.
    assert_eq!(int_result(src, "C.bump(int, int)", &[1, 2]).unwrap(), 4);
}

#[test]
fn admits_checks_the_entry_precondition_without_running_the_body() {
    let src = "requires n > 2;
        void f(int n) { assert false; }";
    let p = program(src);
    // The body's `assert false` is never reached: only the precondition is checked.
    assert_eq!(
        admits(
            &p,
            "f",
            &[Value::Int(3)],
            &[],
            Memory::new(),
            &Limits::default()
        ),
        Ok(())
    );
    let e = admits(
        &p,
        "f",
        &[Value::Int(2)],
        &[],
        Memory::new(),
        &Limits::default(),
    )
    .unwrap_err();
    assert!(matches!(e, InterpError::Infeasible { .. }), "{e:?}");
    // A run of the same input does reach the body.
    let e = run_err(&p, "f", &[Value::Int(3)], Memory::new());
    assert!(matches!(e, InterpError::AssertFailed { .. }), "{e:?}");
}
