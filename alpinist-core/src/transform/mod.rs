//! Transformations of code *and* annotations (design.md, "Transformation templates").
//!
//! Every optimisation has the same shape: an applicability check that returns a typed
//! [`Refusal`] (stable code E09xx, with the span of what failed), then a rewrite of the IR.
//!
//! Architecture invariants:
//! - A transformation never drops an annotation silently: it rewrites it or refuses.
//! - Generated names come from [`FreshNames`] and never clash with a name in the program.
//! - Generated nodes reuse the span of the node they were derived from.
//! - The applicability check is never skipped (`--no-verify` skips only reverification).

pub mod fuse;
pub mod linearise;
pub mod merge;
pub mod prefetch;
pub mod tile;
pub mod unroll;

use std::collections::BTreeSet;
use std::time::Duration;

use crate::syntax::{
    BinaryOp, Block, Expr, ExprKind, Item, MatrixOrder, MemberKind, MethodBody, Program, Span,
    Stmt, StmtKind, TileLayout,
};
use crate::verify::Limits;

/// One requested optimisation, independent of where it was requested (a `gpuopt` line or a
/// command-line flag). The target it applies to is a span: a loop for unrolling and merging,
/// a par statement for tiling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Optimisation {
    Unroll {
        var: String,
        factor: u32,
    },
    Merge {
        var: String,
        factor: u32,
    },
    Tile {
        layout: TileLayout,
        size: u32,
    },
    /// Data prefetching of the cell `array[index]` (the index as written) in every par block
    /// of a method; the target is the method.
    Prefetch {
        array: String,
        index: String,
    },
    /// Matrix linearisation of the matrix `matrix`, `rows` by `cols` (expressions as
    /// written), in the method that is the target and the methods linearised with it.
    Linearise {
        matrix: String,
        order: MatrixOrder,
        rows: String,
        cols: String,
    },
    /// Kernel fusion of `count` consecutive par statements (the target is the first) for
    /// `groups` work-groups.
    Fuse {
        count: u32,
        groups: u32,
    },
}

impl Optimisation {
    /// Whether the target is a loop (else a par statement).
    pub fn targets_loop(&self) -> bool {
        matches!(
            self,
            Optimisation::Unroll { .. } | Optimisation::Merge { .. }
        )
    }

    /// Where a chain applies this kind: linearisation, fusion, merging, prefetching, tiling,
    /// unrolling. Within a kind, inner targets first (see `pipeline::plan`).
    pub fn chain_rank(&self) -> u8 {
        match self {
            Optimisation::Linearise { .. } => 0,
            Optimisation::Fuse { .. } => 1,
            Optimisation::Merge { .. } => 2,
            Optimisation::Prefetch { .. } => 3,
            Optimisation::Tile { .. } => 4,
            Optimisation::Unroll { .. } => 5,
        }
    }

    /// What it targets, in words.
    pub fn target_noun(&self) -> &'static str {
        match self {
            Optimisation::Unroll { .. } | Optimisation::Merge { .. } => "loop",
            Optimisation::Tile { .. } => "par block",
            Optimisation::Fuse { .. } => "par block",
            Optimisation::Prefetch { .. } | Optimisation::Linearise { .. } => "method",
        }
    }

    /// What was done, in words, for the report ("unrolled the loop over `i` by 2").
    pub fn done(&self) -> String {
        match self {
            Optimisation::Unroll { var, factor } => {
                format!("unrolled the loop over `{var}` by {factor}")
            }
            Optimisation::Merge { var, factor } => {
                format!("merged the iterations of the loop over `{var}` by {factor}")
            }
            Optimisation::Tile { layout, size } => {
                let layout = match layout {
                    TileLayout::Inter => "inter",
                    TileLayout::Intra => "intra",
                };
                format!("tiled the par block ({layout}-tile, size {size})")
            }
            Optimisation::Prefetch { array, index } => {
                format!("prefetched `{array}[{index}]` into a register")
            }
            Optimisation::Linearise {
                matrix,
                order,
                rows,
                cols,
            } => {
                let order = match order {
                    MatrixOrder::RowMajor => "row-major",
                    MatrixOrder::ColumnMajor => "column-major",
                };
                format!("linearised the {rows} by {cols} matrix `{matrix}` ({order})")
            }
            Optimisation::Fuse { count, groups } => {
                let groups = match groups {
                    1 => "one work-group".to_string(),
                    g => format!("{g} work-groups"),
                };
                format!("fused {count} par blocks into one kernel ({groups})")
            }
        }
    }
}

/// Times of one optimisation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timings {
    /// The syntactic checks and the rewrite.
    pub rewrite: Duration,
    /// The Z3 part of the applicability check.
    pub applicability: Duration,
}

/// The largest unrolling factor, merging factor and tile size any optimisation takes; a
/// factor beyond it is refused (E0910) at once. The rewrite and the applicability probe are
/// linear in the factor, but reverifying K copies of a body in one Z3 solver grows
/// quadratically (a one-line body: 1.6 s at K = 1000, 6 s at 2000, 35 s at 4096 on a loaded
/// 2-core machine), so the limit keeps every answer within seconds.
pub const MAX_FACTOR: u32 = 1024;

/// An applied optimisation: the program it made, its times, and what the report should say
/// beyond "applied" (fusion that stopped before a kernel says which and why).
#[derive(Clone, Debug)]
pub struct Applied {
    pub program: Program,
    pub timings: Timings,
    pub note: Option<String>,
    /// The optimisation as applied, where it is less than the request: a fusion that stopped
    /// before a kernel fused fewer par blocks than asked.
    pub applied_as: Option<Optimisation>,
}

/// Applies `optimisation` to the statement at `target`, after checking that it applies. A
/// `gpuopt` line that requested it is left alone: the caller removes the lines it applied.
pub fn apply(
    program: &Program,
    target: Span,
    optimisation: &Optimisation,
    limits: &Limits,
) -> Result<Applied, Refusal> {
    let desugared;
    let program = match optimisation.targets_loop() {
        true => match for_as_while(program, target) {
            Some(p) => {
                desugared = p;
                &desugared
            }
            None => program,
        },
        false => program,
    };
    let (what, factor) = match optimisation {
        Optimisation::Unroll { factor, .. } => ("unrolling factor", *factor),
        Optimisation::Merge { factor, .. } => ("merging factor", *factor),
        Optimisation::Tile { size, .. } => ("tile size", *size),
        Optimisation::Prefetch { .. }
        | Optimisation::Fuse { .. }
        | Optimisation::Linearise { .. } => ("", 0),
    };
    if factor > MAX_FACTOR {
        return Err(Refusal::FactorTooLarge {
            what,
            factor,
            limit: MAX_FACTOR,
            span: target,
        });
    }
    let plain = |(program, timings): (Program, Timings)| Applied {
        program,
        timings,
        note: None,
        applied_as: None,
    };
    match optimisation {
        Optimisation::Unroll { var, factor } => {
            unroll::unroll(program, target, var, *factor, limits).map(plain)
        }
        Optimisation::Merge { var, factor } => {
            merge::merge(program, target, var, *factor, limits).map(plain)
        }
        Optimisation::Tile { layout, size } => {
            tile::tile(program, target, *layout, *size, limits).map(plain)
        }
        Optimisation::Prefetch { array, index } => {
            prefetch::prefetch(program, target, array, index, limits).map(plain)
        }
        Optimisation::Linearise {
            matrix,
            order,
            rows,
            cols,
        } => linearise::linearise(program, target, matrix, *order, rows, cols, limits).map(plain),
        Optimisation::Fuse { count, groups } => {
            fuse::fuse(program, target, *count, *groups, limits)
        }
    }
}

/// The program with the `for` loop at `span` written as the `while` loop it means, `{ init;
/// while (cond) { body update } }` (the block keeps the loop variable local), so that unrolling
/// and merging, which work on `while` loops, apply to it; `None` when no `for` loop is there.
/// The block and the `while` keep the `for`'s span (a block is never a target, see
/// `unroll::find_stmt`). Exact because PVL has no `continue`, which would skip the update.
pub fn for_as_while(program: &Program, span: Span) -> Option<Program> {
    let mut out = program.clone();
    let mut done = false;
    out.visit_stmt_lists_mut(&mut |stmts| {
        if done {
            return;
        }
        let Some(j) = stmts
            .iter()
            .position(|s| s.span == span && matches!(s.kind, StmtKind::For { .. }))
        else {
            return;
        };
        if let Some(looped) = for_as_while_stmt(&stmts[j]) {
            stmts[j] = looped;
            done = true;
        }
    });
    done.then_some(out)
}

/// The `for` statement `s` as `{ init; while (cond) { body update } }` (see [`for_as_while`]);
/// `None` when `s` is not a `for` loop.
pub(crate) fn for_as_while_stmt(s: &Stmt) -> Option<Stmt> {
    let span = s.span;
    let StmtKind::For {
        contract,
        init,
        cond,
        update,
        body,
    } = s.kind.clone()
    else {
        return None;
    };
    let cond = cond.unwrap_or(crate::syntax::Expr {
        kind: crate::syntax::ExprKind::BoolLit(true),
        span,
    });
    let body_span = body.span;
    let mut body_stmts = match body.kind {
        StmtKind::Block(b) => b.stmts,
        other => vec![Stmt {
            kind: other,
            span: body_span,
        }],
    };
    body_stmts.extend(update.map(|u| *u));
    let looped = Stmt {
        kind: StmtKind::While {
            contract,
            cond,
            body: Box::new(Stmt {
                kind: StmtKind::Block(Block {
                    stmts: body_stmts,
                    span: body_span,
                }),
                span: body_span,
            }),
        },
        span,
    };
    let mut block = init.map(|i| vec![*i]).unwrap_or_default();
    block.push(looped);
    Some(Stmt {
        kind: StmtKind::Block(Block { stmts: block, span }),
        span,
    })
}

/// Runs an optimisation's steps in order and times them: `plan` (the syntactic checks) and
/// `rewrite` count as the rewrite, `check` (the Z3 part of the applicability check) apart.
pub(crate) fn timed<P, C>(
    plan: impl FnOnce() -> Result<P, Refusal>,
    check: impl FnOnce(&P) -> Result<C, Refusal>,
    rewrite: impl FnOnce(P, C) -> Result<Program, Refusal>,
) -> Result<(Program, Timings), Refusal> {
    let start = std::time::Instant::now();
    let planned = plan()?;
    let plan_time = start.elapsed();
    let check_start = std::time::Instant::now();
    let checked = check(&planned)?;
    let applicability = check_start.elapsed();
    let rewrite_start = std::time::Instant::now();
    let out = rewrite(planned, checked)?;
    Ok((
        out,
        Timings {
            rewrite: plan_time + rewrite_start.elapsed(),
            applicability,
        },
    ))
}

/// Why an optimisation does not apply. Codes are part of the interface: never renumber.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum Refusal {
    #[error("cannot unroll: the loop guard `{guard}` does not compare `{var}`")]
    #[diagnostic(
        code(E0901),
        help("the guard must be a comparison (<, <=, >, >=, !=) of the loop variable")
    )]
    GuardShape {
        guard: String,
        var: String,
        #[label("this guard")]
        span: Span,
    },

    #[error("cannot unroll: the guard `{guard}` reads more than local variables and constants")]
    #[diagnostic(code(E0902))]
    GuardReadsHeap {
        guard: String,
        #[label("this guard")]
        span: Span,
    },

    #[error(
        "cannot unroll: the loop body does not update `{var}` by `{var} = {var} op c` (op one of + - * /, c a positive constant) exactly once, unconditionally"
    )]
    #[diagnostic(code(E0903))]
    UpdateShape {
        var: String,
        #[label("{detail}")]
        span: Span,
        detail: String,
    },

    #[error("cannot unroll: the loop body assigns `{name}`, a variable of the guard")]
    #[diagnostic(code(E0904))]
    BodyWritesGuardVariable {
        name: String,
        #[label("assigned here")]
        span: Span,
    },

    #[error(
        "cannot show that the loop runs at least {factor} times: the guard `{guard}` may be false on iteration {iteration}{counterexample}"
    )]
    #[diagnostic(
        code(E0905),
        help("the guard must provably hold for the first {factor} iterations in the state at loop entry")
    )]
    TooFewIterations {
        factor: u32,
        iteration: u32,
        guard: String,
        /// ", e.g. when n = 1" from Z3's counterexample, or empty.
        counterexample: String,
        #[label("this loop")]
        span: Span,
    },

    #[error("cannot check whether the loop can be unrolled: {reason}")]
    #[diagnostic(code(E0906))]
    CannotCheck {
        reason: String,
        #[label("this loop")]
        span: Span,
    },

    #[error("cannot unroll by {factor}: the factor must be a positive integer")]
    #[diagnostic(code(E0907))]
    BadFactor {
        factor: String,
        #[label("here")]
        span: Span,
    },

    #[error("cannot unroll this loop: {what} is not supported yet")]
    #[diagnostic(code(E0908))]
    Unsupported {
        what: String,
        #[label("this loop")]
        span: Span,
    },

    #[error("cannot optimise: the {what} {factor} is above the limit of {limit}")]
    #[diagnostic(
        code(E0910),
        help("the rewrite and its proof grow with the factor; use at most {limit}")
    )]
    FactorTooLarge {
        what: &'static str,
        factor: u32,
        limit: u32,
        #[label("here")]
        span: Span,
    },

    /// In a chain, an earlier step rewrote what this request targets (removed it, or copied
    /// it), so the request no longer names one statement.
    #[error(
        "cannot apply: the earlier step that {earlier} rewrote the {what} this optimisation targets ({copies} copies of it now); request it on its own, or on the result"
    )]
    #[diagnostic(code(E0911))]
    TargetRewritten {
        earlier: String,
        what: &'static str,
        copies: usize,
        #[label("targeted here")]
        span: Span,
        #[label("rewritten by this earlier step")]
        earlier_span: Span,
    },

    /// Not a refusal of the program: the optimisation itself is missing (exit 2, not 1).
    #[error("not implemented yet: {what}")]
    #[diagnostic(code(E0909))]
    NotImplemented {
        what: String,
        #[label("requested here")]
        span: Span,
    },

    // ---- Iteration merging: E0920–E0929 -------------------------------------------------
    #[error("cannot merge iterations: {reason}")]
    #[diagnostic(code(E0920))]
    MergeLoopShape {
        reason: String,
        label: String,
        #[label("{label}")]
        span: Span,
    },

    #[error(
        "cannot merge iterations: the iteration count is not static: {what} is not a constant at loop entry (it may be {value} or {other})"
    )]
    #[diagnostic(
        code(E0921),
        help("merging needs constant bounds: the start value of the loop variable and every variable of the guard must be provably constant where the loop starts (from the code before it, the contract or `context_everywhere`)")
    )]
    MergeCountNotStatic {
        what: String,
        value: String,
        other: String,
        #[label("this loop")]
        span: Span,
    },

    #[error("cannot merge iterations by {factor}: the factor must be at least 2")]
    #[diagnostic(code(E0922))]
    MergeBadFactor {
        factor: u32,
        #[label("here")]
        span: Span,
    },

    #[error(
        "cannot merge iterations by {factor}: the loop runs {count} times, fewer than the factor"
    )]
    #[diagnostic(
        code(E0923),
        help("with `{var}` starting at {start}, the guard `{guard}` holds {count} times")
    )]
    MergeFactorExceedsCount {
        factor: u32,
        count: u32,
        var: String,
        start: String,
        guard: String,
        #[label("this loop")]
        span: Span,
    },

    #[error("cannot check whether the iterations can be merged: {reason}")]
    #[diagnostic(code(E0924))]
    MergeCannotCheck {
        reason: String,
        #[label("this loop")]
        span: Span,
    },

    #[error("cannot merge iterations: {what} is not supported")]
    #[diagnostic(code(E0925))]
    MergeUnsupported {
        what: String,
        #[label("this loop")]
        span: Span,
    },

    #[error(
        "cannot merge iterations: the iteration count is not static: with `{var}` starting at {start}, the guard `{guard}` still holds after {limit} iterations"
    )]
    #[diagnostic(code(E0926))]
    MergeCountUnbounded {
        var: String,
        start: String,
        guard: String,
        limit: u32,
        #[label("this loop")]
        span: Span,
    },

    // ---- Tiling (E0930–E0939) ----
    #[error("cannot tile: cannot show that the tile size {size} is smaller than the number of threads `{threads}`: {why}")]
    #[diagnostic(
        code(E0930),
        help("T < N must be provable from the contract in the state at the par block")
    )]
    TileTooLarge {
        size: u32,
        threads: String,
        why: String,
        #[label("this par block")]
        span: Span,
    },

    #[error("cannot tile: the tile size must be a positive integer")]
    #[diagnostic(code(E0931))]
    TileBadSize {
        #[label("this par block")]
        span: Span,
    },

    #[error(
        "cannot tile: the par block has a barrier; tiling a kernel with barriers is not supported"
    )]
    #[diagnostic(code(E0932))]
    TileBarrier {
        #[label("this barrier")]
        span: Span,
    },

    #[error("cannot tile: {what} is not supported (one par block with one iterator only)")]
    #[diagnostic(code(E0933))]
    TileParShape {
        what: String,
        #[label("here")]
        span: Span,
    },

    #[error("cannot tile: cannot requantify the thread contract: {what}")]
    #[diagnostic(code(E0934))]
    TileContractShape {
        what: String,
        #[label("this clause")]
        span: Span,
    },

    #[error("cannot check whether the par block can be tiled: {reason}")]
    #[diagnostic(code(E0935))]
    TileCannotCheck {
        reason: String,
        #[label("this par block")]
        span: Span,
    },

    // ---- Data prefetching (E0940–E0949) ----
    #[error("cannot prefetch `{cell}`: no par block of the method accesses it in code")]
    #[diagnostic(code(E0940))]
    PrefetchNoCell {
        cell: String,
        #[label("this method")]
        span: Span,
    },

    #[error("cannot prefetch `{cell}`: cannot show that the thread may {access} it where this segment {place}{guard}")]
    #[diagnostic(
        code(E0941),
        help("the register is loaded where a segment (a par body cut at its barriers) starts and written back where it ends: the par contract or the barrier before the segment must give the thread permission to the cell there, possibly under a condition `c ==> Perm(..)`")
    )]
    PrefetchNoPermission {
        cell: String,
        access: &'static str,
        place: &'static str,
        /// " when `tid > 0`", or empty.
        guard: String,
        #[label("this segment")]
        span: Span,
    },

    #[error("cannot prefetch `{cell}`: `{access}` may be the same cell")]
    #[diagnostic(
        code(E0942),
        help("the register would hide this access from the cell (or the cell from it); prove that the arrays differ or the indices do")
    )]
    PrefetchAlias {
        access: String,
        cell: String,
        #[label("this access")]
        span: Span,
    },

    #[error(
        "cannot prefetch `{cell}`: `{name}`, a variable of its index, is assigned in the segment"
    )]
    #[diagnostic(
        code(E0943),
        help("the index must denote the same cell throughout the segment")
    )]
    PrefetchIndexAssigned {
        name: String,
        cell: String,
        #[label("assigned here")]
        span: Span,
    },

    #[error("cannot prefetch from `{array}`: it is not an array parameter or field (a local array has no global memory to prefetch from)")]
    #[diagnostic(code(E0944))]
    PrefetchNotHeapArray {
        array: String,
        #[label("this method")]
        span: Span,
    },

    // E0945 is not used: a call ends a segment (write-back before it, load after it).
    #[error("cannot prefetch: {what} is not supported")]
    #[diagnostic(code(E0946))]
    PrefetchUnsupported {
        what: String,
        #[label("here")]
        span: Span,
    },

    #[error("cannot check whether the cell can be prefetched: {reason}")]
    #[diagnostic(code(E0947))]
    PrefetchCannotCheck {
        reason: String,
        #[label("here")]
        span: Span,
    },

    #[error("cannot prefetch `{cell}`: cannot show that `{guard}`, the condition under which the register is loaded, holds at this access")]
    #[diagnostic(code(E0948))]
    PrefetchUnguarded {
        cell: String,
        guard: String,
        #[label("this access")]
        span: Span,
    },

    // ---- Matrix linearisation (E0950–E0959) ----
    #[error("cannot linearise `{matrix}`: it is not an `int[][]` or `boolean[][]` parameter or local of the method, nor such a field of its class")]
    #[diagnostic(code(E0950))]
    LineariseNoMatrix {
        matrix: String,
        #[label("this method")]
        span: Span,
    },

    #[error("cannot linearise `{matrix}`: its row `{row}` is used as an array of its own")]
    #[diagnostic(
        code(E0951),
        help("only cells `{matrix}[r][c]`, row lengths `{matrix}[r].length`, `{matrix}.length` and `\\matrix({matrix}, ..)` have a linear form; a row that escapes (kept in a local, passed to a call, a row permission) has none")
    )]
    LineariseRowEscapes {
        matrix: String,
        row: String,
        #[label("a row on its own")]
        span: Span,
    },

    #[error("cannot linearise `{matrix}`: the matrix is used here other than through its cells, lengths, `\\matrix` or a null test")]
    #[diagnostic(
        code(E0952),
        help("a matrix that is assigned, compared with another array or passed to a method outside the linearised group would meet code that still expects rows")
    )]
    LineariseMatrixEscapes {
        matrix: String,
        #[label("here")]
        span: Span,
    },

    #[error("cannot linearise `{matrix}`: this call of `{callee}` comes from a method that is not linearised with it, and would pass it rows")]
    #[diagnostic(
        code(E0953),
        help("put the same `gpuopt matrix_lin` line on the calling method, so both take the linear array")
    )]
    LineariseCaller {
        matrix: String,
        callee: String,
        #[label("this call")]
        span: Span,
    },

    #[error("cannot linearise: the size `{size}` {why}")]
    #[diagnostic(
        code(E0954),
        help("the sizes are written into every linear index, so they must be parameters of every linearised method that none of them assigns, and an allocation of the matrix must use them as the line writes them")
    )]
    LineariseSize {
        size: String,
        why: String,
        #[label("here")]
        span: Span,
    },

    #[error("cannot linearise `{matrix}`: where `{method}` starts, it is not known to have the shape `\\matrix({matrix}, {dims})`, non-null with that many rows of that length ({why})")]
    #[diagnostic(
        code(E0955),
        help("state the shape in the contract, `context_everywhere \\matrix({matrix}, {dims});`: the linear index is a bijection only within it")
    )]
    LineariseShape {
        matrix: String,
        /// The sizes as the request writes them, `X, Y`.
        dims: String,
        method: String,
        why: String,
        #[label("this method")]
        span: Span,
    },

    #[error(
        "cannot linearise: {what} where `{method}` starts, and one of them is written ({why})"
    )]
    #[diagnostic(
        code(E0956),
        help("the linear array is an array of its own: a write through one name would no longer be seen through the other; permissions that keep them apart (write permission on one) show they are different arrays")
    )]
    LineariseAlias {
        what: String,
        method: String,
        why: String,
        #[label("this method")]
        span: Span,
    },

    #[error("cannot check whether the matrix can be linearised: {reason}")]
    #[diagnostic(code(E0957))]
    LineariseCannotCheck {
        reason: String,
        #[label("here")]
        span: Span,
    },

    #[error("cannot linearise: {what}")]
    #[diagnostic(code(E0958))]
    LineariseUnsupported {
        what: String,
        #[label("here")]
        span: Span,
    },

    // ---- Kernel fusion (E0960–E0979) ----
    #[error("cannot check whether the par blocks can be fused: {reason}")]
    #[diagnostic(code(E0960))]
    FuseCannotCheck {
        reason: String,
        #[label("here")]
        span: Span,
    },

    #[error("cannot fuse {count} par blocks on {groups} work-groups: fusion needs at least 2 par blocks and at least 1 work-group")]
    #[diagnostic(code(E0961))]
    FuseBadCount {
        count: u32,
        groups: u32,
        #[label("here")]
        span: Span,
    },

    #[error("cannot fuse {count} par blocks: only {found} follow, one after the other")]
    #[diagnostic(code(E0962))]
    FuseTooFew {
        count: u32,
        found: usize,
        #[label("the first par block")]
        span: Span,
    },

    #[error("cannot fuse {count} par blocks: a statement stands between par blocks {found} and {}", found + 1)]
    #[diagnostic(
        code(E0963),
        help("the host runs it between the kernels; a fused kernel has no such point (move it before or after them)")
    )]
    FuseBetween {
        count: u32,
        found: usize,
        #[label("this statement")]
        span: Span,
    },

    #[error("cannot fuse: {what} is not supported")]
    #[diagnostic(code(E0964))]
    FuseParShape {
        what: String,
        #[label("here")]
        span: Span,
    },

    #[error("cannot fuse: cannot read the thread contract as permissions and facts: {what}")]
    #[diagnostic(code(E0965))]
    FuseContractShape {
        what: String,
        #[label("this clause")]
        span: Span,
    },

    #[error("cannot fuse: cannot show that the range `{range}` equals the first par block's `{first}`: {why}")]
    #[diagnostic(
        code(E0966),
        help("every fused par block must run the same threads, provably in the state before the first")
    )]
    FuseRangesDiffer {
        range: String,
        first: String,
        why: String,
        #[label("this par block")]
        span: Span,
    },

    #[error("cannot fuse for {groups} work-groups: cannot show that {groups} divides the number of threads `{threads}`: {why}")]
    #[diagnostic(code(E0967))]
    FuseGroupsDivide {
        groups: u32,
        threads: String,
        why: String,
        #[label("here")]
        span: Span,
    },

    #[error("cannot fuse: a thread's permissions to `{first}` and `{second}` may be to the same location")]
    #[diagnostic(
        code(E0968),
        help("the fused thread holds both; prove that the indices differ for one thread, or write the same location the same way")
    )]
    FuseOverlap {
        first: String,
        second: String,
        #[label("this one")]
        span: Span,
        #[label("and this one")]
        first_span: Span,
    },

    #[error("cannot fuse kernels {first} and {second} on {groups} work-groups: a thread may write `{write}` in one and a thread of another work-group touch it as `{touch}` in the other")]
    #[diagnostic(
        code(E0969),
        help("a barrier synchronises only the threads of one work-group; fuse with fewer work-groups, or stop fusing before this kernel")
    )]
    FuseAcrossGroups {
        first: usize,
        second: usize,
        write: String,
        touch: String,
        groups: u32,
        #[label("this kernel")]
        span: Span,
    },

    #[error("cannot fuse: {what}")]
    #[diagnostic(code(E0970))]
    FuseUnsupported {
        what: String,
        #[label("here")]
        span: Span,
    },
}

impl Refusal {
    pub fn span(&self) -> Span {
        match self {
            Refusal::GuardShape { span, .. }
            | Refusal::GuardReadsHeap { span, .. }
            | Refusal::FactorTooLarge { span, .. }
            | Refusal::TargetRewritten { span, .. }
            | Refusal::UpdateShape { span, .. }
            | Refusal::BodyWritesGuardVariable { span, .. }
            | Refusal::TooFewIterations { span, .. }
            | Refusal::CannotCheck { span, .. }
            | Refusal::BadFactor { span, .. }
            | Refusal::Unsupported { span, .. }
            | Refusal::NotImplemented { span, .. }
            | Refusal::MergeLoopShape { span, .. }
            | Refusal::MergeCountNotStatic { span, .. }
            | Refusal::MergeBadFactor { span, .. }
            | Refusal::MergeFactorExceedsCount { span, .. }
            | Refusal::MergeCannotCheck { span, .. }
            | Refusal::MergeUnsupported { span, .. }
            | Refusal::MergeCountUnbounded { span, .. }
            | Refusal::TileTooLarge { span, .. }
            | Refusal::TileBadSize { span }
            | Refusal::TileBarrier { span }
            | Refusal::TileParShape { span, .. }
            | Refusal::TileContractShape { span, .. }
            | Refusal::TileCannotCheck { span, .. }
            | Refusal::PrefetchNoCell { span, .. }
            | Refusal::PrefetchNoPermission { span, .. }
            | Refusal::PrefetchAlias { span, .. }
            | Refusal::PrefetchIndexAssigned { span, .. }
            | Refusal::PrefetchNotHeapArray { span, .. }
            | Refusal::PrefetchUnsupported { span, .. }
            | Refusal::PrefetchCannotCheck { span, .. }
            | Refusal::PrefetchUnguarded { span, .. }
            | Refusal::LineariseNoMatrix { span, .. }
            | Refusal::LineariseRowEscapes { span, .. }
            | Refusal::LineariseMatrixEscapes { span, .. }
            | Refusal::LineariseCaller { span, .. }
            | Refusal::LineariseSize { span, .. }
            | Refusal::LineariseShape { span, .. }
            | Refusal::LineariseAlias { span, .. }
            | Refusal::LineariseCannotCheck { span, .. }
            | Refusal::LineariseUnsupported { span, .. }
            | Refusal::FuseCannotCheck { span, .. }
            | Refusal::FuseBadCount { span, .. }
            | Refusal::FuseTooFew { span, .. }
            | Refusal::FuseBetween { span, .. }
            | Refusal::FuseParShape { span, .. }
            | Refusal::FuseContractShape { span, .. }
            | Refusal::FuseRangesDiffer { span, .. }
            | Refusal::FuseGroupsDivide { span, .. }
            | Refusal::FuseOverlap { span, .. }
            | Refusal::FuseAcrossGroups { span, .. }
            | Refusal::FuseUnsupported { span, .. } => *span,
        }
    }
}

/// The top-level `&&`/`**` conjuncts of `e` that hold permissions (a pure `e` is one conjunct: one
/// quantifier, or one conjunction of facts).
pub(crate) fn conjuncts(e: &Expr) -> Vec<&Expr> {
    if !e.holds_permission() {
        return vec![e];
    }
    match &e.kind {
        ExprKind::Binary {
            op: BinaryOp::And | BinaryOp::Star,
            lhs,
            rhs,
        } => {
            let mut out = conjuncts(lhs);
            out.extend(conjuncts(rhs));
            out
        }
        _ => vec![e],
    }
}

/// Parses one expression (inside a throw-away method); `None` when it does not parse.
pub(crate) fn parse_expr(text: &str) -> Option<Expr> {
    let stmt = parse_stmts(&format!("assert {text};"))?
        .into_iter()
        .next()?;
    match stmt.kind {
        StmtKind::Assert(e) => Some(e),
        _ => None,
    }
}

pub(crate) fn parse_stmts(text: &str) -> Option<Vec<Stmt>> {
    let parsed = crate::syntax::parse(&format!("class C {{ void m() {{ {text} }} }}")).ok()?;
    let Item::Class(class) = parsed.program.items.into_iter().next()? else {
        return None;
    };
    let MemberKind::Method(method) = class.members.into_iter().next()?.kind else {
        return None;
    };
    match method.body {
        MethodBody::Block(b) => Some(b.stmts),
        _ => None,
    }
}

/// Every span in `v` set to `span`.
pub(crate) fn respan<T: serde::Serialize + serde::de::DeserializeOwned>(x: T, span: Span) -> T {
    fn go(v: &mut serde_json::Value, span: &serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                for (key, x) in map.iter_mut() {
                    if key == "span" {
                        *x = span.clone();
                    } else {
                        go(x, span);
                    }
                }
            }
            serde_json::Value::Array(xs) => xs.iter_mut().for_each(|x| go(x, span)),
            _ => {}
        }
    }
    let (Ok(mut v), Ok(s)) = (serde_json::to_value(&x), serde_json::to_value(span)) else {
        return x;
    };
    go(&mut v, &s);
    serde_json::from_value(v).unwrap_or(x)
}

/// Generates names that clash with no name in the program (nor with each other).
#[derive(Clone, Debug)]
pub struct FreshNames {
    taken: BTreeSet<String>,
}

impl FreshNames {
    /// Every name occurring in `program` (identifiers of any kind) is taken.
    pub fn new(program: &Program) -> FreshNames {
        let mut taken = BTreeSet::new();
        // The IR serialises every identifier as `{"name": .., "span": ..}`: collecting the
        // strings under `name` keys covers every kind of node without a hand-written walk.
        if let Ok(value) = serde_json::to_value(program) {
            collect_names(&value, &mut taken);
        }
        FreshNames { taken }
    }

    /// `base`, or `base_1`, `base_2`, … : the first that is not taken; it is taken afterwards.
    pub fn fresh(&mut self, base: &str) -> String {
        let mut candidate = base.to_string();
        let mut n = 0u64;
        while self.taken.contains(&candidate) {
            n += 1;
            candidate = format!("{base}_{n}");
        }
        self.taken.insert(candidate.clone());
        candidate
    }

    pub fn is_taken(&self, name: &str) -> bool {
        self.taken.contains(name)
    }
}

fn collect_names(value: &serde_json::Value, out: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                if key == "name" {
                    if let serde_json::Value::String(s) = v {
                        out.insert(s.clone());
                    }
                }
                collect_names(v, out);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_names(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
