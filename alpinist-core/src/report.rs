//! Verification-time reports (`alpinist report`): what `alpinist optimise --json` recorded —
//! the optimisation applied or refused, the applicability check's time, and the verification
//! time of every method before and after — summarised over many runs as Markdown, JSON, CSV
//! or an SVG bar chart.
//!
//! Input is the JSON document `optimise --json` prints (`schema_version` 2; 1 is read too),
//! one per file, and the document `bench --json` prints (`"command": "bench"`, schema 1): its
//! run times become [`RunTime`] rows, shown beside the verification times (a table of their
//! own; in the chart, a second panel on the same rows, by file). A method served by the verified-method cache has no proof time: a row with
//! one has no ratio (`optimise --no-cache` for comparisons).
//! [`read_document`] refuses anything else with a reason, so the caller can say which files it
//! skipped and why. The renderers are pure functions of the rows: the same documents in the
//! same order give byte-identical output.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// Why a file is not a report row.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("not an `alpinist optimise --json` or `bench --json` document: {0}")]
    NotADocument(String),
    #[error("schema_version {0} is not supported (this alpinist writes 2 and reads 1 and 2)")]
    Schema(u64),
}

/// Verification of one program: the total and each method's time and outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    pub time_ms: f64,
    pub methods: Vec<MethodTime>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MethodTime {
    pub name: String,
    /// `verified`, `failed`, `unknown`, ... as `optimise` describes it.
    pub outcome: String,
    pub time_ms: f64,
    /// From the verified-method cache (schema 2): the time is a lookup, not a proof.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
}

impl MethodTime {
    /// The outcome, and whether the cache gave it.
    fn label(&self) -> String {
        match self.cached {
            true => format!("{} (cached)", self.outcome),
            false => self.outcome.clone(),
        }
    }
}

impl Verification {
    fn all_verified(&self) -> bool {
        self.methods.iter().all(|m| m.outcome == "verified")
    }

    fn any_cached(&self) -> bool {
        self.methods.iter().any(|m| m.cached)
    }
}

/// What became of the requested optimisations.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Status {
    /// Applied; with verification on, the output reverified (else `optimise` exits 4).
    Applied,
    /// The applicability check (or a request) refused it.
    Refused { code: String, message: String },
    /// `optimise` exited otherwise, e.g. 1 (the input does not verify) or 4 (the output does
    /// not reverify).
    Failed { exit: u8 },
}

/// One `optimise --json` document.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The PVL file `optimise` read.
    pub file: String,
    pub applied: Vec<String>,
    #[serde(flatten)]
    pub status: Status,
    pub optimisation_ms: Option<f64>,
    pub applicability_ms: Option<f64>,
    pub before: Option<Verification>,
    pub after: Option<Verification>,
}

impl Row {
    /// Verification time after over before, where both ran.
    /// None where either side has a method from the verified-method cache: a lookup's
    /// time is not a proof's (`optimise --no-cache` for comparisons).
    pub fn ratio(&self) -> Option<f64> {
        match (&self.before, &self.after) {
            (Some(b), Some(a)) if b.time_ms > 0.0 && !b.any_cached() && !a.any_cached() => {
                Some(a.time_ms / b.time_ms)
            }
            _ => None,
        }
    }

    fn status_text(&self) -> String {
        match &self.status {
            Status::Applied if self.after.is_none() => "applied, not reverified".into(),
            Status::Applied if self.after.as_ref().is_some_and(Verification::all_verified) => {
                "applied, reverified".into()
            }
            Status::Applied => "applied, reverification incomplete".into(),
            Status::Refused { code, .. } => format!("refused ({code})"),
            Status::Failed { exit } => format!("failed (exit {exit})"),
        }
    }
}

/// The document as `optimise --json` writes it (its `schema_version` checked beforehand);
/// fields it may leave out are optional.
#[derive(Deserialize)]
struct OptimiseDocument {
    file: String,
    #[serde(default)]
    applied: Vec<String>,
    optimisation_ms: Option<f64>,
    applicability_ms: Option<f64>,
    verification_before: Option<Verification>,
    verification_after: Option<Verification>,
    refused: Option<Refusal>,
    exit: u8,
}

#[derive(Deserialize)]
struct Refusal {
    code: String,
    message: String,
}

/// One kernel timed by `bench`: a version against the original, on one device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunTime {
    /// The PVL file `bench` ran.
    pub file: String,
    pub method: String,
    /// The sizes and seed (`N = 256, a.length = 256, seed 1`).
    pub input: String,
    pub device: String,
    /// The version timed against the original (`optimised`).
    pub version: String,
    /// Kernel time, medians in ms.
    pub original_ms: f64,
    pub optimised_ms: f64,
    /// End-to-end time (host code, copies, kernels), medians in ms.
    pub original_end_to_end_ms: f64,
    pub optimised_end_to_end_ms: f64,
}

impl RunTime {
    /// Original over optimised kernel time: the speed-up.
    pub fn speed_up(&self) -> Option<f64> {
        (self.optimised_ms > 0.0).then(|| self.original_ms / self.optimised_ms)
    }
}

/// What one JSON file holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Document {
    /// `optimise --json`.
    Optimised(Row),
    /// `bench --json`: every version timed against the original on a device, per method (none
    /// where nothing was timed).
    Timed(Vec<RunTime>),
}

/// Reads one `optimise --json` or `bench --json` document.
pub fn read_document(text: &str) -> Result<Document, ReportError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(ReportError::NotJson)?;
    if value.get("command").and_then(serde_json::Value::as_str) == Some("bench") {
        return read_bench(&value).map(Document::Timed);
    }
    read_optimise(value).map(Document::Optimised)
}

/// The run times of a `bench --json` document (schema 1).
fn read_bench(value: &serde_json::Value) -> Result<Vec<RunTime>, ReportError> {
    match value
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
    {
        Some(1) => {}
        Some(other) => return Err(ReportError::Schema(other)),
        None => return Err(ReportError::NotADocument("no `schema_version`".into())),
    }
    let missing = |what: &str| ReportError::NotADocument(format!("no `{what}`"));
    let text = |v: &serde_json::Value, key: &str| {
        v.get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| missing(key))
    };
    let median = |v: &serde_json::Value, key: &str| {
        v.get(key)
            .and_then(|t| t.get("median"))
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| missing(&format!("{key}.median")))
    };
    let file = text(value, "file")?;
    let methods = value
        .get("methods")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| missing("methods"))?;
    let mut out = Vec::new();
    for m in methods {
        let method = text(m, "method")?;
        let input = text(m, "input")?;
        let timed = m
            .get("timed")
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| missing("timed"))?;
        let mut runs = Vec::new();
        for t in timed {
            runs.push((
                text(t, "version")?,
                text(t, "device")?,
                median(t, "kernel_ms")?,
                median(t, "end_to_end_ms")?,
            ));
        }
        for (version, device, kernel, end_to_end) in &runs {
            if version == "original" {
                continue;
            }
            let Some((_, _, original, original_end_to_end)) = runs
                .iter()
                .find(|(v, d, ..)| v == "original" && d == device)
            else {
                continue;
            };
            out.push(RunTime {
                file: file.clone(),
                method: method.clone(),
                input: input.clone(),
                device: device.clone(),
                version: version.clone(),
                original_ms: *original,
                optimised_ms: *kernel,
                original_end_to_end_ms: *original_end_to_end,
                optimised_end_to_end_ms: *end_to_end,
            });
        }
    }
    Ok(out)
}

/// Reads one `optimise --json` document.
fn read_optimise(value: serde_json::Value) -> Result<Row, ReportError> {
    match value
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
    {
        // 2 adds `steps` (each step's times and verification) and `cached` per method.
        Some(1 | 2) => {}
        Some(other) => return Err(ReportError::Schema(other)),
        None => return Err(ReportError::NotADocument("no `schema_version`".into())),
    }
    if value.get("verification_before").is_none() && value.get("refused").is_none() {
        return Err(ReportError::NotADocument(
            "neither `verification_before` nor `refused`".into(),
        ));
    }
    let doc: OptimiseDocument =
        serde_json::from_value(value).map_err(|e| ReportError::NotADocument(e.to_string()))?;
    let status = match (doc.refused, doc.exit) {
        (Some(r), _) => Status::Refused {
            code: r.code,
            message: r.message,
        },
        (None, 0) => Status::Applied,
        (None, exit) => Status::Failed { exit },
    };
    Ok(Row {
        file: doc.file,
        applied: doc.applied,
        status,
        optimisation_ms: doc.optimisation_ms,
        applicability_ms: doc.applicability_ms,
        before: doc.verification_before,
        after: doc.verification_after,
    })
}

/// Totals over the rows whose verification ran both before and after.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub documents: usize,
    pub applied: usize,
    pub refused: usize,
    pub failed: usize,
    /// Rows with both verifications (neither with a method from the cache), and their
    /// summed times.
    pub compared: usize,
    pub before_ms: f64,
    pub after_ms: f64,
}

pub fn summary(rows: &[Row]) -> Summary {
    let mut s = Summary {
        documents: rows.len(),
        applied: 0,
        refused: 0,
        failed: 0,
        compared: 0,
        before_ms: 0.0,
        after_ms: 0.0,
    };
    for row in rows {
        match row.status {
            Status::Applied => s.applied += 1,
            Status::Refused { .. } => s.refused += 1,
            Status::Failed { .. } => s.failed += 1,
        }
        if let (Some(b), Some(a), Some(_)) = (&row.before, &row.after, row.ratio()) {
            s.compared += 1;
            s.before_ms += b.time_ms;
            s.after_ms += a.time_ms;
        }
    }
    s
}

fn ms(x: Option<f64>) -> String {
    x.map_or("–".into(), |v| format!("{v:.1}"))
}

fn escape_markdown(text: &str) -> String {
    text.replace('|', "\\|")
}

/// Markdown: two tables of verification (one row per `optimise` document, then one per
/// method) and, where `bench` documents were read, one of run times.
pub fn markdown(rows: &[Row], runs: &[RunTime]) -> String {
    let mut out = String::new();
    if !rows.is_empty() {
        out.push_str(&verification_markdown(rows));
    }
    if !runs.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&run_time_markdown(runs));
    }
    out
}

/// The run-time table: per method, device and version, the kernel time of the original and
/// of the version (medians) and the speed-ups.
fn run_time_markdown(runs: &[RunTime]) -> String {
    let mut out = format!(
        "{} kernel(s) timed by `bench`.\n\n\
         | file | method | input | device | version | original kernel ms | kernel ms | speed-up | end to end speed-up |\n\
         |---|---|---|---|---|---|---|---|---|\n",
        runs.len()
    );
    for r in runs {
        let end_to_end = (r.optimised_end_to_end_ms > 0.0)
            .then(|| r.original_end_to_end_ms / r.optimised_end_to_end_ms);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.3} | {:.3} | {} | {} |",
            escape_markdown(&r.file),
            escape_markdown(&r.method),
            escape_markdown(&r.input),
            escape_markdown(&r.device),
            escape_markdown(&r.version),
            r.original_ms,
            r.optimised_ms,
            r.speed_up().map_or("–".into(), |x| format!("{x:.2}x")),
            end_to_end.map_or("–".into(), |x| format!("{x:.2}x")),
        );
    }
    out
}

/// The verification tables.
fn verification_markdown(rows: &[Row]) -> String {
    let mut out = String::new();
    let s = summary(rows);
    let _ = writeln!(
        out,
        "{} document(s): {} applied, {} refused, {} failed. Verification of the {} compared: \
         {:.1} ms before, {:.1} ms after{}.\n",
        s.documents,
        s.applied,
        s.refused,
        s.failed,
        s.compared,
        s.before_ms,
        s.after_ms,
        if s.before_ms > 0.0 {
            format!(" (× {:.2})", s.after_ms / s.before_ms)
        } else {
            String::new()
        }
    );
    out.push_str(
        "| file | optimisation | status | applicability ms | verification before ms | after ms | after / before |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        let what = match &row.status {
            Status::Refused { message, .. } if row.applied.is_empty() => message.clone(),
            _ => row.applied.join("; "),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            escape_markdown(&row.file),
            escape_markdown(&what),
            row.status_text(),
            ms(row.applicability_ms),
            ms(row.before.as_ref().map(|v| v.time_ms)),
            ms(row.after.as_ref().map(|v| v.time_ms)),
            row.ratio().map_or("–".into(), |r| format!("× {r:.2}")),
        );
    }
    out.push_str(
        "\n| file | method | before ms | before | after ms | after |\n|---|---|---|---|---|---|\n",
    );
    for row in rows {
        for (name, before, after) in method_pairs(row) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                escape_markdown(&row.file),
                escape_markdown(name),
                ms(before.map(|m| m.time_ms)),
                before.map_or("–".into(), MethodTime::label),
                ms(after.map(|m| m.time_ms)),
                after.map_or("–".into(), MethodTime::label),
            );
        }
    }
    out
}

/// Each method of a row with its before and after measurements, in the order of the input's
/// report, then methods that only the output has.
fn method_pairs(row: &Row) -> Vec<(&str, Option<&MethodTime>, Option<&MethodTime>)> {
    let before: &[MethodTime] = row.before.as_ref().map_or(&[], |v| &v.methods);
    let after: &[MethodTime] = row.after.as_ref().map_or(&[], |v| &v.methods);
    let mut pairs: Vec<_> = before
        .iter()
        .map(|b| {
            (
                b.name.as_str(),
                Some(b),
                after.iter().find(|a| a.name == b.name),
            )
        })
        .collect();
    for a in after {
        if !before.iter().any(|b| b.name == a.name) {
            pairs.push((a.name.as_str(), None, Some(a)));
        }
    }
    pairs
}

/// One JSON document: the rows, with their after/before ratio, and the summary.
pub fn json(rows: &[Row], runs: &[RunTime]) -> serde_json::Value {
    let documents: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            let mut value = serde_json::to_value(row).unwrap_or_default();
            value["after_over_before"] = serde_json::json!(row.ratio());
            value
        })
        .collect();
    let run_times: Vec<serde_json::Value> = runs
        .iter()
        .map(|r| {
            let mut value = serde_json::to_value(r).unwrap_or_default();
            value["speed_up"] = serde_json::json!(r.speed_up());
            value
        })
        .collect();
    serde_json::json!({
        "schema_version": 1,
        "documents": documents,
        "summary": summary(rows),
        "run_times": run_times,
    })
}

/// CSV, one record per (document, method); a document without verification is one record
/// with the method fields empty. A run time is a record of its own (status `timed`), its
/// times in the last columns, the verification columns empty.
pub fn csv(rows: &[Row], runs: &[RunTime]) -> Result<String, csv::Error> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record([
        "file",
        "applied",
        "status",
        "optimisation_ms",
        "applicability_ms",
        "method",
        "before_ms",
        "before_outcome",
        "after_ms",
        "after_outcome",
        "device",
        "version",
        "original_kernel_ms",
        "kernel_ms",
        "original_end_to_end_ms",
        "end_to_end_ms",
    ])?;
    let number = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.3}"));
    for row in rows {
        let status = row.status_text();
        let applied = row.applied.join("; ");
        let mut pairs = method_pairs(row);
        if pairs.is_empty() {
            pairs.push(("", None, None));
        }
        for (name, before, after) in pairs {
            writer.write_record([
                row.file.as_str(),
                applied.as_str(),
                status.as_str(),
                &number(row.optimisation_ms),
                &number(row.applicability_ms),
                name,
                &number(before.map(|m| m.time_ms)),
                before.map_or("", |m| m.outcome.as_str()),
                &number(after.map(|m| m.time_ms)),
                after.map_or("", |m| m.outcome.as_str()),
                "",
                "",
                "",
                "",
                "",
                "",
            ])?;
        }
    }
    for r in runs {
        writer.write_record([
            r.file.as_str(),
            "",
            "timed",
            "",
            "",
            r.method.as_str(),
            "",
            "",
            "",
            "",
            r.device.as_str(),
            r.version.as_str(),
            &number(Some(r.original_ms)),
            &number(Some(r.optimised_ms)),
            &number(Some(r.original_end_to_end_ms)),
            &number(Some(r.optimised_end_to_end_ms)),
        ])?;
    }
    let bytes = writer
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `text`, or its last `max − 1` characters after an ellipsis (the file name is the end).
fn shortened(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let tail: String = text.chars().skip(count - (max - 1)).collect();
    format!("…{tail}")
}

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Per file of `runs`, in order: the kernel time of the original and of the optimised version
/// (medians), summed over the file's methods on the first device and version it names.
fn run_totals(runs: &[RunTime]) -> Vec<(&str, f64, f64)> {
    let mut out: Vec<(&str, f64, f64)> = Vec::new();
    for first in runs {
        if out.iter().any(|(f, ..)| *f == first.file) {
            continue;
        }
        let same = runs.iter().filter(|r| {
            r.file == first.file && r.device == first.device && r.version == first.version
        });
        let (before, after) = same.fold((0.0, 0.0), |(b, a), r| {
            (b + r.original_ms, a + r.optimised_ms)
        });
        out.push((&first.file, before, after));
    }
    out
}

/// A horizontal bar chart, one line per `optimise` document: its total verification time
/// before (grey) and after (blue), on one linear axis in ms. Where `bench` documents were
/// read, a second panel on the same lines (by file; a file only `bench` saw gets a line of
/// its own) gives the kernel time of the original (grey) and the optimised version (blue),
/// summed over the file's methods, on an axis of its own.
pub fn svg(rows: &[Row], runs: &[RunTime]) -> String {
    const LABEL: f64 = 320.0;
    const PLOT: f64 = 440.0;
    const RUN_PLOT: f64 = 300.0;
    const ROW: f64 = 34.0;
    const TOP: f64 = 40.0;
    let totals = run_totals(runs);
    // The lines: each document, then each file only `bench` saw.
    let mut lines: Vec<(&str, Option<&Row>)> =
        rows.iter().map(|r| (r.file.as_str(), Some(r))).collect();
    for (file, ..) in &totals {
        if !rows.iter().any(|r| r.file == *file) {
            lines.push((file, None));
        }
    }
    let longest = rows
        .iter()
        .flat_map(|r| [&r.before, &r.after])
        .flatten()
        .map(|v| v.time_ms)
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let scale = PLOT / longest;
    let longest_run = totals
        .iter()
        .flat_map(|(_, b, a)| [*b, *a])
        .fold(0.0_f64, f64::max);
    let run_scale = if longest_run > 0.0 {
        RUN_PLOT / longest_run
    } else {
        0.0
    };
    let run_x = LABEL + PLOT + 90.0;
    let height = TOP + ROW * lines.len() as f64 + 30.0;
    let width = if totals.is_empty() {
        LABEL + PLOT + 90.0
    } else {
        run_x + RUN_PLOT + 90.0
    };
    let title = if totals.is_empty() {
        "Verification time before (grey) and after (blue) each optimisation, ms"
    } else {
        "Verification time (left) and kernel time (right) before (grey) and after (blue) each \
         optimisation, ms"
    };
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n\
         <text x=\"8\" y=\"18\" font-size=\"14\">{title}</text>\n"
    );
    for (i, (file, row)) in lines.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LABEL - 8.0,
            y + 17.0,
            escape_xml(&shortened(file, 48))
        );
        let mut bars: Vec<(f64, f64, Option<f64>, String)> = Vec::new();
        if let Some(row) = row {
            for verification in [&row.before, &row.after] {
                let text = match verification {
                    Some(_) => String::new(),
                    None => row.status_text(),
                };
                bars.push((LABEL, scale, verification.as_ref().map(|v| v.time_ms), text));
            }
        }
        if let Some((_, before, after)) = totals.iter().find(|(f, ..)| f == file) {
            bars.push((run_x, run_scale, Some(*before), String::new()));
            bars.push((run_x, run_scale, Some(*after), String::new()));
        }
        for (k, (x, scale, value, text)) in bars.iter().enumerate() {
            let (colour, bar_y) = (
                ["#9e9e9e", "#1f77b4"][k % 2],
                y + 3.0 + 14.0 * (k % 2) as f64,
            );
            match value {
                Some(v) => {
                    let digits = if *x == LABEL { 1 } else { 3 };
                    let _ = writeln!(
                        out,
                        "<rect x=\"{x}\" y=\"{bar_y:.1}\" width=\"{:.1}\" height=\"12\" \
                         fill=\"{colour}\"/><text x=\"{:.1}\" y=\"{:.1}\">{:.digits$}</text>",
                        v * scale,
                        x + v * scale + 4.0,
                        bar_y + 10.0,
                        v
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                        x + 4.0,
                        bar_y + 10.0,
                        escape_xml(text)
                    );
                }
            }
        }
    }
    let axis_y = TOP + ROW * lines.len() as f64 + 4.0;
    // An axis from `x`, `length` long, labelled 0 and `end`.
    let mut axis = |x: f64, length: f64, end: String| {
        let _ = writeln!(
            out,
            "<line x1=\"{x}\" y1=\"{axis_y:.1}\" x2=\"{:.1}\" y2=\"{axis_y:.1}\" stroke=\"black\"/>\n\
             <text x=\"{x}\" y=\"{:.1}\">0</text>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{end}</text>",
            x + length,
            axis_y + 16.0,
            x + length,
            axis_y + 16.0,
        );
    };
    axis(LABEL, PLOT, format!("{longest:.1} ms"));
    if !totals.is_empty() {
        axis(run_x, RUN_PLOT, format!("{longest_run:.3} ms (kernel)"));
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const APPLIED: &str = r#"{
      "schema_version": 1, "file": "a.pvl", "applied": ["unrolled the loop over `i` by 2 at 3:5"],
      "optimisation_ms": 0.1, "applicability_ms": 20.0,
      "verification_before": {"time_ms": 100.0, "methods": [{"name": "f", "outcome": "verified", "time_ms": 100.0}]},
      "verification_after": {"time_ms": 150.0, "methods": [{"name": "f", "outcome": "verified", "time_ms": 150.0}]},
      "exit": 0, "pvl": "..."
    }"#;
    const REFUSED: &str = r#"{
      "schema_version": 1, "file": "b|c.pvl", "applied": [],
      "refused": {"code": "E0905", "message": "cannot show that the loop runs at least 3 times", "span": {"line": 1, "column": 1}},
      "verification_before": {"time_ms": 50.0, "methods": [{"name": "g", "outcome": "verified", "time_ms": 50.0}]},
      "exit": 1
    }"#;

    /// The row of an `optimise` document.
    fn row(text: &str) -> Row {
        match read_document(text).unwrap() {
            Document::Optimised(row) => row,
            Document::Timed(_) => panic!("not an optimise document"),
        }
    }

    #[test]
    fn documents_become_rows_with_their_status() {
        let applied = row(APPLIED);
        assert_eq!(applied.status, Status::Applied);
        assert_eq!(applied.ratio(), Some(1.5));
        let refused = row(REFUSED);
        assert!(matches!(&refused.status, Status::Refused { code, .. } if code == "E0905"));
        assert_eq!(refused.ratio(), None);
        let s = summary(&[applied, refused]);
        assert_eq!(
            (s.documents, s.applied, s.refused, s.compared),
            (2, 1, 1, 1)
        );
        assert_eq!((s.before_ms, s.after_ms), (100.0, 150.0));
    }

    const BENCH: &str = r#"{
      "schema_version": 1, "command": "bench", "file": "a.pvl", "reps": 3, "exit": 0,
      "methods": [
        {"method": "C.f", "input": "N = 8, seed 1", "exit": 0, "speed_ups": [],
         "timed": [
           {"version": "original", "device": "pocl", "runs": 3,
            "kernel_ms": {"median": 2.0, "min": 1.0, "max": 3.0},
            "end_to_end_ms": {"median": 4.0, "min": 3.0, "max": 5.0}},
           {"version": "optimised", "device": "pocl", "runs": 3,
            "kernel_ms": {"median": 1.0, "min": 1.0, "max": 1.0},
            "end_to_end_ms": {"median": 2.0, "min": 2.0, "max": 2.0}}]},
        {"method": "C.g", "input": "N = 8, seed 1", "exit": 1, "speed_ups": [], "timed": []}]
    }"#;

    /// A `bench` document gives one run time per version timed against the original (a method
    /// nothing was timed for gives none); every format shows it beside the verification.
    #[test]
    fn bench_documents_give_run_times_beside_the_verification() {
        let Document::Timed(runs) = read_document(BENCH).unwrap() else {
            panic!("a bench document");
        };
        assert_eq!(runs.len(), 1);
        assert_eq!(
            (runs[0].method.as_str(), runs[0].version.as_str()),
            ("C.f", "optimised")
        );
        assert_eq!(runs[0].speed_up(), Some(2.0));
        let rows = [row(APPLIED)];
        let md = markdown(&rows, &runs);
        assert!(md.contains("| a.pvl | C.f | N = 8, seed 1 | pocl | optimised | 2.000 | 1.000 | 2.00x | 2.00x |"), "{md}");
        assert!(md.contains("after / before"), "{md}");
        let json = json(&rows, &runs);
        assert_eq!(json["run_times"][0]["speed_up"], 2.0);
        let csv = csv(&rows, &runs).unwrap();
        let timed = csv
            .lines()
            .find(|l| l.contains(",timed,"))
            .expect("a timed record");
        assert!(
            timed.ends_with("pocl,optimised,2.000,1.000,4.000,2.000"),
            "{timed}"
        );
        // The chart: the file's line has the verification bars and the kernel bars.
        let svg = svg(&rows, &runs);
        assert!(svg.contains("kernel time (right)"), "{svg}");
        assert!(
            svg.contains(">2.000</text>") && svg.contains(">1.000</text>"),
            "{svg}"
        );
        assert_eq!(svg.matches("<rect").count(), 4, "{svg}");
        // Without bench documents the chart is the verification alone.
        assert!(!super::svg(&rows, &[]).contains("kernel"));
        // A bench document of another schema is refused.
        assert!(matches!(
            read_document(r#"{"schema_version": 2, "command": "bench"}"#),
            Err(ReportError::Schema(2))
        ));
    }

    #[test]
    fn long_labels_keep_their_end() {
        assert_eq!(shortened("a.pvl", 8), "a.pvl");
        assert_eq!(shortened("examples/b.pvl", 8), "…s/b.pvl");
        assert_eq!(shortened("examples/b.pvl", 8).chars().count(), 8);
    }

    /// Schema 2: a method from the verified-method cache has a lookup's time, so its row has
    /// no ratio and is not compared in the summary; the method table says `cached`.
    #[test]
    fn cached_methods_are_not_compared() {
        let row = row(
            r#"{"schema_version": 2, "file": "a.pvl", "applied": ["x"], "steps": [],
              "verification_before": {"time_ms": 80.0, "methods": [
                {"name": "f", "outcome": "verified", "time_ms": 40.0},
                {"name": "g", "outcome": "verified", "time_ms": 40.0, "cached": false}]},
              "verification_after": {"time_ms": 41.0, "methods": [
                {"name": "f", "outcome": "verified", "time_ms": 40.0},
                {"name": "g", "outcome": "verified", "time_ms": 0.1, "cached": true}]},
              "exit": 0}"#,
        );
        assert_eq!(row.ratio(), None);
        assert_eq!(summary(std::slice::from_ref(&row)).compared, 0);
        assert!(markdown(&[row], &[]).contains("verified (cached)"));
    }

    #[test]
    fn other_json_is_refused_with_a_reason() {
        assert!(matches!(read_document("{"), Err(ReportError::NotJson(_))));
        assert!(matches!(
            read_document(r#"{"schema_version": 1, "files": []}"#),
            Err(ReportError::NotADocument(_))
        ));
        assert!(matches!(
            read_document(r#"{"schema_version": 3, "file": "a", "exit": 0}"#),
            Err(ReportError::Schema(3))
        ));
        assert!(matches!(
            read_document(
                r#"{"schema_version": 1, "file": "a", "verification_before": 3, "exit": 0}"#
            ),
            Err(ReportError::NotADocument(_))
        ));
    }

    #[test]
    fn renderers_escape_what_their_format_needs() {
        let rows = [row(APPLIED), row(REFUSED)];
        let md = markdown(&rows, &[]);
        assert!(md.contains("| b\\|c.pvl |"), "{md}");
        assert!(md.contains("× 1.50"), "{md}");
        let csv = csv(&rows, &[]).unwrap();
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert_eq!(records.len(), 2);
        assert_eq!(&records[0][0], "a.pvl");
        assert_eq!(&records[0][1], "unrolled the loop over `i` by 2 at 3:5");
        assert_eq!(&records[1][0], "b|c.pvl");
        assert_eq!(&records[1][2], "refused (E0905)");
        let svg = svg(&rows, &[]);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("refused (E0905)"), "{svg}");
        let json = json(&rows, &[]);
        assert_eq!(json["documents"][0]["after_over_before"], 1.5);
        assert_eq!(json["documents"][1]["status"], "refused");
        assert_eq!(json["summary"]["refused"], 1);
    }
}
