//! `summary.json` and its committed schema.

use peakhour_analysis::Summary;

use crate::ReportError;

/// The JSON Schema (draft 2020-12) every `summary.json` satisfies, as
/// committed at `schemas/summary.schema.json`.
pub const SUMMARY_SCHEMA: &str = include_str!("../../../schemas/summary.schema.json");

/// The summary as pretty-printed JSON with a trailing newline.
pub fn summary_json(summary: &Summary) -> Result<String, ReportError> {
    let mut s = serde_json::to_string_pretty(summary)?;
    s.push('\n');
    Ok(s)
}
