"""`python -m planledger.docs_screens --out DIR` as a user runs it: a real server, the
demo's race and the system's headless Chromium make the documentation's three pictures,
each a PNG of the fixed viewport; the pictures committed in docs/img/ are such PNGs too,
small enough to keep in the repository."""

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from planledger.docs_screens import CHROMIUM, HEIGHT, IMAGES, NAMES, WIDTH

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_COMMITTED_BYTES = 300_000


def png_size(path: Path) -> tuple[int, int]:
    """A PNG's width and height, read from its header chunk (IHDR, always first)."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_SIGNATURE and head[12:16] == b"IHDR", f"{path} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_one_command_makes_the_three_pictures_at_the_viewport_size(tmp_path: Path) -> None:
    if shutil.which(CHROMIUM) is None:
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    out = tmp_path / "img"
    made = subprocess.run([sys.executable, "-m", "planledger.docs_screens", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, check=False,
                          env=os.environ.copy())
    assert made.returncode == 0, made.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(NAMES)
    for name in NAMES:
        assert f"wrote {out / name}" in made.stdout
        assert png_size(out / name) == (WIDTH, HEIGHT), name
    assert len({(out / name).read_bytes() for name in NAMES}) == 3  # three different views


def test_the_committed_pictures_are_viewport_pngs_under_300_kb() -> None:
    for name in NAMES:
        path = IMAGES / name
        assert png_size(path) == (WIDTH, HEIGHT), name
        assert path.stat().st_size < MAX_COMMITTED_BYTES, f"{name}: {path.stat().st_size} B"
