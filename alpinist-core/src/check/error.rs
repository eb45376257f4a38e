//! Check errors and warnings, with stable codes: E02xx resolution, E03xx types, E04xx `gpuopt`
//! annotations, W02xx warnings. Codes are part of the interface (tests and scripts match on
//! them): never renumber, only add.

use crate::syntax::Span;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum CheckError {
    // ---- E02xx: resolution -------------------------------------------------------------
    #[error("unknown variable `{name}`")]
    #[diagnostic(code(E0201))]
    UnknownVariable {
        name: String,
        #[label("not found in this scope")]
        span: Span,
    },

    #[error("`{ty}` has no field `{name}`")]
    #[diagnostic(code(E0202))]
    UnknownField {
        name: String,
        ty: String,
        #[label("no such field")]
        span: Span,
    },

    #[error("unknown method `{name}`{in_what}")]
    #[diagnostic(code(E0203))]
    UnknownMethod {
        name: String,
        /// ` in class C`, or empty.
        in_what: String,
        #[label("no such method")]
        span: Span,
    },

    #[error("unknown class `{name}`")]
    #[diagnostic(code(E0204))]
    UnknownClass {
        name: String,
        #[label("no such class")]
        span: Span,
    },

    #[error("barrier label `{name}` names no enclosing par block")]
    #[diagnostic(
        code(E0205),
        help("a barrier synchronises the threads of a par block it is nested in")
    )]
    UnknownParLabel {
        name: String,
        #[label("no enclosing `par {name}`")]
        span: Span,
    },

    #[error("`{name}` is not a {which} parameter of `{method}`")]
    #[diagnostic(code(E0206))]
    UnknownGhostParam {
        name: String,
        /// `given` or `yields`.
        which: &'static str,
        method: String,
        #[label("no such {which} parameter")]
        span: Span,
    },

    #[error("unknown invariant `{name}`")]
    #[diagnostic(code(E0207))]
    UnknownInvariant {
        name: String,
        #[label("no enclosing `invariant {name}(..)`")]
        span: Span,
    },

    #[error("`{name}` is declared twice")]
    #[diagnostic(code(E0210))]
    Duplicate {
        name: String,
        #[label(primary, "declared again here")]
        span: Span,
        #[label("first declared here")]
        first: Span,
    },

    #[error("`this` outside a class")]
    #[diagnostic(code(E0211))]
    ThisOutsideClass {
        #[label("no enclosing class")]
        span: Span,
    },

    #[error("`\\result` is only allowed in a postcondition of a non-void method or pure function")]
    #[diagnostic(code(E0212))]
    ResultOutsidePostcondition {
        #[label("not in an `ensures` clause of a method with a result")]
        span: Span,
    },

    #[error("par iterator `{name}` is assigned")]
    #[diagnostic(
        code(E0213),
        help("a thread's iterator is fixed for the whole par block")
    )]
    WriteToParIterator {
        name: String,
        #[label(primary, "assigned here")]
        span: Span,
        #[label("declared here")]
        decl: Span,
    },

    #[error("`{name}` is declared outside this par block and is read-only inside it")]
    #[diagnostic(
        code(E0214),
        help("locals and parameters of the enclosing code are shared by all threads; write to a heap location (with permission) or a local declared inside the par block")
    )]
    WriteToOuterLocalInPar {
        name: String,
        #[label(primary, "written here")]
        span: Span,
        #[label("declared here")]
        decl: Span,
    },

    #[error("call of non-pure method `{name}` in {context}")]
    #[diagnostic(
        code(E0215),
        help("only pure functions and predicates may be called here")
    )]
    ImpureCall {
        name: String,
        /// `a specification` or `a pure function`.
        context: &'static str,
        #[label(primary, "this method may have side effects")]
        span: Span,
        #[label("declared here")]
        decl: Span,
    },

    #[error("this expression cannot be assigned")]
    #[diagnostic(code(E0216))]
    NotAssignable {
        #[label("not a variable, field or array element")]
        span: Span,
    },

    #[error("`{clause}` is not allowed {site}")]
    #[diagnostic(code(E0217))]
    ClauseMisplaced {
        clause: &'static str,
        site: &'static str,
        #[label("misplaced clause")]
        span: Span,
    },

    #[error("ghost code assigns `{name}`, which is not a ghost variable")]
    #[diagnostic(
        code(E0218),
        help("ghost code is erased from what runs, so it may only assign ghost variables: declare `{name}` in ghost code (`ghost int {name} = ..;`) or assign it outside ghost code")
    )]
    GhostWritesLocal {
        name: String,
        #[label(primary, "assigned by ghost code here")]
        span: Span,
        #[label("declared outside ghost code here")]
        decl: Span,
    },

    #[error("ghost code writes a heap location that ghost code did not allocate")]
    #[diagnostic(
        code(E0219),
        help("ghost code is erased from what runs, so it may only write cells and fields of arrays and objects allocated in ghost code (a ghost local holding a `new` array, never aliased)")
    )]
    GhostWritesHeap {
        #[label("written by ghost code")]
        span: Span,
    },

    #[error("ghost code calls `{name}`, which may have a real effect")]
    #[diagnostic(
        code(E0220),
        help("ghost code is erased from what runs, so it may only call pure functions and lemmas: methods that write no heap location they did not allocate and contain no par block, barrier or lock")
    )]
    GhostCallHasEffect {
        name: String,
        #[label(primary, "called from ghost code")]
        span: Span,
        #[label("`{name}` {why}")]
        effect: Span,
        why: String,
    },

    #[error("{what} in ghost code")]
    #[diagnostic(
        code(E0221),
        help("ghost code is erased from what runs, so {what} in it would exist for the verifier only")
    )]
    GhostControl {
        /// `a par block`, `a barrier`, ``a `return` ``, ``a `lock` ``, ``an `unlock` ``.
        what: &'static str,
        #[label("not allowed in ghost code")]
        span: Span,
    },

    #[error("a second `decreases` clause: a routine or a loop has one termination measure")]
    #[diagnostic(
        code(E0222),
        help("write one lexicographic measure instead: `decreases e1, e2;`")
    )]
    DuplicateDecreases {
        #[label("second measure")]
        span: Span,
    },

    #[error("`{name}` has no return type, but is not named after its class `{class}`")]
    #[diagnostic(
        code(E0223),
        help("a constructor is written `{class}(..)` or `constructor(..)`; a method needs a return type (`void {name}(..)`)")
    )]
    ConstructorName {
        name: String,
        class: String,
        #[label("neither a constructor nor a method")]
        span: Span,
    },

    #[error("`*` stands for every index only in a permission's location")]
    #[diagnostic(
        code(E0224),
        help(
            "write `Perm(a[*], p)`, or quantify: `(\\forall* int i; 0 <= i && i < a.length; ..)`"
        )
    )]
    AllIndicesOutsideLocation {
        #[label("not the index of `Perm`, `PointsTo` or `Value`")]
        span: Span,
    },

    #[error("the label `{name}` is declared twice in this method")]
    #[diagnostic(
        code(E0225),
        help("a `goto` must name exactly one `label`: rename one of them")
    )]
    LabelTwice {
        name: String,
        #[label(primary, "declared again here")]
        span: Span,
        #[label("first declared here")]
        first: Span,
    },

    #[error("`goto {name}`: no `label {name};` in this method")]
    #[diagnostic(code(E0226), help("a `goto` jumps to a `label` of the same method"))]
    UnknownLabel {
        name: String,
        #[label("no such label")]
        span: Span,
    },

    #[error("not supported yet: {what} (VerCors' process-algebra models, `--check-history`)")]
    #[diagnostic(
        code(E0227),
        help(
            "`check` and `verify` read models whose actions take `int`/`boolean` parameters \
             and have no `requires`, with processes of actions, `empty`, `*`, `||` and declared \
             processes that do not recurse (no `+`, no conditions); `optimise`, `run` and OpenCL \
             refuse every model"
        )
    )]
    ModelNotSupported {
        what: &'static str,
        #[label("here")]
        span: Span,
    },

    #[error("a constructor's precondition cannot name the object it constructs ({what})")]
    #[diagnostic(
        code(E0228),
        help(
            "the object does not exist before the call: state what the constructor needs of its \
             parameters, and what it gives of the new object's fields in `ensures`"
        )
    )]
    ConstructorRequiresThis {
        what: String,
        #[label("the object under construction")]
        span: Span,
    },

    #[error("`AutoValue` outside the `requires`, `ensures` or `context` of a method or function")]
    #[diagnostic(
        code(E0229),
        help(
            "`AutoValue(loc)` borrows a read of `loc` from the caller for the length of a call; \
             elsewhere write `Value(loc)` or `Perm(loc, read)`"
        )
    )]
    AutoValueMisplaced {
        #[label("here")]
        span: Span,
    },

    #[error("`AutoValue({loc})` beside another permission of the same location in one contract")]
    #[diagnostic(
        code(E0230),
        help(
            "`AutoValue` takes whatever part of the caller's permission it needs: state either \
             `AutoValue({loc})` or an amount of it, not both (VerCors' `combinedAutoValue`)"
        )
    )]
    AutoValueCombined {
        loc: String,
        #[label(primary, "this `AutoValue`")]
        span: Span,
        #[label("the same location")]
        other: Span,
    },

    #[error("`AutoValue({loc})` in a postcondition, but the precondition does not borrow `{loc}`")]
    #[diagnostic(
        code(E0231),
        help(
            "a postcondition's `AutoValue` gives back what the precondition's borrowed: write \
             `context AutoValue({loc});`, or `ensures Value({loc});` for a read of the callee's own"
        )
    )]
    AutoValueNotBorrowed {
        loc: String,
        #[label("nothing borrowed to give back")]
        span: Span,
    },

    // ---- E03xx: types ------------------------------------------------------------------
    #[error("type mismatch in {what}: expected {expected}, found {found}")]
    #[diagnostic(code(E0301))]
    Mismatch {
        what: String,
        expected: String,
        found: String,
        #[label("this is {found}")]
        span: Span,
    },

    #[error("operator `{op}` cannot be applied to {lhs} and {rhs}")]
    #[diagnostic(code(E0302))]
    BadOperands {
        op: &'static str,
        lhs: String,
        rhs: String,
        #[label("{lhs} {op} {rhs}")]
        span: Span,
    },

    #[error("`{name}` takes {expected} argument(s) but {found} were given")]
    #[diagnostic(code(E0303))]
    ArgCount {
        name: String,
        expected: usize,
        found: usize,
        #[label(primary, "wrong number of arguments")]
        span: Span,
        #[label("declared here")]
        decl: Span,
    },

    #[error("no `{name}` takes arguments of the types ({found})")]
    #[diagnostic(code(E0311), help("the overloads declared: {declared}"))]
    NoOverload {
        name: String,
        found: String,
        declared: String,
        #[label("no overload fits")]
        span: Span,
    },

    #[error("the call of `{name}` fits two of its overloads")]
    #[diagnostic(
        code(E0312),
        help("an overload is chosen by the arguments' types; make them tell the overloads apart")
    )]
    AmbiguousCall {
        name: String,
        #[label(primary, "ambiguous call")]
        span: Span,
        #[label("fits this one")]
        first: Span,
        #[label("and this one")]
        second: Span,
    },

    #[error("`{name}` takes {expected} type argument(s) but {found} were given")]
    #[diagnostic(
        code(E0310),
        help("a generic method is called with its type arguments written out: `f<int>(..)`")
    )]
    TypeArgCount {
        name: String,
        expected: usize,
        found: usize,
        #[label(primary, "wrong number of type arguments")]
        span: Span,
        #[label("declared here")]
        decl: Span,
    },

    #[error("sequence elements cannot be assigned: sequences are immutable values")]
    #[diagnostic(code(E0304), help("write `s = s[i -> v];` instead"))]
    SeqElementAssign {
        #[label("element of a {ty}")]
        span: Span,
        ty: String,
    },

    #[error("not a heap location: {found}")]
    #[diagnostic(
        code(E0305),
        help("permissions are held on fields (`x`, `this.x`, `o.f`) and array cells (`a[i]`)")
    )]
    NotHeapLocation {
        found: String,
        #[label("expected a field or an array cell")]
        span: Span,
    },

    #[error("`{ty}` has no member `{name}`")]
    #[diagnostic(code(E0306))]
    NoSuchMember {
        name: String,
        ty: String,
        #[label("no such member")]
        span: Span,
    },

    #[error("{ty} cannot be indexed")]
    #[diagnostic(code(E0307))]
    NotIndexable {
        ty: String,
        #[label("not an array, sequence or map")]
        span: Span,
    },

    #[error("{message}")]
    #[diagnostic(code(E0308))]
    BadReturn {
        message: String,
        #[label("here")]
        span: Span,
    },

    #[error("`{what}` needs a predicate application, found {found}")]
    #[diagnostic(code(E0309))]
    NotAPredicate {
        what: &'static str,
        found: String,
        #[label("not a predicate")]
        span: Span,
    },

    // ---- E04xx: gpuopt annotations -------------------------------------------------------
    #[error("`gpuopt {kind}` cannot annotate a field")]
    #[diagnostic(
        code(E0401),
        help("gpuopt annotations stand before a method, a loop or a par block")
    )]
    GpuOptOnField {
        kind: &'static str,
        #[label("before a field")]
        span: Span,
    },

    #[error("misplaced `gpuopt {kind}`: it must stand directly before {expected}")]
    #[diagnostic(code(E0402))]
    GpuOptMisplaced {
        kind: &'static str,
        expected: &'static str,
        #[label("misplaced")]
        span: Span,
    },

    #[error("duplicated `gpuopt {kind}` on the same target")]
    #[diagnostic(code(E0403))]
    GpuOptDuplicate {
        kind: &'static str,
        #[label(primary, "duplicate")]
        span: Span,
        #[label("first given here")]
        first: Span,
    },

    #[error("`{var}` is not the iteration variable of the annotated loop")]
    #[diagnostic(
        code(E0404),
        help("the variable must appear in the loop's condition and be assigned by the loop")
    )]
    GpuOptLoopVar {
        var: String,
        #[label(primary, "not the loop variable")]
        span: Span,
        #[label("the annotated loop")]
        loop_span: Span,
    },

    #[error("the {what} of `gpuopt {kind}` must be a positive integer literal")]
    #[diagnostic(code(E0405))]
    GpuOptBadNumber {
        kind: &'static str,
        what: &'static str,
        #[label("not a positive integer literal")]
        span: Span,
    },

    #[error("`gpuopt fuse {needed}` needs {needed} par blocks after it, found {found}")]
    #[diagnostic(code(E0406))]
    GpuOptFuseCount {
        needed: u64,
        found: usize,
        #[label("too few par blocks follow")]
        span: Span,
    },

    #[error("`gpuopt matrix_lin {name}`: `{name}` is not an `int[][]` or `boolean[][]` parameter or local of the method, nor such a field of its class")]
    #[diagnostic(code(E0407))]
    GpuOptNotMatrixParam {
        name: String,
        #[label("expected a parameter, local or field of type int[][]")]
        span: Span,
    },

    #[error("`gpuopt glob_to_reg {name}`: `{name}` is not an array parameter of the method nor an array field of its class")]
    #[diagnostic(code(E0408))]
    GpuOptNotArrayParam {
        name: String,
        #[label("expected an array parameter or field")]
        span: Span,
    },

    #[error("`gpuopt tile` needs a method whose body is exactly one par block")]
    #[diagnostic(code(E0409))]
    GpuOptTileBody {
        #[label(primary, "this annotation")]
        span: Span,
        #[label("this body is not one par block")]
        body: Span,
    },
}

/// Suspicious but legal programs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum CheckWarning {
    #[error("`{name}` shadows an earlier declaration")]
    #[diagnostic(code(W0201), severity(Warning))]
    Shadowing {
        name: String,
        #[label(primary, "this declaration")]
        span: Span,
        #[label("shadows this one")]
        shadowed: Span,
    },

    #[error("this trigger cannot be a pattern: {reason}")]
    #[diagnostic(
        code(W0203),
        severity(Warning),
        help(
            "a pattern is an expression over all the quantifier's binders (a call, an index), \
              not a binder alone; without one the prover chooses the patterns itself"
        )
    )]
    UnusableTrigger {
        reason: String,
        #[label("this trigger")]
        span: Span,
    },

    #[error("`{what}` is not supported by the verifier")]
    #[diagnostic(
        code(W0202),
        severity(Warning),
        help("`alpinist verify` will refuse this program")
    )]
    Unsupported {
        what: &'static str,
        #[label("here")]
        span: Span,
    },
}

impl CheckError {
    /// Whether it is about a `gpuopt` annotation (E04xx): those concern `optimise` only.
    pub fn is_gpuopt(&self) -> bool {
        use CheckError::*;
        matches!(
            self,
            GpuOptOnField { .. }
                | GpuOptMisplaced { .. }
                | GpuOptDuplicate { .. }
                | GpuOptLoopVar { .. }
                | GpuOptBadNumber { .. }
                | GpuOptFuseCount { .. }
                | GpuOptNotMatrixParam { .. }
                | GpuOptNotArrayParam { .. }
                | GpuOptTileBody { .. }
        )
    }

    /// The primary span, for sorting and tests.
    pub fn span(&self) -> Span {
        use CheckError::*;
        match self {
            UnknownVariable { span, .. }
            | UnknownField { span, .. }
            | UnknownMethod { span, .. }
            | UnknownClass { span, .. }
            | UnknownParLabel { span, .. }
            | UnknownGhostParam { span, .. }
            | UnknownInvariant { span, .. }
            | Duplicate { span, .. }
            | ThisOutsideClass { span }
            | ResultOutsidePostcondition { span }
            | WriteToParIterator { span, .. }
            | WriteToOuterLocalInPar { span, .. }
            | ImpureCall { span, .. }
            | NotAssignable { span }
            | ClauseMisplaced { span, .. }
            | GhostWritesLocal { span, .. }
            | GhostWritesHeap { span }
            | GhostCallHasEffect { span, .. }
            | GhostControl { span, .. }
            | DuplicateDecreases { span, .. }
            | ConstructorName { span, .. }
            | AllIndicesOutsideLocation { span }
            | LabelTwice { span, .. }
            | UnknownLabel { span, .. }
            | ModelNotSupported { span, .. }
            | ConstructorRequiresThis { span, .. }
            | AutoValueMisplaced { span }
            | AutoValueCombined { span, .. }
            | AutoValueNotBorrowed { span, .. }
            | Mismatch { span, .. }
            | BadOperands { span, .. }
            | ArgCount { span, .. }
            | TypeArgCount { span, .. }
            | NoOverload { span, .. }
            | AmbiguousCall { span, .. }
            | SeqElementAssign { span, .. }
            | NotHeapLocation { span, .. }
            | NoSuchMember { span, .. }
            | NotIndexable { span, .. }
            | BadReturn { span, .. }
            | NotAPredicate { span, .. }
            | GpuOptOnField { span, .. }
            | GpuOptMisplaced { span, .. }
            | GpuOptDuplicate { span, .. }
            | GpuOptLoopVar { span, .. }
            | GpuOptBadNumber { span, .. }
            | GpuOptFuseCount { span, .. }
            | GpuOptNotMatrixParam { span, .. }
            | GpuOptNotArrayParam { span, .. }
            | GpuOptTileBody { span, .. } => *span,
        }
    }

    /// The stable code, e.g. `"E0201"`.
    pub fn code_str(&self) -> String {
        miette::Diagnostic::code(self)
            .map(|c| c.to_string())
            .unwrap_or_default()
    }
}
