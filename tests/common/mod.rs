//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use alpinist::syntax::{Program, Span, StmtKind};
use proptest::prelude::*;
use serde_json::Value;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.pvl` file below `dir` (relative to the repository root), sorted.
pub fn pvl_files(dir: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "pvl") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&repo_root().join(dir), &mut files);
    files.sort();
    files
}

/// A path relative to the repository root, `/`-separated: stable in snapshots.
pub fn relative(path: &Path) -> String {
    path.strip_prefix(repo_root())
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// A snapshot name derived from a path: `examples/basic/vector_add.pvl` → `basic__vector_add`.
pub fn snapshot_name(path: &Path, below: &str) -> String {
    let rel = relative(path);
    let rel = rel.strip_prefix(below).unwrap_or(&rel);
    rel.trim_start_matches('/')
        .trim_end_matches(".pvl")
        .replace('/', "__")
}

/// The example scan kernels code generation accepts (`examples/prefix-sum/NAME.pvl`): the ones
/// `scan-test` and `emit-opencl` take and `verify --int32` must pass.
pub const SCAN_KERNELS: [&str; 7] = [
    "blelloch",
    "brent_kung",
    "chunked",
    "kogge_stone",
    "kogge_stone_16",
    "sequential",
    "sklansky",
];

/// The `alpinist` binary, run from the repository root without colours and without the
/// verified-method cache (every test proves; `tests/cache.rs` turns it on in a folder of its
/// own).
pub fn alpinist() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_alpinist"));
    command
        .current_dir(repo_root())
        .env("NO_COLOR", "1")
        .env(alpinist::cache::SWITCH_ENV, "0");
    command
}

pub fn run(args: &[&str]) -> Output {
    alpinist()
        .args(args)
        .output()
        .expect("the alpinist binary runs")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub use alpinist::syntax::spanless;

/// `//:: expect <kind> <line>:<col>` from a test file's header.
#[derive(Debug, Clone)]
pub struct Expectation {
    pub kind: String,
    pub line: usize,
    pub column: usize,
}

pub fn expectation(source: &str) -> Option<Expectation> {
    let line = source
        .lines()
        .find_map(|l| l.trim().strip_prefix("//:: expect "))?;
    let mut words = line.split_whitespace();
    let kind = words.next()?.to_string();
    let (l, c) = words.next()?.split_once(':')?;
    Some(Expectation {
        kind,
        line: l.parse().ok()?,
        column: c.parse().ok()?,
    })
}

/// The first place where two JSON values differ, as a JSON-pointer-like path with both sides.
pub fn first_difference(a: &Value, b: &Value) -> Option<String> {
    fn go(a: &Value, b: &Value, path: &mut String) -> Option<String> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    match (x.get(k), y.get(k)) {
                        (Some(u), Some(v)) => {
                            let len = path.len();
                            path.push('/');
                            path.push_str(k);
                            if let Some(d) = go(u, v, path) {
                                return Some(d);
                            }
                            path.truncate(len);
                        }
                        (u, v) => return Some(format!("{path}/{k}: {u:?} vs {v:?}")),
                    }
                }
                None
            }
            (Value::Array(x), Value::Array(y)) => {
                for (i, (u, v)) in x.iter().zip(y).enumerate() {
                    let len = path.len();
                    path.push_str(&format!("/{i}"));
                    if let Some(d) = go(u, v, path) {
                        return Some(d);
                    }
                    path.truncate(len);
                }
                if x.len() != y.len() {
                    return Some(format!("{path}: length {} vs {}", x.len(), y.len()));
                }
                None
            }
            _ if a == b => None,
            _ => Some(format!("{path}:\n  left:  {a}\n  right: {b}")),
        }
    }
    go(a, b, &mut String::new())
}

/// A compact, line-wrapped S-expression view of spanless IR JSON, for snapshots a person can
/// read: `{"kind": X}` wrappers collapse to X, identifiers to their name, enum variants to
/// `(Variant ...)`, structs to `{field: value ...}`.
pub fn sexpr(value: &Value) -> String {
    let mut out = String::new();
    render(&collapse(value.clone()), 0, &mut out);
    out.push('\n');
    out
}

fn collapse(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let map: serde_json::Map<String, Value> =
                map.into_iter().map(|(k, v)| (k, collapse(v))).collect();
            if map.len() == 1 {
                if let Some(inner) = map.get("kind").or_else(|| map.get("name")) {
                    if map.contains_key("kind") || inner.is_string() {
                        return inner.clone();
                    }
                }
            }
            Value::Object(map)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(collapse).collect()),
        other => other,
    }
}

const WIDTH: usize = 100;

fn one_line(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_') => {
            s.clone()
        }
        Value::String(s) => format!("{s:?}"),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(one_line).collect();
            format!("[{}]", inner.join(" "))
        }
        Value::Object(map) => {
            let (open, close, fields) = object_parts(map);
            let inner: Vec<String> = fields
                .iter()
                .map(|(label, v)| format!("{label}{}", one_line(v)))
                .collect();
            format!("{open}{}{close}", inner.join(" "))
        }
    }
}

/// An enum variant `{"V": payload}` prints as `(V ...)`; a struct as `{field: ...}`.
fn object_parts(
    map: &serde_json::Map<String, Value>,
) -> (String, &'static str, Vec<(String, &Value)>) {
    if map.len() == 1 {
        let (variant, payload) = map.iter().next().unwrap();
        let is_variant = variant.chars().next().is_some_and(char::is_uppercase);
        if is_variant {
            let fields = match payload {
                Value::Object(fields) if !fields.is_empty() && !is_variant_object(fields) => {
                    fields.iter().map(|(k, v)| (format!("{k}: "), v)).collect()
                }
                Value::Array(items) if items.len() > 1 => {
                    items.iter().map(|v| (String::new(), v)).collect()
                }
                other => vec![(String::new(), other)],
            };
            return (format!("({variant} "), ")", fields);
        }
    }
    let fields = map.iter().map(|(k, v)| (format!("{k}: "), v)).collect();
    ("{".into(), "}", fields)
}

fn is_variant_object(map: &serde_json::Map<String, Value>) -> bool {
    map.len() == 1
        && map
            .keys()
            .all(|k| k.chars().next().is_some_and(char::is_uppercase))
}

fn render(value: &Value, indent: usize, out: &mut String) {
    let flat = one_line(value);
    let children: Vec<(String, &Value)> = match value {
        Value::Array(items) => items.iter().map(|v| (String::new(), v)).collect(),
        Value::Object(map) => object_parts(map).2,
        _ => Vec::new(),
    };
    if indent + flat.len() <= WIDTH || children.is_empty() {
        out.push_str(&flat);
        return;
    }
    let (open, close) = match value {
        Value::Array(_) => ("[".to_string(), "]"),
        Value::Object(map) => {
            let (open, close, _) = object_parts(map);
            (open.trim_end().to_string(), close)
        }
        _ => unreachable!("scalars have no children"),
    };
    out.push_str(&open);
    for (label, child) in children {
        out.push('\n');
        out.push_str(&" ".repeat(indent + 2));
        out.push_str(&label);
        render(child, indent + 2, out);
    }
    out.push_str(close);
}

/// Runs `alpinist optimise FILE` on an example that must apply and reverify (exit 0): the
/// applied `gpuopt` line (`gpuopt_kind`, e.g. `iter_merge`) is gone, the report says `done`
/// and gives the times, and the output parses and type-checks. Returns the optimised PVL.
pub fn optimise_applies(path: &str, gpuopt_kind: &str, done: &str) -> String {
    let out = run(&["optimise", path]);
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{path}: {err}");
    assert!(
        !text.contains(&format!("gpuopt {gpuopt_kind}")),
        "{path}: applied gpuopt kept:\n{text}"
    );
    assert!(text.contains("while"), "{path}: the loop is gone:\n{text}");
    assert!(err.contains(done), "{path}: {err}");
    assert!(err.contains("applicability check:"), "{path}: {err}");
    assert!(err.contains("verification: before"), "{path}: {err}");
    // The output is a PVL program that parses and type-checks.
    let parsed = alpinist::syntax::parse(&text).unwrap_or_else(|e| panic!("{path}: {e:?}"));
    alpinist::check::check(&parsed.program).unwrap_or_else(|e| panic!("{path}: {e:?}"));
    text
}

/// Runs `alpinist optimise FLAGS -o OUT FILE`, which must succeed with nothing on stdout;
/// returns the report (stderr) and the text written to OUT.
pub fn optimise_to_file(flags: &[&str], file: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("out.pvl");
    let out_str = out_path.to_string_lossy().into_owned();
    let mut args = vec!["optimise"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["-o", &out_str, file]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
    (stderr(&out), std::fs::read_to_string(&out_path).unwrap())
}

/// Interpreter runs of a method: the int parameters before the arrays, and the arrays.
pub type Runs = Vec<(Vec<i128>, Vec<Vec<i128>>)>;

/// Runs `method` on the int arguments followed by the arrays: its result and the arrays' final
/// contents. A race or any other interpreter error fails the test.
pub fn outcome(
    program: &alpinist::syntax::Program,
    method: &str,
    ints: &[i128],
    arrays: &[Vec<i128>],
) -> (Option<alpinist::interp::Value>, Vec<Vec<i128>>) {
    use alpinist::interp::{self, Memory, Value};
    let mut memory = Memory::new();
    let refs: Vec<_> = arrays.iter().map(|a| memory.alloc_ints(a)).collect();
    let mut args: Vec<Value> = ints.iter().map(|&v| Value::Int(v)).collect();
    args.extend(refs.iter().map(|&r| Value::Array(r)));
    let out = interp::run(program, method, &args, memory, &interp::Limits::default())
        .unwrap_or_else(|e| panic!("{method} on {ints:?} {arrays:?}: {e}"));
    let arrays = refs.iter().map(|&r| out.memory.ints(r).unwrap()).collect();
    (out.result, arrays)
}

/// The optimised program computes what the original computes on every run (same result, same
/// final arrays), and every run computes something (else it would compare nothing).
pub fn assert_same_meaning(
    original: &alpinist::syntax::Program,
    optimised: &alpinist::syntax::Program,
    method: &str,
    runs: &Runs,
    label: &str,
) {
    assert_ne!(original, optimised, "{label}: nothing changed");
    for (ints, arrays) in runs {
        let before = outcome(original, method, ints, arrays);
        let after = outcome(optimised, method, ints, arrays);
        assert_eq!(before, after, "{label} on {ints:?} {arrays:?}");
        assert!(
            before.0.is_some() || &before.1 != arrays,
            "{label}: the run changed nothing, so it compares nothing"
        );
    }
}

/// The program with every loop `gpuopt` (`loop_unroll`, `iter_merge`) applied through the
/// library, innermost first; a refusal fails the test.
pub fn apply_loop_gpuopts(program: &alpinist::syntax::Program) -> alpinist::syntax::Program {
    use alpinist::syntax::{ExprKind, GpuOptKind, StmtKind};
    use alpinist::transform::{self, Optimisation};
    let mut requests = Vec::new();
    let mut copy = program.clone();
    copy.visit_stmt_lists_mut(&mut |stmts| {
        for pair in stmts.windows(2) {
            let StmtKind::GpuOpt(g) = &pair[0].kind else {
                continue;
            };
            let (var, factor, merge) = match &g.kind {
                GpuOptKind::LoopUnroll { var, factor } => (var, factor, false),
                GpuOptKind::IterMerge { var, factor } => (var, factor, true),
                _ => continue,
            };
            let ExprKind::IntLit(k) = &factor.kind else {
                panic!("a literal factor")
            };
            let (var, factor) = (var.name.clone(), u32::try_from(k).unwrap());
            let optimisation = if merge {
                Optimisation::Merge { var, factor }
            } else {
                Optimisation::Unroll { var, factor }
            };
            requests.push((pair[1].span, optimisation));
        }
    });
    assert!(!requests.is_empty(), "no loop gpuopt");
    requests.sort_by_key(|(span, _)| span.end - span.start);
    let limits = alpinist::verify::Limits::default();
    requests
        .into_iter()
        .fold(program.clone(), |current, (span, optimisation)| {
            transform::apply(&current, span, &optimisation, &limits)
                .unwrap_or_else(|r| panic!("refused: {r}"))
                .program
        })
}

/// Runs `alpinist args`, which must refuse (exit 1) with `code` and `message` on stderr (the
/// message matched with whitespace and miette's wrapping flattened) and print no program.
/// Returns stderr.
pub fn assert_refused(args: &[&str], code: &str, message: &str) -> String {
    let out = run(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(err.contains(code), "{args:?}: {err}");
    let flat = err.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = flat.replace(" │ ", " ");
    assert!(
        flat.contains(message),
        "{args:?}: expected {message:?} in {flat}"
    );
    assert!(
        stdout(&out).is_empty(),
        "{args:?}: refused but printed a program"
    );
    err
}

/// The first `while` or `for` loop of `program`.
pub fn first_loop(program: &Program) -> Span {
    let mut span = None;
    program.visit_stmts(&mut |s| {
        if matches!(s.kind, StmtKind::While { .. } | StmtKind::For { .. }) && span.is_none() {
            span = Some(s.span);
        }
    });
    span.expect("a loop")
}

/// A loop within the merging (and unrolling) template, inside a par block of `threads` threads: each thread
/// folds every value of the loop variable into its cell, in order. Written as a `while` loop,
/// or (`as_for`) as the `for` loop that means the same.
pub fn random_loop(
    (op, step, start, cmp, bound): (&str, i128, i128, &str, i128),
    threads: i128,
    as_for: bool,
) -> String {
    let body = "a[tid] = (a[tid] * 7 + i + tid) % 100003;";
    let looped = if as_for {
        format!("for (int i = {start}; i {cmp} {bound}; i = i {op} {step}) {{ {body} }}")
    } else {
        format!("int i = {start}; while (i {cmp} {bound}) {{ {body} i = i {op} {step}; }}")
    };
    format!(
        "class P {{
  context_everywhere a != null && a.length == {threads};
  context (\\forall* int k; 0 <= k && k < {threads}; Perm(a[k], write));
  void m(int[] a) {{
    par p(int tid = 0 .. {threads})
      context Perm(a[tid], write);
    {{
      {looped}
    }}
  }}
}}
"
    )
}

/// (update operator, step, start, comparison, bound) within the template, always terminating.
pub fn template_loop() -> impl Strategy<Value = (&'static str, i128, i128, &'static str, i128)> {
    prop_oneof![
        (
            1i128..4,
            -10i128..10,
            prop::sample::select(vec!["<", "<="]),
            0i128..30
        )
            .prop_map(|(c, s, cmp, d)| ("+", c, s, cmp, s + d)),
        (
            1i128..4,
            -10i128..10,
            prop::sample::select(vec![">", ">="]),
            0i128..30
        )
            .prop_map(|(c, s, cmp, d)| ("-", c, s, cmp, s - d)),
        (
            2i128..4,
            1i128..6,
            prop::sample::select(vec!["<", "<="]),
            1i128..400
        )
            .prop_map(|(c, s, cmp, b)| ("*", c, s, cmp, b)),
        (
            2i128..4,
            0i128..2000,
            prop::sample::select(vec![">", ">="]),
            1i128..20
        )
            .prop_map(|(c, s, cmp, b)| ("/", c, s, cmp, b)),
    ]
}

/// The property both loop optimisations share: `optimisation` applied to the loop of
/// `random_loop(shape, threads, as_for)` either is a refusal the template allows (`allowed`:
/// too few iterations for the factor) or leaves the interpreter's outcome — final state, or
/// the race it reports — unchanged on `cells`.
pub fn assert_loop_optimisation_keeps_meaning(
    (shape, threads, as_for): ((&str, i128, i128, &str, i128), i128, bool),
    cells: &[i128],
    optimisation: &alpinist::transform::Optimisation,
    allowed: impl Fn(&alpinist::transform::Refusal) -> bool,
) -> Result<(), TestCaseError> {
    let text = &random_loop(shape, threads, as_for);
    let original = alpinist::syntax::parse(text).unwrap().program;
    let result = alpinist::transform::apply(
        &original,
        first_loop(&original),
        optimisation,
        &alpinist::verify::Limits::default(),
    );
    let optimised = match result {
        Ok(applied) => applied.program,
        Err(r) if allowed(&r) => return Ok(()),
        Err(r) => panic!("refused within the template: {r}\n{text}"),
    };
    let arrays = vec![cells[..threads as usize].to_vec()];
    let before = outcome(&original, "m", &[], &arrays);
    let after = outcome(&optimised, "m", &[], &arrays);
    prop_assert_eq!(before, after, "{}", text);
    Ok(())
}

/// The example `file` optimised by its annotation (the line `line`) and, with that line
/// removed, by the flag `flag spec` print the same program (`--no-verify`: the example tests
/// reverify). Returns the temporary folder and the path of the file without the line.
pub fn assert_flag_does_what_the_annotation_does(
    file: &str,
    line: &str,
    flag: &str,
    spec: &str,
) -> (tempfile::TempDir, String) {
    let annotated = run(&["optimise", "--no-verify", file]);
    assert_eq!(annotated.status.code(), Some(0), "{}", stderr(&annotated));
    let text = std::fs::read_to_string(repo_root().join(file)).unwrap();
    assert!(text.contains(line), "{file} has no line {line:?}");
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("bare.pvl");
    std::fs::write(&bare, text.replace(line, "")).unwrap();
    let bare = bare.to_string_lossy().into_owned();
    let flagged = run(&["optimise", "--no-verify", flag, spec, &bare]);
    assert_eq!(flagged.status.code(), Some(0), "{}", stderr(&flagged));
    assert_eq!(stdout(&annotated), stdout(&flagged));
    (dir, bare)
}

/// The pipeline's settings for a test: default limits, one job, no cache; `verify` the input
/// and every step's output, or not.
pub fn pipeline_settings(verify: bool) -> alpinist::pipeline::Settings {
    alpinist::pipeline::Settings {
        verify,
        verify_input: true,
        limits: alpinist::verify::Limits::default(),
        jobs: 1,
        cache: None,
        int32: None,
    }
}

/// `text`'s `gpuopt` lines applied through the library without verification (applicability
/// checks included): the parsed input, and the pipeline's answer.
pub fn apply_annotations(
    text: &str,
) -> (
    alpinist::syntax::Parsed,
    Result<alpinist::pipeline::Optimised, alpinist::pipeline::Stop>,
) {
    let parsed = alpinist::syntax::parse(text).unwrap();
    let requests = alpinist::pipeline::plan(&parsed.program, Vec::new(), None).unwrap();
    let done = alpinist::pipeline::run(
        &parsed.program,
        &parsed.trivia,
        &requests,
        &pipeline_settings(false),
    );
    (parsed, done)
}

/// The example `file` before and after its `gpuopt` lines, applied through the library without
/// reverification (the end-to-end tests reverify).
pub fn annotations_applied(file: &str) -> (Program, Program) {
    let text = std::fs::read_to_string(repo_root().join(file)).unwrap();
    let (parsed, done) = apply_annotations(&text);
    let done = done.unwrap_or_else(|e| panic!("{file}: {e:?}"));
    (
        parsed.program,
        alpinist::syntax::parse(&done.text).unwrap().program,
    )
}
