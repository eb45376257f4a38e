//! The optimisation pipeline: one API for every client (`alpinist optimise`, `run`, `tune`, and
//! `#[gpuopt(..)]` in kernels written in Rust, `rust/expand.rs`). Data flows one way:
//!
//! 1. [`plan`] — the file's `gpuopt` annotations and the requested flags become [`Request`]s
//!    on target spans (a flag replaces an annotation of its kind on the same target), in the
//!    chain order: by kind (linearisation, fusion, merging, prefetching, tiling, unrolling;
//!    `Optimisation::chain_rank`), within a kind inner targets first (transforming an outer
//!    statement copies the inner ones), annotations before flags, flags in their order;
//! 2. [`run`] — the input must verify; each request goes through [`transform::apply`] (its
//!    applicability check, then the rewrite of code and annotations) in order, its `gpuopt`
//!    line removed; after each step the program is printed and the *text* is parsed and
//!    verified, as a user would, before the next step starts (with the verified-method cache,
//!    only the routines the step changed are proved). A request whose target an earlier step
//!    rewrote (copied or removed) is refused with both spans (E0911).
//!
//! Verification is `verify` on Z3 with concrete runs where Z3 leaves a routine unknown
//! ([`crate::witness::verify_and_confirm`]), the same as `alpinist verify`. Errors are types
//! ([`PlanError`], [`Stop`]); clients turn spans into positions and choose exit codes.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::cache::MethodCache;
use crate::syntax::{
    self, Expr, ExprKind, GpuOpt, GpuOptKind, MemberKind, MethodBody, Program, Span, Stmt,
    StmtKind, SyntaxError, Trivia,
};
use crate::transform::{self, unroll, Optimisation, Refusal, Timings};
use crate::verify::{Limits, MethodReport, Outcome};

/// One optimisation of one target (a loop, or a par statement for tiling).
#[derive(Clone, Debug)]
pub struct Request {
    pub target: Span,
    pub optimisation: Optimisation,
    /// The `gpuopt` line it came from, removed from the output once applied.
    pub gpuopt: Option<Span>,
}

/// Why the requests cannot be formed: the annotations or flags do not designate what they
/// must (a usage error, not a refusal of the optimisation).
#[derive(Clone, Debug, PartialEq)]
pub enum PlanError {
    /// A `gpuopt` line that is not an optimisation that exists (or whose number is not a
    /// positive literal).
    Annotation { message: String, gpuopt: Span },
    /// A method-level `gpuopt` that names a loop.
    MethodLevelLoop { gpuopt: Span },
    /// A method-level `gpuopt tile` on a method with no par block, or several.
    TileTarget { gpuopt: Span, pars: Vec<Span> },
    /// A statement-level `gpuopt` not right before what it targets (`a loop`, `a par block`).
    NotBefore { gpuopt: Span, what: &'static str },
    /// `--tile` with no par block, or several.
    TileFlagTarget { pars: Vec<Span> },
    /// `--fuse F` with no run of at least F consecutive par blocks, or several (their first
    /// par blocks).
    FuseFlagTarget { count: u32, runs: Vec<Span> },
    /// `--prefetch ARRAY:..` with no method, or several, that has a par block and the array.
    PrefetchTarget { array: String, methods: Vec<Span> },
    /// `--linearise MATRIX:..` with no method, or several in different classes, that has
    /// the matrix as a parameter or mentions it as a field.
    LineariseTarget { matrix: String, methods: Vec<Span> },
    /// `--unroll`/`--merge` (`flag`) with no loop whose guard reads `var`.
    NoLoop {
        flag: &'static str,
        var: Option<String>,
    },
    /// `--unroll`/`--merge` with several such loops.
    Loops {
        flag: &'static str,
        var: Option<String>,
        loops: Vec<(Span, Vec<String>)>,
    },
    /// The one loop's guard reads several variables, none of them clearly the loop variable.
    LoopVariable { target: Span, names: Vec<String> },
    /// No annotation and no flag.
    Nothing,
}

impl PlanError {
    /// The message, with `at` rendering a span as a position (`line:column`).
    pub fn message(&self, at: &dyn Fn(Span) -> String) -> String {
        let which = |var: &Option<String>| {
            var.as_ref()
                .map_or(String::new(), |v| format!(" over `{v}`"))
        };
        match self {
            PlanError::Annotation { message, gpuopt } => {
                format!("{message} (the `gpuopt` at {})", at(*gpuopt))
            }
            PlanError::MethodLevelLoop { gpuopt } => format!(
                "the `gpuopt` at {} names a loop: put it right before that loop",
                at(*gpuopt)
            ),
            PlanError::TileTarget { gpuopt, pars } if pars.is_empty() => format!(
                "the `gpuopt tile` at {} stands on a method without a par block",
                at(*gpuopt)
            ),
            PlanError::TileTarget { gpuopt, pars } => format!(
                "the `gpuopt tile` at {} stands on a method with {} par blocks ({}): put it right before the one to tile",
                at(*gpuopt),
                pars.len(),
                pars.iter().map(|s| at(*s)).collect::<Vec<_>>().join(", ")
            ),
            PlanError::NotBefore { gpuopt, what } => format!(
                "the `gpuopt` at {} does not stand right before {what}",
                at(*gpuopt)
            ),
            PlanError::TileFlagTarget { pars } if pars.is_empty() => "no par block to tile".into(),
            PlanError::TileFlagTarget { pars } => format!(
                "{} par blocks match `--tile`; put `gpuopt tile` right before the one to tile:\n{}",
                pars.len(),
                pars.iter()
                    .map(|s| format!("  the par block at {}", at(*s)))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
            PlanError::FuseFlagTarget { count, runs } if runs.is_empty() => {
                format!("no {count} consecutive par blocks to fuse")
            }
            PlanError::FuseFlagTarget { count, runs } => format!(
                "{} runs of {count} or more consecutive par blocks match `--fuse`; put `gpuopt fuse` right before the first par block of the one to fuse:\n{}",
                runs.len(),
                runs.iter()
                    .map(|s| format!("  the par blocks from {}", at(*s)))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
            PlanError::PrefetchTarget { array, methods } if methods.is_empty() => format!(
                "no method with a par block has a parameter or field `{array}` for `--prefetch`"
            ),
            PlanError::PrefetchTarget { array, methods } => format!(
                "{} methods with par blocks have `{array}` ({}): put `gpuopt glob_to_reg` before the one to optimise",
                methods.len(),
                methods.iter().map(|s| at(*s)).collect::<Vec<_>>().join(", ")
            ),
            PlanError::LineariseTarget { matrix, methods } if methods.is_empty() => format!(
                "no method has a matrix parameter `{matrix}`, or mentions a matrix field `{matrix}`, for `--linearise`"
            ),
            PlanError::LineariseTarget { matrix, methods } => format!(
                "{} methods have `{matrix}` ({}): put `gpuopt matrix_lin` before the one to optimise",
                methods.len(),
                methods.iter().map(|s| at(*s)).collect::<Vec<_>>().join(", ")
            ),
            PlanError::NoLoop { flag, var } => format!("no loop{} for `{flag}`", which(var)),
            PlanError::Loops { flag, var, loops } => format!(
                "{} loops{} match `{flag}`; pick one with `--loop VAR`:\n{}",
                loops.len(),
                which(var),
                loops
                    .iter()
                    .map(|(span, names)| format!(
                        "  the loop at {} (guard reads {})",
                        at(*span),
                        names.join(", ")
                    ))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
            PlanError::LoopVariable { target, names } => format!(
                "the guard of the loop at {} reads {}: say which is the loop variable with `--loop VAR`",
                at(*target),
                names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            ),
            PlanError::Nothing => {
                "nothing to optimise: no `gpuopt` annotation and no `--unroll`, `--merge`, `--tile`, `--fuse`, `--prefetch` or `--linearise`"
                    .into()
            }
        }
    }
}

/// The requests of `program`'s `gpuopt` annotations and of `flags` (`var`: the loop variable
/// `--loop` names), in the order they are applied.
pub fn plan(
    program: &Program,
    flags: Vec<Optimisation>,
    var: Option<&str>,
) -> Result<Vec<Request>, PlanError> {
    let mut requests = annotation_requests(program)?;
    for optimisation in flags {
        let mut request = flag_request(program, optimisation, var)?;
        // A flag overrides an annotation of the same kind on the same target (for prefetching,
        // of the same cell), whose line it consumes: the output has neither.
        requests.retain(|r| {
            let same_kind = match (&request.optimisation, &r.optimisation) {
                (Optimisation::Prefetch { .. }, _) => r.optimisation == request.optimisation,
                (
                    Optimisation::Linearise { matrix, .. },
                    Optimisation::Linearise { matrix: other, .. },
                ) => matrix == other,
                (o, _) => std::mem::discriminant(&r.optimisation) == std::mem::discriminant(o),
            };
            let replaced = r.target == request.target && same_kind;
            if replaced && request.gpuopt.is_none() {
                request.gpuopt = r.gpuopt;
            }
            !replaced
        });
        requests.push(request);
    }
    // By kind, then inner targets first (transforming an outer statement copies the inner
    // ones); stable, so annotations come before flags, and flags keep their order.
    requests.sort_by_key(|r| (r.optimisation.chain_rank(), r.target.end - r.target.start));
    if requests.is_empty() {
        return Err(PlanError::Nothing);
    }
    Ok(requests)
}

/// A verification: every routine's report and the time it all took.
#[derive(Clone, Debug)]
pub struct Verification {
    pub reports: Vec<MethodReport>,
    pub time: Duration,
}

impl Verification {
    /// The worst outcome of any routine (verified when there is none).
    pub fn outcome(&self) -> Outcome {
        let rank = |o: Outcome| match o {
            Outcome::Verified => 0,
            Outcome::Unknown => 1,
            Outcome::Unsupported => 2,
            Outcome::Failed => 3,
        };
        self.reports
            .iter()
            .map(MethodReport::outcome)
            .max_by_key(|o| rank(*o))
            .unwrap_or(Outcome::Verified)
    }
}

/// One applied request, with its times and the verification of the program it produced.
#[derive(Clone, Debug)]
pub struct Step {
    pub request: Request,
    pub timings: Timings,
    /// What the report says beyond "applied" (fusion that stopped before a kernel).
    pub note: Option<String>,
    /// The printed program after this step, parsed again and verified (`None` with `verify:
    /// false`); the routines the step did not change come from the cache, when there is one.
    pub verification: Option<Verification>,
}

/// A finished run.
#[derive(Clone, Debug)]
pub struct Optimised {
    /// The input's verification (`None` with `verify: false`).
    pub before: Option<Verification>,
    pub steps: Vec<Step>,
    /// The optimised program as printed, the applied `gpuopt` lines removed.
    pub text: String,
    /// The verification of `text` as parsed again (`None` with `verify: false`): the last
    /// step's. Anything but verified is a bug of the optimisation, or the memory limit; the
    /// chain stops at the first step whose output does not verify, so `steps` ends there.
    pub after: Option<Verification>,
}

/// Why a run stopped before its end.
#[derive(Clone, Debug)]
pub enum Stop {
    /// The input does not verify, so it is not optimised.
    InputNotVerified { before: Verification },
    /// A request was refused (its applicability check, or not implemented); `steps` were
    /// applied before it.
    Refused {
        before: Option<Verification>,
        steps: Vec<Step>,
        refusal: Box<Refusal>,
    },
    /// The printed output does not parse (a bug).
    OutputDoesNotParse { errors: Vec<SyntaxError> },
    /// The printed output parses but does not type-check (a bug): the messages.
    OutputDoesNotCheck { errors: Vec<String> },
}

/// How a run verifies.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Verify the input before and the output after (`--no-verify`: false).
    pub verify: bool,
    /// With `verify`: verify the input too (false where the caller has verified it itself:
    /// the Rust macros, with the unsigned obligations the pipeline's reparse would lose).
    pub verify_input: bool,
    pub limits: Limits,
    /// Verification threads.
    pub jobs: usize,
    /// The verified-method cache (`--no-cache`: none): the routines a step did not change are
    /// not proved again.
    pub cache: Option<MethodCache>,
    /// Verify in the 32-bit mode (kernels written in Rust, whose `i32`s are machine
    /// integers): every integer operation of executable code must stay within 32 bits. The
    /// cache is not used in that mode.
    pub int32: Option<crate::verify::Int32>,
}

/// Applies `requests` (from [`plan`]) to `program`, whose comments and blank lines are
/// `trivia`, verifying the input first and the printed output of every step.
pub fn run(
    program: &Program,
    trivia: &Trivia,
    requests: &[Request],
    settings: &Settings,
) -> Result<Optimised, Stop> {
    let verify = |p: &Program| {
        let start = Instant::now();
        let reports = crate::witness::verify_and_confirm(
            p,
            &|_| Ok(settings.limits),
            settings.int32.as_ref(),
            settings.jobs,
            &crate::witness::Budget::default(),
            settings.cache.as_ref().map(|c| (c, &settings.limits)),
        );
        Verification {
            reports,
            time: start.elapsed(),
        }
    };
    let before = match settings.verify && settings.verify_input {
        true => {
            let before = verify(program);
            if before.outcome() != Outcome::Verified {
                return Err(Stop::InputNotVerified { before });
            }
            Some(before)
        }
        false => None,
    };
    let mut current = program.clone();
    let mut steps: Vec<Step> = Vec::new();
    let mut text = syntax::print(&current, trivia);
    let mut requests = requests.to_vec();
    for at in 0..requests.len() {
        let (this, later) = requests.split_at_mut(at + 1);
        let request = &this[at];
        if let Some(refusal) = rewritten_target(&current, request, &steps) {
            return Err(Stop::Refused {
                before,
                steps,
                refusal: Box::new(refusal),
            });
        }
        let applied = match transform::apply(
            &current,
            request.target,
            &request.optimisation,
            &settings.limits,
        ) {
            Ok(applied) => applied,
            Err(refusal) => {
                return Err(Stop::Refused {
                    before,
                    steps,
                    refusal: Box::new(refusal),
                })
            }
        };
        // A step may rewrite a later request's `glob_to_reg` line (fusion renames iterators):
        // the later request names its cell as the line now does.
        for later in later {
            restate_prefetch(&current, &applied.program, later);
        }
        current = applied.program;
        remove_applied_gpuopts(&mut current, std::slice::from_ref(request));
        text = syntax::print(&current, trivia);
        // What is handed out parses and type-checks, verified or not (`--no-verify`); each
        // step's output is verified before the next step starts from it.
        let reparsed =
            syntax::parse(&text).map_err(|errors| Stop::OutputDoesNotParse { errors })?;
        crate::check::check(&reparsed.program).map_err(|errors| Stop::OutputDoesNotCheck {
            errors: errors.iter().map(|e| e.to_string()).collect(),
        })?;
        let verification = settings.verify.then(|| verify(&reparsed.program));
        let verified = verification
            .as_ref()
            .is_none_or(|v| v.outcome() == Outcome::Verified);
        steps.push(Step {
            // What was done, which a partial fusion makes less than what was asked.
            request: Request {
                optimisation: applied
                    .applied_as
                    .unwrap_or_else(|| request.optimisation.clone()),
                ..request.clone()
            },
            timings: applied.timings,
            note: applied.note,
            verification,
        });
        if !verified {
            break;
        }
    }
    let after = match settings.verify {
        true => steps.last().and_then(|s| s.verification.clone()),
        false => None,
    };
    Ok(Optimised {
        before,
        steps,
        text,
        after,
    })
}

/// In a chain, the refusal of a request whose target an earlier step rewrote: the target no
/// longer names exactly one statement (or method).
fn rewritten_target(current: &Program, request: &Request, steps: &[Step]) -> Option<Refusal> {
    let target = request.target;
    let copies = match request.optimisation {
        Optimisation::Prefetch { .. } => current
            .members()
            .iter()
            .filter(|(_, m)| matches!(&m.kind, MemberKind::Method(method) if method.span == target))
            .count(),
        _ => {
            let mut n = 0;
            current.visit_stmts(&mut |s| {
                n += usize::from(s.span == target && !matches!(s.kind, StmtKind::Block(_)));
            });
            n
        }
    };
    if copies == 1 || steps.is_empty() {
        return None;
    }
    // The step that rewrote it: the last one whose target holds it, else the last one.
    let holds = |outer: Span| outer.start <= target.start && target.end <= outer.end;
    let earlier = steps
        .iter()
        .rev()
        .find(|s| holds(s.request.target))
        .or(steps.last())?;
    Some(Refusal::TargetRewritten {
        earlier: earlier.request.optimisation.done(),
        what: request.optimisation.target_noun(),
        copies,
        span: target,
        earlier_span: earlier.request.target,
    })
}

/// A prefetch request from a `glob_to_reg` line that `before` and `after` both have: its array
/// and index as the line in `after` writes the same position.
fn restate_prefetch(before: &Program, after: &Program, request: &mut Request) {
    let (Optimisation::Prefetch { array, index }, Some(line)) =
        (&mut request.optimisation, request.gpuopt)
    else {
        return;
    };
    let cells = |program: &Program| -> Vec<(String, String)> {
        (program.members().iter())
            .flat_map(|(_, m)| m.gpuopts.iter().filter(|g| g.span == line))
            .flat_map(|g| prefetch_cells(&g.kind))
            .collect()
    };
    let (old, new) = (cells(before), cells(after));
    if let Some(k) = old.iter().position(|(a, i)| a == array && i == index) {
        if let Some((a, i)) = new.get(k) {
            (*array, *index) = (a.clone(), i.clone());
        }
    }
}

/// The cells a `glob_to_reg` line names, as (array, index) texts in order: the array is an
/// expression, `m[i]` for `glob_to_reg m[i] j`. Nothing for another kind of line.
fn prefetch_cells(kind: &GpuOptKind) -> Vec<(String, String)> {
    let GpuOptKind::GlobToReg {
        array,
        rows,
        indices,
    } = kind
    else {
        return Vec::new();
    };
    let mut array = array.name.clone();
    for row in rows {
        array = format!("{array}[{}]", syntax::print_expr(row));
    }
    (indices.iter())
        .map(|index| (array.clone(), syntax::print_expr(index)))
        .collect()
}

/// Removes the `gpuopt` lines (statement- and member-level) that requests came from.
fn remove_applied_gpuopts(program: &mut Program, requests: &[Request]) {
    let gpuopts: BTreeSet<Span> = requests.iter().filter_map(|r| r.gpuopt).collect();
    program.visit_stmt_lists_mut(&mut |stmts| {
        stmts.retain(|s| !(matches!(s.kind, StmtKind::GpuOpt(_)) && gpuopts.contains(&s.span)))
    });
    for m in program.members_mut() {
        m.gpuopts.retain(|g| !gpuopts.contains(&g.span));
    }
}

/// A `gpuopt` line as an optimisation, or why it cannot be one.
fn annotated(g: &GpuOpt) -> Result<Optimisation, PlanError> {
    annotated_kind(&g.kind).map_err(|message| PlanError::Annotation {
        message,
        gpuopt: g.span,
    })
}

fn annotated_kind(kind: &GpuOptKind) -> Result<Optimisation, String> {
    let literal = |e: &Expr, what: &str| match &e.kind {
        ExprKind::IntLit(n) => u32::try_from(n)
            .ok()
            .filter(|k| *k > 0)
            .ok_or_else(|| format!("the {what} must be a positive integer literal")),
        _ => Err(format!("the {what} must be a positive integer literal")),
    };
    match kind {
        GpuOptKind::LoopUnroll { var, factor } => Ok(Optimisation::Unroll {
            var: var.name.clone(),
            factor: literal(factor, "unrolling factor")?,
        }),
        GpuOptKind::IterMerge { var, factor } => Ok(Optimisation::Merge {
            var: var.name.clone(),
            factor: literal(factor, "merging factor")?,
        }),
        GpuOptKind::Tile { layout, size } => Ok(Optimisation::Tile {
            layout: *layout,
            size: literal(size, "tile size")?,
        }),
        GpuOptKind::MatrixLin {
            matrix,
            order,
            rows,
            cols,
        } => Ok(Optimisation::Linearise {
            matrix: matrix.name.clone(),
            order: *order,
            rows: syntax::print_expr(rows),
            cols: syntax::print_expr(cols),
        }),
        GpuOptKind::GlobToReg { .. } => {
            Err("`gpuopt glob_to_reg` stands before a method, not a statement".into())
        }
        GpuOptKind::Fuse { count, block_hint } => {
            let count = literal(count, "number of par blocks to fuse")?;
            if count < 2 {
                return Err("the number of par blocks to fuse must be at least 2".into());
            }
            let groups = match block_hint {
                Some(b) => literal(b, "number of work-groups")?,
                None => 1,
            };
            Ok(Optimisation::Fuse { count, groups })
        }
    }
}

/// Whether `name` occurs in the member's contract or body (as a name, or `this.name`).
fn mentions_name(member: &syntax::Member, name: &str) -> bool {
    let mut found = false;
    let mut look = |e: &Expr| {
        e.visit(&mut |x| match &x.kind {
            ExprKind::Name(id) => found |= id.name == name,
            ExprKind::Field { base, name: f } => {
                found |= matches!(base.kind, ExprKind::This) && f.name == name
            }
            _ => {}
        })
    };
    member.for_each_expr_deep(&mut look);
    found
}

fn is_loop(s: &Stmt) -> bool {
    matches!(s.kind, StmtKind::While { .. } | StmtKind::For { .. })
}

/// The par statements in `stmts`, inside loops and branches too.
fn par_statements(stmts: &[Stmt]) -> Vec<Span> {
    let mut out = Vec::new();
    for s in stmts {
        s.visit(&mut |s| {
            if matches!(s.kind, StmtKind::Par(_)) {
                out.push(s.span);
            }
        });
    }
    out
}

/// The `gpuopt` annotations: a loop optimisation stands right before its loop; a tiling line
/// stands before a par statement, or on a method whose body has exactly one par statement.
/// The first problem found, in source order of members, then statements.
fn annotation_requests(program: &Program) -> Result<Vec<Request>, PlanError> {
    let mut out = Vec::new();
    let mut error: Option<PlanError> = None;
    let mut prefetched = BTreeSet::new();
    let mut linearised = Vec::new();
    for (class, m) in program.members() {
        for g in &m.gpuopts {
            // One request per group: the same line on several methods of a class is one
            // linearisation of them all (`transform::linearise`), which consumes every line.
            if let (GpuOptKind::MatrixLin { .. }, MemberKind::Method(method)) = (&g.kind, &m.kind) {
                let optimisation = match annotated(g) {
                    Ok(o) => o,
                    Err(e) => {
                        error.get_or_insert(e);
                        continue;
                    }
                };
                let key = (class.map(|c| c.span), optimisation.clone());
                if !linearised.contains(&key) {
                    linearised.push(key);
                    out.push(Request {
                        target: method.span,
                        optimisation,
                        gpuopt: Some(g.span),
                    });
                }
                continue;
            }
            // One request per cell; several lines for one array add up, a repeated cell counts once.
            if let (GpuOptKind::GlobToReg { .. }, MemberKind::Method(method)) = (&g.kind, &m.kind) {
                for (array, index) in prefetch_cells(&g.kind) {
                    if prefetched.insert((method.span, array.clone(), index.clone())) {
                        out.push(Request {
                            target: method.span,
                            optimisation: Optimisation::Prefetch { array, index },
                            gpuopt: Some(g.span),
                        });
                    }
                }
                continue;
            }
            let optimisation = match annotated(g) {
                Ok(o) => o,
                Err(e) => {
                    error.get_or_insert(e);
                    continue;
                }
            };
            if optimisation.targets_loop() {
                error.get_or_insert(PlanError::MethodLevelLoop { gpuopt: g.span });
                continue;
            }
            if let Optimisation::Fuse { .. } = optimisation {
                error.get_or_insert(PlanError::NotBefore {
                    gpuopt: g.span,
                    what: "the first par block to fuse",
                });
                continue;
            }
            let pars = match &m.kind {
                MemberKind::Method(method) => match &method.body {
                    MethodBody::Block(b) => par_statements(&b.stmts),
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            };
            match pars.as_slice() {
                [one] => out.push(Request {
                    target: *one,
                    optimisation,
                    gpuopt: Some(g.span),
                }),
                _ => {
                    error.get_or_insert(PlanError::TileTarget {
                        gpuopt: g.span,
                        pars,
                    });
                }
            }
        }
    }
    let mut lists: Vec<Vec<Stmt>> = Vec::new();
    let mut copy = program.clone();
    copy.visit_stmt_lists_mut(&mut |stmts| lists.push(stmts.clone()));
    for stmts in &lists {
        for (j, s) in stmts.iter().enumerate() {
            let StmtKind::GpuOpt(g) = &s.kind else {
                continue;
            };
            let optimisation = match annotated(g) {
                Ok(o) => o,
                Err(e) => {
                    error.get_or_insert(e);
                    continue;
                }
            };
            let fits = |next: &Stmt| {
                if optimisation.targets_loop() {
                    is_loop(next)
                } else {
                    matches!(next.kind, StmtKind::Par(_))
                }
            };
            match stmts.get(j + 1) {
                Some(next) if fits(next) => out.push(Request {
                    target: next.span,
                    optimisation,
                    gpuopt: Some(s.span),
                }),
                _ => {
                    let what = if optimisation.targets_loop() {
                        "a loop"
                    } else {
                        "a par block"
                    };
                    error.get_or_insert(PlanError::NotBefore {
                        gpuopt: g.span,
                        what,
                    });
                }
            }
        }
    }
    match error {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// The statement a flag designates: the one loop (whose guard mentions `--loop VAR`) for
/// `--unroll`/`--merge`, the one par statement for `--tile`.
fn flag_request(
    program: &Program,
    optimisation: Optimisation,
    var: Option<&str>,
) -> Result<Request, PlanError> {
    if let Optimisation::Prefetch { array, .. } = &optimisation {
        // The methods with a par block that can see the array (a parameter or a field; for a
        // row `m[i]`, its root `m`).
        let root = array.split('[').next().unwrap_or_default().trim();
        let mut methods = Vec::new();
        for (class, m) in program.members() {
            let MemberKind::Method(method) = &m.kind else {
                continue;
            };
            let MethodBody::Block(body) = &method.body else {
                continue;
            };
            let field = class.is_some_and(|c| {
                c.members
                    .iter()
                    .any(|f| matches!(&f.kind, MemberKind::Field(f) if f.name.name == *array))
            });
            let param = method.params.iter().any(|p| p.name.name == root);
            if (field || param) && !par_statements(&body.stmts).is_empty() {
                methods.push(method.span);
            }
        }
        return match methods.as_slice() {
            [one] => Ok(Request {
                target: *one,
                optimisation,
                gpuopt: None,
            }),
            _ => Err(PlanError::PrefetchTarget {
                array: array.clone(),
                methods,
            }),
        };
    }
    if let Optimisation::Linearise { matrix, .. } = &optimisation {
        // The methods with the matrix as a parameter, or that mention it as a field of their
        // class; the methods of one class with a field matrix are one group (its first).
        let mut methods: Vec<(Option<Span>, Span, bool)> = Vec::new();
        for (class, m) in program.members() {
            let MemberKind::Method(method) = &m.kind else {
                continue;
            };
            let param = method.params.iter().any(|p| p.name.name == *matrix);
            let field = !param
                && class.is_some_and(|c| {
                    c.members
                        .iter()
                        .any(|f| matches!(&f.kind, MemberKind::Field(f) if f.name.name == *matrix))
                })
                && mentions_name(m, matrix);
            if param || field {
                methods.push((class.map(|c| c.span), method.span, field));
            }
        }
        let one_field_group = methods
            .iter()
            .all(|(c, _, field)| *field && *c == methods[0].0);
        return match methods.as_slice() {
            [one] => Ok(one.1),
            [first, ..] if one_field_group => Ok(first.1),
            _ => Err(PlanError::LineariseTarget {
                matrix: matrix.clone(),
                methods: methods.iter().map(|m| m.1).collect(),
            }),
        }
        .map(|target| Request {
            target,
            optimisation: optimisation.clone(),
            gpuopt: None,
        });
    }
    if let Optimisation::Fuse { count, .. } = optimisation {
        // The first par statements of runs of at least `count` consecutive ones.
        let mut runs = Vec::new();
        let mut copy = program.clone();
        copy.visit_stmt_lists_mut(&mut |stmts| {
            let is_par = |s: &Stmt| matches!(s.kind, StmtKind::Par(_));
            let mut j = 0;
            while j < stmts.len() {
                let len = stmts[j..].iter().take_while(|s| is_par(s)).count();
                if len >= count as usize {
                    runs.push(stmts[j].span);
                }
                j += len.max(1);
            }
        });
        return match runs.as_slice() {
            [one] => Ok(Request {
                target: *one,
                optimisation,
                gpuopt: None,
            }),
            _ => Err(PlanError::FuseFlagTarget { count, runs }),
        };
    }
    if !optimisation.targets_loop() {
        let mut pars = Vec::new();
        for body in program.method_bodies() {
            pars.extend(par_statements(&body.stmts));
        }
        return match pars.as_slice() {
            [one] => Ok(Request {
                target: *one,
                optimisation,
                gpuopt: None,
            }),
            _ => Err(PlanError::TileFlagTarget { pars }),
        };
    }
    let flag = match optimisation {
        Optimisation::Merge { .. } => "--merge",
        _ => "--unroll",
    };
    let mut loops: Vec<(Span, BTreeSet<String>)> = Vec::new();
    program.visit_stmts(&mut |s| {
        if let StmtKind::While { cond, .. }
        | StmtKind::For {
            cond: Some(cond), ..
        } = &s.kind
        {
            let mut names = BTreeSet::new();
            cond.names(&mut names);
            if var.is_none_or(|v| names.contains(v)) {
                loops.push((s.span, names));
            }
        }
    });
    match loops.as_slice() {
        [] => Err(PlanError::NoLoop {
            flag,
            var: var.map(str::to_string),
        }),
        [(span, names)] => {
            let var = match var {
                Some(v) => v.to_string(),
                None => {
                    // The guard variables the body updates in the template's form.
                    let fits: Vec<&String> = names
                        .iter()
                        .filter(|n| unroll::plan(program, *span, n, 1).is_ok())
                        .collect();
                    match fits.as_slice() {
                        [one] => (*one).clone(),
                        _ if names.len() == 1 => names.iter().next().cloned().unwrap_or_default(),
                        _ => {
                            return Err(PlanError::LoopVariable {
                                target: *span,
                                names: names.iter().cloned().collect(),
                            })
                        }
                    }
                }
            };
            let optimisation = match optimisation {
                Optimisation::Unroll { factor, .. } => Optimisation::Unroll { var, factor },
                Optimisation::Merge { factor, .. } => Optimisation::Merge { var, factor },
                tile => tile,
            };
            Ok(Request {
                target: *span,
                optimisation,
                gpuopt: None,
            })
        }
        many => Err(PlanError::Loops {
            flag,
            var: var.map(str::to_string),
            loops: many
                .iter()
                .map(|(span, names)| (*span, names.iter().cloned().collect()))
                .collect(),
        }),
    }
}
