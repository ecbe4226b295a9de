//! Parsers for the units people type: rates in bits/s with SI suffixes (`500M`, `1.5G`),
//! sizes in bytes with binary suffixes (`1472`, `32k`, `1M`, as iperf3's `-l`), lists
//! (`1k,2k,4k`) and durations in seconds (`10`, `0.5`).

/// A bit rate: a number with an optional SI suffix `k`, `M`, `G`, `T` (powers of 1000).
pub fn rate_bps(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, mult) = split_suffix(t, 1000.0).ok_or_else(|| {
        format!("'{s}' is not a rate: use a number with an optional k/M/G suffix, e.g. 500M")
    })?;
    let v: f64 = num.parse().map_err(|_| {
        format!("'{s}' is not a rate: use a number with an optional k/M/G suffix, e.g. 500M")
    })?;
    let r = v * mult;
    if !r.is_finite() || r < 0.0 {
        return Err(format!("'{s}' is not a valid rate"));
    }
    Ok(r)
}

/// A byte size: a whole number with an optional suffix `k`, `M`, `G` (powers of 1024).
pub fn size_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let err =
        || format!("'{s}' is not a size: use bytes with an optional k/M suffix, e.g. 1472 or 32k");
    let (num, mult) = split_suffix(t, 1024.0).ok_or_else(err)?;
    let v: f64 = num.parse().map_err(|_| err())?;
    let b = v * mult;
    if !b.is_finite() || b < 0.0 || b.fract() != 0.0 || b > usize::MAX as f64 {
        return Err(err());
    }
    Ok(b as usize)
}

/// A comma-separated list of sizes.
pub fn size_list(s: &str) -> Result<Vec<usize>, String> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(size_bytes)
        .collect()
}

/// Seconds as a positive decimal number.
pub fn seconds(s: &str) -> Result<std::time::Duration, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !v.is_finite() || v <= 0.0 || v > 86_400.0 * 365.0 {
        return Err(format!("'{s}' seconds is out of range (must be > 0)"));
    }
    Ok(std::time::Duration::from_secs_f64(v))
}

fn split_suffix(t: &str, base: f64) -> Option<(&str, f64)> {
    let last = t.chars().last()?;
    let mult = match last {
        'k' | 'K' => base,
        'm' | 'M' => base * base,
        'g' | 'G' => base * base * base,
        't' | 'T' => base * base * base * base,
        c if c.is_ascii_digit() || c == '.' => return Some((t, 1.0)),
        _ => return None,
    };
    Some((&t[..t.len() - last.len_utf8()], mult))
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(rate_bps("500M").unwrap(), 500e6);
        assert_eq!(rate_bps("1.5G").unwrap(), 1.5e9);
        assert_eq!(rate_bps("64k").unwrap(), 64e3);
        assert_eq!(rate_bps("0").unwrap(), 0.0);
        assert!(rate_bps("fast").unwrap_err().contains("500M"));
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
    fn secs() {
        assert_eq!(seconds("2.5").unwrap().as_millis(), 2500);
        assert!(seconds("0").is_err());
        assert!(seconds("abc").is_err());
        assert!(seconds("NaN").is_err());
    }
}
