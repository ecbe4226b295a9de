//! Probes of a path through a server's echo socket: one datagram of a given size with the
//! don't-fragment bit set, answered or not (a path MTU search, RFC 4821), and a train of
//! datagrams sent back to back whose answers' arrival times show the bottleneck's rate
//! (RFC 6349 §3.2.2). The socket is connected to the echo socket (see
//! `control::Session::with_echo`).
//!
//! What it does not do: decide sizes or rates. `method::rfc6349` does, from what these
//! return.

use std::io;
use std::net::UdpSocket;
use std::time::Duration;

use wire::testhdr::{self, TestFlags};

use crate::clock::RealClock;
use crate::sys::{self, RecvBatch};
use crate::udp::{self, is_timeout};
use model::clock::Clock;

/// IP and UDP header bytes of a datagram over IPv6 or IPv4.
fn ip_udp_header(ipv6: bool) -> u32 {
    if ipv6 {
        48
    } else {
        28
    }
}

/// An echo request of `ip_len` bytes of IP packet after `header` bytes of IP and UDP
/// headers (at least the test header as payload), with sequence number `seq`.
fn request(ip_len: u32, header: u32, seq: u64) -> Vec<u8> {
    let payload = usize::try_from(ip_len.saturating_sub(header)).unwrap_or(usize::MAX);
    let mut buf = udp::ping_buffer(payload);
    testhdr::write_seq_ts(&mut buf, seq, 0);
    buf
}

/// Whether an error says the datagram was too large for the path (a local `EMSGSIZE`, or
/// an ICMP "fragmentation needed" the kernel reported on the connected socket).
fn too_large(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EMSGSIZE)
}

/// Sends one echo request of `ip_len` bytes (IP packet) with the don't-fragment bit set
/// and waits up to `timeout` for its answer. `Ok(true)`: it came back, so the path carries
/// that size both ways; `Ok(false)`: it did not (lost, refused as too large here, or an
/// ICMP error came instead). Other answers that arrive meanwhile are ignored.
///
/// # Errors
/// The socket failed otherwise.
pub fn pmtu_probe(sock: &UdpSocket, ip_len: u32, seq: u64, timeout: Duration) -> io::Result<bool> {
    let ipv6 = sock.peer_addr()?.is_ipv6();
    sys::set_pmtu_probe(sock, ipv6)?;
    let buf = request(ip_len, ip_udp_header(ipv6), seq);
    match sock.send(&buf) {
        Ok(_) => {}
        Err(e) if too_large(&e) => return Ok(false),
        Err(e) => return Err(e),
    }
    let clock = RealClock::new();
    let t0 = clock.mono();
    let mut rx = vec![0u8; buf.len().max(2048)];
    loop {
        let left = timeout.saturating_sub(clock.mono().saturating_sub(t0));
        if left.is_zero() {
            return Ok(false);
        }
        sock.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        match sock.recv(&mut rx) {
            Ok(n) => {
                let answered = testhdr::parse_fast(&rx[..n]).is_some_and(|h| {
                    h.seq == seq && h.flags.contains(TestFlags::ECHO_REPLY) && n == buf.len()
                });
                if answered {
                    return Ok(true);
                }
            }
            Err(e) if is_timeout(&e) => {}
            // An ICMP error for this or an earlier probe: this one is not answered, but
            // its answer may still come if the error was for an earlier one.
            Err(e) if too_large(&e) || e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// What a train's answers showed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrainArrivals {
    /// Requests sent.
    pub sent: u32,
    /// Each answer as (arrival time from the first answer's, IP packet bytes), in arrival
    /// order: what `method::rfc6349::bottleneck_bps` takes.
    pub arrivals: Vec<(Duration, u32)>,
}

/// Sends `count` echo requests of `ip_len` bytes (IP packet) back to back, faster than
/// most paths carry them, and records when each answer arrived; it waits for answers
/// until `quiet` passes without one (or `limit` in all). Sequence numbers start at
/// `first_seq`; answers to anything else are ignored. The arrival times are the kernel's
/// receive stamps when the socket asks for them (`Session::with_echo`'s does), and the
/// receive buffer is raised to hold the whole train's answers, so reading them late
/// changes none.
///
/// # Errors
/// The socket failed.
pub fn train(
    sock: &UdpSocket,
    ip_len: u32,
    count: u32,
    first_seq: u64,
    quiet: Duration,
    limit: Duration,
) -> io::Result<TrainArrivals> {
    let header = ip_udp_header(sock.peer_addr()?.is_ipv6());
    let mut buf = request(ip_len, header, first_seq);
    let ip_bytes = u32::try_from(buf.len()).unwrap_or(u32::MAX) + header;
    let want = buf
        .len()
        .saturating_add(1024)
        .saturating_mul(count as usize * 2);
    let _ = sys::force_buffer_size(sock, true, want);
    let clock = RealClock::new();
    let mut out = TrainArrivals::default();
    for i in 0..u64::from(count) {
        testhdr::write_seq_ts(&mut buf, first_seq + i, clock.wall().0);
        match sock.send(&buf) {
            Ok(_) => out.sent += 1,
            // A full send queue: this request is not sent (`sent` says so), the rest of
            // the train waits a moment.
            Err(e) if is_timeout(&e) || e.raw_os_error() == Some(libc::ENOBUFS) => {
                std::thread::yield_now();
            }
            Err(e) => return Err(e),
        }
    }
    let range = first_seq..first_seq + u64::from(count);
    let mut batch = RecvBatch::new(32, buf.len().max(2048));
    sock.set_read_timeout(Some(Duration::from_millis(5)))?;
    let t0 = clock.mono();
    let mut last = t0;
    let mut first: Option<u64> = None;
    while clock.mono().saturating_sub(t0) < limit
        && clock.mono().saturating_sub(last) < quiet
        && out.arrivals.len() < out.sent as usize
    {
        let n = match batch.recv(sock, false) {
            Ok(n) => n,
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if too_large(&e) || e.kind() == io::ErrorKind::ConnectionRefused => continue,
            Err(e) => return Err(e),
        };
        for i in 0..n {
            let Some((data, ts)) = batch.get(i) else {
                continue;
            };
            let ok = testhdr::parse_fast(data)
                .is_some_and(|h| range.contains(&h.seq) && h.flags.contains(TestFlags::ECHO_REPLY));
            if !ok {
                continue;
            }
            last = clock.mono();
            let at = ts.unwrap_or_else(|| clock.wall()).0;
            let from = *first.get_or_insert(at);
            out.arrivals
                .push((Duration::from_nanos(at.saturating_sub(from)), ip_bytes));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod test {
    use super::*;
    use model::stop::Stop;

    /// An echo socket on loopback answering `peer` with up to `max_len` bytes, and a
    /// socket connected to it; the echo ends with the returned stop.
    fn echo(max_len: usize) -> (UdpSocket, Stop, std::thread::JoinHandle<()>) {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client.connect(server.local_addr().unwrap()).unwrap();
        let stop = Stop::new();
        let s = stop.clone();
        let peer = client.local_addr().unwrap().ip();
        let h = std::thread::spawn(move || {
            crate::udp::run_echo(&server, peer, max_len, None, Duration::from_secs(10), &s);
        });
        (client, stop, h)
    }

    #[test]
    fn a_probe_counts_only_its_own_whole_answer() {
        let (sock, stop, h) = echo(1400 - 28);
        let t = Duration::from_millis(300);
        assert!(pmtu_probe(&sock, 1400, 7, t).unwrap());
        // The echo cuts a larger probe to its 1372 bytes: not an answer of that size.
        assert!(!pmtu_probe(&sock, 1401, 8, t).unwrap());
        assert!(pmtu_probe(&sock, 576, 9, t).unwrap());
        stop.raise();
        h.join().unwrap();
    }

    #[test]
    fn a_train_reports_each_answer_with_its_size_in_order() {
        let (sock, stop, h) = echo(1500);
        let quiet = Duration::from_millis(200);
        let t = train(&sock, 1500, 50, 1000, quiet, Duration::from_secs(5)).unwrap();
        assert_eq!(t.sent, 50);
        // Loopback may drop some under the burst; what came back is counted as it came.
        assert!(t.arrivals.len() >= 2 && t.arrivals.len() <= 50, "{t:?}");
        assert!(t.arrivals.iter().all(|a| a.1 == 1500));
        assert_eq!(t.arrivals[0].0, Duration::ZERO);
        assert!(t.arrivals.windows(2).all(|w| w[1].0 >= w[0].0), "{t:?}");
        stop.raise();
        h.join().unwrap();
    }
}
