//! Parser unit tests: precedence, every declaration and statement form, gpuopt, errors,
//! warnings and robustness against arbitrary input.

use super::*;

/// Parse `src` as a whole file, failing the test with the errors otherwise.
fn ok(src: &str) -> Parsed {
    fast_path_matches_pest(src);
    match parse(src) {
        Ok(p) => p,
        Err(es) => panic!("{src}\n=> {es:?}"),
    }
}

fn err(src: &str) -> SyntaxError {
    fast_path_matches_pest(src);
    match parse(src) {
        Ok(_) => panic!("expected an error for {src}"),
        Err(mut es) => {
            assert!(!es.is_empty());
            es.remove(0)
        }
    }
}

/// The expression `src`, parsed as the body of a pure function.
fn expr_of(src: &str) -> Expr {
    let p = ok(&format!("pure int f() = {src};"));
    match p.program.items.into_iter().next() {
        Some(Item::Member(Member {
            kind:
                MemberKind::Method(Method {
                    body: MethodBody::Expr(e),
                    ..
                }),
            ..
        })) => e,
        other => panic!("{other:?}"),
    }
}

/// The `with` and `then` arguments of a call or a `new`.
fn sexp_ghosts(given: &[GhostArg], yields: &[GhostArg]) -> String {
    let mut s = String::new();
    for g in given {
        s += &format!(" with:{}={}", g.name.name, sexp(&g.value));
    }
    for y in yields {
        s += &format!(" then:{}={}", y.name.name, sexp(&y.value));
    }
    s
}

/// A compact prefix form of an expression, to state tree shapes in tests.
fn sexp(e: &Expr) -> String {
    match &e.kind {
        ExprKind::IntLit(n) => n.to_string(),
        ExprKind::BoolLit(b) => b.to_string(),
        ExprKind::Null => "null".into(),
        ExprKind::This => "this".into(),
        ExprKind::Result => "\\result".into(),
        ExprKind::AllIndices => "*".into(),
        ExprKind::PermLit(p) => format!("{p:?}").to_lowercase(),
        ExprKind::Name(n) => n.name.clone(),
        ExprKind::Unary { op, operand } => {
            let o = if *op == UnaryOp::Not { "!" } else { "neg" };
            format!("({o} {})", sexp(operand))
        }
        ExprKind::Binary { op, lhs, rhs } => {
            format!("({} {} {})", op.symbol(), sexp(lhs), sexp(rhs))
        }
        ExprKind::Cond {
            cond,
            then_expr,
            else_expr,
        } => format!("(? {} {} {})", sexp(cond), sexp(then_expr), sexp(else_expr)),
        ExprKind::Index { base, index } => format!("(idx {} {})", sexp(base), sexp(index)),
        ExprKind::Slice { base, from, to } => format!(
            "(slice {} {} {})",
            sexp(base),
            from.as_ref().map_or("_".into(), |e| sexp(e)),
            to.as_ref().map_or("_".into(), |e| sexp(e))
        ),
        ExprKind::Update { base, index, value } => {
            format!("(upd {} {} {})", sexp(base), sexp(index), sexp(value))
        }
        ExprKind::Field { base, name } => format!("(. {} {})", sexp(base), name.name),
        ExprKind::Call {
            receiver,
            name,
            type_args,
            args,
            given,
            yields,
        } => {
            let mut s = "(call ".to_string();
            if let Some(r) = receiver {
                s += &format!("{}.", sexp(r));
            }
            s += &name.name;
            if !type_args.is_empty() {
                let tys: Vec<String> = type_args.iter().map(crate::syntax::print_type).collect();
                s += &format!("<{}>", tys.join(", "));
            }
            for a in args {
                s += &format!(" {}", sexp(a));
            }
            s + &sexp_ghosts(given, yields) + ")"
        }
        ExprKind::New {
            class,
            args,
            given,
            yields,
        } => {
            let mut s = format!("(new {}", class.name);
            for a in args {
                s += &format!(" {}", sexp(a));
            }
            s + &sexp_ghosts(given, yields) + ")"
        }
        ExprKind::NewArray { elem, dims } => format!(
            "(newarray {:?}{})",
            elem.kind,
            dims.iter()
                .map(|a| format!(" {}", sexp(a)))
                .collect::<String>()
        ),
        ExprKind::Old(e) => format!("(old {})", sexp(e)),
        ExprKind::Length(e) => format!("(len {})", sexp(e)),
        ExprKind::Builtin { op, args } => format!(
            "({}{})",
            op.spelling(),
            args.iter()
                .map(|a| format!(" {}", sexp(a)))
                .collect::<String>()
        ),
        ExprKind::Quantifier(q) => format!(
            "({:?} [{}] {} {})",
            q.kind,
            q.binders
                .iter()
                .map(|b| match &b.range {
                    Some((lo, hi)) => format!("{}={}..{}", b.name.name, sexp(lo), sexp(hi)),
                    None => b.name.name.clone(),
                })
                .collect::<Vec<_>>()
                .join(","),
            q.cond.as_ref().map_or("_".into(), sexp),
            sexp(&q.body)
        ),
        ExprKind::Let {
            name, value, body, ..
        } => format!("(let {} {} {})", name.name, sexp(value), sexp(body)),
        ExprKind::Collection { kind, elems, .. } => format!(
            "({kind:?}{})",
            elems
                .iter()
                .map(|a| format!(" {}", sexp(a)))
                .collect::<String>()
        ),
        ExprKind::MapLit { entries, .. } => format!(
            "(map{})",
            entries
                .iter()
                .map(|(k, v)| format!(" {}->{}", sexp(k), sexp(v)))
                .collect::<String>()
        ),
        ExprKind::Tuple { first, second, .. } => {
            format!("(tuple {} {})", sexp(first), sexp(second))
        }
        ExprKind::Trigger(e, None) => format!("(trigger {})", sexp(e)),
        ExprKind::Trigger(e, Some(n)) => format!("(trigger#{n} {})", sexp(e)),
        ExprKind::Scaled { amount, pred } => format!("(scale {} {})", sexp(amount), sexp(pred)),
        ExprKind::Unfolding { pred, body } => {
            format!("(unfolding {} {})", sexp(pred), sexp(body))
        }
    }
}

fn shape(src: &str) -> String {
    sexp(&expr_of(src))
}

/// The statements of `void m() { <body> }` in a class.
fn stmts(body: &str) -> Vec<Stmt> {
    let p = ok(&format!("class C {{ void m() {{ {body} }} }}"));
    match p.program.items.into_iter().next() {
        Some(Item::Class(c)) => match c.members.into_iter().next().map(|m| m.kind) {
            Some(MemberKind::Method(Method {
                body: MethodBody::Block(b),
                ..
            })) => b.stmts,
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

fn members(src: &str) -> Vec<Member> {
    let p = ok(src);
    p.program
        .items
        .into_iter()
        .flat_map(|i| match i {
            Item::Class(c) => c.members,
            Item::Member(m) => vec![m],
        })
        .collect()
}

// ---------------------------------------------------------------- precedence

#[test]
fn implication_is_right_nested() {
    assert_eq!(shape("a ==> b ==> c"), "(==> a (==> b c))");
}

#[test]
fn subtraction_is_left_nested() {
    assert_eq!(shape("a - b - c"), "(- (- a b) c)");
}

#[test]
fn cons_is_right_nested() {
    assert_eq!(shape("x :: y :: s"), "(:: x (:: y s))");
}

#[test]
fn and_and_star_share_a_level_left_assoc() {
    assert_eq!(shape("a && b ** c"), "(** (&& a b) c)");
    assert_eq!(shape("a ** b && c"), "(&& (** a b) c)");
}

#[test]
fn fraction_division() {
    assert_eq!(shape("1\\2"), "(\\ 1 2)");
    assert_eq!(shape("1\\N * 2"), "(* (\\ 1 N) 2)");
}

#[test]
fn full_precedence_ladder() {
    assert_eq!(
        shape("c ? a ==> b || d && e == f < g in h + i :: j * k : z"),
        "(? c (==> a (|| b (&& d (== e (< f (in g (+ h (:: i (* j k))))))))) z)"
    );
    assert_eq!(shape("a * b + c"), "(+ (* a b) c)");
    assert_eq!(shape("x ++ y + z"), "(+ (++ x y) z)");
    assert_eq!(shape("a + b :: s"), "(+ a (:: b s))");
    assert_eq!(shape("a < b == c"), "(== (< a b) c)");
    assert_eq!(shape("x in s == b"), "(== (in x s) b)");
}

#[test]
fn conditional_is_loosest_and_right_nested() {
    assert_eq!(shape("a ? b : c ? d : e"), "(? a b (? c d e))");
    assert_eq!(shape("a ==> b ? c : d"), "(? (==> a b) c d)");
    assert_eq!(shape("a ? b ? c : d : e"), "(? a (? b c d) e)");
}

#[test]
fn unary_and_postfix() {
    assert_eq!(shape("-5"), "(neg 5)");
    assert_eq!(shape("-a * b"), "(* (neg a) b)");
    assert_eq!(shape("!a[i].f"), "(! (. (idx a i) f))");
    assert_eq!(shape("!!x"), "(! (! x))");
    assert_eq!(shape("a - -b"), "(- a (neg b))");
}

#[test]
fn postfix_forms() {
    assert_eq!(shape("s[a..b]"), "(slice s a b)");
    assert_eq!(shape("s[a..]"), "(slice s a _)");
    assert_eq!(shape("s[..b]"), "(slice s _ b)");
    assert_eq!(shape("s[i -> v]"), "(upd s i v)");
    assert_eq!(shape("m[i][j]"), "(idx (idx m i) j)");
    assert_eq!(shape("a.length"), "(. a length)");
    assert_eq!(shape("this.f(x, 1)"), "(call this.f x 1)");
    assert_eq!(shape("C.lemma(x)"), "(call C.lemma x)");
    assert_eq!(shape("x.getOrElse(2).y"), "(. (call x.getOrElse 2) y)");
}

#[test]
fn primaries() {
    assert_eq!(shape("true && false"), "(&& true false)");
    assert_eq!(shape("null != this"), "(!= null this)");
    assert_eq!(shape("\\result"), "\\result");
    assert_eq!(shape("write + read + none"), "(+ (+ write read) none)");
    assert_eq!(shape("\\old(x + 1)"), "(old (+ x 1))");
    assert_eq!(shape("|s| + (\\| t \\|)"), "(+ (len s) (len t))");
    assert_eq!(shape("Perm(a[i], 1\\2)"), "(Perm (idx a i) (\\ 1 2))");
    assert_eq!(shape("PointsTo(x, write, 3)"), "(PointsTo x write 3)");
    assert_eq!(shape("Value(x)"), "(Value x)");
    assert_eq!(shape("\\array(a, n)"), "(\\array a n)");
    assert_eq!(shape("\\matrix(m, r, c)"), "(\\matrix m r c)");
    assert_eq!(shape("(\\let int x = 1; x + y)"), "(let x 1 (+ x y))");
    assert_eq!(shape("seq<int>{1, 2}"), "(Seq 1 2)");
    assert_eq!(shape("set<int>{}"), "(Set)");
    assert_eq!(shape("bag<int>{1}"), "(Bag 1)");
    assert_eq!(shape("map<int, bool>{1 -> true}"), "(map 1->true)");
    assert_eq!(
        shape("head(s) + tail(s)"),
        "(+ (call head s) (call tail s))"
    );
    assert_eq!(shape("Some(x) == None"), "(== (call Some x) None)");
    assert_eq!(shape("new C(1)"), "(new C 1)");
    assert_eq!(shape("new int[M][N]"), "(newarray Int M N)");
    assert_eq!(
        shape("unfolding p(x) in x + 1"),
        "(unfolding (call p x) (+ x 1))"
    );
}

#[test]
fn big_integers_are_unbounded() {
    assert_eq!(
        shape("123456789012345678901234567890"),
        "123456789012345678901234567890"
    );
}

#[test]
fn quantifiers() {
    assert_eq!(
        shape("(\\forall int i; 0 <= i; a[i] > 0)"),
        "(Forall [i] (<= 0 i) (> (idx a i) 0))"
    );
    assert_eq!(shape("(\\forall int i; b)"), "(Forall [i] _ b)");
    assert_eq!(
        shape("(\\forall* int i = 0 .. n; Perm(a[i], write))"),
        "(ForallStar [i=0..n] _ (Perm (idx a i) write))"
    );
    assert_eq!(shape("(\\exists int i, int j; c; b)"), "(Exists [i,j] c b)");
    assert_eq!(shape("(\\sum int k; c; s[k])"), "(Sum [k] c (idx s k))");
    assert_eq!(
        shape("(\\forall int i; c; {: f(i) :} > 0)"),
        "(Forall [i] c (> (trigger (call f i)) 0))"
    );
    // Numbered: the terms of one multi-pattern; the number needs its `:` right after it.
    assert_eq!(
        shape("(\\forall int i; {:1: a[i] :} == {:12:b[i]:})"),
        "(Forall [i] _ (== (trigger#1 (idx a i)) (trigger#12 (idx b i))))"
    );
    assert_eq!(
        shape("(\\forall int i; {: 1 :} == a[i])"),
        "(Forall [i] _ (== (trigger 1) (idx a i)))"
    );
}

#[test]
fn trigger_group_too_long() {
    let err = crate::syntax::parse(
        "requires (\\forall int i; {:1234567890: a[i] :} > 0);\nvoid m(seq<int> a);",
    )
    .expect_err("ten digits");
    assert!(format!("{err:?}").contains("LiteralTooLong"), "{err:?}");
}

#[test]
fn keywords_do_not_swallow_identifier_prefixes() {
    assert_eq!(
        shape("index + reader + nonex + inside"),
        "(+ (+ (+ index reader) nonex) inside)"
    );
    assert_eq!(
        shape("thisx - newer - nullity"),
        "(- (- thisx newer) nullity)"
    );
    assert_eq!(shape("x in s"), "(in x s)");
}

#[test]
fn spans_cover_the_text() {
    let src = "pure int f() = a + b * c;";
    let p = ok(src);
    let Some(Item::Member(m)) = p.program.items.first() else {
        panic!()
    };
    assert_eq!(m.span, Span::new(0, src.len()));
    let MemberKind::Method(Method {
        body: MethodBody::Expr(e),
        ..
    }) = &m.kind
    else {
        panic!()
    };
    assert_eq!(&src[e.span.range()], "a + b * c");
    let ExprKind::Binary { rhs, .. } = &e.kind else {
        panic!()
    };
    assert_eq!(&src[rhs.span.range()], "b * c");
}

// ---------------------------------------------------------------- W0101

#[test]
fn mixed_and_or_warns() {
    for src in ["a && b || c", "a || b && c", "a || b ** c"] {
        let p = ok(&format!("pure boolean f() = {src};"));
        assert_eq!(p.warnings.len(), 1, "{src}");
        let span = p.warnings[0].span();
        assert_eq!(span.len(), src.len());
        assert_eq!(p.warnings[0].code_str(), "W0101");
    }
}

#[test]
fn parenthesised_mix_does_not_warn() {
    for src in [
        "(a && b) || c",
        "a || (b && c)",
        "a && b && c",
        "a || b || c",
    ] {
        let p = ok(&format!("pure boolean f() = {src};"));
        assert!(p.warnings.is_empty(), "{src}");
    }
}

// ---------------------------------------------------------------- declarations

#[test]
fn classes_fields_and_top_level_members() {
    let p = ok("class A { int x, y; int[] a; } class B { } pure int g() = 1;");
    assert_eq!(p.program.items.len(), 3);
    let Item::Class(a) = &p.program.items[0] else {
        panic!()
    };
    assert_eq!(a.members.len(), 3);
    let names: Vec<_> = a
        .members
        .iter()
        .map(|m| match &m.kind {
            MemberKind::Field(f) => f.name.name.clone(),
            _ => panic!(),
        })
        .collect();
    assert_eq!(names, ["x", "y", "a"]);
}

#[test]
fn type_arguments_only_before_a_call() {
    assert_eq!(shape("count<T>(xs, e)"), "(call count<T> xs e)");
    assert_eq!(shape("o.f<seq<int>, C>(x)"), "(call o.f<seq<int>, C> x)");
    // Without a `(` after the `>` these are comparisons.
    assert_eq!(shape("a < b"), "(< a b)");
    assert_eq!(shape("a < b && c > d"), "(&& (< a b) (> c d))");
    assert_eq!(shape("a < b > c"), "(> (< a b) c)");
    // As in Java, a `(` after the `>` makes it a generic call.
    assert_eq!(shape("f(a < b, c > (d))"), "(call f (call a<b, c> d))");
}

#[test]
fn scaled_predicates_only_before_a_name_and_a_call() {
    assert_eq!(shape("[1\\2]r()"), "(scale (\\ 1 2) (call r))");
    assert_eq!(shape("[p][q]x.r(a)"), "(scale p (scale q (call x.r a)))");
    // Sequence literals, indexed or not, stay literals.
    assert_eq!(shape("[x][0]"), "(idx (Seq x) 0)");
    assert_eq!(shape("[a] in s"), "(in (Seq a) s)");
}

#[test]
fn generic_methods_name_their_type_parameters() {
    let ms = members("T f<T, U>(T t, U u) = t;\nvoid g() { }");
    let MemberKind::Method(f) = &ms[0].kind else {
        panic!()
    };
    let names: Vec<&str> = f.type_params.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["T", "U"]);
    let MemberKind::Method(g) = &ms[1].kind else {
        panic!()
    };
    assert!(g.type_params.is_empty());
}

#[test]
fn methods_with_modifiers_and_bodies() {
    let ms = members(
        "class C {
            C(int v) { }
            constructor(int v) { }
            static pure inline thread_local int f(int x);
            pure int g(int x) = x + 1;
            inline resource p(int[] a) = a != null;
            resource q();
            void m(int[N] a, int[M][N] b, seq<seq<int>> s, boolean c, bool d, frac f, zfrac z, rational r) { }
        }",
    );
    let methods: Vec<&Method> = ms
        .iter()
        .map(|m| match &m.kind {
            MemberKind::Method(m) => m,
            _ => panic!(),
        })
        .collect();
    assert!(methods[0].return_type.is_none());
    assert_eq!(methods[1].name.name, "constructor");
    assert!(methods[1].return_type.is_none());
    assert_eq!(
        methods[2].modifiers,
        [
            Modifier::Static,
            Modifier::Pure,
            Modifier::Inline,
            Modifier::ThreadLocal
        ]
    );
    assert_eq!(methods[2].body, MethodBody::Abstract);
    assert!(matches!(methods[3].body, MethodBody::Expr(_)));
    assert_eq!(
        methods[4].return_type.as_ref().map(|t| &t.kind),
        Some(&TypeKind::Resource)
    );
    let params = &methods[6].params;
    assert!(matches!(
        &params[0].ty.kind,
        TypeKind::Array { elem, size: Some(_) } if elem.kind == TypeKind::Int
    ));
    // int[M][N]: M rows of N.
    let TypeKind::Array {
        elem,
        size: Some(m),
    } = &params[1].ty.kind
    else {
        panic!()
    };
    assert_eq!(sexp(m), "M");
    let TypeKind::Array { size: Some(n), .. } = &elem.kind else {
        panic!()
    };
    assert_eq!(sexp(n), "N");
    assert!(
        matches!(&params[2].ty.kind, TypeKind::Seq(inner) if matches!(inner.kind, TypeKind::Seq(_)))
    );
    assert_eq!(params[3].ty.kind, TypeKind::Bool);
    assert_eq!(params[4].ty.kind, TypeKind::Bool);
    assert_eq!(params[5].ty.kind, TypeKind::Frac);
    assert_eq!(params[6].ty.kind, TypeKind::ZFrac);
    assert_eq!(params[7].ty.kind, TypeKind::Rational);
}

#[test]
fn every_contract_clause() {
    let ms = members(
        "requires a; ensures b; context c; context_everywhere d; loop_invariant e;
         given frac p; yields seq<int> ys; lock_invariant f;
         void m();",
    );
    let kinds: Vec<String> = ms[0]
        .contract
        .clauses
        .iter()
        .map(|c| {
            format!("{:?}", c.kind)
                .split('(')
                .next()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "Requires",
            "Ensures",
            "Context",
            "ContextEverywhere",
            "LoopInvariant",
            "Given",
            "Yields",
            "LockInvariant"
        ]
    );
}

#[test]
fn contract_before_a_class() {
    let p = ok("lock_invariant Perm(f, write); class T { int f; }");
    let Item::Class(class) = &p.program.items[0] else {
        panic!()
    };
    assert_eq!(class.contract.clauses.len(), 1);
    assert_eq!(class.name.name, "T");
    assert_eq!(class.span.start, 0);
}

#[test]
fn member_span_covers_gpuopts_and_contract() {
    let src = "class C {\n  gpuopt tile inter 4;\n  requires true;\n  void m() { }\n}";
    let ms = members(src);
    let start = src.find("gpuopt").unwrap_or(0);
    assert_eq!(ms[0].span.start as usize, start);
    assert_eq!(ms[0].gpuopts.len(), 1);
}

// ---------------------------------------------------------------- gpuopt

#[test]
fn glob_to_reg_two_dimensional_form_has_a_row() {
    let ms = members("gpuopt glob_to_reg m[i] j, j + 1; gpuopt glob_to_reg a tid; void m() { }");
    let g: Vec<&GpuOptKind> = ms[0].gpuopts.iter().map(|g| &g.kind).collect();
    let GpuOptKind::GlobToReg {
        array,
        rows,
        indices,
    } = g[0]
    else {
        panic!()
    };
    assert_eq!(array.name, "m");
    assert_eq!(rows.iter().map(sexp).collect::<Vec<_>>(), ["i"]);
    assert_eq!(
        indices.iter().map(sexp).collect::<Vec<_>>(),
        ["j", "(+ j 1)"]
    );
    let GpuOptKind::GlobToReg { rows, indices, .. } = g[1] else {
        panic!()
    };
    assert_eq!(rows.len(), 0, "{rows:?}");
    assert_eq!(indices.len(), 1);
}

#[test]
fn gpuopt_forms_before_members_interleaved_with_clauses() {
    let ms = members(
        "gpuopt matrix_lin m R X Y;
         requires true;
         gpuopt matrix_lin n C 2 3;
         gpuopt glob_to_reg a tid tid - 1;
         gpuopt glob_to_reg b tid, tid + 1;
         ensures true;
         gpuopt tile intra T;
         gpuopt fuse 2 256;
         gpuopt fuse 3;
         void m() { }",
    );
    let g: Vec<&GpuOptKind> = ms[0].gpuopts.iter().map(|g| &g.kind).collect();
    assert_eq!(g.len(), 7);
    assert_eq!(ms[0].contract.clauses.len(), 2);
    assert!(
        matches!(g[0], GpuOptKind::MatrixLin { order: MatrixOrder::RowMajor, matrix, .. } if matrix.name == "m")
    );
    assert!(matches!(
        g[1],
        GpuOptKind::MatrixLin {
            order: MatrixOrder::ColumnMajor,
            ..
        }
    ));
    let GpuOptKind::GlobToReg { array, indices, .. } = g[2] else {
        panic!()
    };
    assert_eq!(array.name, "a");
    assert_eq!(
        indices.iter().map(sexp).collect::<Vec<_>>(),
        ["tid", "(- tid 1)"]
    );
    let GpuOptKind::GlobToReg { indices, .. } = g[3] else {
        panic!()
    };
    assert_eq!(
        indices.iter().map(sexp).collect::<Vec<_>>(),
        ["tid", "(+ tid 1)"]
    );
    assert!(matches!(
        g[4],
        GpuOptKind::Tile {
            layout: TileLayout::Intra,
            ..
        }
    ));
    assert!(matches!(
        g[5],
        GpuOptKind::Fuse {
            block_hint: Some(_),
            ..
        }
    ));
    assert!(matches!(
        g[6],
        GpuOptKind::Fuse {
            block_hint: None,
            ..
        }
    ));
}

#[test]
fn gpuopt_in_statement_position() {
    let s = stmts(
        "gpuopt loop_unroll i 2;
         gpuopt iter_merge i 4;
         loop_invariant 0 <= i;
         while (i < n) { i++; }",
    );
    assert!(matches!(
        &s[0].kind,
        StmtKind::GpuOpt(GpuOpt { kind: GpuOptKind::LoopUnroll { var, .. }, .. }) if var.name == "i"
    ));
    assert!(matches!(
        &s[1].kind,
        StmtKind::GpuOpt(GpuOpt {
            kind: GpuOptKind::IterMerge { .. },
            ..
        })
    ));
    assert!(matches!(&s[2].kind, StmtKind::While { contract, .. } if contract.clauses.len() == 1));
}

#[test]
fn gpuopt_errors() {
    let src = "gpuopt matrix_lin m X 2 3;\nvoid m();";
    let e = err(src);
    assert_eq!(e.code_str(), "E0103");
    assert_eq!(e.span().map(|s| &src[s.range()]), Some("X"));

    let src = "gpuopt tile across 4;\nvoid m();";
    let e = err(src);
    assert_eq!(e.code_str(), "E0103");
    assert_eq!(e.span().map(|s| &src[s.range()]), Some("across"));

    let e = err("gpuopt loop_unroll i;\nvoid m();");
    assert_eq!(e.code_str(), "E0104");
    assert!(e.to_string().contains("gpuopt loop_unroll VAR K;"), "{e}");

    let e = err("gpuopt vectorise a;\nvoid m();");
    assert_eq!(e.code_str(), "E0105");

    // Every bad annotation is reported, not only the first.
    let Err(es) = parse("gpuopt tile x 1; gpuopt matrix_lin m Q 1 2; void m();") else {
        panic!()
    };
    assert_eq!(es.len(), 2);
}

// ---------------------------------------------------------------- statements

#[test]
fn local_declarations_and_assignments() {
    let s = stmts(
        "int x, y = 0; int[] a = new int[n]; seq<int> s; map<int,bool> m; option<int> o; C c = new C();
         x = 1; a[i] = 2; m2[i][j] = 3; this.x = 4; o.f = 5; x++; x--;",
    );
    assert!(
        matches!(&s[0].kind, StmtKind::LocalDecl { vars, .. } if vars.len() == 2 && vars[1].init.is_some() && vars[0].init.is_none())
    );
    assert!(
        matches!(&s[3].kind, StmtKind::LocalDecl { ty, .. } if matches!(ty.kind, TypeKind::Map(..)))
    );
    assert!(
        matches!(&s[4].kind, StmtKind::LocalDecl { ty, .. } if matches!(ty.kind, TypeKind::Option(..)))
    );
    assert!(
        matches!(&s[5].kind, StmtKind::LocalDecl { ty, .. } if matches!(&ty.kind, TypeKind::Class(c) if c.name == "C"))
    );
    let targets: Vec<String> = s[6..11]
        .iter()
        .map(|st| match &st.kind {
            StmtKind::Assign { target, .. } => sexp(target),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        targets,
        [
            "x",
            "(idx a i)",
            "(idx (idx m2 i) j)",
            "(. this x)",
            "(. o f)"
        ]
    );
    assert!(matches!(&s[11].kind, StmtKind::Increment(_)));
    assert!(matches!(&s[12].kind, StmtKind::Decrement(_)));
    assert_eq!(s[11].span.len(), "x++;".len());
}

#[test]
fn call_statements() {
    let s = stmts(
        "this.swap(a, i, j); C.lemma(x); new C(); f(x) with { a = e; } then { b = c; };
         new C(x) given { a = e } yields { b = c };",
    );
    let shapes: Vec<String> = s
        .iter()
        .map(|st| match &st.kind {
            StmtKind::Expr(e) => sexp(e),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        shapes,
        [
            "(call this.swap a i j)",
            "(call C.lemma x)",
            "(new C)",
            "(call f x with:a=e then:b=c)",
            "(new C x with:a=e then:b=c)"
        ]
    );
}

#[test]
fn null_guarded_application_is_an_implication() {
    assert_eq!(
        shape("a ** l?.state(p) ** b"),
        "(** (** a (==> (!= l null) (call l.state p))) b)"
    );
    // Only a predicate application is null-guarded: `l?.next` is not PVL.
    err("pure int f() = l?.next;");
}

#[test]
fn control_flow() {
    let s = stmts(
        "if (a) x = 1; else if (b) { x = 2; } else x = 3;
         if (c) { }
         loop_invariant 0 <= i; loop_invariant i <= n;
         for (int i = 0; i < n; i++) { }
         for (;;) { }
         while (true) { }
         return;",
    );
    let StmtKind::If {
        else_branch: Some(e),
        ..
    } = &s[0].kind
    else {
        panic!()
    };
    assert!(matches!(
        &e.kind,
        StmtKind::If {
            else_branch: Some(_),
            ..
        }
    ));
    assert!(matches!(
        &s[1].kind,
        StmtKind::If {
            else_branch: None,
            ..
        }
    ));
    let StmtKind::For {
        contract,
        init: Some(init),
        cond: Some(_),
        update: Some(update),
        ..
    } = &s[2].kind
    else {
        panic!("{:?}", s[2].kind)
    };
    assert_eq!(contract.clauses.len(), 2);
    assert!(matches!(init.kind, StmtKind::LocalDecl { .. }));
    assert!(matches!(update.kind, StmtKind::Increment(_)));
    assert!(matches!(
        &s[3].kind,
        StmtKind::For {
            init: None,
            cond: None,
            update: None,
            ..
        }
    ));
    assert!(matches!(&s[4].kind, StmtKind::While { .. }));
    assert!(matches!(&s[5].kind, StmtKind::Return(None)));
}

#[test]
fn long_else_if_chains_do_not_recurse() {
    let mut body = String::from("if (x == 0) y = 0;");
    for i in 1..3000 {
        body += &format!(" else if (x == {i}) y = {i};");
    }
    let s = stmts(&body);
    assert_eq!(s.len(), 1);
}

#[test]
fn par_blocks() {
    let s = stmts(
        "par A(int tid = 0 .. n) requires true; { }
         par (int i = 0 .. M, int j = 0 .. N) context true; { par B(int k = 0 .. 2) { } }
         par { }
         par A(int t = 0 .. n) { } and B(int t = 0 .. n) { }
         parallel { par context Perm(x, 1); { } par (int i = 0 .. n) { } }
         sequential { par f(int i = 0 .. n) { } }",
    );
    let groups: Vec<&ParGroup> = s
        .iter()
        .map(|st| match &st.kind {
            StmtKind::Par(g) => g,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        groups[0].blocks[0].label.as_ref().map(|l| l.name.as_str()),
        Some("A")
    );
    assert_eq!(groups[0].blocks[0].iters.len(), 1);
    assert_eq!(groups[0].blocks[0].contract.clauses.len(), 1);
    assert_eq!(groups[1].blocks[0].iters.len(), 2);
    assert!(groups[1].blocks[0].label.is_none());
    assert!(matches!(
        groups[1].blocks[0].body.stmts[0].kind,
        StmtKind::Par(_)
    ));
    assert!(groups[2].blocks[0].iters.is_empty());
    assert_eq!(groups[3].blocks.len(), 2);
    assert_eq!(groups[3].style, ParGroupStyle::And);
    assert_eq!(groups[4].blocks.len(), 2);
    assert_eq!(groups[4].style, ParGroupStyle::Parallel);
    assert!(groups[4].blocks[0].label.is_none());
    assert_eq!(groups[5].style, ParGroupStyle::Sequential);
}

#[test]
fn barriers() {
    let s = stmts(
        "barrier(L) { requires a; ensures b; }
         barrier(L) requires a; ensures b; { }
         barrier(L) { }
         barrier(L; inv) requires a; { x = 1; }",
    );
    let styles: Vec<(BarrierStyle, usize)> = s[..3]
        .iter()
        .map(|st| match &st.kind {
            StmtKind::Barrier(b) => (b.style, b.contract.clauses.len()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        styles,
        [
            (BarrierStyle::ClausesInside, 2),
            (BarrierStyle::ClausesBefore, 2),
            (BarrierStyle::ClausesInside, 0)
        ]
    );
    assert!(matches!(
        &s[3].kind,
        StmtKind::Barrier(barrier) if barrier.invariants.len() == 1 && barrier.body.stmts.len() == 1
    ));
}

#[test]
fn specification_statements() {
    let s = stmts(
        "assert x; assume y; ghost int g = 0; ghost g = 1;
         invariant inv(x > 0) { atomic(inv) { x = 1; } }
         lock this; unlock this; fold p(x); unfold p(x);",
    );
    let names: Vec<String> = s
        .iter()
        .map(|st| {
            format!("{:?}", st.kind)
                .split([' ', '(', '{'])
                .next()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(
        names,
        [
            "Assert",
            "Assume",
            "Ghost",
            "Ghost",
            "Invariant",
            "Lock",
            "Unlock",
            "Fold",
            "Unfold"
        ]
    );
    let StmtKind::Invariant { body, .. } = &s[4].kind else {
        panic!()
    };
    assert!(matches!(body.stmts[0].kind, StmtKind::Atomic { .. }));
}

/// `fork t;` and `join t;` are statements, never declarations of `t` with a class `fork`
/// (pest once tried `for` first and gave up on the keyword), also where the file takes the
/// pest path (a `run` block sends it there); `idle(t)`/`running(t)` are built-ins.
#[test]
fn fork_join_run_and_thread_tokens() {
    for src in [
        "class T { void run() { } void m(T t) { fork t; join t; assert idle(t); } }",
        "class T { run { } void m(T t) { fork t; join t; assert running(t); } }",
    ] {
        let ms = members(src);
        let run = ms
            .iter()
            .find_map(|m| match &m.kind {
                MemberKind::Method(x) if x.name.name == "run" => Some(x),
                _ => None,
            })
            .expect("a run method");
        assert_eq!(run.is_run, src.contains("run {"), "{src}");
        let Some(MemberKind::Method(Method {
            body: MethodBody::Block(b),
            ..
        })) = ms.last().map(|m| &m.kind)
        else {
            panic!("{src}")
        };
        assert!(matches!(b.stmts[0].kind, StmtKind::Fork(_)), "{src}");
        assert!(matches!(b.stmts[1].kind, StmtKind::Join(_)), "{src}");
        let StmtKind::Assert(token) = &b.stmts[2].kind else {
            panic!("{src}")
        };
        assert!(
            matches!(
                token.kind,
                ExprKind::Builtin {
                    op: Builtin::Idle | Builtin::Running,
                    ..
                }
            ),
            "{src}"
        );
    }
    // `a[*]`: every index, as a permission's location.
    let e = expr_of("Perm(a[*], 1\\2)");
    assert_eq!(sexp(&e), sexp(&expr_of("Perm(a[*], 1\\2)")));
    let ExprKind::Builtin { args, .. } = &e.kind else {
        panic!("{e:?}")
    };
    assert!(matches!(
        &args[0].kind,
        ExprKind::Index { index, .. } if matches!(index.kind, ExprKind::AllIndices)
    ));
    // Sequence literals: `[e1, .., en]` (element type from the elements), `[t: T]` (empty).
    assert!(matches!(
        expr_of("[1, 2]").kind,
        ExprKind::Collection { elem: None, ref elems, .. } if elems.len() == 2
    ));
    assert!(matches!(
        expr_of("[t: int]").kind,
        ExprKind::Collection { elem: Some(_), ref elems, .. } if elems.is_empty()
    ));
    // Still names where they are not keywords.
    let s = stmts("int fork = 1; fork = fork + 1; int idle = fork;");
    assert_eq!(s.len(), 3);
}

#[test]
fn comments_everywhere_and_harness_lines() {
    let src = "//:: verdict Pass\n/* a */ class /* b */ C // c\n{ int /*[/expect x]*/ x; // d\n}\n";
    let p = ok(src);
    assert_eq!(p.trivia.comments.len(), 6);
    let src = "class C { requires [/expect perm]x[/end] == 1; void m(); }";
    let p = ok(src);
    assert_eq!(p.trivia.comments.len(), 2);
}

// ---------------------------------------------------------------- errors

#[test]
fn missing_semicolon_is_e0101_with_expected_list() {
    let src = "class C { void m() { x = 1 } }";
    let e = err(src);
    assert_eq!(e.code_str(), "E0101");
    let msg = e.to_string();
    assert!(msg.contains("`;`"), "{msg}");
    assert!(!msg.contains("op_"), "{msg}");
    assert!(!msg.contains("simple"), "{msg}");
    let span = e.span().unwrap_or_default();
    assert_eq!(&src[span.range()], "}");
}

#[test]
fn error_at_end_of_file() {
    let src = "class C { void m() {";
    let e = err(src);
    assert_eq!(e.code_str(), "E0101");
    assert!(e.to_string().contains("end of file"), "{e}");
    assert_eq!(e.span(), Some(Span::new(src.len(), src.len())));
}

#[test]
fn unexpected_token_is_named() {
    let e = err("class C { int 5x; }");
    assert_eq!(e.code_str(), "E0101");
    let SyntaxError::Unexpected {
        expected, found, ..
    } = &e
    else {
        panic!()
    };
    assert!(expected.contains("an identifier"), "{expected}");
    assert_eq!(found, "`5x`");
}

#[test]
fn deep_nesting_is_refused() {
    let src = format!("pure int f() = {}1{};", "(".repeat(500), ")".repeat(500));
    let e = err(&src);
    assert_eq!(e.code_str(), "E0102");
    let src = format!("pure boolean f() = {}b;", "!".repeat(100_000));
    assert_eq!(err(&src).code_str(), "E0102");
    let src = format!("pure boolean f() = {}b;", "a ==> ".repeat(100_000));
    assert_eq!(err(&src).code_str(), "E0102");
    let src = format!("void m() {{ {} x = 1; }}", "ghost ".repeat(100_000));
    assert_eq!(err(&src).code_str(), "E0102");
}

#[test]
fn nested_types_and_lengths_are_refused() {
    // Neither is a bracket, but both recurse in the grammar and the tree builder.
    let src = format!(
        "seq<int> f() = {}xs{};",
        "| ".repeat(100_000),
        " |".repeat(100_000)
    );
    assert_eq!(err(&src).code_str(), "E0102");
    let src = format!("{}int{} f();", "seq<".repeat(100_000), ">".repeat(100_000));
    assert_eq!(err(&src).code_str(), "E0102");
    let src = format!(
        "void m() {{ {}int{} x; }}",
        "map<int, ".repeat(100_000),
        ">".repeat(100_000)
    );
    assert_eq!(err(&src).code_str(), "E0102");
}

/// Nesting just under [`MAX_NESTING`], of every kind the pre-scan counts, parses on a thread
/// with a modest stack: the pre-scan is what keeps pest's recursion off the guard page.
#[test]
fn deepest_accepted_nesting_fits_the_stack() {
    let n = MAX_NESTING - 4;
    let sources = vec![
        format!("pure int f() = {}1{};", "(".repeat(n), ")".repeat(n)),
        format!("pure int f() = {}1{};", "f(".repeat(n), ")".repeat(n)),
        format!("pure int f() = a{};", "[a".repeat(n) + &"]".repeat(n)),
        format!(
            "pure int f() = {}1{};",
            "!(".repeat(n / 2),
            ")".repeat(n / 2)
        ),
        format!(
            "pure int f() = {}1{};",
            "-(".repeat(n / 2),
            ")".repeat(n / 2)
        ),
        format!("pure boolean f() = {}b;", "!".repeat(n)),
        format!("pure boolean f() = {}b;", "a ==> ".repeat(n)),
        format!("pure boolean f() = {}b;", "a :: ".repeat(n)),
        format!("pure boolean f() = {}b;", "a ? b : ".repeat(n)),
        format!(
            "pure boolean f() = {}b;",
            "a ? ".repeat(n) + &" : c".repeat(n)
        ),
        format!("pure int f() = {}xs{};", "| ".repeat(n), " |".repeat(n)),
        format!(
            "pure int f() = {}1{};",
            "(\\forall int i; true; ".repeat(n),
            ")".repeat(n)
        ),
        format!(
            "pure int f() = {}1{};",
            "(\\let int i = 1; ".repeat(n),
            ")".repeat(n)
        ),
        format!("pure int f() = {}x{};", "unfolding p in ".repeat(n), ""),
        format!(
            "pure int f() = {}1{};",
            "new int[".repeat(n / 2),
            "]".repeat(n / 2)
        ),
        format!(
            "pure int f() = {}1{};",
            "seq<int>{".repeat(n / 2),
            "}".repeat(n / 2)
        ),
        format!("{}int{} f();", "seq<".repeat(n), ">".repeat(n)),
        format!("{}int{} f();", "map<int, ".repeat(n), ">".repeat(n)),
        format!("int{} f();", "[]".repeat(n)),
        format!("void m() {{ {}x = 1;{} }}", "{".repeat(n), "}".repeat(n)),
        format!("void m() {{ {} x = 1; }}", "ghost ".repeat(n)),
        format!("void m() {{ {} x = 1; }}", "if (a) ".repeat(n / 2)),
        format!("void m() {{ {} x = 1; }}", "while (a) ".repeat(n / 2)),
        format!("void m() {{ {} x = 1; }}", "for (;;) ".repeat(n / 2)),
        format!(
            "void m() {{ {} x = 1;{} }}",
            "par { ".repeat(n),
            "}".repeat(n)
        ),
        format!(
            "void m() {{ {} x = 1;{} }}",
            "barrier(b) { ".repeat(n),
            "}".repeat(n)
        ),
    ];
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            for src in &sources {
                // Accepted or refused with an error, but never a stack overflow.
                eprintln!("NEST {}", &src[..40.min(src.len())]);
                let _ = parse(src);
            }
        })
        .unwrap();
    handle.join().unwrap();
}

#[test]
fn moderate_nesting_is_accepted() {
    let src = format!("pure int f() = {}1{};", "(".repeat(40), ")".repeat(40));
    ok(&src);
}

#[test]
fn long_left_chains_are_limited_not_overflowing() {
    let src = format!("pure int f() = 1{};", " + 1".repeat(100));
    ok(&src);
    let src = format!("pure int f() = 1{};", " + 1".repeat(50_000));
    assert_eq!(err(&src).code_str(), "E0102");
}

// ---------------------------------------------------------------- robustness

const SAMPLE: &str = r#"//:: verdict Pass
class Ref {
  context_everywhere a != null && a.length == n;
  gpuopt glob_to_reg a tid tid - 1;
  gpuopt glob_to_reg m[i] j, j + 1;
  requires (\forall* int i; 0 <= i && i < n; Perm(a[i], write));
  void main(int n, int[] a, seq<int> s) {
    par fwd (int tid = 0 .. n) requires Perm(a[tid], 1\2); {
      barrier(fwd) { requires true; ensures tid > 0 ==> Perm(a[tid-1], 1\4); }
      if (tid > 0) { a[tid] = |s| + (\sum int k; 0 <= k; s[k]); } else { a[tid]--; }
    }
    gpuopt loop_unroll i 2;
    loop_invariant 0 <= i; /* block */
    for (int i = 0; i < n; i++) { assert s[1..] == tail(s) ? x :: s : seq<int>{}; }
  }
}
"#;

#[test]
fn sample_parses() {
    let p = ok(SAMPLE);
    assert!(p.warnings.is_empty());
}

/// A tiny deterministic generator, so the test needs no extra dependency.
struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn never_panics_on_truncations_and_mutations() {
    for end in 0..=SAMPLE.len() {
        if SAMPLE.is_char_boundary(end) {
            let _ = parse(&SAMPLE[..end]);
        }
    }
    let mut rng = XorShift(0x9e3779b97f4a7c15);
    let alphabet = b"(){}[];,.:?!-+*/\\|&=<> \n\tabcxyz019_\"'@#$%^~`";
    for _ in 0..2000 {
        let mut bytes = SAMPLE.as_bytes().to_vec();
        for _ in 0..(rng.next() % 4 + 1) {
            let pos = (rng.next() as usize) % bytes.len();
            let c = alphabet[(rng.next() as usize) % alphabet.len()];
            match rng.next() % 3 {
                0 => bytes[pos] = c,
                1 => bytes.insert(pos, c),
                _ => {
                    bytes.remove(pos);
                }
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        if let Err(es) = parse(&text) {
            for e in es {
                if let Some(span) = e.span() {
                    assert!(span.end as usize <= text.len());
                    assert!(text.is_char_boundary(span.start as usize));
                    assert!(text.is_char_boundary(span.end as usize));
                }
            }
        }
    }
}

#[test]
fn never_panics_on_random_bytes() {
    let mut rng = XorShift(42);
    for len in 0..300 {
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let _ = parse(&String::from_utf8_lossy(&bytes));
    }
    let _ = parse("é/*ü");
    let _ = parse("class é {}");
    let _ = parse("\u{FEFF}class C {}");
}

#[test]
fn after_a_syntax_error_the_next_classes_are_parsed_too() {
    let source = "class A {\n  void m() { x = ; }\n}\nclass B { int f; }\nclass C {\n  void n() { return 1 }\n}\n";
    let errors = parse(source).expect_err("two broken classes");
    let starts: Vec<usize> = errors
        .iter()
        .map(|e| e.span().expect("a place").start as usize)
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(&source[starts[0]..starts[0] + 1], ";");
    assert_eq!(&source[starts[1]..starts[1] + 1], "}");
    assert!(starts[1] > source.find("class C").unwrap());
}

// ------------------------------------------------------------------------------------------
// The fast path against pest

/// Whether the fast path read `src`; where it did, its result must be the pest path's exactly
/// (IR with spans, warnings in order).
fn fast_path_matches_pest(src: &str) -> bool {
    if check_nesting(src).is_err() {
        return false;
    }
    stacker::maybe_grow(PARSE_STACK, PARSE_STACK, || {
        let Some((program, warnings)) = fast::parse(src) else {
            return false;
        };
        match parse_with_pest(src) {
            Ok(p) => {
                assert_eq!(p.program, program, "fast path differs from pest on:\n{src}");
                assert_eq!(p.warnings, warnings, "warnings differ on:\n{src}");
            }
            Err(e) => panic!("fast path accepts what pest rejects ({e:?}):\n{src}"),
        }
        true
    })
}

fn pvl_files(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            pvl_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "pvl") {
            if let Ok(text) = std::fs::read_to_string(&path) {
                out.push((path, text));
            }
        }
    }
}

fn corpus() -> Vec<(std::path::PathBuf, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    pvl_files(&root.join("examples"), &mut files);
    pvl_files(&root.join("tests/data"), &mut files);
    files.sort();
    assert!(files.len() >= 12, "corpus not found");
    files
}

#[test]
fn fast_path_reads_every_example_as_pest_does() {
    for (path, src) in corpus() {
        let read = fast_path_matches_pest(&src);
        // The examples are the idiomatic kernels: the fast path must not give up on them.
        if path.components().any(|c| c.as_os_str() == "examples") {
            assert!(read, "fast path gave up on {}", path.display());
        }
    }
}

/// Thousands of small edits of every file (a character removed, a token inserted): whatever
/// the fast path reads must be read exactly as pest does.
#[test]
fn fast_path_agrees_with_pest_on_mutations() {
    const TOKENS: &[&str] = &[
        " ", ";", "(", ")", "{", "}", "[", "]", "-", "+", "++", "--", "!", "=", "==", ".", "..",
        ",", "?", ":", "::", "->", "&&", "||", "**", "\\", "|", "x", "0", "in ", "else ", "if ",
        "//c\n", "/*c*/", "/*", "{:", ":}", "seq", "<", ">", "int ", "new ", "\t",
    ];
    let mut read = 0usize;
    let mut tried = 0usize;
    for (_, src) in corpus() {
        let bytes = src.len();
        let mut at = 0usize;
        let mut k = 0usize;
        while at < bytes {
            if src.is_char_boundary(at) {
                let next = (at + 1..=bytes)
                    .find(|&i| src.is_char_boundary(i))
                    .unwrap_or(bytes);
                let removed = format!("{}{}", &src[..at], &src[next..]);
                let token = TOKENS[k % TOKENS.len()];
                let inserted = format!("{}{}{}", &src[..at], token, &src[at..]);
                for m in [removed, inserted] {
                    tried += 1;
                    read += usize::from(fast_path_matches_pest(&m));
                }
                k += 1;
            }
            at += 9;
        }
    }
    // Most edits break the program; enough must not for the comparison to mean something.
    assert!(
        read * 10 > tried,
        "fast path read only {read} of {tried} mutants"
    );
}

/// Where pest's spans take in white space after a rule's empty optional or repeated tail
/// (`new int[3] `, `f(x) `, `a.b `, `if (c) s `), the fast path must follow.
#[test]
fn fast_path_spans_follow_pest_around_white_space() {
    let cases = [
        "void f() { x = new int[3] ; y = new int[3] [4] ; z = new C(1) ; }",
        "void f() { for (int i = c ? a : b[0] ; i < n ; i++ ) { } }",
        "void f() { for (int i , j = 0 /* c */ ; ; i -- ) s(); }",
        "void f() { x = f(a) /* c */ + a.b // c\n ; if (c) s(); // c\n else if (d) { } /* c */ }",
        "void f() { par (int i = 0 .. n ) { } and B { } // c\n if (c) { } }",
        "pure int f(int x ) = c ? a : b[x] ;",
        "requires (\\forall int i ; i < c ? a : b[i] ; {: a[i] :} ) ; void f() ;",
        "void f() { barrier(L ; a , b) { requires x ; s(); } x = unfolding p(x) in y [1] ; }",
    ];
    for src in cases {
        assert!(fast_path_matches_pest(src), "fast path gave up on {src}");
    }
}

/// `goto l;` and `label l;` are statements (they were read as declarations of a variable `l`
/// of class `goto`); a variable named `label` or `goto` is still assigned as before.
#[test]
fn goto_and_label_are_statements() {
    let body = stmts("goto done; x = 1; label done; label = 2; goto = label;");
    assert!(matches!(&body[0].kind, StmtKind::Goto(l) if l.name == "done"));
    assert!(matches!(&body[2].kind, StmtKind::Label(l) if l.name == "done"));
    assert!(matches!(body[3].kind, StmtKind::Assign { .. }));
    assert!(matches!(body[4].kind, StmtKind::Assign { .. }));
}

/// `vec(int j = lo .. hi) { .. }` is a par group of one block in the vector style, with no
/// contract unless one is written.
#[test]
fn vector_blocks_are_par_groups() {
    let body = stmts("vec (int j = 0 .. n) { a[j] = 0; } vec = 1;");
    let StmtKind::Par(group) = &body[0].kind else {
        panic!("{:?}", body[0].kind)
    };
    assert_eq!(group.style, ParGroupStyle::Vector);
    assert_eq!(group.blocks.len(), 1);
    assert!(group.blocks[0].contract.clauses.is_empty());
    assert_eq!(group.blocks[0].iters[0].name.name, "j");
    assert!(matches!(body[1].kind, StmtKind::Assign { .. }));
}

#[test]
fn version_one_model_spelling_reads_as_the_current_one() {
    let p = ok("class `Future` { int x; process step(); process two() = step() * step(); }");
    let Some(Item::Class(c)) = p.program.items.first() else {
        panic!("{:?}", p.program.items);
    };
    // A class of processes is a model; the backticks are not part of the name.
    assert!(c.is_model);
    assert_eq!(c.name.name, "Future");
    let calls: Vec<String> = stmts(
        "create f, f.step(); split f, 1\\2, f.step(), 1\\2, empty; merge f, 1\\2, empty, 1\\2, \
         empty; destroy f; destroy(g); create(h, k);",
    )
    .iter()
    .map(|s| match &s.kind {
        StmtKind::Expr(Expr {
            kind:
                ExprKind::Call {
                    receiver,
                    name,
                    args,
                    ..
                },
            ..
        }) => format!(
            "{}.{}/{}",
            receiver.as_ref().map_or("-".to_string(), |r| sexp(r)),
            name.name,
            args.len()
        ),
        other => format!("{other:?}"),
    })
    .collect();
    // `destroy(g)` and `create(h, k)` stay calls of routines with those names.
    assert_eq!(
        calls,
        [
            "f.create/1",
            "f.split/4",
            "f.merge/4",
            "f.destroy/0",
            "-.destroy/1",
            "-.create/2"
        ]
    );
    let s = stmts("action(f, 1, empty, f.step(), x, write) { }");
    let StmtKind::Action { header, .. } = &s[0].kind else {
        panic!("{s:?}");
    };
    assert_eq!(header.converts.len(), 1);
}
