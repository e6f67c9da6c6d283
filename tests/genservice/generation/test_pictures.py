"""Pictures a request carries: checked before any model sees them, padded to a square."""

from __future__ import annotations

import pytest
from PIL import Image

from genservice.generation.pictures import PictureError, check_picture, square
from tests.pictures import bad_pictures, png


def test_a_plain_picture_passes_with_its_size() -> None:
    assert check_picture(png(64)) == (64, 64)
    assert check_picture(png(40, "L")) == (40, 40)  # greyscale is read as RGB later


@pytest.mark.parametrize("name", list(bad_pictures()))
def test_bad_pictures_are_refused_with_a_reason(name: str) -> None:
    data, reason = bad_pictures()[name]
    with pytest.raises(PictureError, match=reason):
        check_picture(data)


def test_a_gif_is_named_as_such() -> None:
    import io

    buffer = io.BytesIO()
    Image.new("RGB", (32, 32)).save(buffer, format="GIF")
    with pytest.raises(PictureError, match="GIF"):
        check_picture(buffer.getvalue())


def test_square_pads_with_the_corner_colour_and_crops_nothing() -> None:
    wide = Image.new("RGB", (80, 40), (10, 20, 30))
    wide.putpixel((79, 20), (255, 255, 255))
    padded = square(wide)
    assert padded.size == (80, 80)
    assert padded.getpixel((0, 0)) == (10, 20, 30) and padded.getpixel((79, 40)) == (255, 255, 255)
    same = Image.new("RGB", (30, 30))
    assert square(same).size == (30, 30)
