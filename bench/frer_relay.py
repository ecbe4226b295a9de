#!/usr/bin/env python3
"""FRER relay forwarding rate against plain kernel forwarding, on the same wiring.

Builds four namespaces (wb-bfr-src, -split, -merge, -dst; `wirebench lab down bfr` removes
them) wired src - split = two parallel links = merge - dst, with no impairment stage in
between, and measures two ways of getting frames from src to dst:

- kernel: split and merge each bridge their outer port and path A's port (Linux bridge,
  forwarding in the kernel; path B idle, so no loop);
- relay: `wirebench frer relay` on split replicates every frame onto both links with an
  R-TAG, `wirebench frer relay` on merge eliminates the duplicates and strips the tag;
- fast: the same relays with `--fast`: BPF programs on their ports do it in the kernel
  (the relay processes only run the reset timers and publish the counters).

`wirebench gen` (pinned to CPU 0) offers --pps frames/s (default: as fast as it goes) of 64- and 1518-byte frames for
--secs; the frames delivered per second are read from dst's interface counters, the same
meter for all. Each figure is the median of --repeat runs (default 3). Prints frames/s per
size and the ratios to the kernel bridge; on this 2-core machine the relays and the
generator share the cores, so compare the ratios, not the absolute rates.

    sudo python3 bench/frer_relay.py [--wirebench target/release/wirebench] [--secs 3] [--pps 0] [--repeat 3]
"""

import argparse
import json
import subprocess
import sys
import time

LAB = "bfr"
NS = {n: f"wb-{LAB}-{n}" for n in ("src", "split", "merge", "dst")}
MAC = {
    ("src", "eth0"): "02:77:62:00:50:01",
    ("split", "eth0"): "02:77:62:00:50:02",
    ("split", "eth1"): "02:77:62:00:51:01",
    ("merge", "eth1"): "02:77:62:00:51:02",
    ("split", "eth2"): "02:77:62:00:52:01",
    ("merge", "eth2"): "02:77:62:00:52:02",
    ("merge", "eth0"): "02:77:62:00:53:01",
    ("dst", "eth0"): "02:77:62:00:53:02",
}
LINKS = [
    (("src", "eth0"), ("split", "eth0"), 1500),
    (("split", "eth1"), ("merge", "eth1"), 1510),
    (("split", "eth2"), ("merge", "eth2"), 1510),
    (("merge", "eth0"), ("dst", "eth0"), 1500),
]


def sh(cmd, check=True, timeout=60):
    return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=timeout)


def teardown():
    for ns in NS.values():
        sh(["ip", "netns", "pids", ns], check=False)
        pids = sh(["ip", "netns", "pids", ns], check=False).stdout.split()
        for p in pids:
            sh(["kill", p], check=False)
        sh(["ip", "netns", "del", ns], check=False)


def build():
    for ns in NS.values():
        sh(["ip", "netns", "add", ns])
        sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        sh(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"])
    for (a, b, mtu) in LINKS:
        sh(["ip", "link", "add", a[1], "netns", NS[a[0]], "type", "veth", "peer", "name", b[1], "netns", NS[b[0]]])
        for end in (a, b):
            ns, dev = NS[end[0]], end[1]
            sh(["ip", "-n", ns, "link", "set", dev, "address", MAC[end], "mtu", str(mtu)])
            sh(["ip", "-n", ns, "link", "set", dev, "up"])


def kernel_bridges():
    for node, ports in (("split", ("eth0", "eth1")), ("merge", ("eth1", "eth0"))):
        ns = NS[node]
        sh(["ip", "-n", ns, "link", "add", "br0", "type", "bridge"])
        for p in ports:
            sh(["ip", "-n", ns, "link", "set", p, "master", "br0"])
        sh(["ip", "-n", ns, "link", "set", "br0", "up"])


def no_bridges():
    for node in ("split", "merge"):
        sh(["ip", "-n", NS[node], "link", "del", "br0"], check=False)


def relays(wb, fast=False):
    split = {"stream": [{"name": "all", "replicate": {"from": "eth0", "to": ["eth1", "eth2"]}}]}
    merge = {"stream": [{"name": "all", "eliminate": {"from": ["eth1", "eth2"], "to": "eth0", "history": 1024}}]}
    procs = []
    for node, cfg in (("split", split), ("merge", merge)):
        state = f"/run/wirebench/frer/bench-{node}.json"
        procs.append(subprocess.Popen(
            ["ip", "netns", "exec", NS[node], wb, "frer", "relay", "--config-json", json.dumps(cfg),
             "--state", state, "-J"] + (["--fast"] if fast else []),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
    time.sleep(1.0)
    return procs


def rx_packets():
    out = sh(["ip", "-n", NS["dst"], "-s", "-j", "link", "show", "eth0"]).stdout
    return json.loads(out)[0]["stats64"]["rx"]["packets"]


def offer(wb, size, pps, secs):
    before = rx_packets()
    t0 = time.monotonic()
    rate = ["-r", "100%", "--line-rate", "100G"] if pps == 0 else ["-r", f"{pps}pps"]
    sh(["taskset", "-c", "0", wb, "gen", "--lab", LAB, "src:eth0", "-s", str(size)] + rate + [
        "-t", str(secs), "--dst-mac", MAC[("dst", "eth0")], "--src-ip", "198.18.50.1",
        "--dst-ip", "198.18.50.2"], timeout=secs + 60)
    elapsed = time.monotonic() - t0
    time.sleep(0.3)
    return (rx_packets() - before) / min(elapsed, secs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wirebench", default="target/release/wirebench")
    ap.add_argument("--secs", type=float, default=3.0)
    ap.add_argument("--pps", type=int, default=0, help="offered frames/s (default 0: as fast as the generator goes)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure; the median is printed")
    a = ap.parse_args()
    teardown()
    build()
    results = {}
    paths = {}

    def measure(mode):
        for size in (64, 1518):
            runs = sorted(offer(a.wirebench, size, a.pps, a.secs) for _ in range(a.repeat))
            results[(mode, size)] = runs[len(runs) // 2]

    try:
        kernel_bridges()
        measure("kernel")
        no_bridges()
        for mode in ("relay", "fast"):
            procs = relays(a.wirebench, fast=mode == "fast")
            try:
                measure(mode)
            finally:
                for p in procs:
                    p.terminate()
                finals = [p.communicate(timeout=10)[0] for p in procs]
            docs = [json.loads(f)["relays"][0] for f in finals]
            paths[mode] = [d.get("data_path", "") for d in docs]
            if mode == "relay":
                drops = sum(p["kernel_drops"] for p in docs[1]["counters"]["ports"])
    finally:
        teardown()
    offered = f"{a.pps} frames/s" if a.pps else "as fast as the generator goes"
    print(f"offered {offered} for {a.secs} s, median of {a.repeat}; frames/s delivered at dst")
    print(f"{'frame':>6}  {'kernel bridge':>14}  {'userspace relays':>17}  {'ratio':>6}  {'fast path':>12}  {'ratio':>6}")
    for size in (64, 1518):
        k, r, f = results[("kernel", size)], results[("relay", size)], results[("fast", size)]
        print(f"{size:>6}  {k:>14,.0f}  {r:>17,.0f}  {r / k if k else 0:>6.2f}  {f:>12,.0f}  {f / k if k else 0:>6.2f}")
    print(f"data paths the relays reported: userspace run {paths['relay']}, fast run {paths['fast']}")
    print(f"merge relay (userspace): frames dropped by the kernel before it read them: {drops}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
