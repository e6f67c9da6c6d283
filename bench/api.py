"""Benchmark: the REST API under HTTP load (wrk over loopback) and end-to-end latency by broker.

Two parts, each against real `genservice run` services started (and stopped) by this script in
temporary data directories, with the per-key limits off (rate, daily quota, active jobs):

- e2e: a best-of-4 generation (same prompt, fixed seeds) with the shipped tiny model, timed from
  POST /v1/generations until GET /v1/generations/{id} (polled every 50 ms) says it has ended.
  Two services run at once, on different ports and data directories, both on SQLite, so only
  the broker differs: the embedded one (a folder in the data directory) and Redis
  (GENSERVICE_BROKER_URL, a scratch db number, flushed before and after). Jobs go one at a time,
  alternating A,B then B,A, so that only one service works at any moment and drift hits both
  alike; one warm-up job each first loads the model. Per broker: median, p90, min, and the
  median time outside generating and validating (queue hops, export, polling: the part a broker
  can change, and not drowned in the noise of sampling on a shared machine); ratios Redis over
  embedded. The CPU each idle service burns is shown, since the idle one runs beside the other.
- load: wrk (one Lua script per endpoint, written to a temporary file) at 50 and 200
  connections against the API alone (`genservice run --no-workers`, embedded broker, SQLite, on
  the embedded e2e service's data directory when that part ran), so that no worker competes for
  the CPUs: submission POST /v1/generations (tiny prompt, n=1; every request creates a real job
  that stays queued), and status polls GET /v1/generations/{id} of a queued job and of a done
  job (its result, with every candidate's report, is the larger body). wrk's timeout is raised
  to 30 s so that slow requests count in the latency instead of being dropped as timeouts.

Needs wrk (`apt-get install -y wrk`) and, for e2e, Redis at --redis-url.
Usage: .venv/bin/python -m bench.api [--duration 10] [--connections 50 200] [--repeats 5]
       [--parts e2e,load] [--redis-url redis://127.0.0.1:6379/7] [--keep LOG_DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# In the tiny model's training families, so most best-of-4 jobs succeed and go through export;
# short programs, so the broker's share of the time is not lost in the noise.
PROMPT = (
    "A knob 40 mm diameter, 20 mm tall, with twelve 4 mm notches around the rim "
    "and a 6 mm shaft hole 10 mm deep."
)
TINY_PROMPT = "A 10 mm cube."
TERMINAL = ("done", "failed", "cancelled")
WRK_MARK = "WRK_JSON "
NO_LIMITS = {
    "GENSERVICE_RATE_LIMIT_PER_MINUTE": "0",
    "GENSERVICE_JOBS_PER_DAY": "0",
    "GENSERVICE_ACTIVE_JOBS_PER_KEY": "0",
    "GENSERVICE_SANDBOX_WORKERS": "2",
}

# Per-thread status counts, summed over threads in done(); one JSON line on stdout.
WRK_LUA_COMMON = r"""
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) statuses = {} end
function response(status, headers, body)
  local k = tostring(status)
  statuses[k] = (statuses[k] or 0) + 1
end
function done(summary, latency, requests)
  local counts = {}
  for _, t in ipairs(threads) do
    local s = t:get("statuses")
    if s then for k, v in pairs(s) do counts[k] = (counts[k] or 0) + v end end
  end
  local parts = {}
  for k, v in pairs(counts) do table.insert(parts, string.format('"%s": %d', k, v)) end
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests": %d, "duration_us": %d, "bytes": %d, ' ..
    '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, ' ..
    '"latency_us": {"mean": %.1f, "p50": %d, "p90": %d, "p99": %d, "max": %d}, ' ..
    '"statuses": {%s}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, table.concat(parts, ", ")))
end
"""


def need_wrk() -> str:
    """The wrk executable, or exit saying how to install it."""
    found = shutil.which("wrk")
    if found is None:
        raise SystemExit(
            "bench/api.py needs the HTTP load generator wrk, which is not on PATH.\n"
            "Install it with: apt-get install -y wrk   (Debian/Ubuntu package 'wrk')"
        )
    return found


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _proc_table() -> dict[int, tuple[int, str, float]]:
    """Every live process: pid -> (parent pid, start time, CPU seconds incl. reaped children)."""
    tick = os.sysconf("SC_CLK_TCK")
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        # after the name: state ppid ... utime(11) stime(12) cutime(13) cstime(14) ... start(19)
        cpu = sum(int(f) for f in fields[11:15]) / tick
        if fields[0] != "Z":  # a zombie has ended; nobody may have reaped it yet
            table[int(entry.name)] = (int(fields[1]), fields[19], cpu)
    return table


def process_tree(root: int) -> dict[int, tuple[str, float]]:
    """The process and its descendants: pid -> (start time, CPU seconds)."""
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            found[pid] = (table[pid][1], table[pid][2])
            todo.extend(children.get(pid, []))
    return found


class Client:
    """A keep-alive JSON client for one service."""

    def __init__(self, port: int, key: str) -> None:
        self.port = port
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self.conn: http.client.HTTPConnection | None = None

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One request; the decoded JSON body (raises on an HTTP error status)."""
        data = json.dumps(body).encode() if body is not None else None
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            try:
                self.conn.request(method, path, body=data, headers=self.headers)
                response = self.conn.getresponse()
                payload = response.read()
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
                continue
            if response.status >= 300:
                raise RuntimeError(f"{method} {path}: HTTP {response.status}: {payload[:300]!r}")
            return json.loads(payload)
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the connection."""
        if self.conn is not None:
            self.conn.close()


class Service:
    """A `genservice run` started in its own session, stopped with SIGINT (then harder)."""

    def __init__(
        self, name: str, data_dir: Path, env: dict[str, str], *, workers: bool = True
    ) -> None:
        self.name = name
        self.data_dir = data_dir
        self.port = free_port()
        self.env = env
        self.workers = workers
        self.log_path = data_dir.parent / f"{name}-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.key = ""
        self.outlived: list[str] = []  # children still alive 10 s after the service exited

    def start(self, timeout_s: float = 180.0) -> Service:
        """Start and wait until /healthz answers and the local key exists."""
        argv = [sys.executable, "-m", "genservice", "run"]
        argv += ["--data-dir", str(self.data_dir), "--port", str(self.port)]
        if not self.workers:
            argv.append("--no-workers")
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                argv, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + timeout_s
        key_file = self.data_dir / "local-api-key"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited at start:\n{self.log_tail()}")
            if key_file.is_file() and "[genservice] open http" in self.log_text():
                self.key = key_file.read_text().strip()
                return self
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} did not answer /healthz in {timeout_s} s")

    def client(self) -> Client:
        """A client with the service's local key."""
        return Client(self.port, self.key)

    def cpu_s(self) -> float:
        """CPU seconds used so far by the service's live process tree."""
        if self.process is None:
            return 0.0
        return sum(cpu for _, cpu in process_tree(self.process.pid).values())

    def log_text(self) -> str:
        """The service's output so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of its output."""
        return "\n".join(self.log_text().splitlines()[-lines:])

    def stop(self) -> None:
        """SIGINT the supervisor and wait; kill it and any child it left behind if need be."""
        if self.process is None or self.process.poll() is not None:
            return
        tree = process_tree(self.process.pid)
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            print(f"{self.name}: no exit 60 s after SIGINT; killing it", file=sys.stderr)
            self.process.kill()
            self.process.wait()
        deadline = time.monotonic() + 10  # sandboxes die with their parent, a moment later
        while True:
            now = _proc_table()
            left = [p for p, (started, _) in tree.items() if p in now and now[p][1] == started]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        for pid in left:  # the same processes (start time checked), not reused pids
            with contextlib.suppress(OSError):
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                self.outlived.append(command.decode(errors="replace")[:200])
            print(
                f"{self.name}: child {pid} outlived the service by 10 s; killing it",
                file=sys.stderr,
            )
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def log_problems(text: str) -> dict[str, Any]:
    """Counts of worrying lines in a service log, and the end of its first traceback."""
    first = ""
    start = text.find("Traceback (most recent call last)")
    if start >= 0:
        block = text[start:].splitlines()[:80]
        end = next((i for i, ln in enumerate(block[1:], 1) if not ln.startswith(" ")), 0)
        first = "\n".join(block[max(0, end - 6) : end + 1])
    return {
        "first_traceback_end": first,
        "tracebacks": text.count("Traceback (most recent call last)"),
        "client_disconnect_tracebacks": text.count("starlette.requests.ClientDisconnect"),
        "error_lines": len(re.findall(r"\b(ERROR|CRITICAL)\b", text)),
        "http_5xx": len(re.findall(r'HTTP/1\.1" 5\d\d', text)),
        "restarts": text.count("; restarting it"),
        "worker_lost": text.count("worker lost"),
    }


def service_env(broker_url: str | None) -> dict[str, str]:
    """The environment for a service: limits off, SQLite, the given broker (None: embedded)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENSERVICE_")}
    env.update(NO_LIMITS)
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    if broker_url:
        env["GENSERVICE_BROKER_URL"] = broker_url
    return env


def run_job(client: Client, body: dict[str, Any], poll_s: float) -> dict[str, Any]:
    """Submit one generation and poll until it ends; its timings and outcome."""
    started = time.perf_counter()
    job_id = client.call("POST", "/v1/generations", body)["id"]
    polls = 0
    while True:
        job = client.call("GET", f"/v1/generations/{job_id}")
        polls += 1
        if job["status"] in TERMINAL:
            break
        time.sleep(poll_s)
    elapsed = time.perf_counter() - started
    result = job.get("result") or {}
    generation = result.get("generation") or {}
    compute = None
    if generation.get("generate_s") is not None and result.get("validate_s") is not None:
        compute = generation["generate_s"] + result["validate_s"]
    return {
        "id": job_id,
        "seed": body["seed"],
        "status": job["status"],
        "e2e_s": elapsed,
        "server_s": (job.get("finished_at") or job["updated_at"]) - job["created_at"],
        "generate_s": generation.get("generate_s"),
        "validate_s": result.get("validate_s"),
        "outside_generate_validate_s": None if compute is None else elapsed - compute,
        "program": result.get("program"),
        "error": job.get("error"),
        "polls": polls,
    }


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1), linear between closest ranks."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def flush_redis(url: str) -> None:
    """FLUSHDB the scratch Redis database."""
    import redis

    client = redis.Redis.from_url(url, socket_timeout=5)
    try:
        client.flushdb()
    finally:
        client.close()


def e2e_part(args: argparse.Namespace, scratch: Path) -> tuple[dict[str, Any], Path | None]:
    """Best-of-N generations on two live services, embedded broker vs Redis, alternating."""
    try:
        flush_redis(args.redis_url)
    except Exception as exc:
        raise SystemExit(
            f"bench/api.py: no Redis at {args.redis_url} ({exc}); start one, pass --redis-url, "
            "or run only the load part with --parts load"
        ) from exc
    services = {
        "embedded": Service("embedded", scratch / "embedded", service_env(None)),
        "redis": Service("redis", scratch / "redis", service_env(args.redis_url)),
    }
    try:
        for service in services.values():
            print(f"e2e: starting the {service.name} service", file=sys.stderr)
            service.start()
        clients = {name: s.client() for name, s in services.items()}

        def body(seed: int) -> dict[str, Any]:
            """The request for one seed."""
            return {"prompt": args.prompt, "n": args.n, "seed": seed, "domain": "cad"}

        warmup = {}
        for name, client in clients.items():
            print(f"e2e: warm-up job on {name} (loads the model)", file=sys.stderr)
            warmup[name] = run_job(client, body(10_000), args.poll_s)
        time.sleep(1.0)
        idle_window = 5.0
        before = {name: s.cpu_s() for name, s in services.items()}
        time.sleep(idle_window)
        idle_cpu = {name: (s.cpu_s() - before[name]) / idle_window for name, s in services.items()}
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in services}
        for i in range(args.repeats):
            order = ("embedded", "redis") if i % 2 == 0 else ("redis", "embedded")
            for name in order:
                run = run_job(clients[name], body(args.seed + i), args.poll_s)
                runs[name].append(run)
                print(
                    f"e2e: round {i + 1}/{args.repeats} {name:8s} {run['status']:6s} "
                    f"{run['e2e_s']:.3f} s",
                    file=sys.stderr,
                )
        for client in clients.values():
            client.close()
    finally:
        for service in services.values():
            service.stop()
        with contextlib.suppress(Exception):
            flush_redis(args.redis_url)
    brokers = {}
    for name, done in runs.items():
        e2e = [r["e2e_s"] for r in done]
        server = [r["server_s"] for r in done]
        outside = [
            r["outside_generate_validate_s"]
            for r in done
            if r["outside_generate_validate_s"] is not None
        ]
        brokers[name] = {
            "median_s": statistics.median(e2e),
            "p90_s": percentile(e2e, 0.9),
            "min_s": min(e2e),
            "server_median_s": statistics.median(server),
            "outside_generate_validate_median_s": statistics.median(outside) if outside else None,
            "idle_cpu_fraction": idle_cpu[name],
            "statuses": [r["status"] for r in done],
            "warmup_s": warmup[name]["e2e_s"],
            "runs": [{k: v for k, v in r.items() if k != "program"} for r in done],
            "log_problems": log_problems(services[name].log_text()),
            "children_outliving_stop": services[name].outlived,
        }
    same = all(
        (a["status"], a["program"]) == (b["status"], b["program"])
        for a, b in zip(runs["embedded"], runs["redis"], strict=True)
    )
    result = {
        "prompt": args.prompt,
        "n": args.n,
        "seeds": [args.seed + i for i in range(args.repeats)],
        "repeats": args.repeats,
        "poll_s": args.poll_s,
        "database": "sqlite (both)",
        "redis_url": args.redis_url,
        "brokers": brokers,
        "ratio_redis_vs_embedded_median": brokers["redis"]["median_s"]
        / brokers["embedded"]["median_s"],
        "ratio_redis_vs_embedded_p90": brokers["redis"]["p90_s"] / brokers["embedded"]["p90_s"],
        "ratio_redis_vs_embedded_min": brokers["redis"]["min_s"] / brokers["embedded"]["min_s"],
        "ratio_redis_vs_embedded_outside_generate_validate": (
            brokers["redis"]["outside_generate_validate_median_s"]
            / brokers["embedded"]["outside_generate_validate_median_s"]
            if brokers["redis"]["outside_generate_validate_median_s"]
            and brokers["embedded"]["outside_generate_validate_median_s"]
            else None
        ),
        "same_outcomes_both_brokers": same,
    }
    return result, services["embedded"].data_dir


def wrk_script(folder: Path, name: str, key: str, method: str, body: str | None) -> Path:
    """A wrk Lua script for one endpoint."""
    lines = [
        f'wrk.method = "{method}"',
        f'wrk.headers["Authorization"] = "Bearer {key}"',
    ]
    if body is not None:
        lines.append('wrk.headers["Content-Type"] = "application/json"')
        lines.append(f"wrk.body = [[{body}]]")
    path = folder / f"{name}.lua"
    path.write_text("\n".join(lines) + "\n" + WRK_LUA_COMMON)
    return path


def run_wrk(
    wrk: str, url: str, script: Path, connections: int, duration_s: int, threads: int
) -> dict[str, Any]:
    """One wrk run; its summary as a dict."""
    argv = [wrk, f"-t{min(threads, connections)}", f"-c{connections}", f"-d{duration_s}s"]
    argv += ["--timeout", "30s", "--latency", "-s", str(script), url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=duration_s + 120)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(WRK_MARK)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stdout}\n{done.stderr}")
    raw = json.loads(lines[-1][len(WRK_MARK) :])
    seconds = raw["duration_us"] / 1e6
    statuses = {int(k): v for k, v in raw["statuses"].items()}
    socket_errors = {k: v for k, v in raw["errors"].items() if k != "status"}
    return {
        "connections": connections,
        "requests": raw["requests"],
        "duration_s": seconds,
        "requests_per_s": raw["requests"] / seconds,
        "p50_ms": raw["latency_us"]["p50"] / 1000,
        "p90_ms": raw["latency_us"]["p90"] / 1000,
        "p99_ms": raw["latency_us"]["p99"] / 1000,
        "max_ms": raw["latency_us"]["max"] / 1000,
        "mean_ms": raw["latency_us"]["mean"] / 1000,
        "non_2xx": sum(v for k, v in statuses.items() if not 200 <= k < 300),
        "http_5xx": sum(v for k, v in statuses.items() if k >= 500),
        "statuses": statuses,
        "socket_errors": socket_errors,
        "mb_per_s": raw["bytes"] / seconds / 1e6,
    }


def load_part(
    args: argparse.Namespace, wrk: str, scratch: Path, data_dir: Path | None
) -> dict[str, Any]:
    """wrk at each connection count against the API alone (no workers)."""
    reused = data_dir is not None
    service = Service("load-api", data_dir or scratch / "load", service_env(None), workers=False)
    try:
        print("load: starting the API (--no-workers)", file=sys.stderr)
        service.start()
        client = service.client()
        tiny = {"prompt": TINY_PROMPT, "n": 1, "seed": 1, "domain": "cad"}
        queued_id = client.call("POST", "/v1/generations", tiny)["id"]
        endpoints = [
            ("submit", "POST /v1/generations (n=1)", "POST", "/v1/generations", json.dumps(tiny)),
            ("poll_queued", "GET /v1/generations/{id} (queued job)", "GET",
             f"/v1/generations/{queued_id}", None),
        ]  # fmt: skip
        if reused:
            page = client.call("GET", "/v1/generations?status=done&limit=1")
            if page["items"]:
                done_id = page["items"][0]["id"]
                endpoints.append(
                    ("poll_done", "GET /v1/generations/{id} (done job, with result)", "GET",
                     f"/v1/generations/{done_id}", None)
                )  # fmt: skip
        client.close()
        base = f"http://127.0.0.1:{service.port}"
        sizes = {}
        results: list[dict[str, Any]] = []
        for name, label, method, path, body in endpoints:
            script = wrk_script(scratch, name, service.key, method, body)
            if method == "GET":
                with contextlib.closing(service.client()) as probe:
                    sizes[name] = len(json.dumps(probe.call("GET", path)))
            print(f"load: {label}: warm-up", file=sys.stderr)
            run_wrk(wrk, base + path, script, 10, 2, args.threads)
            for connections in args.connections:
                print(f"load: {label}: {connections} connections", file=sys.stderr)
                cpu_before = service.cpu_s()
                run = run_wrk(wrk, base + path, script, connections, args.duration, args.threads)
                run["api_cpu_fraction"] = (service.cpu_s() - cpu_before) / run["duration_s"]
                results.append({"endpoint": name, "label": label, **run})
        with contextlib.closing(service.client()) as probe:
            queued_total = probe.call("GET", "/v1/generations?status=queued&limit=1")
    finally:
        service.stop()
    return {
        "setup": "API only (genservice run --no-workers): embedded broker, SQLite; every "
        "submission is a real job that stays queued",
        "wrk": f"wrk -t{args.threads} -c<connections> -d{args.duration}s --timeout 30s --latency",
        "duration_s": args.duration,
        "response_bytes": sizes,
        "some_job_still_queued": bool(queued_total["items"]),
        "runs": results,
        "log_problems": log_problems(service.log_text()),
        "children_outliving_stop": service.outlived,
    }


def markdown(result: dict[str, Any]) -> str:
    """The figures as markdown tables."""
    out = []
    e2e = result.get("e2e")
    if e2e:
        out += [
            f"End to end, best-of-{e2e['n']} (tiny model, {e2e['repeats']} runs each after a "
            f"warm-up, seeds {e2e['seeds'][0]}..{e2e['seeds'][-1]}, SQLite for both):",
            "",
            "| broker | median | p90 | min | outside generate+validate (median) | outcomes |",
            "|---|---|---|---|---|---|",
        ]
        for name, b in e2e["brokers"].items():
            outside = b["outside_generate_validate_median_s"]
            shown = f"{outside * 1000:.0f} ms" if outside is not None else "–"
            outcomes = ", ".join(
                f"{s} {b['statuses'].count(s)}" for s in sorted(set(b["statuses"]))
            )
            out.append(
                f"| {name} | {b['median_s']:.2f} s | {b['p90_s']:.2f} s | {b['min_s']:.2f} s | "
                f"{shown} | {outcomes} |"
            )
        ratio = e2e["ratio_redis_vs_embedded_outside_generate_validate"]
        out += [
            "",
            f"Redis / embedded: {e2e['ratio_redis_vs_embedded_median']:.2f}x (median), "
            f"{e2e['ratio_redis_vs_embedded_p90']:.2f}x (p90), "
            f"{e2e['ratio_redis_vs_embedded_min']:.2f}x (min)"
            + (f", {ratio:.2f}x outside generate+validate." if ratio is not None else "."),
            "",
        ]
    load = result.get("load")
    if load:
        out += [
            f"API under load ({load['wrk']}; {load['setup']}):",
            "",
            "| endpoint | connections | requests/s | p50 | p99 | non-2xx | socket errors "
            "| API CPU (100 % = 1 core) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in load["runs"]:
            errors = sum(r["socket_errors"].values())
            out.append(
                f"| {r['label']} | {r['connections']} | {r['requests_per_s']:.0f} | "
                f"{r['p50_ms']:.1f} ms | {r['p99_ms']:.1f} ms | {r['non_2xx']} | {errors} | "
                f"{r['api_cpu_fraction']:.0%} |"
            )
        out.append("")
    return "\n".join(out)


def main() -> None:
    """Run the benchmark, print the tables and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="e2e,load", help="comma-separated: e2e, load")
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (2 CPUs: keep 1)")
    parser.add_argument("--repeats", type=int, default=5, help="e2e jobs per broker")
    parser.add_argument("--n", type=int, default=4, help="candidates per e2e job")
    parser.add_argument("--seed", type=int, default=0, help="first e2e seed")
    parser.add_argument("--prompt", default=PROMPT, help="e2e prompt")
    parser.add_argument("--poll-s", type=float, default=0.05, help="e2e status poll interval")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/7", help="scratch db")
    parser.add_argument("--out", type=Path, default=Path("bench/results/api.json"))
    parser.add_argument("--keep", type=Path, help="copy the services' logs to this folder")
    args = parser.parse_args()
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    if not parts or parts - {"e2e", "load"}:
        parser.error("--parts takes e2e, load or both")
    wrk = need_wrk() if "load" in parts else ""
    result: dict[str, Any] = {"cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="bench-api-") as folder:
        scratch = Path(folder)
        data_dir = None
        if "e2e" in parts:
            result["e2e"], data_dir = e2e_part(args, scratch)
        if "load" in parts:
            result["load"] = load_part(args, wrk, scratch, data_dir)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for log in scratch.glob("*.log"):
                shutil.copy(log, args.keep / log.name)
    text = markdown(result)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
