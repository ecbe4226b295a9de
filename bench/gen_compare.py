#!/usr/bin/env python3
"""Side-by-side frame generator benchmark: `wirebench gen` (each backend) against trafgen
and mausezahn (Debian package netsniff-ng), in one run, on one core.

Builds a `direct` lab (talker <-> listener over veth, `wirebench lab up`), sends the same
64-byte UDP frame (60 bytes + FCS, 198.18.0.1 -> 198.18.0.2) from the talker with each
tool pinned to CPU 0 for --secs seconds, and counts what arrived with the listener's
interface counters, the same neutral meter for every tool. Prints frames/s (median of
--repeat runs) and the ratios wirebench / peer. Absolute numbers vary with the machine;
compare ratios from one run.

    sudo python3 bench/gen_compare.py [--wirebench target/release/wirebench] [--secs 4] [--repeat 3]

Target (issue 4): wirebench >= 1.5x trafgen's single-thread rate and >= 2x mausezahn's,
64-byte frames, one core. Also (issue 19): `--threads 2` (CPUs 0 and 1) against trafgen
with two CPUs. `--sink drop` addresses the frames to a MAC the listener does not
own, so the listener's kernel drops them on arrival: on veth its receive work runs on the
sending CPU, and this takes most of it out of the measurement.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

LAB = "gencmp"
TALKER, LISTENER = f"wb-{LAB}-talker", f"wb-{LAB}-listener"
SRC_MAC, LISTENER_MAC = "02:77:62:00:00:01", "02:77:62:00:00:02"
# --sink drop: a MAC the listener does not own, so its kernel drops each frame right after
# the Ethernet header (the interface still counts it); measures the generators, not the
# listener's IP stack.
OTHER_MAC = "02:77:62:ff:ff:fe"
DST_MAC = LISTENER_MAC
SRC_IP, DST_IP = "198.18.0.1", "198.18.0.2"


def sh(cmd, check=True, timeout=120):
    return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=timeout)


def rx_packets():
    out = sh(["ip", "-n", LISTENER, "-s", "-j", "link", "show", "eth0"]).stdout
    return json.loads(out)[0]["stats64"]["rx"]["packets"]


def metered(cmd, secs, cpus="0"):
    """Runs `cmd` (in the talker's namespace, on CPUs `cpus`) for `secs` and returns the
    frames/s that reached the listener."""
    before = rx_packets()
    t0 = time.monotonic()
    full = ["ip", "netns", "exec", TALKER, "timeout", "--signal=INT", str(secs), "taskset", "-c", cpus] + cmd
    subprocess.run(full, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=secs + 30)
    elapsed = time.monotonic() - t0
    time.sleep(0.2)
    return (rx_packets() - before) / min(elapsed, secs)


def trafgen_conf(path):
    # Ethernet, IPv4 (total length 46, DF, TTL 64, checksum filled by trafgen's csumip),
    # UDP 49184 -> 7 length 26, 18 bytes of zeros: 60 bytes.
    mac = lambda m: ", ".join("0x" + b for b in m.split(":"))
    ip = lambda a: ", ".join(str(int(x)) for x in a.split("."))
    conf = f"""{{
  {mac(DST_MAC)}, {mac(SRC_MAC)}, 0x08, 0x00,
  0x45, 0x00, 0x00, 46, 0x00, 0x00, 0x40, 0x00, 64, 17, csumip(14, 33),
  {ip(SRC_IP)}, {ip(DST_IP)},
  0xc0, 0x20, 0x00, 0x07, 0x00, 26, 0x00, 0x00,
  fill(0x00, 18)
}}
"""
    with open(path, "w") as f:
        f.write(conf)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wirebench", default="target/release/wirebench")
    ap.add_argument("--secs", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sink", choices=["stack", "drop"], default="stack",
                    help="stack: frames go up the listener's IP stack; drop: dropped on arrival")
    a = ap.parse_args()
    global DST_MAC
    DST_MAC = LISTENER_MAC if a.sink == "stack" else OTHER_MAC
    if os.geteuid() != 0:
        sys.exit("needs root (namespaces, raw sockets)")
    wb = os.path.abspath(a.wirebench)
    missing = [t for t in ("trafgen", "mausezahn") if not shutil.which(t)]
    if missing:
        print(f"note: {', '.join(missing)} not installed (apt install netsniff-ng): those columns are skipped")
    sh([wb, "lab", "down", LAB], check=False)
    sh([wb, "lab", "up", "direct", "--name", LAB])
    conf = tempfile.NamedTemporaryFile(suffix=".cfg", delete=False).name
    trafgen_conf(conf)
    tools = {}
    for backend in ("packet", "ring", "xdp"):
        tools[f"wirebench ({backend})"] = [wb, "gen", "eth0", "-s", "64", "--line-rate", "100G", "-r", "100%",
                                            "-t", str(a.secs + 5), "--dst-ip", DST_IP, "--dst-mac", DST_MAC,
                                            "--src-port", "49184", "--backend", backend]
    # Two generator threads, each on its own transmit queue (the lab's veths have one per
    # CPU), against trafgen on two CPUs: both on CPUs 0 and 1.
    tools["wirebench (xdp, 2 threads)"] = tools["wirebench (xdp)"] + ["--threads", "2"]
    if shutil.which("trafgen"):
        tools["trafgen (1 cpu)"] = ["trafgen", "--dev", "eth0", "--conf", conf, "--cpus", "1", "--no-cpu-stats"]
        tools["trafgen (2 cpus)"] = ["trafgen", "--dev", "eth0", "--conf", conf, "--cpus", "2", "--no-cpu-stats"]
    if shutil.which("mausezahn"):
        tools["mausezahn"] = ["mausezahn", "eth0", "-c", "0", "-a", SRC_MAC, "-b", DST_MAC, "-A", SRC_IP,
                              "-B", DST_IP, "-t", "udp", "sp=49184,dp=7", "-p", "18", "-q"]
    results = {name: [] for name in tools}
    try:
        for _ in range(a.repeat):
            for name, cmd in tools.items():
                cpus = "0,1" if "2 " in name else "0"
                results[name].append(metered(cmd, a.secs, cpus))
    finally:
        sh([wb, "lab", "down", LAB], check=False)
        os.unlink(conf)
    med = {n: statistics.median(v) for n, v in results.items()}
    print(f"64-byte frames on veth, one core, {a.secs} s x {a.repeat}, sink {a.sink} (median; frames/s counted at the receiving interface)")
    for n, v in med.items():
        runs = ", ".join(f"{x/1e3:.0f}k" for x in results[n])
        print(f"  {n:<22} {v/1e3:8.0f} kpps   ({runs})")
    for peer in ("trafgen (1 cpu)", "mausezahn"):
        if peer not in med or med[peer] <= 0:
            continue
        for n in med:
            if n.startswith("wirebench") and "threads" not in n:
                print(f"  {n} / {peer}: {med[n] / med[peer]:.2f}x")
    two, peer2 = "wirebench (xdp, 2 threads)", "trafgen (2 cpus)"
    if med.get(peer2, 0) > 0:
        print(f"  {two} / {peer2}: {med[two] / med[peer2]:.2f}x")


if __name__ == "__main__":
    main()
