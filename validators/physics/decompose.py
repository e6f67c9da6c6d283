"""Collision shapes for the drop test: a convex hull, or convex pieces of a concave part by coacd.

MuJoCo collides a mesh by its convex hull, so a cup or an L-bracket would be solid to other
parts. Against the ground plane, though, the hull is exact (a plane only ever touches the
lowest points, which are hull vertices), so in "auto" mode only concave parts that another part
may touch are decomposed. coacd runs in a child process: it is time-bounded (killed at the
deadline), a crash in its C++ cannot take the validator down, and pieces are cached by content.
"""

from __future__ import annotations

import hashlib
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import trimesh
from scipy.spatial import ConvexHull, QhullError

from validators.physics.meshes import Part

WORKER = Path(__file__).with_name("_coacd_worker.py")
CONVEX_RATIO = 0.99  # volume / hull volume at or above this: treat as convex
CACHE_SIZE = 128
# Cheaper than coacd's defaults (2000 samples, 150 iterations), still enough for CAD parts.
COACD_PARAMS: dict[str, Any] = {
    "threshold": 0.05,
    "preprocess_resolution": 30,
    "resolution": 1000,
    "mcts_nodes": 10,
    "mcts_iterations": 60,
    "mcts_max_depth": 2,
    "max_ch_vertex": 64,
    "seed": 0,
}

_cache: OrderedDict[str, list[np.ndarray]] = OrderedDict()
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class Collision:
    """A part's convex pieces (vertex arrays, scene frame) and how they were made."""

    pieces: list[np.ndarray]
    method: str  # "hull", "coacd", or "hull (...)" saying why decomposition was not used


def collision_shapes(
    parts: list[Part], *, mode: str, max_pieces: int, timeout_s: float, reach_mm: float
) -> list[Collision]:
    """Convex pieces for every part; concave parts decomposed as `mode` says, within timeout_s."""
    hulls = [convex_hull(np.asarray(part.mesh.vertices)) for part in parts]
    concave = [
        hull is not None and part.volume < CONVEX_RATIO * hull.volume
        for part, hull in zip(parts, hulls, strict=True)
    ]
    wanted = [
        i
        for i, is_concave in enumerate(concave)
        if is_concave
        and (mode == "always" or (mode == "auto" and _has_neighbour(parts, i, reach_mm)))
    ]
    decomposed = _decompose([parts[i].mesh for i in wanted], max_pieces, timeout_s)
    found = {wanted[k]: pieces for k, pieces in decomposed.items()}
    shapes = []
    for i, hull in enumerate(hulls):
        pieces = found.get(i)
        if pieces is not None:
            shapes.append(Collision(pieces, "coacd"))
            continue
        if not concave[i]:
            method = "hull"
        elif i in wanted:
            method = "hull (decomposition failed or timed out)"
        else:
            method = "hull (concave, but only the ground can touch it)"
        points = np.asarray(parts[i].mesh.vertices)
        shapes.append(Collision([points if hull is None else points[hull.vertices]], method))
    return shapes


def convex_hull(points: np.ndarray) -> ConvexHull | None:
    """Qhull's convex hull, or None for flat point sets.

    "QJ" joggles the input by ~1e-11: without it qhull merges the thousands of coplanar facets of
    a finely tessellated cylinder in quadratic time (a 200k-triangle one takes minutes, not 0.5 s).
    """
    try:
        return ConvexHull(points, qhull_options="QJ")
    except (QhullError, ValueError):
        return None


def _has_neighbour(parts: list[Part], index: int, reach_mm: float) -> bool:
    low, high = parts[index].mesh.bounds
    for j, other in enumerate(parts):
        o_low, o_high = other.mesh.bounds
        if j != index and np.all(o_low <= high + reach_mm) and np.all(low <= o_high + reach_mm):
            return True
    return False


def _decompose(
    meshes: list[trimesh.Trimesh], max_pieces: int, timeout_s: float
) -> dict[int, list[np.ndarray] | None]:
    """Pieces per index into `meshes` (None: failed), from the cache or one child process."""
    params = {**COACD_PARAMS, "max_convex_hull": max_pieces}
    keys = [_key(mesh, params) for mesh in meshes]
    found: dict[int, list[np.ndarray] | None] = {}
    jobs = []
    with _cache_lock:
        for i, key in enumerate(keys):
            if key in _cache:
                _cache.move_to_end(key)
                found[i] = _cache[key]
            else:
                jobs.append(
                    (i, np.asarray(meshes[i].vertices), np.asarray(meshes[i].faces), params)
                )
    if jobs:
        for i, pieces in _run_worker(jobs, timeout_s).items():
            kept = _usable(pieces, meshes[i]) if pieces is not None else None
            found[i] = kept
            if kept is not None:
                with _cache_lock:
                    _cache[keys[i]] = kept
                    while len(_cache) > CACHE_SIZE:
                        _cache.popitem(last=False)
    return found


def _key(mesh: trimesh.Trimesh, params: dict[str, Any]) -> str:
    digest = hashlib.sha256(np.ascontiguousarray(mesh.vertices, dtype=np.float64).tobytes())
    digest.update(np.ascontiguousarray(mesh.faces, dtype=np.int64).tobytes())
    digest.update(repr(sorted(params.items())).encode())
    return digest.hexdigest()


def _usable(
    pieces: list[tuple[np.ndarray, np.ndarray]], mesh: trimesh.Trimesh
) -> list[np.ndarray] | None:
    """Vertex arrays of the pieces MuJoCo can use (flat slivers dropped); None if none is left."""
    kept = []
    floor = 1e-6 * float(mesh.volume)
    for vertices, _faces in pieces:
        if len(vertices) < 4:
            continue
        hull = convex_hull(np.asarray(vertices, dtype=np.float64))
        if hull is not None and hull.volume > floor:
            kept.append(np.asarray(vertices, dtype=np.float64))
    return kept or None


def _run_worker(
    jobs: list[tuple[int, np.ndarray, np.ndarray, dict[str, Any]]], timeout_s: float
) -> dict[int, list[tuple[np.ndarray, np.ndarray]] | None]:
    """Run coacd on the jobs in a child process; what is not done by the deadline is missing."""
    results: queue.Queue[tuple[int, Any] | None] = queue.Queue()
    done: dict[int, list[tuple[np.ndarray, np.ndarray]] | None] = {}
    deadline = time.monotonic() + timeout_s
    with tempfile.TemporaryDirectory(prefix="genservice-coacd-") as folder:
        job_file = Path(folder) / "jobs.pkl"
        job_file.write_bytes(pickle.dumps(jobs, protocol=pickle.HIGHEST_PROTOCOL))
        try:
            # -I: isolated; the worker's folder is not put on sys.path (it would shadow modules).
            child = subprocess.Popen(
                [sys.executable, "-I", str(WORKER), str(job_file)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError:  # no interpreter to start: every part keeps its hull
            return done
        stream = child.stdout
        assert stream is not None

        def read() -> None:
            try:
                while True:
                    results.put(pickle.load(stream))  # our own child's output: trusted
            except Exception:  # EOF, or a child killed mid-write
                pass
            finally:
                results.put(None)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            while len(done) < len(jobs):
                try:
                    item = results.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if item is None:
                    break
                done[item[0]] = item[1]
        finally:
            if child.poll() is None:
                child.kill()
            child.wait()
            reader.join(timeout=1.0)
            stream.close()
    return done
