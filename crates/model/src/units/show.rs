//! Showing values in the units people read: bit rates with SI prefixes (as network
//! engineers read them), byte sizes, microseconds, percentages and netio block labels. The
//! same for every output: terminal tables, reports, verdicts.

/// `499.84 Mbit/s`: SI prefixes (k = 1000), three significant digits or two decimals.
pub fn bps(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let (scaled, unit) = if v >= 1e9 {
        (v / 1e9, "Gbit/s")
    } else if v >= 1e6 {
        (v / 1e6, "Mbit/s")
    } else if v >= 1e3 {
        (v / 1e3, "kbit/s")
    } else {
        (v, "bit/s")
    };
    format!("{} {unit}", two_dec(scaled))
}

fn two_dec(v: f64) -> String {
    format!("{v:.2}")
}

/// `12.34 MB` (10^6 bytes) style byte counts.
pub fn bytes(v: u64) -> String {
    let f = v as f64;
    if f >= 1e9 {
        format!("{:.2} GB", f / 1e9)
    } else if f >= 1e6 {
        format!("{:.2} MB", f / 1e6)
    } else if f >= 1e3 {
        format!("{:.2} kB", f / 1e3)
    } else {
        format!("{v} B")
    }
}

/// An amount as iperf3 prints it by default: powers of 1024, scaled, `2.64 GBytes`,
/// `100.00 MBytes`, `64.00 KBytes`, `512 Bytes`.
pub fn iperf3_bytes(v: u64) -> String {
    // The largest power of 1024 (up to G) the amount reaches, in that unit.
    let power = (1..=3).rev().find(|p| v >= 1u64 << (10 * p));
    match power {
        Some(power) => Fixed { power, bytes: true }.amount(v),
        None => format!("{v} Bytes"),
    }
}

/// Microseconds with a precision that suits the magnitude: `3.21`, `45.6`, `1234`.
pub fn us(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// A percentage with up to 4 decimals, trimmed: `0 %`, `0.0125 %`, `12.5 %`.
pub fn pct(ratio: f64) -> String {
    let p = ratio * 100.0;
    if p == 0.0 {
        return "0 %".into();
    }
    let s = format!("{p:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} %")
}

/// Seconds as people write them: `60`, `2`, `0.5`, `0.25` (at most three decimals, no
/// trailing zeros).
pub fn secs(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// `n` things by their name: `1 stream`, `4 streams`.
pub fn counted(n: u64, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

/// A span of time to read at a glance: `0.4 s`, `12 s`, `3 min 05 s`, `2 h 07 min`.
pub fn span(v: f64) -> String {
    let v = v.max(0.0);
    if v < 10.0 {
        format!("{v:.1} s")
    } else if v < 60.0 {
        format!("{v:.0} s")
    } else if v < 3600.0 {
        let s = v.round() as u64;
        format!("{} min {:02} s", s / 60, s % 60)
    } else {
        let m = (v / 60.0).round() as u64;
        format!("{} h {:02} min", m / 60, m % 60)
    }
}

/// A block size as netio labels it: `1k`, `32k`, `1M`, or bytes.
pub fn block(b: usize) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{}M", b >> 20)
    } else if b >= 1024 && b.is_multiple_of(1024) {
        format!("{}k", b >> 10)
    } else {
        format!("{b}")
    }
}

/// A fixed unit for rates and amounts (iperf3's `-f`): `k`, `m`, `g`, `t` are bits per
/// second (powers of 1000); `K`, `M`, `G`, `T` are bytes per second (powers of 1024).
/// Amounts show in bytes of the same magnitude (powers of 1024), as iperf3 shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fixed {
    /// 1 for k/K up to 4 for t/T.
    power: i32,
    /// Bytes rather than bits per second.
    bytes: bool,
}

impl Fixed {
    /// The unit of a `-f` letter.
    ///
    /// # Errors
    /// Not one of `kmgtKMGT`.
    pub fn parse(s: &str) -> Result<Fixed, super::UnitError> {
        let power = match s.to_ascii_lowercase().as_str() {
            "k" => 1,
            "m" => 2,
            "g" => 3,
            "t" => 4,
            _ => return Err(super::UnitError::NotAFormat(s.to_owned())),
        };
        Ok(Fixed {
            power,
            bytes: s.chars().all(|c| c.is_ascii_uppercase()),
        })
    }

    fn prefix(self) -> &'static str {
        ["", "K", "M", "G", "T"][self.power as usize]
    }

    /// A rate in bits/s in this unit, named as iperf3 names it (`Mbits/sec`, `KBytes/sec`).
    pub fn rate(self, bps: f64) -> String {
        if !bps.is_finite() {
            return "-".into();
        }
        if self.bytes {
            let v = bps / 8.0 / 1024f64.powi(self.power);
            format!("{v:.2} {}Bytes/sec", self.prefix())
        } else {
            let v = bps / 1000f64.powi(self.power);
            format!("{v:.2} {}bits/sec", self.prefix())
        }
    }

    /// An amount of bytes in this magnitude (powers of 1024).
    pub fn amount(self, bytes: u64) -> String {
        let v = bytes as f64 / 1024f64.powi(self.power);
        format!("{v:.2} {}Bytes", self.prefix())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn fixed_units_as_iperf3_f() {
        let m = Fixed::parse("m").unwrap();
        assert_eq!(m.rate(939_460_000.0), "939.46 Mbits/sec");
        assert_eq!(m.amount(12_582_912), "12.00 MBytes");
        let k = Fixed::parse("k").unwrap();
        assert_eq!(k.rate(1_500.0), "1.50 Kbits/sec");
        let big_m = Fixed::parse("M").unwrap();
        assert_eq!(big_m.rate(8.0 * 1024.0 * 1024.0), "1.00 MBytes/sec");
        assert_eq!(Fixed::parse("G").unwrap().amount(1 << 30), "1.00 GBytes");
        assert!(Fixed::parse("x").is_err() && Fixed::parse("mm").is_err());
    }

    #[test]
    fn amounts_as_iperf3_prints_them() {
        assert_eq!(iperf3_bytes(100 << 20), "100.00 MBytes");
        assert_eq!(iperf3_bytes(2_835_000_000), "2.64 GBytes");
        assert_eq!(iperf3_bytes(65_536), "64.00 KBytes");
        assert_eq!(iperf3_bytes(512), "512 Bytes");
        assert_eq!(iperf3_bytes(1 << 30), "1.00 GBytes");
        assert_eq!(
            (counted(1, "stream"), counted(4, "stream")),
            ("1 stream".into(), "4 streams".into())
        );
    }

    #[test]
    fn spans_read_at_a_glance() {
        assert_eq!(span(0.42), "0.4 s");
        assert_eq!(span(42.9), "43 s");
        assert_eq!(span(185.0), "3 min 05 s");
        assert_eq!(span(7_620.0), "2 h 07 min");
        assert_eq!(span(-1.0), "0.0 s");
    }

    #[test]
    fn formats() {
        assert_eq!(bps(499_840_000.0), "499.84 Mbit/s");
        assert_eq!(bps(31.7e9), "31.70 Gbit/s");
        assert_eq!(bps(64_000.0), "64.00 kbit/s");
        assert_eq!(bps(12.0), "12.00 bit/s");
        assert_eq!(bytes(1_234_567), "1.23 MB");
        assert_eq!(bytes(999), "999 B");
        assert_eq!(us(3.214), "3.21");
        assert_eq!(us(45.66), "45.7");
        assert_eq!(us(1234.4), "1234");
        assert_eq!(pct(0.0), "0 %");
        assert_eq!(pct(0.000125), "0.0125 %");
        assert_eq!(pct(0.125), "12.5 %");
        assert_eq!(block(1024), "1k");
        assert_eq!(block(32 * 1024), "32k");
        assert_eq!(block(1 << 20), "1M");
        assert_eq!(block(1500), "1500");
        assert_eq!(secs(0.5), "0.5");
        assert_eq!(secs(60.0), "60");
        assert_eq!(secs(1.25), "1.25");
        assert_eq!(secs(0.0004), "0");
    }
}
