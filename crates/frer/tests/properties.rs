//! Property tests of the Vector recovery algorithm: whatever the arrival order and
//! duplication inside the window, no number passes twice, every number that arrives
//! passes exactly once, and the counters add up.

use frer::recovery::{Recovery, RecoveryConfig, Verdict};
use proptest::prelude::*;

/// Arrivals: numbers base..base+n, each delivered 1..=3 times, shuffled by small
/// displacements (at most `jitter` positions), so every arrival stays inside a window of
/// `history` numbers.
fn arrivals(base: u16, n: usize, copies: &[u8], moves: &[usize], jitter: usize) -> Vec<u16> {
    let mut v: Vec<(usize, u16)> = Vec::new();
    for i in 0..n {
        for c in 0..copies[i % copies.len()].clamp(1, 3) {
            let key = i * 4
                + usize::from(c)
                + moves[(i + usize::from(c)) % moves.len()] % (jitter * 4 + 1);
            v.push((key, base.wrapping_add(i as u16)));
        }
    }
    v.sort_by_key(|x| x.0);
    v.into_iter().map(|x| x.1).collect()
}

proptest! {
    #[test]
    fn every_number_passes_once_and_counters_add_up(
        base in any::<u16>(),
        n in 1usize..400,
        copies in prop::collection::vec(1u8..=3, 1..50),
        moves in prop::collection::vec(0usize..64, 1..50),
        jitter in 0usize..6,
    ) {
        let seqs = arrivals(base, n, &copies, &moves, jitter);
        // A window comfortably wider than the displacement.
        let mut r = Recovery::new(RecoveryConfig { history_length: 32, ..RecoveryConfig::default() });
        let mut passed = std::collections::HashSet::new();
        for s in &seqs {
            if r.on_frame(0, Some(*s)) == Verdict::Pass {
                prop_assert!(passed.insert(*s), "{s} passed twice");
            }
        }
        let c = r.counters();
        // The first arrival is taken by TakeAny; numbers before it inside the window are
        // accepted as out-of-order, so every distinct number passes.
        prop_assert_eq!(passed.len(), n);
        prop_assert_eq!(c.passed + c.discarded + c.rogue, seqs.len() as u64);
        prop_assert_eq!(c.passed as usize, n);
    }

    #[test]
    fn nothing_passes_twice_whatever_arrives(
        seqs in prop::collection::vec(any::<u16>(), 0..500),
        hist in 2u16..100,
    ) {
        let mut r = Recovery::new(RecoveryConfig { history_length: hist, reset_ms: None, ..RecoveryConfig::default() });
        let mut last_pass: std::collections::HashMap<u16, usize> = std::collections::HashMap::new();
        let mut recov: Option<u16> = None;
        for (i, s) in seqs.iter().enumerate() {
            if r.on_frame(0, Some(*s)) == Verdict::Pass {
                // A number passes again only after the window moved past it.
                if let (Some(j), Some(top)) = (last_pass.get(s), recov) {
                    let moved = frer::signed_delta(top, *s);
                    prop_assert!(moved >= i32::from(hist) || moved < 0, "{s} again at {i} (first at {j}), window top {top}");
                }
                last_pass.insert(*s, i);
                if recov.is_none_or(|t| frer::signed_delta(*s, t) > 0) {
                    recov = Some(*s);
                }
            }
        }
        let c = r.counters();
        prop_assert_eq!(c.passed + c.discarded + c.rogue, seqs.len() as u64);
    }
}
