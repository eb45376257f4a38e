//! One parse + check + print of the benchmark's generated program, for instruction-count
//! profiling (the numbers are repeatable where wall-clock time on a shared machine is not):
//! `cargo build --release -p alpinist-core --example frontend_once` then
//! `valgrind --tool=callgrind target/release/examples/frontend_once [parse|check|print|all]`.

include!("../benches/support/generated.rs");

fn main() {
    let stage = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    let source = generated_program(50_000);
    let parsed = alpinist_core::syntax::parse(&source).expect("parses");
    if stage == "check" || stage == "all" {
        alpinist_core::check::check(&parsed.program).expect("checks");
    }
    if stage == "print" || stage == "all" {
        let printed = alpinist_core::syntax::print(&parsed.program, &parsed.trivia);
        std::hint::black_box(printed);
    }
}
