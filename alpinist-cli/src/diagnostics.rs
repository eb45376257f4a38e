//! Rendering of typed diagnostics from `alpinist-core` as text with file:line:column, the
//! source line and a caret. This is the first place errors become strings.

use miette::{GraphicalReportHandler, GraphicalTheme};
use std::io::IsTerminal;

use crate::input::Source;

fn handler() -> GraphicalReportHandler {
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let theme = if colour {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    GraphicalReportHandler::new_themed(theme)
        .with_width(100)
        .with_links(false)
}

/// Print one diagnostic about `source` to standard error.
pub fn emit<D>(source: &Source, diagnostic: D)
where
    D: miette::Diagnostic + Send + Sync + 'static,
{
    let report =
        miette::Report::new_boxed(in_one_file(source, diagnostic)).with_source_code(source.clone());
    let mut out = String::new();
    match handler().render_report(&mut out, report.as_ref()) {
        Ok(()) => eprint!("{out}"),
        Err(_) => eprintln!("{report}"),
    }
}

/// Print a message that concerns no span (I/O, environment) to standard error.
pub fn emit_plain(message: impl std::fmt::Display) {
    eprintln!("error: {message}");
}

/// A diagnostic whose labels lie in several files of a multi-file program: miette shows one
/// snippet of one source, so the labels outside the primary label's file become notes
/// (`first declared here at account.pvl:2:7`) in the help.
struct LabelsInOneFile {
    inner: Box<dyn miette::Diagnostic + Send + Sync>,
    labels: Vec<miette::LabeledSpan>,
    help: Option<String>,
}

impl std::fmt::Debug for LabelsInOneFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.inner, f)
    }
}

impl std::fmt::Display for LabelsInOneFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.inner, f)
    }
}

impl std::error::Error for LabelsInOneFile {}

impl miette::Diagnostic for LabelsInOneFile {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.inner.code()
    }

    fn severity(&self) -> Option<miette::Severity> {
        self.inner.severity()
    }

    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        Some(Box::new(self.labels.iter().cloned()))
    }
}

/// `diagnostic` with its labels in one file of `source` ([`LabelsInOneFile`]), or as it is
/// where they already are.
fn in_one_file<D>(source: &Source, diagnostic: D) -> Box<dyn miette::Diagnostic + Send + Sync>
where
    D: miette::Diagnostic + Send + Sync + 'static,
{
    if source.files.len() == 1 {
        return Box::new(diagnostic);
    }
    let labels: Vec<miette::LabeledSpan> = diagnostic.labels().into_iter().flatten().collect();
    let primary = labels
        .iter()
        .find(|l| l.primary())
        .or(labels.first())
        .map(|l| source.file_at(l.offset()).start);
    let elsewhere = |l: &miette::LabeledSpan| Some(source.file_at(l.offset()).start) != primary;
    if !labels.iter().any(elsewhere) {
        return Box::new(diagnostic);
    }
    let mut help: Vec<String> = diagnostic
        .help()
        .map(|h| h.to_string())
        .into_iter()
        .collect();
    for l in labels.iter().filter(|l| elsewhere(l)) {
        let span = alpinist_core::syntax::Span {
            start: l.offset() as u32,
            end: (l.offset() + l.len()) as u32,
        };
        let (file, line, column) = source.locate(span);
        let what = l.label().unwrap_or("see");
        help.push(format!("{what}: {file}:{line}:{column}"));
    }
    let kept = labels.into_iter().filter(|l| !elsewhere(l)).collect();
    Box::new(LabelsInOneFile {
        inner: Box::new(diagnostic),
        labels: kept,
        help: Some(help.join("\n")),
    })
}
