//! The verification worker process: `alpinist verify` re-executes itself to verify, so that a
//! libz3 crash cannot take the report with it (`commands/verify.rs`). This module owns the
//! worker's lifetime and its bounds:
//!
//! - it dies with its parent. On Linux the kernel sends it SIGKILL when the parent dies
//!   (`prctl(PR_SET_PDEATHSIG)`, set between `fork` and `exec`, with `getppid` checked after
//!   it in case the parent was already gone); everywhere, the worker also watches its standard
//!   input, a pipe whose only writer is the parent, and exits when it reads end-of-file, which
//!   happens exactly when the parent is gone (killed, crashed or done).
//! - its address space is bounded (`setrlimit(RLIMIT_AS)`), a second line of defence behind
//!   Z3's own memory limit: an allocation over it aborts the worker, which the parent reports
//!   as unknown ("memory limit of N MB reached"), never as a crash.

use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

/// Set in the environment of the worker process that does the verification.
pub const WORKER_ENV: &str = "ALPINIST_VERIFY_WORKER";

/// Set (to "1") when the worker's standard input is the pipe from its parent.
const WATCH_ENV: &str = "ALPINIST_WORKER_WATCH_STDIN";

/// Room in the worker's address space beyond Z3's memory limit: each verification thread
/// reserves a 512 MiB stack (most of it never touched), glibc reserves up to 64 MiB of malloc
/// arena per thread, and the binary, libz3 and Rust's own data need the rest.
fn address_space_reserve(jobs: usize) -> u64 {
    const MIB: u64 = 1 << 20;
    (2048 + (jobs as u64 + 1) * (512 + 64)) * MIB
}

/// What came back from one worker run.
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Finished {
    /// Whether libz3 stopped the process on a failed internal assertion ("ASSERTION
    /// VIOLATION ... UNEXPECTED CODE WAS REACHED"), which it reports with `exit`, not a signal.
    pub fn z3_assertion_failed(&self) -> bool {
        String::from_utf8_lossy(&self.stderr).contains("ASSERTION VIOLATION")
    }

    /// Whether the worker died of a failed allocation: Rust's allocator aborts with "memory
    /// allocation of N bytes failed" (the address-space limit), C++ with `std::bad_alloc`, and
    /// libz3 4.8.12 lets an `out_of_memory_error` (its `memory_max_size`) escape from some
    /// checks, which terminates the process.
    pub fn ran_out_of_memory(&self) -> bool {
        if self.status.code().is_some() {
            return false;
        }
        let stderr = String::from_utf8_lossy(&self.stderr);
        ["memory allocation of", "bad_alloc", "out_of_memory_error"]
            .iter()
            .any(|sign| stderr.contains(sign))
    }
}

/// Runs this binary as a verification worker with `args` and waits for it. `memory_mb` is the
/// run's memory limit (`--memory`) and `jobs` its threads, which size the address-space bound.
pub fn run(
    exe: &Path,
    args: &[OsString],
    envs: &[(&str, String)],
    memory_mb: u32,
    jobs: usize,
) -> std::io::Result<Finished> {
    let mut command = Command::new(exe);
    command
        .args(args)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .env(WORKER_ENV, "1")
        .env(WATCH_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let address_space = (u64::from(memory_mb) << 20) + address_space_reserve(jobs);
    bound(&mut command, address_space);
    let mut child = command.spawn()?;
    // Held, never written, until the worker is done: its end-of-file tells the worker that
    // this process is gone.
    let parent_pipe = child.stdin.take();
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let mut out = Vec::new();
    let _ = stdout.read_to_end(&mut out);
    let status = child.wait()?;
    drop(parent_pipe);
    let err = err_reader.join().unwrap_or_default();
    Ok(Finished {
        status,
        stdout: out,
        stderr: err,
    })
}

#[cfg(target_os = "linux")]
fn bound(command: &mut Command, address_space: u64) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: between fork and exec only async-signal-safe calls (prctl, getppid, setrlimit,
    // _exit), no allocation.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before the prctl: then no signal will come.
            if libc::getppid() != parent {
                libc::_exit(4);
            }
            set_address_space(address_space);
            Ok(())
        });
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
fn bound(command: &mut Command, address_space: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            set_address_space(address_space);
            Ok(())
        });
    }
}

#[cfg(not(unix))]
fn bound(_command: &mut Command, _address_space: u64) {}

/// Lowers the soft address-space limit of the calling process to `bytes` (never raises it).
#[cfg(unix)]
fn set_address_space(bytes: u64) {
    // SAFETY: getrlimit/setrlimit with a valid struct; async-signal-safe.
    unsafe {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_AS, &mut limit) != 0 {
            return;
        }
        let wanted = bytes as libc::rlim_t;
        if limit.rlim_cur == libc::RLIM_INFINITY || limit.rlim_cur > wanted {
            limit.rlim_cur = if limit.rlim_max == libc::RLIM_INFINITY {
                wanted
            } else {
                wanted.min(limit.rlim_max)
            };
            libc::setrlimit(libc::RLIMIT_AS, &limit);
        }
    }
}

/// How a worker run ended, after [`run_and_relay`] passed its output on.
pub enum Ended {
    /// It exited with this code; its standard output and error were relayed.
    Exited(i32),
    /// It died of a failed allocation (see [`Finished::ran_out_of_memory`]); its standard
    /// output was relayed.
    OutOfMemory,
    /// It died of a signal otherwise (libz3 crashed); nothing was relayed. Its standard
    /// error is kept for [`last_routine`].
    Crashed { stderr: Vec<u8> },
}

/// Written by a worker to its standard error (with `PROGRESS_ENV` set) as each routine starts:
/// the marker, the file as named on the command line, a tab, the routine's span. Filtered out
/// of what is relayed.
pub const ROUTINE_MARKER: &str = "\u{1}alpinist-routine ";

/// Set (to "1") to make the worker write [`ROUTINE_MARKER`] lines.
pub const PROGRESS_ENV: &str = "ALPINIST_WORKER_PROGRESS";

/// Routines the worker must not verify (libz3 crashed on them), one `file\tstart-end` per
/// line: each is reported unknown with that reason.
pub const SKIP_ENV: &str = "ALPINIST_WORKER_SKIP";

/// Verification threads of the worker, overriding `--jobs` (1 while crashes are isolated, so
/// the last routine started is the one that crashed).
pub const JOBS_ENV: &str = "ALPINIST_WORKER_JOBS";

/// Tests only: the worker aborts (as libz3 does when it crashes) as it starts the routine of
/// this name, so that crash isolation can be tested without a libz3 crash at hand.
pub const ABORT_IN_ENV: &str = "ALPINIST_TEST_WORKER_ABORT_IN";

/// In the worker: the span of the routine named by [`ABORT_IN_ENV`], if any.
pub fn abort_in(program: &alpinist_core::syntax::Program) -> Option<alpinist_core::syntax::Span> {
    use alpinist_core::syntax::MemberKind;
    if !is_worker() {
        return None;
    }
    let name = std::env::var(ABORT_IN_ENV).ok()?;
    program
        .members()
        .into_iter()
        .find_map(|(_, m)| match &m.kind {
            MemberKind::Method(method) if method.name.name == name => Some(m.span),
            _ => None,
        })
}

/// The routine a crashed single-threaded worker was verifying: its last marker.
pub fn last_routine(stderr: &[u8]) -> Option<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| l.strip_prefix(ROUTINE_MARKER))
        .next_back()
        .map(str::to_string)
}

/// [`run`], then passes the worker's output on to this process's: what the caller reports
/// depends on how it ended.
pub fn run_and_relay(
    exe: &Path,
    args: &[OsString],
    envs: &[(&str, String)],
    memory_mb: u32,
    jobs: usize,
) -> std::io::Result<Ended> {
    use std::io::Write;
    let output = run(exe, args, envs, memory_mb, jobs)?;
    if output.ran_out_of_memory() {
        let _ = std::io::stdout().write_all(&output.stdout);
        return Ok(Ended::OutOfMemory);
    }
    match output.status.code() {
        // libz3's failed internal assertions print this and `exit(4)`: a crash, not our exit 4.
        Some(_) if output.z3_assertion_failed() => Ok(Ended::Crashed {
            stderr: output.stderr,
        }),
        Some(code) => {
            let _ = std::io::stdout().write_all(&output.stdout);
            let stderr = String::from_utf8_lossy(&output.stderr);
            let mut err = std::io::stderr();
            for line in stderr.split_inclusive('\n') {
                if !line.starts_with(ROUTINE_MARKER) {
                    let _ = err.write_all(line.as_bytes());
                }
            }
            Ok(Ended::Exited(code))
        }
        None => Ok(Ended::Crashed {
            stderr: output.stderr,
        }),
    }
}

/// In the worker: whether this process is one.
pub fn is_worker() -> bool {
    std::env::var_os(WORKER_ENV).is_some()
}

/// In the worker: exit as soon as the parent is gone (its pipe on standard input reaches
/// end-of-file). A thread blocked on the read; it never reads anything but the end.
pub fn watch_parent() {
    if std::env::var_os(WATCH_ENV).is_none() {
        return;
    }
    std::thread::spawn(|| {
        let mut sink = [0u8; 64];
        let mut stdin = std::io::stdin();
        loop {
            match stdin.read(&mut sink) {
                Ok(0) => std::process::exit(4),
                Err(e) if e.kind() != std::io::ErrorKind::Interrupted => std::process::exit(4),
                _ => {}
            }
        }
    });
}

/// Runs this same command (`alpinist` and its arguments) in a worker and relays it; if libz3
/// crashes, runs it once more with `--no-mbqi` (the command's hidden flag that turns off
/// model-based quantifier instantiation, under which libz3 4.8.12 has not crashed: a failing
/// quantified obligation is then unknown), with a note on stderr. `what` names the work in
/// the messages ("verification", "scan-test"). A worker that could not start is exit 4, one
/// out of memory unknown (exit 3). `Err(TwiceCrashed)`: it crashed both times (`verify` then
/// isolates the routines it crashes on; the other commands call that an internal error,
/// [`supervise_with_mbqi_fallback`]).
pub fn run_with_mbqi_fallback(
    exe: &Path,
    args: &[OsString],
    what: &str,
    memory_mb: u32,
    jobs: usize,
) -> Result<crate::exit::Exit, TwiceCrashed> {
    use crate::diagnostics::emit_plain;
    use crate::exit::Exit;
    for fallback in [false, true] {
        let mut args = args.to_vec();
        if fallback {
            args.push("--no-mbqi".into());
        }
        match run_and_relay(exe, &args, &[], memory_mb, jobs) {
            Err(e) => {
                emit_plain(format_args!("cannot start the {what} worker: {e}"));
                return Ok(Exit::Environment);
            }
            Ok(Ended::Exited(code)) => {
                if fallback {
                    eprintln!(
                        "note: libz3 crashed; the {what} ran again without model-based \
                         quantifier instantiation (failing quantified obligations show as unknown)"
                    );
                }
                return Ok(Exit::from_code(code));
            }
            Ok(Ended::OutOfMemory) => {
                emit_plain(crate::commands::verify::out_of_memory(memory_mb));
                return Ok(Exit::Inconclusive);
            }
            Ok(Ended::Crashed { .. }) => {}
        }
    }
    Err(TwiceCrashed)
}

/// libz3 crashed in both runs of [`run_with_mbqi_fallback`].
pub struct TwiceCrashed;

/// [`run_with_mbqi_fallback`] with this process's arguments and threads; crashing twice is an
/// internal error (exit 4).
pub fn supervise_with_mbqi_fallback(exe: &Path, what: &str, memory_mb: u32) -> crate::exit::Exit {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    run_with_mbqi_fallback(exe, &args, what, memory_mb, jobs).unwrap_or_else(|TwiceCrashed| {
        crate::diagnostics::emit_plain(format_args!(
            "internal error: the Z3 library crashed twice in the {what} (libz3 4.8.12); please \
             report this input"
        ));
        crate::exit::Exit::Environment
    })
}
