#!/usr/bin/env python3
"""Two netsweep builds side by side on loopback: -P 1 and -P 2 TCP tests of --seconds, each
against its own build's server, in a freshly shuffled order every round; medians per build.
Tells a change of the data path from the machine's drift, which moves both builds alike.

    python3 bench/ab_builds.py --binary old=/path/to/old/netsweep --binary new=target/release/netsweep
    python3 bench/ab_builds.py ... --also "new:--no-zerocopy -l 1M"   # a build with fixed flags too

The binaries are copied first, so rebuilding during a run changes nothing measured.
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PORT = "5390"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", action="append", required=True, metavar="NAME=PATH")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--also", action="append", default=[], metavar="NAME:FLAGS",
                    help="also run build NAME with these client flags, as a case of its own")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ab-builds-")
    try:
        bins = {}
        for spec in args.binary:
            name, path = spec.split("=", 1)
            bins[name] = os.path.join(tmp, f"netsweep-{name}")
            shutil.copy2(path, bins[name])
        cases = {b: (b, []) for b in bins}
        for spec in args.also:
            name, flags = spec.split(":", 1)
            cases[f"{name} {flags}"] = (name, flags.split())
        res = {(c, p): [] for c in cases for p in ("1", "2")}
        for rnd in range(args.rounds):
            order = list(res)
            random.shuffle(order)
            for c, p in order:
                b, flags = cases[c]
                srv = subprocess.Popen([bins[b], "server", "--bind", "127.0.0.1", "--port", PORT],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    time.sleep(0.5)
                    out = subprocess.run([bins[b], "client", "127.0.0.1", "-p", PORT, "-t",
                                          str(args.seconds), "-P", p, "--json=netsweep"] + flags,
                                         capture_output=True, text=True,
                                         timeout=args.seconds + 60)
                finally:
                    srv.terminate()
                    srv.wait(timeout=10)
                bps = json.loads(out.stdout)["summary"]["bits_per_second"]
                res[(c, p)].append(bps)
                print(f"round {rnd + 1} {c} -P {p}: {bps / 1e9:.2f} Gbit/s", flush=True)
        for (b, p), v in res.items():
            print(f"{b:8s} -P {p}: median {statistics.median(v) / 1e9:.2f} Gbit/s "
                  f"(runs {', '.join(f'{x / 1e9:.1f}' for x in v)})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
