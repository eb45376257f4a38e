//! End-to-end runs of the `alpinist` binary: exit codes and outputs of design.md's contract.

use std::io::Write;
use std::process::Stdio;

use alpinist::syntax;

use crate::common::{alpinist, pvl_files, relative, run, stderr, stdout, SCAN_KERNELS};

#[test]
fn fmt_prints_every_example_as_the_library_does() {
    for path in pvl_files("examples") {
        let name = relative(&path);
        let output = run(&["fmt", &name]);
        assert_eq!(output.status.code(), Some(0), "{name}\n{}", stderr(&output));
        let parsed = syntax::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            stdout(&output),
            syntax::print(&parsed.program, &parsed.trivia)
        );
    }
}

#[test]
fn check_accepts_every_example() {
    // One file at a time: several files are one program.
    for path in pvl_files("examples") {
        let name = relative(&path);
        let output = run(&["check", &name]);
        assert_eq!(output.status.code(), Some(0), "{name}\n{}", stderr(&output));
    }
}

#[test]
fn fmt_reads_standard_input() {
    let mut child = alpinist()
        .args(["fmt", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"class C { int x; // the field\n}\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("// the field"));
}

#[test]
fn fmt_write_rewrites_in_place_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k.pvl");
    std::fs::write(&file, "class C{int x;void m(){x=1+2*3;}}").unwrap();
    let path = file.to_str().unwrap();
    let expected = stdout(&run(&["fmt", path]));
    let output = run(&["fmt", "--write", path]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), expected);
    assert_eq!(stdout(&run(&["fmt", path])), expected);
}

#[test]
fn syntax_errors_exit_2_with_code_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.pvl");
    std::fs::write(&file, "class C {\n  void m() {\n    x = ;\n  }\n}\n").unwrap();
    for subcommand in ["fmt", "check", "verify"] {
        let output = run(&[subcommand, file.to_str().unwrap()]);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{subcommand}: {err}");
        assert!(err.contains("E0101"), "{subcommand}: {err}");
        assert!(err.contains("bad.pvl:3:9"), "{subcommand}: {err}");
    }
}

#[test]
fn unreadable_input_is_bad_input_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("binary.pvl");
    std::fs::write(&binary, [0x63, 0x6c, 0xff, 0xfe, 0x00]).unwrap();
    let output = run(&["fmt", binary.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("not UTF-8"), "{}", stderr(&output));

    let missing = dir.path().join("missing.pvl");
    let output = run(&["check", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("cannot read"));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(run(&["no-such-subcommand"]).status.code(), Some(2));
    assert_eq!(run(&["optimise"]).status.code(), Some(2));
    assert_eq!(run(&["--help"]).status.code(), Some(0));
}

/// `report` reads what `optimise --json` wrote — an applied optimisation, a refusal — in every
/// format, and names the JSON files that are not such documents instead of dropping them.
#[test]
fn report_summarises_optimise_documents_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("runs");
    std::fs::create_dir(&nested).unwrap();
    for (name, args) in [
        (
            "applied",
            vec!["optimise", "--json", "examples/loop_unroll/countdown.pvl"],
        ),
        (
            "refused",
            vec![
                "optimise",
                "--json",
                "--unroll",
                "3",
                "tests/data/unroll/bound_too_small.pvl",
            ],
        ),
    ] {
        let output = run(&args);
        std::fs::write(nested.join(format!("{name}.json")), &output.stdout).unwrap();
    }
    std::fs::write(
        dir.path().join("other.json"),
        r#"{"schema_version": 1, "files": []}"#,
    )
    .unwrap();
    let path = dir.path().to_str().unwrap();

    let md = run(&["report", path]);
    assert_eq!(md.status.code(), Some(0), "{}", stderr(&md));
    let text = stdout(&md);
    assert!(
        text.starts_with("2 document(s): 1 applied, 1 refused"),
        "{text}"
    );
    assert!(
        text.contains("| examples/loop_unroll/countdown.pvl | unrolled the loop over `j` by 2"),
        "{text}"
    );
    assert!(text.contains("| applied, reverified |"), "{text}");
    assert!(text.contains("refused (E0905)"), "{text}");
    let warning = stderr(&md);
    assert!(
        warning.contains("skipped") && warning.contains("other.json"),
        "{warning}"
    );

    let json = run(&["report", path, "--format", "json"]);
    assert_eq!(json.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["summary"]["documents"], 2);
    assert_eq!(doc["documents"][0]["status"], "applied");
    assert!(doc["documents"][0]["after_over_before"].as_f64() > Some(0.0));
    assert_eq!(doc["documents"][1]["code"], "E0905");

    let csv = run(&["report", path, "--format", "csv"]);
    assert_eq!(csv.status.code(), Some(0));
    let lines: Vec<String> = stdout(&csv).lines().map(str::to_string).collect();
    assert!(lines[0].starts_with("file,applied,status,"), "{lines:?}");
    assert_eq!(lines.len(), 3, "header, one method each: {lines:?}");

    let svg = run(&["report", path, "--format", "svg"]);
    assert_eq!(svg.status.code(), Some(0));
    let svg = stdout(&svg);
    assert!(
        svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
        "{svg}"
    );
}

#[test]
fn report_without_documents_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let empty = run(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(empty.status.code(), Some(2));
    assert!(stderr(&empty).contains("no `alpinist optimise --json` or `bench --json` documents"));
    let missing = run(&["report", "no/such/dir"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("no/such/dir"));
}

#[test]
fn opencl_commands_never_panic() {
    let output = run(&["devices"]);
    let err = stderr(&output);
    assert!(!err.contains("panicked"), "{err}");
    if cfg!(feature = "opencl") {
        // 0 with a platform (the listing names it), 4 with a message without one.
        match output.status.code() {
            Some(0) => assert!(stdout(&output).contains("platform: "), "{err}"),
            Some(4) => assert!(err.contains("OpenCL"), "{err}"),
            other => panic!("exit {other:?}: {err}"),
        }
    } else {
        assert_eq!(output.status.code(), Some(4), "{err}");
        assert!(err.contains("--features opencl"), "{err}");
    }
}

#[test]
fn scan_test_without_the_feature_says_how_to_enable_it() {
    if cfg!(feature = "opencl") {
        return; // covered by the `opencl` module
    }
    let output = run(&["scan-test", "examples/prefix-sum/sklansky.pvl"]);
    assert_eq!(output.status.code(), Some(4));
    assert!(stderr(&output).contains("--features opencl"));
}

/// `emit-opencl` prints what `scan-test` compiles, with or without the `opencl` feature: the
/// header names the hash `scan-test` reports (the generated kernel's), then the prelude, then
/// the kernel.
#[test]
fn emit_opencl_prints_the_program_scan_test_compiles() {
    for scan in SCAN_KERNELS {
        let file = format!("examples/prefix-sum/{scan}.pvl");
        let output = run(&["emit-opencl", &file]);
        assert_eq!(output.status.code(), Some(0), "{file}: {}", stderr(&output));
        let text = stdout(&output);
        let parsed = syntax::parse(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let kernel = alpinist::opencl::codegen::generate(&parsed.program).unwrap();
        let hash = format!("Kernel source hash {:016x}", kernel.source_hash());
        assert!(text.contains(&hash), "{file}: no `{hash}`\n{text}");
        assert!(text.contains("#define OP(a, b) ((a) + (b))"), "{file}");
        assert!(text.ends_with(&kernel.source), "{file}");
    }
    let output = run(&["emit-opencl", "examples/prefix-sum/chunked.pvl"]);
    insta::with_settings!({
        snapshot_path => "snapshots/opencl",
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!("emit_opencl__chunked", stdout(&output));
    });
    let interval = run(&[
        "emit-opencl",
        "examples/prefix-sum/sequential.pvl",
        "--monoid",
        "interval",
    ]);
    assert_eq!(interval.status.code(), Some(0));
    assert!(stdout(&interval).contains("alp_interval_op"));
}

#[test]
fn emit_opencl_refuses_what_code_generation_refuses_with_its_position() {
    let file = "tests/data/scan/refused_element_doubling.pvl";
    let output = run(&["emit-opencl", file]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
    let err = stderr(&output);
    assert!(err.contains("E0802"), "{err}");
    assert!(err.contains(&format!("{file}:")), "{err}");
    let not_a_kernel = run(&["emit-opencl", "examples/basic/sum_loop.pvl"]);
    assert_eq!(
        not_a_kernel.status.code(),
        Some(2),
        "{}",
        stderr(&not_a_kernel)
    );
}

/// `alpinist verify` killed with SIGKILL mid-run leaves none of its descendants behind: the
/// verification worker dies with it (found by process id, through `/proc`, never by name).
#[cfg(target_os = "linux")]
#[test]
fn verify_killed_mid_run_leaves_no_worker() {
    use std::time::{Duration, Instant};
    // Fermat for n = 3: far beyond Z3, so with this budget the worker runs for minutes.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hard.pvl");
    std::fs::write(
        &file,
        "class C {\n  requires x > 0 && y > 0 && z > 0;\n  void m(int x, int y, int z) {\n    \
         assert x * x * x + y * y * y != z * z * z;\n  }\n}\n",
    )
    .unwrap();
    let mut parent = alpinist()
        .args(["verify", "--rlimit", "4000000000", file.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let parent_pid = parent.id();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut family = Vec::new();
    while family.is_empty() && Instant::now() < deadline {
        family = descendants(parent_pid);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!family.is_empty(), "the worker process never appeared");
    parent.kill().unwrap(); // SIGKILL
    parent.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut left: Vec<u32> = family.clone();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        left.retain(|&pid| alive(pid));
    }
    // Whatever the verdict, leave no process running.
    for &pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(
        left.is_empty(),
        "processes left after the parent died: {left:?}"
    );
}

/// The process ids below `root` in the process tree, from `/proc/<pid>/stat`'s parent field.
#[cfg(target_os = "linux")]
fn descendants(root: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Some((_, ppid)) = stat(pid) {
            parents.push((pid, ppid));
        }
    }
    let mut found = vec![root];
    let mut k = 0;
    while k < found.len() {
        let p = found[k];
        found.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        k += 1;
    }
    found.remove(0);
    found
}

/// `(state, parent pid)` of a process, `None` when there is no such process.
#[cfg(target_os = "linux")]
fn stat(pid: u32) -> Option<(char, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Whether a process still runs: a zombie (dead, not yet reaped) holds nothing.
#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    matches!(stat(pid), Some((state, _)) if state != 'Z' && state != 'X')
}

/// `--memory` bounds Z3 (verify's worker and optimise, which verifies in-process): a query
/// that needs more is unknown, exit 3, with the reason — never a crash or a failure.
#[test]
fn a_query_over_the_memory_limit_is_unknown_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hard.pvl");
    std::fs::write(
        &file,
        "class C {\n  requires x > 0 && y > 0 && z > 0;\n  void m(int x, int y, int z) {\n    \
         assert x * x * x + y * y * y != z * z * z;\n    int i = 0;\n    \
         loop_invariant 0 <= i && i <= 4;\n    while (i < 4) { i = i + 1; }\n  }\n}\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    for args in [
        vec!["verify", "--memory", "20", path],
        vec!["verify", "--memory", "20", "--json", path],
        vec!["optimise", "--memory", "20", "--unroll", "2", path],
    ] {
        let output = run(&args);
        assert_eq!(
            output.status.code(),
            Some(3),
            "{args:?}\n{}",
            stderr(&output)
        );
        let text = format!("{}{}", stdout(&output), stderr(&output));
        assert!(
            text.contains("memory limit of 20 MB reached"),
            "{args:?}\n{text}"
        );
    }
    let output = run(&["verify", "--memory", "0", path]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

/// An integer literal beyond `syntax::MAX_LITERAL_DIGITS` is a syntax error with its span
/// (E0107, exit 2) from every command, and from the library (both parsers); one at the limit
/// is read.
#[test]
fn a_million_digit_literal_is_refused_with_its_span() {
    let limit = syntax::MAX_LITERAL_DIGITS;
    let program = |digits: usize| {
        format!(
            "class C {{\n  void m() {{\n    int x = {};\n    assert x > 0;\n  }}\n}}\n",
            "7".repeat(digits)
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huge.pvl");
    std::fs::write(&file, program(1_000_000)).unwrap();
    let path = file.to_str().unwrap();
    for command in ["check", "verify", "fmt"] {
        let output = run(&[command, path]);
        assert_eq!(output.status.code(), Some(2), "{command}");
        let err = stderr(&output);
        assert!(
            err.contains("E0107"),
            "{command}: {}",
            &err[..err.len().min(500)]
        );
        assert!(
            err.contains("huge.pvl:3:13"),
            "{command}: {}",
            &err[..err.len().min(500)]
        );
    }
    let errors = syntax::parse(&program(limit + 1)).unwrap_err();
    assert_eq!(errors[0].code_str(), "E0107");
    assert_eq!(errors[0].span().map(|s| s.start), Some(35));
    assert!(syntax::parse_reference(&program(limit + 1)).is_err());
    assert!(syntax::parse(&program(limit)).is_ok());
}

/// libz3 crashing on one routine (simulated: the worker aborts as it starts `b`) costs that
/// routine its verdict, not the file's: it is unknown with the reason, the others verify, and
/// the run is inconclusive (exit 3), not an internal error.
#[test]
fn a_libz3_crash_in_one_routine_leaves_the_others_their_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("three.pvl");
    std::fs::write(
        &file,
        "class C {\n  ensures \\result == 1;\n  int a() { return 1; }\n  \
         ensures \\result == 2;\n  int b() { return 2; }\n  \
         ensures \\result == 3;\n  int c() { return 4; }\n}\n",
    )
    .unwrap();
    let output = alpinist()
        .args(["verify", "--json", file.to_str().unwrap()])
        .env("ALPINIST_TEST_WORKER_ABORT_IN", "b")
        .output()
        .unwrap();
    let err = stderr(&output);
    // `c` fails: the failure of a routine verified after the crash still counts (exit 1).
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("libz3 crashed while verifying 1 routine"),
        "{err}"
    );
    assert!(!err.contains("alpinist-routine"), "markers leak: {err}");
    let doc: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let outcomes: Vec<(String, String)> = doc["files"][0]["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m["outcome"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    let text = stdout(&output);
    assert!(
        text.contains("libz3 crashed while verifying this routine"),
        "{text}"
    );
    assert_eq!(
        outcomes,
        vec![
            ("a".to_string(), "verified".to_string()),
            ("b".to_string(), "unknown".to_string()),
            ("c".to_string(), "failed".to_string()),
        ],
        "{text}"
    );
}

/// A misplaced `gpuopt` line never stops verification (a `gpuopt` line means nothing to a
/// proof): `check` and `verify` accept the program, `optimise` refuses it with the diagnostic
/// and its span (E0402, exit 2).
#[test]
fn a_misplaced_gpuopt_stops_optimise_only() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("misplaced.pvl");
    std::fs::write(
        &file,
        "class C {\n  requires n >= 0;\n  void m(int n) {\n    gpuopt loop_unroll i 2;\n    int i = 0;\n  }\n}\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    for command in ["check", "verify"] {
        let output = run(&[command, path]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{command}: {}",
            stderr(&output)
        );
    }
    let output = run(&["optimise", path]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("E0402") && err.contains("misplaced.pvl:4:5"),
        "{err}"
    );
}
