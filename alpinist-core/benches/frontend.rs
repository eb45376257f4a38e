//! Front-end throughput: parse + check + print of a generated 50,000-line PVL file.
//! Target (issue #2): under 250 ms in release mode. Run: `cargo bench -p alpinist-core --bench frontend`.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::time::Duration;

/// One realistic annotated kernel class (par block with a barrier, a loop with invariants,
/// quantified permissions, comments), about 50 lines, with a unique class name.
fn kernel_class(index: usize) -> String {
    format!(
        r#"// Kernel {index}: neighbour sum with a barrier and a sequential loop.
class Kernel{index} {{
    context_everywhere a != null && b != null && a.length == N && b.length == N;
    context_everywhere N > 0;
    requires (\forall* int i; 0 <= i && i < N; Perm(a[i], write));
    requires (\forall* int i; 0 <= i && i < N; Perm(b[i], 1\2));
    ensures (\forall* int i; 0 <= i && i < N; Perm(a[i], write));
    ensures (\forall* int i; 0 <= i && i < N; Perm(b[i], 1\2));
    ensures (\forall int i; 0 < i && i < N; a[i] == b[i - 1] + b[i]);
    void kernel(int N, int[] a, int[] b) {{
        par step(int tid = 0 .. N)
            requires Perm(a[tid], write) ** Perm(b[tid], 1\2);
            ensures Perm(a[tid], write) ** Perm(b[tid], 1\2);
            ensures tid > 0 ==> a[tid] == b[tid - 1] + b[tid];
        {{
            a[tid] = b[tid]; /* copy first */
            barrier(step) {{
                requires Perm(a[tid], write) ** Perm(b[tid], 1\2);
                ensures Perm(a[tid], write) ** Perm(b[tid], 1\4);
                ensures tid > 0 ==> Perm(b[tid - 1], 1\4);
            }}
            if (tid > 0) {{
                a[tid] = b[tid - 1] + b[tid];
            }}
            barrier(step) {{
                requires Perm(a[tid], write) ** Perm(b[tid], 1\4);
                requires tid > 0 ==> Perm(b[tid - 1], 1\4);
                requires tid > 0 ==> a[tid] == b[tid - 1] + b[tid];
                ensures Perm(a[tid], write) ** Perm(b[tid], 1\2);
                ensures tid > 0 ==> a[tid] == b[tid - 1] + b[tid];
            }}
        }}
    }}

    requires n >= 0;
    ensures \result == n * (n + 1) / 2;
    int triangle(int n) {{
        int s = 0;
        int i = 0;
        gpuopt loop_unroll i 2;
        loop_invariant 0 <= i && i <= n;
        loop_invariant s == i * (i + 1) / 2;
        while (i < n) {{
            i = i + 1;
            s = s + i; // running sum
        }}
        return s;
    }}

    pure int sum(seq<int> xs) = |xs| == 0 ? 0 : head(xs) + sum(tail(xs));
}}

"#
    )
}

fn generated_program(min_lines: usize) -> String {
    let mut text = String::new();
    let mut index = 0;
    while text.lines().count() < min_lines {
        text.push_str(&kernel_class(index));
        index += 1;
    }
    text
}

fn front_end(c: &mut Criterion) {
    let source = generated_program(50_000);
    let lines = source.lines().count();
    let mut group = c.benchmark_group("front end");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    group.bench_function(format!("parse + check + print, {lines} lines"), |bench| {
        bench.iter(|| {
            let parsed = alpinist_core::syntax::parse(black_box(&source)).expect("parses");
            alpinist_core::check::check(&parsed.program).expect("checks");
            black_box(alpinist_core::syntax::print(
                &parsed.program,
                &parsed.trivia,
            ))
        })
    });
    group.bench_function(format!("parse, {lines} lines"), |bench| {
        bench.iter(|| alpinist_core::syntax::parse(black_box(&source)).expect("parses"))
    });
    let parsed = alpinist_core::syntax::parse(&source).expect("parses");
    group.bench_function(format!("check, {lines} lines"), |bench| {
        bench.iter(|| alpinist_core::check::check(black_box(&parsed.program)).expect("checks"))
    });
    group.bench_function(format!("print, {lines} lines"), |bench| {
        bench.iter(|| alpinist_core::syntax::print(black_box(&parsed.program), &parsed.trivia))
    });
    group.finish();
}

criterion_group!(benches, front_end);
criterion_main!(benches);
