//! Typed errors: a profile that does not parse or validate, and a plan that cannot be built.

use std::ops::Range;

/// A profile that could not be read. It names the file, and the line, column and field
/// whenever the problem has a place in the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// The problem points at a place in the file.
    #[error("{file}:{line}:{column}: field `{field}`: {message}")]
    At {
        /// The file name given to the parser (or `<builtin:NAME>`).
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// The dotted path of the field, e.g. `actions.send.per_day`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The problem has no single place (e.g. a required table is missing entirely).
    #[error("{file}: field `{field}`: {message}")]
    Whole {
        /// The file name given to the parser.
        file: String,
        /// The dotted path of the field.
        field: String,
        /// What is wrong.
        message: String,
    },
}

impl ProfileError {
    /// Builds an error at `span` (byte offsets into `source`), or without a place if the
    /// span is empty at offset 0 (a default value that was never written).
    pub(crate) fn at(
        file: &str,
        source: &str,
        span: Option<Range<usize>>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        match span {
            Some(span) if !(span.start == 0 && span.end == 0) => {
                let (line, column) = line_column(source, span.start);
                ProfileError::At {
                    file: file.to_owned(),
                    line,
                    column,
                    field: field.into(),
                    message: message.into(),
                }
            }
            _ => ProfileError::Whole {
                file: file.to_owned(),
                field: field.into(),
                message: message.into(),
            },
        }
    }

    /// The field the error is about.
    pub fn field(&self) -> &str {
        match self {
            ProfileError::At { field, .. } | ProfileError::Whole { field, .. } => field,
        }
    }

    /// The 1-based (line, column), when the error has a place.
    pub fn line_column(&self) -> Option<(usize, usize)> {
        match self {
            ProfileError::At { line, column, .. } => Some((*line, *column)),
            ProfileError::Whole { .. } => None,
        }
    }
}

/// 1-based line and column (in characters) of byte `offset` in `source`.
pub(crate) fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = source.get(..offset).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// A plan that could not be built from a profile and the command-line overrides.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The profile itself is invalid.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// An override from the command line is out of range.
    #[error("--{option}: {message}")]
    Override {
        /// The option name, e.g. `users`.
        option: &'static str,
        /// What is wrong.
        message: String,
    },
    /// No built-in profile has this name.
    #[error("no built-in profile named `{0}` (see `peakhour profiles list`)")]
    UnknownBuiltin(String),
    /// The resolved configuration could not be written as TOML.
    #[error("cannot write the resolved configuration as TOML: {0}")]
    Serialize(#[from] toml::ser::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_from_one() {
        let s = "a = 1\nbé = 2\n";
        assert_eq!(line_column(s, 0), (1, 1));
        assert_eq!(line_column(s, 6), (2, 1));
        assert_eq!(line_column(s, 10), (2, 4));
    }
}
