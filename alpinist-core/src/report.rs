//! Verification-time reports (`alpinist report`): what `alpinist optimise --json` recorded —
//! the optimisation applied or refused, the applicability check's time, and the verification
//! time of every method before and after — summarised over many runs as Markdown, JSON, CSV
//! or an SVG bar chart.
//!
//! Input is the JSON document `optimise --json` prints (`schema_version` 2; 1 is read too),
//! one per file. A method served by the verified-method cache has no proof time: a row with
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
    #[error("not an `alpinist optimise --json` document: {0}")]
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
struct Document {
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

/// Reads one `optimise --json` document.
pub fn read_document(text: &str) -> Result<Row, ReportError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(ReportError::NotJson)?;
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
    let doc: Document =
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

/// Two Markdown tables: one row per document, then one per method.
pub fn markdown(rows: &[Row]) -> String {
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
pub fn json(rows: &[Row]) -> serde_json::Value {
    let documents: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            let mut value = serde_json::to_value(row).unwrap_or_default();
            value["after_over_before"] = serde_json::json!(row.ratio());
            value
        })
        .collect();
    serde_json::json!({
        "schema_version": 1,
        "documents": documents,
        "summary": summary(rows),
    })
}

/// CSV, one record per (document, method); a document without verification is one record
/// with the method fields empty.
pub fn csv(rows: &[Row]) -> Result<String, csv::Error> {
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
            ])?;
        }
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

/// A horizontal bar chart of each document's total verification time, before (grey) and
/// after (blue), on one linear axis in ms.
pub fn svg(rows: &[Row]) -> String {
    const LABEL: f64 = 320.0;
    const PLOT: f64 = 440.0;
    const ROW: f64 = 34.0;
    const TOP: f64 = 40.0;
    let longest = rows
        .iter()
        .flat_map(|r| [&r.before, &r.after])
        .flatten()
        .map(|v| v.time_ms)
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let scale = PLOT / longest;
    let height = TOP + ROW * rows.len() as f64 + 30.0;
    let width = LABEL + PLOT + 90.0;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n\
         <text x=\"8\" y=\"18\" font-size=\"14\">Verification time before (grey) and after \
         (blue) each optimisation, ms</text>\n"
    );
    for (i, row) in rows.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LABEL - 8.0,
            y + 17.0,
            escape_xml(&shortened(&row.file, 48))
        );
        for (k, (verification, colour)) in [(&row.before, "#9e9e9e"), (&row.after, "#1f77b4")]
            .into_iter()
            .enumerate()
        {
            let bar_y = y + 3.0 + 14.0 * k as f64;
            match verification {
                Some(v) => {
                    let _ = writeln!(
                        out,
                        "<rect x=\"{LABEL}\" y=\"{bar_y:.1}\" width=\"{:.1}\" height=\"12\" \
                         fill=\"{colour}\"/><text x=\"{:.1}\" y=\"{:.1}\">{:.1}</text>",
                        v.time_ms * scale,
                        LABEL + v.time_ms * scale + 4.0,
                        bar_y + 10.0,
                        v.time_ms
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                        LABEL + 4.0,
                        bar_y + 10.0,
                        escape_xml(&row.status_text())
                    );
                }
            }
        }
    }
    let axis_y = TOP + ROW * rows.len() as f64 + 4.0;
    let _ = writeln!(
        out,
        "<line x1=\"{LABEL}\" y1=\"{axis_y:.1}\" x2=\"{:.1}\" y2=\"{axis_y:.1}\" stroke=\"black\"/>\n\
         <text x=\"{LABEL}\" y=\"{:.1}\">0</text>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{longest:.1} ms</text>\n</svg>",
        LABEL + PLOT,
        axis_y + 16.0,
        LABEL + PLOT,
        axis_y + 16.0,
    );
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

    #[test]
    fn documents_become_rows_with_their_status() {
        let applied = read_document(APPLIED).unwrap();
        assert_eq!(applied.status, Status::Applied);
        assert_eq!(applied.ratio(), Some(1.5));
        let refused = read_document(REFUSED).unwrap();
        assert!(matches!(&refused.status, Status::Refused { code, .. } if code == "E0905"));
        assert_eq!(refused.ratio(), None);
        let s = summary(&[applied, refused]);
        assert_eq!(
            (s.documents, s.applied, s.refused, s.compared),
            (2, 1, 1, 1)
        );
        assert_eq!((s.before_ms, s.after_ms), (100.0, 150.0));
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
        let row = read_document(
            r#"{"schema_version": 2, "file": "a.pvl", "applied": ["x"], "steps": [],
              "verification_before": {"time_ms": 80.0, "methods": [
                {"name": "f", "outcome": "verified", "time_ms": 40.0},
                {"name": "g", "outcome": "verified", "time_ms": 40.0, "cached": false}]},
              "verification_after": {"time_ms": 41.0, "methods": [
                {"name": "f", "outcome": "verified", "time_ms": 40.0},
                {"name": "g", "outcome": "verified", "time_ms": 0.1, "cached": true}]},
              "exit": 0}"#,
        )
        .expect("a schema 2 document");
        assert_eq!(row.ratio(), None);
        assert_eq!(summary(std::slice::from_ref(&row)).compared, 0);
        assert!(markdown(&[row]).contains("verified (cached)"));
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
        let rows = [
            read_document(APPLIED).unwrap(),
            read_document(REFUSED).unwrap(),
        ];
        let md = markdown(&rows);
        assert!(md.contains("| b\\|c.pvl |"), "{md}");
        assert!(md.contains("× 1.50"), "{md}");
        let csv = csv(&rows).unwrap();
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert_eq!(records.len(), 2);
        assert_eq!(&records[0][0], "a.pvl");
        assert_eq!(&records[0][1], "unrolled the loop over `i` by 2 at 3:5");
        assert_eq!(&records[1][0], "b|c.pvl");
        assert_eq!(&records[1][2], "refused (E0905)");
        let svg = svg(&rows);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("refused (E0905)"), "{svg}");
        let json = json(&rows);
        assert_eq!(json["documents"][0]["after_over_before"], 1.5);
        assert_eq!(json["documents"][1]["status"], "refused");
        assert_eq!(json["summary"]["refused"], 1);
    }
}
