#!/usr/bin/env python3
"""Side-by-side benchmark: wirebench against iperf3, iperf2 and sockperf, in one run.

Runs each tool on loopback and (as root) across a veth pair between two network
namespaces it creates (198.18.0.1 <-> 198.18.0.2, RFC 2544 benchmarking range) and removes
again. Prints the figures and the ratios wirebench / peer. Absolute numbers vary with the
machine and its neighbours; compare the ratios of one run.

    sudo python3 bench/compare.py [--wirebench target/release/wirebench] [--secs 5]

Targets (issue 2): UDP small-packet packets/s >= 3x iperf3; TCP single stream >= iperf3;
ping-pong median <= sockperf; UDP rate within 0.5 % of the target at 10/100/1000 Mbit/s;
at 100 Mbit/s with 1472-byte payloads the receiver's median gap within 5 % of nominal and
p99 within 2x. Issue 15: TCP with zero copy (-Z, sendfile in both) >= iperf3 -Z.

`--only tcp,zerocopy` runs only the named figures (udp, tcp, zerocopy, pingpong, rates).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

NS_A, NS_B = "wbbench-a", "wbbench-b"
# Throughput runs pin the client's data thread to CPU 0 and the server's to CPU 1, for
# iperf3 and wirebench alike (`-A 0,1` in both), so that neither wins by scheduling luck.
PIN = "0,1"
ADDR_A, ADDR_B = "198.18.0.1", "198.18.0.2"


def sh(cmd, check=True, timeout=120):
    return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=timeout)


class Place:
    """Where the client and the server run: loopback or two namespaces."""

    def __init__(self, name, server_addr, client_ns=None, server_ns=None):
        self.name, self.addr, self.client_ns, self.server_ns = name, server_addr, client_ns, server_ns

    def wrap(self, ns, cmd):
        return (["ip", "netns", "exec", ns] + cmd) if ns else cmd

    def client(self, cmd, timeout=120):
        return sh(self.wrap(self.client_ns, cmd), check=False, timeout=timeout)

    def server(self, cmd, announce=False):
        """Starts a server; its output is discarded unless `announce` (then stderr is read
        until the wirebench server says where it listens)."""
        err = subprocess.PIPE if announce else subprocess.DEVNULL
        return subprocess.Popen(self.wrap(self.server_ns, cmd), stdout=subprocess.DEVNULL, stderr=err, text=True)


def veth_up():
    veth_down()
    for ns in (NS_A, NS_B):
        sh(["ip", "netns", "add", ns])
        sh(["ip", "-n", ns, "link", "set", "lo", "up"])
    sh(["ip", "link", "add", "wbb-va", "netns", NS_A, "type", "veth", "peer", "name", "wbb-vb", "netns", NS_B])
    sh(["ip", "-n", NS_A, "addr", "add", ADDR_A + "/24", "dev", "wbb-va"])
    sh(["ip", "-n", NS_B, "addr", "add", ADDR_B + "/24", "dev", "wbb-vb"])
    sh(["ip", "-n", NS_A, "link", "set", "wbb-va", "up"])
    sh(["ip", "-n", NS_B, "link", "set", "wbb-vb", "up"])


def veth_down():
    for ns in (NS_A, NS_B):
        sh(["ip", "netns", "del", ns], check=False)


def stop(p):
    p.terminate()
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()


def wb_server(place, wb, port=5311):
    p = place.server([wb, "server", "--bind", place.addr, "-p", str(port)], announce=True)
    line = p.stderr.readline()
    if "listening on" not in line:
        stop(p)
        raise RuntimeError(f"wirebench server did not start: {line.strip()}")
    return p, port


def wb_json(place, args, timeout=120):
    r = place.client(args + ["-J"], timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def iperf3_json(place, args, port=5211):
    srv = place.server(["iperf3", "-s", "-1", "-p", str(port)])
    time.sleep(1.0)  # a probe connection would use up iperf3's one test (-1)
    try:
        r = place.client(["iperf3", "-c", place.addr, "-p", str(port), "-J"] + args)
        return json.loads(r.stdout)
    finally:
        stop(srv)


def measure_udp_small(place, wb, secs):
    out = {}
    j = iperf3_json(place, ["-u", "-l", "18", "-b", "0", "-t", str(secs), "-A", PIN])
    s = j["end"]["sum"]
    out["iperf3"] = (s["packets"] - s["lost_packets"]) / s["seconds"]
    if shutil.which("iperf"):
        srv = place.server(["iperf", "-s", "-u", "-p", "5212"])
        time.sleep(0.5)
        try:
            r = place.client(["iperf", "-c", place.addr, "-p", "5212", "-u", "-l", "18", "-b", "10000M", "-t", str(secs)], timeout=secs + 30)
            m = re.findall(r"(\d+)/\s*(\d+)\s+\(", r.stdout)
            if m:
                lost, total = map(int, m[-1])
                out["iperf2"] = (total - lost) / secs
        finally:
            stop(srv)
    srv, port = wb_server(place, wb)
    try:
        for backend in ("gso", "sendmmsg"):
            v = wb_json(place, [wb, "client", place.addr, "-p", str(port), "-u", "-l", "18", "-b", "0", "-t", str(secs), "--udp-backend", backend, "-A", PIN])
            s = v["summary"]
            out[f"wirebench-{backend} ({v.get('receive_mode', '?')} rx)"] = s["received_packets"] / s["duration_s"]
    finally:
        stop(srv)
    return out


def measure_tcp(place, wb, secs, zerocopy=False):
    """TCP, one stream; with `zerocopy`, -Z in both (sendfile in each)."""
    out = {}
    z = ["-Z"] if zerocopy else []
    tag = " -Z" if zerocopy else ""
    j = iperf3_json(place, ["-t", str(secs), "-A", PIN] + z)
    out["iperf3" + tag] = j["end"]["sum_received"]["bits_per_second"]
    srv, port = wb_server(place, wb)
    try:
        v = wb_json(place, [wb, "client", place.addr, "-p", str(port), "-t", str(secs), "-A", PIN] + z)
        if zerocopy and v.get("backend") != "tcp-sendfile":
            raise RuntimeError(f"wirebench -Z did not use sendfile: {v.get('backend')}")
        out["wirebench" + tag] = v["summary"]["received_bps"]
    finally:
        stop(srv)
    return out


def measure_pingpong(place, wb, secs):
    out = {}
    if shutil.which("sockperf"):
        srv = place.server(["sockperf", "sr", "-i", place.addr, "-p", "11111"])
        time.sleep(0.5)
        try:
            r = place.client(["sockperf", "pp", "-i", place.addr, "-p", "11111", "-m", "64", "-t", str(secs)], timeout=secs + 30)
            m = re.search(r"percentile 50\.000 =\s+([\d.]+)", r.stdout + r.stderr)
            if m:
                out["sockperf"] = float(m.group(1))
        finally:
            stop(srv)
    srv, port = wb_server(place, wb)
    try:
        # "user": stamped when recv returns, as sockperf does (the like-for-like figure);
        # "kernel": the answer's kernel receive stamp; "spin": busy-polling both ends.
        for name, extra in (("wirebench-user", ["--user-timestamps"]), ("wirebench-kernel", []), ("wirebench-spin", ["--spin"])):
            v = wb_json(place, [wb, "latency", place.addr, "-p", str(port), "-l", "64", "-t", str(secs)] + extra)
            out[name] = v["latency"][0]["half_rtt_p50_us"]
    finally:
        stop(srv)
    return out


def measure_rates(place, wb, secs):
    rows = []
    srv, port = wb_server(place, wb)
    try:
        for target in (10e6, 100e6, 1000e6):
            v = wb_json(place, [wb, "client", place.addr, "-p", str(port), "-u", "-l", "1472", "-b", str(int(target)), "-t", str(secs)])
            s = v["summary"]
            gap = s.get("rx_gap_us") or {}
            rows.append((target, s["offered_bps"], s["received_bps"], s["loss_ratio"], gap.get("nominal_us") or 0.0, gap.get("p50_us"), gap.get("p99_us"), s["generator_limited"]))
    finally:
        stop(srv)
    return rows


def median_of(n, measure):
    """Runs `measure` (returning {name: value}) n times; the median of each value."""
    runs = [measure() for _ in range(n)]
    return {k: statistics.median(r[k] for r in runs if k in r) for k in runs[0]}


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wirebench", default="target/release/wirebench")
    ap.add_argument("--secs", type=int, default=5)
    ap.add_argument("--places", default="loopback,veth")
    ap.add_argument("--repeat", type=int, default=1, help="median of this many runs per figure")
    ap.add_argument("--only", default="udp,tcp,zerocopy,pingpong,rates", help="figures to run")
    a = ap.parse_args()
    only = set(a.only.split(","))
    wb = os.path.abspath(a.wirebench)
    if not os.path.exists(wb):
        sys.exit(f"{wb} not found: run `cargo build --release` first")
    missing = [t for t in ("iperf3", "iperf", "sockperf") if not shutil.which(t)]
    if missing:
        print(f"missing peers (apt-get install {' '.join(missing)}): their columns are skipped")
    if not shutil.which("iperf3"):
        sys.exit("iperf3 is required: apt-get install iperf3")
    places = []
    for name in a.places.split(","):
        if name == "loopback":
            places.append(Place("loopback", "127.0.0.1"))
        elif name == "veth":
            if os.geteuid() != 0:
                print("veth: skipped (needs root to create namespaces)")
                continue
            veth_up()
            places.append(Place("veth", ADDR_B, NS_A, NS_B))
    try:
        print(f"wirebench {sh([wb, '--version']).stdout.strip()} vs {sh(['iperf3', '--version']).stdout.splitlines()[0]}, {a.secs} s per run, {os.cpu_count()} CPUs")
        for p in places:
            print(f"\n=== {p.name} ===")
            if "udp" in only:
                u = median_of(a.repeat, lambda: measure_udp_small(p, wb, a.secs))
                print(f"UDP 18-byte payloads (64-byte frames), unlimited, received packets/s (median of {a.repeat}):")
                for k, v in u.items():
                    print(f"  {k:34s} {v:12,.0f} pps   vs iperf3 {ratio(v, u['iperf3'])}")
            if "tcp" in only:
                t = median_of(a.repeat, lambda: measure_tcp(p, wb, a.secs))
                print(f"TCP single stream, received (median of {a.repeat}):")
                for k, v in t.items():
                    print(f"  {k:20s} {v / 1e9:8.2f} Gbit/s   vs iperf3 {ratio(v, t['iperf3'])}")
            if "zerocopy" in only:
                z = median_of(a.repeat, lambda: measure_tcp(p, wb, a.secs, zerocopy=True))
                print(f"TCP single stream, zero copy (-Z), received (median of {a.repeat}):")
                for k, v in z.items():
                    print(f"  {k:20s} {v / 1e9:8.2f} Gbit/s   vs iperf3 -Z {ratio(v, z['iperf3 -Z'])}")
            if "pingpong" in only:
                pp = median_of(a.repeat, lambda: measure_pingpong(p, wb, a.secs))
                print(f"ping-pong 64 bytes, half round trip, median (lower is better; median of {a.repeat} runs):")
                for k, v in pp.items():
                    print(f"  {k:20s} {v:8.2f} us" + (f"   vs sockperf {ratio(v, pp['sockperf'])}" if "sockperf" in pp else ""))
            if "rates" not in only:
                continue
            print("UDP rate accuracy and pacing (1472-byte payloads):")
            print("  target Mbit/s  offered/target  received/target  loss      gap nominal  gap p50/nominal  gap p99/nominal  gen-limited")
            for (tg, off, rcv, loss, nom, p50, p99, lim) in measure_rates(p, wb, a.secs):
                g50 = f"{p50 / nom:.3f}" if nom and p50 else "-"
                g99 = f"{p99 / nom:.3f}" if nom and p99 else "-"
                print(f"  {tg / 1e6:13.0f}  {off / tg:14.4f}  {rcv / tg:15.4f}  {loss * 100:6.3f} %  {nom:8.2f} us  {g50:>15}  {g99:>15}  {lim}")
    finally:
        if any(p.name == "veth" for p in places):
            veth_down()


if __name__ == "__main__":
    main()
