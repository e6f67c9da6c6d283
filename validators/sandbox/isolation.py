"""How a sandbox worker is started: the bubblewrap command line, its probe, and resource groups.

Inside: the system's /usr read-only, the Python interpreter and its packages read-only at their
own paths, this `validators` package read-only at /opt/genservice, a private tmpfs /tmp, fresh
/proc and /dev, no network (an empty network namespace, loopback down), new PID, IPC, UTS and
user namespaces, uid 65534, no capabilities, an empty environment. Nothing else of the host
exists: not the project's data or config, not the user's home, not the host's /tmp.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

GUEST_ROOT = "/opt/genservice"
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the `validators` package
# Packages whose guest-side code runs in the sandbox (exporters writes STEP next to the B-rep).
GUEST_PACKAGES = ("validators", "exporters")
SANDBOX_UID = 65534
UNSAFE_WARNING = (
    "UNSAFE SANDBOX MODE: untrusted programs run WITHOUT isolation (no bubblewrap). They can "
    "read your files, use the network and harm this machine. Use only for local debugging."
)


class SandboxUnavailable(RuntimeError):
    """Isolation cannot be set up here; the message says how to fix it."""


@dataclass(frozen=True)
class Isolation:
    """Which isolation a worker uses: "bwrap" (the default) or "none" (explicitly unsafe)."""

    mode: str = "bwrap"

    def __post_init__(self) -> None:
        if self.mode not in ("bwrap", "none"):
            raise ValueError(f"isolation mode must be 'bwrap' or 'none', got {self.mode!r}")

    @property
    def safe(self) -> bool:
        """True when programs are isolated."""
        return self.mode == "bwrap"


def _system_mounts() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / top
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for etc_file in ("/etc/ld.so.cache", "/etc/localtime"):
        if Path(etc_file).exists():
            args += ["--ro-bind", etc_file, etc_file]
    return args


def _interpreter_mounts() -> list[str]:
    prefixes = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}
    if sys.prefix != sys.base_prefix:
        prefixes.add(Path(sys.prefix))  # the venv at its own (unresolved) path, as sys.executable
    args: list[str] = []
    for prefix in sorted(prefixes):
        if str(prefix).startswith("/usr/"):
            continue
        args += ["--ro-bind", str(prefix), str(prefix)]
    return args


def _package_mounts() -> list[str]:
    args = []
    for name in GUEST_PACKAGES:
        args += ["--ro-bind", str(PACKAGE_DIR.parent / name), f"{GUEST_ROOT}/{name}"]
    return args


def bwrap_command(python_args: list[str]) -> list[str]:
    """The full bubblewrap command line that runs `python python_args...` in the sandbox."""
    bwrap = shutil.which("bwrap") or "bwrap"
    return [
        bwrap,
        "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
        "--unshare-cgroup-try",
        "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
        "--hostname", "sandbox",
        "--die-with-parent", "--new-session", "--as-pid-1", "--cap-drop", "ALL",
        *_system_mounts(),
        "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
        # After /tmp: an interpreter or venv that lives under the host's /tmp stays visible.
        *_interpreter_mounts(),
        *_package_mounts(),
        "--remount-ro", "/", "--remount-ro", "/dev",  # only /tmp is writable
        "--chdir", "/tmp",
        "--clearenv",
        "--setenv", "PATH", "/usr/bin:/bin",
        "--setenv", "HOME", "/tmp",
        "--setenv", "LANG", "C.UTF-8",
        "--setenv", "OMP_NUM_THREADS", "1",
        "--setenv", "OPENBLAS_NUM_THREADS", "1",
        "--",
        sys.executable, "-I", "-B", *python_args,
    ]  # fmt: skip


def _python_args(entry: str, package_root: str) -> list[str]:
    """Interpreter arguments that call `entry` (module:function) with package_root on the path."""
    module, _, function = entry.partition(":")
    code = (
        f"import sys; sys.path.insert(0, {package_root!r}); "
        f"from {module} import {function}; {function}()"
    )
    return ["-c", code]


def worker_command(isolation: Isolation, worker_args: list[str]) -> list[str]:
    """Command that starts one worker with the given isolation."""
    entry = "validators.sandbox.guest.worker:main"
    if isolation.safe:
        return bwrap_command([*_python_args(entry, GUEST_ROOT), *worker_args])
    python_args = _python_args(entry, str(PACKAGE_DIR.parent))
    return [sys.executable, "-I", "-B", *python_args, *worker_args]


@functools.cache
def probe() -> str | None:
    """None when bubblewrap isolation works here, else the reason it does not."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
    check = (
        "import socket, os; s = socket.socket(); s.settimeout(1)\n"
        "try:\n s.connect(('127.0.0.1', 9)); print('net')\nexcept OSError: print('nonet')\n"
        "print(os.getpid(), os.getuid())"
    )
    try:
        done = subprocess.run(
            bwrap_command(["-c", check]), capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap failed to start: {exc}"
    if done.returncode != 0:
        return f"bubblewrap failed: {done.stderr.strip()[:500]}"
    if done.stdout.split() != ["nonet", "1", str(SANDBOX_UID)]:
        return f"bubblewrap started but isolation is incomplete: {done.stdout.strip()!r}"
    return None


def require(isolation: Isolation) -> None:
    """Refuse to go on without working isolation, or warn loudly in unsafe mode."""
    if not isolation.safe:
        warnings.warn(UNSAFE_WARNING, RuntimeWarning, stacklevel=3)
        log.warning(UNSAFE_WARNING)
        print(f"\n!!! {UNSAFE_WARNING}\n", file=sys.stderr)
        return
    reason = probe()
    if reason:
        raise SandboxUnavailable(
            f"cannot isolate untrusted programs: {reason}. Install bubblewrap, or set "
            "GENSERVICE_UNSAFE_SANDBOX=1 to run them unisolated (dangerous; local debugging only)."
        )


class ResourceGroup:
    """A cgroup bounding the processes and memory of one worker's whole tree, where we may make one.

    As root, a user namespace maps the sandbox to the host's uid 0, for which the kernel does not
    enforce RLIMIT_NPROC; a pids cgroup is then what stops a fork bomb. For other users the rlimit
    holds and this group is optional.
    """

    def __init__(self, max_processes: int, memory_bytes: int) -> None:
        self.paths: list[Path] = []
        name = f"genservice-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        for controller, settings in (
            ("pids", {"pids.max": str(max_processes)}),
            ("memory", {"memory.limit_in_bytes": str(memory_bytes)}),
        ):
            base = Path("/sys/fs/cgroup") / controller
            if not (base / "cgroup.procs").exists() or not os.access(base, os.W_OK):
                continue
            path = base / name
            try:
                path.mkdir()
                for key, value in settings.items():
                    (path / key).write_text(value)
            except OSError as exc:
                log.debug("cgroup %s unavailable: %s", controller, exc)
                if path.exists():
                    path.rmdir()
                continue
            self.paths.append(path)

    def wrap(self, command: list[str]) -> list[str]:
        """Prefix that moves the command into the group before it starts."""
        if not self.paths:
            return command
        joins = " && ".join(f"echo $$ > {p / 'cgroup.procs'}" for p in self.paths)
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh", *command]

    def remove(self) -> None:
        """Delete the group (its processes must have exited)."""
        for path in self.paths:
            try:
                path.rmdir()
            except OSError:
                pass
        self.paths = []
