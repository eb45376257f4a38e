//! The verified-method cache through the binary: `verify` and `optimise` share it, a second
//! run proves only what changed, `--no-cache` proves everything, and a change a cached routine
//! depends on (a callee's contract) is never hidden by it.

use std::path::Path;
use std::process::Output;

use crate::common::{alpinist, stdout};

/// `alpinist ARGS` with the cache on, in `dir`.
fn cached_run(dir: &Path, args: &[&str]) -> Output {
    alpinist()
        .env(alpinist::cache::SWITCH_ENV, "1")
        .env(alpinist::cache::DIR_ENV, dir)
        .args(args)
        .output()
        .expect("the alpinist binary runs")
}

#[test]
fn a_second_verify_comes_from_the_cache_unless_told_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let file = "examples/loop_unroll/doubling.pvl";
    let first = cached_run(dir.path(), &["verify", file]);
    assert_eq!(first.status.code(), Some(0), "{}", stdout(&first));
    assert!(!stdout(&first).contains("cached"), "{}", stdout(&first));
    let second = cached_run(dir.path(), &["verify", file]);
    assert_eq!(second.status.code(), Some(0));
    assert!(
        stdout(&second).contains("2 of 2 methods verified")
            && stdout(&second).contains("(2 from the cache)"),
        "{}",
        stdout(&second)
    );
    let json = cached_run(dir.path(), &["verify", "--json", file]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let methods = doc["files"][0]["methods"].as_array().unwrap();
    assert!(methods
        .iter()
        .all(|m| m["cached"] == true && m["outcome"] == "verified"));
    let fresh = cached_run(dir.path(), &["verify", "--no-cache", file]);
    assert_eq!(fresh.status.code(), Some(0));
    assert!(!stdout(&fresh).contains("cached"), "{}", stdout(&fresh));
    let off = alpinist()
        .env(alpinist::cache::DIR_ENV, dir.path())
        .args(["verify", file])
        .output()
        .unwrap();
    assert!(
        !stdout(&off).contains("cached"),
        "ALPINIST_CACHE=0: {}",
        stdout(&off)
    );
}

/// `caller` relies on `callee`'s contract.
const V1: &str = include_str!("data/cache/calls.pvl");

/// Broken: `caller` was verified and cached against `callee`'s contract; the contract is
/// weakened, so `caller` must fail. Correct twin: only `callee`'s body changes, so `caller`
/// comes from the cache and `callee` is proved again.
#[test]
fn a_cached_caller_fails_once_its_callee_promises_less() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calls.pvl");
    let file_arg = file.to_str().unwrap();
    std::fs::write(&file, V1).unwrap();
    let first = cached_run(dir.path(), &["verify", file_arg]);
    assert_eq!(first.status.code(), Some(0), "{}", stdout(&first));

    std::fs::write(&file, V1.replace("\\result > 0", "\\result >= 0")).unwrap();
    let weakened = cached_run(dir.path(), &["verify", file_arg]);
    assert_eq!(weakened.status.code(), Some(1), "{}", stdout(&weakened));
    assert!(
        stdout(&weakened).contains("`caller`: failed"),
        "{}",
        stdout(&weakened)
    );

    std::fs::write(&file, V1.replace("return 1;", "return 5;")).unwrap();
    let twin = cached_run(dir.path(), &["verify", file_arg]);
    assert_eq!(twin.status.code(), Some(0), "{}", stdout(&twin));
    let out = stdout(&twin);
    let line = |name: &str| {
        out.lines()
            .find(|l| l.contains(&format!("`{name}`")))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line("caller").contains("verified") && line("caller").contains("cached"),
        "{out}"
    );
    assert!(
        line("callee").contains("verified") && !line("callee").contains("cached"),
        "{out}"
    );
}

/// `optimise` reverifies what it changed; the method it did not touch comes from the cache
/// (filled by its own verification of the input).
#[test]
fn optimise_proves_only_what_a_step_changed() {
    let dir = tempfile::tempdir().unwrap();
    let out = cached_run(
        dir.path(),
        &["optimise", "examples/loop_unroll/doubling.pvl", "--json"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let after = doc["verification_after"]["methods"].as_array().unwrap();
    let cached = |name: &str| {
        after
            .iter()
            .find(|m| m["name"] == name)
            .map(|m| (m["outcome"].clone(), m["cached"].clone()))
    };
    assert_eq!(cached("isPow2"), Some(("verified".into(), true.into())));
    assert_eq!(cached("ceilPow2"), Some(("verified".into(), false.into())));
}
