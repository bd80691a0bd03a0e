#!/usr/bin/env python3
"""The seeds' NIC comparison: 3 NIC models x 3 interleaved rounds of 3 s tests, host b a QEMU
guest (root; the lab's namespaces and guests are created and removed by each campaign).

What is measured is the time a campaign spends outside its runs' own measured seconds: its wall
time (the whole `netsweep run`, lab up and down included) less 9 x 3 s, per run. Also printed:
the same less each run's whole interval grid (the 3 s and the 0.3 s send-path calibration
before them, which is part of every run). Each binary given runs the same plan --rounds times,
alternating (A B A B ...), and the medians and their ratio are printed.

    python3 bench/nic_sweep.py --binary before=/path/to/old/netsweep --binary after=target/release/netsweep
    python3 bench/nic_sweep.py --binary now=target/release/netsweep --rounds 1

The binaries are copied at the start, so rebuilding during a run does not change what is
measured. The guest image must exist (`netsweep lab vm-image`, once). Each binary first runs one
campaign that is printed but not counted: a netsweep that saves its guests' boots
(`lab::vm::snapshot`) boots and saves each NIC model's guest in its first campaign, as after an
install or upgrade, and resumes them in every later one; `--no-prime` counts that first one.
"""

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

NICS = ["virtio", "e1000", "rtl8139"]
SECONDS = 3
ROUNDS_IN_PLAN = 3

PLAN = f"""
name = "nic-sweep-bench"

[target]
kind = "lab"
vm = "b"
vcpus = 1
memory = 256

[test]
duration = "{SECONDS}s"

[matrix]
nic = {NICS!r}

[repeat]
count = {ROUNDS_IN_PLAN}
""".replace("'", '"')


def campaign(binary, workdir):
    """One campaign: (wall seconds, runs, measured seconds, grid seconds, runs that failed)."""
    plan = os.path.join(workdir, "nics.toml")
    with open(plan, "w") as f:
        f.write(PLAN)
    db = os.path.join(workdir, "nics.db")
    # The store and what SQLite keeps beside it: a write-ahead log left from the last campaign
    # would not belong to a new database.
    for f in (db, db + "-wal", db + "-shm", db + ".lock"):
        if os.path.exists(f):
            os.remove(f)
    t0 = time.monotonic()
    out = subprocess.run([binary, "run", plan, "--db", db], capture_output=True, text=True,
                         timeout=900)
    wall = time.monotonic() - t0
    if out.returncode != 0:
        sys.stderr.write(out.stdout[-2000:] + out.stderr[-2000:])
    with sqlite3.connect(db) as con:
        runs = con.execute("SELECT count(*) FROM run").fetchone()[0]
        failed = con.execute("SELECT count(*) FROM run WHERE status = 'failed'").fetchone()[0]
        grid = con.execute("SELECT sum(e) FROM (SELECT max(end_s) AS e FROM interval "
                           "GROUP BY run_id)").fetchone()[0] or 0.0
    return wall, runs, runs * SECONDS, grid, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", action="append", required=True, metavar="NAME=PATH")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-prime", action="store_true",
                    help="count each binary's first campaign too")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="nic-sweep-")
    binaries = []
    try:
        for spec in args.binary:
            name, path = spec.split("=", 1)
            copy = os.path.join(tmp, f"netsweep-{name}")
            shutil.copy2(path, copy)
            binaries.append((name, copy))
        overhead = {name: [] for name, _ in binaries}
        outside_grid = {name: [] for name, _ in binaries}
        if not args.no_prime:
            for name, binary in binaries:
                work = os.path.join(tmp, name)
                os.makedirs(work, exist_ok=True)
                wall, runs, measured, _, failed = campaign(binary, work)
                print(f"first campaign of {name} (not counted): {wall:.1f} s wall, {runs} runs "
                      f"({failed} failed), {(wall - measured) / max(runs, 1):.2f} s per run "
                      "outside the measured seconds", flush=True)
        for rnd in range(args.rounds):
            for name, binary in binaries:
                work = os.path.join(tmp, name)
                os.makedirs(work, exist_ok=True)
                wall, runs, measured, grid, failed = campaign(binary, work)
                per_run = (wall - measured) / max(runs, 1)
                per_run_grid = (wall - grid) / max(runs, 1)
                overhead[name].append(per_run)
                outside_grid[name].append(per_run_grid)
                print(f"round {rnd + 1} {name}: {wall:.1f} s wall, {runs} runs ({failed} failed), "
                      f"{measured} s measured ({grid:.1f} s of grids): {per_run:.2f} s per run "
                      f"outside the measured seconds, {per_run_grid:.2f} s outside the grids",
                      flush=True)
        print("\nmedian time per run outside the runs' measured seconds:")
        medians = {name: statistics.median(v) for name, v in overhead.items()}
        for name, m in medians.items():
            print(f"  {name:10s} {m:6.2f} s  (of {overhead[name]})")
        names = list(medians)
        for other in names[1:]:
            print(f"  {names[0]} / {other}: {medians[names[0]] / max(medians[other], 1e-9):.1f}x")
        print("median time per run outside the runs' whole grids (calibration included in them):")
        grids = {name: statistics.median(v) for name, v in outside_grid.items()}
        for name, m in grids.items():
            print(f"  {name:10s} {m:6.2f} s")
        for other in names[1:]:
            print(f"  {names[0]} / {other}: {grids[names[0]] / max(grids[other], 1e-9):.1f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
