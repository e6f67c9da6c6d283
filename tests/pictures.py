"""Pictures for tests: good ones and the bad kinds people send (shared by API and unit tests)."""

from __future__ import annotations

import io


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
