//! The one parser of the units people type, for the command line, plans, profiles, class
//! lists and impairments alike: rates in bits/s with SI suffixes (`500M`, `1.5G`), sizes in
//! bytes with binary suffixes (`1472`, `32k`, `1M`, as iperf3's `-l`), frame loads
//! (`500kpps`, `50%`, `100M`), frame sizes (`64,1518`, `100..1500/100`), percentages,
//! times with a unit (`300us`, `5ms`) and durations in seconds (`10`, `0.5`).
//!
//! Every number with a `k`/`M`/`G`/`T` suffix goes through [`si_number`]; the functions
//! above it only add the checks and the error text of their kind of value. [`show`] writes
//! values back the way people read them.

mod error;
mod show;

pub use error::{FeatureProblem, MtuProblem, UnitError};
pub use show::{block, bps, bytes, counted, iperf3_bytes, pct, secs, span, us, Fixed};

/// A bit rate: a number with an optional SI suffix `k`, `M`, `G`, `T` (powers of 1000).
pub fn rate_bps(s: &str) -> Result<f64, UnitError> {
    let r = si_number(s, 1000.0).ok_or_else(|| UnitError::NotARate(s.to_owned()))?;
    if r < 0.0 {
        return Err(UnitError::NegativeRate(s.to_owned()));
    }
    Ok(r)
}

/// A bit rate above zero (a line rate, an expected rate).
pub fn positive_rate_bps(s: &str) -> Option<f64> {
    rate_bps(s).ok().filter(|r| *r > 0.0)
}

/// A byte size: a whole number with an optional suffix `k`, `M`, `G` (powers of 1024).
pub fn size_bytes(s: &str) -> Result<usize, UnitError> {
    let err = || UnitError::NotASize(s.to_owned());
    let b = si_number(s, 1024.0).ok_or_else(err)?;
    if b < 0.0 || b.fract() != 0.0 || b > usize::MAX as f64 {
        return Err(err());
    }
    Ok(b as usize)
}

/// A comma-separated list of sizes.
pub fn size_list(s: &str) -> Result<Vec<usize>, UnitError> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(size_bytes)
        .collect()
}

/// Seconds as a positive decimal number.
pub fn seconds(s: &str) -> Result<std::time::Duration, UnitError> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| UnitError::NotSeconds(s.to_owned()))?;
    if !v.is_finite() || v <= 0.0 || v > 86_400.0 * 365.0 {
        return Err(UnitError::SecondsOutOfRange(s.to_owned()));
    }
    Ok(std::time::Duration::from_secs_f64(v))
}

/// Seconds as a decimal number, 0 allowed (an interval of 0: none).
pub fn seconds_or_zero(s: &str) -> Result<std::time::Duration, UnitError> {
    if s.trim().parse::<f64>() == Ok(0.0) {
        return Ok(std::time::Duration::ZERO);
    }
    seconds(s)
}

/// MTUs: `1500,9000`, or a sweep `1500..9000/500` (both ends included), or both mixed;
/// each 68..=65535, at most 128, in the order given without repeats.
pub fn mtu_list(s: &str) -> Result<Vec<u32>, UnitError> {
    let bad = |problem| UnitError::Mtus {
        input: s.to_owned(),
        problem,
    };
    let one = |p: &str| -> Result<u32, UnitError> {
        let v: u32 = p.trim().parse().map_err(|_| bad(MtuProblem::NotAnMtu))?;
        if (68..=65_535).contains(&v) {
            Ok(v)
        } else {
            Err(bad(MtuProblem::OutOfRange))
        }
    };
    let mut out: Vec<u32> = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let items = match part.split_once("..") {
            None => vec![one(part)?],
            Some((a, rest)) => {
                let (b, step) = rest
                    .split_once('/')
                    .ok_or_else(|| bad(MtuProblem::NoStep))?;
                let (a, b) = (one(a)?, one(b)?);
                let step: u32 = step.trim().parse().map_err(|_| bad(MtuProblem::NotAStep))?;
                if step == 0 || a > b {
                    return Err(bad(MtuProblem::NotUpward));
                }
                let n = (b - a) / step + 1;
                if n > 128 {
                    return Err(bad(MtuProblem::TooLong));
                }
                let mut v: Vec<u32> = (0..n).map(|i| a + i * step).collect();
                if v.last() != Some(&b) {
                    v.push(b);
                }
                v
            }
        };
        for m in items {
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    if out.is_empty() || out.len() > 128 {
        return Err(bad(MtuProblem::Count));
    }
    Ok(out)
}

/// A feature and the states to set it to: `rx-checksum=on,off`.
pub fn feature_states(s: &str) -> Result<(String, Vec<bool>), UnitError> {
    let bad = |problem| UnitError::FeatureStates {
        input: s.to_owned(),
        problem,
    };
    let (name, states) = s
        .split_once('=')
        .ok_or_else(|| bad(FeatureProblem::NoStates))?;
    let name = name.trim();
    if name.is_empty()
        || name.len() > 31
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(bad(FeatureProblem::NotAName));
    }
    let mut out = Vec::new();
    for st in states.split(',') {
        let on = match st.trim() {
            "on" => true,
            "off" => false,
            _ => return Err(bad(FeatureProblem::NotAState)),
        };
        if !out.contains(&on) {
            out.push(on);
        }
    }
    Ok((name.to_owned(), out))
}

/// A MAC address as `02:77:62:00:01:02`.
pub fn mac(s: &str) -> Result<[u8; 6], UnitError> {
    wire::EthernetAddress::parse_str(s)
        .map(|m| m.0)
        .ok_or_else(|| UnitError::NotAMac(s.to_owned()))
}

/// `N` or `N,M`: two CPU numbers, the second optional (`-A`: client and server CPU).
pub fn cpu_pair(s: &str) -> Result<(u16, Option<u16>), UnitError> {
    let err = || UnitError::NotACpuPair(s.to_owned());
    let cpu = |p: &str| p.trim().parse::<u16>().map_err(|_| err());
    match s.split(',').collect::<Vec<_>>()[..] {
        [a] => Ok((cpu(a)?, None)),
        [a, b] => Ok((cpu(a)?, Some(cpu(b)?))),
        _ => Err(err()),
    }
}

/// A frame load as typed: frames/s (`500kpps`, `1.2Mpps`, `1000pps`), a percentage of line
/// rate (`50%`), or bits/s of Ethernet frames, FCS included (`100M`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FrameRate {
    /// Frames per second.
    Pps(f64),
    /// Percent of line rate.
    Percent(f64),
    /// L2 bits per second (frame incl. FCS).
    L2Bps(f64),
}

impl FrameRate {
    /// Frames/s for frames of `len` bytes on a link of `line`.
    pub fn fps(self, len: u64, line: wire::linerate::LineRate) -> f64 {
        match self {
            FrameRate::Pps(p) => p,
            FrameRate::Percent(p) => line.fps_at_percent(len, p),
            FrameRate::L2Bps(b) => wire::linerate::LineRate::fps_for_l2_bps(len, b),
        }
    }

    /// Frames/s of a stream whose frames are `mean_len` bytes long on average: a % load
    /// counts the L1 size of the mean frame (preamble and gap included), an L2 rate the
    /// mean frame.
    pub fn fps_mean(self, mean_len: f64, line: wire::linerate::LineRate) -> f64 {
        match self {
            FrameRate::Pps(p) => p,
            FrameRate::Percent(p) => line.0 as f64 * p / 100.0 / (8.0 * (mean_len + 20.0)),
            FrameRate::L2Bps(b) => b / (8.0 * mean_len),
        }
    }
}

/// Parses a [`FrameRate`].
pub fn frame_rate(s: &str) -> Result<FrameRate, UnitError> {
    let t = s.trim();
    let err = || UnitError::NotAFrameRate(s.to_owned());
    let r = if let Some(p) = t.strip_suffix('%') {
        let v: f64 = p.trim().parse().map_err(|_| err())?;
        if !(v > 0.0 && v <= 100.0) {
            return Err(UnitError::LinePercentOutOfRange(s.to_owned()));
        }
        FrameRate::Percent(v)
    } else if let Some(p) = t.strip_suffix("pps") {
        FrameRate::Pps(si_number(p, 1000.0).ok_or_else(err)?)
    } else {
        FrameRate::L2Bps(rate_bps(t).map_err(|_| err())?)
    };
    match r {
        FrameRate::Pps(v) | FrameRate::L2Bps(v) if !(v.is_finite() && v > 0.0) => {
            Err(UnitError::RateNotPositive(s.to_owned()))
        }
        r => Ok(r),
    }
}

/// Ethernet frame sizes as RFC 2544 counts them (FCS included): 64 up to 9018 (jumbo).
pub fn frame_sizes(s: &str) -> Result<Vec<u64>, UnitError> {
    let mut out = Vec::new();
    for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let v: u64 = p
            .parse()
            .map_err(|_| UnitError::NotAFrameSize(p.to_owned()))?;
        if !(64..=9018).contains(&v) {
            return Err(UnitError::FrameSizeOutOfRange(v));
        }
        out.push(v);
    }
    if out.is_empty() {
        return Err(UnitError::NoFrameSizes);
    }
    Ok(out)
}

/// Frame sizes as a list (`64,512,1518`) or a range with a step (`100..1500/100`), each
/// checked as [`frame_sizes`] does.
pub fn frame_size_range(s: &str) -> Result<Vec<u64>, UnitError> {
    let t = s.trim();
    let Some((range, step)) = t.split_once('/') else {
        return match t.split_once("..") {
            Some(_) => Err(UnitError::RangeWithoutStep(s.to_owned())),
            None => frame_sizes(t),
        };
    };
    let not_a_range = || UnitError::NotARange(s.to_owned());
    let (a, b) = range.split_once("..").ok_or_else(not_a_range)?;
    let num = |x: &str| -> Result<u64, UnitError> { x.trim().parse().map_err(|_| not_a_range()) };
    let (a, b, step) = (num(a)?, num(b)?, num(step)?);
    if step == 0 || b < a || (b - a) / step > 1000 {
        return Err(UnitError::RangeTooLong(s.to_owned()));
    }
    let list: Vec<String> = (0..=(b - a) / step)
        .map(|i| (a + i * step).to_string())
        .collect();
    frame_sizes(&list.join(","))
}

/// A comma-separated list of bit rates (`100m,90m,64k`).
pub fn rate_list(s: &str) -> Result<Vec<f64>, UnitError> {
    let v: Vec<f64> = s
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(rate_bps)
        .collect::<Result<_, _>>()?;
    if v.is_empty() || v.iter().any(|r| *r <= 0.0) {
        return Err(UnitError::RatesNotPositive(s.to_owned()));
    }
    Ok(v)
}

/// A percentage as written, `1.5%` or `1.5` (percent either way), as the number of percent;
/// `None` when it is not a finite number.
pub fn percent(s: &str) -> Option<f64> {
    let v: f64 = s.trim().trim_end_matches('%').trim().parse().ok()?;
    v.is_finite().then_some(v)
}

/// A percentage as a ratio: `0.001%` or `0.001` (percent either way).
pub fn percent_ratio(s: &str) -> Result<f64, UnitError> {
    let v = percent(s).ok_or_else(|| UnitError::NotAPercentage(s.to_owned()))?;
    if !(0.0..100.0).contains(&v) {
        return Err(UnitError::PercentOutOfRange(s.to_owned()));
    }
    Ok(v / 100.0)
}

/// A time with its unit (`300us`, `1.5ms`, `2s`, `800ns`, `5 ms`, `3µs`) in nanoseconds;
/// `None` when it has no known unit or is not a finite number.
pub fn time_ns(s: &str) -> Option<f64> {
    let t = s.trim();
    let (num, mult) = [
        ("ns", 1.0),
        ("us", 1e3),
        ("µs", 1e3),
        ("ms", 1e6),
        ("s", 1e9),
    ]
    .iter()
    .find_map(|(unit, mult)| t.strip_suffix(unit).map(|n| (n, *mult)))?;
    let x: f64 = num.trim().parse().ok()?;
    x.is_finite().then_some(x * mult)
}

/// A time with its unit (`300us`, `1.5ms`, `2s`, `800ns`) in microseconds.
pub fn time_us(s: &str) -> Result<f64, UnitError> {
    let us = time_ns(s).ok_or_else(|| UnitError::NotATime(s.to_owned()))? / 1e3;
    if us < 0.0 {
        return Err(UnitError::NegativeTime(s.to_owned()));
    }
    Ok(us)
}

/// A latency verdict threshold `pNN=VALUE` (`p99.9=300us`, `avg=50us`, `max=1ms`), as the
/// percentile (0..=100; avg = -1) and microseconds.
pub fn latency_limit(s: &str) -> Result<(f64, f64), UnitError> {
    let err = || UnitError::NotALatencyLimit(s.to_owned());
    let (k, v) = s.split_once('=').ok_or_else(err)?;
    let q = match k.trim() {
        "avg" => -1.0,
        "max" => 100.0,
        "min" => 0.0,
        p => {
            let q: f64 = p
                .strip_prefix('p')
                .ok_or_else(err)?
                .parse()
                .map_err(|_| err())?;
            if !(0.0..=100.0).contains(&q) {
                return Err(err());
            }
            q
        }
    };
    let us = time_us(v).map_err(|_| err())?;
    if us <= 0.0 {
        return Err(err());
    }
    Ok((q, us))
}

/// The one SI number parser: a decimal number with an optional suffix `k`, `M`, `G` or `T`
/// (either case) standing for `base`, `base²`, `base³` or `base⁴` (1000 for rates, 1024 for
/// sizes). `None` when it is not such a number or the value is not finite.
pub fn si_number(s: &str, base: f64) -> Option<f64> {
    let t = s.trim();
    let last = t.chars().last()?;
    let (num, mult) = match last {
        'k' | 'K' => (&t[..t.len() - 1], base),
        'm' | 'M' => (&t[..t.len() - 1], base * base),
        'g' | 'G' => (&t[..t.len() - 1], base * base * base),
        't' | 'T' => (&t[..t.len() - 1], base * base * base * base),
        _ => (t, 1.0),
    };
    let v: f64 = num.trim().parse().ok()?;
    let r = v * mult;
    r.is_finite().then_some(r)
}

#[cfg(test)]
mod test {
    #[test]
    fn an_interval_of_zero_is_none_but_a_duration_is_not() {
        use std::time::Duration;
        assert_eq!(super::seconds_or_zero("0"), Ok(Duration::ZERO));
        assert_eq!(
            super::seconds_or_zero("0.5"),
            Ok(Duration::from_millis(500))
        );
        assert!(super::seconds_or_zero("-1").is_err());
        assert!(super::seconds("0").is_err());
    }

    #[test]
    fn mtu_lists_and_feature_states() {
        assert_eq!(super::mtu_list("1500,9000"), Ok(vec![1500, 9000]));
        let sweep = super::mtu_list("1500..9000/500").unwrap();
        assert_eq!((sweep.len(), sweep[0], sweep[15]), (16, 1500, 9000));
        assert_eq!(
            super::mtu_list("1500..1700/150"),
            Ok(vec![1500, 1650, 1700])
        );
        assert_eq!(
            super::mtu_list("9000,1500..1500/1,9000"),
            Ok(vec![9000, 1500])
        );
        for bad in [
            "",
            "67",
            "70000",
            "9000..1500/500",
            "1500..9000",
            "1500..9000/0",
            "x",
        ] {
            assert!(super::mtu_list(bad).is_err(), "{bad}");
        }
        assert_eq!(
            super::feature_states("rx-checksum=on,off"),
            Ok(("rx-checksum".into(), vec![true, false]))
        );
        assert_eq!(
            super::feature_states("lro=off"),
            Ok(("lro".into(), vec![false]))
        );
        for bad in ["lro", "=on", "lro=maybe", "a b=on", "lro="] {
            assert!(super::feature_states(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cpu_pairs_and_macs() {
        assert_eq!(super::cpu_pair("1"), Ok((1, None)));
        assert_eq!(super::cpu_pair(" 0, 3"), Ok((0, Some(3))));
        for bad in ["", "a", "1,2,3", "-1", "1,"] {
            assert!(
                super::cpu_pair(bad)
                    .unwrap_err()
                    .to_string()
                    .contains("CPU numbers"),
                "{bad}"
            );
        }
        assert_eq!(
            super::mac("02:77:62:00:01:02"),
            Ok([2, 0x77, 0x62, 0, 1, 2])
        );
        assert!(super::mac("02:77").is_err());
    }

    use super::*;

    #[test]
    fn rates() {
        assert_eq!(rate_bps("500M").unwrap(), 500e6);
        assert_eq!(rate_bps("1.5G").unwrap(), 1.5e9);
        assert_eq!(rate_bps("64k").unwrap(), 64e3);
        assert_eq!(rate_bps("0").unwrap(), 0.0);
        assert!(rate_bps("fast").unwrap_err().to_string().contains("500M"));
        assert!(rate_bps("-5M").is_err());
        assert!(rate_bps("").is_err());
        assert!(rate_bps("5Mx").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(size_bytes("1472").unwrap(), 1472);
        assert_eq!(size_bytes("32k").unwrap(), 32 * 1024);
        assert_eq!(size_bytes("1M").unwrap(), 1 << 20);
        assert!(size_bytes("1.5").is_err());
        assert!(size_bytes("k").is_err());
        assert_eq!(size_list("1k,2k, 4k").unwrap(), vec![1024, 2048, 4096]);
        assert!(size_list("1k,zz").is_err());
    }

    #[test]
    fn frame_units() {
        assert_eq!(frame_rate("500kpps").unwrap(), FrameRate::Pps(500e3));
        assert_eq!(frame_rate("1.5Mpps").unwrap(), FrameRate::Pps(1.5e6));
        assert_eq!(frame_rate("1000pps").unwrap(), FrameRate::Pps(1000.0));
        assert_eq!(frame_rate("50%").unwrap(), FrameRate::Percent(50.0));
        assert_eq!(frame_rate("100M").unwrap(), FrameRate::L2Bps(100e6));
        for bad in ["0pps", "150%", "fast", "0%", "-1M"] {
            assert!(frame_rate(bad).is_err(), "{bad}");
        }
        let line = wire::linerate::LineRate(1_000_000_000);
        assert!((FrameRate::Percent(100.0).fps(64, line) - 1_488_095.238).abs() < 0.01);
        assert_eq!(frame_sizes("64, 1518").unwrap(), [64, 1518]);
        assert!(frame_sizes("63")
            .unwrap_err()
            .to_string()
            .contains("64..=9018"));
        assert!(frame_sizes("").is_err());
        assert_eq!(percent_ratio("0.001%").unwrap(), 0.00001);
        assert!(percent_ratio("100").is_err());
        assert_eq!(latency_limit("p99.9=300us").unwrap(), (99.9, 300.0));
        assert_eq!(latency_limit("avg=1ms").unwrap(), (-1.0, 1000.0));
        assert!(latency_limit("p99=fast").is_err());
        assert!(latency_limit("q5=1us").is_err());
        assert_eq!(frame_size_range("100..500/200").unwrap(), [100, 300, 500]);
        assert_eq!(frame_size_range("64,1518").unwrap(), [64, 1518]);
        assert!(frame_size_range("100..1500")
            .unwrap_err()
            .to_string()
            .contains("step"));
        assert!(frame_size_range("10..100/10")
            .unwrap_err()
            .to_string()
            .contains("64..=9018"));
        assert_eq!(rate_list("100m,64k").unwrap(), [100e6, 64e3]);
        assert!(rate_list("0").is_err());
    }

    #[test]
    fn secs() {
        assert_eq!(seconds("2.5").unwrap().as_millis(), 2500);
        assert!(seconds("0").is_err());
        assert!(seconds("abc").is_err());
        assert!(seconds("NaN").is_err());
    }
}
