//! `alpinist report PATH... [--format md|json|csv|svg]`: summarises the documents of
//! `alpinist optimise --json` (verification times) and `alpinist bench --json` (run times)
//! found under the paths (directories are searched recursively for
//! `*.json`, files are read as given), in one format on standard output.
//!
//! Every `.json` file that is not such a document is named on standard error with the reason
//! and skipped, never dropped silently. Exit 0 with at least one document; 2 when a path does
//! not exist or no document was found.

use std::path::{Path, PathBuf};

use alpinist_core::report::{self, Document, Row, RunTime};

use crate::diagnostics::emit_plain;
use crate::exit::Exit;

/// The output formats.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    /// Two Markdown tables: per document, then per method.
    Md,
    /// One JSON document (`schema_version` 1).
    Json,
    /// One record per document and method.
    Csv,
    /// A bar chart of the verification time before and after, per document (and of the
    /// kernel time, beside it, where `bench` documents were read).
    Svg,
}

pub fn run(paths: &[PathBuf], format: Format) -> Exit {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            json_files(path, &mut files);
        } else if path.is_file() {
            files.push(path.clone());
        } else {
            emit_plain(format_args!(
                "{}: no such file or directory",
                path.display()
            ));
            return Exit::BadInput;
        }
    }
    let mut rows: Vec<Row> = Vec::new();
    let mut runs: Vec<RunTime> = Vec::new();
    let mut documents = 0;
    for file in &files {
        let read = std::fs::read_to_string(file)
            .map_err(|e| e.to_string())
            .and_then(|text| report::read_document(&text).map_err(|e| e.to_string()));
        match read {
            Ok(Document::Optimised(row)) => {
                documents += 1;
                rows.push(row);
            }
            Ok(Document::Timed(timed)) => {
                documents += 1;
                runs.extend(timed);
            }
            Err(reason) => eprintln!("warning: skipped {}: {reason}", file.display()),
        }
    }
    if documents == 0 {
        emit_plain(format_args!(
            "no `alpinist optimise --json` or `bench --json` documents in {} ({} .json file(s) \
             read); write them with `alpinist optimise --json FILE > DIR/NAME.json`",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            files.len()
        ));
        return Exit::BadInput;
    }
    let text = match format {
        Format::Md => report::markdown(&rows, &runs),
        Format::Json => {
            serde_json::to_string_pretty(&report::json(&rows, &runs)).unwrap_or_default() + "\n"
        }
        Format::Csv => match report::csv(&rows, &runs) {
            Ok(text) => text,
            Err(e) => {
                emit_plain(format_args!("writing CSV: {e}"));
                return Exit::Environment;
            }
        },
        Format::Svg => report::svg(&rows, &runs),
    };
    print!("{text}");
    Exit::Success
}

/// Every `*.json` file under `dir`, in path order (so the report's row order is stable).
fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            eprintln!(
                "warning: skipped {}: cannot read the directory",
                dir.display()
            );
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                found.push(path);
            }
        }
    }
    found.sort();
    out.extend(found);
}
