//! Reading source files (or standard input) as UTF-8 text.

use std::io::Read;
use std::path::Path;

#[derive(Clone)]
pub struct Source {
    /// The name diagnostics show: the path as given, or `<stdin>`; for several files joined
    /// into one program ([`Source::join`]), their names separated by commas.
    pub name: String,
    pub text: String,
    /// The files `text` is made of, in order (one for a single file).
    pub files: Vec<SourceFile>,
}

/// One file of a [`Source`]: its name and where its text lies in the joined text.
#[derive(Clone)]
pub struct SourceFile {
    pub name: String,
    pub start: usize,
    pub len: usize,
}

pub enum InputError {
    Io(String, std::io::Error),
    NotUtf8 { name: String, offset: usize },
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Io(name, e) => write!(f, "cannot read {name}: {e}"),
            InputError::NotUtf8 { name, offset } => {
                write!(
                    f,
                    "{name} is not UTF-8 text (invalid byte at offset {offset})"
                )
            }
        }
    }
}

pub fn read(path: &Path) -> Result<Source, InputError> {
    let (name, bytes) = if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| InputError::Io("<stdin>".into(), e))?;
        ("<stdin>".to_string(), bytes)
    } else {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| InputError::Io(name.clone(), e))?;
        (name, bytes)
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Source::single(name, text)),
        Err(e) => Err(InputError::NotUtf8 {
            name,
            offset: e.utf8_error().valid_up_to(),
        }),
    }
}

impl Source {
    /// One file's text.
    pub fn single(name: String, text: String) -> Source {
        let files = vec![SourceFile {
            name: name.clone(),
            start: 0,
            len: text.len(),
        }];
        Source { name, text, files }
    }

    /// Several files read as one program (VerCors' reading of several file arguments): their
    /// texts joined, each after a line break, so that every span of the program lies in exactly
    /// one file; diagnostics and positions name that file and count lines within it.
    pub fn join(sources: Vec<Source>) -> Source {
        if sources.len() == 1 {
            return sources.into_iter().next().expect("one source");
        }
        let mut text = String::new();
        let mut files = Vec::new();
        for source in sources {
            if !text.is_empty() {
                text.push('\n');
            }
            files.push(SourceFile {
                name: source.name,
                start: text.len(),
                len: source.text.len(),
            });
            text.push_str(&source.text);
        }
        let name = files
            .iter()
            .map(|f| f.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        Source { name, text, files }
    }

    /// The file that holds byte `offset` of the program's text.
    pub fn file_at(&self, offset: usize) -> &SourceFile {
        let k = self.files.partition_point(|f| f.start <= offset).max(1) - 1;
        &self.files[k]
    }

    /// The file, 1-based line and column of the start of `span`.
    pub fn locate(&self, span: alpinist_core::syntax::Span) -> (&str, usize, usize) {
        let file = self.file_at(span.start as usize);
        let text = &self.text[file.start..file.start + file.len];
        let (line, column) =
            alpinist_core::syntax::line_col(text, span.start as usize - file.start);
        (&file.name, line, column)
    }
}

/// Source code for miette: a span is shown within the file that holds it, under that file's
/// name, with lines counted from that file's start.
impl miette::SourceCode for Source {
    fn read_span<'a>(
        &'a self,
        span: &miette::SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'a> + 'a>, miette::MietteError> {
        let file = self.file_at(span.offset());
        let text = &self.text[file.start..file.start + file.len];
        let offset = span.offset().saturating_sub(file.start).min(file.len);
        let local = miette::SourceSpan::new(offset.into(), span.len().min(file.len - offset));
        let inner = text.read_span(&local, context_lines_before, context_lines_after)?;
        let shown = miette::SourceSpan::new(
            (inner.span().offset() + file.start).into(),
            inner.span().len(),
        );
        Ok(Box::new(miette::MietteSpanContents::new_named(
            file.name.clone(),
            inner.data(),
            shown,
            inner.line(),
            inner.column(),
            inner.line_count(),
        )))
    }
}
