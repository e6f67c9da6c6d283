"""Asset files: a small interface (put, open, path, delete) with a local-folder implementation.

Object storage can implement the same four methods later; the database keeps only keys.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import BinaryIO, Protocol


def candidate_preview_key(job_id: str, index: int) -> str:
    """Where a generation's picture of its candidate `index` lives in the asset store."""
    return f"{job_id}/candidate-{index}.png"


class AssetStore(Protocol):
    """Where exported files live, addressed by a relative key such as ver_x/model.glb."""

    def put(self, key: str, source: Path) -> tuple[str, int]:
        """Store a file under key; returns its sha256 and size."""
        ...

    def open(self, key: str) -> BinaryIO:
        """Open a stored file for reading."""
        ...

    def local_path(self, key: str) -> Path | None:
        """A filesystem path for the key when the store has one (lets the server stream it)."""
        ...

    def exists(self, key: str) -> bool:
        """Whether the key is stored."""
        ...


class LocalAssetStore:
    """Assets as files under one folder of the data directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if self.root.resolve() not in path.parents:
            raise ValueError(f"asset key escapes the store: {key!r}")
        return path

    def put(self, key: str, source: Path) -> tuple[str, int]:
        """Copy (or keep, if already in place) the file; atomic rename into place."""
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.resolve() != target:
            scratch = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            shutil.copyfile(source, scratch)
            scratch.replace(target)
        digest = hashlib.sha256()
        with open(target, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest(), target.stat().st_size

    def open(self, key: str) -> BinaryIO:
        """Open the file for reading."""
        return open(self._path(key), "rb")

    def local_path(self, key: str) -> Path | None:
        """The file's path."""
        return self._path(key)

    def exists(self, key: str) -> bool:
        """Whether the file exists."""
        return self._path(key).is_file()
