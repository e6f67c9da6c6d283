"""Pictures given with a request: padded to a square for encoders that read a fixed square."""

from __future__ import annotations

from typing import Any


def square(picture: Any, fill: tuple[int, int, int] | None = None) -> Any:
    """An RGB picture padded to a square with its corner colour (nothing is cropped away)."""
    from PIL import Image

    picture = picture.convert("RGB")
    width, height = picture.size
    if width == height:
        return picture
    side = max(width, height)
    colour = fill or picture.getpixel((0, 0))
    canvas = Image.new("RGB", (side, side), colour)
    canvas.paste(picture, ((side - width) // 2, (side - height) // 2))
    return canvas
