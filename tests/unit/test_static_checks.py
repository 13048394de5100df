"""The code stays typed and linted: `mypy --strict` (pyproject's packages) and `ruff check`."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("tool", [["mypy"], ["ruff", "check", "."]], ids=["mypy", "ruff"])
def test_the_tree_passes(tool: list[str], tmp_path: Path) -> None:
    extra = ["--cache-dir", str(tmp_path / "cache")] if tool[0] == "mypy" else []
    result = subprocess.run([sys.executable, "-m", *tool, *extra], cwd=ROOT,
                            capture_output=True, text=True, timeout=240, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
