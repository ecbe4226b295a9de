#!/usr/bin/env python3
"""Raw receivers side by side: AF_XDP (`--rx-backend xdp`) against the TPACKET_V3 ring
(`--rx-backend ring`), in one run, on one lab.

Builds a `direct` lab (talker <-> listener over veth, `wirebench lab up direct --name
rxcmp`) and runs `wirebench gen talker:eth0 --rx listener:eth0 --backend xdp` with 64-byte
frames, the receiver's backend switched, two ways:

- max: the generator as fast as it goes for --secs; prints the frames the receiver counted
  per second (and the kernel's drops for that receiver). On veth the listener's receive
  path runs on the sending CPU, so this is the rate the pair reaches together;
- fixed: --pps frames/s (default 300,000, which both receivers take without loss); prints
  the CPU time the whole machine spent per million frames received (/proc/stat, every
  CPU, user + system + softirq), the receiver's cost where both move the same frames.

Each figure is the median of --repeat runs (default 3). Compare the ratios, not the
absolute rates: this machine has 2 cores and is noisy.

    sudo python3 bench/rx_compare.py [--wirebench target/release/wirebench] [--secs 3] [--pps 300000] [--repeat 3]
"""

import argparse
import json
import statistics
import subprocess
import sys

LAB = "rxcmp"
BACKENDS = ("ring", "xdp")


def sh(cmd, check=True, timeout=120):
    return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=timeout)


def busy_jiffies():
    with open("/proc/stat") as f:
        cpu = f.readline().split()
    # user nice system idle iowait irq softirq steal
    v = [int(x) for x in cpu[1:9]]
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]


def gen(wb, rx, secs, pps):
    rate = ["-r", "100%", "--line-rate", "100G"] if pps == 0 else ["-r", f"{pps}pps"]
    before = busy_jiffies()
    out = sh([wb, "gen", "talker:eth0", "--lab", LAB, "--rx", "listener:eth0", "-s", "64"] + rate + [
        "-t", str(secs), "--backend", "xdp", "--rx-backend", rx, "-J"], timeout=secs + 60).stdout
    cpu_s = (busy_jiffies() - before) / 100.0
    v = json.loads(out)
    g = v["gen"]
    return {
        "backend": v.get("backend", ""),
        "sent": g["sent"],
        "received": g["received"],
        "drops": g.get("rx_kernel_drops", 0),
        "rx_pps": g["received"] / secs,
        "cpu_per_mframe": cpu_s / (g["received"] / 1e6) if g["received"] else float("inf"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wirebench", default="target/release/wirebench")
    ap.add_argument("--secs", type=float, default=3.0)
    ap.add_argument("--pps", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    sh([a.wirebench, "lab", "down", LAB], check=False)
    sh([a.wirebench, "lab", "up", "direct", "--name", LAB])
    res = {}
    try:
        for _ in range(a.repeat):
            # Interleaved, so a slow moment of the machine hits both.
            for b in BACKENDS:
                res.setdefault(("max", b), []).append(gen(a.wirebench, b, a.secs, 0))
                res.setdefault(("fixed", b), []).append(gen(a.wirebench, b, a.secs, a.pps))
    finally:
        sh([a.wirebench, "lab", "down", LAB], check=False)

    def med(key, field):
        return statistics.median(r[field] for r in res[key])

    print(f"64-byte frames, generator: wirebench gen --backend xdp; medians of {a.repeat}")
    print(f"{'receiver':>9}  {'max: received/s':>16}  {'kernel drops':>12}  {'fixed ' + str(a.pps) + '/s: CPU s per Mframe':>32}  backend")
    for b in BACKENDS:
        print(f"{b:>9}  {med(('max', b), 'rx_pps'):>16,.0f}  {med(('max', b), 'drops'):>12,.0f}  "
              f"{med(('fixed', b), 'cpu_per_mframe'):>32.3f}  {res[('max', b)][0]['backend']}")
    r_max = med(("max", "xdp"), "rx_pps") / med(("max", "ring"), "rx_pps")
    r_cpu = med(("fixed", "ring"), "cpu_per_mframe") / med(("fixed", "xdp"), "cpu_per_mframe")
    print(f"xdp / ring: received at max {r_max:.2f}x; frames per CPU second at {a.pps}/s {r_cpu:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
