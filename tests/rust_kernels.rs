//! Kernels written in Rust through the real `#[alpinist::kernel]` (expanded, and verified by
//! the checker, when this test binary compiles: a kernel that did not verify would not build):
//! the CPU functions compute what the interpreter computes on the kernels' own PVL, and check
//! the sizes their proofs assumed. The same files are the lowering's data-driven tests
//! (`alpinist-core/src/rust/tests.rs`: snapshots, broken twins).

use alpinist::interp::{self, Memory, Value};
use alpinist::KernelVerdict;
use proptest::prelude::*;

// The kernels read as their authors would write them.
#[allow(unused_imports, clippy::manual_clamp)]
mod kernels {
    use alpinist::prelude::*;
    include!("data/rust/ok/vector_add.rs");
    include!("data/rust/ok/repeated_add.rs");
    include!("data/rust/ok/reverse_copy.rs");
    include!("data/rust/ok/sum_below.rs");
    include!("data/rust/ok/clamp.rs");
    include!("data/rust/ok/mirror.rs");
    include!("data/rust/ok/spread_max.rs");
    include!("data/rust/ok/two_halves.rs");
    include!("data/rust/ok/repeated_add_unrolled.rs");
    include!("data/rust/ok/scale_tiled.rs");
}

use kernels::*;

/// Runs a kernel's PVL on the interpreter: the integer arguments, then the arrays; returns the
/// arrays' final contents and the result.
fn interpret(
    pvl: &str,
    method: &str,
    ints: &[i128],
    arrays: &[&[i32]],
) -> (Vec<Vec<i32>>, Option<i128>) {
    let program = alpinist::syntax::parse(pvl)
        .expect("the kernel's PVL parses")
        .program;
    let mut memory = Memory::new();
    let refs: Vec<_> = arrays
        .iter()
        .map(|a| memory.alloc_ints(&a.iter().map(|&v| i128::from(v)).collect::<Vec<_>>()))
        .collect();
    let args: Vec<Value> = ints
        .iter()
        .map(|&i| Value::Int(i))
        .chain(refs.iter().map(|&r| Value::Array(r)))
        .collect();
    let out = interp::run(&program, method, &args, memory, &interp::Limits::default())
        .expect("the interpreter runs the kernel");
    let arrays = refs
        .iter()
        .map(|&r| {
            out.memory
                .ints(r)
                .expect("an int array")
                .into_iter()
                .map(|v| i32::try_from(v).expect("32 bits"))
                .collect()
        })
        .collect();
    let result = out.result.map(|v| match v {
        Value::Int(i) => i,
        other => panic!("an int result, not {other:?}"),
    });
    (arrays, result)
}

#[test]
fn every_kernel_was_verified_when_it_compiled() {
    for verdict in [
        vector_add::VERIFIED,
        repeated_add::VERIFIED,
        reverse_copy::VERIFIED,
        sum_below::VERIFIED,
        clamp::VERIFIED,
        mirror::VERIFIED,
        spread_max::VERIFIED,
        two_halves::total::VERIFIED,
        repeated_add_unrolled::VERIFIED,
        scale_tiled::VERIFIED,
    ] {
        // ALPINIST_VERIFY=0 at build time skips the proofs; CI never sets it.
        if std::env::var_os("ALPINIST_VERIFY").is_none() {
            assert_eq!(verdict, KernelVerdict::Verified);
        }
    }
    assert!(vector_add::PVL.contains("par threads1(int tid = 0 .. n)"));
    // `#[gpuopt(..)]`: PVL is the optimised kernel (without verification, the request).
    if std::env::var_os("ALPINIST_VERIFY").is_none() {
        assert!(!repeated_add_unrolled::PVL.contains("gpuopt"));
        assert!(scale_tiled::PVL.contains("(n + 3) / 4"));
    }
    assert_ne!(vector_add::SOURCE_HASH, clamp::SOURCE_HASH);
}

#[test]
fn a_sequential_kernel_returns_its_result() {
    assert_eq!(sum_below(10), 45);
    assert_eq!(
        interpret(sum_below::PVL, "sum_below", &[10], &[]).1,
        Some(45)
    );
}

#[test]
fn the_cpu_function_refuses_sizes_the_proof_does_not_cover() {
    let a = [1, 2, 3];
    let b = [4, 5, 6];
    let mut c = [0; 2];
    let caught = std::panic::catch_unwind(move || vector_add(3, &a, &b, &mut c));
    let message = *caught
        .expect_err("a length that breaks the precondition panics")
        .downcast::<&str>()
        .expect("a message");
    assert!(message.contains("c.length == n"), "{message}");
    let caught = std::panic::catch_unwind(|| sum_below(1001));
    assert!(caught.is_err(), "sum_below requires n <= 1000");
}

proptest! {
    #![proptest_config(crate::properties::config(64))]

    #[test]
    fn cpu_functions_agree_with_the_interpreter_on_their_pvl(
        cells in proptest::collection::vec((-1000i32..1000, -1000i32..1000), 0..12),
        reps in 0i32..6,
    ) {
        let n = cells.len();
        let a: Vec<i32> = cells.iter().map(|c| c.0).collect();
        let b: Vec<i32> = cells.iter().map(|c| c.1).collect();

        let mut c = vec![0; n];
        vector_add(n, &a, &b, &mut c);
        let (arrays, _) = interpret(vector_add::PVL, "vector_add", &[n as i128], &[&a, &b, &c]);
        prop_assert_eq!(&c, &arrays[2]);
        prop_assert!(c.iter().zip(&a).zip(&b).all(|((c, a), b)| *c == a + b));

        let x: Vec<i32> = a.iter().map(|v| v.abs()).collect();
        let y0: Vec<i32> = b.iter().map(|v| v.abs()).collect();
        let mut y = y0.clone();
        repeated_add(n, reps, &x, &mut y);
        let (arrays, _) =
            interpret(repeated_add::PVL, "repeated_add", &[n as i128, i128::from(reps)], &[&x, &y0]);
        prop_assert_eq!(&y, &arrays[1]);

        let mut r = vec![0; n];
        reverse_copy(n, &a, &mut r);
        let (arrays, _) = interpret(reverse_copy::PVL, "reverse_copy", &[n as i128], &[&a, &r]);
        prop_assert_eq!(&r, &arrays[1]);

        // Barriers: the CPU function is the fissioned par block.
        let mut m = vec![0; n];
        mirror(n, &a, &mut m);
        prop_assert!(m.iter().enumerate().all(|(i, v)| *v == a[n - 1 - i]));
        let (arrays, _) = interpret(mirror::PVL, "mirror", &[n as i128], &[&a, &m]);
        prop_assert_eq!(&m, &arrays[1]);

        let before = x.clone();
        let mut s = x.clone();
        spread_max(n, reps, &mut s);
        let (arrays, _) =
            interpret(spread_max::PVL, "spread_max", &[n as i128, i128::from(reps)], &[&before]);
        prop_assert_eq!(&s, &arrays[0]);
        for (i, v) in s.iter().enumerate() {
            let window = &before[i..(i + reps as usize + 1).min(n)];
            prop_assert_eq!(*v, *window.iter().max().unwrap());
        }

        // A kernel of a module (pure function and lemma in its proof, left out of the Rust).
        let small: Vec<i32> = x.clone();
        let sum = two_halves::total(n, &small);
        prop_assert_eq!(sum, small.iter().sum::<i32>());
        let (_, result) = interpret(two_halves::total::PVL, "total", &[n as i128], &[&small]);
        prop_assert_eq!(result, Some(i128::from(sum)));

        // `#[gpuopt(..)]`: the CPU function runs the kernel as written, `PVL` the optimised one
        // (unrolled three times; tiled by four), and both compute the same.
        let mut y = y0.clone();
        repeated_add_unrolled(n, reps + 3, &x, &mut y);
        let (arrays, _) = interpret(
            repeated_add_unrolled::PVL,
            "repeated_add_unrolled",
            &[n as i128, i128::from(reps + 3)],
            &[&x, &y0],
        );
        prop_assert_eq!(&y, &arrays[1]);
        if n > 4 {
            let mut t = a.clone();
            scale_tiled(n, &mut t);
            let (arrays, _) = interpret(scale_tiled::PVL, "scale_tiled", &[n as i128], &[&a]);
            prop_assert_eq!(&t, &arrays[0]);
            prop_assert!(t.iter().zip(&a).all(|(t, a)| *t == 3 * a));
        }

        if n >= 1 {
            let mut m = a.iter().map(|v| v / 4).collect::<Vec<_>>();
            let before = m.clone();
            clamp(n, &mut m);
            let (arrays, _) = interpret(clamp::PVL, "clamp", &[n as i128], &[&before]);
            prop_assert_eq!(&m, &arrays[0]);

            // The scan of `examples/rust-kernels` (local memory, barriers in a loop, a ghost
            // input sequence that is no parameter of the CPU function).
            let input: Vec<i32> = x.iter().map(|v| v % 1001).collect();
            let mut s = input.clone();
            rust_kernels::scan::kogge_stone(n, &mut s);
            let (arrays, _) =
                interpret(rust_kernels::scan::kogge_stone::PVL, "kogge_stone", &[n as i128], &[&input]);
            prop_assert_eq!(&s, &arrays[0]);
        }
    }
}

/// `OPENCL_SOURCE` is the generated program of the kernel as verified (after its
/// optimisations): one `__kernel` per par block; a sequential kernel is one work-item.
#[test]
fn every_kernel_has_its_opencl_source() {
    for (name, source) in [
        ("vector_add", vector_add::OPENCL_SOURCE),
        (
            "repeated_add_unrolled",
            repeated_add_unrolled::OPENCL_SOURCE,
        ),
        ("scale_tiled", scale_tiled::OPENCL_SOURCE),
        ("mirror", mirror::OPENCL_SOURCE),
        ("sum_below", sum_below::OPENCL_SOURCE),
    ] {
        let source = source.unwrap_or_else(|why| panic!("{name}: {why}"));
        assert!(source.contains("__kernel void"), "{name}: {source}");
    }
    assert!(mirror::OPENCL_SOURCE.unwrap().contains("barrier(CLK_"));
}

/// The launchers run the kernels on every OpenCL device (pocl in CI) with the CPU functions'
/// results: a flat launch, an unrolled and a tiled one (`PVL` is the optimised kernel), a
/// barrier (one work-group), a one-work-item kernel with a result.
#[cfg(feature = "opencl")]
#[test]
fn launchers_compute_what_the_cpu_functions_compute_on_every_device() {
    let devices = match alpinist::opencl::platform::select(None) {
        Ok(devices) => devices,
        Err(e) => {
            assert_ne!(
                std::env::var("ALPINIST_REQUIRE_OPENCL").as_deref(),
                Ok("1"),
                "no OpenCL device: {e}"
            );
            return;
        }
    };
    let a: Vec<i32> = (0..37).map(|i| (i * 7) % 23 - 11).collect();
    let b: Vec<i32> = (0..37).map(|i| (i * 5) % 17).collect();
    let n = a.len();
    for device in &devices {
        let mut on_cpu = vec![0; n];
        vector_add(n, &a, &b, &mut on_cpu);
        let mut on_device = vec![0; n];
        vector_add::launch(device, n, &a, &b, &mut on_device).expect("vector_add runs");
        assert_eq!(on_device, on_cpu);

        let x: Vec<i32> = a.iter().map(|v| v.abs()).collect();
        let mut on_cpu = b.clone();
        repeated_add_unrolled(n, 5, &x, &mut on_cpu);
        let mut on_device = b.clone();
        repeated_add_unrolled::launch(device, n, 5, &x, &mut on_device).expect("unrolled runs");
        assert_eq!(on_device, on_cpu);

        let mut on_cpu = a.clone();
        scale_tiled(n, &mut on_cpu);
        let mut on_device = a.clone();
        scale_tiled::launch(device, n, &mut on_device).expect("tiled runs");
        assert_eq!(on_device, on_cpu);

        let mut on_cpu = vec![0; n];
        mirror(n, &a, &mut on_cpu);
        let mut on_device = vec![0; n];
        mirror::launch(device, n, &a, &mut on_device).expect("mirror runs");
        assert_eq!(on_device, on_cpu);

        assert_eq!(sum_below::launch(device, 10).expect("sum_below runs"), 45);
    }
}
