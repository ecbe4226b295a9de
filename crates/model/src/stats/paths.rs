//! Redundant-path (FRER) analysis: test frames captured on several interfaces (the paths
//! of an 802.1CB network, before elimination) are told apart per stream by their test
//! header, and per path by the interface they arrived on. Exact, not a heuristic: every
//! arrival is kept (bounded by the capture), and the analysis sorts them afterwards.
//!
//! Per stream it reports the merged view (what an ideal eliminator would pass): distinct
//! numbers, numbers no path delivered (within the observed range), duplicates, and
//! out-of-order first deliveries (RFC 4737: a number below one already delivered); per
//! path: frames received, distinct numbers, numbers it missed, and how often it delivered
//! a number first (by kernel receive stamp); and the skew between the paths' copies.
//! Pure: the arrivals come in as data.

use serde::{Deserialize, Serialize};

use super::histogram::{LatencyHistogram, LatencySummary};

/// One captured test frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// Index of the interface (path) it arrived on.
    pub path: u8,
    /// Test id of its test header.
    pub test_id: u16,
    /// Stream id.
    pub stream_id: u8,
    /// Test-header sequence number.
    pub seq: u64,
    /// Kernel receive stamp, ns.
    pub rx_ns: Option<u64>,
    /// Whether it carried an R-TAG.
    pub rtag: bool,
}

/// One path of one stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PathStats {
    /// Path (interface) label.
    pub path: String,
    /// Frames of the stream received on it.
    pub received: u64,
    /// Distinct sequence numbers among them.
    pub unique: u64,
    /// Copies of a number this path had already delivered.
    pub duplicates: u64,
    /// Numbers of the stream's observed range this path did not deliver.
    pub missing: u64,
    /// Numbers this path delivered before every other path (by kernel receive stamp;
    /// copies without a stamp are not credited).
    pub first: u64,
    /// Frames that carried an R-TAG.
    pub rtagged: u64,
}

/// One stream across all paths.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamPaths {
    /// Test id.
    pub test_id: u16,
    /// Stream id.
    pub stream_id: u8,
    /// Lowest and highest sequence number seen.
    pub first_seq: u64,
    /// Highest sequence number seen.
    pub last_seq: u64,
    /// Frames received on all paths together.
    pub received: u64,
    /// Distinct numbers: what an eliminator passes.
    pub unique: u64,
    /// Numbers in first_seq..=last_seq that no path delivered.
    pub lost: u64,
    /// received − unique.
    pub duplicates: u64,
    /// First deliveries of a number below one already delivered (RFC 4737).
    pub out_of_order: u64,
    /// Per path.
    pub paths: Vec<PathStats>,
    /// For numbers delivered by more than one path: last copy minus first copy.
    pub skew_us: Option<LatencySummary>,
}

/// Analyzes `arrivals` captured on the paths labelled `paths` (index = `Arrival::path`).
/// Sorts `arrivals` in place.
pub fn analyze(arrivals: &mut [Arrival], paths: &[String]) -> Vec<StreamPaths> {
    arrivals.sort_unstable_by_key(|a| {
        (
            a.test_id,
            a.stream_id,
            a.seq,
            a.rx_ns.unwrap_or(u64::MAX),
            a.path,
        )
    });
    let mut out = Vec::new();
    let mut i = 0;
    while i < arrivals.len() {
        let key = (arrivals[i].test_id, arrivals[i].stream_id);
        let mut j = i;
        while j < arrivals.len() && (arrivals[j].test_id, arrivals[j].stream_id) == key {
            j += 1;
        }
        out.push(stream(&arrivals[i..j], paths));
        i = j;
    }
    out
}

fn stream(a: &[Arrival], labels: &[String]) -> StreamPaths {
    let mut s = StreamPaths {
        test_id: a[0].test_id,
        stream_id: a[0].stream_id,
        first_seq: a[0].seq,
        last_seq: a[a.len() - 1].seq,
        received: a.len() as u64,
        paths: labels
            .iter()
            .map(|l| PathStats {
                path: l.clone(),
                ..PathStats::default()
            })
            .collect(),
        ..StreamPaths::default()
    };
    let mut skew = LatencyHistogram::new();
    // (first stamp, seq) of every distinct number, for the reordering count.
    let mut firsts: Vec<(u64, u64)> = Vec::new();
    let mut k = 0;
    while k < a.len() {
        let seq = a[k].seq;
        let mut e = k;
        while e < a.len() && a[e].seq == seq {
            e += 1;
        }
        let copies = &a[k..e];
        s.unique += 1;
        // Sorted by stamp: the first copy is the earliest.
        let mut seen = [false; 256];
        for c in copies {
            let Some(p) = s.paths.get_mut(usize::from(c.path)) else {
                continue;
            };
            p.received += 1;
            p.rtagged += u64::from(c.rtag);
            if seen[usize::from(c.path)] {
                p.duplicates += 1;
            } else {
                seen[usize::from(c.path)] = true;
                p.unique += 1;
            }
        }
        // First by kernel stamp; without a stamp no path is credited.
        if copies[0].rx_ns.is_some() {
            if let Some(p) = s.paths.get_mut(usize::from(copies[0].path)) {
                p.first += 1;
            }
        }
        let distinct_paths = seen.iter().filter(|&&b| b).count();
        if distinct_paths > 1 {
            if let (Some(t0), Some(t1)) =
                (copies[0].rx_ns, copies.iter().rev().find_map(|c| c.rx_ns))
            {
                skew.record_ns(t1.saturating_sub(t0));
            }
        }
        firsts.push((copies[0].rx_ns.unwrap_or(u64::MAX), seq));
        k = e;
    }
    s.duplicates = s.received - s.unique;
    // Sequence numbers come from the network: a stray one can stretch the range to the
    // whole u64 space, so the arithmetic saturates instead of overflowing.
    let range = (s.last_seq - s.first_seq).saturating_add(1);
    s.lost = range.saturating_sub(s.unique);
    for p in &mut s.paths {
        p.missing = range.saturating_sub(p.unique);
    }
    firsts.sort_unstable();
    let mut max = None;
    for (_, seq) in firsts {
        match max {
            Some(m) if seq < m => s.out_of_order += 1,
            _ => max = Some(seq),
        }
    }
    s.skew_us = skew.summary();
    s
}

#[cfg(test)]
mod test {
    use super::*;

    fn arr(path: u8, seq: u64, t: u64) -> Arrival {
        Arrival {
            path,
            test_id: 7,
            stream_id: 1,
            seq,
            rx_ns: Some(t),
            rtag: true,
        }
    }

    #[test]
    fn two_paths_with_losses_duplicates_and_a_slower_path() {
        let labels = ["a".to_owned(), "b".to_owned()];
        let mut v = Vec::new();
        for seq in 0..100u64 {
            let t = seq * 1000;
            if seq % 10 != 3 {
                v.push(arr(0, seq, t + 100)); // path A: 100 ns after sending
            }
            if seq % 10 != 7 && seq != 3 {
                v.push(arr(1, seq, t + 500)); // path B: 400 ns slower
            }
        }
        // Number 50 never arrives; path B duplicates 60.
        v.retain(|a| a.seq != 50);
        v.push(arr(1, 60, 60_900));
        // Number 3 (lost on A) arrives late on B, after 20: out of order.
        v.push(arr(1, 3, 20_600));
        let r = analyze(&mut v, &labels);
        let [s] = &r[..] else { panic!("one stream") };
        assert_eq!((s.first_seq, s.last_seq, s.unique, s.lost), (0, 99, 99, 1));
        assert_eq!(s.duplicates, s.received - 99);
        assert_eq!(s.out_of_order, 1, "3 first arrived after 20");
        let (a, b) = (&s.paths[0], &s.paths[1]);
        assert_eq!((a.unique, a.missing), (89, 11));
        assert_eq!((b.unique, b.duplicates), (89, 1));
        // B is first only where A lost the number: 3, 13, ..., 93.
        assert_eq!(b.first, 10);
        assert_eq!(a.first, 89);
        let skew = s.skew_us.unwrap();
        assert!(skew.max_us >= 0.4 && skew.p50_us <= 0.5, "{skew:?}");
    }

    #[test]
    fn stray_numbers_and_missing_stamps_never_panic_or_invent() {
        let mut v = vec![arr(0, 0, 1), arr(1, u64::MAX, 2)];
        v.push(Arrival {
            rx_ns: None,
            ..arr(0, 5, 0)
        });
        v.push(Arrival {
            rx_ns: None,
            ..arr(1, 5, 0)
        });
        let r = analyze(&mut v, &["a".to_owned(), "b".to_owned()]);
        assert_eq!(r[0].lost, u64::MAX - 3, "saturated, no overflow");
        // Number 5 arrived on both paths without stamps: neither is credited first.
        assert_eq!(r[0].paths[0].first + r[0].paths[1].first, 2);
    }

    #[test]
    fn streams_and_tests_are_kept_apart() {
        let mut v = vec![arr(0, 0, 1), arr(0, 1, 2)];
        v.push(Arrival {
            stream_id: 2,
            ..arr(0, 5, 3)
        });
        v.push(Arrival {
            test_id: 8,
            ..arr(0, 9, 4)
        });
        // A path index with no label is ignored per path but counted in the stream.
        v.push(arr(9, 1, 5));
        let r = analyze(&mut v, &["a".to_owned()]);
        assert_eq!(r.len(), 3);
        assert_eq!(
            (r[0].unique, r[0].duplicates, r[0].paths[0].received),
            (2, 1, 2)
        );
        assert_eq!((r[1].stream_id, r[1].unique), (2, 1));
        assert_eq!(r[2].test_id, 8);
    }
}
