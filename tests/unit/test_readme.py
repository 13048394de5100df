"""The README stays the short front page: two screens, and the test command `.ci/run` runs
word for word (kept in .ci/test-command) is the one it gives."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_fits_on_two_screens() -> None:
    assert len(README.splitlines()) <= 200


def test_readme_gives_the_test_command_ci_runs() -> None:
    command = (ROOT / ".ci" / "test-command").read_text(encoding="utf-8").strip()
    shell_blocks = re.findall(r"^```sh\n(.*?)^```", README, re.S | re.M)
    assert any(command in block.splitlines() for block in shell_blocks), command


def test_readme_links_only_to_files_that_exist() -> None:
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README)
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert targets and not missing, missing
