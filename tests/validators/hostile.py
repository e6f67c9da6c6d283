"""Helpers for the hostile-input tests: what the host looked like before, and checking after."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import WORKER_TMP_PREFIX
from validators.sandbox import SandboxPool

WATCHED_DIRS = [Path("/tmp"), Path(__file__).resolve().parents[2], Path.home()]
# pytest's own folders, and the other test workers' private temporary folders (conftest.py).
IGNORED = ("pytest-of-", ".pytest_cache", ".ruff_cache", ".mypy_cache", WORKER_TMP_PREFIX)


def host_files() -> set[str]:
    """Names in the host directories a hostile program might try to write to."""
    names: set[str] = set()
    for directory in WATCHED_DIRS:
        for entry in os.listdir(directory):
            if not entry.startswith(IGNORED):
                names.add(str(directory / entry))
    return names


def _pid_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _is_spare(pid: int) -> bool:
    """The child a worker forks ahead of the next run (it has run nothing yet)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == "gs-spare"
    except OSError:
        return False


def sandbox_process_counts(pool: SandboxPool) -> list[int]:
    """For each worker: how many processes live in its sandbox's PID namespace."""
    host_ns = _pid_namespace(os.getpid())
    counts: list[int] = []
    all_pids = [int(e) for e in os.listdir("/proc") if e.isdigit()]
    for root in pool.worker_pids():
        tree, frontier = [], [root]
        while frontier:
            kids = _children(frontier.pop())
            tree += kids
            frontier += kids
        namespaces = {_pid_namespace(p) for p in tree} - {host_ns, None}
        counts.append(
            sum(1 for p in all_pids if _pid_namespace(p) in namespaces and not _is_spare(p))
        )
    return counts
