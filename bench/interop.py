#!/usr/bin/env python3
"""Interop agreement: netsweep and iperf3 measuring one test from its two ends.

Each case runs one test across the iperf3 protocol and reads every rate twice, once as each end
printed it:
  ns->i3  netsweep's client (-J, iperf3's schema, --get-server-output) against `iperf3 -s -J`:
          netsweep's end.sum_sent / sum_received against the iperf3 server's own document
          (server_output_json), the same quantities by the other program;
  i3->ns  iperf3's client (-J --get-server-output) against `netsweep server`: iperf3's
          end.sum_received (forward) or end.sum_sent (reverse), the far end's counts as iperf3
          computed them, against the netsweep server's own figures (its exact bytes and
          seconds, in server_output_text).
It prints each rate pair and their relative difference, the sender-receiver gap (bytes still in
socket buffers when the clocks stopped), and the median and worst difference per case over the
rounds. Cases run interleaved in a fresh random order each round. --busy keeps one core busy
(a bounded spin loop) for the whole run. --ends count runs the same cases as byte counts (-n,
about --seconds worth at the case's rate) instead of times; --ends time,count runs both.

Traffic goes to 127.0.0.1 only; every run is bounded by a timeout.

    python3 bench/interop.py                               # 3 s runs, 3 rounds, all cases
    python3 bench/interop.py --streams 1,8 --protos tcp --busy
    python3 bench/interop.py --ends count --busy           # -n instead of -t
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NETSWEEP = os.path.join(ROOT, "target", "release", "netsweep")
HOST = "127.0.0.1"
I3_PORT = "5231"
NS_PORT = "5331"
# Paced rates per direction (netsweep's -b is the total; iperf3's is per stream).
PACED_TOTAL = 2e9
UDP_UNPACED_TOTAL = 4e9
# What an unpaced TCP test moves per second on loopback here, roughly: sizes its byte count.
TCP_UNPACED_GUESS = 15e9


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-9)


def case_args(proto, streams, paced, reverse, iperf3_client, end="time"):
    total = PACED_TOTAL if paced else (UDP_UNPACED_TOTAL if proto == "udp" else 0)
    if end == "count":
        count = int((total or TCP_UNPACED_GUESS) * ARGS.seconds / 8)
        args = ["-n", str(count), "-P", str(streams)]
    else:
        args = ["-t", str(ARGS.seconds), "-P", str(streams)]
    if proto == "udp":
        args.append("-u")
    if total:
        rate = total / streams if iperf3_client else total
        args += ["-b", str(int(rate))]
    if proto == "udp":
        args += ["-l", "1400"]
    if reverse:
        args.append("-R")
    return args


def ns_to_i3(args):
    out = subprocess.run([NETSWEEP, "-c", HOST, "-p", I3_PORT, "--iperf3", "-J",
                          "--get-server-output"] + args,
                         capture_output=True, text=True, timeout=ARGS.seconds + 60)
    doc = json.loads(out.stdout)
    theirs = doc.get("server_output_json", {}).get("end", {})
    ours = doc.get("end", {})
    pairs = {}
    for key in ("sum_sent", "sum_received"):
        # The iperf3 server writes its output before it has the client's figures: the side it
        # did not count is 0 there, and only the side it counted is compared.
        if key in ours and key in theirs and theirs[key].get("bits_per_second", 0) > 0:
            pairs[key] = (ours[key]["bits_per_second"], theirs[key]["bits_per_second"])
    gap = None
    if "sum_sent" in ours and "sum_received" in ours:
        s, r = ours["sum_sent"]["bytes"], ours["sum_received"]["bytes"]
        gap = (s - r) / max(s, 1)
    return pairs, gap, doc.get("error") or (out.stderr.strip()[-200:] if out.returncode else None)


SERVER_PART = re.compile(r"(client to server|server to client) [^(]*\((\d+) bytes in ([0-9.]+) s\)")


def i3_to_ns(args):
    out = subprocess.run(["iperf3", "-c", HOST, "-p", NS_PORT, "-J", "--get-server-output"] + args,
                         capture_output=True, text=True, timeout=ARGS.seconds + 60)
    doc = json.loads(out.stdout)
    text = doc.get("server_output_text", "")
    end = doc.get("end", {})
    reverse = "-R" in args
    pairs = {}
    for direction, nbytes, secs in SERVER_PART.findall(text):
        rate = int(nbytes) * 8 / float(secs)
        # What the netsweep server counted as receiver (forward) or sender (reverse), against
        # the same figure in iperf3's document.
        if direction == "client to server" and not reverse and "sum_received" in end:
            pairs["sum_received"] = (end["sum_received"]["bits_per_second"], rate)
        if direction == "server to client" and reverse and "sum_received" in end:
            pairs["sum_received"] = (end["sum_received"]["bits_per_second"], rate)
    gap = None
    if "sum_sent" in end and "sum_received" in end:
        s, r = end["sum_sent"]["bytes"], end["sum_received"]["bytes"]
        gap = (s - r) / max(s, 1)
    return pairs, gap, doc.get("error")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--streams", default="1,8,64,128")
    ap.add_argument("--protos", default="tcp,udp")
    ap.add_argument("--busy", action="store_true", help="keep one core busy throughout")
    ap.add_argument("--ends", default="time", help="time, count, or time,count")
    ap.add_argument("--seed", type=int, default=None)
    global ARGS
    ARGS = ap.parse_args()
    rng = random.Random(ARGS.seed)
    cases = []
    for proto in ARGS.protos.split(","):
        for p in [int(x) for x in ARGS.streams.split(",")]:
            for paced in (False, True):
                for reverse in (False, True):
                    for roles in ("ns->i3", "i3->ns"):
                        for end in ARGS.ends.split(","):
                            cases.append((roles, proto, p, paced, reverse, end))
    procs = []
    try:
        procs.append(subprocess.Popen(["iperf3", "-s", "-J", "-B", HOST, "-p", I3_PORT],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen([NETSWEEP, "server", "--bind", HOST, "--port", NS_PORT,
                                       "--max-streams", "256"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        if ARGS.busy:
            limit = str((ARGS.seconds * 3 + 8) * len(cases) * ARGS.rounds + 60)
            procs.append(subprocess.Popen(["timeout", limit, "sh", "-c", "while :; do :; done"]))
        time.sleep(1)
        diffs = {c: [] for c in cases}
        gaps = {c: [] for c in cases}
        for rnd in range(ARGS.rounds):
            order = cases[:]
            rng.shuffle(order)
            for c in order:
                roles, proto, p, paced, reverse, end = c
                args = case_args(proto, p, paced, reverse, roles == "i3->ns", end)
                try:
                    pairs, gap, err = (ns_to_i3 if roles == "ns->i3" else i3_to_ns)(args)
                except (subprocess.TimeoutExpired, json.JSONDecodeError) as e:
                    pairs, gap, err = {}, None, str(e)[:200]
                worst = max((rel(a, b) for a, b in pairs.values()), default=None)
                shown = ", ".join(f"{k} {a / 1e9:.4f} vs {b / 1e9:.4f} Gbit/s"
                                  for k, (a, b) in pairs.items())
                print(f"round {rnd + 1} {roles} {proto} -P {p} {'paced' if paced else 'unpaced'}"
                      f"{' -R' if reverse else ''}{' -n' if end == 'count' else ''}: {shown or '-'}"
                      + (f"; worst diff {worst * 100:.3f}%" if worst is not None else "")
                      + (f"; sender-receiver gap {gap * 100:.1f}%" if gap is not None else "")
                      + (f"; ERROR {err}" if err else ""), flush=True)
                if worst is not None:
                    diffs[c].append(worst)
                if gap is not None:
                    gaps[c].append(gap)
                time.sleep(0.3)
        print("\ncase: median / worst difference between the two ends' printed rates; "
              "median sender-receiver gap")
        all_worst = []
        for c in cases:
            roles, proto, p, paced, reverse, end = c
            d = diffs[c]
            name = (f"{roles} {proto} -P {p} {'paced' if paced else 'unpaced'}"
                    f"{' -R' if reverse else ''}{' -n' if end == 'count' else ''}")
            if not d:
                print(f"{name:40s} no figures")
                continue
            all_worst.append(max(d))
            g = statistics.median(gaps[c]) * 100 if gaps[c] else float("nan")
            print(f"{name:40s} {statistics.median(d) * 100:7.3f}% / {max(d) * 100:7.3f}%   "
                  f"gap {g:5.1f}%")
        if all_worst:
            print(f"\nall cases: worst difference {max(all_worst) * 100:.3f}%; "
                  f"{sum(1 for w in all_worst if w <= 0.01)} of {len(all_worst)} within 1%")
    finally:
        for pr in procs:
            pr.terminate()
        for pr in procs:
            try:
                pr.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pr.kill()


if __name__ == "__main__":
    sys.exit(main())
