//! Every broken program in `tests/data/diagnostics/` carries `//:: expect CODE line:col`: the
//! binary must report exactly that code at that position (exit 2 for errors, 0 for warnings,
//! 1 for a duplicated `gpuopt`, which `optimise` refuses), and the rendered diagnostic is
//! snapshot-tested. `gpuopt` diagnostics (E04xx) come from `optimise`; `check` accepts them.

use std::collections::BTreeSet;

use crate::common::{expectation, pvl_files, relative, run, snapshot_name, stderr};

#[test]
fn each_broken_program_reports_its_code_at_its_position() {
    let files = pvl_files("tests/data/diagnostics");
    let mut codes = BTreeSet::new();
    for path in &files {
        let source = std::fs::read_to_string(path).unwrap();
        let name = relative(path);
        let expected = expectation(&source)
            .unwrap_or_else(|| panic!("{name}: no `//:: expect CODE line:col` header"));
        // `gpuopt` annotations (E04xx) concern `optimise` only: `check` accepts them.
        let gpuopt = expected.kind.starts_with("E04");
        if gpuopt {
            let output = run(&["check", &name]);
            assert_eq!(
                output.status.code(),
                Some(0),
                "{name}: `check` must accept it\n{}",
                stderr(&output)
            );
        }
        let output = run(&[if gpuopt { "optimise" } else { "check" }, &name]);
        let err = stderr(&output);
        // A duplicated `gpuopt` (E0403) is a refusal of `optimise`, not a usage error.
        let want_exit = match expected.kind.as_str() {
            k if k.starts_with('W') => 0,
            "E0403" => 1,
            _ => 2,
        };
        assert_eq!(
            output.status.code(),
            Some(want_exit),
            "{name}: exit code\n{err}"
        );
        assert!(
            err.contains(&expected.kind),
            "{name}: expected {}\n{err}",
            expected.kind
        );
        let position = format!("{name}:{}:{}", expected.line, expected.column);
        assert!(
            err.contains(&position),
            "{name}: expected a diagnostic at {position}\n{err}"
        );
        codes.insert(expected.kind.clone());
        insta::with_settings!({
            snapshot_path => "snapshots/diagnostics",
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => name.clone(),
        }, {
            insta::assert_snapshot!(snapshot_name(path, "tests/data/diagnostics"), err);
        });
    }
    assert!(
        codes.len() >= 10,
        "only {} distinct codes are tested: {codes:?}",
        codes.len()
    );
}

/// More shapes of the ghost-code checks (E0218–E0221) than the one file per code above: each
/// program in `tests/data/ghost_effects/` is rejected by `check` (exit 2) with its header's
/// code, in a diagnostic whose primary span starts at the header's place.
#[test]
fn ghost_code_with_a_real_effect_is_rejected_where_expected() {
    let files = pvl_files("tests/data/ghost_effects");
    assert!(
        files.len() >= 12,
        "tests/data/ghost_effects/ holds only {} programs",
        files.len()
    );
    let mut problems = Vec::new();
    for path in &files {
        let source = std::fs::read_to_string(path).unwrap();
        let name = relative(path);
        let Some(expected) = expectation(&source) else {
            problems.push(format!("{name}: no `//:: expect CODE line:col` header"));
            continue;
        };
        let output = run(&["check", &name]);
        let err = stderr(&output);
        // One diagnostic per chunk: the code on a line of its own, then the rendering, with a
        // source position per snippet (the primary span's among them).
        let position = format!("[{name}:{}:{}]", expected.line, expected.column);
        let found = err
            .split('\n')
            .fold(Vec::<String>::new(), |mut chunks, line| {
                if line.len() == 5 && line.starts_with(['E', 'W']) || chunks.is_empty() {
                    chunks.push(String::new());
                }
                let chunk = chunks.last_mut().expect("one chunk at least");
                chunk.push_str(line);
                chunk.push('\n');
                chunks
            });
        let hit = found
            .iter()
            .any(|chunk| chunk.starts_with(&expected.kind) && chunk.contains(&position));
        if output.status.code() != Some(2) || !hit {
            problems.push(format!(
                "{name}: exit {:?}, expected {} at {position}\n{err}",
                output.status.code(),
                expected.kind
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
