"""The package as a stranger gets it: a wheel built from this checkout, installed into a
fresh virtual environment and run from a directory that is not the checkout, puts only
`planledger` at the top of site-packages and runs on its own: the demo, the shipped
recording, a benchmark, and the server with its console."""

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from planledger.bench.servers import free_port

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `bin` folder of a fresh venv holding only the wheel and what it depends on."""
    where = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(where / "dist"), str(REPO)], check=True, timeout=300)
    (wheel,) = (where / "dist").glob("planledger-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(where / "env")], check=True, timeout=120)
    bin_dir = where / "env" / "bin"
    subprocess.run([str(bin_dir / "pip"), "install", "-q", str(wheel)], check=True,
                   timeout=600)
    return bin_dir


def _wheel(installed: Path) -> Path:
    (wheel,) = (installed.parent.parent / "dist").glob("planledger-*.whl")
    return wheel


def _stranger_env() -> dict[str, str]:
    """The environment of someone who never cloned the repository."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("PLANLEDGER_")}


def _run(installed: Path, cwd: Path, *args: str) -> str:
    done = subprocess.run([str(installed / "planledger"), *args], cwd=cwd, env=_stranger_env(),
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
    return done.stdout


def test_only_planledger_lands_at_the_top_of_site_packages(installed: Path) -> None:
    (site,) = (installed.parent / "lib").glob("python3*/site-packages")
    ours = [p.name for p in site.iterdir() if p.name.startswith("planledger")]
    assert sorted(ours) == sorted(["planledger", next(p for p in ours if "dist-info" in p)])
    for generic in ("api", "bench", "infra", "ledger", "projections", "replays", "tests"):
        assert not (site / generic).exists(), f"{generic} landed at the top of site-packages"


def test_the_installed_command_runs_the_demo_the_shipped_recording_and_a_benchmark(
    installed: Path, tmp_path: Path,
) -> None:
    assert "6/6 done" in _run(installed, tmp_path, "demo", "--race")
    assert _run(installed, tmp_path, "replay", "run").startswith("identical:")
    assert "outcome" in _run(installed, tmp_path, "replay", "explore").lower()


def test_the_benchmarks_ask_for_their_extra_then_run(installed: Path, tmp_path: Path) -> None:
    bench = [str(installed / "planledger"), "bench", "--smoke", "claims"]
    bare = subprocess.run(bench, cwd=tmp_path, env=_stranger_env(), capture_output=True,
                          text=True, timeout=300, check=False)
    assert bare.returncode != 0 and "pip install 'planledger[bench]'" in bare.stderr, bare
    assert "Traceback" not in bare.stderr
    subprocess.run([str(installed / "pip"), "install", "-q", f"{installed.parent.parent}"
                    f"/dist/{_wheel(installed).name}[bench]"], check=True, timeout=600)
    assert "cycles/s" in _run(installed, tmp_path, "bench", "--smoke", "claims")


@pytest.fixture
def served(installed: Path, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen(
        [str(installed / "planledger"), "serve", "--db", str(tmp_path / "ledger.sqlite"),
         "--port", str(port)], cwd=tmp_path, env=_stranger_env(), stdout=log,
        stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(server, url, tmp_path / "serve.log")
        yield url
    finally:
        server.terminate()
        server.wait(30)
        log.close()


def _wait_healthy(server: subprocess.Popen[bytes], url: str, log: Path) -> None:
    for _ in range(600):  # up to a minute: a cold interpreter on a busy machine
        assert server.poll() is None, log.read_text(errors="replace")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(0.1)  # a pause that ends early if the server dies
    raise AssertionError(f"the installed server never answered: {log.read_text()[-2000:]}")


def test_the_installed_server_serves_the_api_and_the_console(served: str) -> None:
    page = httpx.get(f"{served}/", timeout=30)
    assert page.status_code == 200 and "planledger" in page.text
    assert httpx.get(f"{served}/console/app.js", timeout=30).status_code == 200
    assert httpx.get(f"{served}/api/console", timeout=30).status_code == 200
    started = httpx.post(f"{served}/api/sessions", json={"name": "stranger"}, timeout=30)
    assert started.status_code == 201 and started.json()["token"]
