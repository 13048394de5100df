"""The documentation's screenshots, made from the product itself so they never go stale by
hand: the console after the seed's two-agent race, a step's detail panel, and the race's
timeline page.

`python -m planledger.docs_screens [--out DIR]` writes docs/img/console.png,
docs/img/console-step.png and docs/img/race-timeline.png (or into DIR). It starts a real
`planledger serve` on a store in a temporary folder (planledger.bench.servers), runs the
demo's race against that store (planledger.replays.demo), and opens the console in the
system's headless Chromium (`/usr/bin/chromium`, driven by Playwright, which the test extra
installs) at a fixed viewport, light scheme and no motion. Each picture is taken once the
page says what it shows ("live", the plan's progress line, the step's history), never
after a pause, so two runs differ only in ids and times.
"""

import argparse
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from planledger.api.runtime import open_runtime
from planledger.bench.servers import start_replica
from planledger.replays import demo
from planledger.replays.fixture import PLAN

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

COMMAND = "python -m planledger.docs_screens"
IMAGES = Path(__file__).resolve().parent.parent / "docs" / "img"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--disable-default-apps", "--disable-extensions"]
# A laptop's window: wide enough for the console's three columns, small enough that each
# picture stays well under 300 KB.
WIDTH, HEIGHT = 1280, 800
WAIT_MS = 15_000  # for the page to show what it is waiting for, on a busy machine
DONE = f"{PLAN}: 6/6 done, 0 claimable, 0 in flight"
NAMES = ("console.png", "console-step.png", "race-timeline.png")


class CannotShoot(Exception):
    """The screenshots cannot be made here (no Chromium, no Playwright, a page that never
    showed what a picture needs)."""


def shoot(out: Path) -> list[Path]:
    """Make the three pictures in `out`; their paths, in NAMES order. They are made in a
    temporary folder and moved into `out` together, so a failure replaces none of them."""
    try:
        from playwright.sync_api import Error as BrowserError
    except ImportError:
        raise CannotShoot("Playwright is not installed (pip install -e '.[test]')") from None
    with tempfile.TemporaryDirectory(prefix="planledger-screens-") as folder, \
            _chromium() as browser:
        made = [Path(folder) / name for name in NAMES]
        replica = start_replica(str(Path(folder) / "ledger.sqlite"))
        try:
            raced = _race(replica.db)
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT},
                                    color_scheme="light", reduced_motion="reduce")
            _console(page, replica.url, made[0])
            _step_detail(page, raced, made[1])
            _timeline(page, made[2])
        except (AssertionError, BrowserError) as failed:  # expect() and Playwright's own
            raise CannotShoot(str(failed).strip().splitlines()[0]) from None
        finally:
            replica.stop()
        out.mkdir(parents=True, exist_ok=True)
        return [Path(shutil.move(path, out / path.name)) for path in made]


def _race(db: str) -> str:
    """Run the seed's race on the served store, as `planledger demo --race --db` does; the
    step both agents went for."""
    runtime = open_runtime(db)
    try:
        return demo.race(runtime).winner.took
    finally:
        runtime.close()


def _console(page: "Page", url: str, path: Path) -> None:
    """The whole console, the finished plan chosen, once it shows the race's end."""
    from playwright.sync_api import expect

    page.goto(f"{url}/#plan={PLAN}")
    expect(page.locator("#live")).to_have_text("live", timeout=WAIT_MS)
    expect(page.locator(f'[data-rollup="{PLAN}"]')).to_have_text(DONE, timeout=WAIT_MS)
    expect(page.locator('.chip[data-kind="bounced"]')).to_be_visible(timeout=WAIT_MS)
    expect(page.locator('.chip[data-kind="completed"]')).to_have_count(6, timeout=WAIT_MS)
    _save(page, path)


def _step_detail(page: "Page", step_id: str, path: Path) -> None:
    """The raced step's panel: its history has the claim, the bounce and the completion."""
    from playwright.sync_api import expect

    page.locator(f'[data-key="step-{step_id}"]').click()
    history = page.locator("#detail .history")
    expect(history).to_contain_text("claim bounced", timeout=WAIT_MS)
    expect(history).to_contain_text("completed", timeout=WAIT_MS)
    _save(page, path)
    page.keyboard.press("Escape")
    expect(page.locator("#detail")).to_be_hidden(timeout=WAIT_MS)


def _timeline(page: "Page", path: Path) -> None:
    """The console's timeline of the plan, a lane per session: the page's end, where the
    timeline sits whole under the sticky bar (it scrolls to its newest entry by itself)."""
    _save(page, path, scroll="window.scrollTo(0, document.body.scrollHeight)")


def _save(page: "Page", path: Path, scroll: str = "window.scrollTo(0, 0)") -> None:
    """The viewport as a PNG, once `scroll` has moved the page where the picture is."""
    page.mouse.move(0, 0)  # no hover tip in the picture
    page.evaluate("document.activeElement?.blur()")  # nor a focus ring left by a click
    page.evaluate(scroll)
    page.screenshot(path=str(path), animations="disabled", caret="hide")


@contextmanager
def _chromium() -> Iterator["Browser"]:
    """The system's Chromium, headless, through Playwright's public API."""
    if shutil.which(CHROMIUM) is None:
        raise CannotShoot(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=COMMAND, description="Make the documentation's screenshots of the console: "
        "a real server, the demo's race and a headless Chromium.")
    parser.add_argument("--out", type=Path, default=IMAGES, metavar="DIR",
                        help=f"the folder to write {', '.join(NAMES)} into (default: docs/img)")
    out: Path = parser.parse_args(argv).out
    try:
        written = shoot(out)
    # RuntimeError: the server did not start; OSError: DIR cannot be written.
    except (CannotShoot, RuntimeError, OSError) as failed:
        missing = failed
    else:
        for path in written:
            sys.stdout.write(f"wrote {path}\n")
        return 0
    sys.stderr.write(f"cannot make the screenshots: {missing}\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
