//! Progress bars for the long runs (`bench`'s and `tune`'s timings, `tune`'s reverification of
//! its candidates): on stderr, drawn only where stderr is a terminal (indicatif hides them
//! otherwise), so piped output, `--json` documents and the tests never see them.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `len` steps saying what it counts; clear it (`finish_and_clear`) before printing
/// the result of the work it counted.
pub(crate) fn bar(len: u64, what: String) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({elapsed})") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what);
    bar
}
