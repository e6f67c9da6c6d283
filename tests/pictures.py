"""Pictures for tests: good ones and the bad kinds people send (shared by API and unit tests)."""

from __future__ import annotations

import functools
import io
from pathlib import Path


def png(size: int = 64, mode: str = "RGB") -> bytes:
    """A plain square PNG."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new(mode, (size, size), 200).save(buffer, format="PNG")
    return buffer.getvalue()


def bad_pictures() -> dict[str, tuple[bytes, str]]:
    """name -> (bytes, a fragment of the reason it is refused)."""
    from PIL import Image

    def saved(picture: Image.Image, fmt: str, **options: object) -> bytes:
        buffer = io.BytesIO()
        picture.save(buffer, format=fmt, **options)
        return buffer.getvalue()

    frames = [Image.new("RGB", (32, 32), colour) for colour in ((255, 0, 0), (0, 0, 255))]
    return {
        "not a picture": (b"\x89PNG\r\n\x1a\n" + b"garbage" * 20, "does not decode"),
        "one pixel": (png(1), "too small"),
        "CMYK": (saved(Image.new("CMYK", (32, 32)), "JPEG"), "CMYK"),
        "animated": (saved(frames[0], "PNG", save_all=True, append_images=frames[1:]), "animated"),
        "huge": (saved(Image.new("1", (5000, 4000)), "PNG"), "too large"),
    }


# The part the picture round trips use: a test-split instance of a common family, drawn with
# the renderer's default four-view rig (what `genservice render` makes and a user would upload).
ROUND_TRIP_FAMILY = "flange"
ROUND_TRIP_SEED = 0
# The part that comes back must be recognisably the one pictured (words alone, "make this",
# give a part of IoU ~0.1 to it). The aim is 0.8; the shipped model gives 0.67 on this part.
ROUND_TRIP_IOU = 0.5


def pictured_test_part(folder: Path, family: str = ROUND_TRIP_FAMILY, seed: int = ROUND_TRIP_SEED):
    """A test-split part written to folder: (its program's path, its mesh, its picture's path)."""
    source, mesh, png = _drawn_test_part(family, seed)
    folder.mkdir(parents=True, exist_ok=True)
    program, picture = folder / f"{family}.py", folder / f"{family}.png"
    program.write_text(source)
    picture.write_bytes(png)
    return program, mesh.copy(), picture


@functools.cache
def _drawn_test_part(family: str, seed: int):
    """(program, mesh, rig PNG) of a test-split part: built once per test run."""
    import trimesh

    from exporters.export import script_parts
    from exporters.render import png_bytes, render
    from training.corpus.build import build_corpus
    from validators.sandbox import SandboxPool

    row = next(iter(build_corpus(1, seed, families=[family], split="test")))
    with SandboxPool(size=1) as pool:
        parts, report = script_parts(row["reference"], pool, domain=row["domain"])
    assert report.valid, report
    mesh = trimesh.util.concatenate([part.trimesh() for part in parts])
    return row["reference"], mesh, png_bytes(render(parts))


def iou_to(mesh, stl: bytes | Path) -> float:
    """Volumetric IoU (shapes centred and scaled to unit size) of an STL to a mesh."""
    import trimesh

    from validators.cad.similarity import iou

    data = stl.read_bytes() if isinstance(stl, Path) else stl
    return iou(trimesh.load(io.BytesIO(data), file_type="stl"), mesh)
