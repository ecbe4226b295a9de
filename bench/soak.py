#!/usr/bin/env python3
"""Soak: one server, an hour of mixed clients, hostile connections and attackers, its resources logged.

Starts `wirebench server` on 127.0.0.1 (with `--metrics` on another loopback port) and runs
CLIENTS client loops against it for --secs seconds (default 3600): TCP and UDP throughput
tests, ping-pong latency (some busy-polling, charged to the address's spin budget), stock
iperf3 clients (when iperf3 is installed), tests stopped half-way with Ctrl-C (SIGINT),
killed (SIGKILL) or frozen (SIGSTOP for 8 s, then killed: the server's idle timeout ends
their tests), and reconnects. Beside them a hostile loop opens connections from 127.0.0.2
that send garbage, an oversized length, a hello and then nothing, or nothing at all.

With --attackers (all by default; `none`, or a comma-separated list of the names below),
attackers from their own loopback addresses run beside the clients, each bounded in
connections and time and counting what it did and what the server did to it:

  control  control-port starvation: 48 silent connections from 12 addresses
           (127.0.1.1-12, 4 each), each closed and reopened every 9.5 s, just inside the
           10-s handshake timeout;
  drip     iperf3-port drip: 16 connections (127.0.1.21-24) sending an iperf3 client's
           cookie and parameters one byte every 5 s;
  drip-params  the same from 127.0.1.25-28, the cookie sent at once and only the
           parameters dripped (what a deadline on the cookie alone would not end);
  flood    iperf3-port thread flood: bursts of up to 400 silent connections (127.0.1.31-40,
           at most 500 open at once), each burst held 3 s, then closed, 5 s apart;
  reflect  UDP reflection: an iperf3 control connection from 127.0.0.1 asks for a reverse
           UDP test (`-u -R`) and its UDP hello is sent from 127.0.0.5; every datagram that
           reaches 127.0.0.5 is counted (must be 0); then the hello from 127.0.0.1 itself
           must be answered; one attempt every 10 s;
  metrics  16 idle connections (127.0.1.41-44) held open to the metrics port, each
           reopened when the server closes it (at most once a second), and a scraper
           (127.0.0.1) that scrapes every 5 s and counts answers other than 200 (must be 0).

(Foreign or duplicate UDP datagrams sprayed at running tests' ports are left out: their
ports are not known from outside; the UDP receiver's tests in crates/engine cover them.)

Every --every seconds (default 60) it logs the server's resident memory, open file
descriptors and threads (and keeps their maxima from a sample every second); at the end
it prints the first and last samples, the maxima, how the clients' tests ended and whether
every honest test completed (one that was not stopped on purpose and did not end with
success, or was turned away as busy, did not), each attacker's counters, and the server's
own counters from its last scrape. It exits non-zero when the server died, an honest test
did not complete, a datagram reached the foreign address or a scrape was not answered 200.
Not part of CI: it runs for an hour.

    python3 bench/soak.py [--wirebench target/release/wirebench] [--secs 3600] [--clients 16]
                          [--attackers all|none|control,drip,drip-params,flood,reflect,metrics]

Only loopback addresses are used (127.0.0.0/8 is all local on Linux). A server that leaks
shows as memory, descriptors or threads that keep growing from one sample to the next once
the load is steady; compare a run with `--attackers none` to see what the attackers cost.
"""

import argparse
import collections
import json
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

# iperf3's control states (its iperf_api.h), UDP hello and answer.
PARAM_EXCHANGE = 9
CREATE_STREAMS = 10
TEST_START = 1
CLIENT_TERMINATE = 12
ACCESS_DENIED = -1
SERVER_ERROR = -2
UDP_HELLO = b"9876"
UDP_REPLY = b"6789"
COOKIE_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"

# The attackers' bounds.
CONTROL_ADDRS, CONTROL_PER_ADDR, CONTROL_REOPEN_S = 12, 4, 9.5
DRIP_CONNS, DRIP_EVERY_S = 16, 5.0
FLOOD_BURST, FLOOD_MAX_OPEN, FLOOD_HOLD_S, FLOOD_PAUSE_S = 400, 500, 3.0, 5.0
REFLECT_EVERY_S, FOREIGN = 10.0, "127.0.0.5"
METRICS_IDLE, SCRAPE_EVERY_S = 16, 5.0


def status(pid):
    """(RSS KiB, open fds, threads) of process pid."""
    rss = threads = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss, fds, threads


def client_loop(wb, port, iperf3_port, running, seed, outcomes, lock):
    rng = random.Random(seed)
    kinds = ["tcp", "udp", "latency", "latency-spin", "tcp-R", "udp-bidir", "sigint", "sigkill", "sigstop"]
    if iperf3_port:
        kinds += ["iperf3", "iperf3-R"]
    while running():
        kind = rng.choice(kinds)
        if kind == "latency":
            argv = [wb, "latency", "127.0.0.1", "-p", str(port), "-t", "2", "-l", "64,1472"]
        elif kind == "latency-spin":
            argv = [wb, "latency", "127.0.0.1", "-p", str(port), "-t", "2", "--spin"]
        elif kind.startswith("iperf3"):
            argv = ["iperf3", "-c", "127.0.0.1", "-p", str(iperf3_port), "-t", "3", "-b", "50M"]
            if kind == "iperf3-R":
                argv.append("-R")
        elif kind == "udp":
            argv = [wb, "client", "127.0.0.1", "-p", str(port), "-u", "-b", "20M", "-t", "3"]
        elif kind == "udp-bidir":
            argv = [wb, "client", "127.0.0.1", "-p", str(port), "-u", "-b", "5M", "--bidir", "-t", "3"]
        elif kind == "tcp-R":
            argv = [wb, "client", "127.0.0.1", "-p", str(port), "-b", "50M", "-R", "-t", "3"]
        else:
            argv = [wb, "client", "127.0.0.1", "-p", str(port), "-b", "50M", "-t", "3", "-P", "2"]
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if kind in ("sigint", "sigkill", "sigstop"):
            time.sleep(rng.uniform(0.2, 2.0))
            if kind == "sigstop":
                p.send_signal(signal.SIGSTOP)
                time.sleep(8)
            p.send_signal(signal.SIGINT if kind == "sigint" else signal.SIGKILL)
        hung = False
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            hung = True
        if hung:
            outcome = "failed: hung, killed after 60 s"
        elif p.returncode == 0:
            outcome = "ok"
        elif kind in ("sigint", "sigkill", "sigstop"):
            outcome = "stopped as meant"
        elif b"--max-tests" in err or b"share of tests" in err or b"server is busy" in err:
            outcome = "busy"
        else:
            outcome = "failed: " + err.decode(errors="replace").strip().splitlines()[-1][:100] if err.strip() else "failed"
        with lock:
            outcomes[(kind, outcome)] += 1
        time.sleep(rng.uniform(0, 0.5))


def hostile_loop(port, running, counts, lock):
    rng = random.Random(7)
    held = collections.deque()
    while running():
        what = rng.choice(["garbage", "oversize", "hello-then-silence", "silence"])
        s = socket.socket()
        try:
            s.bind(("127.0.0.2", 0))
            s.settimeout(2)
            s.connect(("127.0.0.1", port))
            if what == "garbage":
                s.sendall(os.urandom(rng.randint(1, 4096)))
            elif what == "oversize":
                s.sendall((0xFFFFFF).to_bytes(4, "big") + b"{")
            elif what == "hello-then-silence":
                body = b'{"type":"hello","magic":"wirebench","version":5}'
                s.sendall(len(body).to_bytes(4, "big") + body)
            held.append(s)
            while len(held) > 32:
                held.popleft().close()
            with lock:
                counts[what] += 1
        except OSError as e:
            s.close()
            with lock:
                counts["refused: " + type(e).__name__] += 1
        time.sleep(rng.uniform(0.05, 0.3))
    for s in held:
        s.close()


# ---- attackers -------------------------------------------------------------------------


class Tally:
    """One attacker's counters (what it did, what the server did to it) and its peaks."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = collections.Counter()
        self.peaks = {}

    def count(self, what, n=1):
        with self.lock:
            self.counts[what] += n

    def peak(self, what, value):
        with self.lock:
            self.peaks[what] = max(self.peaks.get(what, value), value)

    def get(self, what):
        with self.lock:
            return self.counts[what]


class Arena:
    """What the attackers attack, and when they stop."""

    def __init__(self, port, iperf3_port, metrics_port, until):
        self.port, self.iperf3_port, self.metrics_port = port, iperf3_port, metrics_port
        self.until = until
        self.stop = threading.Event()

    def running(self):
        return not self.stop.is_set() and time.time() < self.until

    def wait(self, secs):
        """Sleeps secs, or less when the run ends; whether it is still running."""
        self.stop.wait(max(0.0, min(secs, self.until - time.time())))
        return self.running()


def why(e):
    return "timed out" if isinstance(e, socket.timeout) else type(e).__name__


def connect_from(src, dst, timeout=2.0):
    """A TCP connection to dst from address src (a host of its own on loopback)."""
    s = socket.socket()
    try:
        s.bind((src, 0))
        s.settimeout(timeout)
        s.connect(dst)
    except BaseException:
        s.close()
        raise
    return s


def drain(s, wait=0.3):
    """What the peer sent on s within wait s: (bytes, end) with end "eof", "reset", or ""
    when the connection is still open."""
    got = b""
    s.settimeout(wait)
    try:
        while len(got) < 1 << 16:
            b = s.recv(4096)
            if not b:
                return got, "eof"
            got += b
    except socket.timeout:
        return got, ""
    except ConnectionResetError:
        return got, "reset"
    except OSError as e:
        return got, type(e).__name__
    return got, ""


def said_something(socks, timeout_ms):
    """The sockets among socks that the peer wrote to, closed or reset."""
    if not socks:
        return []
    p = select.poll()
    by_fd = {}
    for s in socks:
        p.register(s, select.POLLIN | select.POLLERR | select.POLLHUP)
        by_fd[s.fileno()] = s
    return [by_fd[fd] for fd, _ in p.poll(timeout_ms)]


def cookie():
    return "".join(random.choice(COOKIE_ALPHABET) for _ in range(36)).encode() + b"\0"


def hold(a, t, sources, dst, max_age, classify):
    """Keeps one silent connection open from each of sources to dst: closed by us and
    reopened after max_age s (None: never), reopened when the server closes it, no slot
    more often than once a second. classify(bytes, end) names what the server did."""
    held = [None] * len(sources)  # [socket, opened at, what it said so far]
    next_open = [0.0] * len(sources)
    try:
        while a.running():
            now = time.monotonic()
            for i, src in enumerate(sources):
                if held[i] and max_age is not None and now - held[i][1] >= max_age:
                    held[i][0].close()
                    held[i] = None
                    t.count("held %.1f s, closed and reopened by us" % max_age)
                if held[i] is None and now >= next_open[i]:
                    next_open[i] = now + 1.0
                    try:
                        held[i] = [connect_from(src, dst), now, b""]
                        t.count("opened")
                    except OSError as e:
                        t.count("connect failed: " + why(e))
            t.peak("open at once", sum(h is not None for h in held))
            index = {id(h[0]): i for i, h in enumerate(held) if h}
            for s in said_something([h[0] for h in held if h], 250):
                i = index[id(s)]
                got, end = drain(s)
                held[i][2] += got
                if end == "":
                    continue  # said something and is still open: keep listening
                t.count(classify(held[i][2], end))
                t.peak("longest held until the server closed it, s", round(time.monotonic() - held[i][1], 1))
                s.close()
                held[i] = None
    finally:
        for h in held:
            if h:
                h[0].close()


def control_starvation(a, t):
    sources = ["127.0.1.%d" % (1 + k // CONTROL_PER_ADDR) for k in range(CONTROL_ADDRS * CONTROL_PER_ADDR)]

    def classify(got, end):
        if b"too many handshakes" in got:
            return "turned away: too many handshakes"
        if b"try again in" in got:
            return "turned away: penalised"
        if got:
            return "closed by the server after saying: " + got[4:64].decode(errors="replace")
        return "closed by the server without a word (evicted)" if end == "eof" else "reset by the server"

    hold(a, t, sources, ("127.0.0.1", a.port), CONTROL_REOPEN_S, classify)


def metrics_idle(a, t):
    sources = ["127.0.1.%d" % (41 + k % 4) for k in range(METRICS_IDLE)]

    def classify(got, end):
        if got.startswith(b"HTTP/"):
            return "answered %s, closed by the server" % got.split(b" ", 2)[1].decode(errors="replace")
        if got:
            return "closed by the server after saying something else"
        return "closed by the server without a word (evicted)" if end == "eof" else "reset by the server"

    hold(a, t, sources, ("127.0.0.1", a.metrics_port), None, classify)


def scraper(a, t, last):
    """Scrapes /metrics every SCRAPE_EVERY_S s; last[0] keeps the last 200 answer's body."""
    while a.wait(SCRAPE_EVERY_S):
        t.count("scrapes")
        try:
            s = connect_from("127.0.0.1", ("127.0.0.1", a.metrics_port), timeout=5)
        except OSError as e:
            t.count("not 200: connect failed: " + why(e))
            continue
        with s:
            got = b""
            try:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:
                    s.settimeout(max(0.01, deadline - time.monotonic()))
                    b = s.recv(65536)
                    if not b:
                        break
                    got += b
            except OSError as e:
                if not got:
                    t.count("not 200: " + why(e))
                    continue
            code = got.split(b" ", 2)[1].decode(errors="replace") if got.startswith(b"HTTP/") else None
            if code == "200":
                t.count("answered 200")
                last[0] = got.split(b"\r\n\r\n", 1)[-1].decode(errors="replace")
            elif code:
                t.count("not 200: answered " + code)
            else:
                t.count("not 200: closed without an answer")


def metrics_attack(a, t, last):
    sub = threading.Thread(target=scraper, args=(a, t, last), daemon=True)
    sub.start()
    try:
        metrics_idle(a, t)
    finally:
        sub.join()


def iperf3_drip(a, t, first_addr=21, whole_cookie=False):
    """Each connection drips an iperf3 client's cookie (whole_cookie: sends it at once),
    then the length and JSON of a 3-s TCP test's parameters, one byte every DRIP_EVERY_S s.
    A connection whose bytes are all sent (told to create its streams) is closed and a new
    one opened."""
    params = json.dumps({"tcp": True, "time": 3, "parallel": 1, "len": 131072}).encode()
    conns = []  # dict(s, src, payload, sent, opened, next, slot)
    sources = ["127.0.1.%d" % (first_addr + k % 4) for k in range(DRIP_CONNS)]
    start = time.monotonic()
    reopen = [0.0] * DRIP_CONNS

    def open_one(src, first):
        try:
            s = connect_from(src, ("127.0.0.1", a.iperf3_port))
        except OSError as e:
            t.count("connect failed: " + why(e))
            return None
        t.count("opened")
        payload = cookie() + len(params).to_bytes(4, "big") + params
        sent = 0
        if whole_cookie:
            try:
                s.sendall(payload[:37])
                sent = 37
            except OSError as e:
                t.count("cookie not sent: " + why(e))
                s.close()
                return None
        return {"s": s, "src": src, "payload": payload,
                "sent": sent, "opened": time.monotonic(), "next": first, "slot": False}

    def close(c, what):
        t.count(what)
        t.peak("longest open, s", round(time.monotonic() - c["opened"], 1))
        c["s"].close()

    try:
        # Staggered: the connections' bytes are spread over each DRIP_EVERY_S period.
        for k, src in enumerate(sources):
            conns.append(open_one(src, start + k * DRIP_EVERY_S / DRIP_CONNS))
            reopen[k] = start + 1.0
        while a.running():
            now = time.monotonic()
            for k, c in enumerate(conns):
                if c is None:
                    if now >= reopen[k]:
                        reopen[k] = now + 1.0
                        conns[k] = open_one(sources[k], now + DRIP_EVERY_S)
                    continue
                if now >= c["next"]:
                    c["next"] += DRIP_EVERY_S
                    try:
                        c["s"].send(c["payload"][c["sent"]:c["sent"] + 1])
                        c["sent"] += 1
                        t.count("bytes dripped")
                    except OSError as e:
                        close(c, "send failed (%s) after %d bytes" % (why(e), c["sent"]))
                        conns[k] = None
            live = [c for c in conns if c]
            t.peak("holding an iperf3 test slot at once", sum(c["slot"] for c in live))
            for s in said_something([c["s"] for c in live], 250):
                k = next(i for i, c in enumerate(conns) if c and c["s"] is s)
                c = conns[k]
                got, end = drain(s, 0.05)
                for b in got:
                    state = b - 256 if b > 127 else b
                    if state == PARAM_EXCHANGE:
                        c["slot"] = True
                        t.count("given an iperf3 test slot (PARAM_EXCHANGE) after its cookie")
                    elif state == CREATE_STREAMS:
                        t.count("parameters all sent, told to create streams")
                    elif state == ACCESS_DENIED:
                        t.count("access denied (no test slot left)")
                    else:
                        t.count("state %d" % state)
                if end:
                    where = "during its cookie" if c["sent"] < 37 else "after its cookie, %d bytes of parameters" % (c["sent"] - 37)
                    close(c, "closed by the server %s (%s)" % (where, end))
                    conns[k] = None
                elif CREATE_STREAMS in got:
                    close(c, "closed by us once its parameters were all sent")
                    conns[k] = None
    finally:
        for c in conns:
            if c:
                c["s"].close()


def iperf3_flood(a, t):
    sources = ["127.0.1.%d" % (31 + k % 10) for k in range(FLOOD_BURST)]
    while a.running():
        t.count("bursts")
        held = []
        began = time.monotonic()
        try:
            for src in sources[:min(FLOOD_BURST, FLOOD_MAX_OPEN)]:
                if not a.running() or time.monotonic() - began > FLOOD_HOLD_S:
                    break
                try:
                    held.append(connect_from(src, ("127.0.0.1", a.iperf3_port), timeout=1.0))
                    t.count("opened")
                except OSError as e:
                    t.count("connect failed: " + why(e))
            t.peak("open at once", len(held))
            a.wait(FLOOD_HOLD_S)
            for s in said_something(held, 0):
                got, end = drain(s, 0.0)
                if end:
                    t.count("closed by the server before we closed it (%s)" % end)
        finally:
            for s in held:
                s.close()
        a.wait(FLOOD_PAUSE_S)


def read_state(ctrl):
    b = ctrl.recv(1)
    if not b:
        return None
    return b[0] - 256 if b[0] > 127 else b[0]


def count_datagrams(sock, secs):
    sock.settimeout(0.1)
    n = 0
    end = time.monotonic() + secs
    while time.monotonic() < end:
        try:
            sock.recv(2048)
            n += 1
        except (socket.timeout, BlockingIOError):
            pass
        except OSError:
            break
    return n


def udp_reflection(a, t):
    t.count("datagrams that reached %s" % FOREIGN, 0)
    while a.running():
        reflect_once(a, t)
        a.wait(REFLECT_EVERY_S)


def reflect_once(a, t):
    server = ("127.0.0.1", a.iperf3_port)
    socks = []
    try:
        t.count("attempts")
        ctrl = connect_from("127.0.0.1", server, timeout=5)
        socks.append(ctrl)
        ctrl.sendall(cookie())
        state = read_state(ctrl)
        if state != PARAM_EXCHANGE:
            t.count("not let in: state %s" % state)
            return
        params = json.dumps({"udp": True, "reverse": True, "time": 3, "parallel": 1, "len": 1000,
                             "bandwidth": 10_000_000}).encode()
        ctrl.sendall(len(params).to_bytes(4, "big") + params)
        state = read_state(ctrl)
        if state != CREATE_STREAMS:
            t.count("parameters not taken: state %s" % state)
            return
        victim = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        socks.append(victim)
        victim.bind((FOREIGN, 0))
        victim.sendto(UDP_HELLO, server)
        t.count("hellos sent from %s" % FOREIGN)
        t.count("datagrams that reached %s" % FOREIGN, count_datagrams(victim, 1.5))
        # The client's own hello: the test is served there (the attacker speaks iperf3
        # well enough that a 0 above means something).
        me = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        socks.append(me)
        me.bind(("127.0.0.1", 0))
        me.connect(server)
        me.send(UDP_HELLO)
        me.settimeout(3)
        try:
            answered = me.recv(2048) == UDP_REPLY
        except OSError:
            answered = False
        if not answered:
            t.count("own hello not answered")
            return
        t.count("own hello answered")
        if read_state(ctrl) == TEST_START and count_datagrams(me, 0.5) > 0:
            t.count("test data received at 127.0.0.1")
        t.count("datagrams that reached %s" % FOREIGN, count_datagrams(victim, 0.2))
        ctrl.sendall(bytes([CLIENT_TERMINATE]))
    except OSError as e:
        t.count("error: " + why(e))
    finally:
        for s in socks:
            s.close()


ATTACKERS = {
    "control": "control-port starvation (48 silent connections from 12 addresses, reopened every 9.5 s)",
    "drip": "iperf3-port drip (16 connections, a byte every 5 s)",
    "drip-params": "iperf3-port drip after the cookie (16 connections, cookie at once, then a byte every 5 s)",
    "flood": "iperf3-port thread flood (bursts of up to 400 silent connections, held 3 s)",
    "reflect": "UDP reflection (iperf3 -u -R from 127.0.0.1, its hello from 127.0.0.5)",
    "metrics": "metrics port (16 idle connections, a scrape every 5 s)",
}


def attackers_arg(v):
    if v == "all":
        return list(ATTACKERS)
    if v == "none":
        return []
    names = [n.strip() for n in v.split(",") if n.strip()]
    bad = [n for n in names if n not in ATTACKERS]
    if bad:
        raise argparse.ArgumentTypeError("unknown attacker %s (all, none, or of %s)" % (", ".join(bad), ", ".join(ATTACKERS)))
    return names


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wirebench", default="target/release/wirebench")
    ap.add_argument("--secs", type=float, default=3600)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--every", type=float, default=60)
    ap.add_argument("--attackers", type=attackers_arg, default="all",
                    help="all (default), none, or a comma-separated list of: " + ", ".join(ATTACKERS))
    a = ap.parse_args()
    iperf3_port = free_port() if shutil.which("iperf3") else 0
    attackers = list(a.attackers)
    if not iperf3_port:
        skipped = [n for n in attackers if n in ("drip", "drip-params", "flood", "reflect")]
        if skipped:
            print("no iperf3 installed: the iperf3 port is off, attackers %s skipped" % ", ".join(skipped))
        attackers = [n for n in attackers if n not in skipped]
    metrics_port = free_port()
    srv = subprocess.Popen(
        # Every client here comes from 127.0.0.1: the per-address shares are the fleet's,
        # sized for the client loops plus the reflection attacker, which must share their
        # address (its control connection is the client's) and whose tests count in
        # --max-tests with theirs (one count for both protocols); iperf3 clients' data
        # connections hold a handshake place each while their cookie is read, and a loop
        # frozen with SIGSTOP in its handshake holds its place for up to 10 s while the
        # next loop starts (a share of clients + 8 refused 8 of 8,096 honest tests in 30
        # minutes for that).
        [a.wirebench, "server", "--bind", "127.0.0.1", "-p", "0",
         "--max-tests", str(a.clients + 8), "--max-tests-per-source", str(a.clients + 4),
         "--max-handshakes-per-source", str(2 * a.clients + 8),
         "--metrics", "127.0.0.1:%d" % metrics_port]
        + (["--iperf3-port", str(iperf3_port)] if iperf3_port else ["--no-iperf3"]),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first = srv.stderr.readline()
    port = int(first.split("listening on ")[1].split()[0].rsplit(":", 1)[1])
    # What the server said while it served, by kind of message (the first needle found).
    said = collections.Counter()
    needles = {
        "moved nothing for": "iperf3 test ended, client silent",
        "busy-polling time": "spin budget used up",
        "--idle-timeout": "test ended, client silent",
        "ignored (not the client's address)": "iperf3 UDP hello from a foreign address ignored",
        "no thread for": "no thread for a connection",
        "cannot start a connection thread": "no thread for a connection",
        "panicked": "PANIC",
    }

    def read_log():
        for line in srv.stderr:
            for needle, what in needles.items():
                if needle in line:
                    said[what] += 1
                    break

    threading.Thread(target=read_log, daemon=True).start()
    until = time.time() + a.secs
    arena = Arena(port, iperf3_port, metrics_port, until)
    lock = threading.Lock()
    outcomes = collections.Counter()
    hostile = collections.Counter()
    workers = [threading.Thread(target=client_loop,
                                args=(a.wirebench, port, iperf3_port, arena.running, k, outcomes, lock))
               for k in range(a.clients)]
    workers.append(threading.Thread(target=hostile_loop, args=(port, arena.running, hostile, lock)))
    tallies = {n: Tally() for n in attackers}
    last_scrape = [""]
    run = {"control": control_starvation, "drip": iperf3_drip, "flood": iperf3_flood,
           "reflect": udp_reflection,
           "drip-params": lambda a, t: iperf3_drip(a, t, first_addr=25, whole_cookie=True)}
    for n in attackers:
        target, args = (metrics_attack, (arena, tallies[n], last_scrape)) if n == "metrics" else (run[n], (arena, tallies[n]))
        workers.append(threading.Thread(target=target, args=args, name="attacker-" + n))
    samples = []
    peaks = [0, 0, 0]
    started = time.time()
    samples.append((0.0, *status(srv.pid)))
    print("attackers: %s" % (", ".join(attackers) or "none"), flush=True)
    for w in workers:
        w.start()
    print("t_s,rss_kib,fds,threads", flush=True)
    print("%.0f,%d,%d,%d" % samples[0], flush=True)
    next_log = started + a.every
    try:
        while arena.running():
            arena.wait(min(1.0, max(0.0, next_log - time.time())))
            if srv.poll() is not None:
                break
            now = status(srv.pid)
            peaks = [max(p, v) for p, v in zip(peaks, now)]
            if time.time() >= next_log or not arena.running():
                samples.append((time.time() - started, *now))
                print("%.0f,%d,%d,%d" % samples[-1], flush=True)
                next_log += a.every
    except KeyboardInterrupt:
        print("interrupted: stopping", flush=True)
    finally:
        arena.stop.set()
        for w in workers:
            w.join()
    # Once the load is gone: what the server holds at rest.
    alive = srv.poll() is None
    if alive:
        time.sleep(12)
        rest = (time.time() - started, *status(srv.pid))
        alive = srv.poll() is None
    srv.terminate()
    srv.wait()
    print("\nserver survived: %s" % ("yes" if alive else "NO"))
    print("idle before: RSS %d KiB, %d fds, %d threads" % samples[0][1:])
    if len(samples) > 1:
        print("loaded, first sample after start: RSS %d KiB, %d fds, %d threads" % samples[1][1:])
        print("loaded, last sample: RSS %d KiB, %d fds, %d threads" % samples[-1][1:])
    print("maxima (a sample every second): RSS %d KiB, %d fds, %d threads" % tuple(peaks))
    if alive:
        print("idle after (12 s after the last client): RSS %d KiB, %d fds, %d threads" % rest[1:])

    print("\nclient tests:")
    for (kind, outcome), n in sorted(outcomes.items()):
        print("  %-12s %-40s %d" % (kind, outcome, n))
    by = collections.Counter()
    for (kind, outcome), n in outcomes.items():
        by["failed" if outcome.startswith("failed") else outcome] += n
    not_completed = by["failed"] + by["busy"]
    print("honest tests: %d ran: %d completed, %d stopped as meant, %d turned away busy, %d failed"
          % (sum(by.values()), by["ok"], by["stopped as meant"], by["busy"], by["failed"]))
    honest = not_completed == 0 and sum(by.values()) > 0
    print("every honest test completed: %s" % ("yes" if honest else "NO (%d did not)" % not_completed))
    print("\nhostile connections:")
    for what, n in sorted(hostile.items()):
        print("  %-40s %d" % (what, n))
    checks = []
    if attackers:
        print("\nattackers:")
    for n in attackers:
        t = tallies[n]
        print("  %s: %s" % (n, ATTACKERS[n]))
        for what, v in sorted(t.counts.items()):
            print("    %-70s %d" % (what, v))
        for what, v in sorted(t.peaks.items()):
            print("    %-70s %s (most)" % (what, v))
    if "reflect" in tallies:
        t = tallies["reflect"]
        reached = t.get("datagrams that reached %s" % FOREIGN)
        tried = t.get("hellos sent from %s" % FOREIGN)
        checks.append(reached == 0)
        print("UDP reflection: %d datagrams reached %s (must be 0), from %d of %d attempts that got as far as"
              " the hello%s" % (reached, FOREIGN, tried, t.get("attempts"),
                                "" if tried else ": NOT TESTED, no attempt got a test slot"))
    if "metrics" in tallies:
        t = tallies["metrics"]
        bad = sum(v for what, v in t.counts.items() if what.startswith("not 200"))
        checks.append(bad == 0 and t.get("scrapes") > 0)
        print("metrics: %d of %d scrapes not answered 200 (must be 0)" % (bad, t.get("scrapes")))
    print("\nserver log:")
    for what, n in sorted(said.items()):
        print("  %-40s %d" % (what, n))
    wanted = ("wirebench_server_connections", "wirebench_server_tests_refused", "wirebench_server_tests_ended")
    lines = [l for l in last_scrape[0].splitlines() if l.startswith(wanted)]
    if lines:
        print("server metrics, last scrape:")
        for l in lines:
            print("  " + l)
    return 0 if alive and honest and all(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
