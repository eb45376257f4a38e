//! The Rust front end: lowering (printed PVL, snapshotted), the verdicts of the expansion on
//! correct kernels and their broken twins, and the CPU function's entry checks.

use proc_macro2::TokenStream;
use quote::quote;

use super::*;

/// What the proc macro makes of a kernel or a module (what `#[alpinist::kernel]` or
/// `#[alpinist::module]` receives).
fn expand(item: TokenStream, verify: bool) -> TokenStream {
    if syn::parse2::<syn::ItemMod>(item.clone()).is_ok() {
        expand_module(TokenStream::new(), item, verify)
    } else {
        expand_kernel(TokenStream::new(), item, verify)
    }
}

/// The lowered program, as the expansion's `PVL` constant holds it without verification.
fn lowered_pvl(item: TokenStream) -> String {
    pvl_constant(expand(item, false))
}

/// The `PVL` constant of an expansion with verification on: the optimised kernel.
fn verified_pvl(item: TokenStream) -> String {
    pvl_constant(expand(item, true))
}

/// The `PVL` constant of an expansion.
fn pvl_constant(out: TokenStream) -> String {
    fn find(items: &[syn::Item]) -> Option<String> {
        items.iter().find_map(|i| match i {
            syn::Item::Const(c) if c.ident == "PVL" => match &*c.expr {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            syn::Item::Mod(m) => find(&m.content.as_ref()?.1),
            _ => None,
        })
    }
    let file: syn::File = syn::parse2(out).expect("the expansion parses");
    find(&file.items).expect("a PVL constant")
}

/// The `compile_error!` messages of an expansion (verification on).
fn errors(item: TokenStream) -> Vec<String> {
    compile_errors(expand(item, true))
}

/// The `compile_error!` messages among the items of an expansion.
fn compile_errors(out: TokenStream) -> Vec<String> {
    let file: syn::File = syn::parse2(out).expect("the expansion parses as items");
    file.items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Macro(m) if m.mac.path.segments.last().unwrap().ident == "compile_error" => {
                let lit: syn::LitStr = m.mac.parse_body().expect("a message");
                Some(lit.value())
            }
            _ => None,
        })
        .collect()
}

fn verdict(item: TokenStream) -> String {
    let out = expand(item, true).to_string();
    let at = out.find("KernelVerdict :: ").expect("a verdict") + "KernelVerdict :: ".len();
    out[at..]
        .split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches(';')
        .to_string()
}

/// The kernels of a data file: each `fn` under `#[alpinist::kernel]`, that attribute taken off
/// (what the proc macro receives), with the file's `// expect:` line.
fn kernels(path: &std::path::Path) -> (Vec<TokenStream>, Option<String>) {
    let text = std::fs::read_to_string(path).expect("a data file");
    let expect = text
        .lines()
        .find_map(|l| l.strip_prefix("// expect: "))
        .map(str::to_string);
    let file = syn::parse_file(&text).expect("the data file parses as Rust");
    let mut out = Vec::new();
    for item in file.items {
        if let syn::Item::Mod(mut m) = item {
            m.attrs
                .retain(|a| a.path().segments.last().is_none_or(|s| s.ident != "module"));
            out.push(quote!(#m));
        } else if let syn::Item::Fn(mut f) = item {
            let before = f.attrs.len();
            f.attrs
                .retain(|a| a.path().segments.last().is_none_or(|s| s.ident != "kernel"));
            if f.attrs.len() < before {
                out.push(quote!(#f));
            }
        }
    }
    assert!(!out.is_empty(), "{}: no kernel", path.display());
    (out, expect)
}

fn data(dir: &str) -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/rust")
        .join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .expect("tests/data/rust")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    files
}

/// Every kernel in `tests/data/rust/ok/` verifies; its lowered PVL is snapshotted, and the PVL
/// front end gives that text the same verdict (the two front ends meet in one IR).
#[test]
fn correct_kernels_verify_and_their_pvl_does_too() {
    for path in data("ok") {
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        for item in kernels(&path).0 {
            let errors = errors(item.clone());
            assert!(errors.is_empty(), "{stem}: {errors:#?}");
            assert_eq!(verdict(item.clone()), "Verified", "{stem}");
            let pvl = lowered_pvl(item);
            insta::assert_snapshot!(format!("rust_{stem}"), pvl);
            let parsed = crate::syntax::parse(&pvl).unwrap_or_else(|e| panic!("{stem}: {e:?}"));
            crate::check::check(&parsed.program).unwrap_or_else(|e| panic!("{stem}: {e:?}"));
            let limits = crate::verify::Limits::default();
            for report in crate::verify::verify_program(&parsed.program, &limits, 1) {
                assert_eq!(
                    report.outcome(),
                    crate::verify::Outcome::Verified,
                    "{stem}: the printed PVL: {report:#?}"
                );
            }
        }
    }
}

/// Every kernel in `tests/data/rust/fail/` is refused with the error its `// expect:` line
/// names, and its verdict is not `Verified`.
#[test]
fn broken_kernels_fail_with_their_error() {
    for path in data("fail") {
        let (items, expect) = kernels(&path);
        let expect = expect.unwrap_or_else(|| panic!("{}: no `// expect:` line", path.display()));
        for item in items {
            let errors = errors(item.clone());
            assert!(
                errors.iter().any(|e| e.contains(&expect)),
                "{}: expected `{expect}` among {errors:#?}",
                path.display()
            );
            assert_eq!(verdict(item), "Failed", "{}", path.display());
        }
    }
}

fn pretty(out: TokenStream) -> String {
    prettyplease::unparse(&syn::parse2::<syn::File>(out).expect("the expansion parses"))
}

fn first_kernel(file: &str) -> TokenStream {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/rust")
        .join(file);
    kernels(&path).0.remove(0)
}

/// What users get: the CPU function (helpers out, types the proof assumed written out, entry
/// checks in) and the module.
#[test]
fn the_expansion_of_a_verified_kernel() {
    let out = expand_kernel(TokenStream::new(), first_kernel("ok/repeated_add.rs"), true);
    insta::assert_snapshot!(pretty(out));
}

/// No times, paths or hash-map order: expanding twice gives the same tokens.
#[test]
fn the_expansion_is_deterministic() {
    for file in ["ok/vector_add.rs", "ok/clamp.rs", "fail/usize_underflow.rs"] {
        let item = first_kernel(file);
        let once = expand_kernel(TokenStream::new(), item.clone(), true).to_string();
        let twice = expand_kernel(TokenStream::new(), item, true).to_string();
        assert_eq!(once, twice, "{file}");
    }
}

/// `ALPINIST_VERIFY=0`: no proof, the verdict says so, and a broken kernel still builds (its
/// lowering and `check` errors are still reported).
#[test]
fn without_verification_the_verdict_is_skipped() {
    let out = expand_kernel(
        TokenStream::new(),
        first_kernel("fail/usize_underflow.rs"),
        false,
    );
    let text = out.to_string();
    assert!(text.contains("KernelVerdict :: Skipped"), "{text}");
    assert!(!text.contains("compile_error"), "{text}");
    let out = expand_kernel(
        TokenStream::new(),
        first_kernel("fail/pvl_spelling.rs"),
        false,
    );
    assert!(out.to_string().contains("compile_error"));
}

/// A contract attribute rustc expanded on its own (written above `#[alpinist::kernel]`) says
/// so, and takes the kernel attribute off so nothing is verified without its clause.
#[test]
fn a_clause_above_the_kernel_attribute_is_an_error() {
    let item = quote! {
        #[alpinist::kernel]
        #[ensures(result == 1)]
        fn one() -> i32 { 1 }
    };
    let out = misplaced_helper("requires", quote!(x > 0), item).to_string();
    assert!(out.contains("must be the first attribute"), "{out}");
    let out = misplaced_helper(
        "pure",
        TokenStream::new(),
        quote!(
            fn f() -> i32 {
                1
            }
        ),
    )
    .to_string();
    assert!(out.contains("#[alpinist::module]"), "{out}");
    assert!(!out.contains("kernel ]"), "{out}");
    assert!(!out.contains("ensures"), "{out}");
}

/// Arguments to `#[alpinist::kernel]` and items that are not functions are errors.
#[test]
fn the_kernel_attribute_goes_on_a_function_without_arguments() {
    let out = expand_kernel(quote!(fast), first_kernel("ok/sum_below.rs"), true).to_string();
    assert!(out.contains("takes no arguments"), "{out}");
    let out = expand_kernel(
        TokenStream::new(),
        quote!(
            struct S;
        ),
        true,
    )
    .to_string();
    assert!(out.contains("goes on a function"), "{out}");
}

/// A par block with barriers runs on the CPU by barrier-interval fission: thread loops between
/// the barriers, the loop around them hoisted (its condition read as the first thread sees it),
/// locals that live across a barrier one cell per thread.
#[test]
fn the_expansion_of_a_kernel_with_barriers() {
    let out = expand_kernel(TokenStream::new(), first_kernel("ok/spread_max.rs"), true);
    let text = pretty(out);
    let cpu = &text[..text.find("///What").expect("the module follows")];
    insta::assert_snapshot!(cpu);
}

/// `#[gpuopt(..)]` requests are applied after the kernel as written verifies: `PVL` holds the
/// optimised kernel, which the PVL front end verifies too; without verification (their
/// applicability cannot be checked) they stay requests in `PVL`.
#[test]
fn gpuopt_requests_are_applied_and_the_result_reverified() {
    let item = first_kernel("ok/repeated_add_unrolled.rs");
    let pvl = verified_pvl(item.clone());
    assert!(!pvl.contains("gpuopt"), "{pvl}");
    // Three copies of the body before the loop, and the loop's own.
    assert_eq!(pvl.matches("y[tid] = y[tid] + x[tid];").count(), 4, "{pvl}");
    let parsed = crate::syntax::parse(&pvl).unwrap_or_else(|e| panic!("{e:?}\n{pvl}"));
    for report in
        crate::verify::verify_program(&parsed.program, &crate::verify::Limits::default(), 1)
    {
        assert_eq!(report.outcome(), crate::verify::Outcome::Verified, "{pvl}");
    }
    let tiled = verified_pvl(first_kernel("ok/scale_tiled.rs"));
    assert!(
        tiled.contains("par threads1(int t = 0 .. (n + 3) / 4)"),
        "{tiled}"
    );
    assert!(lowered_pvl(item).contains("gpuopt loop_unroll i 3;"));
}

/// Misplaced or malformed `#[gpuopt(..)]` attributes are errors at the attribute.
#[test]
fn gpuopt_attributes_say_where_they_go() {
    let on_a_while = |attr: TokenStream| {
        quote! {
            #[requires(n > 2)]
            fn f(n: i32) {
                let mut i = 0;
                #attr
                while i < n { i += 1; }
            }
        }
    };
    let cases = [
        (
            on_a_while(quote!(#[gpuopt(tile(inter, 2))])),
            "tiling and fusion go on a par block",
        ),
        (
            on_a_while(quote!(#[gpuopt(loop_unroll(k))])),
            "a positive integer literal",
        ),
        (
            quote! {
                #[requires(n > 2)]
                fn f(n: i32) {
                    let mut i = 0;
                    let mut j = 0;
                    #[gpuopt(loop_unroll(2))]
                    while i < n && j < n { i += 1; j += 1; }
                }
            },
            "needs one loop variable",
        ),
        (
            quote! {
                #[requires(n > 2)]
                fn f(n: usize, a: &mut [i32]) {
                    #[gpuopt(loop_unroll(2))]
                    for tid in par(0..n) { }
                }
            },
            "loop unrolling and merging go on a loop",
        ),
    ];
    for (item, expect) in cases {
        let out = expand(item, false).to_string();
        assert!(out.contains(expect), "{expect}: {out}");
    }
}

fn fresh_cache(name: &str) -> crate::cache::tests::TempCache {
    crate::cache::tests::fresh_cache(&format!("macro-{name}"))
}

/// The item entries in a cache folder.
fn item_entries(cache: &crate::cache::MethodCache) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(cache.dir().join("items-v1"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

fn with_cache(cache: &crate::cache::MethodCache) -> Checking {
    Checking {
        verify: true,
        cache: Some(cache.clone()),
    }
}

/// A verified kernel is stored with the `PVL` it emits, and an expansion of the same kernel
/// takes it from there without proving: an entry whose `PVL` was replaced (keeping its key) is
/// what the next expansion emits. A changed kernel is a miss; a damaged entry is one too (the
/// kernel is proved again and the entry written anew); without a cache nothing is written.
#[test]
fn verified_items_come_back_from_the_cache_and_nothing_else_does() {
    let cache = fresh_cache("items");
    let item = first_kernel("ok/vector_add.rs");
    let pvl = pvl_constant(expand_kernel(
        TokenStream::new(),
        item.clone(),
        with_cache(&cache),
    ));
    let entries = item_entries(&cache);
    assert_eq!(entries.len(), 1, "{entries:?}");

    // Reused: the entry's PVL, replaced, is what comes back (no proof ran to make it).
    let text = std::fs::read_to_string(&entries[0]).unwrap();
    let mut entry: serde_json::Value = serde_json::from_str(&text).unwrap();
    entry["pvl"] = serde_json::Value::String("// from the cache".into());
    std::fs::write(&entries[0], entry.to_string()).unwrap();
    let out = expand_kernel(TokenStream::new(), item.clone(), with_cache(&cache));
    assert_eq!(pvl_constant(out.clone()), "// from the cache");
    assert!(out.to_string().contains("KernelVerdict :: Verified"));

    // Damaged: a miss, proved again and stored again.
    std::fs::write(&entries[0], "{ not json").unwrap();
    let out = expand_kernel(TokenStream::new(), item.clone(), with_cache(&cache));
    assert_eq!(pvl_constant(out), pvl);
    assert_eq!(item_entries(&cache).len(), 1);
    assert!(std::fs::read_to_string(&entries[0])
        .unwrap()
        .contains("\"pvl\""));

    // Changed (a weaker postcondition): another key, proved, a second entry.
    let changed: TokenStream = item
        .to_string()
        .replacen("ensures (", "ensures (n >= 0 , ", 1)
        .parse()
        .unwrap();
    let out = expand_kernel(TokenStream::new(), changed, with_cache(&cache));
    assert!(
        out.to_string().contains("KernelVerdict :: Verified"),
        "{out}"
    );
    assert_eq!(item_entries(&cache).len(), 2);

    // Without a cache (`ALPINIST_CACHE=0`, `ALPINIST_VERIFY=0`): nothing read or written.
    let none = fresh_cache("none");
    expand_kernel(TokenStream::new(), item, true);
    assert!(item_entries(&none).is_empty());
}

/// Failing kernels and modules are never stored (and a module's entry is its whole program).
#[test]
fn failing_items_are_never_stored() {
    let cache = fresh_cache("failing");
    for file in ["fail/vector_add_wrong_sum.rs", "fail/lemma_precondition.rs"] {
        let (items, _) = kernels(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/data/rust")
                .join(file),
        );
        for item in items {
            let out = if syn::parse2::<syn::ItemMod>(item.clone()).is_ok() {
                expand_module(TokenStream::new(), item, with_cache(&cache))
            } else {
                expand_kernel(TokenStream::new(), item, with_cache(&cache))
            };
            assert!(out.to_string().contains("compile_error"), "{file}");
        }
    }
    assert!(item_entries(&cache).is_empty());
    let (items, _) = kernels(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/data/rust/ok/two_halves.rs"),
    );
    for item in items {
        expand_module(TokenStream::new(), item, with_cache(&cache));
    }
    assert_eq!(item_entries(&cache).len(), 1);
}

/// A folder of its own under the system's temporary folder holding `files` (name, text): the
/// crate root `include_pvl!` reads from. Removed when the test is done with it.
fn pvl_folder(name: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(&format!("alpinist-include-test-{name}-"))
        .tempdir()
        .unwrap();
    for (file, text) in files {
        std::fs::write(dir.path().join(file), text).unwrap();
    }
    dir
}

const BOUNDED_ADD: &str = "class Add {
  context_everywhere a != null && b != null && a.length == N && b.length == N;
  context (\\forall* int i; 0 <= i && i < N; Perm(a[i], 1\\2) ** Perm(b[i], write));
  requires (\\forall int i; 0 <= i && i < N; 0 <= a[i] && a[i] <= 100 && 0 <= b[i] && b[i] <= 100);
  ensures (\\forall int i; 0 <= i && i < N; b[i] == a[i] + \\old(b[i]));
  void add(int N, int[] a, int[] b) {
    par (int t = 0 .. N)
      context Perm(a[t], 1\\2) ** Perm(b[t], write);
      requires 0 <= a[t] && a[t] <= 100 && 0 <= b[t] && b[t] <= 100;
      ensures b[t] == a[t] + \\old(b[t]);
    {
      b[t] = b[t] + a[t];
    }
  }

  requires 0 <= n && n < 1000;
  ensures \\result == n + 1;
  int next(int n) {
    return n + 1;
  }

  requires 0 <= i && i <= |s|;
  pure int count(seq<int> s, int i) = i;

  void ghostly(seq<int> s) {
  }
}
";

/// What users get from `include_pvl!`: the file tracked by cargo, and per method Rust can
/// call (not the pure function, not the method taking a sequence) a CPU function on the
/// interpreter, after the entry check, and the module with the launcher.
#[test]
fn the_expansion_of_an_included_pvl_file() {
    let root = pvl_folder("expansion", &[("add.pvl", BOUNDED_ADD)]);
    let out = expand_include_pvl_in(root.path(), quote!("add.pvl"), true);
    assert!(compile_errors(out.clone()).is_empty());
    insta::assert_snapshot!(pretty(out));
}

/// An included file that does not verify, or does not fit 32 bits, is an error at the path,
/// naming the file's line and column, and its functions are still emitted (the rest of the
/// crate type-checks).
#[test]
fn an_included_file_that_does_not_verify_is_an_error_at_its_line() {
    let wrong = BOUNDED_ADD.replace("ensures \\result == n + 1;", "ensures \\result == n;");
    let unbounded = BOUNDED_ADD.replace("n < 1000", "n < 2147483647 + 1");
    let root = pvl_folder(
        "broken",
        &[("wrong.pvl", &wrong), ("unbounded.pvl", &unbounded)],
    );
    let out = expand_include_pvl_in(root.path(), quote!("wrong.pvl"), true);
    let found = compile_errors(out.clone());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("wrong.pvl:17:11: E0602"), "{found:?}");
    let text = out.to_string();
    assert!(
        text.contains("pub fn next") && text.contains("Failed"),
        "{text}"
    );
    let found = compile_errors(expand_include_pvl_in(
        root.path(),
        quote!("unbounded.pvl"),
        true,
    ));
    assert!(
        found
            .iter()
            .any(|e| e.starts_with("unbounded.pvl:19:12: E0623")),
        "{found:?}"
    );
    // Without verification: no proof, no error, the verdict says so.
    let out = expand_include_pvl_in(root.path(), quote!("wrong.pvl"), false);
    assert!(compile_errors(out.clone()).is_empty());
    assert!(out.to_string().contains("Skipped"));
}

/// What cannot be read is an error, never an empty expansion.
#[test]
fn include_pvl_refuses_what_it_cannot_read() {
    let root = pvl_folder(
        "unreadable",
        &[("bad.pvl", "class C { void f() { x = ; } }")],
    );
    let missing = compile_errors(expand_include_pvl_in(
        root.path(),
        quote!("missing.pvl"),
        true,
    ));
    assert!(
        missing[0].starts_with("cannot read `missing.pvl`"),
        "{missing:?}"
    );
    let usage = compile_errors(expand_include_pvl_in(root.path(), quote!(bad), true));
    assert!(
        usage[0].contains("takes the path of a PVL file"),
        "{usage:?}"
    );
    let syntax = compile_errors(expand_include_pvl_in(root.path(), quote!("bad.pvl"), true));
    assert!(syntax[0].starts_with("bad.pvl:1:26: "), "{syntax:?}");
}

/// No times, paths or hash-map order: expanding twice gives the same tokens, wherever the
/// crate lies.
#[test]
fn the_expansion_of_an_included_file_is_deterministic() {
    let here = pvl_folder("here", &[("add.pvl", BOUNDED_ADD)]);
    let there = pvl_folder("there", &[("add.pvl", BOUNDED_ADD)]);
    let once = expand_include_pvl_in(here.path(), quote!("add.pvl"), true).to_string();
    let twice = expand_include_pvl_in(there.path(), quote!("add.pvl"), true).to_string();
    assert_eq!(once, twice);
}

/// An array the method only reads cells of is a `&[T]` (not copied back); one it writes, or lets
/// escape (to a call, through a local), is a `&mut [T]`.
#[test]
fn included_arrays_the_method_only_reads_are_shared_slices() {
    let text = "class K {
  K() { }
  void reads(int[] a, boolean[] f) { int x = a[0] + a.length; boolean y = f[x]; }
  void writes(int[] a) { a[0] = 1; }
  void bumps(int[] a) { a[0]++; }
  void passes(int[] a) { writes(a); }
  void aliases(int[] a) { int[] b = a; b[0] = 1; }
  void flags(boolean[] f) { f[0] = true; }
}
";
    let root = pvl_folder("slices", &[("k.pvl", text)]);
    let out = pretty(expand_include_pvl_in(root.path(), quote!("k.pvl"), false));
    for signature in [
        "pub fn reads(a: &[i32], f: &[bool])",
        "pub fn writes(a: &mut [i32])",
        "pub fn bumps(a: &mut [i32])",
        "pub fn passes(a: &mut [i32])",
        "pub fn aliases(a: &mut [i32])",
        "pub fn flags(f: &mut [bool])",
    ] {
        assert!(out.contains(signature), "{signature}\n{out}");
    }
    // The constructor is not a function Rust can call.
    assert!(!out.contains("pub fn K"), "{out}");
}
