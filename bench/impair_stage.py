#!/usr/bin/env python3
"""The impairment stage's forwarding rate against plain kernel forwarding, on the same lab.

Builds the `router` lab (`wirebench lab up router --name bim`: talker - dut - listener, the
dut forwarding IPv4 in the kernel) and then the `impair` lab of the same wiring (the dut
forwards through wirebench's impairment stage), and measures each way of getting frames
from talker to listener:

- kernel: the router lab, the dut's kernel forwards;
- fast: loss=1%,duplicate=1% (decided in the kernel by the stage's BPF program);
- fast, rate: loss=1%,duplicate=1%,rate=100G (the same plus the kernel's rate queue,
  HTB over a pfifo, at a rate that never limits);
- userspace: loss=1%,duplicate=1%,fast=off (the stage process forwards);
- delay: delay=1ms (delay holds frames back, so the stage process forwards).

`wirebench gen` (pinned to CPU 0) offers UDP frames of 64 bytes (18-byte payloads) and 1518
bytes as fast as it goes for --secs, addressed to the dut's MAC and the listener's IP; the
frames delivered per second are read from the listener's interface counters, the same meter
for all. Each figure is the median of --repeat runs (default 3). Prints frames/s per size
and the ratios to kernel forwarding; loss and duplication cancel out within 0.01 %. On this
2-core machine the stage and the generator share the cores: compare the ratios.

    sudo python3 bench/impair_stage.py [--wirebench target/release/wirebench] [--secs 3] [--repeat 3]
"""

import argparse
import json
import subprocess
import sys
import time

LAB = "bim"
DUT_MAC = "02:77:62:00:01:02"  # the dut's talker-side interface
SIZES = (64, 1518)
MODES = [
    ("kernel", "router", None),
    ("fast", "impair", "loss=1%,duplicate=1%"),
    ("fast, rate", "impair", "loss=1%,duplicate=1%,rate=100G"),
    ("userspace", "impair", "loss=1%,duplicate=1%,fast=off"),
    ("delay", "impair", "delay=1ms"),
]


def sh(cmd, check=True, timeout=120):
    return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=timeout)


def rx_packets():
    out = sh(["ip", "-n", f"wb-{LAB}-listener", "-s", "-j", "link", "show", "eth0"]).stdout
    return json.loads(out)[0]["stats64"]["rx"]["packets"]


def offer(wb, size, secs):
    before = rx_packets()
    t0 = time.monotonic()
    sh(["taskset", "-c", "0", wb, "gen", "--lab", LAB, "talker:eth0", "-s", str(size), "-r", "100%",
        "--line-rate", "100G", "-t", str(secs), "--dst-mac", DUT_MAC, "--src-ip", "198.18.1.1",
        "--dst-ip", "198.18.2.1"], timeout=secs + 60)
    elapsed = time.monotonic() - t0
    time.sleep(0.3)
    return (rx_packets() - before) / min(elapsed, secs)


def data_path(wb):
    try:
        with open(f"/run/wirebench/labs/{LAB}/dut.state.json") as f:
            return json.load(f).get("data_path", "")
    except OSError:
        return "kernel forwarding (no stage)"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wirebench", default="target/release/wirebench")
    ap.add_argument("--secs", type=float, default=3.0)
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure; the median is printed")
    a = ap.parse_args()
    sh([a.wirebench, "lab", "down", LAB], check=False)
    results, paths = {}, {}
    try:
        for mode, topology, impair in MODES:
            up = [a.wirebench, "lab", "up", topology, "--name", LAB]
            if impair:
                up += ["--impair", impair]
            sh(up)
            time.sleep(0.5)
            paths[mode] = data_path(a.wirebench)
            for size in SIZES:
                runs = sorted(offer(a.wirebench, size, a.secs) for _ in range(a.repeat))
                results[(mode, size)] = runs[len(runs) // 2]
            sh([a.wirebench, "lab", "down", LAB])
    finally:
        sh([a.wirebench, "lab", "down", LAB], check=False)
    print(f"offered as fast as the generator goes for {a.secs} s, median of {a.repeat}; frames/s delivered at the listener")
    head = f"{'frame':>6}"
    for mode, _, _ in MODES:
        head += f"  {mode:>12}" + ("" if mode == "kernel" else f"  {'ratio':>5}")
    print(head)
    for size in SIZES:
        k = results[("kernel", size)]
        line = f"{size:>6}"
        for mode, _, _ in MODES:
            v = results[(mode, size)]
            line += f"  {v:>12,.0f}" + ("" if mode == "kernel" else f"  {v / k if k else 0:>5.2f}")
        print(line)
    for mode, _, impair in MODES:
        print(f"{mode}: {impair or 'router lab'}: data path {paths[mode]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
