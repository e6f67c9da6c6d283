"""A real `genservice run` (API + supervised Celery workers) in a temporary data directory,
driven over HTTP like a user would."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[3]
TERMINAL = ("done", "failed", "cancelled")
FLANGE = "a 60 mm flange with six M5 bolt holes, 8 mm thick"

# Short leases so that a killed worker's job is handed on within seconds, small generations.
TEST_SETTINGS = {
    "GENSERVICE_SANDBOX_WORKERS": "2",
    "GENSERVICE_LEASE_S": "3",
    "GENSERVICE_REAPER_INTERVAL_S": "0.5",
    "GENSERVICE_MAX_N": "4",
    "GENSERVICE_MAX_NEW_TOKENS": "600",
    "GENSERVICE_WAIT_S": "90",
    "GENSERVICE_RATE_LIMIT_PER_MINUTE": "6000",  # the tests poll fast
    "HF_HUB_OFFLINE": "1",
}


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Service:
    """One `genservice run` process tree."""

    def __init__(
        self,
        data_dir: Path,
        env: dict[str, str] | None = None,
        workers: bool = True,
        args: tuple[str, ...] = (),
    ):
        self.data_dir = data_dir
        self.args = args  # more `genservice run` options
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, **TEST_SETTINGS, **(env or {})}
        self.workers = workers
        self.process: subprocess.Popen[bytes] | None = None
        self.log = data_dir.parent / f"{data_dir.name}-service.log"
        self.key = ""

    def start(self) -> Service:
        """Start and wait until the API answers."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "genservice", "run", "--data-dir", str(self.data_dir)]
        argv += ["--port", str(self.port)] + ([] if self.workers else ["--no-workers"])
        argv += self.args
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                argv, env=self.env, cwd=ROOT, stdout=log, stderr=log, start_new_session=True
            )
        self.wait_healthy()
        self.key = (self.data_dir / "local-api-key").read_text().strip()
        return self

    def wait_healthy(self, timeout: float = 120) -> None:
        """Block until /healthz answers 200."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"genservice run exited: {self.log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the API did not start: {self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        """Ctrl-C, as a person would; kill what is left after 60 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def client(self, key: str | None = None) -> httpx.Client:
        """An HTTP client with the given key (the local key by default)."""
        headers = {"Authorization": f"Bearer {key or self.key}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120)

    def cli(self, *args: str) -> str:
        """Run a genservice command against the same data directory; its stdout."""
        env = {**self.env, "GENSERVICE_DATA_DIR": str(self.data_dir)}
        done = subprocess.run(
            [sys.executable, "-m", "genservice", *args],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return done.stdout

    def new_key(self, name: str, *options: str) -> str:
        """Create a key with `genservice keys create` (the key is on the last line)."""
        return self.cli("keys", "create", "--name", name, *options).strip().splitlines()[-1]

    def children(self) -> dict[int, str]:
        """Child processes of `genservice run`: pid -> command line."""
        assert self.process is not None
        found = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                parent = int(stat.rsplit(")", 1)[1].split()[1])
                if parent == self.process.pid:
                    found[int(entry.name)] = (entry / "cmdline").read_text().replace("\0", " ")
            except (OSError, IndexError, ValueError):
                continue
        return found

    def pid_of(self, needle: str, timeout: float = 60) -> int:
        """The pid of the child whose command line contains `needle` (waits for a restart)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for pid, command in self.children().items():
                if needle in command:
                    return pid
            time.sleep(0.1)
        raise AssertionError(f"no child process running {needle!r}")


def wait_job(client: httpx.Client, job_id: str, timeout: float = 180) -> dict[str, Any]:
    """Poll a job until it ends; its final JSON."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = _get_job(client, job_id)
        if job["status"] in TERMINAL:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not end in {timeout} s: {job}")


def wait_state(
    client: httpx.Client,
    job_id: str,
    status: str,
    message: str,
    timeout: float = 120,
    attempt: int = 1,
) -> dict[str, Any]:
    """Poll until the job is in `status` with `message` in its progress message, claimed by a
    worker for the `attempt`-th time or later."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = _get_job(client, job_id)
        claimed = job["attempts"] >= attempt
        if job["status"] == status and message in job["progress"]["message"] and claimed:
            return dict(job)
        if job["status"] in TERMINAL:
            raise AssertionError(f"job {job_id} ended before reaching {status}: {job}")
        time.sleep(0.02)
    raise AssertionError(f"job {job_id} never reached {status} / {message!r}")


def _get_job(client: httpx.Client, job_id: str) -> dict[str, Any]:
    response = client.get(f"/v1/generations/{job_id}")
    assert response.status_code == 200, response.text
    return dict(response.json())
