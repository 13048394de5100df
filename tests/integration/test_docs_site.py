"""The documentation site builds with `mkdocs build --strict`, as `mkdocs serve` shows it: a
link to a page, a file or an anchor that is not there, a page missing from the navigation or
a snippet whose file is gone fails the build (mkdocs.yml)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("mkdocs", reason="the test extra installs MkDocs")
pytest.importorskip("material", reason="the test extra installs mkdocs-material")


def test_the_site_builds_strictly_with_every_page(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stdout + built.stderr
    for page in ("quickstart", "concepts", "agents", "http", "cli", "paths", "console",
                 "deployment", "replays", "reliability", "architecture", "reference/mcp",
                 "reference/http", "reference/cli", "bench/RESULTS"):
        assert (site / page / "index.html").is_file(), page
    assert (site / "bench" / "claims_vs_agents.png").is_file()
    agents = (site / "agents" / "index.html").read_text(encoding="utf-8")
    assert "Pick up the next step of the plan" in agents  # the README's prompt, included
