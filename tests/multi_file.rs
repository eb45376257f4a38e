//! Several files as one program (`verify A.pvl B.pvl`, `check A.pvl B.pvl`), as VerCors reads
//! its file arguments: `tests/data/multi_file/client.pvl` uses a class of `account.pvl`.
//! Every diagnostic names the file that holds its span and counts lines within that file.

use crate::common::{run, stderr, stdout};

const DIR: &str = "tests/data/multi_file";

fn path(file: &str) -> String {
    format!("{DIR}/{file}")
}

#[test]
fn a_class_from_another_file_is_used_and_verified() {
    let out = run(&["verify", &path("client.pvl"), &path("account.pvl")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    // Each routine under its own file's name, with lines counted within that file.
    assert!(
        text.contains(&format!("{}: 3:3 `transfer`: verified", path("client.pvl"))),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "{}: 11:3 `withdraw`: verified",
            path("account.pvl")
        )),
        "{text}"
    );
    // The same in the other order.
    let out = run(&["verify", &path("account.pvl"), &path("client.pvl")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run(&["check", &path("client.pvl"), &path("account.pvl")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn the_broken_twin_fails_at_its_call_in_its_own_file() {
    let out = run(&[
        "verify",
        &path("client_overdraws.pvl"),
        &path("account.pvl"),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    insta::assert_snapshot!("multi_file_overdraws", stderr(&out));
    // The JSON document names the file of each span.
    let out = run(&[
        "verify",
        "--json",
        &path("account.pvl"),
        &path("client_overdraws.pvl"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let methods = doc["files"][0]["methods"].as_array().unwrap();
    let transfer = methods.iter().find(|m| m["name"] == "transfer").unwrap();
    assert_eq!(transfer["outcome"], "failed");
    assert_eq!(transfer["span"]["file"], path("client_overdraws.pvl"));
    assert_eq!(transfer["span"]["line"], 4);
    let failed: Vec<_> = transfer["obligations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["status"] == "failed")
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["span"]["line"], 8);
    assert_eq!(failed[0]["span"]["file"], path("client_overdraws.pvl"));
}

#[test]
fn alone_the_client_names_the_missing_class() {
    let out = run(&["verify", &path("client.pvl")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown class `Account`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_class_declared_in_two_files_is_an_error_in_the_second() {
    let out = run(&[
        "check",
        &path("client.pvl"),
        &path("client_overdraws.pvl"),
        &path("account.pvl"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    insta::assert_snapshot!("multi_file_declared_twice", stderr(&out));
}

#[test]
fn a_syntax_error_is_reported_in_its_own_file() {
    for args in [
        ["check", &path("account.pvl"), &path("bad_syntax.pvl")],
        ["verify", &path("bad_syntax.pvl"), &path("account.pvl")],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2));
        let err = stderr(&out);
        assert!(
            err.contains(&format!("[{}:5:1]", path("bad_syntax.pvl"))),
            "{err}"
        );
        assert!(!err.contains("account.pvl"), "{err}");
    }
}
