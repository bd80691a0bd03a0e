#!/usr/bin/env python3
"""Benchmark of the latency probe (`netsweep client --latency`).

1. Its cost: the same TCP test with and without --latency, interleaved over several rounds, on
   loopback and (as root) on a lab path; medians and the ratio (the target: at most 1% apart).
2. Its resolution: the clock it reads (CLOCK_MONOTONIC) and the spread of idle loopback RTTs.
3. Its truth against ping (as root): on a lab path with a rate and a queue, `ping` runs beside
   the test in the same namespace; idle and loaded medians of both are printed side by side.

Traffic goes to 127.0.0.1 and to the lab's own namespaces (198.18.0.0/15) only; every run is
bounded by --seconds and a timeout, and the lab is removed at exit.

    python3 bench/latency.py                    # 5 s runs, 5 rounds
    python3 bench/latency.py --seconds 3 --rounds 3

Needs a release build (cargo build --release); the lab parts need root and ping.
"""
import argparse
import atexit
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NETSWEEP = os.path.join(ROOT, "target", "release", "netsweep")
LAB = f"lb{os.getpid() % 100000}"
NS_A, NS_B = f"nsw-{LAB}-a", f"nsw-{LAB}-b"


def run_json(cmd, timeout):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {out.stderr.strip()[-300:]}")
    return json.loads(out.stdout)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(prefix, port):
    p = subprocess.Popen(prefix + [NETSWEEP, "server", "--port", str(port)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    atexit.register(p.kill)
    time.sleep(0.5)
    return p


def cost(prefix, host, port, seconds, rounds, label):
    base = [NETSWEEP, "client", host, "-p", str(port), "-t", str(seconds), "-O", "1", "-J"]
    cases = {"without --latency": base, "with --latency": base + ["--latency", "--latency-idle", "1s"]}
    got = {k: [] for k in cases}
    cpu = {k: [] for k in cases}
    for _ in range(rounds):
        order = list(cases)
        random.shuffle(order)
        for k in order:
            d = run_json(prefix + cases[k], seconds + 30)
            got[k].append(d["summary"]["bits_per_second"])
            c = d["cpu"]
            secs = sum(c[side][f] for side in ("local", "remote") for f in ("user_s", "system_s"))
            cpu[k].append(secs / max(d["summary"]["bytes"] / 1e9, 1e-9))
    a = statistics.median(got["without --latency"])
    b = statistics.median(got["with --latency"])
    print(f"[cost, {label}] TCP goodput, median of {rounds} interleaved rounds:")
    for k, v in got.items():
        print(f"  {k:<20} {statistics.median(v) / 1e9:8.3f} Gbit/s   runs {[round(x / 1e9, 2) for x in v]}")
    print(f"  with/without = {b / a:.4f}  (difference {100 * (b / a - 1):+.2f}%)")
    # The two runs of a round are adjacent in time: their ratio cancels the machine's drift.
    paired = [w / o for w, o in zip(got["with --latency"], got["without --latency"])]
    print(f"  median of the per-round ratios = {statistics.median(paired):.4f}  "
          f"(rounds {[round(x, 3) for x in paired]})")
    print("  CPU seconds per GB moved (both ends): " + ", ".join(
        f"{k} {statistics.median(v):.3f}" for k, v in cpu.items()))


def resolution(port):
    print("[resolution]")
    print(f"  CLOCK_MONOTONIC resolution: {time.clock_getres(time.CLOCK_MONOTONIC) * 1e9:.0f} ns "
          "(probes stamp send and receive times in ns from it)")
    d = run_json([NETSWEEP, "client", "127.0.0.1", "-p", str(port), "-t", "1", "-b", "10M", "-J",
                  "--latency", "--probe-rate", "1000", "--latency-idle", "2s"], 60)
    lat = d["latency"]
    cdf = dict((q, v) for q, v in lat["idle_cdf"])
    print(f"  idle loopback RTT over {lat['idle_probes']} probes: min {cdf[0.0] * 1e3:.1f} us, "
          f"p50 {lat['idle_p50_ms'] * 1e3:.1f} us, p99 {lat['idle_p99_ms'] * 1e3:.1f} us")


def ping_beside(cmd_ping, seconds, out):
    p = subprocess.run(cmd_ping, capture_output=True, text=True, timeout=seconds + 30)
    rows = []
    for line in p.stdout.splitlines():
        m = re.match(r"\[(\d+\.\d+)\].*time=([\d.]+) ms", line)
        if m:
            rows.append((float(m.group(1)), float(m.group(2))))
    out.extend(rows)


def against_ping(seconds):
    subprocess.run([NETSWEEP, "lab", "up", LAB, "--rate", "100M", "--rtt", "20ms", "--queue", "256K"],
                   check=True, capture_output=True, timeout=60)
    atexit.register(lambda: subprocess.run([NETSWEEP, "lab", "down", LAB], capture_output=True))
    start_server(["ip", "netns", "exec", NS_B], 5310)
    idle = 2
    total = idle + 1 + seconds + 1
    pings = []
    t = threading.Thread(target=ping_beside, args=(
        ["ip", "netns", "exec", NS_A, "ping", "-D", "-n", "-i", "0.05", "-w", str(total + 1),
         "198.18.0.2"], total, pings))
    t.start()
    d = run_json(["ip", "netns", "exec", NS_A, NETSWEEP, "client", "198.18.0.2", "-t", str(seconds),
                  "-O", "1", "-C", "cubic", "-J", "--latency", "--latency-idle", f"{idle}s"], total + 30)
    t.join()
    lat = d["latency"]
    # The probe's phases in wall time: the idle baseline from the start stamp, then the load; a
    # ping counts as loaded when it falls in a measured (not omitted) interval, as probes do.
    # (ping -D stamps the reply, so a ping's window is shifted by its own RTT: a few percent.)
    t0 = d["start"]["timestamp_unix_s"]
    load_at = t0 + lat["idle_s"]
    measured = [(load_at + i["start_s"], load_at + i["end_s"]) for i in d["intervals"] if not i["omitted"]]
    idle_ping = [r for ts, r in pings if t0 + r / 1e3 <= ts < load_at]
    loaded_ping = [r for ts, r in pings if any(a <= ts - r / 1e3 < b for a, b in measured)]
    print("[against ping] lab 100 Mbit/s, 20 ms RTT, 256 KB queue, cubic, ping -i 0.05 beside the test:")
    if idle_ping and loaded_ping:
        print(f"  idle   p50: netsweep {lat['idle_p50_ms']:7.2f} ms   ping {statistics.median(idle_ping):7.2f} ms "
              f"({len(idle_ping)} pings)")
        print(f"  loaded p50: netsweep {lat['loaded_p50_ms']:7.2f} ms   ping {statistics.median(loaded_ping):7.2f} ms "
              f"({len(loaded_ping)} pings)")
        print(f"  added by the load: netsweep {lat['added_ms']:.2f} ms, queue at the rate {256 * 1024 * 8 / 100e6 * 1e3:.2f} ms")
    else:
        print(f"  ping gave no usable samples ({len(pings)} lines)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--loopback-only", action="store_true", help="the loopback parts only")
    ap.add_argument("--ping-only", action="store_true", help="only the comparison with ping (root)")
    a = ap.parse_args()
    if not os.path.exists(NETSWEEP):
        sys.exit("build first: cargo build --release")
    if a.ping_only:
        against_ping(a.seconds)
        return
    port = free_port()
    start_server([], port)
    resolution(port)
    cost([], "127.0.0.1", port, a.seconds, a.rounds, "loopback")
    if a.loopback_only:
        return
    if os.geteuid() != 0:
        print("[lab parts skipped: not root]")
        return
    against_ping(a.seconds)
    cost(["ip", "netns", "exec", NS_A], "198.18.0.2", 5310, a.seconds, a.rounds, "lab 100 Mbit/s 20 ms")


if __name__ == "__main__":
    main()
