"""What the CLI's commands share: usage errors, sandbox settings and pools, parallel progress."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


class UsageError(Exception):
    """Bad command-line input: printed, exit status 2."""


def parse_params(items: list[str]) -> dict[str, str]:
    """--param NAME=VALUE items as a dict (values stay text; the program's types decide)."""
    params: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier():
            raise UsageError(f"--param expects NAME=VALUE, got {item!r}")
        params[name.strip()] = value.strip()
    return params


def sandbox_limits(timeout: float | None, workers: int | None) -> tuple[Any, int, Any]:
    """Limits, worker count and isolation from the settings and the command-line overrides."""
    from genservice import sandboxes

    try:
        return sandboxes.sandbox_limits(timeout, workers)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def open_pool(size: int, limits: Any, isolation: Any, domain: str) -> Any:
    """A warm pool for the domain (cadquery preloaded for cad and scene)."""
    from genservice import sandboxes
    from validators.sandbox import SandboxUnavailable

    try:
        return sandboxes.open_pool(size, limits, isolation, domain)
    except SandboxUnavailable as exc:
        raise UsageError(str(exc)) from exc


def run_parallel(
    items: list[Any],
    work: Callable[[Any], Any],
    workers: int,
    description: str,
    on_result: Callable[[Any, Any], None] | None = None,
) -> list[Any]:
    """Apply `work` to every item on `workers` threads with a progress bar; results in order."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    results: list[Any] = []
    progress = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_stderr_console(),
    )
    with progress, ThreadPoolExecutor(max_workers=workers) as threads:
        task = progress.add_task(description, total=len(items))
        futures = [threads.submit(work, item) for item in items]
        for item, future in zip(items, futures, strict=True):  # input order: deterministic output
            result = future.result()
            results.append(result)
            progress.advance(task)
            if on_result is not None:
                on_result(item, result)
    return results


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def cli_device(choice: str | None) -> str:
    """The device for a --device choice (None: $GENSERVICE_DEVICE, else auto); a usage error
    when it is malformed or not on this machine."""
    from genservice.device import DeviceError, resolve_device

    try:
        return resolve_device(choice)
    except DeviceError as exc:
        raise UsageError(f"--device: {exc}") from exc
