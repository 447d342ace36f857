//! The session's time zone (`table.local-time-zone`): where a `TIMESTAMP_LTZ` (an instant)
//! meets the wall clock.
//!
//! As in Flink, a `TIMESTAMP_LTZ` value is an instant, shown in the session's zone, and
//! everything that reads its calendar fields reads them there: a cast to `TIMESTAMP`,
//! `STRING` or `DATE`, `DATE_FORMAT`, `EXTRACT`, `FLOOR`/`CEIL`, `LOCALTIMESTAMP`, and a
//! window over a `TIMESTAMP_LTZ` rowtime (its days start at local midnight). A cast the other
//! way reads a wall-clock time in the zone. Files keep instants in UTC (the csv and json
//! formats write and read them so), so that a zone changes what is shown, not what is stored.
//!
//! The zone is the process's: a `hummer sql` process runs one session, and a cluster worker
//! replays the session's `SET`s before it plans its share of the job. The default is UTC.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{PoisonError, RwLock};

use jiff::tz::{Offset, TimeZone};

/// The session's zone; `None`: UTC.
static ZONE: RwLock<Option<TimeZone>> = RwLock::new(None);
/// Whether the zone is UTC (read without the lock on every value).
static IS_UTC: AtomicBool = AtomicBool::new(true);

/// The zone named `name` as Flink takes it: an IANA name (`Asia/Shanghai`, `UTC`), or a
/// fixed offset (`+08:00`, `GMT+08:00`, `UTC-5`); an error says why not.
pub fn parse(name: &str) -> Result<TimeZone, String> {
    let name = name.trim();
    let offset_text = ["GMT", "UTC", "UT"]
        .iter()
        .find_map(|prefix| {
            name.get(..prefix.len())
                .filter(|p| p.eq_ignore_ascii_case(prefix))
                .map(|_| &name[prefix.len()..])
        })
        .filter(|rest| rest.starts_with(['+', '-']))
        .or_else(|| name.starts_with(['+', '-']).then_some(name));
    if let Some(text) = offset_text {
        return fixed_offset(text)
            .map(TimeZone::fixed)
            .ok_or_else(|| format!("'{name}' is not an offset such as '+08:00'"));
    }
    if ["UTC", "GMT", "Z", "UT"]
        .iter()
        .any(|u| u.eq_ignore_ascii_case(name))
    {
        return Ok(TimeZone::UTC);
    }
    TimeZone::get(name).map_err(|_| {
        format!("'{name}' is not a time zone (an IANA name such as 'Asia/Shanghai', or an offset such as '+08:00')")
    })
}

/// `+8`, `+08`, `+08:00`, `-0530` as an offset.
fn fixed_offset(text: &str) -> Option<Offset> {
    let (sign, digits) = match text.split_at(1) {
        ("+", rest) => (1, rest),
        ("-", rest) => (-1, rest),
        _ => return None,
    };
    let (hours, minutes) = match digits.split_once(':') {
        Some((h, m)) => (h, m),
        None if digits.len() == 4 => digits.split_at(2),
        None => (digits, "0"),
    };
    let (hours, minutes): (i32, i32) = (hours.parse().ok()?, minutes.parse().ok()?);
    if hours > 18 || minutes > 59 {
        return None;
    }
    Offset::from_seconds(sign * (hours * 3600 + minutes * 60)).ok()
}

/// Whether `zone` is UTC at every instant.
fn is_utc(zone: &TimeZone) -> bool {
    zone.to_fixed_offset().is_ok_and(|o| o.seconds() == 0)
        || zone.iana_name().is_some_and(|name| {
            let name = name.strip_prefix("Etc/").unwrap_or(name);
            [
                "UTC",
                "UCT",
                "GMT",
                "Zulu",
                "Universal",
                "GMT0",
                "Greenwich",
            ]
            .contains(&name)
        })
}

/// Makes `zone` the session's.
pub fn set(zone: TimeZone) {
    let utc = is_utc(&zone);
    *ZONE.write().unwrap_or_else(PoisonError::into_inner) = (!utc).then_some(zone);
    IS_UTC.store(utc, Ordering::Release);
}

/// The wall-clock time (as milliseconds of a `TIMESTAMP`) of `instant` in the session's zone.
pub fn to_local(instant: i64) -> i64 {
    in_session_zone(instant, to_local_in)
}

/// The instant of the wall-clock time `local` in the session's zone (see [`from_local_in`]).
pub fn from_local(local: i64) -> i64 {
    in_session_zone(local, from_local_in)
}

/// `convert` of `millis` in the session's zone; `millis` as they are in UTC.
fn in_session_zone(millis: i64, convert: fn(&TimeZone, i64) -> i64) -> i64 {
    if IS_UTC.load(Ordering::Acquire) {
        return millis;
    }
    match ZONE.read().unwrap_or_else(PoisonError::into_inner).as_ref() {
        Some(zone) => convert(zone, millis),
        None => millis,
    }
}

/// The wall-clock time of `instant` in `zone`.
fn to_local_in(zone: &TimeZone, instant: i64) -> i64 {
    let Ok(timestamp) = jiff::Timestamp::from_millisecond(instant) else {
        return instant;
    };
    instant.saturating_add(i64::from(zone.to_offset(timestamp).seconds()) * 1000)
}

/// The instant of the wall-clock time `local` in `zone`: of two (a clock set back), the
/// earlier; in a gap (a clock set forward), the time moved on by the gap, as Java's
/// `ZonedDateTime` takes it.
fn from_local_in(zone: &TimeZone, local: i64) -> i64 {
    let Ok(wall) = jiff::Timestamp::from_millisecond(local) else {
        return local;
    };
    let civil = wall.to_zoned(TimeZone::UTC).datetime();
    zone.to_ambiguous_timestamp(civil)
        .compatible()
        .map_or(local, |t| t.as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names and offsets as Flink takes them, and errors that name the input.
    #[test]
    fn zones_parse_as_flink_takes_them() {
        for name in ["UTC", "GMT", "Z", "+00:00", "UTC+0", "Etc/UTC"] {
            let zone = parse(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(is_utc(&zone), "{name}");
        }
        assert!(
            !is_utc(&parse("Europe/London").unwrap()),
            "UTC only in winter"
        );
        for (name, seconds) in [
            ("+08:00", 28_800),
            ("GMT+8", 28_800),
            ("UTC-05:30", -19_800),
        ] {
            let zone = parse(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(
                zone.to_fixed_offset().map(|o| o.seconds()).ok(),
                Some(seconds)
            );
        }
        assert!(parse("Asia/Shanghai").is_ok());
        let err = parse("Mars/Olympus").unwrap_err();
        assert!(err.contains("'Mars/Olympus'"), "{err}");
        assert!(parse("+25:00").is_err());
    }

    /// Shanghai is 8 hours ahead all year; New York's wall clock is 5 hours behind in
    /// winter and 4 in summer, skips 02:00-03:00 in March and has 01:00-02:00 twice in
    /// November; each wall-clock time maps back to its instant.
    #[test]
    fn instants_and_wall_clock_times_convert_both_ways() {
        let hour = 3_600_000;
        let instant = 1_704_067_200_000; // 2024-01-01 00:00 UTC
        let shanghai = parse("Asia/Shanghai").unwrap();
        assert_eq!(to_local_in(&shanghai, instant), instant + 8 * hour);
        assert_eq!(from_local_in(&shanghai, instant + 8 * hour), instant);
        let new_york = parse("America/New_York").unwrap();
        assert_eq!(to_local_in(&new_york, instant), instant - 5 * hour);
        let summer = 1_719_792_000_000; // 2024-07-01 00:00 UTC
        assert_eq!(to_local_in(&new_york, summer), summer - 4 * hour);
        assert_eq!(from_local_in(&new_york, summer - 4 * hour), summer);
        // 2024-11-03 01:30 happens twice: the earlier is 05:30 UTC.
        let fold = 1_730_597_400_000; // 2024-11-03 01:30 as a wall clock
        assert_eq!(from_local_in(&new_york, fold), fold + 4 * hour);
        // 2024-03-10 02:30 does not happen: taken as 03:30 EDT, 07:30 UTC.
        let gap = 1_710_037_800_000; // 2024-03-10 02:30 as a wall clock
        assert_eq!(from_local_in(&new_york, gap), gap + 5 * hour);
    }
}
