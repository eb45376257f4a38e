//! The verified-method cache: a routine verified once is not proved again while nothing its
//! verdict depends on has changed. One cache for every client — `verify`, `optimise` (an
//! optimisation changes one method; the others come from here) through
//! [`crate::witness::verify_and_confirm`], and the Rust macros through their item entries.
//!
//! # The key
//! A routine's entry is keyed on the whole text of what its verdict depends on ([`keys`]):
//! - the checker (a digest of `alpinist-core`'s sources, made by `build.rs`), Z3's version, the
//!   limits and the concrete-search budget;
//! - the routine itself, printed, and its layout (every span, relative to its start: the
//!   stored obligations are placed by it);
//! - every other declaration printed with the statements of block bodies left out: fields,
//!   class contracts (lock invariants), contracts and signatures of methods and lemmas,
//!   pure functions and predicates whole;
//! - what the checker reads from those statements (`verify::cross_routine_facts`: mutual
//!   recursion, which methods may not terminate, `commit`, ambiguous names).
//!
//! So editing one method's body re-proves that method only (and the methods whose facts it
//! changes); editing a contract, a function or a predicate re-proves every routine of the file.
//!
//! # Invariants
//! - **Only `Verified` is stored**, with no error; the obligations, trusted items and warnings
//!   come back exactly as they were found, placed by the routine's layout. A report whose
//!   spans leave the routine is not stored.
//! - **An entry costs time, never a verdict.** The file name is a digest of the key, but an
//!   entry is used only when the key it stores is *equal* to the one asked for; anything
//!   unreadable or different is a miss (and is overwritten).
//! - **Concurrent runs share the folder**: an entry is written to a temporary file and renamed
//!   into place, so a reader sees a whole entry or none. Write failures are ignored (the
//!   verdict is already known; the next run proves again).
//! - `--int32` runs are not cached (which operations are exempt and which routines are entry
//!   points depends on every body).
//! - The folder is bounded: [`MethodCache::from_env`] prunes it to [`MAX_ENTRIES`], the least
//!   recently written entries first.
//!
//! # The Rust macros' entries
//! `#[alpinist::kernel]` and `#[alpinist::module]` verify a whole lowered program at once, in
//! the 32-bit mode, so their entries ([`ItemKey`], in a folder of their own) are keyed on that
//! program in full — every routine's body and every span (the 32-bit mode keys its unsigned
//! operations by span) — with the checker, Z3's version and the limits; one stores the `PVL`
//! the expansion emits (after the `#[gpuopt(..)]` optimisations, reverified), and only when
//! nothing was reported. A hit skips Z3 for the item; the rest of the expansion (lowering,
//! the CPU function) runs as before.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::syntax::{self, Item, MemberKind, MethodBody, Program, Span, Trivia};
use crate::verify::{self, MethodReport, Obligation, ObligationKind, Outcome, Status};
use crate::verify::{Trusted, Warning};

/// `ALPINIST_CACHE=0` turns the cache off (as `--no-cache` does).
pub const SWITCH_ENV: &str = "ALPINIST_CACHE";
/// Where the cache lives, when set; otherwise `$XDG_CACHE_HOME/alpinist`, else
/// `$HOME/.cache/alpinist`.
pub const DIR_ENV: &str = "ALPINIST_CACHE_DIR";

/// The entries' format; a new one starts a new folder.
const FORMAT: &str = "methods-v1";
/// The Rust macros' entries' format (see [`ItemKey`]).
const ITEM_FORMAT: &str = "items-v1";

/// At most this many entries stay in the folder (a few kilobytes each; see
/// [`MethodCache::prune`]).
pub const MAX_ENTRIES: usize = 20_000;

/// A folder of verified routines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodCache {
    dir: PathBuf,
}

impl MethodCache {
    /// The cache in `dir` (created when the first entry is written).
    pub fn at(dir: impl Into<PathBuf>) -> MethodCache {
        MethodCache { dir: dir.into() }
    }

    /// The cache the environment asks for: `None` with `ALPINIST_CACHE=0` (or `off`, `false`,
    /// `no`), or where no folder can be named.
    pub fn from_env() -> Option<MethodCache> {
        MethodCache::from_vars(&|name| std::env::var_os(name))
    }

    /// [`MethodCache::from_env`] over the variables `var` gives.
    fn from_vars(var: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Option<MethodCache> {
        let switch = var(SWITCH_ENV).unwrap_or_default();
        let switch = switch.to_string_lossy().trim().to_ascii_lowercase();
        if ["0", "off", "false", "no"].contains(&switch.as_str()) {
            return None;
        }
        let nonempty = |name: &str| var(name).filter(|v| !v.is_empty());
        let dir = match (
            nonempty(DIR_ENV),
            nonempty("XDG_CACHE_HOME"),
            nonempty("HOME"),
        ) {
            (Some(dir), _, _) => PathBuf::from(dir),
            (None, Some(xdg), _) => PathBuf::from(xdg).join("alpinist"),
            (None, None, Some(home)) => PathBuf::from(home).join(".cache").join("alpinist"),
            (None, None, None) => return None,
        };
        let cache = MethodCache::at(dir);
        cache.prune(MAX_ENTRIES);
        Some(cache)
    }

    /// Keeps the folder to at most `max` entries: beyond that, the least recently written
    /// ones go (down to three quarters of `max`), so the cache never grows without bound.
    /// Best effort: what cannot be read or removed stays.
    pub fn prune(&self, max: usize) {
        for format in [FORMAT, ITEM_FORMAT] {
            self.prune_folder(format, max);
        }
    }

    fn prune_folder(&self, format: &str, max: usize) {
        let Ok(entries) = std::fs::read_dir(self.dir.join(format)) else {
            return;
        };
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let modified = e.metadata().ok()?.modified().ok()?;
                Some((modified, e.path()))
            })
            .collect();
        if files.len() <= max {
            return;
        }
        files.sort();
        let excess = files.len() - max * 3 / 4;
        for (_, path) in files.into_iter().take(excess) {
            let _ = std::fs::remove_file(path);
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &Key) -> PathBuf {
        self.dir
            .join(FORMAT)
            .join(format!("{:032x}.json", digest(&key.material)))
    }

    /// The stored report of the routine `key` names, when there is one for exactly this key.
    pub fn lookup(&self, key: &Key) -> Option<MethodReport> {
        let start = Instant::now();
        let text = std::fs::read_to_string(self.path(key)).ok()?;
        let entry: Entry = serde_json::from_str(&text).ok()?;
        if entry.material != key.material || entry.name != key.name {
            return None;
        }
        let place = |at: &Relative| key.place(at);
        let obligations = entry
            .obligations
            .iter()
            .map(|o| {
                Some(Obligation {
                    kind: o.kind,
                    span: place(&o.at)?,
                    status: Status::Verified,
                    // Not proved now: the report says `cached`, and the times are this run's.
                    time: Duration::ZERO,
                    note: o.note.clone(),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let trusted = entry
            .trusted
            .iter()
            .map(|t| {
                Some(Trusted {
                    what: t.what.clone(),
                    span: place(&t.at)?,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let warnings = entry
            .warnings
            .iter()
            .map(|w| {
                Some(Warning {
                    message: w.message.clone(),
                    span: place(&w.at)?,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(MethodReport {
            name: key.name.clone(),
            span: key.span,
            obligations,
            trusted,
            warnings,
            error: None,
            time: start.elapsed(),
            cached: true,
        })
    }

    /// Stores `report` under `key` when it is a fresh `Verified` whose spans all lie in the
    /// routine; `false` when it was not stored (not eligible, or the folder cannot be
    /// written: the cache is an optimisation, so neither is an error).
    pub fn store(&self, key: &Key, report: &MethodReport) -> bool {
        if report.cached
            || report.error.is_some()
            || report.outcome() != Outcome::Verified
            || report.span != key.span
        {
            return false;
        }
        // `None` where a span leaves the routine: such a report is not stored.
        let relative = |span: Span| key.relative(span);
        let entry = || {
            Some(Entry {
                material: key.material.clone(),
                name: key.name.clone(),
                obligations: (report.obligations.iter())
                    .map(|o| {
                        Some(StoredObligation {
                            kind: o.kind,
                            at: relative(o.span)?,
                            note: o.note.clone(),
                        })
                    })
                    .collect::<Option<_>>()?,
                trusted: (report.trusted.iter())
                    .map(|t| {
                        Some(StoredTrusted {
                            what: t.what.clone(),
                            at: relative(t.span)?,
                        })
                    })
                    .collect::<Option<_>>()?,
                warnings: (report.warnings.iter())
                    .map(|w| {
                        Some(StoredWarning {
                            message: w.message.clone(),
                            at: relative(w.span)?,
                        })
                    })
                    .collect::<Option<_>>()?,
            })
        };
        let Some(entry) = entry() else {
            return false;
        };
        let Ok(text) = serde_json::to_string(&entry) else {
            return false;
        };
        write_atomically(&self.path(key), text.as_bytes()).is_ok()
    }
}

impl MethodCache {
    fn item_path(&self, key: &ItemKey) -> PathBuf {
        self.dir
            .join(ITEM_FORMAT)
            .join(format!("{:032x}.json", digest(&key.material)))
    }

    /// The `PVL` stored for exactly this key: the item verified (and was optimised) before.
    pub fn lookup_item(&self, key: &ItemKey) -> Option<String> {
        let text = std::fs::read_to_string(self.item_path(key)).ok()?;
        let entry: ItemEntry = serde_json::from_str(&text).ok()?;
        (entry.material == key.material).then_some(entry.pvl)
    }

    /// Records that the item of `key` verified, giving `pvl`; the caller stores only an item
    /// for which nothing was reported. `false` when the folder cannot be written.
    pub fn store_item(&self, key: &ItemKey, pvl: &str) -> bool {
        let entry = ItemEntry {
            material: key.material.clone(),
            pvl: pvl.to_string(),
        };
        let Ok(text) = serde_json::to_string(&entry) else {
            return false;
        };
        write_atomically(&self.item_path(key), text.as_bytes()).is_ok()
    }
}

/// What the verdict of an item of the Rust macros depends on, in full: the checker, Z3's
/// version, `config` (the limits and mode, in words) and `program`, the lowered program as
/// the checker receives it (its `Debug` form: every body and every span).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemKey {
    material: String,
}

impl ItemKey {
    pub fn new(program: &str, config: &str) -> ItemKey {
        ItemKey {
            material: format!(
                "alpinist verified-item cache {ITEM_FORMAT}\nchecker {}\nz3 {}\nconfig {config}\n== program\n{program}\n",
                env!("ALPINIST_CHECKER_FINGERPRINT"),
                z3::full_version(),
            ),
        }
    }
}

/// What one routine's verdict depends on (see the module docs), in full.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    /// The routine's declaration (its member's span).
    pub span: Span,
    pub name: String,
    material: String,
}

impl Key {
    /// `span` as offsets into the routine, when it lies in it.
    fn relative(&self, span: Span) -> Option<Relative> {
        (self.span.start <= span.start && span.end <= self.span.end && span.start <= span.end).then(
            || Relative {
                start: span.start - self.span.start,
                end: span.end - self.span.start,
            },
        )
    }

    fn place(&self, at: &Relative) -> Option<Span> {
        let span = Span {
            start: self.span.start.checked_add(at.start)?,
            end: self.span.start.checked_add(at.end)?,
        };
        (at.start <= at.end && span.end <= self.span.end).then_some(span)
    }
}

/// The configuration a verdict of [`crate::witness::verify_and_confirm`] depends on, in words.
pub fn config(limits: &verify::Limits, budget: &crate::witness::Budget) -> String {
    format!("{limits:?} {budget:?}")
}

/// The key of every routine of a checked program (in declaration order), for verification
/// under `config` (the limits and budgets, in words).
pub fn keys(program: &Program, config: &str) -> Vec<Key> {
    // Named as `verify` names them: an overload by its parameters' types, a routine whose name
    // another scope declares too by its class.
    let resolved = crate::check::name_routines_apart(program);
    let program = resolved.as_ref().unwrap_or(program);
    let header = format!(
        "alpinist verified-method cache {FORMAT}\nchecker {}\nz3 {}\nconfig {config}\n== facts\n{}== context\n{}",
        env!("ALPINIST_CHECKER_FINGERPRINT"),
        z3::full_version(),
        verify::cross_routine_facts(program),
        syntax::print(&without_statements(program), &Trivia::default()),
    );
    program
        .members()
        .into_iter()
        .filter_map(|(class, member)| {
            let MemberKind::Method(method) = &member.kind else {
                return None;
            };
            let alone = Program {
                items: vec![Item::Member(member.clone())],
                span: member.span,
            };
            let material = format!(
                "{header}== routine in {}\n{}== layout\n{}\n",
                class.map_or("(top level)", |c| c.name.name.as_str()),
                syntax::print(&alone, &Trivia::default()),
                layout(member, member.span.start),
            );
            Some(Key {
                span: member.span,
                name: method.name.name.clone(),
                material,
            })
        })
        .collect()
}

/// `program` with the statements of every block body left out (`void m();`).
fn without_statements(program: &Program) -> Program {
    let mut out = program.clone();
    for member in out.members_mut() {
        if let MemberKind::Method(m) = &mut member.kind {
            if matches!(m.body, MethodBody::Block(_)) {
                m.body = MethodBody::Abstract;
            }
        }
    }
    out
}

/// Every span in `x`, relative to `base`, in a fixed order.
fn layout<T: Serialize>(x: &T, base: u32) -> String {
    fn go(v: &serde_json::Value, base: u64, out: &mut String) {
        match v {
            serde_json::Value::Object(map) => {
                let field = |k: &str| map.get(k).and_then(serde_json::Value::as_u64);
                if let (2, Some(start), Some(end)) = (map.len(), field("start"), field("end")) {
                    out.push_str(&format!(
                        "{}-{} ",
                        start.wrapping_sub(base) as i64,
                        end.wrapping_sub(base) as i64
                    ));
                    return;
                }
                map.values().for_each(|x| go(x, base, out));
            }
            serde_json::Value::Array(xs) => xs.iter().for_each(|x| go(x, base, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    if let Ok(v) = serde_json::to_value(x) {
        go(&v, u64::from(base), &mut out);
    }
    out
}

/// FNV-1a, 128 bits: names the entry's file (the entry itself holds the whole key).
fn digest(text: &str) -> u128 {
    let mut hash: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for b in text.bytes() {
        hash = (hash ^ u128::from(b)).wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    hash
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let temporary = dir.join(format!(
        ".{}.{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry")
    ));
    let written = std::fs::write(&temporary, bytes).and_then(|_| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// An entry on disk.
#[derive(Serialize, Deserialize)]
struct Entry {
    material: String,
    name: String,
    obligations: Vec<StoredObligation>,
    trusted: Vec<StoredTrusted>,
    warnings: Vec<StoredWarning>,
}

/// A Rust macro item's entry on disk.
#[derive(Serialize, Deserialize)]
struct ItemEntry {
    material: String,
    pvl: String,
}

/// Offsets into the routine.
#[derive(Serialize, Deserialize)]
struct Relative {
    start: u32,
    end: u32,
}

#[derive(Serialize, Deserialize)]
struct StoredObligation {
    kind: ObligationKind,
    at: Relative,
    note: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct StoredTrusted {
    what: String,
    at: Relative,
}

#[derive(Serialize, Deserialize)]
struct StoredWarning {
    message: String,
    at: Relative,
}

#[cfg(test)]
pub(crate) mod tests;
