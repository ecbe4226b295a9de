//! The order of a mesh's tests: every ordered pair of N hosts (N × (N − 1)), at most
//! `parallel` at once, and no host in two tests at once (a host that sends or receives two
//! tests at a time shares its link and CPU between them, and both figures would describe
//! that sharing instead of the path). The runner asks for the next pair whenever one
//! ends; this module does not run anything.

/// One ordered pair: (source, destination) as indexes of the host list.
pub type Pair = (usize, usize);

/// Hands out a mesh's pairs as hosts become free.
#[derive(Debug, Clone)]
pub struct MeshSchedule {
    /// Pairs not yet handed out, in row order (from host 0 to each other, then host 1...).
    pending: Vec<Pair>,
    /// Hosts in a running test.
    busy: Vec<bool>,
    running: usize,
    parallel: usize,
}

impl MeshSchedule {
    /// Every ordered pair of `hosts`, at most `parallel` (at least 1) at once.
    pub fn new(hosts: usize, parallel: usize) -> Self {
        let pending = (0..hosts)
            .flat_map(|from| {
                (0..hosts)
                    .filter(move |to| *to != from)
                    .map(move |to| (from, to))
            })
            .collect();
        Self {
            pending,
            busy: vec![false; hosts],
            running: 0,
            parallel: parallel.max(1),
        }
    }

    /// The next pair to start now: the first pending one whose hosts are both free, while
    /// fewer than `parallel` run. `None`: wait for one to end (or all are handed out).
    pub fn start(&mut self) -> Option<Pair> {
        if self.running >= self.parallel {
            return None;
        }
        let i = self
            .pending
            .iter()
            .position(|(a, b)| !self.busy[*a] && !self.busy[*b])?;
        let (a, b) = self.pending.remove(i);
        self.busy[a] = true;
        self.busy[b] = true;
        self.running += 1;
        Some((a, b))
    }

    /// Pair `pair` (handed out by [`Self::start`]) ended.
    pub fn done(&mut self, (a, b): Pair) {
        self.busy[a] = false;
        self.busy[b] = false;
        self.running = self.running.saturating_sub(1);
    }

    /// Pairs still to hand out.
    pub fn pending(&self) -> &[Pair] {
        &self.pending
    }

    /// Pairs handed out and not done.
    pub fn running(&self) -> usize {
        self.running
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// Runs a schedule to its end, ending the oldest running pair whenever none can
    /// start; returns the pairs in start order and the most that ran at once.
    fn drain(hosts: usize, parallel: usize) -> (Vec<Pair>, usize) {
        let mut s = MeshSchedule::new(hosts, parallel);
        let (mut started, mut running, mut most) = (vec![], std::collections::VecDeque::new(), 0);
        loop {
            while let Some(p) = s.start() {
                // No host is in two running pairs.
                for (a, b) in &running {
                    assert!(
                        ![*a, *b].contains(&p.0) && ![*a, *b].contains(&p.1),
                        "{p:?}"
                    );
                }
                started.push(p);
                running.push_back(p);
                most = most.max(running.len());
            }
            match running.pop_front() {
                Some(p) => s.done(p),
                None => break,
            }
        }
        assert!(s.pending().is_empty() && s.running() == 0);
        (started, most)
    }

    #[test]
    fn every_ordered_pair_runs_once() {
        for hosts in 0..7 {
            let (mut pairs, _) = drain(hosts, 3);
            assert_eq!(pairs.len(), hosts * hosts.saturating_sub(1), "{hosts}");
            pairs.sort_unstable();
            pairs.dedup();
            assert_eq!(pairs.len(), hosts * hosts.saturating_sub(1));
            assert!(pairs
                .iter()
                .all(|(a, b)| a != b && *a < hosts && *b < hosts));
        }
    }

    #[test]
    fn at_most_parallel_and_as_many_as_hosts_allow() {
        // Four hosts make two disjoint pairs at a time: parallel 2 is reached, 3 is not
        // possible.
        assert_eq!(drain(4, 1).1, 1);
        assert_eq!(drain(4, 2).1, 2);
        assert_eq!(drain(4, 3).1, 2);
        assert_eq!(drain(7, 8).1, 3);
        // Zero means one at a time.
        assert_eq!(drain(3, 0).1, 1);
    }

    #[test]
    fn one_at_a_time_goes_row_by_row() {
        let (pairs, _) = drain(3, 1);
        assert_eq!(pairs, vec![(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]);
    }
}
