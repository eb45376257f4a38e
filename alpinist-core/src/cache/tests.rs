use super::*;
use crate::verify::Limits;
use crate::witness::{verify_and_confirm, Budget};

fn parsed(text: &str) -> Program {
    let p = syntax::parse(text).expect("test programs parse").program;
    crate::check::check(&p).expect("test programs check");
    p
}

fn key_of(text: &str, routine: &str) -> Key {
    keys(
        &parsed(text),
        &config(&Limits::default(), &Budget::default()),
    )
    .into_iter()
    .find(|k| k.name == routine)
    .expect("the routine is there")
}

/// A cache in a folder of its own under the system's temporary folder, removed when the test
/// is done with it (also by the Rust front end's tests).
pub(crate) struct TempCache {
    cache: MethodCache,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for TempCache {
    type Target = MethodCache;

    fn deref(&self) -> &MethodCache {
        &self.cache
    }
}

pub(crate) fn fresh_cache(name: &str) -> TempCache {
    let dir = tempfile::Builder::new()
        .prefix(&format!("alpinist-cache-test-{name}-"))
        .tempdir()
        .unwrap();
    TempCache {
        cache: MethodCache::at(dir.path().to_path_buf()),
        _dir: dir,
    }
}

fn verify(text: &str, cache: &MethodCache) -> Vec<MethodReport> {
    let limits = Limits::default();
    verify_and_confirm(
        &parsed(text),
        &|_| Ok(limits),
        None,
        1,
        &Budget::default(),
        Some((cache, &limits)),
    )
}

fn outcome_of(reports: &[MethodReport], name: &str) -> (Outcome, bool) {
    let r = reports.iter().find(|r| r.name == name).expect("reported");
    (r.outcome(), r.cached)
}

/// `caller` relies on `callee`'s contract.
const CALLER_CALLEE: &str = include_str!("../../../tests/data/cache/calls.pvl");

#[test]
fn a_key_follows_other_routines_contracts_not_their_statements() {
    let caller = key_of(CALLER_CALLEE, "caller");
    let body_changed = CALLER_CALLEE.replace("return 1;", "return 2;");
    assert_eq!(key_of(&body_changed, "caller"), caller);
    assert_ne!(
        key_of(&body_changed, "callee"),
        key_of(CALLER_CALLEE, "callee")
    );
    let contract_changed = CALLER_CALLEE.replace("\\result > 0", "\\result >= 0");
    assert_ne!(
        key_of(&contract_changed, "caller").material,
        caller.material
    );
}

#[test]
fn a_key_follows_what_the_checker_reads_from_other_bodies() {
    let caller = key_of(CALLER_CALLEE, "caller");
    // The callee may not terminate now (a loop without a measure): a ghost call of it would
    // fail, so every key changes.
    let loops = CALLER_CALLEE.replace("return 1;", "while (true) { } return 1;");
    assert_ne!(key_of(&loops, "caller").material, caller.material);
    // The callee calls the caller: both are in a cycle, which a ghost call may not enter.
    let cycle = CALLER_CALLEE.replace("return 1;", "caller(); return 1;");
    assert_ne!(key_of(&cycle, "caller").material, caller.material);
    // Another routine runs the caller from ghost code: the caller must now terminate.
    let ghost_use = CALLER_CALLEE.replace(
        "    void caller() {",
        "    void user() { ghost caller(); }\n\n    void caller() {",
    );
    assert_ne!(key_of(&ghost_use, "caller").material, caller.material);
}

#[test]
fn a_key_follows_the_routine_layout_not_its_place() {
    let caller = key_of(CALLER_CALLEE, "caller");
    let moved = format!("// a comment above everything\n\n{CALLER_CALLEE}");
    assert_eq!(key_of(&moved, "caller").material, caller.material);
    let inner = CALLER_CALLEE.replace("int y = callee(3);", "int y = callee(3); // why");
    assert_ne!(key_of(&inner, "caller").material, caller.material);
    let limits = keys(&parsed(CALLER_CALLEE), "other limits");
    assert_ne!(limits[1].material, caller.material);
}

#[test]
fn verified_routines_come_back_from_the_cache_with_their_obligations() {
    let cache = fresh_cache("roundtrip");
    let first = verify(CALLER_CALLEE, &cache);
    assert!(first
        .iter()
        .all(|r| r.outcome() == Outcome::Verified && !r.cached));
    let moved = format!("// moved down\n{CALLER_CALLEE}");
    let second = verify(&moved, &cache);
    assert!(second
        .iter()
        .all(|r| r.outcome() == Outcome::Verified && r.cached));
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(a.name, b.name);
        assert_eq!(a.obligations.len(), b.obligations.len());
        for (x, y) in a.obligations.iter().zip(&b.obligations) {
            assert_eq!(
                (x.kind, x.span.start + 14, x.span.end + 14),
                (y.kind, y.span.start, y.span.end)
            );
        }
    }
}

/// Broken: the callee's contract is weakened after the caller was cached; the caller relied on
/// it and must fail, not come back verified.
#[test]
fn a_weakened_callee_contract_fails_the_cached_caller() {
    let cache = fresh_cache("weakened");
    verify(CALLER_CALLEE, &cache);
    let weakened = CALLER_CALLEE.replace("\\result > 0", "\\result >= 0");
    let reports = verify(&weakened, &cache);
    assert_eq!(outcome_of(&reports, "caller"), (Outcome::Failed, false));
    // Correct twin: a new callee body under the same contract; the caller is not proved again.
    let reports = verify(&CALLER_CALLEE.replace("return 1;", "return 7;"), &cache);
    assert_eq!(outcome_of(&reports, "caller"), (Outcome::Verified, true));
    assert_eq!(outcome_of(&reports, "callee"), (Outcome::Verified, false));
}

/// Broken: `spin` recurses without a measure, verified for partial correctness while no ghost
/// code runs it; then another routine's new body (bodies are not in `spin`'s key) runs it from
/// ghost code, where it must terminate. The cached verdict must not be used: `spin` now fails
/// (E0619).
#[test]
fn a_ghost_use_made_by_another_body_is_not_served_from_the_cache() {
    let cache = fresh_cache("ghost-use");
    let unused = "class C {\n  void user() { int x = 0; }\n\n  void spin() { spin(); }\n}\n";
    for cached in [false, true] {
        let reports = verify(unused, &cache);
        assert_eq!(outcome_of(&reports, "spin"), (Outcome::Verified, cached));
    }
    let used = unused.replace("int x = 0;", "ghost spin();");
    let reports = verify(&used, &cache);
    assert_eq!(outcome_of(&reports, "spin"), (Outcome::Failed, false));
}

#[test]
fn failures_are_never_stored() {
    let cache = fresh_cache("failures");
    let broken = CALLER_CALLEE.replace("assert y > 0;", "assert y > 1;");
    for _ in 0..2 {
        let reports = verify(&broken, &cache);
        assert_eq!(outcome_of(&reports, "caller"), (Outcome::Failed, false));
    }
}

#[test]
fn unreadable_or_foreign_entries_are_misses() {
    let cache = fresh_cache("corrupt");
    verify(CALLER_CALLEE, &cache);
    let key = key_of(CALLER_CALLEE, "caller");
    let path = cache.path(&key);
    std::fs::write(&path, "{ not json").unwrap();
    assert!(cache.lookup(&key).is_none());
    // An entry of another key under this file name (a digest collision): not used.
    let other = key_of(&CALLER_CALLEE.replace("3", "4"), "caller");
    let report = verify(CALLER_CALLEE, &fresh_cache("corrupt-other"))
        .into_iter()
        .find(|r| r.name == "caller")
        .unwrap();
    let mut foreign = report.clone();
    foreign.span = other.span;
    assert!(cache.store(&other, &foreign));
    std::fs::copy(cache.path(&other), &path).unwrap();
    assert!(cache.lookup(&key).is_none());
    let reports = verify(CALLER_CALLEE, &cache);
    assert_eq!(outcome_of(&reports, "caller"), (Outcome::Verified, false));
}

#[test]
fn the_environment_names_the_folder_or_turns_the_cache_off() {
    let with = |vars: &[(&str, &str)]| {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        MethodCache::from_vars(&move |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.into())
        })
    };
    let home = [("HOME", "/home/u")];
    assert_eq!(
        with(&home),
        Some(MethodCache::at("/home/u/.cache/alpinist"))
    );
    let xdg = [("HOME", "/home/u"), ("XDG_CACHE_HOME", "/x")];
    assert_eq!(with(&xdg), Some(MethodCache::at("/x/alpinist")));
    let dir = [("HOME", "/home/u"), (DIR_ENV, "/d")];
    assert_eq!(with(&dir), Some(MethodCache::at("/d")));
    for off in ["0", "off", "FALSE", " no "] {
        assert_eq!(
            with(&[("HOME", "/home/u"), (SWITCH_ENV, off)]),
            None,
            "{off}"
        );
    }
    assert_eq!(with(&[("HOME", "/home/u"), (SWITCH_ENV, "1")]), with(&home));
    assert_eq!(with(&[]), None);
}

#[test]
fn pruning_keeps_the_most_recent_entries() {
    let cache = fresh_cache("prune");
    let dir = cache.dir().join(FORMAT);
    std::fs::create_dir_all(&dir).unwrap();
    for k in 0..12 {
        std::fs::write(dir.join(format!("{k:02}.json")), "{}").unwrap();
        // Distinct modification times, oldest first.
        let when = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000 + k);
        let file = std::fs::File::options()
            .write(true)
            .open(dir.join(format!("{k:02}.json")))
            .unwrap();
        file.set_modified(when).unwrap();
    }
    cache.prune(20);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 12);
    cache.prune(8);
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["06.json", "07.json", "08.json", "09.json", "10.json", "11.json"]
    );
}
