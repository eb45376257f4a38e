//! Every broken program in `tests/data/diagnostics/` carries `//:: expect CODE line:col`: the
//! binary must report exactly that code at that position (exit 2 for errors, 0 for warnings),
//! and the rendered diagnostic is snapshot-tested.

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
        let output = run(&["check", &name]);
        let err = stderr(&output);
        let want_exit = if expected.kind.starts_with('W') { 0 } else { 2 };
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
