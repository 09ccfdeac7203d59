#!/usr/bin/env python3
"""What one ask+answer cycle costs Redis, per askbridge binary, from the commands it really sent.

Run: python3 scripts/redis_replay.py [--callgrind] [--copies 20] [--rounds 9] LABEL=<monitor file> ...

The whole-benchmark figure (`hot_path --only cycles`, Redis CPU per cycle) swings by up to 30 %
from run to run on a shared machine, because it is a small share of a process that also serves
HTTP. This prices only Redis's part, with nothing else running beside it: the exact commands a
binary sent during `hot_path --only commands`, captured with MONITOR, replayed on a fresh
redis-server of its own.

Capture (a wrapper as ASKBRIDGE_BINARY starts MONITOR on the Redis the bench gives it):

    printf '#!/bin/bash\nredis-cli -u "$REDIS_URL" monitor > /tmp/mon-A &\nexec <askbridge> "$@"\n' > w
    chmod +x w; ASKBRIDGE_BINARY=$PWD/w <hot_path bench> --only commands

Each capture's `SCRIPT LOAD`s are loaded, then its first two scripts' EVALSHAs (the ask's and
the answer's) are replayed as the cycles benchmark sends them: each answer 16 asks after its ask,
as 16 connections asking and answering would, 64 commands in flight.

--callgrind (the figure to quote): redis-server runs under valgrind's callgrind, counting only
the replay (after 16 cycles to warm up): instructions per cycle, the same in every run, so one
run per label is enough and a 1 % difference is real. Without it, timing: the captures replayed
`--copies` times (every question id rewritten per copy, same length, so the msgpack and JSON stay
whole), the labels taking turns round by round; Redis CPU per cycle (INFO cpu, parsing and
replies included) and the scripts' own time (commandstats), medians, without AOF and with
`appendfsync everysec`. Each label's ratio to the first. Only the standard library.
"""

import argparse
import os
import re
import shutil
import socket
import statistics
import string
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_args_bench import Redis  # noqa: E402  (the RESP client, one copy)

# Commands in flight: the replay's pipeline depth.
BATCH = 64
# How many connections the cycles benchmark asks and answers with.
LAG = 16
ESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t", "a": b"\a", "b": b"\b", "\\": b"\\", '"': b'"'}
ID = re.compile(rb"q:([0-9a-z]{10})$")
DIGITS = string.digits + string.ascii_lowercase


def parse_args(line):
    """The quoted arguments of one MONITOR line, unescaped (redis-cli prints them with sdscatrepr)."""
    start = line.index('] "') + 2
    args, i = [], start
    while i < len(line):
        if line[i] != '"':
            i += 1
            continue
        i += 1
        out = bytearray()
        while line[i] != '"':
            if line[i] == "\\":
                c = line[i + 1]
                if c == "x":
                    out.append(int(line[i + 2:i + 4], 16))
                    i += 4
                    continue
                out += ESCAPES[c]
                i += 2
                continue
            out += line[i].encode()
            i += 1
        args.append(bytes(out))
        i += 1
    return args


def evalshas(path):
    """(script bodies, [EVALSHA args] in the order sent, the SHAs in the order first seen, and
    where the benchmark's window starts: the number of EVALSHAs before its first `INFO`)."""
    scripts, calls, shas, window = [], [], [], None
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            if " [0 lua] " in line or '] "' not in line:
                continue
            if '] "INFO"' in line and window is None:
                window = len(calls)
            elif '"SCRIPT" "LOAD"' in line:
                scripts.append(parse_args(line)[2])
            elif '"EVALSHA"' in line:
                args = parse_args(line)
                if args[1] not in shas:
                    shas.append(args[1])
                calls.append(args)
    return scripts, calls, shas, window or 0


def capture(path):
    """(script bodies, [EVALSHA args] of the ask's and the answer's scripts) from a MONITOR file."""
    scripts, calls, shas, _ = evalshas(path)
    two = shas[:2]
    # The commands section asks, then answers: its ask and answer scripts come first.
    calls = [a for a in calls if a[1] in two]
    answers = [a for a in calls if a[1] == two[1]]
    # The asks after the last answer are another section's (the idle waiters').
    asks = [a for a in calls if a[1] == two[0]][:len(answers)]
    return scripts, asks, answers


def copied(calls, copy):
    """`calls` with each question id's last two characters replaced by `copy`, in every argument."""
    tail = (DIGITS[copy // 36] + DIGITS[copy % 36]).encode()
    out = []
    for args in calls:
        qid = ID.search(args[3]).group(1)
        new = qid[:-2] + tail
        out.append(Redis.encode(*(a.replace(qid, new) for a in args)))
    return out


def interleaved(asks, answers, lag=LAG):
    """Each answer `lag` asks after its ask, as `lag` connections cycling send them."""
    out = []
    for i in range(len(asks) + lag):
        if i < len(asks):
            out.append(asks[i])
        if i >= lag:
            out.append(answers[i - lag])
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_server(tmp, aof, under=()):
    """A redis-server of its own in `tmp` (run under `under`, say valgrind), and a client."""
    port = free_port()
    persist = ["--appendonly", "yes", "--appendfsync", "everysec"] if aof else ["--appendonly", "no"]
    proc = subprocess.Popen([*under, shutil.which("redis-server"), "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--dir", tmp, *persist],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            r = Redis(port)
            r.call("PING")
            return proc, r
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("redis-server did not start")


def cpu(r):
    info = r.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def script_usec(r):
    stats = r.info("commandstats").get("cmdstat_evalsha", "")
    return float(dict(kv.split("=") for kv in stats.split(","))["usec"]) if stats else 0.0


def one_round(r, scripts, commands, cycles):
    """Redis CPU and script time per cycle, in us, for one replay of `commands` on an empty Redis."""
    r.call("FLUSHALL")
    for body in scripts:
        r.call("SCRIPT", "LOAD", body)
    r.call("CONFIG", "RESETSTAT")
    before = cpu(r)
    r.pipeline(commands, batch=BATCH)
    return (cpu(r) - before) * 1e6 / cycles, script_usec(r) / cycles


def timed(work, rounds):
    for aof in (False, True):
        tmp = tempfile.mkdtemp()
        proc, r = redis_server(tmp, aof)
        try:
            figures = {label: [] for label in work}
            labels = list(work)
            for rnd in range(rounds):
                for label in (labels if rnd % 2 == 0 else labels[::-1]):
                    figures[label].append(one_round(r, *work[label]))
            setting = "AOF everysec" if aof else "no AOF"
            first = None
            for label in labels:
                c = statistics.median(f[0] for f in figures[label])
                s = statistics.median(f[1] for f in figures[label])
                first = first or (c, s)
                print(f"{setting:12} {label:12} Redis CPU per cycle {c:7.2f} us (ratio {c / first[0]:.3f})"
                      f"   scripts {s:6.2f} us (ratio {s / first[1]:.3f})"
                      f"   all rounds {' '.join(f'{f[0]:.1f}' for f in figures[label])}")
        finally:
            proc.terminate()
            proc.wait()
            shutil.rmtree(tmp, ignore_errors=True)


def callgrind_control(proc, r, *args):
    """Sends callgrind a command; it reads them while the server runs, so a few PINGs follow."""
    subprocess.run(["callgrind_control", *args, str(proc.pid)], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    for _ in range(5):
        time.sleep(0.2)
        r.call("PING")


def instructions(scripts, commands, warm=2 * LAG):
    """Instructions redis-server executes for `commands` after `warm` of them, under callgrind."""
    tmp = tempfile.mkdtemp()
    out = os.path.join(tmp, "callgrind.out")
    under = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    proc, r = redis_server(tmp, False, under)
    try:
        for body in scripts:
            r.call("SCRIPT", "LOAD", body)
        r.pipeline(commands[:warm], batch=BATCH)
        callgrind_control(proc, r, "--zero")
        callgrind_control(proc, r, "--instr=on")
        r.pipeline(commands[warm:], batch=BATCH)
        callgrind_control(proc, r, "--instr=off")
        callgrind_control(proc, r, "--dump")
        dumps = [f for f in os.listdir(tmp) if f.startswith("callgrind.out.")]
        with open(os.path.join(tmp, max(dumps, key=lambda f: int(f.rsplit(".", 1)[1])))) as f:
            return next(int(line.split()[1]) for line in f if line.startswith("totals:"))
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def resumes(o):
    """Instructions per resume: the first runs of `--only runs`, replayed in the order sent."""
    first = None
    for item in o.captures:
        label, path = item.split("=", 1)
        scripts, calls, _, start = evalshas(path)
        # The runs before the window warmed askbridge up: replayed, not counted.
        commands = [Redis.encode(*args) for args in calls[:start + 5 * o.runs]]
        per_resume = instructions(scripts, commands, warm=start) / (3 * o.runs)
        first = first or per_resume
        print(f"{label:12} Redis instructions per resume {per_resume:9.0f} (ratio {per_resume / first:.3f})",
              flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--callgrind", action="store_true", help="count instructions (deterministic)")
    p.add_argument("--copies", type=int, default=20)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--runs", type=int, metavar="N",
                   help="replay the 5N EVALSHAs of `--only runs`'s window (N runs of a start, three answers "
                        "and an end, after its first INFO) as sent, and count per resume (3N), under callgrind")
    p.add_argument("captures", nargs="+", metavar="LABEL=FILE")
    o = p.parse_args()
    if o.runs:
        return resumes(o)
    work = {}
    for item in o.captures:
        label, path = item.split("=", 1)
        scripts, asks, answers = capture(path)
        copies = 1 if o.callgrind else o.copies
        many = [[c for k in range(copies) for c in copied(calls, k)] for calls in (asks, answers)]
        work[label] = (scripts, interleaved(*many), len(asks) * copies)
        print(f"{label}: {len(scripts)} scripts, {len(asks)} asks and {len(answers)} answers x {copies}")
    if not o.callgrind:
        return timed(work, o.rounds)
    first = None
    for label, (scripts, commands, cycles) in work.items():
        per_cycle = instructions(scripts, commands) / (cycles - LAG)
        first = first or per_cycle
        print(f"{label:12} Redis instructions per cycle {per_cycle:9.0f} (ratio {per_cycle / first:.3f})",
              flush=True)


if __name__ == "__main__":
    main()
