#!/usr/bin/env python3
"""What one ask+answer cycle costs askbridge itself, in instructions, per askbridge binary.

Run: python3 scripts/askbridge_callgrind.py [--cycles 2000 | --runs 500] [--concurrency 16] LABEL=<askbridge> ...

The cycles benchmark's askbridge CPU per cycle is a time on a shared 2-core machine: it moves
with what else runs and with how requests happen to batch, so a cut of a few per cent does not
show. This counts instructions instead (this machine's VM has no hardware counters for `perf
stat`): each binary runs `askbridge serve` under valgrind's callgrind on a redis-server of its
own (no AOF), the ask+answer cycles of the benchmark (the same bodies, `--concurrency` keep-alive
connections, each asking and then answering) are sent after a warm-up, and callgrind counts only
those: instructions per cycle, every thread of the process (HTTP, the Redis connection, the
event pump). Run to run it moves by a per cent or two (how requests batch still varies). Each
label's ratio to the first. Only the standard library (and `redis_replay.py`'s Redis helpers).

A profiling build (`cargo bench --profile profiling --bench hot_path --no-run`) has symbols, so
`callgrind_annotate <dump>` shows where; pass `--keep DIR` to keep the dumps.

With `--runs N` it counts runs of the example `release` flow instead, as the runs section sends
them (its start, then three answers, each `POST /api/runs/{id}/answer` returning the next
question), and prints instructions per resume (three a run). valgrind's CPU has no SHA
extensions, so the flow's fingerprints (SHA-256, four a resume) count about 43k instructions
there in software, where this machine's SHA-NI takes a tenth of that (0.3 % of askbridge's
samples in `perf record`).

Copies are printed apart: glibc copies 2 KB and more with `rep movsb`, which callgrind counts
as one instruction per byte, where the processor moves 32 or 64 bytes a cycle. A cut that only
shrinks what is copied (a smaller future moved into its box) shows as thousands of
instructions that were a few hundred cycles. The figure "without copies" is the one to compare
for such cuts; `perf record` of the timed benchmark says what copying costs in time (7 % of
askbridge's samples on 2026-12-07).
"""

import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from redis_replay import free_port, redis_server  # noqa: E402  (one copy of each)

ASK = json.dumps({
    "session_id": "bench",
    "prompt": "Which library for date formatting, please?",
    "options": ["dayjs", "luxon", "date-fns"],
    "targets": [],
}).encode()
REPLY = json.dumps({"answer": "luxon"}).encode()
START = json.dumps({"flow": "release", "input": "2.0", "wait_s": 60}).encode()
RUN_ANSWERS = ["beta", "Faster.", True]
HEADERS = {"content-type": "application/json"}


def post(connection, path, body):
    connection.request("POST", path, body, HEADERS)
    response = connection.getresponse()
    data = response.read()
    if response.status not in (200, 201):
        raise RuntimeError(f"{path}: {response.status} {data[:200]!r}")
    return json.loads(data)


def cycle(connection):
    """One ask+answer cycle of the cycles benchmark."""
    asked = post(connection, "/api/questions", ASK)
    post(connection, f"/api/questions/{asked['id']}/reply", REPLY)


def run(connection):
    """One run of the example `release` flow answered one request per step, as the runs
    benchmark does: its start and three answers, each returning the next question."""
    step = post(connection, "/api/runs", START)
    for answer in RUN_ANSWERS:
        body = json.dumps({"answer": answer, "question_id": step["question"]["id"], "timeout_s": 60})
        step = post(connection, f"/api/runs/{step['id']}/answer", body.encode())
    if step.get("state") != "done":
        raise RuntimeError(f"run {step.get('id')} ended {step.get('state')!r}, not done")


def load(port, total, concurrency, one):
    """`total` times `one` (a cycle or a run) over `concurrency` keep-alive connections."""
    left = [total]
    lock = threading.Lock()
    failures = []

    def worker():
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            while True:
                with lock:
                    if left[0] == 0:
                        return
                    left[0] -= 1
                one(connection)
        except Exception as error:  # noqa: BLE001 (reported below, the run fails)
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(f"load failed: {failures[0]}")


def healthz(port):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    finally:
        connection.close()


def control(proc, port, *args):
    """Sends callgrind a command; it reads them while the process runs, so requests follow."""
    subprocess.run(["callgrind_control", *args, str(proc.pid)], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    for _ in range(5):
        time.sleep(0.2)
        healthz(port)


def instructions(binary, o, keep=None):
    """Instructions `binary` executes for `o.cycles` cycles (or `o.runs` runs) after `o.warm`,
    under callgrind."""
    tmp = tempfile.mkdtemp()
    redis, client = redis_server(tmp, False)
    redis_port = client.sock.getpeername()[1]
    port = free_port()
    out = os.path.join(tmp, "callgrind.out")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": tmp,
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}",
        "ASKBRIDGE_HTTP_ADDR": f"127.0.0.1:{port}",
        "ASKBRIDGE_LOG": "warn",
        "ASKBRIDGE_WORKER_THREADS": "1",
        "ASKBRIDGE_EXAMPLE_FLOWS": "true",
    }
    under = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    proc = subprocess.Popen([*under, binary, "serve"], env=env, cwd=tmp,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 180
        while True:
            try:
                if healthz(port):
                    break
            except OSError:
                pass
            if time.time() > deadline or proc.poll() is not None:
                raise RuntimeError(f"{binary} did not become healthy under valgrind")
            time.sleep(0.5)
        one, units = (run, o.runs) if o.runs else (cycle, o.cycles)
        load(port, o.warm, o.concurrency, one)
        control(proc, port, "--zero")
        control(proc, port, "--instr=on")
        load(port, units, o.concurrency, one)
        control(proc, port, "--instr=off")
        control(proc, port, "--dump")
        dumps = [f for f in os.listdir(tmp) if f.startswith("callgrind.out.")]
        newest = os.path.join(tmp, max(dumps, key=lambda f: int(f.rsplit(".", 1)[1])))
        if keep:
            shutil.copy(newest, keep)
        with open(newest) as f:
            total = next(int(line.split()[1]) for line in f if line.startswith("totals:"))
        return total, copied(newest)
    finally:
        for p in (proc, redis):
            p.terminate()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def copied(dump):
    """Instructions the dump counts in glibc's memcpy and memmove (one per byte past 2 KB)."""
    listing = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", dump],
                             capture_output=True, text=True, check=True).stdout
    return sum(int(line.split()[0].replace(",", "")) for line in listing.splitlines()
               if ":__mem" in line and "memmove-vec-unaligned-erms" in line)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cycles", type=int, default=2000)
    p.add_argument("--runs", type=int, metavar="N",
                   help="count N runs of the example `release` flow instead (per resume: three a run)")
    p.add_argument("--warm", type=int, default=300, help="cycles (or runs) before counting")
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--keep", metavar="DIR", help="keep each label's callgrind dump in DIR")
    p.add_argument("binaries", nargs="+", metavar="LABEL=<askbridge>")
    o = p.parse_args()
    first = None
    for item in o.binaries:
        label, binary = item.split("=", 1)
        keep = os.path.join(o.keep, f"callgrind.{label}") if o.keep else None
        total, copies = instructions(os.path.abspath(binary), o, keep)
        per = 3 * o.runs if o.runs else o.cycles
        per_cycle, copies = total / per, copies / per
        first = first or (per_cycle, per_cycle - copies)
        print(f"{label:12} askbridge instructions per {'resume' if o.runs else 'cycle'} {per_cycle:10.0f} (ratio {per_cycle / first[0]:.3f});"
              f" copies {copies:7.0f}; without copies {per_cycle - copies:10.0f} (ratio"
              f" {(per_cycle - copies) / first[1]:.3f})", flush=True)


if __name__ == "__main__":
    main()
