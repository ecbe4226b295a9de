#!/usr/bin/env python3
"""Every side-by-side benchmark in one run, as one Markdown table of ratios.

Runs the figures of bench/compare.py (TCP, zero copy, four streams, small UDP datagrams,
the AF_XDP server receiver, pacing), bench/gen_compare.py (gen against trafgen, both
sinks), bench/frer_relay.py (relays against kernel bridges), bench/impair_stage.py (the
stage against kernel forwarding) and bench/rx_compare.py (AF_XDP against the ring
receiver), with their own set-up code. Within each figure the two sides alternate,
A B A B ... (--pairs, at least 5), so that a slow moment of this noisy machine hits both;
each pair gives one ratio B / A, and the table shows the median ratio with the lowest and
highest of the pairs beside it. A figure that compares with nothing (pacing: the gap's
p99 over the nominal gap) is run --pairs times and shown the same way.

    sudo python3 bench/all.py [--wirebench target/release/wirebench] [--secs 3] [--pairs 5]
        [--only tcp,udp,pacing,gen,frer,impair,rx] [--write]

The absolute figures are this machine's, with its neighbours; the ratios are what compare.
`--write` puts the table into README.md and docs/guide/src/performance.md between the
markers `<!-- bench/all.py -->` and `<!-- /bench/all.py -->`. Needs root (namespaces,
labs), iperf3 and netsniff-ng (trafgen) from Debian, and a release build.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import frer_relay  # noqa: E402
import gen_compare  # noqa: E402
import impair_stage  # noqa: E402
import rx_compare  # noqa: E402

BEGIN, END = "<!-- bench/all.py -->", "<!-- /bench/all.py -->"


class Figure:
    """One row: `a` and `b` each take one sample (higher is better unless `lower`);
    `b` alone when `a` is None (then the value itself is the figure)."""

    def __init__(self, name, where, a_name, a, b_name, b, unit, target, lower=False):
        self.name, self.where, self.a_name, self.a, self.b_name, self.b = name, where, a_name, a, b_name, b
        self.unit, self.target, self.lower = unit, target, lower
        self.a_runs, self.b_runs, self.ratios = [], [], []

    def run(self, pairs):
        for _ in range(pairs):
            x = self.a() if self.a else None
            y = self.b()
            if x is not None:
                self.a_runs.append(x)
            self.b_runs.append(y)
            self.ratios.append(y / x if x else y)
            print(f"  {self.name} ({self.where}): {self.a_name + ' ' + fmt(x, self.unit) + ', ' if self.a else ''}"
                  f"{self.b_name} {fmt(y, self.unit)}" + (f", ratio {y / x:.2f}" if x else ""), flush=True)

    def row(self):
        med = statistics.median(self.ratios)
        lo, hi = min(self.ratios), max(self.ratios)
        met = med <= self.target if self.lower else med >= self.target
        a = f"{self.a_name} {fmt(statistics.median(self.a_runs), self.unit)}" if self.a_runs else "-"
        b = f"{self.b_name} {fmt(statistics.median(self.b_runs), self.unit)}"
        sign = "≤" if self.lower else "≥"
        # A median that rounds to the target without reaching it shows a third digit.
        shown = f"{med:.3f}" if round(med, 2) == self.target and not met else f"{med:.2f}"
        return (f"| {self.name} | {self.where} | {a} | {b} | **{shown}x** | {lo:.2f}–{hi:.2f} | "
                f"{sign} {self.target}x: {'met' if met else '**not met**'} |")


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "bit/s":
        return f"{v / 1e9:.2f} Gbit/s"
    if unit == "pps":
        return f"{v / 1e3:,.0f} k/s"
    return f"{v:.2f}"


# --- compare.py's figures ---------------------------------------------------------------

def servers(place, wb):
    """A wirebench server and an iperf3 server (kept for all pairs of the place)."""
    srv, port = compare.wb_server(place, wb)
    ip3 = place.server(["iperf3", "-s", "-p", "5211"])
    time.sleep(1.0)
    return srv, port, ip3


def iperf3_run(place, args):
    r = place.client(["iperf3", "-c", place.addr, "-p", "5211", "-J"] + args, timeout=120)
    j = json.loads(r.stdout)
    if "error" in j:
        raise RuntimeError(f"iperf3 {' '.join(args)}: {j['error']}")
    return j


def tcp_figures(place, wb, port, secs):
    base = ["-t", str(secs), "-A", compare.PIN]

    def ip3(extra):
        return lambda: iperf3_run(place, base + extra)["end"]["sum_received"]["bits_per_second"]

    def wbr(extra):
        def one():
            v = compare.wb_json(place, [wb, "client", place.addr, "-p", str(port)] + base + extra)
            if "-Z" in extra and v.get("backend") != "tcp-sendfile":
                raise RuntimeError(f"wirebench -Z did not use sendfile: {v.get('backend')}")
            return v["summary"]["received_bps"]
        return one

    return [
        Figure("TCP, one stream, received", place.name, "iperf3", ip3([]), "wirebench", wbr([]), "bit/s", 1.0),
        Figure("TCP, one stream, `-Z` (sendfile)", place.name, "iperf3 -Z", ip3(["-Z"]), "wirebench -Z", wbr(["-Z"]), "bit/s", 1.0),
        Figure("TCP, `-P 4`, received", place.name, "iperf3 -P 4", ip3(["-P", "4"]), "wirebench -P 4", wbr(["-P", "4"]), "bit/s", 1.0),
    ]


def small_udp(secs):
    """The arguments of the small-datagram figures, common to both tools."""
    return ["-u", "-l", "18", "-b", "0", "-t", str(secs), "-A", compare.PIN]


def iperf3_udp_received(place, secs):
    """One sample of iperf3's small-datagram figure: datagrams/s received."""
    def one():
        s = iperf3_run(place, small_udp(secs))["end"]["sum"]
        return (s["packets"] - s["lost_packets"]) / s["seconds"]
    return one


def wb_udp_received(place, wb, port, secs, check=None, counter=None):
    """One sample of wirebench's small-datagram figure (GSO sender): datagrams/s received;
    `check(result, before, after)` may refuse the result, given `counter()` read before and
    after the run."""
    def one():
        before = counter() if counter else None
        v = compare.wb_json(place, [wb, "client", place.addr, "-p", str(port), "--udp-backend", "gso"] + small_udp(secs))
        after = counter() if counter else None
        if check:
            check(v, before, after)
        s = v["summary"]
        return s["received_packets"] / s["duration_s"]
    return one


def udp_figures(place, wb, port, secs):
    return [Figure("UDP 18-byte payloads, unlimited, received datagrams/s (sockets)", place.name,
                   "iperf3", iperf3_udp_received(place, secs), "wirebench", wb_udp_received(place, wb, port, secs),
                   "pps", 3.0)]


def xdp_server_figures(place, wb, secs):
    """The AF_XDP server receiver against iperf3's socket receiver, with the sender's
    GSO batches (veth passes them whole; the receiver cuts them into datagrams)."""
    srv = place.server([wb, "server", "--bind", place.addr, "-p", "5312", "--rx-backend", "xdp"], announce=True)
    line = srv.stderr.readline()
    if "listening on" not in line:
        compare.stop(srv)
        raise RuntimeError(f"wirebench server --rx-backend xdp did not start: {line.strip()}")

    def rx_packets():
        """The server-side veth's receive counter, as the kernel keeps it."""
        r = compare.sh(["ip", "netns", "exec", place.server_ns, "cat", "/sys/class/net/wbb-vb/statistics/rx_packets"])
        return int(r.stdout)

    def af_xdp(v, rx_before, rx_after):
        """The run counts: it received with AF_XDP, the program's, the kernel's and the
        receiver's frame counts agree, and the interface saw the program's frames."""
        if v.get("receive_mode") != "af_xdp":
            raise RuntimeError(f"the server did not receive with AF_XDP: {v.get('receive_mode')}")
        c = v.get("af_xdp_frames")
        if not c:
            raise RuntimeError("the result has no af_xdp_frames")
        iface = rx_after - rx_before
        # The interface counts every frame it received while the program was attached and
        # before and after: the test's frames and the control connection's few.
        other = iface - c["redirected"]
        print(f"    af_xdp frames: program {c['redirected']}, read {c['read']}, kernel dropped {c['dropped']}, "
              f"interface rx +{iface} ({other} not redirected: control, handshake)", file=sys.stderr)
        if c["redirected"] != c["read"] + c["dropped"]:
            raise RuntimeError(f"the program's and the receiver's counts disagree: {c}")
        if other < 0 or other > max(1000, iface // 100):
            raise RuntimeError(f"the interface's count ({iface}) does not match the program's ({c['redirected']})")

    # With one datagram per frame (`--udp-backend sendmmsg`) the client's sender is the
    # limit (about 190 k/s here, as iperf3's): that row would measure senders.
    figs = [
        Figure("UDP 18-byte payloads, `server --rx-backend xdp` (GSO batches cut by the receiver; program, kernel and receiver counts checked in every run)", place.name,
               "iperf3", iperf3_udp_received(place, secs), "wirebench", wb_udp_received(place, wb, 5312, secs, af_xdp, rx_packets),
               "pps", 6.0),
    ]
    return figs, srv


def pacing_figure(place, wb, port, secs):
    def one():
        v = compare.wb_json(place, [wb, "client", place.addr, "-p", str(port), "-u", "-l", "1472",
                                    "-b", "1000000000", "-t", str(secs)])
        gap = v["summary"].get("rx_gap_us") or {}
        if not gap.get("nominal_us") or not gap.get("p99_us"):
            raise RuntimeError("no receive gaps in the result")
        return gap["p99_us"] / gap["nominal_us"]
    return Figure("pacing, 1472-byte datagrams at 1 Gbit/s: receiver's gap p99 / nominal", place.name,
                  None, None, "wirebench", one, "x", 1.3, lower=True)


# --- the lab scripts' figures -------------------------------------------------------------

def gen_figures(wb, secs):
    """gen --backend xdp against trafgen, one CPU each, per sink (the lab is built once)."""
    if not shutil.which("trafgen"):
        print("trafgen missing (apt-get install netsniff-ng): gen figures skipped")
        return []
    figs = []
    for sink, mac in (("stack", gen_compare.LISTENER_MAC), ("drop", gen_compare.OTHER_MAC)):
        conf = tempfile.NamedTemporaryFile(suffix=".cfg", delete=False).name
        gen_compare.DST_MAC = mac
        gen_compare.trafgen_conf(conf)
        trafgen = ["trafgen", "--dev", "eth0", "--conf", conf, "--cpus", "1", "--no-cpu-stats"]
        ours = [wb, "gen", "eth0", "-s", "64", "--line-rate", "100G", "-r", "100%", "-t", str(secs + 5),
                "--dst-ip", gen_compare.DST_IP, "--dst-mac", mac, "--src-port", "49184", "--backend", "xdp"]
        figs.append(Figure(f"64-byte frames generated, one CPU, sink {sink}", "veth (lab)",
                           "trafgen", lambda t=trafgen: gen_compare.metered(t, secs),
                           "wirebench gen --backend xdp", lambda o=ours: gen_compare.metered(o, secs), "pps", 1.5))
    return figs


def run_lab(wb, name, up, figs, pairs):
    sh = compare.sh
    sh([wb, "lab", "down", name], check=False)
    sh([wb, "lab", "up"] + up + ["--name", name])
    try:
        for f in figs:
            f.run(pairs)
    finally:
        sh([wb, "lab", "down", name], check=False)


def frer_figures(wb, secs, pairs):
    """Userspace and fast-path relays against kernel bridges on the same wiring, 64-byte
    frames; the two ways alternate per pair (bridges built, then relays started)."""
    figs = []
    frer_relay.teardown()
    frer_relay.build()
    try:
        for mode in ("relay", "fast"):
            def kernel():
                frer_relay.kernel_bridges()
                try:
                    return frer_relay.offer(wb, 64, 0, secs)
                finally:
                    frer_relay.no_bridges()

            def relays(fast=mode == "fast"):
                procs = frer_relay.relays(wb, fast=fast)
                try:
                    return frer_relay.offer(wb, 64, 0, secs)
                finally:
                    for p in procs:
                        p.terminate()
                    for p in procs:
                        p.communicate(timeout=10)

            name = "FRER relays (" + ("BPF fast path" if mode == "fast" else "user space") + "), 64-byte frames delivered"
            f = Figure(name, "veth (4 namespaces)", "kernel bridges", kernel, "wirebench", relays, "pps",
                       1.0 if mode == "fast" else 0.6)
            f.run(pairs)
            figs.append(f)
    finally:
        frer_relay.teardown()
    return figs


def impair_figures(wb, secs, pairs):
    """The impairment stage's fast path (loss 1 %, duplicate 1 %) against the kernel's
    forwarding, the labs rebuilt per sample (router, impair)."""
    lab = impair_stage.LAB
    sh = compare.sh

    def sample(topology, impair):
        def one():
            sh([wb, "lab", "down", lab], check=False)
            sh([wb, "lab", "up", topology, "--name", lab] + (["--impair", impair] if impair else []))
            time.sleep(0.5)
            try:
                return impair_stage.offer(wb, 64, secs)
            finally:
                sh([wb, "lab", "down", lab], check=False)
        return one

    f = Figure("impairment stage (BPF fast path, loss 1 % + duplicate 1 %), 64-byte frames forwarded",
               "veth (lab)", "kernel forwarding", sample("router", None), "wirebench", sample("impair", "loss=1%,duplicate=1%"),
               "pps", 1.0)
    f.run(pairs)
    return [f]


def rx_figures(wb, secs):
    return [Figure("raw receive, 64-byte frames at the generator's max", "veth (lab)",
                   "TPACKET_V3 ring", lambda: rx_compare.gen(wb, "ring", secs, 0)["rx_pps"],
                   "AF_XDP", lambda: rx_compare.gen(wb, "xdp", secs, 0)["rx_pps"], "pps", 1.5)]


# --- the table ------------------------------------------------------------------------------

def machine():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({model}), Linux {platform.release()}"


def version(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).splitlines()[0].strip()
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "?"


def table(figs, a, wb):
    today = datetime.date.today().isoformat()
    lines = [
        f"Run of {today} on {machine()}: `sudo python3 bench/all.py --secs {a.secs} --pairs {a.pairs}`; "
        f"{version([wb, '--version'])}, {version(['iperf3', '--version'])}, "
        f"{version(['trafgen', '--version']) if shutil.which('trafgen') else 'no trafgen'}. "
        f"Each ratio is wirebench / the other, the median of {a.pairs} interleaved pairs, with the lowest and highest "
        "pair beside it; the absolute figures (medians) are this machine's.",
        "",
        "| figure | where | other | wirebench | ratio | pairs' range | target |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [f.row() for f in figs]
    return "\n".join(lines) + "\n"


def write_between_markers(path, text):
    with open(path) as f:
        doc = f.read()
    pat = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pat.search(doc):
        sys.exit(f"{path}: no {BEGIN} ... {END} markers")
    doc = pat.sub(lambda _: f"{BEGIN}\n{text}{END}", doc)
    with open(path, "w") as f:
        f.write(doc)
    print(f"wrote the table into {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wirebench", default="target/release/wirebench")
    ap.add_argument("--secs", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--only", default="tcp,udp,pacing,gen,frer,impair,rx")
    ap.add_argument("--write", action="store_true", help="put the table into README.md and the guide")
    a = ap.parse_args()
    if a.pairs < 5:
        sys.exit("--pairs must be at least 5: fewer pairs give no range worth quoting")
    if os.geteuid() != 0:
        sys.exit("needs root (namespaces and labs)")
    if not shutil.which("iperf3"):
        sys.exit("iperf3 is required: apt-get install iperf3")
    only = set(a.only.split(","))
    wb = os.path.abspath(a.wirebench)
    if not os.path.exists(wb):
        sys.exit(f"{wb} not found: run `cargo build --release` first")
    figs = []
    places = []
    if only & {"tcp", "udp", "pacing"}:
        compare.veth_up()
        places = [compare.Place("loopback", "127.0.0.1"),
                  compare.Place("veth", compare.ADDR_B, compare.NS_A, compare.NS_B)]
    try:
        for p in places:
            srv, port, ip3 = servers(p, wb)
            try:
                todo = []
                if "tcp" in only:
                    todo += tcp_figures(p, wb, port, a.secs)
                if "udp" in only:
                    todo += udp_figures(p, wb, port, a.secs)
                if "pacing" in only:
                    todo.append(pacing_figure(p, wb, port, a.secs))
                for f in todo:
                    f.run(a.pairs)
                    figs.append(f)
                if "udp" in only and p.name == "veth":
                    # iperf3's server stays up; the AF_XDP server takes the interface's
                    # receive path for its test's port only.
                    xfigs, xsrv = xdp_server_figures(p, wb, a.secs)
                    try:
                        for f in xfigs:
                            f.run(a.pairs)
                            figs.append(f)
                    finally:
                        compare.stop(xsrv)
            finally:
                compare.stop(srv)
                compare.stop(ip3)
    finally:
        if places:
            compare.veth_down()
    if "gen" in only:
        gfigs = gen_figures(wb, a.secs)
        if gfigs:
            run_lab(wb, gen_compare.LAB, ["direct"], gfigs, a.pairs)
            figs += gfigs
    if "frer" in only:
        figs += frer_figures(wb, a.secs, a.pairs)
    if "impair" in only:
        figs += impair_figures(wb, a.secs, a.pairs)
    if "rx" in only:
        rfigs = rx_figures(wb, a.secs)
        run_lab(wb, rx_compare.LAB, ["direct"], rfigs, a.pairs)
        figs += rfigs
    text = table(figs, a, wb)
    print()
    print(text)
    if a.write:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for doc in ("README.md", "docs/guide/src/performance.md"):
            write_between_markers(os.path.join(root, doc), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
