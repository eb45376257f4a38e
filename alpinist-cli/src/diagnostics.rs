//! Rendering of typed diagnostics from `alpinist-core` as text with file:line:column, the
//! source line and a caret. This is the first place errors become strings.

use miette::{GraphicalReportHandler, GraphicalTheme, NamedSource};
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
    let report = miette::Report::new(diagnostic)
        .with_source_code(NamedSource::new(source.name.clone(), source.text.clone()));
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
