//! What is wrong with a value as typed: one error type for every parser of [`super`], whose
//! text names the value and shows how to write it (it is what `--help`-style messages and
//! plan errors print).

/// A value that is not in its unit, or out of its range. Each variant holds the text as
/// typed (or the offending number) and its message says how to write it instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnitError {
    /// Not a number with an optional SI suffix, as a rate needs.
    #[error("'{0}' is not a rate: use a number with an optional k/M/G suffix, e.g. 500M")]
    NotARate(String),
    /// A rate below zero.
    #[error("'{0}' is not a valid rate")]
    NegativeRate(String),
    /// Not a whole number of bytes with an optional binary suffix.
    #[error("'{0}' is not a size: use bytes with an optional k/M suffix, e.g. 1472 or 32k")]
    NotASize(String),
    /// Not a decimal number of seconds.
    #[error("'{0}' is not a number of seconds")]
    NotSeconds(String),
    /// Seconds at or below zero, not finite, or over a year.
    #[error("'{0}' seconds is out of range (must be > 0)")]
    SecondsOutOfRange(String),
    /// An MTU list that does not read.
    #[error("'{input}': {problem} (e.g. 1500,9000 or 1500..9000/500)")]
    Mtus {
        /// The list as typed.
        input: String,
        /// What is wrong with it.
        problem: MtuProblem,
    },
    /// A feature with its states that does not read.
    #[error("'{input}': {problem} (e.g. rx-checksum=on,off)")]
    FeatureStates {
        /// The text as typed.
        input: String,
        /// What is wrong with it.
        problem: FeatureProblem,
    },
    /// Not a MAC address.
    #[error("'{0}' is not a MAC address (e.g. 02:77:62:00:01:02)")]
    NotAMac(String),
    /// Not one or two CPU numbers.
    #[error("'{0}' is not N or N,M (CPU numbers)")]
    NotACpuPair(String),
    /// Not frames/s, a percentage of line rate or an L2 rate.
    #[error(
        "'{0}' is not a frame rate: use e.g. 500kpps, 50% (of --line-rate) or 100M (L2 bit/s)"
    )]
    NotAFrameRate(String),
    /// A percentage of line rate outside (0, 100].
    #[error("'{0}': a percentage of line rate must be in (0, 100]")]
    LinePercentOutOfRange(String),
    /// A frame rate of zero (or not finite).
    #[error("'{0}': the rate must be positive")]
    RateNotPositive(String),
    /// One item of a frame size list that is not a number.
    #[error("'{0}' is not a frame size in bytes (e.g. 64,128,1518)")]
    NotAFrameSize(String),
    /// A frame size outside RFC 2544's 64..=9018 bytes.
    #[error("frame size {0} is out of range: 64..=9018 bytes, FCS included (RFC 2544 §9)")]
    FrameSizeOutOfRange(u64),
    /// An empty frame size list.
    #[error("no frame sizes given")]
    NoFrameSizes,
    /// A range of frame sizes without its step.
    #[error("'{0}': a range needs a step, e.g. 100..1500/100")]
    RangeWithoutStep(String),
    /// Not a range `FROM..TO/STEP` of whole numbers.
    #[error("'{0}' is not a range like 100..1500/100")]
    NotARange(String),
    /// A range that goes down, steps by 0, or gives more than 1000 sizes.
    #[error("'{0}': need from <= to and a step giving at most 1000 sizes")]
    RangeTooLong(String),
    /// A rate list that is empty or holds a rate of zero.
    #[error("'{0}': give positive rates, e.g. 100m,10m,64k")]
    RatesNotPositive(String),
    /// Not a percentage (of a ratio such as a loss tolerance).
    #[error("'{0}' is not a percentage (e.g. 0.001%)")]
    NotAPercentage(String),
    /// A ratio's percentage below 0 or at or above 100.
    #[error("'{0}': must be at least 0 and below 100 %")]
    PercentOutOfRange(String),
    /// Not a signed percentage (a change, such as a threshold on a difference).
    #[error("'{0}' is not a percentage (e.g. 25%)")]
    NotASignedPercentage(String),
    /// Not a plain number of MByte/s at or above zero.
    #[error("'{0}' is not a number of MByte/s (e.g. 110)")]
    NotMBytesPerSec(String),
    /// Not a plain number at or above zero.
    #[error("'{0}' is not a plain number at or above 0 (e.g. 1.2)")]
    NotANumber(String),
    /// A time without a known unit, or not a number.
    #[error("'{0}' is not a time: give a unit, e.g. 300us, 1.5ms, 2s")]
    NotATime(String),
    /// A time below zero.
    #[error("'{0}' is not a valid time")]
    NegativeTime(String),
    /// Not `pNN=TIME`, `avg=TIME`, `min=TIME` or `max=TIME` with a time above zero.
    #[error("'{0}' is not a latency limit: use e.g. p99.9=300us, p50=20us, avg=50us, max=1ms")]
    NotALatencyLimit(String),
    /// Not one of the format letters of iperf3's `-f`.
    #[error("'{0}' is not a format: k, m, g, t (bits/s) or K, M, G, T (bytes/s)")]
    NotAFormat(String),
}

/// What is wrong with an MTU list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MtuProblem {
    /// An item is not a whole number.
    #[error("not an MTU")]
    NotAnMtu,
    /// An MTU outside 68..=65535.
    #[error("an MTU is 68..=65535")]
    OutOfRange,
    /// A sweep `A..B` without `/STEP`.
    #[error("a sweep needs /STEP")]
    NoStep,
    /// The step of a sweep is not a whole number.
    #[error("not a step")]
    NotAStep,
    /// A sweep with a step of 0 or that goes down.
    #[error("a sweep goes up in steps above 0")]
    NotUpward,
    /// One sweep alone gives more than 128 MTUs.
    #[error("more than 128 MTUs")]
    TooLong,
    /// None at all, or more than 128 in all.
    #[error("give 1 to 128 MTUs")]
    Count,
}

/// What is wrong with a feature and its states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FeatureProblem {
    /// No `=` between the name and the states.
    #[error("give NAME=on,off")]
    NoStates,
    /// The name is empty, too long, or has characters a feature name has not.
    #[error("not a feature name")]
    NotAName,
    /// A state other than `on` and `off`.
    #[error("states are on and off")]
    NotAState,
}

#[cfg(test)]
mod test {
    use super::super::*;

    /// The messages are what users and tests read: they stay word for word.
    #[test]
    fn messages_stay_as_they_were() {
        let cases: Vec<(UnitError, &str)> = vec![
            (
                rate_bps("fast").unwrap_err(),
                "'fast' is not a rate: use a number with an optional k/M/G suffix, e.g. 500M",
            ),
            (rate_bps("-5M").unwrap_err(), "'-5M' is not a valid rate"),
            (
                size_bytes("1.5").unwrap_err(),
                "'1.5' is not a size: use bytes with an optional k/M suffix, e.g. 1472 or 32k",
            ),
            (seconds("x").unwrap_err(), "'x' is not a number of seconds"),
            (
                seconds("0").unwrap_err(),
                "'0' seconds is out of range (must be > 0)",
            ),
            (
                mtu_list("67").unwrap_err(),
                "'67': an MTU is 68..=65535 (e.g. 1500,9000 or 1500..9000/500)",
            ),
            (
                mtu_list("1500..9000").unwrap_err(),
                "'1500..9000': a sweep needs /STEP (e.g. 1500,9000 or 1500..9000/500)",
            ),
            (
                mtu_list("").unwrap_err(),
                "'': give 1 to 128 MTUs (e.g. 1500,9000 or 1500..9000/500)",
            ),
            (
                feature_states("lro=maybe").unwrap_err(),
                "'lro=maybe': states are on and off (e.g. rx-checksum=on,off)",
            ),
            (
                feature_states("lro").unwrap_err(),
                "'lro': give NAME=on,off (e.g. rx-checksum=on,off)",
            ),
            (
                mac("02:77").unwrap_err(),
                "'02:77' is not a MAC address (e.g. 02:77:62:00:01:02)",
            ),
            (
                cpu_pair("a").unwrap_err(),
                "'a' is not N or N,M (CPU numbers)",
            ),
            (
                frame_rate("fast").unwrap_err(),
                "'fast' is not a frame rate: use e.g. 500kpps, 50% (of --line-rate) or 100M (L2 bit/s)",
            ),
            (
                frame_rate("150%").unwrap_err(),
                "'150%': a percentage of line rate must be in (0, 100]",
            ),
            (
                frame_rate("0pps").unwrap_err(),
                "'0pps': the rate must be positive",
            ),
            (
                frame_sizes("64,x").unwrap_err(),
                "'x' is not a frame size in bytes (e.g. 64,128,1518)",
            ),
            (
                frame_sizes("63").unwrap_err(),
                "frame size 63 is out of range: 64..=9018 bytes, FCS included (RFC 2544 §9)",
            ),
            (frame_sizes(" ").unwrap_err(), "no frame sizes given"),
            (
                frame_size_range("100..1500").unwrap_err(),
                "'100..1500': a range needs a step, e.g. 100..1500/100",
            ),
            (
                frame_size_range("100-1500/5").unwrap_err(),
                "'100-1500/5' is not a range like 100..1500/100",
            ),
            (
                frame_size_range("100..1500/0").unwrap_err(),
                "'100..1500/0': need from <= to and a step giving at most 1000 sizes",
            ),
            (
                rate_list("0").unwrap_err(),
                "'0': give positive rates, e.g. 100m,10m,64k",
            ),
            (
                percent_ratio("x").unwrap_err(),
                "'x' is not a percentage (e.g. 0.001%)",
            ),
            (
                percent_ratio("100").unwrap_err(),
                "'100': must be at least 0 and below 100 %",
            ),
            (
                time_us("300").unwrap_err(),
                "'300' is not a time: give a unit, e.g. 300us, 1.5ms, 2s",
            ),
            (time_us("-1us").unwrap_err(), "'-1us' is not a valid time"),
            (
                latency_limit("q5=1us").unwrap_err(),
                "'q5=1us' is not a latency limit: use e.g. p99.9=300us, p50=20us, avg=50us, max=1ms",
            ),
            (
                Fixed::parse("x").unwrap_err(),
                "'x' is not a format: k, m, g, t (bits/s) or K, M, G, T (bytes/s)",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text, "{e:?}");
        }
    }

    #[test]
    fn the_variant_says_what_went_wrong() {
        assert_eq!(
            mtu_list("1500..9000/0"),
            Err(UnitError::Mtus {
                input: "1500..9000/0".into(),
                problem: MtuProblem::NotUpward
            })
        );
        assert_eq!(
            frame_sizes("9100"),
            Err(UnitError::FrameSizeOutOfRange(9100))
        );
        assert_eq!(
            latency_limit("p99=0us"),
            Err(UnitError::NotALatencyLimit("p99=0us".into()))
        );
        // A list reports its first bad item as the item's own parser does.
        assert_eq!(size_list("1k,zz"), Err(UnitError::NotASize("zz".into())));
    }
}
