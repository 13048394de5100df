"""Every shell block of the README and the docs runs as pasted.

What is run: each ```sh or ```bash block of README.md and docs/**/*.md. A block that shows
rather than runs (an answer, a session's output, a prompt) takes another fence (```text,
```console); a block that cannot run as pasted is a bug in the page, not in this test.

How: a page is read as a person reads it, top to bottom in one terminal. Its blocks run in
order in one `bash -e` process, in a fresh empty directory, with the installed package's
`planledger` first on PATH and HOME inside that directory; shell variables and `cd` carry
from block to block as they would in the terminal. A page none of whose blocks starts
`planledger serve` gets one the test starts in that directory (on its default store,
`./.planledger/ledger.sqlite`), as the reader who followed the README's first command has.
Every process a page starts is stopped when the page ends.

The substitutions, all of them, each because the test cannot do the real thing:
- `127.0.0.1:8765` reads `127.0.0.1:<a free port>`, and `PLANLEDGER_PORT` is that port,
  so pages never collide with each other or with a server already on 8765;
- `git clone <this repository> DIR` clones this checkout (the repository has no public
  address the test may use);
- `python3 -m venv DIR` makes only `DIR/bin/activate`, which puts the bin folder of the
  environment the test runs in first on PATH, and `pip install …` does nothing: the
  package under test is installed there already (a test checks that it is the one under
  test). `. DIR/bin/activate` runs as written, and on a page that makes a venv nothing
  else puts `planledger` on PATH: a page that activates it in a background job, or not
  at all, gets `planledger: command not found`. Other pages start with it on PATH, as
  their reader has the venv active;
- a block whose last command is a foreground `planledger serve` (which runs until Ctrl-C)
  runs it in the background and waits until /healthz answers: the reader leaves it
  serving in that terminal and pastes the next blocks into a second one, in the same
  folder (the page's later blocks run in the folder that block ended in);
- `curl` is called with `--fail-with-body`, so an HTTP error (a 401 for a token left
  as `<token>`) fails the block instead of passing unnoticed.

A block preceded by `<!-- not run: REASON -->` is not run, and is reported as skipped with
its reason: for what no test can do here (the whole suite, Claude Code, PostgreSQL hosts).

After a page that clones, the folder above the clone must still import the installed
package: a clone named `planledger` there would shadow it as a namespace package.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PAGE_TIMEOUT = 120.0  # a bound for a stuck block; a page takes seconds
FENCE = re.compile(r"^```(sh|bash)\s*$")
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(?P<reason>.+?)\s*-->\s*$")
SERVE = re.compile(r"\bplanledger serve\b")
FOREGROUND_SERVE = re.compile(r"(?:&&\s*)?planledger serve(?P<args>[^&|;#]*)$")
SUBSTITUTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"git clone <this repository>"), f"git clone -q {ROOT}"),
    (re.compile(r"python3 -m venv (?=\S)"), "_pl_venv "),
    (re.compile(r"\bpip install [^&|;#\n]*"), "true "),
)


@dataclass(frozen=True)
class Block:
    """One shell block of a page: where it is, its text, why it is not run (if it is not)."""

    page: str
    line: int
    text: str
    not_run: str | None


def pages() -> list[Path]:
    docs = ROOT / "docs"
    return [ROOT / "README.md", *sorted(docs.rglob("*.md") if docs.is_dir() else [])]


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found, index = [], 0
    while index < len(lines):
        if FENCE.match(lines[index]):
            start, body = index + 1, []
            index += 1
            while index < len(lines) and lines[index].rstrip() != "```":
                body.append(lines[index])
                index += 1
            before = next((lines[i] for i in range(start - 2, -1, -1) if lines[i].strip()), "")
            marked = NOT_RUN.match(before.strip())
            found.append(Block(str(page.relative_to(ROOT)), start + 1, "\n".join(body),
                               marked["reason"] if marked else None))
        index += 1
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def as_run(block: Block, port: int) -> str:
    """The block with the substitutions of the module docstring applied."""
    text = block.text.replace("127.0.0.1:8765", f"127.0.0.1:{port}")
    for pattern, replacement in SUBSTITUTIONS:
        text = pattern.sub(replacement, text)
    lines = text.rstrip().splitlines()
    last = FOREGROUND_SERVE.search(lines[-1]) if lines else None
    if last:  # serves until the page ends: the reader's first terminal
        before = lines[-1][: last.start()].strip()
        lines[-1:] = [*([before] if before else []),
                      f"planledger serve{last['args']} > \"$HOME/serve-{block.line}.log\""
                      " 2>&1 &",
                      f"_pl_healthy {port}"]
    return "\n".join(lines)


PRELUDE = textwrap.dedent(f"""\
    _pl_venv() {{  # a venv whose activate script puts the tested package's bin on PATH
      mkdir -p "$1/bin" && echo 'export PATH="{BIN}:$PATH"' > "$1/bin/activate"
    }}
    _pl_healthy() {{  # the test's own wait for a server, bounded
      for _ in $(seq 300); do
        curl -s -o /dev/null "http://127.0.0.1:$1/healthz" && return 0
        sleep 0.1
      done
      echo "no server answered on port $1" >&2; return 1
    }}
    """)


def script(page_blocks: list[Block], port: int) -> str:
    parts = [PRELUDE]
    for block in page_blocks:
        if block.not_run is None:
            parts += [f"echo '>>> block {block.page}:{block.line}' >&2", as_run(block, port)]
    parts.append("echo '>>> page done' >&2")
    return "\n".join(parts) + "\n"


def curl_shim(directory: Path) -> Path:
    real = shutil.which("curl")
    assert real, "the docs' blocks need curl"
    directory.mkdir(parents=True)
    shim = directory / "curl"
    shim.write_text(f'#!/bin/sh\nexec {real} --fail-with-body "$@"\n')
    shim.chmod(0o755)
    return directory


def environment(home: Path, port: int, makes_venv: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLANLEDGER_")}
    shims = curl_shim(home / "shims")
    path = [p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != BIN]
    env.update(PATH=os.pathsep.join([str(shims), *([] if makes_venv else [str(BIN)]), *path]),
               HOME=str(home),
               PLANLEDGER_PORT=str(port))
    return env


def start_server(where: Path, home: Path, env: dict[str, str], port: int,
                 ) -> subprocess.Popen[bytes]:
    log = (home / "serve.log").open("wb")
    server = subprocess.Popen([str(BIN / "planledger"), "serve"], cwd=where, env=env,
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    ready = subprocess.run(["bash", "-c", PRELUDE + f"_pl_healthy {port}"], env=env,
                           capture_output=True, timeout=PAGE_TIMEOUT, check=False)
    assert ready.returncode == 0, (home / "serve.log").read_text()
    return server


def stop(process: "subprocess.Popen[bytes] | subprocess.Popen[str]") -> None:
    """Stop the process and everything it started (its process group)."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(15)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(5)


def failure(page: str, output: str) -> str:
    markers = [line for line in output.splitlines() if line.startswith(">>> block ")]
    where = markers[-1].removeprefix(">>> block ") if markers else page
    return f"the shell block at {where} fails as pasted:\n{output[-4000:]}"


ALL = [(page, blocks(page)) for page in pages()]


def test_the_python_on_path_imports_the_package_under_test() -> None:
    found = subprocess.run(
        [str(BIN / "python"), "-c", "import planledger; print(planledger.__file__)"],
        cwd="/", capture_output=True, text=True, check=True, env={
            **os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
    assert Path(found.stdout.strip()).resolve().is_relative_to(ROOT), found.stdout


@pytest.mark.parametrize("page", [p for p, b in ALL if b],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shell_block_of_the_page_runs_as_pasted(page: Path, tmp_path: Path) -> None:
    page_blocks = next(b for p, b in ALL if p == page)
    port, here, home = free_port(), tmp_path / "here", tmp_path / "home"
    here.mkdir()
    running = [b for b in page_blocks if b.not_run is None]
    if any("git clone" in b.text for b in running) and not (ROOT / ".git").exists():
        pytest.skip("the page clones the repository, and this copy of it is no git checkout")
    env = environment(home, port, any("python3 -m venv" in b.text for b in running))
    server = None
    if not any(SERVE.search(b.text) for b in running):
        server = start_server(here, home, env, port)
    # Output to a file, not a pipe: a server the page leaves running keeps a pipe open.
    with (home / "page.log").open("wb") as log:
        shell = subprocess.Popen(["bash", "-e", "-c", script(page_blocks, port)], cwd=here,
                                 env=env, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
    try:
        shell.wait(timeout=PAGE_TIMEOUT)
    except subprocess.TimeoutExpired:
        stop(shell)
        pytest.fail(failure(str(page), (home / "page.log").read_text()
                            + f"\n(no end in {PAGE_TIMEOUT} s)"))
    finally:
        stop(shell)
        if server:
            stop(server)
    output = (home / "page.log").read_text()
    assert shell.returncode == 0, failure(str(page), output)
    if any("git clone" in b.text for b in running):
        # As installed (no PYTHONPATH, which would put the package ahead of the folder).
        bare = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        imported = subprocess.run([str(BIN / "python"), "-c", "from planledger import Client"],
                                  cwd=here, env=bare, capture_output=True, text=True,
                                  check=False)
        assert imported.returncode == 0, f"the clone shadows the package: {imported.stderr}"


NOT_RUN_BLOCKS = [b for _, page_blocks in ALL for b in page_blocks if b.not_run]


@pytest.mark.parametrize("block", NOT_RUN_BLOCKS, ids=lambda b: f"{b.page}:{b.line}")
def test_blocks_marked_not_run_say_why(block: Block) -> None:
    pytest.skip(f"not run ({block.page}:{block.line}): {block.not_run}")
