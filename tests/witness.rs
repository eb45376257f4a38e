//! Concrete failing instances (`alpinist_core::witness`): a run the search reports must be a
//! real failure. On programs that verify no run fails, an input the precondition does not
//! admit is never used, and each kind of failure the search reports has a broken program that
//! shows it and a correct twin that does not.

use alpinist_core::syntax::{MemberKind, MethodBody, Program, Span};
use alpinist_core::verify::ObligationKind;
use alpinist_core::witness::{self, Budget, Witness};

use crate::common::{pvl_files, relative};

fn program(source: &str) -> Program {
    let parsed = alpinist_core::syntax::parse(source).expect("the test program parses");
    alpinist_core::check::check(&parsed.program)
        .unwrap_or_else(|e| panic!("the test program checks: {e:?}"));
    parsed.program
}

/// The spans of every method with a body.
fn methods(program: &Program) -> Vec<(String, Span)> {
    program
        .members()
        .into_iter()
        .filter_map(|(_, member)| match &member.kind {
            MemberKind::Method(m) if matches!(m.body, MethodBody::Block(_)) => {
                Some((m.name.name.clone(), member.span))
            }
            _ => None,
        })
        .collect()
}

fn search(source: &str, method: &str, budget: &Budget) -> Option<Witness> {
    let program = program(source);
    let (_, span) = methods(&program)
        .into_iter()
        .find(|(name, _)| name == method)
        .expect("the method exists");
    witness::search(&program, span, budget).witness
}

fn small() -> Budget {
    Budget {
        max_runs: 40,
        ..Budget::default()
    }
}

#[test]
fn no_run_of_a_verified_program_fails() {
    let mut files = pvl_files("examples");
    files.extend(pvl_files("tests/data/verify_ok"));
    assert!(files.len() > 50, "the verified programs went missing");
    let mut problems = Vec::new();
    let (mut searched, mut passed) = (0, 0);
    for path in &files {
        let source = std::fs::read_to_string(path).expect("readable");
        let Ok(parsed) = alpinist_core::syntax::parse(&source) else {
            continue;
        };
        if alpinist_core::check::check(&parsed.program).is_err() {
            continue;
        }
        for (name, span) in methods(&parsed.program) {
            let found = witness::search(&parsed.program, span, &small());
            if let Some(w) = found.witness {
                problems.push(format!("{} `{name}`: {w:?}", relative(path)));
            }
            // Methods the search could not start (no input it can build) do not count; of
            // the others, most must run to their end. Instance methods still count: the
            // interpreter not running objects is a gap this bound keeps visible.
            searched += usize::from(found.runs > 0);
            passed += usize::from(found.passed > 0);
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Not vacuous: most methods run to their end from some admitted input.
    eprintln!("{passed} of {searched} methods ran to their end from an admitted input");
    assert!(passed * 2 > searched, "{passed} of {searched}");
}

const BARRIER: &str = "
class C {
  context_everywhere a != null && a.length == n && n >= 2;
  requires (\\forall* int i; 0 <= i && i < n; Perm(a[i], write));
  void k(int n, int[] a) {
    par p(int t = 0 .. n)
      requires Perm(a[t], write);
    {
      barrier(p) {
        context 0 <= t && t < n;
        requires Perm(a[t], write);
        ensures Perm(a[t], SHARE) ** Perm(a[(t + 1) % n], 1\\2);
      }
    }
  }
}";

#[test]
fn a_barrier_that_hands_out_more_than_the_threads_brought_fails() {
    let broken = BARRIER.replace("SHARE", "write");
    let w = search(&broken, "k", &small()).expect("a failing run");
    assert_eq!(w.kind, ObligationKind::BarrierNotJustified, "{w:?}");
    assert!(w.input.iter().any(|(n, v)| n == "n" && v == "2"), "{w:?}");
    let twin = BARRIER.replace("SHARE", "1\\2");
    assert!(search(&twin, "k", &small()).is_none());
}

const WRITE: &str = "
class C {
  context_everywhere a != null && a.length == n;
  requires (\\forall* int i; 0 <= i && i < n; Perm(a[i], AMOUNT));
  void k(int n, int[] a) {
    if (n > 2) {
      a[1] = 3;
    }
  }
}";

#[test]
fn a_write_under_a_read_share_fails_only_where_it_runs() {
    let broken = WRITE.replace("AMOUNT", "1\\2");
    let w = search(&broken, "k", &small()).expect("a failing run");
    assert_eq!(w.kind, ObligationKind::InsufficientWritePermission);
    assert!(w.input.iter().any(|(n, v)| n == "n" && v == "3"), "{w:?}");
    assert!(search(&WRITE.replace("AMOUNT", "write"), "k", &small()).is_none());
}

#[test]
fn inputs_the_precondition_does_not_admit_are_never_used() {
    // Two full permissions of one cell: no input satisfies it, so the race below is no
    // failure (the method verifies vacuously).
    let vacuous = "
class C {
  context_everywhere a != null && a.length == 2;
  requires Perm(a[0], write) ** Perm(a[0], write);
  void k(int[] a) {
    par p(int t = 0 .. 2) { a[0] = t; }
  }
}";
    assert!(search(vacuous, "k", &small()).is_none());
    // A bound beyond the search's sizes, an assumption that is false, an undecided conjunct.
    for (pre, body) in [
        ("requires n > 100;", "assert n < 0;"),
        ("requires n >= 0;", "assume n > 1000; assert n < 0;"),
        (
            "requires n >= 0 ** (\\forall int i; true; i != n);",
            "assert n < 0;",
        ),
    ] {
        let source = format!("class C {{ {pre} void k(int n) {{ {body} }} }}");
        assert!(search(&source, "k", &small()).is_none(), "{source}");
        // The same body without the restriction fails at once.
        let open = "class C { requires n >= 0; void k(int n) { assert n < 0; } }".to_string();
        assert_eq!(
            search(&open, "k", &small()).map(|w| w.kind),
            Some(ObligationKind::AssertFailed)
        );
    }
}

#[test]
fn ghost_code_that_may_move_permissions_stops_permission_checks() {
    // The (trusted) ghost lemma turns a half into a full permission; ghost code is not run,
    // so this is not followed, and the write after it must not be reported.
    let source = "
class C {
  requires a != null && a.length == 1 ** Perm(a[0], 1\\2);
  ensures Perm(a[0], write);
  void whole(int[] a);

  requires a != null && a.length == 1 ** Perm(a[0], 1\\2);
  void k(int[] a) {
    ghost whole(a);
    a[0] = 1;
  }
}";
    assert!(search(source, "k", &small()).is_none());
    let without = source.replace("ghost whole(a);", "");
    assert_eq!(
        search(&without, "k", &small()).map(|w| w.kind),
        Some(ObligationKind::InsufficientWritePermission)
    );
}

#[test]
fn postconditions_read_parameters_at_entry_and_results() {
    let source = "
class C {
  requires n >= 0;
  ensures \\result == n + 1;
  int k(int n) {
    n = n + 1;
    return n + OFFSET;
  }
}";
    assert!(search(&source.replace("OFFSET", "0"), "k", &small()).is_none());
    let w = search(&source.replace("OFFSET", "1"), "k", &small()).expect("a failing run");
    assert_eq!(w.kind, ObligationKind::PostconditionFailed);
}
