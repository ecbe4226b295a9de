#!/usr/bin/env python3
"""Soak: one server, an hour of mixed clients and hostile connections, its resources logged.

Starts `wirebench server` on 127.0.0.1 and runs CLIENTS client loops against it for
--secs seconds (default 3600): TCP and UDP throughput tests, ping-pong latency (some
busy-polling, charged to the address's spin budget), stock iperf3 clients (when iperf3 is
installed), tests stopped half-way with Ctrl-C (SIGINT), killed (SIGKILL) or frozen
(SIGSTOP for 8 s, then killed: the server's idle timeout ends their tests), and
reconnects. Beside them a
hostile loop opens connections from 127.0.0.2 that send garbage, an oversized length, a
hello and then nothing, or nothing at all. Every --every seconds (default 60) it logs the
server's resident memory, open file descriptors and threads; at the end it prints the
first and last samples, the maxima, and how the clients' tests ended. Not part of CI: it
runs for an hour.

    python3 bench/soak.py [--wirebench target/release/wirebench] [--secs 3600] [--clients 16]

Only loopback addresses are used. A server that leaks shows as memory, descriptors or
threads that keep growing from one sample to the next once the load is steady.
"""

import argparse
import collections
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time


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


def client_loop(wb, port, iperf3_port, until, seed, outcomes, lock):
    rng = random.Random(seed)
    kinds = ["tcp", "udp", "latency", "latency-spin", "tcp-R", "udp-bidir", "sigint", "sigkill", "sigstop"]
    if iperf3_port:
        kinds += ["iperf3", "iperf3-R"]
    while time.time() < until:
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
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            kind += " (hung)"
        if p.returncode == 0:
            outcome = "ok"
        elif kind in ("sigint", "sigkill", "sigstop"):
            outcome = "stopped as meant"
        elif b"--max-tests" in err or b"share of tests" in err or b"server is busy" in err:
            outcome = "busy"
        else:
            outcome = "failed: " + err.decode(errors="replace").strip().splitlines()[-1][:100] if err else "failed"
        with lock:
            outcomes[(kind.split()[0], outcome)] += 1
        time.sleep(rng.uniform(0, 0.5))


def hostile_loop(port, until, counts, lock):
    rng = random.Random(7)
    held = collections.deque()
    while time.time() < until:
        what = rng.choice(["garbage", "oversize", "hello-then-silence", "silence"])
        try:
            s = socket.socket()
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
            with lock:
                counts["refused: " + type(e).__name__] += 1
        time.sleep(rng.uniform(0.05, 0.3))
    for s in held:
        s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wirebench", default="target/release/wirebench")
    ap.add_argument("--secs", type=float, default=3600)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--every", type=float, default=60)
    a = ap.parse_args()
    iperf3_port = 0
    if shutil.which("iperf3"):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            iperf3_port = s.getsockname()[1]
    srv = subprocess.Popen(
        # Every client here comes from 127.0.0.1: the per-address shares are the fleet's.
        [a.wirebench, "server", "--bind", "127.0.0.1", "-p", "0", "--max-tests", "16",
         "--max-tests-per-source", "16", "--max-handshakes-per-source", "16"]
        + (["--iperf3-port", str(iperf3_port)] if iperf3_port else ["--no-iperf3"]),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first = srv.stderr.readline()
    port = int(first.split("listening on ")[1].split()[0].rsplit(":", 1)[1])
    # What the server said while it served, by kind of message.
    said = collections.Counter()
    needles = {
        "moved nothing for": "iperf3 test ended, client silent",
        "busy-polling time": "spin budget used up",
        "--idle-timeout": "test ended, client silent",
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
    lock = threading.Lock()
    outcomes = collections.Counter()
    hostile = collections.Counter()
    workers = [threading.Thread(target=client_loop, args=(a.wirebench, port, iperf3_port, until, k, outcomes, lock))
               for k in range(a.clients)]
    workers.append(threading.Thread(target=hostile_loop, args=(port, until, hostile, lock)))
    samples = []
    started = time.time()
    samples.append((0.0, *status(srv.pid)))
    for w in workers:
        w.start()
    print("t_s,rss_kib,fds,threads", flush=True)
    print("%.0f,%d,%d,%d" % samples[0], flush=True)
    while time.time() < until:
        time.sleep(min(a.every, max(0.0, until - time.time())))
        samples.append((time.time() - started, *status(srv.pid)))
        print("%.0f,%d,%d,%d" % samples[-1], flush=True)
    for w in workers:
        w.join()
    # Once the load is gone: what the server holds at rest.
    time.sleep(12)
    rest = (time.time() - started, *status(srv.pid))
    alive = srv.poll() is None
    srv.terminate()
    srv.wait()
    print("\nserver survived: %s" % ("yes" if alive else "NO"))
    print("idle before: RSS %d KiB, %d fds, %d threads" % samples[0][1:])
    print("loaded, first sample after start: RSS %d KiB, %d fds, %d threads" % samples[1][1:]
          if len(samples) > 1 else "")
    print("loaded, last sample: RSS %d KiB, %d fds, %d threads" % samples[-1][1:])
    print("maxima: RSS %d KiB, %d fds, %d threads" % tuple(max(s[i] for s in samples) for i in (1, 2, 3)))
    print("idle after (12 s after the last client): RSS %d KiB, %d fds, %d threads" % rest[1:])
    print("\nclient tests:")
    for (kind, outcome), n in sorted(outcomes.items()):
        print("  %-12s %-40s %d" % (kind, outcome, n))
    print("hostile connections:")
    for what, n in sorted(hostile.items()):
        print("  %-40s %d" % (what, n))
    print("server log:")
    for what, n in sorted(said.items()):
        print("  %-40s %d" % (what, n))
    return 0 if alive else 1


if __name__ == "__main__":
    sys.exit(main())
