"""Pictures given with a request: padded to a square for encoders that read a fixed square;
which of several the model reads."""

from __future__ import annotations

from collections.abc import Sequence
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


# The shipped model learned from tasks of one picture each: shown two, it writes far more
# broken programs (docs/pictures.md, "Several pictures of one part"). It reads a request's
# first; the gallery, `image_match` and the fit read them all.
MODEL_PICTURES = 1


def read_by_model(pictures: Sequence[Any]) -> list[Any]:
    """The pictures of a request the model itself reads (the first MODEL_PICTURES)."""
    return list(pictures)[:MODEL_PICTURES]


MIN_SIDE = 16  # pixels: below this a picture shows no shape
MAX_PIXELS = 16_000_000  # above this decoding alone costs more than a request may


class PictureError(ValueError):
    """A picture the model cannot read; the message says why and what to do."""


def check_picture(data: bytes) -> tuple[int, int]:
    """The width and height of a PNG or JPEG picture a request may carry; PictureError when it
    is not one, is animated, CMYK, too small to show a shape or too large to decode safely."""
    import io
    import warnings

    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as picture:
                kind, mode, size = picture.format, picture.mode, picture.size
                frames = getattr(picture, "n_frames", 1)
                if kind not in ("PNG", "JPEG"):
                    raise PictureError(f"a {kind or 'unknown'} file: send a PNG or JPEG picture")
                if size[0] * size[1] > MAX_PIXELS:
                    raise PictureError(
                        f"{size[0]}x{size[1]} pixels is too large (at most {MAX_PIXELS:,}): "
                        "scale it down"
                    )
                picture.load()
    except (UnidentifiedImageError, Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise PictureError("not a PNG or JPEG picture (it does not decode)") from None
    except (OSError, SyntaxError, ValueError) as exc:
        if isinstance(exc, PictureError):
            raise
        raise PictureError(f"the picture does not decode: {exc}") from None
    if frames > 1:
        raise PictureError(f"an animated picture ({frames} frames): send one still frame")
    if mode == "CMYK":
        raise PictureError("a CMYK picture: save it as RGB (a screen picture) and send it again")
    if min(size) < MIN_SIDE:
        raise PictureError(
            f"{size[0]}x{size[1]} pixels is too small to show a part (at least {MIN_SIDE} a side)"
        )
    return size
