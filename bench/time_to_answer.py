#!/usr/bin/env python3
"""Time to answer: the documents' fixed protocol against `duration = "auto"` + `until = "decided"`.

The sweep is issue 27's: 5 windows x 3 sysctl profiles on a 1 Gbit/s, 20 ms lab (root: the lab
is two network namespaces the run creates and removes). Two campaigns of the same plan:

  fixed  5 rounds x 30 s per configuration, as the documents ran iperf by hand (without their
         60 s pauses, which would double the time again);
  auto   each run ends once its interval rates are steady (`duration = "auto"`), and the
         campaign ends once every comparison of the answer is decided (`until = "decided"`).

For each it prints the wall time, the runs, the measured seconds, and the answer (the headline,
each comparison's outcome, the windows' order); then whether both reached the same answer and the
ratio of wall times (target: the same answer in at most a tenth of the time).

    python3 bench/time_to_answer.py                      # both phases, about 45 minutes
    python3 bench/time_to_answer.py --phase auto         # one phase; results kept in --out
    python3 bench/time_to_answer.py --summary            # compare the phases kept in --out

The binary is copied at the start, so rebuilding during a run does not change what is measured.
"""

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

WINDOWS = ["64K", "128K", "512K", "1024K", "1536K"]

PROFILES = """
[profiles.small.linux]
"net.ipv4.tcp_rmem" = "4096 65536 1048576"
"net.ipv4.tcp_wmem" = "4096 16384 1048576"
[profiles.medium.linux]
"net.ipv4.tcp_rmem" = "4096 131072 6291456"
"net.ipv4.tcp_wmem" = "4096 16384 4194304"
[profiles.large.linux]
"net.ipv4.tcp_rmem" = "4096 131072 33554432"
"net.ipv4.tcp_wmem" = "4096 65536 33554432"
"""


def plan(phase, seed):
    if phase == "fixed":
        test = 'duration = "30s"\ninterval = "1s"'
        repeat = 'count = 5\norder = "interleaved"\npause = "0s"'
    else:
        test = 'duration = "auto"\ninterval = "0.25s"'
        repeat = 'until = "decided"\nmin = 3\nmax = 5\norder = "interleaved"\npause = "0s"'
    windows = ", ".join(f'"{w}"' for w in WINDOWS)
    return f"""name = "time to answer: {phase}"
[target]
kind = "lab"
rate = "1G"
rtt = "20ms"
[test]
{test}
[matrix]
window = [{windows}]
profile = ["small", "medium", "large"]
[repeat]
{repeat}
seed = {seed}
{PROFILES}"""


def answer_of(doc):
    """What the answer says, in a form two campaigns can be compared by: the dimension that
    matters most, each dimension's verdict (for an ordered one, the direction of every step),
    and, for information, every comparison's outcome."""
    def word(c):
        outcome = c.get("outcome")
        if outcome == "different":
            return "raises" if (c.get("ratio") or 1.0) > 1 else "lowers"
        if outcome in ("small_difference", "equivalent"):
            return "no practical difference"
        return outcome or "?"

    dims = doc.get("effects", [])
    verdicts, dimensions = {}, {}
    for c in doc.get("comparisons", []):
        verdicts[f"{c.get('dimension')}: {c.get('from')} -> {c.get('to')}"] = word(c)
    alpha = 1.0 - doc.get("confidence", 0.95)
    for e in dims:
        comps = e.get("comparisons", [])
        words = [word(c) for c in comps]
        if any(w in ("raises", "lowers") for w in words):
            verdict = "matters: " + ", ".join(
                f"{c['from']}->{c['to']} {w}" for c, w in zip(comps, words))
        elif (e.get("equivalence_p") or 1.0) < alpha or all(
                w == "no practical difference" for w in words):
            verdict = "no practical difference"
        else:
            verdict = "undecided"
        dimensions[e.get("dimension")] = verdict
    return {
        "headline": doc.get("answer", "").splitlines()[0] if doc.get("answer") else "",
        "first_dimension": dims[0].get("dimension") if dims else None,
        "dimensions": dimensions,
        "verdicts": verdicts,
    }


def explain_json(binary, db):
    out = subprocess.run([binary, "explain", "--db", db, "--json"],
                         capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout)


def run_phase(phase, binary, out, seed):
    work = tempfile.mkdtemp(prefix=f"tta-{phase}-")
    try:
        with open(os.path.join(work, "plan.toml"), "w") as f:
            f.write(plan(phase, seed))
        # The store is kept in --out: the campaign is the expensive part, and the analysis
        # can be redone from it (--summary reads the JSON written below).
        db = os.path.abspath(os.path.join(out, f"{phase}.db"))
        for stale in (db, db + "-wal", db + "-shm", db + ".lock"):
            if os.path.exists(stale):
                os.remove(stale)
        t0 = time.monotonic()
        run = subprocess.run(
            [binary, "run", "plan.toml", "--db", db],
            cwd=work, capture_output=True, text=True, timeout=4 * 3600,
        )
        wall = time.monotonic() - t0
        if run.returncode != 0:
            sys.stderr.write(run.stdout + run.stderr)
            raise SystemExit(f"{phase}: netsweep run failed ({run.returncode})")
        explain = subprocess.run(
            [binary, "explain", "--db", db, "--json"],
            cwd=work, capture_output=True, text=True, timeout=600, check=True,
        )
        text = subprocess.run(
            [binary, "explain", "--db", db],
            cwd=work, capture_output=True, text=True, timeout=600, check=True,
        ).stdout
        with sqlite3.connect(db) as con:
            runs, run_wall = con.execute(
                "SELECT count(*), sum(finished_unix - started_unix) FROM run"
            ).fetchone()
            measured = con.execute(
                "SELECT sum(s) FROM (SELECT max(end_s) - min(start_s) AS s "
                "FROM interval WHERE omitted = 0 GROUP BY run_id)"
            ).fetchone()[0]
        doc = json.loads(explain.stdout)
        record = {
            "phase": phase,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "wall_s": wall,
            "runs": runs,
            "measured_s": measured,
            "runs_wall_s": run_wall,
            "answer": answer_of(doc),
            "netsweep": run_version(binary),
            "explain": text,
        }
        with open(os.path.join(out, f"{phase}.json"), "w") as f:
            json.dump(record, f, indent=2)
        print(f"== {phase}: {wall:.0f} s wall, {runs} runs")
        print(text)
        return record
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_version(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True)
    return out.stdout.strip()


def summary(out, binary):
    recs = {}
    for phase in ("fixed", "auto"):
        p = os.path.join(out, f"{phase}.json")
        if os.path.exists(p):
            with open(p) as f:
                recs[phase] = json.load(f)
            # The answer read again from the kept store, by this binary's explain.
            db = os.path.join(out, f"{phase}.db")
            if os.path.exists(db) and os.path.exists(binary):
                recs[phase]["answer"] = answer_of(explain_json(binary, db))
    for phase, r in recs.items():
        print(f"{phase:6} {r['date']}: wall {r['wall_s']:7.0f} s, runs {r['runs']}, "
              f"measured {r['measured_s'] or 0:.0f} s")
        print(f"       {r['answer']['headline']}")
    if len(recs) < 2:
        print("both phases are needed for the comparison")
        return 1
    fixed, auto = recs["fixed"]["answer"], recs["auto"]["answer"]
    same_first = fixed["first_dimension"] == auto["first_dimension"]
    dims = sorted(set(fixed["dimensions"]) | set(auto["dimensions"]))
    dims_differ = [d for d in dims if fixed["dimensions"].get(d) != auto["dimensions"].get(d)]
    print("each dimension's verdict:")
    for d in dims:
        mark = "  " if d not in dims_differ else "!="
        print(f"  {mark} {d:10} fixed: {fixed['dimensions'].get(d, '-')}")
        print(f"     {'':10} auto:  {auto['dimensions'].get(d, '-')}")
    keys = sorted(set(fixed["verdicts"]) | set(auto["verdicts"]))
    differ = [k for k in keys if fixed["verdicts"].get(k) != auto["verdicts"].get(k)]
    print("each comparison (for information; a null dimension's pairs sit near the threshold):")
    for k in keys:
        mark = "  " if k not in differ else "!="
        print(f"  {mark} {k:40} fixed: {fixed['verdicts'].get(k, '-'):26} "
              f"auto: {auto['verdicts'].get(k, '-')}")
    ratio = recs["auto"]["wall_s"] / recs["fixed"]["wall_s"]
    same = same_first and not dims_differ
    print(f"same answer: {'yes' if same else 'no'} (what matters most: "
          f"{fixed['first_dimension']} / {auto['first_dimension']}; {len(dims) - len(dims_differ)} "
          f"of {len(dims)} dimensions' verdicts agree; {len(keys) - len(differ)} of {len(keys)} "
          f"comparisons)")
    print(f"wall time auto/fixed: {ratio:.3f} (target <= 0.100)")
    return 0 if same and ratio <= 0.1 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phase", choices=["fixed", "auto", "both"], default="both")
    ap.add_argument("--summary", action="store_true", help="only compare the kept phases")
    ap.add_argument("--netsweep", default="target/release/netsweep")
    ap.add_argument("--out", default="bench/results/time_to_answer")
    ap.add_argument("--seed", type=int, default=27)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if not a.summary:
        if os.geteuid() != 0:
            raise SystemExit("the lab needs root")
        keep = tempfile.mkdtemp(prefix="tta-bin-")
        binary = shutil.copy(a.netsweep, os.path.join(keep, "netsweep"))
        try:
            for phase in (["fixed", "auto"] if a.phase == "both" else [a.phase]):
                run_phase(phase, binary, a.out, a.seed)
        finally:
            shutil.rmtree(keep, ignore_errors=True)
    return summary(a.out, a.netsweep)


if __name__ == "__main__":
    sys.exit(main())
