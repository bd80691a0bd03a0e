#!/usr/bin/env python3
"""netsweep's request/response test against sockperf's ping-pong and qperf's tcp_lat on
127.0.0.1, TCP, one transaction outstanding: transactions per second and p99 round trip.
Rounds are interleaved (the three tools in a fresh random order each round); medians and
netsweep's ratios to each peer are printed as a Markdown table.

    python3 bench/rr.py --netsweep target/release/netsweep --rounds 5 --seconds 5 [--pin 0]

With --spin TIME netsweep also runs with `--spin TIME` (both ends poll before they block) and
sockperf with its own polling flags (`--nonblocked --timeout 0` on both ends: epoll_wait that
returns at once, so its loop polls); each polling figure's ratio is taken against netsweep's
polling one.

With --pin CPU every tool runs a second time with both ends on that one CPU (netsweep's
`-A CPU,CPU`, qperf's `-ca CPU`, sockperf under `taskset -c CPU`), each pinned figure's
ratio taken against netsweep's pinned one.

How each peer's figures are read:
- netsweep: `client --test rr -r 1,1 -t S --json`: rr.transactions_per_second, rr.latency_us.p99
  (every transaction, round trip).
- sockperf (3.7): `sockperf sr --tcp` and `sockperf pp --tcp -m 14 --full-rtt -t S`: its
  smallest message is 14 bytes (its header); rate = ReceivedMessages / RunTime of the valid
  period; p99 from its "percentile 99.000" line (round trip with --full-rtt).
- qperf: `qperf` server and `qperf 127.0.0.1 -t S -m 1 tcp_lat`: qperf reports one-way latency,
  half the round trip, so one outstanding transaction implies rate = 1 / (2 x latency); it
  reports no percentiles.
"""

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

NS_PORT = "5391"
SP_PORT = "11111"
QP_PORT = "19766"


def taskset(pin):
    """The command prefix that pins a peer's process to CPU `pin` (none when unpinned)."""
    return [] if pin is None else ["taskset", "-c", str(pin)]


def run_netsweep(binary, seconds, pin=None, extra=()):
    srv = subprocess.Popen([binary, "server", "--bind", "127.0.0.1", "-p", NS_PORT],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        affinity = [] if pin is None else ["-A", f"{pin},{pin}"]
        out = subprocess.run([binary, "client", "127.0.0.1", "-p", NS_PORT, "--test", "rr",
                              "-r", "1,1", "-t", str(seconds), "--json"] + affinity + list(extra),
                             capture_output=True, text=True, timeout=seconds + 60)
        rr = json.loads(out.stdout)["rr"]
        return rr["transactions_per_second"], rr["latency_us"]["p99"]
    finally:
        srv.kill()
        srv.wait()


def run_sockperf(seconds, pin=None, extra=()):
    srv = subprocess.Popen(taskset(pin) + ["sockperf", "sr", "--tcp", "-i", "127.0.0.1", "-p", SP_PORT]
                           + list(extra),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        out = subprocess.run(taskset(pin) + ["sockperf", "pp", "--tcp", "-i", "127.0.0.1", "-p", SP_PORT,
                              "-m", "14", "--full-rtt", "-t", str(seconds)] + list(extra),
                             capture_output=True, text=True, timeout=seconds + 60)
        text = out.stdout + out.stderr
        m = re.search(r"\[Valid Duration\] RunTime=([\d.]+) sec; SentMessages=(\d+); "
                      r"ReceivedMessages=(\d+)", text)
        p99 = re.search(r"percentile 99\.000 =\s+([\d.]+)", text)
        if not m or not p99:
            raise RuntimeError("sockperf's output not understood:\n" + text)
        return int(m.group(3)) / float(m.group(1)), float(p99.group(1))
    finally:
        srv.kill()
        srv.wait()


def run_qperf(seconds, pin=None):
    srv = subprocess.Popen(taskset(pin) + ["qperf", "-lp", QP_PORT],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        affinity = [] if pin is None else ["-ca", str(pin)]
        out = subprocess.run(["qperf", "127.0.0.1", "-lp", QP_PORT, "-t", str(seconds),
                              "-m", "1"] + affinity + ["tcp_lat"],
                             capture_output=True, text=True, timeout=seconds + 60)
        m = re.search(r"latency\s*=\s*([\d.]+)\s*(ns|us|ms|sec)", out.stdout)
        if not m:
            raise RuntimeError("qperf's output not understood:\n" + out.stdout + out.stderr)
        one_way_us = float(m.group(1)) * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "sec": 1e6}[m.group(2)]
        return 1e6 / (2 * one_way_us), None
    finally:
        srv.kill()
        srv.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--netsweep", default="target/release/netsweep")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--pin", type=int, default=None, metavar="CPU",
                    help="also run every tool with both ends on CPU (netsweep -A CPU,CPU, "
                         "qperf -ca CPU, sockperf under taskset -c CPU)")
    ap.add_argument("--spin", default=None, metavar="TIME",
                    help="also run netsweep --spin TIME and sockperf --nonblocked --timeout 0")
    args = ap.parse_args()
    for tool in ("sockperf", "qperf"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is not installed (Debian: apt-get install {tool})")
    tmp = tempfile.mkdtemp(prefix="rr-bench-")
    binary = shutil.copy2(args.netsweep, f"{tmp}/netsweep")
    runners = {
        "netsweep": lambda: run_netsweep(binary, args.seconds),
        "sockperf": lambda: run_sockperf(args.seconds),
        "qperf": lambda: run_qperf(args.seconds),
    }
    if args.pin is not None:
        runners.update({
            "netsweep pinned": lambda: run_netsweep(binary, args.seconds, args.pin),
            "sockperf pinned": lambda: run_sockperf(args.seconds, args.pin),
            "qperf pinned": lambda: run_qperf(args.seconds, args.pin),
        })
    if args.spin is not None:
        runners.update({
            "netsweep polling": lambda: run_netsweep(binary, args.seconds,
                                                     extra=["--spin", args.spin]),
            "sockperf polling": lambda: run_sockperf(args.seconds,
                                                     extra=["--nonblocked", "--timeout", "0"]),
        })
    res = {k: [] for k in runners}
    for rnd in range(args.rounds):
        order = list(runners)
        random.shuffle(order)
        for name in order:
            rate, p99 = runners[name]()
            res[name].append((rate, p99))
            p99s = f"{p99:.1f}" if p99 is not None else "-"
            print(f"round {rnd + 1} {name}: {rate:.0f} transactions/s, p99 {p99s} us",
                  file=sys.stderr, flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    med = {}
    for name, rows in res.items():
        rates = [r for r, _ in rows]
        p99s = [p for _, p in rows if p is not None]
        med[name] = (statistics.median(rates), statistics.median(p99s) if p99s else None,
                     min(rates), max(rates))
    print("| tool | transactions/s (median) | range | p99 us (median) | netsweep / tool rate |")
    print("|---|---|---|---|---|")
    for name, (rate, p99, lo, hi) in med.items():
        ours = next((f"netsweep {kind}" for kind in ("pinned", "polling")
                     if name.endswith(kind)), "netsweep")
        ratio = med[ours][0] / rate
        p99s = f"{p99:.1f}" if p99 is not None else "not reported"
        print(f"| {name} | {rate:.0f} | {lo:.0f}-{hi:.0f} | {p99s} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
