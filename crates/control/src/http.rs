//! The little HTTP/1.1 the metrics endpoints need: read one request (line, headers, the
//! query decoded), answer it, close.
//!
//! What it does: [`serve`] accepts on a listener until told to stop, reads each request
//! within [`REQUEST_DEADLINE`] and [`MAX_REQUEST`] bytes on its own thread, hands it to a
//! handler and writes the handler's [`Response`] with `Connection: close`. At most
//! `max_open` connections are served at once; when all are open, the oldest that has not
//! sent its request yet is closed for a newcomer (idle connections cannot hold every
//! place), and only when every one is being answered is one more answered 503 at once,
//! so a slow client or a long probe never blocks the scrapes behind it. The deadline runs on
//! the real clock, read through [`Clock`]; the accept loop waits with [`crate::wait`].
//!
//! What it does not: keep connections alive, read request bodies, chunk, or speak TLS.
//! Prometheus and curl need none of these for `GET`.

use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::clock::RealClock;
use model::clock::Clock;
use model::stop::Stop;

use model::wait::{Poll, Wait};

/// Longest a request may take to arrive.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// Largest request (line and headers) read.
pub const MAX_REQUEST: usize = 8 * 1024;

/// One request: its method, path, decoded query pairs and headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path without the query, still percent-encoded (`/probe`).
    pub path: String,
    /// The query's pairs in order, decoded (`+` is a space).
    pub query: Vec<(String, String)>,
    /// Header names (lower case) and values.
    pub headers: Vec<(String, String)>,
}

/// Why bytes are not a request this side reads (the 400 answer says it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The first line is not three words.
    #[error("not an HTTP request line")]
    NotARequestLine,
    /// Three words, but not a method, an absolute path and HTTP/1.x.
    #[error("not an HTTP/1 request line")]
    NotHttp1,
}

impl Request {
    /// Reads a request's line and headers.
    ///
    /// # Errors
    /// Not a request line of the form `METHOD TARGET HTTP/1.x`.
    pub fn parse(bytes: &[u8]) -> Result<Request, RequestError> {
        let text = String::from_utf8_lossy(bytes);
        let mut lines = text.split("\r\n");
        let line = lines.next().unwrap_or_default();
        let mut parts = line.split(' ');
        let (Some(method), Some(target), Some(version), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(RequestError::NotARequestLine);
        };
        if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
            return Err(RequestError::NotHttp1);
        }
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let headers = lines
            .take_while(|l| !l.is_empty())
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        Ok(Request {
            method: method.to_owned(),
            path: path.to_owned(),
            query: form_urlencoded::parse(query.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
            headers,
        })
    }

    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An answer: status, content type and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code (200, 400, ...).
    pub status: u16,
    /// Its `Content-Type`.
    pub content_type: String,
    /// The body.
    pub body: String,
}

impl Response {
    /// A plain-text answer (`text/plain; charset=utf-8`).
    pub fn text(status: u16, body: impl Into<String>) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8".into(),
            body: body.into(),
        }
    }

    fn reason(&self) -> &'static str {
        match self.status {
            200 => "OK",
            400 => "Bad Request",
            404 => "Not Found",
            405 => "Method Not Allowed",
            408 => "Request Timeout",
            431 => "Request Header Fields Too Large",
            500 => "Internal Server Error",
            503 => "Service Unavailable",
            _ => "",
        }
    }

    /// Writes the response with `Connection: close` (errors are the client's loss).
    pub fn write_to(&self, s: &mut TcpStream) {
        let head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.status,
            self.reason(),
            self.content_type,
            self.body.len()
        );
        let _ = s.write_all(head.as_bytes());
        let _ = s.write_all(self.body.as_bytes());
    }
}

/// A request's handler.
pub type Handler = dyn Fn(&Request) -> Response + Send + Sync;

/// Reads one request from `s` within the deadline on `clock`: its bytes up to the blank
/// line, or the answer when there is none.
fn read_request(s: &mut TcpStream, clock: &dyn Clock) -> Result<Vec<u8>, Response> {
    let until = clock.mono() + REQUEST_DEADLINE;
    let late = || Response::text(408, "no whole request within 2 s\n");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() >= MAX_REQUEST {
            return Err(Response::text(
                431,
                format!("the request's line and headers exceed {MAX_REQUEST} bytes\n"),
            ));
        }
        let left = until.checked_sub(clock.mono()).ok_or_else(late)?;
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .map_err(|_| late())?;
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => return Err(late()),
        }
    }
    Ok(buf)
}

/// Answers one connection; `got_request` is called once its request has arrived.
fn answer(mut s: TcpStream, handler: &Handler, clock: &dyn Clock, got_request: impl FnOnce()) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_write_timeout(Some(REQUEST_DEADLINE));
    let response = match read_request(&mut s, clock) {
        Err(r) => r,
        Ok(bytes) => match Request::parse(&bytes) {
            Ok(req) => {
                got_request();
                handler(&req)
            }
            Err(why) => Response::text(400, format!("{why}\n")),
        },
    };
    response.write_to(&mut s);
}

/// Answers 503 without a thread and without blocking the accept loop: the answer fits
/// the socket's buffer; what the client sent already is read first, so that closing does
/// not reset the connection before the client reads the answer.
fn busy(mut s: TcpStream, max_open: usize) {
    let _ = s.set_nonblocking(true);
    let mut sink = [0u8; 1024];
    for _ in 0..8 {
        if !matches!(s.read(&mut sink), Ok(n) if n > 0) {
            break;
        }
    }
    Response::text(503, format!("busy: {max_open} requests open\n")).write_to(&mut s);
    let _ = s.shutdown(std::net::Shutdown::Write);
}

/// The connections open now: which still wait for their request (and may be closed for
/// a newcomer) and which are being answered.
#[derive(Default)]
struct Table {
    next: u64,
    open: Vec<Open>,
}

struct Open {
    id: u64,
    /// Its client's address (canonical).
    ip: IpAddr,
    /// Still reading its request: no request yet, so closing it loses nothing asked.
    reading: bool,
    /// A handle to close it with.
    stream: Option<TcpStream>,
}

impl Open {
    /// Bytes of its request wait in the socket, not yet read by its thread (on a busy
    /// machine the thread may not have run yet): it is not idle. False for one its client
    /// closed, which may go first.
    fn has_spoken(&self) -> bool {
        let Some(s) = &self.stream else {
            return false;
        };
        let mut one = [std::mem::MaybeUninit::<u8>::uninit()];
        // Look without taking, and without waiting.
        matches!(
            socket2::SockRef::from(s).recv_with_flags(&mut one, libc::MSG_PEEK | libc::MSG_DONTWAIT),
            Ok(n) if n > 0
        )
    }
}

impl Table {
    /// Room for a newcomer from `ip` among at most `max_open`: when all are taken, a
    /// connection that has not sent its request yet is closed for it (idle connections
    /// cannot hold every place): the oldest of the address holding the most, so that idle
    /// connections from one address cannot push out a scraper from another, and never one
    /// whose request has arrived ([`Open::has_spoken`]); `None` when every open connection
    /// is being answered or has spoken.
    fn admit(&mut self, max_open: usize, stream: &TcpStream, ip: IpAddr) -> Option<u64> {
        if self.open.len() >= max_open {
            let held = |ip: IpAddr| self.open.iter().filter(|o| o.ip == ip).count();
            let victim = self
                .open
                .iter()
                .enumerate()
                .filter(|(_, o)| o.reading && !o.has_spoken())
                .max_by_key(|(i, o)| (held(o.ip), std::cmp::Reverse(*i)))
                .map(|(i, _)| i)?;
            let o = self.open.remove(victim);
            if let Some(s) = o.stream {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
        }
        let id = self.next;
        self.next += 1;
        self.open.push(Open {
            id,
            ip: ip.to_canonical(),
            reading: true,
            stream: stream.try_clone().ok(),
        });
        Some(id)
    }

    /// Connection `id` has its request: it is answered, and no longer closed for others.
    fn answering(&mut self, id: u64) {
        if let Some(o) = self.open.iter_mut().find(|o| o.id == id) {
            o.reading = false;
        }
    }

    fn close(&mut self, id: u64) {
        self.open.retain(|o| o.id != id);
    }
}

/// Takes its connection out of the table when it ends.
struct Leave(Arc<Mutex<Table>>, u64);

impl Drop for Leave {
    fn drop(&mut self) {
        if let Ok(mut t) = self.0.lock() {
            t.close(self.1);
        }
    }
}

/// Serves `listener` until `stop` is raised (checked every 50 ms): each connection on its
/// own thread, at most `max_open` at once. When all are open, the oldest connection that
/// has not sent its request yet is closed for the newcomer; only when every open one is
/// being answered is the newcomer answered 503 at once and closed.
///
/// # Errors
/// The listener cannot be made non-blocking.
pub fn serve(
    listener: TcpListener,
    stop: &Stop,
    max_open: usize,
    handler: Arc<Handler>,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let table = Arc::new(Mutex::new(Table::default()));
    let clock = RealClock::new();
    Wait::on(&RealClock::new())
        .or_stop(stop)
        .poll(|| -> Poll<()> {
            match listener.accept() {
                Ok((stream, peer)) => {
                    let admitted = table
                        .lock()
                        .ok()
                        .and_then(|mut t| t.admit(max_open, &stream, peer.ip()));
                    let Some(id) = admitted else {
                        busy(stream, max_open);
                        return Poll::Again;
                    };
                    let leave = Leave(Arc::clone(&table), id);
                    let handler = Arc::clone(&handler);
                    let table = Arc::clone(&table);
                    let spawned =
                        std::thread::Builder::new()
                            .name("wb-http".into())
                            .spawn(move || {
                                let _leave = leave;
                                answer(stream, handler.as_ref(), &clock, || {
                                    if let Ok(mut t) = table.lock() {
                                        t.answering(id);
                                    }
                                });
                            });
                    if let Err(e) = spawned {
                        tracing::warn!("http: no thread for a connection: {e}");
                    }
                    Poll::Again
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    Poll::Wait(Duration::from_millis(50))
                }
                Err(e) => {
                    tracing::warn!("http accept: {e}");
                    Poll::Wait(Duration::from_millis(50))
                }
            }
        });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_read_with_its_query_decoded() {
        let r = Request::parse(
            b"GET /probe?target=198.18.0.2%3A5301&kind=udp&rate=100M&x=a+b HTTP/1.1\r\nAccept: text/plain\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/probe");
        assert_eq!(
            r.query,
            [
                ("target", "198.18.0.2:5301"),
                ("kind", "udp"),
                ("rate", "100M"),
                ("x", "a b")
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
        assert_eq!(r.header("x-prometheus-scrape-timeout-seconds"), Some("10"));
        assert_eq!(r.header("ACCEPT"), Some("text/plain"));
        assert_eq!(r.header("host"), None);
    }

    #[test]
    fn what_is_not_a_request_line_is_refused() {
        for bad in [
            &b"\x00\x01garbage\r\n\r\n"[..],
            b"GET /metrics\r\n\r\n",
            b"GET metrics HTTP/1.1\r\n\r\n",
            b"GET /a b HTTP/1.1\r\n\r\n",
            b"GET /metrics SPDY/3\r\n\r\n",
            b"",
        ] {
            assert!(Request::parse(bad).is_err(), "{bad:?}");
        }
        // The 400 answer's text.
        let e = |b: &[u8]| Request::parse(b).err().map(|e| e.to_string());
        assert_eq!(
            e(b"GET /metrics\r\n\r\n").as_deref(),
            Some("not an HTTP request line")
        );
        assert_eq!(
            e(b"GET /metrics SPDY/3\r\n\r\n").as_deref(),
            Some("not an HTTP/1 request line")
        );
    }

    #[test]
    fn connections_beyond_the_cap_are_answered_busy_and_the_rest_served() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Stop::new();
        // The handler holds its connection until released.
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let release_rx = std::sync::Mutex::new(release_rx);
        let (held_tx, held_rx) = std::sync::mpsc::channel::<()>();
        let held_tx = std::sync::Mutex::new(held_tx);
        let handler: Arc<Handler> = Arc::new(move |r: &Request| {
            if r.path == "/hold" {
                let _ = held_tx.lock().unwrap().send(());
                let _ = release_rx.lock().unwrap().recv();
            }
            Response::text(200, format!("{}\n", r.path))
        });
        let s2 = stop.clone();
        let t = std::thread::spawn(move || serve(listener, &s2, 1, handler));
        let send = |path: &str| {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(format!("GET {path} HTTP/1.1\r\n\r\n").as_bytes())
                .unwrap();
            c
        };
        let read = |mut c: TcpStream| {
            let mut out = String::new();
            let _ = c.read_to_string(&mut out);
            out
        };
        let held = send("/hold");
        // Once the held request is being answered, its place cannot be taken: a second
        // request is busy (before, it would have closed the idle connection instead).
        held_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("the held request is answered");
        let clock = RealClock::new();
        let answered = |path: &str, status: &str| {
            let mut last = String::new();
            let got = Wait::on(&clock).at_most(Duration::from_secs(5)).poll(|| {
                last = read(send(path));
                if last.starts_with(status) {
                    Poll::Ready(())
                } else {
                    Poll::Wait(Duration::from_millis(20))
                }
            });
            assert!(
                got.ready().is_some(),
                "{path} never answered {status}: {last}"
            );
            last
        };
        answered("/other", "HTTP/1.1 503");
        release_tx.send(()).unwrap();
        assert!(read(held).ends_with("/hold\n"));
        let out = answered("/after", "HTTP/1.1 200");
        assert!(out.ends_with("/after\n"), "{out}");
        stop.raise();
        t.join().unwrap().unwrap();
    }

    /// A connection to `listener`: the client's end and the server's.
    fn pair(listener: &TcpListener) -> (TcpStream, TcpStream) {
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (client, server)
    }

    /// When every place is open, a newcomer closes the oldest connection that has no
    /// request yet; one being answered is never closed, and with all being answered the
    /// newcomer is turned away.
    #[test]
    fn a_newcomer_takes_the_place_of_the_oldest_idle_connection() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let pair = || pair(&listener);
        let closed = |mut c: &TcpStream| {
            c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let mut b = [0u8; 8];
            matches!(c.read(&mut b), Ok(0))
        };
        let one = IpAddr::from([127, 0, 0, 1]);
        let mut t = Table::default();
        let (ca, a) = pair();
        let (cb, b) = pair();
        let ida = t.admit(2, &a, one).unwrap();
        let idb = t.admit(2, &b, one).unwrap();
        assert_ne!(ida, idb);
        t.answering(idb);
        let (_cc, c) = pair();
        let idc = t.admit(2, &c, one).unwrap();
        assert!(closed(&ca), "the oldest idle connection is closed");
        t.answering(idc);
        let (_cd, d) = pair();
        assert_eq!(t.admit(2, &d, one), None, "both are being answered");
        t.close(idb);
        assert!(t.admit(2, &d, one).is_some());
        drop(cb);
    }

    /// A scraper's connection, not yet read, is not the one closed when idle connections
    /// from another address come in, though it is older than theirs: the address holding
    /// the most gives up its oldest.
    #[test]
    fn idle_connections_from_one_address_do_not_push_out_another() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let pair = || pair(&listener);
        let (scraper, attacker) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]));
        let mut t = Table::default();
        let (_cs, s) = pair();
        let ids = t.admit(3, &s, scraper).unwrap();
        let mut held = Vec::new();
        for _ in 0..5 {
            let (c, sv) = pair();
            t.admit(3, &sv, attacker).unwrap();
            held.push((c, sv));
        }
        assert!(
            t.open.iter().any(|o| o.id == ids),
            "the scraper's connection is still open"
        );
        assert_eq!(t.open.len(), 3);
    }

    /// A connection whose request has arrived but whose thread has not read it yet (a
    /// busy machine) is not closed for a newcomer, though it is the oldest of the address
    /// holding the most: it has spoken. Idle connections from the same address go instead.
    #[test]
    fn a_connection_whose_request_arrived_is_not_closed_before_it_is_read() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let pair = || pair(&listener);
        let one = IpAddr::from([127, 0, 0, 1]);
        let mut t = Table::default();
        let (mut cs, s) = pair();
        cs.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
        let ids = t.admit(2, &s, one).unwrap();
        let mut held = Vec::new();
        // Wait until the bytes are in the server side's buffer.
        let mut b = [0u8; 1];
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert_eq!(s.peek(&mut b).unwrap(), 1);
        for _ in 0..5 {
            let (c, sv) = pair();
            t.admit(2, &sv, one).unwrap();
            held.push((c, sv));
        }
        assert!(
            t.open.iter().any(|o| o.id == ids),
            "the connection with its request waiting was closed"
        );
        assert_eq!(t.open.len(), 2);
    }
}
