//! The `alpinist` command line: argument parsing, reading files, rendering diagnostics, and the
//! exit codes of design.md. All the work happens in `alpinist-core`.
//!
//! The binary target itself is declared by the umbrella package at the repository root
//! (`src/main.rs` calls [`main`]), so that the workspace's integration tests can run it.

mod commands;
mod diagnostics;
mod exit;
mod input;
mod worker;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

/// Annotation-aware optimisation and verification of GPU kernels written in PVL.
#[derive(Parser)]
#[command(name = "alpinist", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse a PVL file and print it back in the house style, comments included.
    Fmt {
        /// The file to format, or `-` for standard input.
        file: PathBuf,
        /// Rewrite the file in place instead of printing to standard output.
        #[arg(long)]
        write: bool,
    },
    /// Parse, resolve names and type-check PVL files; no verification.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Verify PVL files with the separation-logic checker.
    Verify {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// One JSON document on standard output.
        #[arg(long)]
        json: bool,
        /// Per-obligation time limit in seconds.
        #[arg(long, value_name = "S")]
        timeout: Option<f64>,
        /// Obligations checked in parallel.
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
        /// Z3's deterministic resource budget per obligation (same verdict on any machine).
        #[arg(long, value_name = "UNITS")]
        rlimit: Option<u32>,
        /// Also prove executable integer arithmetic free of 32-bit overflow (E0623) and of
        /// negative `/` `%` operands (E0624), as OpenCL's `int` needs; in a scan kernel the
        /// element combinations (the scan operator) are exempt.
        #[arg(long)]
        int32: bool,
        /// Memory Z3 may use, in MB, for the whole run (every method, every job); a query that
        /// needs more is unknown (exit 3) with the reason "memory limit of MB MB reached".
        #[arg(long, value_name = "MB", default_value_t = alpinist_core::verify::DEFAULT_MEMORY_MB,
              value_parser = clap::value_parser!(u32).range(1..))]
        memory: u32,
        /// Prove every routine again, ignoring and not filling the verified-method cache
        /// (also `ALPINIST_CACHE=0`; the folder: `ALPINIST_CACHE_DIR`, else
        /// `~/.cache/alpinist`).
        #[arg(long)]
        no_cache: bool,
        /// Without Z3's model-based quantifier instantiation (the fallback after a libz3 crash).
        #[arg(long, hide = true)]
        no_mbqi: bool,
    },
    /// Apply the file's `gpuopt` annotations and/or the flags, then reverify.
    #[command(alias = "optimize")]
    Optimise {
        file: PathBuf,
        /// Unroll the loop by K iterations.
        #[arg(long, value_name = "K")]
        unroll: Option<u32>,
        /// Merge M consecutive iterations.
        #[arg(long, value_name = "M")]
        merge: Option<u32>,
        /// Tile the kernel: `inter:T` or `intra:T`.
        #[arg(long, value_name = "inter|intra:T")]
        tile: Option<String>,
        /// Fuse F consecutive kernels (par blocks) into one, launched on B work-groups
        /// (default 1): `F` or `F:B`.
        #[arg(long, value_name = "F[:B]")]
        fuse: Option<String>,
        /// Prefetch cells of a global array into registers: `ARRAY:INDEX[,INDEX..]`, e.g.
        /// `a:tid,tid+1` (repeatable; the method with par blocks that has the array).
        #[arg(long, value_name = "ARRAY:INDEX,..")]
        prefetch: Vec<String>,
        /// Store a matrix as one array: `MATRIX:R|C:ROWS:COLS`, row-major (R) or column-major
        /// (C), e.g. `m:R:X:Y` (repeatable; the method that has the matrix).
        #[arg(long, value_name = "MATRIX:R|C:ROWS:COLS")]
        linearise: Vec<String>,
        /// The iteration variable of the loop the flags target.
        #[arg(long, value_name = "VAR")]
        r#loop: Option<String>,
        /// Write the optimised program here instead of standard output.
        #[arg(short = 'o', value_name = "OUT")]
        output: Option<PathBuf>,
        /// Skip reverification (never the applicability check).
        #[arg(long)]
        no_verify: bool,
        /// Memory Z3 may use, in MB, for the whole run (every method, every job); a query that
        /// needs more is unknown (exit 3) with the reason "memory limit of MB MB reached".
        #[arg(long, value_name = "MB", default_value_t = alpinist_core::verify::DEFAULT_MEMORY_MB,
              value_parser = clap::value_parser!(u32).range(1..))]
        memory: u32,
        /// Prove every routine again, ignoring and not filling the verified-method cache
        /// (also `ALPINIST_CACHE=0`; the folder: `ALPINIST_CACHE_DIR`, else
        /// `~/.cache/alpinist`).
        #[arg(long)]
        no_cache: bool,
        /// One JSON document on standard output.
        #[arg(long)]
        json: bool,
        /// Without model-based quantifier instantiation: the retry after libz3 crashed.
        #[arg(long, hide = true)]
        no_mbqi: bool,
    },
    /// Summarise `alpinist optimise --json` documents: verification time before and after.
    Report {
        /// Directories (searched recursively for `*.json`) or files.
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        #[arg(long, value_enum, default_value = "md")]
        format: commands::report::Format,
    },
    /// Confirm a prefix-sum kernel with the interval-of-summations test on OpenCL devices.
    ScanTest(commands::opencl::ScanTestArgs),
    /// Print the OpenCL C generated from a scan kernel (no OpenCL needed).
    EmitOpencl(commands::opencl::EmitOpenclArgs),
    /// List OpenCL platforms and devices.
    Devices,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum ScanKind {
    Inclusive,
    Exclusive,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum Baseline {
    Voigtlaender,
    Random,
}

/// Parse the process arguments, run the subcommand, return its exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Fmt { file, write } => commands::fmt::run(&file, write),
        Command::Check { files } => commands::check::run(&files),
        Command::Verify {
            files,
            json,
            timeout,
            jobs,
            rlimit,
            int32,
            memory,
            no_cache,
            no_mbqi,
        } => commands::verify::run(
            &files,
            &commands::verify::Options {
                json,
                timeout,
                jobs,
                rlimit,
                int32,
                memory,
                cache: !no_cache,
                mbqi: !no_mbqi,
            },
        ),
        Command::Optimise {
            file,
            unroll,
            merge,
            tile,
            fuse,
            prefetch,
            linearise,
            r#loop,
            output,
            no_verify,
            memory,
            no_cache,
            json,
            no_mbqi,
        } => commands::optimise::run(
            &file,
            &commands::optimise::Options {
                unroll,
                merge,
                tile,
                fuse,
                prefetch,
                linearise,
                var: r#loop,
                output,
                no_verify,
                memory,
                cache: !no_cache,
                json,
                mbqi: !no_mbqi,
            },
        ),
        Command::Report { dirs, format } => commands::report::run(&dirs, format),
        Command::ScanTest(args) => commands::opencl::scan_test(&args),
        Command::EmitOpencl(args) => commands::opencl::emit_opencl(&args),
        Command::Devices => commands::opencl::devices(),
    };
    ExitCode::from(outcome as u8)
}
