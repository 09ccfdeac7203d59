//! Wall-clock instants.
//!
//! Deadlines are shared between processes (and between machines talking to one Redis), so they are
//! wall-clock milliseconds since the Unix epoch, not `tokio::time::Instant`s. They are written as
//! RFC 3339 (`2026-12-02T10:21:42.123Z`) in JSON so that people and browsers can read them, and as
//! plain integers inside the stores so that indexes can sort them.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Millis(pub u64);

impl Millis {
    /// The current wall-clock time.
    pub fn now() -> Self {
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Millis(since_epoch.as_millis() as u64)
    }

    /// This instant moved `duration` later.
    pub fn after(self, duration: Duration) -> Self {
        Millis(self.0.saturating_add(duration.as_millis() as u64))
    }

    /// How long from `earlier` to `self`; zero when `earlier` is later.
    pub fn since(self, earlier: Millis) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }

    /// Formats as RFC 3339 in UTC with milliseconds.
    pub fn to_rfc3339(self) -> String {
        let secs = self.0 / 1000;
        let ms = self.0 % 1000;
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let (year, month, day) = civil_from_days(days as i64);
        let Ok(year @ 0..=9999) = u64::try_from(year) else {
            return format!(
                "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{ms:03}Z",
                rem / 3600,
                rem % 3600 / 60,
                rem % 60
            );
        };
        // Digit by digit into a fixed template: every time in every answer of the API is
        // written here, and `format!`'s machinery cost several times the arithmetic.
        let mut text = *b"0000-00-00T00:00:00.000Z";
        for (at, width, value) in [
            (0, 4, year),
            (5, 2, u64::from(month)),
            (8, 2, u64::from(day)),
            (11, 2, rem / 3600),
            (14, 2, rem % 3600 / 60),
            (17, 2, rem % 60),
            (20, 3, ms),
        ] {
            let mut value = value;
            for digit in text[at..at + width].iter_mut().rev() {
                *digit = b'0' + (value % 10) as u8;
                value /= 10;
            }
        }
        String::from_utf8(text.to_vec()).expect("ASCII digits and separators")
    }

    /// A point in time as people write "since": an RFC 3339 time, milliseconds since the
    /// epoch, or a span back from `now` (`90s`, `30m`, `2h`, `7d`).
    pub fn parse_since(text: &str, now: Millis) -> Option<Self> {
        let text = text.trim();
        if let Some(at) = Millis::parse_rfc3339(text) {
            return Some(at);
        }
        if let Ok(ms) = text.parse::<u64>() {
            return Some(Millis(ms));
        }
        let split = text.len().checked_sub(1)?;
        let (number, unit) = (text.get(..split)?, text.get(split..)?);
        let per = match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86_400,
            _ => return None,
        };
        let span = number
            .parse::<u64>()
            .ok()?
            .checked_mul(per)?
            .checked_mul(1000)?;
        Some(Millis(now.0.saturating_sub(span)))
    }

    /// Parses what [`Millis::to_rfc3339`] writes (fractional seconds optional, `Z` or `+00:00`).
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        let text = text.trim();
        let body = text
            .strip_suffix('Z')
            .or_else(|| text.strip_suffix("+00:00"))?;
        let (date, time) = body.split_once(['T', ' '])?;
        let mut date_parts = date.splitn(3, '-');
        let year: i64 = date_parts.next()?.parse().ok()?;
        let month: u32 = date_parts.next()?.parse().ok()?;
        let day: u32 = date_parts.next()?.parse().ok()?;
        let (hms, fraction) = match time.split_once('.') {
            Some((hms, fraction)) => (hms, fraction),
            None => (time, ""),
        };
        let mut time_parts = hms.splitn(3, ':');
        let hour: u64 = time_parts.next()?.parse().ok()?;
        let minute: u64 = time_parts.next()?.parse().ok()?;
        let second: u64 = time_parts.next()?.parse().ok()?;
        let in_range = (1970..=9999).contains(&year)
            && (1..=12).contains(&month)
            && (1..=31).contains(&day)
            && hour <= 23
            && minute <= 59
            && second <= 60;
        if !in_range || fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let ms: u64 = match fraction.len() {
            0 => 0,
            _ => format!("{fraction:0<3}")[..3].parse().ok()?,
        };
        let days = days_from_civil(year, month, day);
        let secs = days.checked_mul(86_400)? + (hour * 3600 + minute * 60 + second) as i64;
        Some(Millis(u64::try_from(secs).ok()? * 1000 + ms))
    }
}

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl Serialize for Millis {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MillisVisitor)
    }
}

/// Reads an RFC 3339 text or a number of milliseconds as it comes. Why a visitor and not an
/// untagged enum of the two: the enum buffered each time into serde's `Content` (a copy of the
/// text) before trying its variants, and every question and run holds several times, read back
/// on every resume (callgrind of `--runs`, 2026-12-07).
struct MillisVisitor;

impl serde::de::Visitor<'_> for MillisVisitor {
    type Value = Millis;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an RFC 3339 UTC time or milliseconds since the epoch")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Millis, E> {
        Millis::parse_rfc3339(text)
            .ok_or_else(|| E::custom(format!("`{text}` is not an RFC 3339 UTC time")))
    }

    fn visit_u64<E: serde::de::Error>(self, ms: u64) -> Result<Millis, E> {
        Ok(Millis(ms))
    }

    fn visit_i64<E: serde::de::Error>(self, ms: i64) -> Result<Millis, E> {
        u64::try_from(ms)
            .map(Millis)
            .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(ms), &self))
    }
}

// Howard Hinnant's algorithms for the proleptic Gregorian calendar: exact, branch-light, and
// small enough that pulling a date crate into the model crate is not worth it.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = year - i64::from(month <= 2);
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_reads_times_epochs_and_spans() {
        let now = Millis(10_000_000);
        assert_eq!(
            Millis::parse_since("2h", now),
            Some(Millis(10_000_000 - 7_200_000))
        );
        assert_eq!(
            Millis::parse_since("90s", now),
            Some(Millis(10_000_000 - 90_000))
        );
        assert_eq!(Millis::parse_since("1234", now), Some(Millis(1234)));
        assert_eq!(
            Millis::parse_since("1970-01-01T00:00:01Z", now),
            Some(Millis(1000))
        );
        for bad in ["", "h", "2w", "-2h", "soon", "9999999999999999999d"] {
            assert_eq!(Millis::parse_since(bad, now), None, "{bad}");
        }
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(Millis(0).to_rfc3339(), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            Millis(1_796_206_902_123).to_rfc3339(),
            "2026-12-02T10:21:42.123Z"
        );
        assert_eq!(
            Millis(951_782_400_000).to_rfc3339(),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(
            Millis(253_402_300_799_999).to_rfc3339(),
            "9999-12-31T23:59:59.999Z"
        );
        // Past year 9999: more digits, as `format!` writes them.
        assert_eq!(
            Millis(253_402_300_800_000).to_rfc3339(),
            "10000-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn parse_round_trips_over_many_instants() {
        let mut t = 0u64;
        while t < 4_102_444_800_000 {
            let m = Millis(t);
            assert_eq!(Millis::parse_rfc3339(&m.to_rfc3339()), Some(m));
            t += 7_777_777_777;
        }
    }

    #[test]
    fn parse_accepts_common_variants_and_rejects_garbage() {
        assert_eq!(
            Millis::parse_rfc3339("1970-01-01T00:00:01Z"),
            Some(Millis(1000))
        );
        assert_eq!(
            Millis::parse_rfc3339("1970-01-01T00:00:01.5+00:00"),
            Some(Millis(1500))
        );
        assert_eq!(Millis::parse_rfc3339("yesterday"), None);
        for garbage in [
            "2020-01-01T00:00:00.ééZ",
            "2020-01-01T00:00:99Z",
            "99999999999-01-01T00:00:00Z",
            "2020-01-01T00:00:00.1234567890Z",
            "2020-01-01T00:00:00.-1Z",
        ] {
            assert_eq!(Millis::parse_rfc3339(garbage), None, "{garbage}");
        }
        assert_eq!(Millis::parse_rfc3339("1970-13-01T00:00:00Z"), None);
    }

    #[test]
    fn json_accepts_text_and_integers() {
        let m: Millis = serde_json::from_str("\"1970-01-01T00:00:02.000Z\"").unwrap();
        assert_eq!(m, Millis(2000));
        let m: Millis = serde_json::from_str("2500").unwrap();
        assert_eq!(m, Millis(2500));
        assert_eq!(
            serde_json::to_string(&Millis(2000)).unwrap(),
            "\"1970-01-01T00:00:02.000Z\""
        );
        // Anything else is refused, saying what was expected.
        for (bad, says) in [
            ("-5", "expected an RFC 3339 UTC time or milliseconds"),
            ("1.5", "expected an RFC 3339 UTC time or milliseconds"),
            ("true", "expected an RFC 3339 UTC time or milliseconds"),
            ("\"yesterday\"", "`yesterday` is not an RFC 3339 UTC time"),
        ] {
            let error = serde_json::from_str::<Millis>(bad).unwrap_err().to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
        // Inside what serde buffers first (an internally tagged enum), as a run's journal is.
        #[derive(Debug, Deserialize, PartialEq)]
        #[serde(tag = "type")]
        enum Tagged {
            At { at: Millis },
        }
        for at in ["\"1970-01-01T00:00:02.000Z\"", "2000"] {
            let json = format!(r#"{{"type": "At", "at": {at}}}"#);
            let tagged: Tagged = serde_json::from_str(&json).unwrap();
            assert_eq!(tagged, Tagged::At { at: Millis(2000) });
        }
    }
}
