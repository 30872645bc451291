//! Human-readable quantities in profiles: durations (`"8h"`, `"90s"`, `"1h30m"`) and sizes
//! (`"1KB"`, `"0.5KB"`, `"43KB"`, `"512B"`). KB means 1024 bytes, as in LoadSim's `.msg`
//! files (seed 002, Table 4).

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A number as a person reads it in an error: as written for everyday sizes,
/// in scientific notation when it is huge or tiny, so that `per_day = 1e308`
/// shows as `1e308` and not as 309 digits (issue 26, item 9).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Readable(pub f64);

impl fmt::Display for Readable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let x = self.0;
        let magnitude = x.abs();
        if x.is_finite() && x != 0.0 && !(1e-4..1e15).contains(&magnitude) {
            write!(f, "{x:e}")
        } else {
            write!(f, "{x}")
        }
    }
}

/// A length of time written like `"8h"`, `"30m"`, `"90s"`, `"250ms"` or `"1h30m"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HumanDuration(pub Duration);

impl HumanDuration {
    /// Parses `"8h"`, `"1h30m"`, `"45s"`, `"250ms"`, `"1.5h"`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if t.is_empty() {
            return Err("empty duration".into());
        }
        let mut total = 0.0f64;
        let mut rest = t;
        while !rest.is_empty() {
            let num_len = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .ok_or_else(|| format!("`{t}` needs a unit (h, m, s or ms)"))?;
            if num_len == 0 {
                return Err(format!("`{t}` is not a duration like \"8h\" or \"90s\""));
            }
            let value: f64 = rest[..num_len]
                .parse()
                .map_err(|_| format!("`{}` is not a number", &rest[..num_len]))?;
            rest = &rest[num_len..];
            let unit_len = rest
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .unwrap_or(rest.len());
            let scale = match &rest[..unit_len] {
                "h" => 3600.0,
                "m" | "min" => 60.0,
                "s" => 1.0,
                "ms" => 0.001,
                other => return Err(format!("unknown unit `{other}` (use h, m, s or ms)")),
            };
            rest = &rest[unit_len..];
            total += value * scale;
        }
        // Checked: `99999999999999999999h` is a number, but no duration.
        Duration::try_from_secs_f64(total)
            .map(HumanDuration)
            .map_err(|_| format!("`{t}` is too long to be a duration"))
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // To the nearest millisecond, so that text read back is at most half
        // a millisecond off (truncating made `21.22s` summed in f64 come back
        // as `21219ms`, found by the `profile_units` fuzz target).
        let ms = (self.0.as_nanos() + 500_000) / 1_000_000;
        if ms == 0 {
            return f.write_str("0s");
        }
        if !ms.is_multiple_of(1000) {
            return write!(f, "{ms}ms");
        }
        let mut s = ms / 1000;
        let (h, m) = (s / 3600, (s % 3600) / 60);
        s %= 60;
        if h > 0 {
            write!(f, "{h}h")?;
        }
        if m > 0 {
            write!(f, "{m}m")?;
        }
        if s > 0 {
            write!(f, "{s}s")?;
        }
        Ok(())
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = HumanDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as \"8h\", \"30m\" or \"90s\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<HumanDuration, E> {
                HumanDuration::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

/// A size in bytes written like `"1KB"`, `"0.5KB"`, `"2MB"` or `"512B"`, or a bare integer
/// number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// Parses `"1KB"`, `"0.5KB"`, `"43KB"`, `"1MB"`, `"512B"` (KB = 1024 bytes).
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let value: f64 = t[..split]
            .parse()
            .map_err(|_| format!("`{t}` is not a size like \"1KB\" or \"512B\""))?;
        let scale = match t[split..].trim() {
            "" | "B" => 1.0,
            "K" | "KB" | "KiB" => 1024.0,
            "M" | "MB" | "MiB" => 1024.0 * 1024.0,
            other => return Err(format!("unknown size unit `{other}` (use B, KB or MB)")),
        };
        let bytes = (value * scale).round();
        if !bytes.is_finite() || bytes >= u64::MAX as f64 {
            return Err(format!("`{t}` is too large to be a size"));
        }
        Ok(ByteSize(bytes as u64))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b >= 1024 * 1024 && b.is_multiple_of(1024 * 1024) {
            write!(f, "{}MB", b / (1024 * 1024))
        } else if b >= 512 && b.is_multiple_of(512) {
            if b.is_multiple_of(1024) {
                write!(f, "{}KB", b / 1024)
            } else {
                write!(f, "{}.5KB", b / 1024)
            }
        } else {
            write!(f, "{b}B")
        }
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size such as \"1KB\", \"0.5KB\" or \"512B\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                ByteSize::parse(v).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom("a size cannot be negative"))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_trip() {
        for (text, secs) in [
            ("8h", 28_800),
            ("30m", 1_800),
            ("1h30m", 5_400),
            ("90s", 90),
        ] {
            let d = HumanDuration::parse(text).expect("parses");
            assert_eq!(d.0, Duration::from_secs(secs));
            assert_eq!(HumanDuration::parse(&d.to_string()).expect("reparses"), d);
        }
        assert_eq!(
            HumanDuration(Duration::from_secs(5_400)).to_string(),
            "1h30m"
        );
        assert!(HumanDuration::parse("8").is_err());
        assert!(HumanDuration::parse("8d").is_err());
        assert!(HumanDuration::parse("h").is_err());
        // Too long for a Duration: an error, not a panic.
        let error = HumanDuration::parse("99999999999999999999h").unwrap_err();
        assert!(error.contains("too long"), "{error}");
        assert!(HumanDuration::parse(&format!("{}s", "9".repeat(400))).is_err());
    }

    #[test]
    fn sizes_round_trip() {
        for (text, bytes) in [
            ("1KB", 1024),
            ("0.5KB", 512),
            ("43KB", 44_032),
            ("100B", 100),
        ] {
            let s = ByteSize::parse(text).expect("parses");
            assert_eq!(s.0, bytes);
            assert_eq!(s.to_string(), text);
        }
        assert!(ByteSize::parse("1XB").is_err());
        assert!(ByteSize::parse("99999999999999999999MB").is_err());
    }
}
