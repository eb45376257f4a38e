//! The kernels on the CPU (their own functions, against the closed forms their postconditions
//! state) and, with the `opencl` feature, through their launchers on every OpenCL device
//! against the CPU (pocl in CI, where `ALPINIST_REQUIRE_OPENCL=1` makes a missing platform a
//! failure).

use rust_kernels::*;

/// Inputs within the kernels' preconditions, different at every size.
fn cells(n: usize, salt: i32) -> Vec<i32> {
    (0..n as i32)
        .map(|i| (i * 37 + salt) % 2001 - 1000)
        .collect()
}

#[test]
fn every_kernel_was_verified_and_optimised_when_it_compiled() {
    if std::env::var_os("ALPINIST_VERIFY").is_none() {
        for verdict in [
            saxpy::VERIFIED,
            count_up::VERIFIED,
            negate::VERIFIED,
            pair_sums::VERIFIED,
            scan::kogge_stone::VERIFIED,
        ] {
            assert_eq!(verdict, alpinist::KernelVerdict::Verified);
        }
        assert!(!count_up::PVL.contains("gpuopt"), "{}", count_up::PVL);
        assert!(negate::PVL.contains("(n + 7) / 8"), "{}", negate::PVL);
    }
    for source in [
        saxpy::OPENCL_SOURCE,
        count_up::OPENCL_SOURCE,
        negate::OPENCL_SOURCE,
        pair_sums::OPENCL_SOURCE,
        scan::kogge_stone::OPENCL_SOURCE,
    ] {
        assert!(source.expect("generated").contains("__kernel void"));
    }
    // `#[local]` arrays are work-group local memory, zeroed by the threads first.
    for source in [pair_sums::OPENCL_SOURCE, scan::kogge_stone::OPENCL_SOURCE] {
        let source = source.expect("generated");
        assert!(source.contains("__local int* t"), "{source}");
        assert!(source.contains("t[alp_k] = 0;"), "{source}");
    }
}

#[test]
fn the_cpu_functions_compute_what_their_postconditions_say() {
    for n in [9, 16, 100] {
        let x = cells(n, 3);
        let y0 = cells(n, 11);
        let mut y = y0.clone();
        saxpy(n, &x, &mut y);
        assert!((0..n).all(|i| y[i] == 2 * x[i] + y0[i]));

        let c0: Vec<i32> = (0..n as i32).map(|i| i % 4096).collect();
        let mut c = c0.clone();
        count_up(n, 5, 7, &mut c);
        assert!((0..n).all(|i| c[i] == c0[i] + 35));

        let mut a = x.clone();
        negate(n, &mut a);
        assert!((0..n).all(|i| a[i] == -x[i]));

        let mut s = vec![0; n];
        pair_sums(n, &x, &mut s);
        assert!((0..n - 1).all(|i| s[i] == x[i] + x[i + 1]));
        assert_eq!(s[n - 1], 2 * x[n - 1]);
    }
}

/// Inclusive prefix sums of `cells` in `0 ..= 1000`, as `kogge_stone`'s postcondition states.
fn prefix_sums(cells: &[i32]) -> Vec<i32> {
    cells
        .iter()
        .scan(0, |sum, v| {
            *sum += v;
            Some(*sum)
        })
        .collect()
}

/// Scan inputs within `kogge_stone`'s precondition (cells in `0 ..= 1000`).
fn scan_input(n: usize, salt: i32) -> Vec<i32> {
    cells(n, salt).iter().map(|v| v.abs()).collect()
}

#[test]
fn the_rust_kogge_stone_computes_prefix_sums_at_every_size() {
    // Powers of two and others (Kogge-Stone needs none), up to the precondition's 1024.
    for n in [1, 2, 3, 7, 16, 100, 255, 1024] {
        let input = scan_input(n, 7);
        let mut x = input.clone();
        scan::kogge_stone(n, &mut x);
        assert_eq!(x, prefix_sums(&input), "n = {n}");
    }
    assert!(std::panic::catch_unwind(|| scan::kogge_stone(1025, &mut [0; 1025])).is_err());
}

#[test]
fn the_cpu_functions_refuse_sizes_their_proofs_do_not_cover() {
    // `negate` was verified for 8 < n only (its tile size).
    assert!(std::panic::catch_unwind(|| negate(8, &mut [0; 8])).is_err());
}

#[test]
fn a_kernel_included_from_pvl_was_verified_optimised_and_runs_on_the_cpu() {
    if std::env::var_os("ALPINIST_VERIFY").is_none() {
        assert_eq!(
            from_pvl::repeat::VERIFIED,
            alpinist::KernelVerdict::Verified
        );
        // `gpuopt loop_unroll i 3;` was applied: the verified text has no request left.
        assert!(
            !from_pvl::repeat::PVL.contains("gpuopt"),
            "{}",
            from_pvl::repeat::PVL
        );
    }
    assert!(from_pvl::repeat::OPENCL_SOURCE
        .expect("generated")
        .contains("__kernel void"));
    for n in [1, 37, 100] {
        let x: Vec<i32> = cells(n, 7).iter().map(|v| v % 1000).collect();
        let y0: Vec<i32> = cells(n, 2).iter().map(|v| v % 1000).collect();
        let mut y = y0.clone();
        from_pvl::repeat(n as i32, 5, &x, &mut y);
        assert!((0..n).all(|i| y[i] == y0[i] + 5 * x[i]), "n = {n}");
    }
}

#[test]
fn a_kernel_included_from_pvl_refuses_inputs_outside_its_precondition() {
    // `2 < n` and `|x[k]| <= 1000` are in the precondition: the proof covers no other run.
    let outside = std::panic::catch_unwind(|| from_pvl::repeat(2, 2, &[1, 2], &mut [0, 0]));
    assert!(outside.is_err());
    let outside = std::panic::catch_unwind(|| from_pvl::repeat(1, 3, &[1001], &mut [0]));
    assert!(outside.is_err());
    // A length that disagrees with `N`.
    let outside = std::panic::catch_unwind(|| from_pvl::repeat(3, 3, &[1, 2], &mut [0, 0]));
    assert!(outside.is_err());
}

/// The devices of the first platform; none where there is no platform, unless
/// `ALPINIST_REQUIRE_OPENCL=1` (CI), which makes that a failure.
#[cfg(feature = "opencl")]
fn devices() -> Vec<alpinist::opencl::platform::DeviceInfo> {
    alpinist::opencl::platform::select(None).unwrap_or_else(|e| {
        assert_ne!(
            std::env::var("ALPINIST_REQUIRE_OPENCL").as_deref(),
            Ok("1"),
            "no OpenCL device: {e}"
        );
        Vec::new()
    })
}

#[cfg(feature = "opencl")]
#[test]
fn the_launchers_compute_what_the_cpu_functions_compute_on_every_device() {
    let devices = devices();
    let n = 100;
    let x = cells(n, 5);
    let y0 = cells(n, 17);
    for device in &devices {
        let (mut on_cpu, mut on_device) = (y0.clone(), y0.clone());
        saxpy(n, &x, &mut on_cpu);
        saxpy::launch(device, n, &x, &mut on_device).expect("saxpy runs");
        assert_eq!(on_device, on_cpu);

        let c0: Vec<i32> = (0..n as i32).map(|i| i % 4096).collect();
        let (mut on_cpu, mut on_device) = (c0.clone(), c0.clone());
        count_up(n, 6, 3, &mut on_cpu);
        count_up::launch(device, n, 6, 3, &mut on_device).expect("count_up runs");
        assert_eq!(on_device, on_cpu);

        let (mut on_cpu, mut on_device) = (x.clone(), x.clone());
        negate(n, &mut on_cpu);
        negate::launch(device, n, &mut on_device).expect("negate runs");
        assert_eq!(on_device, on_cpu);

        let (mut on_cpu, mut on_device) = (vec![0; n], vec![0; n]);
        pair_sums(n, &x, &mut on_cpu);
        pair_sums::launch(device, n, &x, &mut on_device).expect("pair_sums runs");
        assert_eq!(on_device, on_cpu);

        let x: Vec<i32> = x.iter().map(|v| v % 1000).collect();
        let y: Vec<i32> = y0.iter().map(|v| v % 1000).collect();
        let (mut on_cpu, mut on_device) = (y.clone(), y.clone());
        from_pvl::repeat(n as i32, 7, &x, &mut on_cpu);
        from_pvl::repeat::launch(device, n as i32, 7, &x, &mut on_device).expect("repeat runs");
        assert_eq!(on_device, on_cpu);
        // Outside the precondition: an error, not a run.
        assert!(from_pvl::repeat::launch(device, 1, 1, &[0], &mut [0]).is_err());

        // The scan's ghost input sequence is not a parameter of the launcher either.
        for n in [1, 64, 100, 1024] {
            let input = scan_input(n, 3);
            let mut on_device = input.clone();
            scan::kogge_stone::launch(device, n, &mut on_device).expect("kogge_stone runs");
            assert_eq!(on_device, prefix_sums(&input), "n = {n}");
        }
    }
}

/// A device buffer holding `cells`, and its contents read back.
#[cfg(feature = "opencl")]
mod buffers {
    use alpinist::opencl::ocl::{Buffer, Queue};

    pub fn of(queue: &Queue, cells: &[i32]) -> Buffer<i32> {
        Buffer::<i32>::builder()
            .queue(queue.clone())
            .len(cells.len())
            .copy_host_slice(cells)
            .build()
            .expect("a buffer")
    }

    pub fn read(buffer: &Buffer<i32>) -> Vec<i32> {
        let mut host = vec![0; buffer.len()];
        buffer.read(&mut host).enq().expect("the buffer is read");
        host
    }
}

/// `OnDevice`: compiled once per queue, launched on buffers that stay on the device between
/// launches (two saxpy steps on the same `y`), with the CPU function's size checks.
#[cfg(feature = "opencl")]
#[test]
fn on_device_launchers_keep_the_arrays_on_the_device() {
    let devices = devices();
    let n = 100;
    // A quarter of the range the precondition allows: two steps stay within it.
    let x: Vec<i32> = cells(n, 5).iter().map(|v| v / 4).collect();
    let y0: Vec<i32> = cells(n, 17).iter().map(|v| v / 4).collect();
    for device in &devices {
        let queue = device.queue().expect("a queue");
        let step = saxpy::OnDevice::new(&queue).expect("saxpy compiles");
        let (xs, ys) = (buffers::of(&queue, &x), buffers::of(&queue, &y0));
        step.enqueue(n, &xs, &ys).expect("saxpy runs");
        let mut on_cpu = y0.clone();
        saxpy(n, &x, &mut on_cpu);
        assert_eq!(buffers::read(&ys), on_cpu);
        step.enqueue(n, &xs, &ys).expect("saxpy runs again");
        let on_cpu_again = on_cpu.clone();
        saxpy(n, &x, &mut on_cpu);
        assert_ne!(on_cpu, on_cpu_again);
        assert_eq!(buffers::read(&ys), on_cpu);

        // A barrier: the par block runs as one work-group.
        let scan = scan::kogge_stone::OnDevice::new(&queue).expect("kogge_stone compiles");
        for n in [1, 64, 100] {
            let input = scan_input(n, 3);
            let cells = buffers::of(&queue, &input);
            scan.enqueue(n, &cells).expect("kogge_stone runs");
            assert_eq!(buffers::read(&cells), prefix_sums(&input), "n = {n}");
        }

        // Sizes the proof does not cover panic, as the CPU function does.
        let short = buffers::of(&queue, &x[..n - 1]);
        let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            step.enqueue(n, &xs, &short)
        }));
        assert!(refused.is_err(), "a short buffer was launched on");
    }
}
