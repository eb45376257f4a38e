//! Over every example and every test file that parses: parse → print → parse gives the same IR
//! (spans aside), printing is idempotent, no comment is lost or duplicated; plus one insta
//! snapshot of the IR and of the printed PVL per example, which catch anything the parser drops.

use alpinist::syntax::{self, Parsed};

use crate::common::{pvl_files, relative, sexpr, snapshot_name, spanless};

fn sorted_comments(parsed: &Parsed) -> Vec<String> {
    let mut texts: Vec<String> = parsed
        .trivia
        .comments
        .iter()
        .map(|c| c.text.trim_end().to_string())
        .collect();
    texts.sort();
    texts
}

fn assert_round_trip(path: &std::path::Path, source: &str, first: &Parsed) -> String {
    let name = relative(path);
    let printed = syntax::print(&first.program, &first.trivia);
    let second = syntax::parse(&printed)
        .unwrap_or_else(|e| panic!("{name}: the printed program does not parse: {e:?}\n{printed}"));
    assert_eq!(
        spanless(&first.program),
        spanless(&second.program),
        "{name}: parse(print(p)) differs from p\n{printed}"
    );
    assert_eq!(
        sorted_comments(first),
        sorted_comments(&second),
        "{name}: the comments changed\n{printed}"
    );
    let reprinted = syntax::print(&second.program, &second.trivia);
    assert_eq!(printed, reprinted, "{name}: fmt is not idempotent");
    let _ = source;
    printed
}

#[test]
fn examples_round_trip_and_snapshots() {
    let files = pvl_files("examples");
    assert!(
        files.len() >= 12,
        "expected the examples/ kernels, found {}",
        files.len()
    );
    for path in files {
        let source = std::fs::read_to_string(&path).unwrap();
        let parsed = syntax::parse(&source)
            .unwrap_or_else(|e| panic!("{}: does not parse: {e:?}", relative(&path)));
        let printed = assert_round_trip(&path, &source, &parsed);
        let name = snapshot_name(&path, "examples");
        insta::with_settings!({
            snapshot_path => "snapshots/ir",
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => relative(&path),
        }, {
            insta::assert_snapshot!(name.clone(), sexpr(&spanless(&parsed.program)));
        });
        insta::with_settings!({
            snapshot_path => "snapshots/fmt",
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => relative(&path),
        }, {
            insta::assert_snapshot!(name, printed);
        });
    }
}

#[test]
fn test_data_round_trips() {
    for path in pvl_files("tests/data") {
        let source = std::fs::read_to_string(&path).unwrap();
        if let Ok(parsed) = syntax::parse(&source) {
            assert_round_trip(&path, &source, &parsed);
        }
    }
}
