#!/usr/bin/env python3
"""netsweep's default TCP send path against each of its own fixed alternatives, on loopback.

Every round runs the default (calibrated, then re-checked on the warm connection) and each fixed
path (`-l 1M` is write(2) in 1 MiB calls, `-l 64K -Z` sendfile(2) in 64 KiB calls, ...)
in a freshly shuffled order, against one netsweep server; the summary gives each one's median
and the default's ratio to the best alternative. Issue 40's bar: the default's median is never
more than 5% below any alternative's.

The default's choice also rests on the host's record of earlier tests' re-checks
(`src/traffic/engine/sendpath/memory.rs`); the bench starts that record empty, in its own
directory, so the first rounds' defaults choose without it, as on a fresh host.

    python3 bench/sendpath.py --rounds 8 --seconds 5 [--streams 2] [--binary PATH]
"""

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import os

PORT = "5391"

ALTERNATIVES = {
    "default": [],
    "write 1M": ["-l", "1M"],
    "write 4M": ["-l", "4M"],
    "sendfile 1M": ["-l", "1M", "-Z"],
    "sendfile 64K": ["-l", "64K", "-Z"],
}


def kept(doc):
    """The path the default ended on, and whether a re-check switched it."""
    start = doc.get("start", {})
    path = f"{start.get('send_path')} {start.get('chunk_bytes', 0) >> 10}K"
    switches = sum(1 for r in start.get("rechecks", []) if r.get("switched"))
    remembered = start.get("send_path_remembered_tests")
    return (path + (f" ({switches} switch)" if switches else "")
            + (f" (record of {remembered} tests)" if remembered else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--streams", type=int, default=1)
    ap.add_argument("--binary", default="target/release/netsweep")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-sendpath-")
    binary = os.path.join(tmp, "netsweep")
    shutil.copy2(args.binary, binary)
    os.environ["NETSWEEP_RUNTIME_DIR"] = os.path.join(tmp, "state")
    srv = subprocess.Popen([binary, "server", "--bind", "127.0.0.1", "--port", PORT],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    res = {name: [] for name in ALTERNATIVES}
    try:
        time.sleep(0.5)
        for rnd in range(args.rounds):
            order = list(ALTERNATIVES)
            random.shuffle(order)
            for name in order:
                cmd = [binary, "client", "127.0.0.1", "-p", PORT, "-t", str(args.seconds),
                       "-P", str(args.streams), "--json=netsweep"] + ALTERNATIVES[name]
                out = subprocess.run(cmd, capture_output=True, text=True,
                                     timeout=args.seconds + 60)
                if out.returncode != 0:
                    print(f"round {rnd + 1} {name}: failed: {out.stderr.strip()}", flush=True)
                    continue
                doc = json.loads(out.stdout)
                bps = doc["summary"]["bits_per_second"]
                res[name].append(bps)
                extra = f"  [{kept(doc)}]" if name == "default" else ""
                print(f"round {rnd + 1} {name:13s} {bps / 1e9:6.2f} Gbit/s{extra}", flush=True)
    finally:
        srv.terminate()
        srv.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
    medians = {n: statistics.median(v) for n, v in res.items() if v}
    print(f"\n-P {args.streams}, {args.rounds} rounds x {args.seconds} s, medians:")
    for n, m in medians.items():
        runs = ", ".join(f"{x / 1e9:.1f}" for x in res[n])
        print(f"  {n:13s} {m / 1e9:6.2f} Gbit/s  ({runs})")
    if "default" not in medians or len(medians) < 2:
        sys.exit("not enough runs to compare")
    best = max((m, n) for n, m in medians.items() if n != "default")
    ratio = medians["default"] / best[0]
    print(f"  default / best alternative ({best[1]}): {ratio:.3f} "
          f"({'within' if ratio >= 0.95 else 'NOT within'} 5%)")


if __name__ == "__main__":
    main()
