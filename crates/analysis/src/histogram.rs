//! Latency histograms: the live form the recorder writes into and the compact
//! encoded form that closed intervals keep.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use serde::{Deserialize, Serialize};

use crate::AnalysisError;

/// Smallest latency told apart from zero, in microseconds.
pub const LOWEST_DISCERNIBLE_US: u64 = 1;
/// Largest latency recorded, in microseconds (one hour). Longer values are
/// clamped to this, so an absurd latency still counts instead of vanishing.
pub const HIGHEST_TRACKABLE_US: u64 = 3_600_000_000;
/// Significant decimal digits kept by every histogram. Percentiles are
/// reported with this many significant digits, because more would be noise.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// A mergeable latency histogram in microseconds (1 µs .. 1 hour, 3
/// significant digits), the live form used while recording.
///
/// It starts small and grows with the largest value seen, so an idle action
/// costs a few kilobytes, not the ~190 KB of a fully allocated one-hour range.
#[derive(Clone, Debug, PartialEq)]
pub struct LatencyHistogram(Histogram<u64>);

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        // `Histogram::new` is the auto-resizing constructor with lowest value 1.
        // It only rejects more than 5 significant digits.
        match Histogram::new(SIGNIFICANT_DIGITS) {
            Ok(h) => Self(h),
            Err(_) => unreachable!("3 significant digits are always valid"),
        }
    }

    /// Records one latency, clamped to [`HIGHEST_TRACKABLE_US`].
    pub fn record(&mut self, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.record_us(us);
    }

    /// Records one latency given in microseconds, clamped to
    /// [`HIGHEST_TRACKABLE_US`].
    pub fn record_us(&mut self, us: u64) {
        // With auto-resize on, recording only fails if the counts array cannot
        // grow, which the clamp rules out.
        let _ = self.0.record(us.min(HIGHEST_TRACKABLE_US));
    }

    /// Adds every count of `other` into this histogram.
    pub fn add(&mut self, other: &LatencyHistogram) -> Result<(), AnalysisError> {
        self.0
            .add(&other.0)
            .map_err(|e| AnalysisError::Histogram(format!("merge failed: {e:?}")))
    }

    /// Empties the histogram, keeping its allocation.
    pub fn reset(&mut self) {
        self.0.reset();
    }

    /// Number of recorded values.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value at quantile `q` (0.0..=1.0) in microseconds, HdrHistogram's
    /// way: the highest value equivalent to the recorded value at that rank.
    pub fn quantile_us(&self, q: f64) -> u64 {
        self.0.value_at_quantile(q)
    }

    /// The quantile `q` in milliseconds rounded to [`SIGNIFICANT_DIGITS`], or
    /// `None` when the histogram is empty.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        (!self.is_empty()).then(|| us_to_ms_significant(self.quantile_us(q)))
    }

    /// The largest value in milliseconds rounded like [`Self::quantile_ms`].
    pub fn max_ms(&self) -> Option<f64> {
        (!self.is_empty()).then(|| us_to_ms_significant(self.0.max()))
    }

    /// The mean in milliseconds, rounded to the microsecond.
    pub fn mean_ms(&self) -> Option<f64> {
        (!self.is_empty()).then(|| round_us_to_ms(self.0.mean()))
    }

    /// The underlying HdrHistogram, for renderers and tools.
    pub fn as_hdr(&self) -> &Histogram<u64> {
        &self.0
    }

    /// Encodes into the compact form (V2 + deflate, base64), the same bytes an
    /// HdrHistogram interval log carries.
    pub fn encode(&self) -> Result<EncodedHistogram, AnalysisError> {
        if self.is_empty() {
            return Ok(EncodedHistogram::default());
        }
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.0, &mut bytes)
            .map_err(|e| AnalysisError::Histogram(format!("encode failed: {e:?}")))?;
        Ok(EncodedHistogram(BASE64.encode(bytes)))
    }
}

/// A latency histogram at rest: V2-deflate bytes in base64, exactly as in an
/// HdrHistogram interval log. An empty string is an empty histogram.
///
/// Closed intervals keep this form so a 24-hour run holds a few hundred bytes
/// per action per interval instead of a full counts array.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EncodedHistogram(String);

impl EncodedHistogram {
    /// Wraps a base64 V2 (deflate or plain) histogram, as found in an `.hlog`.
    pub fn from_base64(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    /// The base64 text; empty for an empty histogram.
    pub fn as_base64(&self) -> &str {
        &self.0
    }

    /// Whether this is the encoding of an empty histogram.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Decodes into a live, mergeable histogram.
    pub fn decode(&self) -> Result<LatencyHistogram, AnalysisError> {
        if self.0.is_empty() {
            return Ok(LatencyHistogram::new());
        }
        let bytes = BASE64
            .decode(self.0.as_bytes())
            .map_err(|e| AnalysisError::Histogram(format!("bad base64: {e}")))?;
        let mut h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| AnalysisError::Histogram(format!("decode failed: {e:?}")))?;
        // Decoded histograms have the range they were written with; let them
        // grow so any other histogram can be added into them.
        h.auto(true);
        Ok(LatencyHistogram(h))
    }
}

/// Converts microseconds to milliseconds keeping [`SIGNIFICANT_DIGITS`]
/// significant digits (values under 1 ms are exact to the microsecond).
pub(crate) fn us_to_ms_significant(us: u64) -> f64 {
    let digits = us.checked_ilog10().map_or(1, |d| d + 1);
    let keep = u32::from(SIGNIFICANT_DIGITS);
    let rounded = if digits > keep {
        let scale = 10_u64.pow(digits - keep);
        // Round half up in integers so the result has no binary noise.
        ((us + scale / 2) / scale) * scale
    } else {
        us
    };
    rounded as f64 / 1000.0
}

/// Rounds a microsecond float to whole microseconds, returned in ms.
pub(crate) fn round_us_to_ms(us: f64) -> f64 {
    us.round() / 1000.0
}

/// Rounds a millisecond value to the microsecond.
pub(crate) fn round_ms(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digit_rounding() {
        assert_eq!(us_to_ms_significant(287), 0.287);
        assert_eq!(us_to_ms_significant(950_271), 950.0);
        assert_eq!(us_to_ms_significant(1_000_447), 1000.0);
        assert_eq!(us_to_ms_significant(1_005_000), 1010.0);
        assert_eq!(us_to_ms_significant(176_127), 176.0);
        assert_eq!(us_to_ms_significant(0), 0.0);
    }

    #[test]
    fn percentiles_of_one_to_a_thousand_ms() {
        let mut h = LatencyHistogram::new();
        for ms in 1..=1000_u64 {
            h.record(Duration::from_millis(ms));
        }
        assert_eq!(h.len(), 1000);
        // Nearest rank: the 500th, 950th and 990th of 1..=1000 ms.
        assert_eq!(h.quantile_ms(0.50), Some(500.0));
        assert_eq!(h.quantile_ms(0.95), Some(950.0));
        assert_eq!(h.quantile_ms(0.99), Some(990.0));
        assert_eq!(h.max_ms(), Some(1000.0));
        let mean = h.mean_ms().unwrap_or_default();
        assert!((mean - 500.5).abs() < 0.5, "mean {mean}");
    }

    #[test]
    fn sub_millisecond_values_are_exact() {
        let mut h = LatencyHistogram::new();
        for us in [100_u64, 200, 300, 400] {
            h.record_us(us);
        }
        assert_eq!(h.quantile_ms(0.5), Some(0.2));
        assert_eq!(h.max_ms(), Some(0.4));
        assert_eq!(h.mean_ms(), Some(0.25));
    }

    #[test]
    fn empty_has_no_percentiles() {
        let h = LatencyHistogram::new();
        assert_eq!(h.quantile_ms(0.95), None);
        assert_eq!(h.max_ms(), None);
    }

    #[test]
    fn clamps_beyond_one_hour() {
        let mut h = LatencyHistogram::new();
        h.record(Duration::from_secs(10_000));
        assert_eq!(h.len(), 1);
        assert!(h.as_hdr().max() >= HIGHEST_TRACKABLE_US);
        assert!(h.as_hdr().max() < HIGHEST_TRACKABLE_US + HIGHEST_TRACKABLE_US / 500);
    }

    #[test]
    fn encode_decode_round_trip_and_merge() -> Result<(), AnalysisError> {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        for us in 1..=5000_u64 {
            a.record_us(us * 7);
        }
        b.record(Duration::from_secs(30));
        let a2 = a.encode()?.decode()?;
        assert_eq!(a2.len(), a.len());
        assert_eq!(a2.quantile_us(0.95), a.quantile_us(0.95));
        let mut merged = b.encode()?.decode()?;
        merged.add(&a2)?;
        assert_eq!(merged.len(), 5001);
        assert_eq!(merged.max_ms(), Some(30_000.0));
        assert!(LatencyHistogram::new().encode()?.is_empty());
        assert!(EncodedHistogram::default().decode()?.is_empty());
        Ok(())
    }
}
