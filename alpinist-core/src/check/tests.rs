//! Tests of the checker: hand-built IR (independent of the parser) and small PVL programs.

use super::*;
use crate::syntax::*;

// ---- hand-built IR -------------------------------------------------------------------------

/// Spans are unique per node so tests can tell errors apart.
struct B {
    next: u32,
}

impl B {
    fn new() -> B {
        B { next: 0 }
    }
    fn span(&mut self) -> Span {
        self.next += 2;
        Span::new(self.next as usize, self.next as usize + 1)
    }
    fn id(&mut self, n: &str) -> Ident {
        Ident {
            name: n.into(),
            span: self.span(),
        }
    }
    fn ty(&mut self, kind: TypeKind) -> Type {
        Type {
            kind,
            span: self.span(),
        }
    }
    fn e(&mut self, kind: ExprKind) -> Expr {
        Expr {
            kind,
            span: self.span(),
        }
    }
    fn name(&mut self, n: &str) -> Expr {
        let id = self.id(n);
        self.e(ExprKind::Name(id))
    }
    fn int(&mut self, v: u32) -> Expr {
        self.e(ExprKind::IntLit(v.into()))
    }
    fn bin(&mut self, op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
        self.e(ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        })
    }
    fn perm(&mut self, loc: Expr, p: Expr) -> Expr {
        self.e(ExprKind::Builtin {
            op: Builtin::Perm,
            args: vec![loc, p],
        })
    }
    fn s(&mut self, kind: StmtKind) -> Stmt {
        Stmt {
            kind,
            span: self.span(),
        }
    }
    fn local(&mut self, ty: TypeKind, n: &str, init: Option<Expr>) -> Stmt {
        let ty = self.ty(ty);
        let name = self.id(n);
        let span = self.span();
        self.s(StmtKind::LocalDecl {
            ty,
            vars: vec![LocalVar { name, init, span }],
        })
    }
    fn assign(&mut self, target: Expr, value: Expr) -> Stmt {
        self.s(StmtKind::Assign { target, value })
    }
    fn block(&mut self, stmts: Vec<Stmt>) -> Block {
        Block {
            stmts,
            span: self.span(),
        }
    }
    fn clause(&mut self, kind: ClauseKind) -> Clause {
        Clause {
            kind,
            span: self.span(),
        }
    }
    fn param(&mut self, ty: TypeKind, n: &str) -> Param {
        let ty = self.ty(ty);
        let name = self.id(n);
        Param {
            ty,
            name,
            span: self.span(),
        }
    }
    #[allow(clippy::too_many_arguments)]
    fn method(
        &mut self,
        modifiers: Vec<Modifier>,
        ret: Option<TypeKind>,
        n: &str,
        params: Vec<Param>,
        clauses: Vec<Clause>,
        gpuopts: Vec<GpuOpt>,
        body: MethodBody,
    ) -> Member {
        let return_type = ret.map(|k| self.ty(k));
        let name = self.id(n);
        let span = self.span();
        Member {
            gpuopts,
            contract: Contract { clauses },
            kind: MemberKind::Method(Method {
                modifiers,
                return_type,
                name,
                params,
                body,
                span,
                is_run: false,
                model_member: None,
                type_params: Vec::new(),
            }),
            span,
        }
    }
    fn void_method(
        &mut self,
        n: &str,
        params: Vec<Param>,
        clauses: Vec<Clause>,
        body: Vec<Stmt>,
    ) -> Member {
        let body = MethodBody::Block(self.block(body));
        self.method(
            vec![],
            Some(TypeKind::Void),
            n,
            params,
            clauses,
            vec![],
            body,
        )
    }
    fn field(&mut self, ty: TypeKind, n: &str) -> Member {
        let ty = self.ty(ty);
        let name = self.id(n);
        let span = self.span();
        Member {
            gpuopts: vec![],
            contract: Contract::default(),
            kind: MemberKind::Field(Field { ty, name, span }),
            span,
        }
    }
    fn class(&mut self, n: &str, members: Vec<Member>) -> Program {
        let name = self.id(n);
        let span = self.span();
        Program {
            items: vec![Item::Class(Class {
                contract: Contract::default(),
                name,
                members,
                span,
                is_model: false,
            })],
            span,
        }
    }
    fn par(
        &mut self,
        label: Option<&str>,
        iters: Vec<(&str, Expr, Expr)>,
        body: Vec<Stmt>,
    ) -> Stmt {
        let label = label.map(|l| self.id(l));
        let iters = iters
            .into_iter()
            .map(|(n, lo, hi)| ParIter {
                ty: self.ty(TypeKind::Int),
                name: self.id(n),
                lo,
                hi,
                span: self.span(),
            })
            .collect();
        let body = self.block(body);
        let span = self.span();
        self.s(StmtKind::Par(ParGroup {
            blocks: vec![ParBlock {
                label,
                iters,
                contract: Contract::default(),
                body,
                span,
            }],
            style: ParGroupStyle::And,
        }))
    }
    fn gpuopt(&mut self, kind: GpuOptKind) -> GpuOpt {
        GpuOpt {
            kind,
            span: self.span(),
        }
    }
}

fn int_array() -> TypeKind {
    TypeKind::Array {
        elem: Box::new(Type {
            kind: TypeKind::Int,
            span: Span::default(),
        }),
        size: None,
    }
}

fn codes_of(p: &Program) -> Vec<String> {
    match check(p) {
        Ok(c) => c.gpuopt_errors.iter().map(|e| e.code_str()).collect(),
        Err(errs) => errs.iter().map(|e| e.code_str()).collect(),
    }
}

#[test]
fn ir_and_of_resource_is_an_error() {
    // class BadType { int x; given frac p; requires Perm(x,1) ** Perm(x,p) && p>0; void m(){} }
    let mut b = B::new();
    let f = b.field(TypeKind::Int, "x");
    let p = b.param(TypeKind::Frac, "p");
    let given = b.clause(ClauseKind::Given(p));
    let (x1, one, x2, pp) = (b.name("x"), b.int(1), b.name("x"), b.name("p"));
    let perm1 = b.perm(x1, one);
    let perm2 = b.perm(x2, pp);
    let star = b.bin(BinaryOp::Star, perm1, perm2);
    let (p2, zero) = (b.name("p"), b.int(0));
    let gt = b.bin(BinaryOp::Gt, p2, zero);
    let and = b.bin(BinaryOp::And, star, gt);
    let req = b.clause(ClauseKind::Requires(and));
    let m = b.void_method("m", vec![], vec![given, req], vec![]);
    let prog = b.class("BadType", vec![f, m]);
    assert_eq!(codes_of(&prog), vec!["E0302"]);
}

#[test]
fn ir_star_of_resources_is_fine() {
    let mut b = B::new();
    let f = b.field(TypeKind::Int, "x");
    let p = b.param(TypeKind::Frac, "p");
    let given = b.clause(ClauseKind::Given(p));
    let (x1, one, x2, pp) = (b.name("x"), b.int(1), b.name("x"), b.name("p"));
    let perm1 = b.perm(x1, one);
    let perm2 = b.perm(x2, pp);
    let star = b.bin(BinaryOp::Star, perm1, perm2);
    let (p2, zero) = (b.name("p"), b.int(0));
    let gt = b.bin(BinaryOp::Gt, p2, zero);
    let star2 = b.bin(BinaryOp::Star, star, gt);
    let req = b.clause(ClauseKind::Requires(star2));
    let m = b.void_method("m", vec![], vec![given, req], vec![]);
    let prog = b.class("Good", vec![f, m]);
    assert_eq!(codes_of(&prog), Vec::<String>::new());
}

#[test]
fn ir_unknown_names_all_reported() {
    let mut b = B::new();
    let (y, z) = (b.name("y"), b.name("z"));
    let s1 = b.assign(y, z);
    let m = b.void_method("m", vec![], vec![], vec![s1]);
    let prog = b.class("C", vec![m]);
    assert_eq!(codes_of(&prog), vec!["E0201", "E0201"]);
}

#[test]
fn ir_write_to_outer_local_and_iterator_in_par() {
    // void m() { int x; par (int tid = 0 .. 2) { x = 1; tid = 0; int y; y = 2; } x = 3; }
    let mut b = B::new();
    let decl = b.local(TypeKind::Int, "x", None);
    let (x, one) = (b.name("x"), b.int(1));
    let w1 = b.assign(x, one);
    let (t, zero) = (b.name("tid"), b.int(0));
    let w2 = b.assign(t, zero);
    let decl_y = b.local(TypeKind::Int, "y", None);
    let (y, two) = (b.name("y"), b.int(2));
    let w3 = b.assign(y, two);
    let (lo, hi) = (b.int(0), b.int(2));
    let par = b.par(None, vec![("tid", lo, hi)], vec![w1, w2, decl_y, w3]);
    let (x2, three) = (b.name("x"), b.int(3));
    let after = b.assign(x2, three);
    let m = b.void_method("m", vec![], vec![], vec![decl, par, after]);
    let prog = b.class("C", vec![m]);
    assert_eq!(codes_of(&prog), vec!["E0214", "E0213"]);
}

#[test]
fn ir_parameter_written_in_par() {
    let mut b = B::new();
    let n = b.param(TypeKind::Int, "n");
    let (t, one) = (b.name("n"), b.int(1));
    let w = b.assign(t, one);
    let par = b.par(Some("P"), vec![], vec![w]);
    let m = b.void_method("m", vec![n], vec![], vec![par]);
    let prog = b.class("C", vec![m]);
    assert_eq!(codes_of(&prog), vec!["E0214"]);
}

#[test]
fn ir_barrier_label_must_name_enclosing_par() {
    let mut b = B::new();
    let mk_barrier = |b: &mut B, l: &str| {
        let label = b.id(l);
        let body = b.block(vec![]);
        b.s(StmtKind::Barrier(Barrier {
            invariants: vec![],
            label,
            contract: Contract::default(),
            body,
            style: BarrierStyle::ClausesInside,
        }))
    };
    let good = mk_barrier(&mut b, "P");
    let bad = mk_barrier(&mut b, "Q");
    let (lo, hi) = (b.int(0), b.int(4));
    let par = b.par(Some("P"), vec![("t", lo, hi)], vec![good, bad]);
    let outside = mk_barrier(&mut b, "P");
    let m = b.void_method("m", vec![], vec![], vec![par, outside]);
    let prog = b.class("C", vec![m]);
    assert_eq!(codes_of(&prog), vec!["E0205", "E0205"]);
}

#[test]
fn ir_seq_element_assignment() {
    let mut b = B::new();
    let f = b.field(
        TypeKind::Seq(Box::new(Type {
            kind: TypeKind::Int,
            span: Span::default(),
        })),
        "x",
    );
    let (x, zero) = (b.name("x"), b.int(0));
    let idx = b.e(ExprKind::Index {
        base: Box::new(x),
        index: Box::new(zero),
    });
    let three = b.int(3);
    let w = b.assign(idx, three);
    let m = b.void_method("test", vec![], vec![], vec![w]);
    let prog = b.class("Test", vec![f, m]);
    assert_eq!(codes_of(&prog), vec!["E0304"]);
}

#[test]
fn ir_gpuopt_checks() {
    let mut b = B::new();
    // gpuopt on a field
    let mut f = b.field(TypeKind::Int, "x");
    let one = b.int(1);
    let o = b.gpuopt(GpuOptKind::Tile {
        layout: TileLayout::Inter,
        size: one,
    });
    f.gpuopts.push(o);
    // matrix_lin on a non-matrix parameter, glob_to_reg on a non-array, tile on a non-par body,
    // a zero factor, duplicated tile.
    let a = b.param(TypeKind::Int, "a");
    let (mi, r, c) = (b.id("a"), b.int(2), b.int(2));
    let ml = b.gpuopt(GpuOptKind::MatrixLin {
        matrix: mi,
        order: MatrixOrder::RowMajor,
        rows: r,
        cols: c,
    });
    let gi = b.id("a");
    let g = b.gpuopt(GpuOptKind::GlobToReg {
        array: gi,
        rows: vec![],
        indices: vec![],
    });
    let zero = b.int(0);
    let t1 = b.gpuopt(GpuOptKind::Tile {
        layout: TileLayout::Intra,
        size: zero,
    });
    let four = b.int(4);
    let t2 = b.gpuopt(GpuOptKind::Tile {
        layout: TileLayout::Intra,
        size: four,
    });
    let body = MethodBody::Block(b.block(vec![]));
    let m = b.method(
        vec![],
        Some(TypeKind::Void),
        "m",
        vec![a],
        vec![],
        vec![ml, g, t1, t2],
        body,
    );
    let prog = b.class("C", vec![f, m]);
    let mut codes = codes_of(&prog);
    codes.sort();
    assert_eq!(
        codes,
        vec!["E0401", "E0403", "E0405", "E0407", "E0408", "E0409", "E0409"]
    );
}

#[test]
fn ir_loop_unroll_placement_and_variable() {
    // int i = 0; gpuopt loop_unroll j 2; while (i < 10) { i = i + 1; } gpuopt loop_unroll i 2;
    let mut b = B::new();
    let zero = b.int(0);
    let decl = b.local(TypeKind::Int, "i", Some(zero));
    let mk_loop = |b: &mut B| {
        let (i, ten) = (b.name("i"), b.int(10));
        let cond = b.bin(BinaryOp::Lt, i, ten);
        let (i2, i3, one) = (b.name("i"), b.name("i"), b.int(1));
        let add = b.bin(BinaryOp::Add, i3, one);
        let upd = b.assign(i2, add);
        let body = b.block(vec![upd]);
        let body = b.s(StmtKind::Block(body));
        b.s(StmtKind::While {
            contract: Contract::default(),
            cond,
            body: Box::new(body),
        })
    };
    let (j, two) = (b.id("j"), b.int(2));
    let wrong_var = b.gpuopt(GpuOptKind::LoopUnroll {
        var: j,
        factor: two,
    });
    let wrong_var = b.s(StmtKind::GpuOpt(wrong_var));
    let loop1 = mk_loop(&mut b);
    let (i, two) = (b.id("i"), b.int(2));
    let good = b.gpuopt(GpuOptKind::LoopUnroll {
        var: i,
        factor: two,
    });
    let good = b.s(StmtKind::GpuOpt(good));
    let (i, two) = (b.id("i"), b.int(2));
    let dup = b.gpuopt(GpuOptKind::LoopUnroll {
        var: i,
        factor: two,
    });
    let dup = b.s(StmtKind::GpuOpt(dup));
    let loop2 = mk_loop(&mut b);
    let (i, two) = (b.id("i"), b.int(2));
    let dangling = b.gpuopt(GpuOptKind::LoopUnroll {
        var: i,
        factor: two,
    });
    let dangling = b.s(StmtKind::GpuOpt(dangling));
    let m = b.void_method(
        "m",
        vec![],
        vec![],
        vec![decl, wrong_var, loop1, good, dup, loop2, dangling],
    );
    let prog = b.class("C", vec![m]);
    assert_eq!(codes_of(&prog), vec!["E0404", "E0403", "E0402"]);
}

#[test]
fn ir_tables_for_later_stages() {
    let mut b = B::new();
    let f = b.field(int_array(), "a");
    let xs = b.param(TypeKind::Int, "n");
    let (n, one) = (b.name("n"), b.int(1));
    let body = b.bin(BinaryOp::Add, n, one);
    let func = b.method(
        vec![Modifier::Pure],
        Some(TypeKind::Int),
        "inc",
        vec![xs],
        vec![],
        vec![],
        MethodBody::Expr(body),
    );
    let pred_body = b.e(ExprKind::BoolLit(true));
    let pred = b.method(
        vec![],
        Some(TypeKind::Resource),
        "state",
        vec![],
        vec![],
        vec![],
        MethodBody::Expr(pred_body),
    );
    let lemma = b.method(
        vec![],
        Some(TypeKind::Void),
        "lemma",
        vec![],
        vec![],
        vec![],
        MethodBody::Abstract,
    );
    let prog = b.class("C", vec![f, func, pred, lemma]);
    let checked = check(&prog).expect("well-typed");
    let c = &checked.classes()[0];
    assert_eq!(
        c.field("a").map(|f| f.ty.clone()),
        Some(Ty::Array(Box::new(Ty::Int)))
    );
    assert_eq!(
        c.method("inc").map(|m| m.kind),
        Some(MethodKind::PureFunction)
    );
    assert_eq!(
        c.method("state").map(|m| m.kind),
        Some(MethodKind::Predicate)
    );
    assert_eq!(
        c.method("lemma").map(|m| m.kind),
        Some(MethodKind::Abstract)
    );
    assert!(c.constructors.is_empty());
}

#[test]
fn ir_error_renders_with_miette() {
    let mut b = B::new();
    let (y, z) = (b.name("y"), b.int(1));
    let s1 = b.assign(y, z);
    let m = b.void_method("m", vec![], vec![], vec![s1]);
    let prog = b.class("C", vec![m]);
    let errs = check(&prog).unwrap_err();
    let report = miette::Report::new(errs[0].clone());
    assert!(format!("{report:?}").contains("unknown variable `y`"));
}

// ---- PVL programs (need the parser) ---------------------------------------------------------

fn check_src(src: &str) -> Result<Checked, Vec<CheckError>> {
    let parsed = match parse(src) {
        Ok(p) => p,
        Err(e) => panic!("parse error in test program: {e:?}\n{src}"),
    };
    check(&parsed.program)
}

/// The codes of all errors, in source order.
fn codes(src: &str) -> Vec<String> {
    match check_src(src) {
        Ok(c) => c.gpuopt_errors.iter().map(|e| e.code_str()).collect(),
        Err(errs) => errs.iter().map(|e| e.code_str()).collect(),
    }
}

fn ok(src: &str) {
    if let Err(errs) = check_src(src) {
        panic!("unexpected errors: {errs:#?}\n{src}");
    }
}

#[test]
fn pvl_well_typed_programs() {
    ok("class C { int x; int[] a;
        context_everywhere a != null;
        requires Perm(x, 1) ** (\\forall* int i; 0 <= i && i < a.length; Perm(a[i], 1\\2));
        ensures \\result == x + 1;
        int m(int n) { x = n; int y = x + 1; return y; } }");
    ok("pure int len(seq<int> xs) = |xs| == 0 ? 0 : 1 + len(xs.tail);
        ensures len(xs + ys) == len(xs) + len(ys);
        void lemma(seq<int> xs, seq<int> ys) { if (xs.isEmpty) { assert xs + ys == ys; } else { lemma(xs.tail, ys); } }");
    ok(
        "void test() { option<int> x = None; option<int> y = Some(37);
        assert x != y; assert y.get == 37; assert x.getOrElse(21387) == 21387; }",
    );
    ok("class R { void types() { bag<int> B = bag<int>{1, 1, 2}; assert (1 in B) == 2;
        set<int> S = set<int>{1}; assert 1 in S; seq<int> L = seq<int>{1, 2}; assert L[0 .. 1] == seq<int>{1};
        assert (1 :: L) ++ 3 == seq<int>{1, 1, 2, 3}; assert L[0 -> 5][0] == 5; } }");
    ok("class T { given frac p; context_everywhere 1\\5 < p && p < 1\\2; void test() { } }");
    ok(
        "class Box { int cnts; given frac v; requires Perm(this.cnts, v);
        ensures PointsTo(this.cnts, v, \\old(this.cnts)) ** \\result == this.cnts;
        int get() { return this.cnts; } }",
    );
}

#[test]
fn pvl_type_errors() {
    assert_eq!(
        codes("class C { void m() { int x = true; } }"),
        vec!["E0301"]
    );
    assert_eq!(codes("class C { void m() { if (1) { } } }"), vec!["E0301"]);
    assert_eq!(codes("class C { int m() { return true; } }"), vec!["E0301"]);
    assert_eq!(codes("class C { void m() { return 1; } }"), vec!["E0308"]);
    assert_eq!(
        codes("class C { void m(int a) { m(1, 2); } }"),
        vec!["E0303"]
    );
    assert_eq!(
        codes("class C { void m(int a) { m(true); } }"),
        vec!["E0301"]
    );
    assert_eq!(
        codes("class C { void m() { assert 1 + true == 2; } }"),
        vec!["E0302"]
    );
    assert_eq!(
        codes("class C { void m() { int x; assert Perm(x, 1); } }"),
        vec!["E0305"]
    );
}

#[test]
fn pvl_resolution_errors() {
    assert_eq!(
        codes("class C { void m() { int x; int x; } }"),
        vec!["E0210"]
    );
    assert_eq!(codes("class C { int f; int f; }"), vec!["E0210"]);
    assert_eq!(codes("class C { void m() { D d; } }"), vec!["E0204"]);
    assert_eq!(codes("class C { void m() { n(); } }"), vec!["E0203"]);
    assert_eq!(
        codes("class C { int f; void m(C c) { c.g = 1; } }"),
        vec!["E0202"]
    );
    assert_eq!(
        codes("class C { ensures \\result == 1; void m() { } }"),
        vec!["E0212"]
    );
    assert_eq!(
        codes("class C { requires \\result == 1; int m() { return 1; } }"),
        vec!["E0212"]
    );
    assert_eq!(
        codes("class C { int f() { return 1; } pure int g() { return f(); } }"),
        vec!["E0215"]
    );
    assert_eq!(
        codes("class C { int f() { return 1; } requires f() == 1; void g() { } }"),
        vec!["E0215"]
    );
}

#[test]
fn pvl_ghost_arguments() {
    ok(
        "class C { given int g; yields int y; ensures y == g; void m() { y = g; }
        void n() { ghost int r; m() with { g = 1; } then { r = y; }; } }",
    );
    assert_eq!(
        codes("class C { given int g; void m() { } void n() { m() with { h = 1; }; } }"),
        vec!["E0206"]
    );
}

#[test]
fn pvl_gpuopt() {
    ok("class C {
        gpuopt glob_to_reg a tid tid + 1;
        gpuopt tile inter 4;
        void k(int N, int[] a) { par (int tid = 0 .. N) { a[tid] = 0; } }
        void l(int n) { int i = 0; gpuopt loop_unroll i 2; while (i < n) { i = i + 1; } }
        void f(int[] a) { gpuopt fuse 2 32; par (int t = 0 .. 4) { } par (int t = 0 .. 4) { } } }");
    assert_eq!(
        codes("class C { void f() { gpuopt fuse 3; par (int t = 0 .. 4) { } par (int t = 0 .. 4) { } } }"),
        vec!["E0406"]
    );
    assert_eq!(
        codes("class C { void l(int n) { int i = 0; gpuopt loop_unroll i 2; i = 1; } }"),
        vec!["E0402"]
    );
    assert_eq!(
        codes("class C { gpuopt matrix_lin m R 4 4; void k(int[] m) { } }"),
        vec!["E0407"]
    );
}

#[test]
fn pvl_corpus_style_errors() {
    // basic__pure, basic__seq-immutable, parallel__ParIterWrite in miniature.
    assert_eq!(
        codes("class T { seq<int> x; void t() { x[0] = 3; } }"),
        vec!["E0304"]
    );
    assert_eq!(
        codes("class C { int f(); void m() { int x; par (int tid = 0 .. 2) { x = f(); } } }"),
        vec!["E0214"]
    );
    assert_eq!(
        codes("class C { void m() { int x; parallel { par { x = 1; } par { x = 2; } } } }"),
        vec!["E0214", "E0214"]
    );
}

#[test]
fn pvl_then_names_a_yields_parameter() {
    assert_eq!(
        codes(
            "class C { yields int y; void m() { } void n() { ghost int r; m() then { r = z; }; } }"
        ),
        vec!["E0206"]
    );
    assert_eq!(
        codes(
            "class C { yields int y; void m() { } void n() { ghost boolean r; m() then { r = y; }; } }"
        ),
        vec!["E0301"]
    );
}

#[test]
fn pvl_older_forms() {
    // 1.x: clauses before a class speak about its fields; `barrier(L; inv)`; `sequential`.
    ok("lock_invariant Perm(f, write) ** f > 10; class Test { int f; }");
    assert_eq!(
        codes("lock_invariant Perm(g, write); class Test { int f; }"),
        vec!["E0201"]
    );
    ok("class R { int x; context Perm(x, 1); void v(int N) { x = 0;
        invariant inv(Perm(x, 1\\2)) { par main(int i = 0 .. N) {
          barrier(main; inv) { context 0 <= i && i < N; } } } } }");
    assert_eq!(
        codes("class R { void v(int N) { par main(int i = 0 .. N) { barrier(main; nope) { } } } }"),
        vec!["E0207"]
    );
    ok("class T { void main() { int[10] x = new int[10];
        sequential { par fst(int i = 0 .. 10) context Perm(x[i], 1); { x[i] = 0; }
                     par snd(int j = 0 .. 10) context Perm(x[j], 1); { x[j] = 1; } } } }");
}

// ---- ghost code without real effects (effects.rs) -------------------------------------------

#[test]
fn ghost_code_may_use_ghost_state_and_fresh_ghost_memory() {
    let ok = [
        // Ghost locals, a ghost block's own locals, a ghost loop's counter.
        "class C { void m() { ghost int g = 0; ghost g = g + 1; ghost { int t = g; t++; g = t; } \
         ghost for (int i = 0; i < 2; i++) { g = i; } } }",
        // Arrays and objects allocated by ghost code, written at every level they allocated.
        "class C { int f; void m() { ghost int[][] x = new int[2][2]; ghost x[1][0] = 3; \
         ghost int[] y; ghost y = new int[1]; ghost y[0] = 1; ghost C o = new C(); ghost o.f = 2; } }",
        // A row replaced by another fresh array stays fresh.
        "class C { void m() { ghost int[][] x = new int[2][2]; ghost x[0] = new int[3]; ghost x[0][2] = 1; } }",
        // Lemmas: bodiless, or only asserting and calling lemmas, recursively.
        "class C { void l(int n); void k(int n) { if (n > 0) { k(n - 1); } l(n); assert true; } \
         void m() { ghost k(3); ghost l(1); } }",
        // A constructor writing its own object's fields has no effect for its caller.
        "class C { int f; C(int v) { f = v; this.f = v + 1; } void m() { ghost C o = new C(1); } }",
        // A method writing only memory it allocated itself.
        "class C { int[] fresh() { int[] b = new int[2]; b[0] = 1; return b; } \
         void m() { ghost int[] c = fresh(); } }",
        // `given`/`yields` parameters are ghost variables.
        "class C { yields int y; given int g; void m() { ghost y = g; } }",
    ];
    for src in ok {
        assert_eq!(codes(src), Vec::<String>::new(), "{src}");
    }
}

#[test]
fn ghost_code_with_a_real_effect_is_rejected() {
    let cases = [
        ("class C { void m(int p) { ghost p = 1; } }", "E0218"),
        ("class C { void m() { int r = 0; ghost r++; } }", "E0218"),
        (
            "class C { yields int y; void f() { y = 1; } void m() { int r; f() then { r = y; }; } }",
            "E0218",
        ),
        // A ghost alias of memory ghost code did not allocate.
        ("class C { void m(int[] a) { ghost int[] b = a; ghost b[0] = 1; } }", "E0219"),
        // Fresh, but one level only: the object's field may hold what its constructor got.
        (
            "class C { int[] f; C(int[] a) { f = a; } void m(int[] a) { ghost C o = new C(a); ghost o.f[0] = 1; } }",
            "E0219",
        ),
        // A constructor writing another object's field has an effect.
        (
            "class C { int f; C(C other) { other.f = 1; } void m(C c) { ghost C o = new C(c); } }",
            "E0220",
        ),
        // A method that returns a fresh array, but also writes its parameter's cell.
        (
            "class C { int[] g(int[] a) { a[0] = 1; return new int[1]; } void m(int[] a) { ghost int[] c = g(a); } }",
            "E0220",
        ),
        // Mutual recursion: the effect is found through the cycle.
        (
            "class C { void p(int[] a, int n) { if (n > 0) { q(a, n - 1); } } \
             void q(int[] a, int n) { a[0] = n; p(a, n); } void m(int[] a) { ghost p(a, 2); } }",
            "E0220",
        ),
        ("class C { void m() { ghost lock this; } }", "E0221"),
    ];
    for (src, code) in cases {
        assert!(
            codes(src).contains(&code.to_string()),
            "{src}: {:?}",
            codes(src)
        );
    }
}

#[test]
fn triggers_that_cannot_be_patterns_are_warned_about() {
    let checked = check_src(
        "requires |a| == n;\n\
         requires (\\forall int i, int j; 0 <= i && i < j && j < n; {: a[i] :} <= a[j]);\n\
         requires (\\forall int i; 0 <= i && i < n; {: i :} >= 0);\n\
         requires (\\forall int i, int j; 0 <= i && i < j && j < n; {:1: a[i] :} <= {:1: a[j] :});\n\
         requires (\\forall int i; 0 <= i && i < n; (\\forall int j; {: a[j] :} >= a[i]));\n\
         void m(seq<int> a, int n);",
    )
    .expect("checks");
    let reasons: Vec<String> = checked
        .warnings
        .iter()
        .filter_map(|w| match w {
            CheckWarning::UnusableTrigger { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    // The multi-pattern `{:1: a[i] :}`, `{:1: a[j] :}` mentions both binders; the nested
    // quantifier's trigger is its own, over its one binder `j`.
    assert_eq!(
        reasons,
        [
            "it does not mention the binder `j`",
            "it is the binder `i` alone"
        ]
    );
}

#[test]
fn overloads_are_told_apart_by_their_parameters() {
    // By number and by type; a function and a method may share a name.
    let src = "class C {
        pure int pick(int x) = 1;
        pure int pick(boolean b) = 2;
        pure int pick(int x, int y) = 3;
        int pick(seq<int> xs) { return 4; }
        void m(C c) { int a = pick(1); int b = pick(true); int d = c.pick(1, 2); int e = this.pick(seq<int>{1}); }
    }";
    let checked = check_src(src).unwrap_or_else(|e| panic!("{e:#?}"));
    let mut declared: Vec<&str> = checked
        .overloads
        .declarations
        .values()
        .map(String::as_str)
        .collect();
    declared.sort();
    assert_eq!(
        declared,
        [
            "pick(boolean)",
            "pick(int)",
            "pick(int, int)",
            "pick(seq<int>)"
        ]
    );
    // Each call reaches its own overload, found by where its name stands.
    let chosen = |call: &str| {
        let at = src.find(call).unwrap() as u32 + call.find("pick").unwrap() as u32;
        let (_, declaration) = (checked.overloads.calls.iter())
            .find(|(span, _)| span.start == at)
            .unwrap_or_else(|| panic!("no resolution for {call}"));
        checked.overloads.declarations[declaration].clone()
    };
    assert_eq!(chosen("pick(1);"), "pick(int)");
    assert_eq!(chosen("pick(true)"), "pick(boolean)");
    assert_eq!(chosen("c.pick(1, 2)"), "pick(int, int)");
    assert_eq!(chosen("this.pick(seq"), "pick(seq<int>)");
    // An `int` fits an `int` and a `frac` parameter: the exact one is meant.
    ok("class C { pure int f(int x) = 1; pure int f(frac x) = 2; void m() { assert f(1) == 1; } }");
    // Nothing overloaded, nothing recorded.
    let plain =
        check_src("class C { pure int f(int x) = 1; void m() { assert f(1) == 1; } }").unwrap();
    assert!(plain.overloads.declarations.is_empty() && plain.overloads.calls.is_empty());
}

#[test]
fn routines_of_two_classes_are_named_apart_for_the_checker() {
    let src = "pure int size() = 0;
        class A { static pure int f() = 1; pure int size() = 1; void run() { } void m() { assert A.f() == B.f() - 1; } }
        class B { static pure int f() = 2; static pure int f(boolean b) = 3; void run() { } int g() { return f(); } }";
    let parsed = parse(src).unwrap();
    let apart = crate::check::name_routines_apart(&parsed.program).expect("shared names");
    let text = crate::syntax::print(&apart, &Default::default());
    // A class's routine is named with its class (and its parameters where its class
    // overloads the name); the top level's keeps its name; a static call through a class name
    // loses the class, which the name now carries.
    assert!(text.contains("static pure int A.f()"), "{text}");
    assert!(text.contains("static pure int B.f()()"), "{text}");
    assert!(
        text.contains("static pure int B.f(boolean)(boolean b)"),
        "{text}"
    );
    assert!(text.contains("pure int A.size()"), "{text}");
    assert!(text.contains("pure int size() = 0"), "{text}");
    assert!(text.contains("assert A.f() == B.f()() - 1"), "{text}");
    assert!(text.contains("return B.f()();"), "{text}");
    // `run` is found by class (what `fork` starts), whatever other classes declare.
    assert_eq!(text.matches("void run()").count(), 2, "{text}");
    // The other stages keep class-scoped names: only the overloads are renamed for them.
    let overloads = crate::check::resolve_overloads(&parsed.program).expect("overloaded");
    let text = crate::syntax::print(&overloads, &Default::default());
    assert!(text.contains("static pure int f() = 1"), "{text}");
    assert!(text.contains("assert A.f() == B.f()() - 1"), "{text}");
    // A call of a shared name whose resolution went unrecorded takes no declaration's name
    // (the checker then refuses it), never the one that kept the bare name.
    let mut checked = check_src(src).unwrap();
    let first_f_call = checked
        .overloads
        .calls
        .keys()
        .copied()
        .filter(|k| &src[k.start as usize..k.end as usize] == "f")
        .min_by_key(|k| k.start)
        .unwrap();
    checked.overloads.calls.remove(&first_f_call);
    let text = crate::syntax::print(
        &checked.overloads.apply_qualified(&parsed.program).unwrap(),
        &Default::default(),
    );
    assert!(
        text.contains("assert f(unresolved)() == B.f()() - 1"),
        "{text}"
    );
    // Nothing shared, nothing renamed (and the checker is not run).
    let plain = parse("class A { pure int f() = 1; } class B { pure int g() = 2; }").unwrap();
    assert!(crate::check::name_routines_apart(&plain.program).is_none());
}

#[test]
fn overload_errors() {
    // The same parameters twice is a duplicate, whatever the result type.
    assert_eq!(
        codes("class C { pure int f(int x) = 1; pure boolean f(int y) = true; }"),
        vec!["E0210"]
    );
    // No overload takes these arguments.
    assert_eq!(
        codes("class C { pure int f(int x) = 1; pure int f(boolean b) = 2; void m() { assert f(seq<int>{}) == 1; } }"),
        vec!["E0311"]
    );
    // Two fit, neither exactly.
    assert_eq!(
        codes("class C { pure int f(frac x) = 1; pure int f(rational x) = 2; void m() { assert f(1) == 1; } }"),
        vec!["E0312"]
    );
    // An argument that is already wrong gives one error, not a second about overloads.
    assert_eq!(
        codes("class C { pure int f(int x) = 1; pure int f(boolean b) = 2; void m() { assert f(y) == 1; } }"),
        vec!["E0201"]
    );
}

#[test]
fn overloads_apply_renames_declarations_and_calls() {
    let src = "pure int twice(int x) = 2 * x;
        pure int twice(int x, int y) = twice(x) + twice(y);
        void m() { assert twice(1, 2) == 6; }";
    let parsed = parse(src).unwrap();
    let renamed = crate::check::resolve_overloads(&parsed.program).expect("overloaded");
    let text = crate::syntax::print(&renamed, &Default::default());
    assert!(text.contains("pure int twice(int)(int x)"), "{text}");
    assert!(text.contains("twice(int)(x) + twice(int)(y)"), "{text}");
    assert!(text.contains("twice(int, int)(1, 2)"), "{text}");
    // A program without overloads is left alone (and the checker is not even run).
    let plain = parse("pure int f(int x) = x;").unwrap();
    assert!(crate::check::resolve_overloads(&plain.program).is_none());
}
