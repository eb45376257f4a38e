//! Front-end throughput: parse + check + print of a generated 50,000-line PVL file.
//! Target (issue #2): under 250 ms in release mode. Run: `cargo bench -p alpinist-core --bench frontend`.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::time::Duration;

include!("support/generated.rs");

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
    // The reference path alone (pest + tree builder), which reads what the fast path gives
    // up on and reports every syntax error.
    group.bench_function(format!("parse, pest path only, {lines} lines"), |bench| {
        bench.iter(|| alpinist_core::syntax::parse_reference(black_box(&source)).expect("parses"))
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
