#!/usr/bin/env python3
"""What decoding a script's arguments costs Redis, per encoding (issue 29).

Run: [SCRIPT_ARGS_BEFORE=<lua dir>] python3 scripts/script_args_bench.py [calls, 40000] [rounds, 3]

Starts its own redis-server (no persistence) on a free port and, for the ARGV an ask and a claim
really send (captured with MONITOR during `cargo test --test it an_ask_is_one_command`; a claim
carrying a run ahead adds save_run's and insert_question's arguments as groups), calls
decode-only scripts that build the same table from:
  positional  ARGV read by index          named    `name, value, ...` read by lib/args.lua
  msgpack     one cmsgpack map            json     one cjson object
every one with the store's tag as the last ARGV (taken off as lib/announce.lua does), and an
empty script with no arguments as the floor. It prints Redis CPU per call: INFO cpu's
used_cpu_user+sys delta (parsing and replying included) and commandstats' usec_per_call
(the script alone), medians over alternating rounds. Then the real insert and claim scripts
(as src/store/redis/scripts.rs assembles them), an ask then its claim, same figures.
Only the standard library: the client speaks RESP over a socket and pipelines.
"""

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The scripts measured whole: this tree's and, with SCRIPT_ARGS_BEFORE=<dir>, another's in
# alternating turns (say one exported with `git archive <commit> src/store/redis/lua | tar -x -C
# <dir>`, then <dir>/src/store/redis/lua); its lib/args.lua says which encoding it reads.
LUA = os.path.join(ROOT, "src", "store", "redis", "lua")
BEFORE = os.environ.get("SCRIPT_ARGS_BEFORE")
# lib/args.lua as it read `name, value, ...` pairs in ARGV (commit 23c4581).
PAIRS_LUA = """
local function named()
    local a = {}
    local t = a
    for i = 1, #ARGV, 2 do
        local name, value = ARGV[i], ARGV[i + 1]
        if name == '.' then
            t = {}
            a[value] = t
        else
            t[name] = value
        end
    end
    return a
end
"""
TAG = b"s-77246bkvcc"
# The store's settings as src/store/redis/scripts.rs writes them into a script (a week's
# retention); a tree from before they were does not read them.
SETTINGS = ("local RETENTION, SESSION_TTL, SESSION_KEEP, EVENTS_MAXLEN, ANSWERS_KEPT = "
            "'604800000', 1209600000, '1213200000', '1000', 125\n")

# The named arguments MONITOR showed (an ask, then its answer), in the order sent.
ASK = [
    ("q", '{"id":"nb1y43q2v9","session_id":"budget","kind":"ask","prompt":"Which?","options":["a","b"],'
          '"created_at":"2026-12-06T19:02:28.717Z","expires_at":"2026-12-06T19:32:28.717Z"}'),
    ("event_head", '{"kind":"question.asked","question":'),
    ("event_tail", ',"status":"pending"}}'),
    ("deadline", "1796585548717"), ("asked", "1796583748717"), ("id", "nb1y43q2v9"),
    ("session_ttl", "1209600000"), ("session_keep", "1213200000"), ("due", "1796585548717"),
    ("maxlen", "1000"), ("target_ttl", "88200000"),
]
RES = '{"value":"a","by":"api","via":"api","at":"2026-12-06T19:02:29.139Z","message":null}'
CLAIM = [
    ("now", "1796583749139"), ("id", "nb1y43q2v9"), ("outcome", "won"), ("status", "answered"),
    ("res", RES),
    ("event", '{"kind":"question.replied","question":{"id":"nb1y43q2v9","session_id":"budget",'
              '"kind":"ask","prompt":"Which?","options":["a","b"],"created_at":"2026-12-06T19:02:28.717Z",'
              '"expires_at":"2026-12-06T19:32:28.717Z","status":"answered","resolution":' + RES + '}}'),
    ("token", "7jby7gvrnw"), ("retention", "604800000"), ("settle_at", "1796583759139"),
    ("session", "budget"), ("kind", "ask"), ("digest", ""), ("maxlen", "1000"),
    ("oldest_audit", "1788807749139"), ("answer_ms", "422"), ("answers_kept", "125"),
    ("finish_when_idle", "1"),
]
SAVE = [
    ("owner", "w-3kq9x"), ("data", '{"id":"r-8x2k","flow":"review","journal":[{"step":"ask","answer":"a"}],'
                                     '"input":{"doc":"contract-17"}}'),
    ("state", "waiting"), ("waiting_on", "pz81k3m2qa"), ("new_owner", ""), ("lease_until", ""),
    ("reported", "0"), ("updated_at", "1796583749139"), ("created_at", "1796583700000"),
    ("ttl", "0"), ("id", "r-8x2k"), ("event_head", '{"kind":"run.parked","run":'),
    ("event_tail", '}'), ("maxlen", "1000"),
]
# A claim that carries its run ahead: taking it, then the run saved and its next question.
AHEAD = CLAIM + [("has_run", "1"), ("take", "1"), ("owner", "w-3kq9x"),
                 ("lease_until", "1796583779139"), ("run_id", "r-8x2k"),
                 ("was", "1796583748700"), (".", "run")] + SAVE + [(".", "next")] + ASK


def grouped(pairs):
    """The table lib/args.lua builds from `pairs`: `'.', group` starts a nested table."""
    top = table = {}
    for name, value in pairs:
        if name == ".":
            table = top[value] = {}
        else:
            table[name] = value
    return top


def msgpack(value):
    """A msgpack map of str -> str or map (all this needs)."""
    if isinstance(value, dict):
        n = len(value)
        out = bytearray([0x80 | n] if n < 16 else [0xDE, n >> 8, n & 0xFF])
        for k, v in value.items():
            out += msgpack(k) + msgpack(v)
        return bytes(out)
    data = value.encode()
    n = len(data)
    if n < 32:
        return bytes([0xA0 | n]) + data
    if n < 256:
        return bytes([0xD9, n]) + data
    if n < 65536:
        return bytes([0xDA, n >> 8, n & 0xFF]) + data
    return bytes([0xDB]) + n.to_bytes(4, "big") + data


def positional_lua(pairs):
    """Reads each value by index into the same table shape."""
    lines = ["local ORIGIN = table.remove(ARGV)", "local a = {}", "local t = a"]
    i = 1
    for name, value in pairs:
        if name == ".":
            lines.append(f"t = {{}} a.{value} = t")
        else:
            lines.append(f"t.{name} = ARGV[{i}]")
            i += 1
    return "\n".join(lines + ["return 1"]), [v.encode() for n, v in pairs if n != "."]


def variants(pairs):
    """(name, script, argv) for each encoding of `pairs`."""
    named_argv = [b for n, v in pairs for b in (n.encode(), v.encode())]
    pos_script, pos_argv = positional_lua(pairs)
    table = grouped(pairs)
    return [
        ("empty", "return 1", []),
        ("positional", pos_script, pos_argv + [TAG]),
        ("named", "local ORIGIN = table.remove(ARGV)\n" + PAIRS_LUA + "\nlocal a = named()\nreturn 1",
         named_argv + [TAG]),
        ("msgpack", "local ORIGIN = table.remove(ARGV)\nlocal a = cmsgpack.unpack(ARGV[1])\nreturn 1",
         [msgpack(table), TAG]),
        ("json", "local ORIGIN = table.remove(ARGV)\nlocal a = cjson.decode(ARGV[1])\nreturn 1",
         [json.dumps(table, separators=(",", ":")).encode(), TAG]),
    ]


class Redis:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    @staticmethod
    def encode(*args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def _line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.sock.recv(1 << 20)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind in (b"+", b":"):
            return rest
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(1 << 20)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise RuntimeError(line)

    def call(self, *args):
        self.sock.sendall(self.encode(*args))
        return self.reply()

    def pipeline(self, commands, batch=256):
        for start in range(0, len(commands), batch):
            chunk = commands[start:start + batch]
            self.sock.sendall(b"".join(chunk))
            for _ in chunk:
                self.reply()

    def info(self, section):
        text = self.call("INFO", section).decode()
        return dict(l.split(":", 1) for l in text.splitlines() if ":" in l)


def measured(r, commands):
    """Redis CPU per call (INFO cpu delta) and commandstats' evalsha usec per call, in us."""
    r.call("CONFIG", "RESETSTAT")
    before = r.info("cpu")
    r.pipeline(commands)
    after = r.info("cpu")
    cpu = sum(float(after[k]) - float(before[k]) for k in ("used_cpu_user", "used_cpu_sys"))
    stats = r.info("commandstats").get("cmdstat_evalsha", "")
    usec = dict(kv.split("=") for kv in stats.split(","))["usec_per_call"] if stats else "nan"
    return cpu * 1e6 / len(commands), float(usec)


def whole(r, lua, calls, round_no):
    """The real insert and claim scripts in `lua`: `calls` asks, then a claim of each."""
    def lib(*names):
        return SETTINGS + "".join(open(os.path.join(lua, "lib", n)).read() for n in names)
    insert = lib("args.lua", "announce.lua", "insert_question.lua") + open(os.path.join(lua, "insert.lua")).read()
    claim = lib("args.lua", "announce.lua", "insert_question.lua", "save_run.lua") + open(os.path.join(lua, "claim.lua")).read()
    sha_i, sha_c = r.call("SCRIPT", "LOAD", insert), r.call("SCRIPT", "LOAD", claim)
    packed = "cmsgpack" in lib("args.lua")

    def argv(pairs):
        if packed:
            return [msgpack(grouped(pairs))]
        return [x for n, v in pairs for x in (n, v)]
    asks, claims = [], []
    for i in range(calls):
        qid = f"q{round_no}x{i:07d}"
        b = "{b%02d}" % (i % 16)
        p = f"askbridge:{b}:"
        ask = [(n, v.replace("nb1y43q2v9", qid)) for n, v in ASK]
        asks.append(Redis.encode("EVALSHA", sha_i, 6, p + "q:" + qid, p + "open", p + "pending",
                                 p + "session:budget", p + "events", p + "session-pending:budget",
                                 *argv(ask), TAG))
        cl = [(n, v.replace("nb1y43q2v9", qid)) for n, v in CLAIM]
        claims.append(Redis.encode("EVALSHA", sha_c, 13, p + "q:" + qid, p + "shown:" + qid, p + "fx:" + qid,
                                   p + "open", p + "pending", p + "done:answered", p + "events", p + "audit",
                                   p + "answers", p + "q:" + qid, p + "runs", p + "q:" + qid,
                                   p + "session-pending:budget", *argv(cl), TAG))
    figures = measured(r, asks), measured(r, claims)
    # Each ask stored its question and each claim answered it.
    last = f"askbridge:{{b%02d}}:q:q{round_no}x{calls - 1:07d}" % ((calls - 1) % 16)
    assert r.call("HGET", last, "status") == b"answered", "the claims did not win"
    return figures


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 40000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tmp = tempfile.mkdtemp()
    server = subprocess.Popen([shutil.which("redis-server"), "--port", str(port), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no", "--dir", tmp],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                r = Redis(port)
                r.call("PING")
                break
            except OSError:
                time.sleep(0.05)
        samples = {"ask": ASK, "claim": CLAIM, "claim+ahead": AHEAD}
        results = {}
        for rnd in range(rounds):
            for sample, pairs in samples.items():
                vs = variants(pairs)
                if rnd % 2:
                    vs.reverse()
                for name, script, argv in vs:
                    # Each builds the table lib/args.lua would.
                    if name != "empty":
                        check = r.call("EVAL", script.replace("return 1", "return cjson.encode(a)"), 0, *argv)
                        assert json.loads(check) == grouped(pairs), name
                    sha = r.call("SCRIPT", "LOAD", script)
                    cmd = Redis.encode("EVALSHA", sha, 0, *argv)
                    results.setdefault((sample, name), []).append(measured(r, [cmd] * calls))
            trees = [("", LUA)] + ([(" before", BEFORE)] if BEFORE else [])
            for i, (label, lua) in enumerate(trees[::-1] if rnd % 2 else trees):
                (ia, ic) = whole(r, lua, calls, rnd * 2 + i)
                results.setdefault(("whole" + label, "insert.lua"), []).append(ia)
                results.setdefault(("whole" + label, "claim.lua"), []).append(ic)
                r.call("FLUSHALL")
        print(f"redis {r.info('server')['redis_version']}, {calls} calls x {rounds} rounds, medians; before: {BEFORE}")
        print(f"{'sample':12} {'variant':11} {'ARGV bytes':>10} {'CPU us/call':>12} {'script us/call':>15}")
        for (sample, name), runs in results.items():
            cpu = statistics.median(c for c, _ in runs)
            usec = statistics.median(u for _, u in runs)
            size = ""
            if sample in samples:
                argv = dict((n, a) for n, _, a in variants(samples[sample]))[name]
                size = sum(len(a) for a in argv)
            print(f"{sample:12} {name:11} {size:>10} {cpu:12.2f} {usec:15.2f}")
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
