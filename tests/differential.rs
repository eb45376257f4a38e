//! `alpinist run` (the differential test) and `emit-opencl --method` end to end. With the
//! `opencl` feature and a platform (pocl in CI) every run also goes through the device; the
//! tests then check that the device lines are there and agree.

use std::process::Output;

use crate::common::{run, stderr, stdout};

/// Whether this build runs kernels on a device: the `opencl` feature and a platform (CI sets
/// `ALPINIST_REQUIRE_OPENCL=1`, where a missing platform is a failure).
fn devices_expected() -> bool {
    if !cfg!(feature = "opencl") {
        return false;
    }
    let available = run(&["devices"]).status.code() == Some(0);
    assert!(
        available || std::env::var("ALPINIST_REQUIRE_OPENCL").as_deref() != Ok("1"),
        "ALPINIST_REQUIRE_OPENCL=1 but no OpenCL platform"
    );
    available
}

/// The result lines (`  original   <where>  same`) of a run's standard output.
fn lines<'o>(out: &'o str, version: &str) -> Vec<&'o str> {
    out.lines()
        .filter(|l| l.trim_start().starts_with(version))
        .collect()
}

/// `alpinist run examples/basic/vector_add.pvl --against TWIN [extra..]`, requiring exit
/// `code`: the output and its stdout.
fn vector_add_against(twin: &str, extra: &[&str], code: i32) -> (Output, String) {
    let mut args = vec!["run", "examples/basic/vector_add.pvl", "--against", twin];
    args.extend_from_slice(extra);
    let output = exits(&args, code);
    let out = stdout(&output);
    (output, out)
}

/// Runs `alpinist args` and requires exit `code`.
fn exits(args: &[&str], code: i32) -> Output {
    let output = run(args);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{}",
        describe(args, &output)
    );
    output
}

fn describe(args: &[&str], output: &Output) -> String {
    format!(
        "{args:?}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        stdout(output),
        stderr(output)
    )
}

#[test]
fn kernels_give_the_interpreters_results_on_every_device() {
    let devices = devices_expected();
    // One launch per shape: flat, flat with a barrier (one work-group), groups × threads
    // (a nested par block whose inner range moves with the group, after fusion), two
    // dimensions with a boolean array and host code between launches in a loop, and kernels
    // an optimisation produced from the file's annotations.
    for (file, optimised) in [
        ("examples/basic/vector_add.pvl", false),
        ("examples/data_prefetching/rounds_with_barrier.pvl", true),
        ("examples/data_prefetching/nested_groups.pvl", true),
        ("examples/kernel_fusion/pairs_in_groups.pvl", true),
        ("tests/data/run/host_between_launches.pvl", false),
        // Scratch arrays in work-group local memory (an `int[]` read before it is written,
        // which the threads zero first, and a `boolean[]`), after a launch with its own.
        ("tests/data/run/local_scratch.pvl", false),
        ("examples/tiling/saxpy_inter.pvl", true),
        ("examples/loop_unroll/multiply.pvl", true),
        // No par block: the whole method is one work-item (a loop, a result, `b.length`).
        ("examples/loop_unroll/for_prefix_copy.pvl", true),
        ("examples/iteration_merging/halving.pvl", true),
        ("examples/iteration_merging/fill_length.pvl", true),
        // An overload, named by its parameters' types, run as one work-item whose result
        // follows the lengths its body reads (`A.length`) in the kernel's arguments.
        (
            "tests/data/verify_ok/overloads.pvl --method Sums.sumArray(int[])",
            false,
        ),
        // A ghost input (`given seq<int> xs`, the copy of the input array the precondition
        // asks for): drawn for the interpreter, erased from the kernels.
        (
            "examples/prefix-sum/kogge_stone_16.pvl --method scan",
            false,
        ),
    ] {
        let args: Vec<&str> = std::iter::once("run")
            .chain(file.split_whitespace())
            .collect();
        let output = exits(&args, 0);
        let out = stdout(&output);
        let original = lines(&out, "original");
        let optimised_lines = lines(&out, "optimised");
        assert!(original[0].ends_with("reference"), "{out}");
        let per_version = 1 + usize::from(devices);
        assert_eq!(original.len(), per_version, "{out}");
        assert_eq!(
            optimised_lines.len(),
            if optimised { per_version } else { 0 },
            "{out}"
        );
        for line in original[1..].iter().chain(&optimised_lines) {
            assert!(line.ends_with("  same"), "{file}: {line}");
        }
    }
}

/// Issue 19's bar: every example with a par block runs, original and optimised (the file's
/// annotations), with the same results on the interpreter and on every device, or stops with
/// a reason the README lists (below). A line may say why it did not run (`skipped: ..`: a
/// sequence or a matrix on a device, objects the interpreter does not model), never differ;
/// every file has at least one run that agrees with the reference.
#[test]
fn every_example_with_a_par_block_runs_with_the_same_results() {
    let devices = devices_expected();
    // (file, exit, what stderr says): the README's known gaps of `run`.
    let listed = [
        ("data_prefetching/call_between.pvl", 2, "E0803"),
        (
            "data_prefetching/field_array.pvl",
            2,
            "no drawn input satisfies",
        ),
        ("kernel_fusion/fraction_compared.pvl", 2, "has type `frac`"),
        ("kernel_fusion/fraction_parameter.pvl", 2, "has type `frac`"),
    ];
    let mut ran = 0;
    for file in crate::common::pvl_files("examples") {
        let path = crate::common::relative(&file);
        let text = std::fs::read_to_string(&file).unwrap();
        let program = alpinist::syntax::parse(&text).unwrap().program;
        let mut pars = 0;
        program.visit_stmts(&mut |s| {
            pars += usize::from(matches!(s.kind, alpinist::syntax::StmtKind::Par(_)));
        });
        if pars == 0 {
            continue;
        }
        let output = run(&["run", &path]);
        if let Some((_, code, why)) = listed.iter().find(|(f, ..)| path.ends_with(f)) {
            assert_eq!(
                output.status.code(),
                Some(*code),
                "{}",
                describe(&[&path], &output)
            );
            assert!(
                stderr(&output).contains(why),
                "{}",
                describe(&[&path], &output)
            );
            continue;
        }
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            describe(&[&path], &output)
        );
        let out = stdout(&output);
        let results: Vec<&str> = lines(&out, "original")
            .into_iter()
            .chain(lines(&out, "optimised"))
            .collect();
        for line in &results {
            assert!(
                line.ends_with("  same")
                    || line.ends_with("  reference")
                    || line.contains("skipped: "),
                "{path}: {line}"
            );
        }
        let agreeing = results.iter().filter(|l| l.ends_with("  same")).count();
        assert!(
            agreeing > 0 || !devices && lines(&out, "optimised").is_empty(),
            "{path}: {out}"
        );
        ran += 1;
    }
    assert!(ran > 50, "only {ran} examples with par blocks ran");
}

#[test]
fn a_linearised_matrix_is_compared_through_its_layout_and_runs_on_devices_linearised() {
    let devices = devices_expected();
    for file in [
        "examples/matrix_linearisation/matrix_scale.pvl",
        "examples/matrix_linearisation/checkerboard_colmajor.pvl",
    ] {
        let output = exits(&["run", file], 0);
        let out = stdout(&output);
        let original = lines(&out, "original");
        let optimised = lines(&out, "optimised");
        assert_eq!(original.len(), 1 + usize::from(devices), "{out}");
        if devices {
            assert!(original[1].contains("skipped: `"), "{out}");
        }
        assert_eq!(optimised.len(), 1 + usize::from(devices), "{out}");
        for line in optimised {
            assert!(line.ends_with("  same"), "{file}: {line}");
        }
    }
}

#[test]
fn a_wrong_version_is_a_mismatch_with_its_location_and_a_replay_that_reproduces_it() {
    let devices = devices_expected();
    let (_, out) = vector_add_against(
        "tests/data/run/vector_add_off_by_one.pvl",
        &["--seed", "7"],
        1,
    );
    let differing = lines(&out, "optimised");
    assert_eq!(differing.len(), 1 + usize::from(devices), "{out}");
    for line in differing {
        assert!(line.contains("differs: c[5] is "), "{line}");
    }
    let replay = out
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("replay: alpinist "))
        .unwrap_or_else(|| panic!("no replay line: {out}"));
    assert!(
        replay.contains("--seed 7") && replay.contains("--set N=64"),
        "{replay}"
    );
    let replay_args: Vec<&str> = replay.split_whitespace().collect();
    let again = exits(&replay_args, 1);
    assert!(stdout(&again).contains("differs: c[5] is "));
    // The twin itself is a correct program: it agrees with itself.
    exits(&["run", "tests/data/run/vector_add_off_by_one.pvl"], 0);
}

#[test]
fn a_version_that_fails_on_the_interpreter_is_not_run_on_a_device() {
    let devices = devices_expected();
    let (output, out) = vector_add_against("tests/data/run/vector_add_out_of_bounds.pvl", &[], 1);
    let optimised = lines(&out, "optimised");
    assert!(optimised[0].ends_with("  fails"), "{out}");
    assert!(
        stderr(&output).contains("out of bounds"),
        "{}",
        stderr(&output)
    );
    assert_eq!(optimised.len(), 1 + usize::from(devices), "{out}");
    if devices {
        assert!(
            optimised[1].ends_with("skipped: it did not run to its end on the interpreter"),
            "{out}"
        );
    }
}

#[test]
fn a_version_the_interpreter_cannot_run_is_bad_input_not_a_failure() {
    let (output, out) = vector_add_against("tests/data/run/vector_add_with_a_set.pvl", &[], 2);
    assert!(
        lines(&out, "optimised")[0].ends_with("  cannot run"),
        "{out}"
    );
    assert!(stderr(&output).contains("E0710"), "{}", stderr(&output));
}

#[test]
fn values_beyond_32_bits_are_drawn_again_and_int64_kernels_run_them() {
    let args = ["run", "tests/data/run/wide_products.pvl"];
    let output = exits(&args, 2);
    assert!(
        stderr(&output).contains("b[0] leaves 32-bit integers"),
        "{}",
        describe(&args, &output)
    );
    let args = ["run", "tests/data/run/wide_products.pvl", "--int64"];
    let output = exits(&args, 0);
    if devices_expected() {
        assert!(lines(&stdout(&output), "original")[1].ends_with("  same"));
    }
    let args = [
        "emit-opencl",
        "tests/data/run/wide_products.pvl",
        "--method",
        "scale",
        "--int64",
    ];
    let output = run(&args);
    assert!(
        stdout(&output).contains("b[tid] = (a[tid] * 1000000000L);"),
        "{}",
        describe(&args, &output)
    );
}

#[test]
fn usage_errors_and_inputs_the_precondition_refuses_are_exit_2() {
    for (args, message) in [
        (
            vec!["run", "examples/basic/vector_add.pvl", "--set", "M=3"],
            "`--set M=..` names no parameter",
        ),
        (
            vec!["run", "examples/basic/vector_add.pvl", "--set", "N"],
            "expected NAME=VALUE",
        ),
        (
            vec!["run", "examples/basic/vector_add.pvl", "--set", "N=-1"],
            "the length of `a` would be -1",
        ),
        (
            vec![
                "run",
                "examples/basic/vector_add.pvl",
                "--set",
                "a.length=3",
            ],
            "no drawn input satisfies the precondition",
        ),
        (
            vec!["run", "tests/data/run/functions_only.pvl"],
            "no method to run",
        ),
        (
            vec!["run", "examples/basic/vector_add.pvl", "--method", "nope"],
            "no method `nope`",
        ),
        (
            vec![
                "run",
                "examples/basic/vector_add.pvl",
                "--against",
                "tests/data/run/wide_products.pvl",
            ],
            "VectorAdd.add: the optimised version has no such method",
        ),
    ] {
        let output = exits(&args, 2);
        assert!(
            stderr(&output).contains(message),
            "{}",
            describe(&args, &output)
        );
    }
}

#[test]
fn a_method_that_cannot_run_is_listed_as_skipped_unless_it_is_a_kernel_or_named() {
    // Objects: the interpreter does not run them; no method of the file is a kernel.
    let output = exits(&["run", "examples/objects/counter.pvl"], 0);
    let out = stdout(&output);
    assert!(
        out.contains("Counter.tick: skipped: the interpreter cannot run the original"),
        "{out}"
    );
    let output = exits(
        &[
            "run",
            "examples/objects/counter.pvl",
            "--method",
            "Counter.tick",
        ],
        2,
    );
    assert!(stderr(&output).contains("the interpreter cannot run the original"));
    // A sequence input runs on the interpreter only.
    if devices_expected() {
        let output = exits(&["run", "examples/basic/sum_loop.pvl"], 0);
        let out = stdout(&output);
        assert!(out.contains("skipped: `xs` is a sequence"), "{out}");
    }
}

#[test]
fn a_kernel_the_generator_refuses_is_reported_with_its_span() {
    let args = ["run", "examples/data_prefetching/call_between.pvl"];
    let output = exits(&args, 2);
    let err = stderr(&output);
    assert!(err.contains("E0803"), "{err}");
    assert!(err.contains("a call statement in kernel code"), "{err}");
}

#[test]
fn emit_opencl_prints_the_kernels_run_launches() {
    let args = [
        "emit-opencl",
        "examples/data_prefetching/nested_groups.pvl",
        "--method",
        "scale",
    ];
    let output = exits(&args, 0);
    insta::assert_snapshot!("emit_opencl_nested_groups", stdout(&output));
    let args = [
        "emit-opencl",
        "tests/data/run/host_between_launches.pvl",
        "--method",
        "Steps.run",
    ];
    let output = exits(&args, 0);
    insta::assert_snapshot!("emit_opencl_host_between_launches", stdout(&output));
}

/// `alpinist bench ..` requiring exit `code`, with its stdout; without a device, requires exit
/// 4 (nothing to time) and gives `None`.
fn bench(args: &[&str], code: i32) -> Option<(Output, String)> {
    if !devices_expected() {
        exits(args, 4);
        return None;
    }
    let output = exits(args, code);
    let out = stdout(&output);
    Some((output, out))
}

/// The timing lines of `bench`'s output (`kernel .. end to end .., R runs`).
fn timing_lines(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| l.contains("kernel ") && l.trim_end().ends_with("runs"))
        .collect()
}

/// `bench` times each device run that gives the reference's results and prints the speed-up
/// of the optimised version per device; without a device there is nothing to time (exit 4).
#[test]
fn bench_times_original_and_optimised_on_each_device_and_prints_the_speed_up() {
    let args = [
        "bench",
        "examples/tiling/saxpy_inter.pvl",
        "--reps",
        "3",
        "--set",
        "N=256",
    ];
    let Some((output, out)) = bench(&args, 0) else {
        return;
    };
    let timings = timing_lines(&out);
    // One timing line per version on each device (`--platform` default: one device).
    assert_eq!(timings.len(), 2, "{}", describe(&args, &output));
    assert!(
        timings.iter().all(|l| l.trim_end().ends_with(", 3 runs")),
        "{}",
        describe(&args, &output)
    );
    let speed_up = lines(&out, "speed-up");
    assert_eq!(speed_up.len(), 1, "{}", describe(&args, &output));
    assert!(
        speed_up[0].contains("x, end to end"),
        "{}",
        describe(&args, &output)
    );
}

/// `bench --json`: one document on stdout (the lines on stderr) with the same timings.
#[test]
fn bench_json_is_one_document_with_the_timings_and_speed_ups() {
    let args = [
        "bench",
        "examples/tiling/saxpy_inter.pvl",
        "--reps",
        "2",
        "--json",
    ];
    let Some((output, out)) = bench(&args, 0) else {
        return;
    };
    let doc: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {}", describe(&args, &output)));
    assert_eq!(doc["schema_version"], 1, "{doc}");
    assert_eq!(doc["reps"], 2, "{doc}");
    let method = &doc["methods"][0];
    assert_eq!(method["method"], "SaxpyInter.saxpy", "{doc}");
    let timed = method["timed"].as_array().expect("timed runs");
    assert_eq!(timed.len(), 2, "{doc}");
    for run in timed {
        assert_eq!(run["runs"], 2, "{doc}");
        let kernel = &run["kernel_ms"];
        assert!(
            kernel["min"].as_f64() <= kernel["median"].as_f64()
                && kernel["median"].as_f64() <= kernel["max"].as_f64(),
            "{doc}"
        );
    }
    assert_eq!(
        method["speed_ups"].as_array().map(Vec::len),
        Some(1),
        "{doc}"
    );
    assert!(
        stderr(&output).contains("speed-up"),
        "{}",
        describe(&args, &output)
    );
}

/// A mismatch stops `bench` as it stops `run` (exit 1): a wrong version is never timed.
#[test]
fn bench_does_not_time_a_version_whose_results_differ() {
    let args = [
        "bench",
        "examples/basic/vector_add.pvl",
        "--against",
        "tests/data/run/vector_add_off_by_one.pvl",
        "--reps",
        "2",
    ];
    let Some((output, out)) = bench(&args, 1) else {
        return;
    };
    // The original's run alone is timed; the optimised one differs.
    assert_eq!(timing_lines(&out).len(), 1, "{}", describe(&args, &output));
    assert!(
        lines(&out, "speed-up").is_empty(),
        "{}",
        describe(&args, &output)
    );
}

#[test]
fn bench_refuses_zero_repetitions() {
    exits(
        &["bench", "examples/tiling/saxpy_inter.pvl", "--reps", "0"],
        2,
    );
}

/// `tune` optimises and reverifies every value of the lists, drops the refused ones with their
/// reason, times the rest with the original, marks the fastest and writes it; what it writes
/// verifies. Without a device there is nothing to time (exit 4).
#[test]
fn tune_drops_refused_variants_times_the_rest_and_writes_a_version_that_verifies() {
    for (file, flags, kept, dropped) in [
        (
            "examples/loop_unroll/multiply.pvl",
            vec!["--unroll", "2,4", "--loop", "i"],
            vec!["unroll 2"],
            vec![("unroll 4", "E0905")],
        ),
        (
            "examples/tiling/saxpy_inter.pvl",
            vec!["--tile", "inter:2,4", "--tile", "intra:4"],
            vec!["tile inter:2", "tile inter:4", "tile intra:4"],
            vec![],
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out_path = dir.path().join("tuned.pvl");
        let out_file = out_path.to_str().unwrap();
        let mut args = vec!["tune", file, "--reps", "2", "-o", out_file];
        args.extend(flags.iter().copied());
        if !devices_expected() {
            exits(&args, 4);
            continue;
        }
        let output = exits(&args, 0);
        let err = stderr(&output);
        let table: Vec<&str> = err
            .lines()
            .skip_while(|l| !l.starts_with("tune: "))
            .collect();
        let row = |label: &str| {
            table
                .iter()
                .find(|l| l.trim_start().starts_with(&format!("{label}  ")))
                .unwrap_or_else(|| panic!("no row `{label}`: {}", describe(&args, &output)))
                .to_string()
        };
        assert!(row("original").contains("the input, verified"), "{err}");
        for label in kept {
            let r = row(label);
            assert!(
                r.contains("reverified in") && r.contains(" ms"),
                "{r}\n{err}"
            );
        }
        for (label, code) in dropped {
            let r = row(label);
            assert!(r.contains("dropped: ") && r.contains(code), "{r}\n{err}");
        }
        let chosen: Vec<&&str> = table.iter().filter(|l| l.ends_with("<- chosen")).collect();
        assert_eq!(chosen.len(), 1, "{err}");
        assert!(err.contains(&format!("written to {out_file}")), "{err}");
        let written = run(&["verify", out_file]);
        assert_eq!(written.status.code(), Some(0), "{}", stderr(&written));
    }
}

/// `tune --json`: one document with every candidate, the chosen one and its program.
#[test]
fn tune_json_is_one_document_with_every_candidate_and_the_chosen_program() {
    let args = [
        "tune",
        "examples/loop_unroll/multiply.pvl",
        "--unroll",
        "2,4",
        "--loop",
        "i",
        "--reps",
        "2",
        "--json",
    ];
    if !devices_expected() {
        exits(&args, 4);
        return;
    }
    let output = exits(&args, 0);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&output))
        .unwrap_or_else(|e| panic!("{e}: {}", describe(&args, &output)));
    assert_eq!(doc["command"], "tune");
    assert_eq!(doc["exit"], 0);
    let candidates = doc["candidates"].as_array().expect("candidates");
    let find = |variant: &str| {
        candidates
            .iter()
            .find(|c| c["variant"] == variant)
            .unwrap_or_else(|| panic!("no `{variant}`: {doc:#}"))
    };
    assert_eq!(find("original")["status"], "input");
    assert_eq!(find("unroll 2")["status"], "timed");
    assert!(find("unroll 2")["kernel_ms"].as_f64().is_some());
    assert_eq!(find("unroll 4")["status"], "dropped");
    assert!(find("unroll 4")["reason"]
        .as_str()
        .unwrap()
        .contains("E0905"));
    let chosen = doc["chosen"].as_str().unwrap();
    assert!(["original", "unroll 2"].contains(&chosen), "{doc:#}");
    assert!(doc["text"].as_str().unwrap().contains("class"), "{doc:#}");
}

#[test]
fn tune_without_anything_to_try_or_with_too_many_variants_is_bad_input() {
    // No list and no `gpuopt` line.
    exits(&["tune", "examples/basic/vector_add.pvl"], 2);
    let many: Vec<String> = (1..=65).map(|k| k.to_string()).collect();
    let output = exits(
        &[
            "tune",
            "examples/loop_unroll/multiply.pvl",
            "--unroll",
            &many.join(","),
            "--loop",
            "i",
        ],
        2,
    );
    assert!(
        stderr(&output).contains("at most 64"),
        "{}",
        stderr(&output)
    );
}

/// Sizes beyond the interpreter's limits (here 4,096 threads of 16,384 steps each): the
/// reference is the original's run on the first device (the precondition still checked on
/// the interpreter), the optimised version skips the interpreter and runs on the devices.
/// Without a device such a kernel cannot run at all (exit 2).
#[test]
fn beyond_the_interpreters_limits_the_reference_comes_from_a_device() {
    let args = [
        "run",
        "examples/loop_unroll/repeated_add.pvl",
        "--set",
        "N=4096",
        "--set",
        "n=16384",
    ];
    if !devices_expected() {
        let output = exits(&args, 2);
        assert!(stderr(&output).contains("beyond the interpreter's limits"));
        return;
    }
    let output = exits(&args, 0);
    let out = stdout(&output);
    let original = lines(&out, "original");
    assert!(
        original[0].ends_with("reference") && !original[0].contains("interpreter"),
        "{}",
        describe(&args, &output)
    );
    let optimised = lines(&out, "optimised");
    assert!(
        optimised[0].contains("interpreter")
            && optimised[0].ends_with("skipped: beyond its limits"),
        "{}",
        describe(&args, &output)
    );
    assert!(
        optimised[1..].iter().all(|l| l.ends_with("  same")) && optimised.len() > 1,
        "{}",
        describe(&args, &output)
    );
}

/// `report` reads `bench --json` documents beside `optimise --json` ones: a run-time table
/// after the verification tables, and the kernel times in a second panel of the chart.
#[test]
fn report_shows_run_times_from_bench_beside_verification_times() {
    let file = "examples/tiling/saxpy_inter.pvl";
    let bench_args = ["bench", file, "--reps", "2", "--json"];
    let Some((_, bench_doc)) = bench(&bench_args, 0) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bench.json"), &bench_doc).unwrap();
    let optimised = exits(&["optimise", file, "--json"], 0);
    std::fs::write(dir.path().join("optimise.json"), stdout(&optimised)).unwrap();
    let folder = dir.path().to_str().unwrap();
    let md = stdout(&exits(&["report", folder], 0));
    assert!(md.contains("after / before"), "{md}");
    let timed = md
        .lines()
        .find(|l| l.starts_with(&format!("| {file} | SaxpyInter.saxpy |")))
        .unwrap_or_else(|| panic!("no run-time row: {md}"));
    assert!(
        timed.contains("| optimised |") && timed.ends_with("x |"),
        "{timed}"
    );
    let svg = stdout(&exits(&["report", folder, "--format", "svg"], 0));
    assert!(svg.contains("kernel time (right)"), "{svg}");
    assert_eq!(svg.matches("<rect").count(), 4, "{svg}");
}
