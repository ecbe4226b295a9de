//! Who may open a control connection, per source address, so that no one source can
//! starve the others (OpenSSH's MaxStartups and PerSourcePenalties are the model).
//!
//! What it decides: whether a new connection from an address may start a handshake (at
//! most `per_source_handshakes` at once per address, `max_handshakes` in all; when all
//! are taken, the oldest handshake of the addresses holding at least two more than the
//! newcomer's is evicted for it, so stalled handshakes go before honest ones under way);
//! whether an address may start another test
//! (`per_source_tests`); and penalties: from the third failed authentication, handshake
//! that ran out of time, or connection closed before its handshake ended, in a row (on
//! any port the server guards: the control port, iperf3's), an address is refused for
//! 1 s, then 2, 4, ... up to 64 s, until it authenticates (two mistakes cost nothing).
//!
//! Busy-polling (an echo session with `spin`) is charged to its address: each address
//! may spin `spin_burst` of core time in a row, refilled at [`SPIN_SHARE`] of one core;
//! beyond that its sessions sleep in `recv` like any other (slower answers, no lost ones).
//!
//! An IPv6 client is counted by its address (`ipv6_prefix` 128, the default), or by a
//! shorter prefix when configured (64: a whole subnet, for clients that hop within it).
//!
//! What it does not do: I/O or clocks. Time comes in as an argument (sans-I/O), `now` on
//! the monotonic axis of the server's [`Clock`](model::clock::Clock) (`mono()`); the
//! server closes what [`Gate::admit`] tells it to evict.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

/// The gate's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateConfig {
    /// Handshakes one address may have open at once.
    pub per_source_handshakes: usize,
    /// Handshakes open at once in all.
    pub max_handshakes: usize,
    /// Tests (and echo sessions) one address may run at once.
    pub per_source_tests: usize,
    /// Core time one address may busy-poll in a row (echo sessions with `spin`).
    pub spin_burst: Duration,
    /// An IPv6 client is counted by this many leading bits of its address: 128 (each
    /// address on its own, as OpenSSH counts them) or less (64: a whole subnet as one,
    /// for clients that hop between addresses of their /64). IPv4 is counted by /32.
    pub ipv6_prefix: u8,
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            per_source_handshakes: 4,
            max_handshakes: 64,
            per_source_tests: 4,
            spin_burst: Duration::from_secs(60),
            ipv6_prefix: 128,
        }
    }
}

/// The share of one core at which an address's spin time is given back: one spinning
/// session in four may spin forever.
pub const SPIN_SHARE: f64 = 0.25;

/// A handshake the gate let in.
pub type HandshakeId = u64;

/// The gate's answer to a new connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Serve its handshake; when `evict` is given, close that handshake first.
    Yes {
        /// This handshake.
        id: HandshakeId,
        /// An older handshake to close to make room.
        evict: Option<HandshakeId>,
    },
    /// The address holds its share of handshakes (or all are taken by addresses holding
    /// no more than it does).
    Full,
    /// The address is penalised for this much longer.
    Penalised(Duration),
}

#[derive(Debug, Default)]
struct Source {
    /// Open handshakes: id and when each started.
    handshakes: Vec<(HandshakeId, Duration)>,
    tests: usize,
    /// Failures since the last success.
    failures: u32,
    penalised_until: Option<Duration>,
    /// Spin time left and when it was counted; `None` is a full budget.
    spin_left: Option<(Duration, Duration)>,
}

impl Source {
    fn idle(&self, now: Duration, burst: Duration) -> bool {
        self.handshakes.is_empty()
            && self.tests == 0
            && self.penalised_until.is_none_or(|t| t <= now)
            && self.spin_budget(now, burst) >= burst
    }

    /// Spin time left at `now` (refilled since it was last counted) of a `burst` budget.
    fn spin_budget(&self, now: Duration, burst: Duration) -> Duration {
        match self.spin_left {
            None => burst,
            Some((left, at)) => {
                let refill = now.saturating_sub(at).mul_f64(SPIN_SHARE);
                left.saturating_add(refill).min(burst)
            }
        }
    }
}

/// Longest penalty.
const MAX_PENALTY: Duration = Duration::from_secs(64);
/// Failures in a row that cost nothing.
const FREE_FAILURES: u32 = 2;

/// Per-address state of the control port.
#[derive(Debug)]
pub struct Gate {
    cfg: GateConfig,
    sources: HashMap<IpAddr, Source>,
    next: HandshakeId,
    open: usize,
}

/// The address a client is counted by: itself for IPv4 (also written as IPv4-mapped
/// IPv6), its first `ipv6_prefix` bits for IPv6.
fn source(ip: IpAddr, ipv6_prefix: u8) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let mask = u128::MAX << (128 - u32::from(ipv6_prefix.clamp(1, 128)));
            IpAddr::V6((u128::from(v6) & mask).into())
        }
    }
}

impl Gate {
    /// An empty gate.
    pub fn new(cfg: GateConfig) -> Gate {
        Gate {
            cfg,
            sources: HashMap::new(),
            next: 0,
            open: 0,
        }
    }

    /// Core time one address may busy-poll in a row.
    pub fn spin_burst(&self) -> Duration {
        self.cfg.spin_burst
    }

    /// Handshakes open now.
    pub fn open_handshakes(&self) -> usize {
        self.open
    }

    /// A new connection from `ip` at `now`.
    pub fn admit(&mut self, ip: IpAddr, now: Duration) -> Admit {
        let ip = source(ip, self.cfg.ipv6_prefix);
        // Forget addresses with nothing open and no penalty left (the map stays small).
        if self.sources.len() > 4 * self.cfg.max_handshakes {
            let burst = self.cfg.spin_burst;
            self.sources.retain(|_, s| !s.idle(now, burst));
        }
        let cfg = self.cfg;
        let src = self.sources.entry(ip).or_default();
        if let Some(until) = src.penalised_until.filter(|t| *t > now) {
            return Admit::Penalised(until - now);
        }
        if src.handshakes.len() >= cfg.per_source_handshakes {
            return Admit::Full;
        }
        let mine = src.handshakes.len();
        let mut evict = None;
        if self.open >= cfg.max_handshakes {
            // The oldest handshake of the addresses holding more than the newcomer would:
            // a stalled one (seconds old) goes before an honest one under way (a few
            // milliseconds), even when the honest ones share a busy address.
            let victim = self
                .sources
                .iter()
                .filter(|(_, s)| s.handshakes.len() > mine + 1)
                .flat_map(|(a, s)| s.handshakes.iter().map(move |(id, at)| (*at, *id, *a)))
                .min();
            let Some((_, victim, address)) = victim else {
                return Admit::Full;
            };
            if let Some(s) = self.sources.get_mut(&address) {
                s.handshakes.retain(|(id, _)| *id != victim);
                evict = Some(victim);
                self.open -= 1;
            }
        }
        let id = self.next;
        self.next += 1;
        self.open += 1;
        self.sources
            .entry(ip)
            .or_default()
            .handshakes
            .push((id, now));
        Admit::Yes { id, evict }
    }

    /// Handshake `id` of `ip` ended (a test request read, refused or closed); `false` if
    /// it was evicted before.
    pub fn handshake_done(&mut self, ip: IpAddr, id: HandshakeId) -> bool {
        let ip = source(ip, self.cfg.ipv6_prefix);
        let Some(s) = self.sources.get_mut(&ip) else {
            return false;
        };
        let before = s.handshakes.len();
        s.handshakes.retain(|(h, _)| *h != id);
        let removed = s.handshakes.len() < before;
        if removed {
            self.open -= 1;
        }
        removed
    }

    /// `ip` failed to authenticate, or let its handshake run out of time: from the third
    /// failure in a row penalised for 1 s, doubling after each one, up to 64 s.
    pub fn failed(&mut self, ip: IpAddr, now: Duration) {
        let ip = source(ip, self.cfg.ipv6_prefix);
        let s = self.sources.entry(ip).or_default();
        s.failures = s.failures.saturating_add(1);
        if s.failures > FREE_FAILURES {
            let secs = 1u64 << (s.failures - FREE_FAILURES - 1).min(6);
            s.penalised_until = Some(now + Duration::from_secs(secs).min(MAX_PENALTY));
        }
    }

    /// `ip` authenticated (or finished a handshake on a server without a key): its
    /// failures are forgiven.
    pub fn succeeded(&mut self, ip: IpAddr) {
        let ip = source(ip, self.cfg.ipv6_prefix);
        if let Some(s) = self.sources.get_mut(&ip) {
            s.failures = 0;
            s.penalised_until = None;
        }
    }

    /// Whether `ip` may start another test; counted until [`Gate::end_test`].
    pub fn start_test(&mut self, ip: IpAddr) -> bool {
        let ip = source(ip, self.cfg.ipv6_prefix);
        let s = self.sources.entry(ip).or_default();
        if s.tests >= self.cfg.per_source_tests {
            return false;
        }
        s.tests += 1;
        true
    }

    /// A test of `ip` ended.
    pub fn end_test(&mut self, ip: IpAddr) {
        let ip = source(ip, self.cfg.ipv6_prefix);
        if let Some(s) = self.sources.get_mut(&ip) {
            s.tests = s.tests.saturating_sub(1);
        }
    }

    /// `ip` busy-polled for `spent` up to `now`: whether it may go on spinning (its
    /// budget is not used up).
    pub fn charge_spin(&mut self, ip: IpAddr, spent: Duration, now: Duration) -> bool {
        let ip = source(ip, self.cfg.ipv6_prefix);
        let s = self.sources.entry(ip).or_default();
        let left = s
            .spin_budget(now, self.cfg.spin_burst)
            .saturating_sub(spent);
        s.spin_left = Some((left, now));
        !left.is_zero()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, n])
    }

    fn gate(per: usize, max: usize) -> Gate {
        Gate::new(GateConfig {
            per_source_handshakes: per,
            max_handshakes: max,
            per_source_tests: 2,
            spin_burst: Duration::from_secs(60),
            ipv6_prefix: 128,
        })
    }

    fn yes(a: Admit) -> (HandshakeId, Option<HandshakeId>) {
        match a {
            Admit::Yes { id, evict } => (id, evict),
            other => panic!("refused: {other:?}"),
        }
    }

    #[test]
    fn one_address_gets_its_share_and_no_more() {
        let t0 = Duration::from_secs(1_000);
        let mut g = gate(4, 64);
        let ids: Vec<_> = (0..4).map(|_| yes(g.admit(ip(2), t0)).0).collect();
        assert_eq!(g.admit(ip(2), t0), Admit::Full);
        // Another address is not affected.
        yes(g.admit(ip(1), t0));
        // A finished handshake frees its place.
        assert!(g.handshake_done(ip(2), ids[0]));
        assert!(!g.handshake_done(ip(2), ids[0]));
        yes(g.admit(ip(2), t0));
        assert_eq!(g.open_handshakes(), 5);
    }

    #[test]
    fn when_all_are_taken_the_biggest_holder_gives_up_its_oldest() {
        let t0 = Duration::from_secs(1_000);
        let mut g = gate(8, 8);
        // Address 2 holds 6 (the first the oldest), address 3 holds 2.
        let mut of2 = Vec::new();
        for k in 0..6 {
            of2.push(yes(g.admit(ip(2), t0 + Duration::from_millis(k))).0);
        }
        for _ in 0..2 {
            yes(g.admit(ip(3), t0));
        }
        // A newcomer evicts address 2's oldest.
        let (_, evict) = yes(g.admit(ip(1), t0));
        assert_eq!(evict, Some(of2[0]));
        assert!(!g.handshake_done(ip(2), of2[0]), "already gone");
        assert_eq!(g.open_handshakes(), 8);
        // Address 2 itself cannot take from the others: it holds the most.
        assert_eq!(g.admit(ip(2), t0), Admit::Full);
    }

    /// Many honest clients on one busy address, their handshakes a few milliseconds old,
    /// and silent attackers from other addresses, theirs seconds old: a newcomer evicts
    /// the oldest (an attacker's), not one of the busiest address's young handshakes.
    #[test]
    fn when_all_are_taken_the_oldest_handshake_of_a_bigger_holder_goes() {
        let t0 = Duration::from_secs(1_000);
        let mut g = gate(16, 12);
        let mut attackers = Vec::new();
        for a in 10..14 {
            for _ in 0..2 {
                attackers.push(yes(g.admit(ip(a), t0)).0);
            }
        }
        let later = t0 + Duration::from_secs(5);
        for k in 0..4 {
            yes(g.admit(ip(1), later + Duration::from_millis(k)));
        }
        // Address 1 holds the most (4), but its handshakes are young.
        let (_, evict) = yes(g.admit(ip(20), later + Duration::from_millis(5)));
        assert_eq!(evict, Some(attackers[0]));
        assert!(!g.handshake_done(ip(10), attackers[0]), "already gone");
    }

    #[test]
    fn failures_are_penalised_longer_each_time_until_forgiven() {
        let t0 = Duration::from_secs(1_000);
        let mut g = gate(4, 64);
        let a = ip(9);
        // Two mistakes are free.
        for _ in 0..FREE_FAILURES {
            g.failed(a, t0);
            let (id, _) = yes(g.admit(a, t0));
            g.handshake_done(a, id);
        }
        let mut at = t0;
        for expect in [1u64, 2, 4, 8, 16, 32, 64, 64] {
            g.failed(a, at);
            assert_eq!(
                g.admit(a, at),
                Admit::Penalised(Duration::from_secs(expect))
            );
            // Just before the end still refused, at the end let in.
            let end = at + Duration::from_secs(expect);
            assert!(matches!(
                g.admit(a, end - Duration::from_millis(1)),
                Admit::Penalised(_)
            ));
            let (id, _) = yes(g.admit(a, end));
            g.handshake_done(a, id);
            at = end;
        }
        g.succeeded(a);
        yes(g.admit(a, at));
        // Other addresses were never penalised.
        yes(g.admit(ip(1), t0));
    }

    /// Two IPv6 addresses of one /64 are two clients by default (one host cannot lock out
    /// its LAN); with a /64 prefix configured they count as one.
    #[test]
    fn an_ipv6_client_is_counted_by_its_address_or_a_configured_prefix() {
        let a = |last: u16| IpAddr::from([0x2001, 0xdb8, 0, 1, 0, 0, 0, last]);
        let mut g = gate(4, 64);
        for _ in 0..4 {
            yes(g.admit(a(1), Duration::ZERO));
        }
        assert_eq!(g.admit(a(1), Duration::ZERO), Admit::Full);
        yes(g.admit(a(2), Duration::ZERO));
        let mut by_64 = Gate::new(GateConfig {
            ipv6_prefix: 64,
            ..GateConfig::default()
        });
        for k in 0..4 {
            yes(by_64.admit(a(k), Duration::ZERO));
        }
        assert_eq!(by_64.admit(a(99), Duration::ZERO), Admit::Full);
        yes(by_64.admit(
            IpAddr::from([0x2001, 0xdb8, 0, 2, 0, 0, 0, 1]),
            Duration::ZERO,
        ));
        // An IPv4 client on a dual-stack socket is its IPv4 address.
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert!(g.start_test(mapped) && g.start_test(ip(1)));
        assert!(!g.start_test(mapped), "the same client, two tests already");
    }

    #[test]
    fn tests_per_address_are_capped() {
        let mut g = gate(4, 64);
        assert!(g.start_test(ip(1)) && g.start_test(ip(1)));
        assert!(!g.start_test(ip(1)));
        assert!(g.start_test(ip(2)));
        g.end_test(ip(1));
        assert!(g.start_test(ip(1)));
    }

    #[test]
    fn spinning_is_charged_per_address_and_given_back_slowly() {
        let t0 = Duration::from_secs(1_000);
        let mut g = gate(4, 64);
        let s = Duration::from_secs;
        // Two sessions of one address spin 25 s each: 50 of 60 s used, 10 s left.
        assert!(g.charge_spin(ip(1), s(25), t0));
        assert!(g.charge_spin(ip(1), s(25), t0));
        // Another address has its own budget.
        assert!(g.charge_spin(ip(2), s(59), t0));
        // 20 s later a quarter of that came back: 15 s left, 16 s is too much.
        let t1 = t0 + s(20);
        assert!(g.charge_spin(ip(1), s(14), t1));
        assert!(!g.charge_spin(ip(1), s(2), t1), "spent");
        assert!(!g.charge_spin(ip(1), Duration::ZERO, t1), "stays spent");
        // A spent address is not forgotten while its budget refills ...
        assert!(!g.sources[&ip(1)].idle(t1 + s(100), s(60)));
        // ... and is whole again after 4 x 60 s.
        assert!(g.sources[&ip(1)].idle(t1 + s(240), s(60)));
        assert!(g.charge_spin(ip(1), s(59), t1 + s(240)));
    }

    #[test]
    fn forgotten_addresses_keep_the_map_small() {
        let t0 = Duration::from_secs(1_000);
        let mut g = gate(4, 2);
        for n in 0..=255u8 {
            for m in 0..4u8 {
                let a = IpAddr::from([10, m, 0, n]);
                let (id, _) = yes(g.admit(a, t0));
                g.handshake_done(a, id);
            }
        }
        assert!(g.sources.len() <= 4 * 2 + 1, "{}", g.sources.len());
    }
}
