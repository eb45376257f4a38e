//! The `alpinist` command line: argument parsing, reading files, rendering diagnostics, and the
//! exit codes of design.md. All the work happens in `alpinist-core`.
//!
//! The binary target itself is declared by the umbrella package at the repository root
//! (`src/main.rs` calls [`main`]), so that the workspace's integration tests can run it.

mod commands;
mod diagnostics;
mod exit;
mod input;
mod progress;
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
        /// Per-obligation wall-clock limit in seconds, on top of `--rlimit` (which Z3 does not
        /// always stop at); an obligation it stops is unknown (exit 3), never verified; 0: none.
        #[arg(long, value_name = "S", default_value_t = commands::OBLIGATION_TIMEOUT_S)]
        timeout: f64,
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
        #[command(flatten)]
        flags: commands::optimise::Flags,
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
    /// Print the OpenCL C generated from a scan kernel, or with `--method` the kernels `run`
    /// launches for a method (no OpenCL needed).
    EmitOpencl(commands::opencl::EmitOpenclArgs),
    /// Run the kernels on drawn inputs — the original on the interpreter and on OpenCL
    /// devices, the optimised version too — and compare every output.
    Run(commands::run::RunArgs),
    /// `run`, then time every run whose results are the reference's: kernel time (OpenCL
    /// profiling) and end to end, median/min/max over `--reps` runs, and the speed-up of the
    /// optimised version per device.
    Bench(commands::run::BenchArgs),
    /// Autotune: optimise and reverify every combination of the flags' values (`--unroll
    /// 2,4,8 --tile inter:16,32`), time the verified variants and the original on an OpenCL
    /// device, print the candidates and write the fastest.
    Tune(commands::tune::TuneArgs),
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
            flags,
            output,
            no_verify,
            memory,
            no_cache,
            json,
            no_mbqi,
        } => commands::optimise::run(
            &file,
            &commands::optimise::Options {
                flags,
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
        Command::Run(args) => commands::run::run(&args),
        Command::Bench(args) => commands::run::bench(&args),
        Command::Tune(args) => commands::tune::tune(&args),
        Command::Devices => commands::opencl::devices(),
    };
    ExitCode::from(outcome as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `verify` has a wall-clock net per obligation unless the user lifts it (`--timeout 0`).
    #[test]
    fn verify_stops_each_obligation_after_a_minute_by_default() {
        let timeout = |args: &[&str]| match Cli::try_parse_from(args).unwrap().command {
            Command::Verify { timeout, .. } => commands::timeout_ms(timeout),
            _ => unreachable!("a verify command"),
        };
        assert_eq!(timeout(&["alpinist", "verify", "k.pvl"]), Some(60_000));
        assert_eq!(
            timeout(&["alpinist", "verify", "--timeout", "2.5", "k.pvl"]),
            Some(2_500)
        );
        assert_eq!(
            timeout(&["alpinist", "verify", "--timeout", "0", "k.pvl"]),
            None
        );
    }
}
