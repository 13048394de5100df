"""A call answered by the short path (api.cli.direct: no typer; to a server, no schemas
either) prints, exits and sends exactly as the full command line does, command by command.
Both run as real processes, the two ways of one call at the same time (each start costs
most of a second of CPU here; run together they take about one on two cores): against a
real server through a relay that passes the first request to arrive on and answers the
other with the same answer (so both see one answer and the relay sees both requests), and
on an embedded store."""

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import pytest

from planledger.api.cli import direct
from planledger.api.errors import BOUNCE_REASONS
from planledger.bench.servers import PLANLEDGER, free_port, start_replica
from planledger.ledger.commands import MAX_WAIT_SECONDS
from tests.e2e.test_cli_embedded import PLAN_YAML

# The command line as it is without the short path: planledger.main's, less its first step.
FULL = ("import sys; from planledger.main import ENTRIES, build; args = sys.argv[1:]; "
        "build(tuple(e for e in ENTRIES if e.name == args[0]) or ENTRIES)"
        "(args, prog_name='planledger')")
Seen = tuple[str, str, str | None, bytes]  # method, path, Authorization, body


@dataclass
class Relay:
    """An HTTP server in front of the ledger's: a request goes on to `upstream`; while
    `pairing`, the first request to arrive goes on and the second waits for its answer and
    is answered the same. `canned`: answer every request with this instead."""

    upstream: str
    seen: list[Seen] = field(default_factory=list)
    pairing: bool = False
    kept: "Future[tuple[int, bytes]] | None" = None
    canned: tuple[int, bytes] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def pair(self, pairing: bool) -> None:
        with self.lock:
            self.pairing, self.kept = pairing, None

    def answer(self, method: str, path: str, auth: str | None, body: bytes) -> tuple[int, bytes]:
        with self.lock:
            self.seen.append((method, path, auth, body))
            if self.canned is not None:
                return self.canned
            kept, first = self.kept, self.pairing and self.kept is None
            if first:
                kept = self.kept = Future()
            elif self.pairing:
                self.pairing = False  # the pair is answered: later requests go on
        if kept is not None and not first:
            return kept.result(timeout=60)
        try:
            answer = self._forward(method, path, auth, body)
        except Exception as error:
            if kept is not None:
                kept.set_exception(error)
            raise
        if kept is not None:
            kept.set_result(answer)
        return answer

    def _forward(self, method: str, path: str, auth: str | None, body: bytes,
                 ) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json", **({"Authorization": auth} if auth
                                                          else {})}
        got = httpx.request(method, self.upstream + path, content=body or None,
                            headers=headers, timeout=60)
        return got.status_code, got.content


def _serve(relay: Relay) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, content = relay.answer(self.command, self.path,
                                           self.headers.get("Authorization"), body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        do_GET = do_POST = do_PATCH = _any  # noqa: N815 (http.server's names)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@dataclass
class World:
    relay: Relay
    url: str
    steps: dict[str, str]
    tokens: dict[str, str]
    sessions: dict[str, str]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    directory = tmp_path_factory.mktemp("remote")
    replica = start_replica(str(directory / "ledger.sqlite"))
    server, url = _serve(relay := Relay(replica.url))
    try:
        plan = directory / "plan.yaml"
        plan.write_text(PLAN_YAML)
        made = _json(replica.url, "plan", "create", str(plan))
        steps = {s["key"]: s["step_id"] for s in made["steps"]}
        started = {who: _json(replica.url, "session", "start", "--name", f"agent {who}")
                   for who in ("a", "b")}
        yield World(relay, url, steps, {w: s["token"] for w, s in started.items()},
                    {w: s["session_id"] for w, s in started.items()})
    finally:
        server.shutdown()
        replica.stop()


def _json(url: str, *args: str) -> Any:
    done = subprocess.run([PLANLEDGER, *args, "--url", url, "--json"], capture_output=True,
                          check=True, timeout=120)
    return json.loads(done.stdout)


def _run(command: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    done = subprocess.run(command, check=False, capture_output=True, text=True, env=env,
                          timeout=120, stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout, done.stderr


def _together(short: tuple[list[str], dict[str, str]], full: tuple[list[str], dict[str, str]],
              at_once: bool = True) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """Run the short path's process and the full command line's at the same time (unless
    not `at_once`: the short path's first); what each exited with and printed."""
    if not at_once:
        return _run(*short), _run(*full)
    with ThreadPoolExecutor(2) as pool:
        short_run, full_run = pool.submit(_run, *short), pool.submit(_run, *full)
        return short_run.result(), full_run.result()


def _both(world: World, *args: str, token: str | None = None, url: str | None = None,
          short_path: bool = True, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run `args` both ways (the short path first, which answers them if `short_path`);
    assert they print, exit and send the same; the outcome."""
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("COLUMNS", "FORCE_COLOR", "PLANLEDGER_TOKEN")}
    environment |= {"PLANLEDGER_URL": url or world.url, **(env or {})}
    if token:
        environment["PLANLEDGER_TOKEN"] = token
    with mock.patch.dict(os.environ, environment, clear=True):
        assert (direct.parse(list(args)) is not None) == short_path, args
    world.relay.seen.clear()
    world.relay.pair(True)
    short, full = _together(([PLANLEDGER, *args], environment),
                            ([sys.executable, "-c", FULL, *args], environment))
    world.relay.pair(False)
    assert short == full, args
    assert "Traceback" not in short[2], short
    if world.relay.seen:
        assert len(world.relay.seen) == 2 and world.relay.seen[0] == world.relay.seen[1]
    return short


def test_reads_print_as_the_full_command_line(world: World) -> None:
    a = world.tokens["a"]
    for output in ((), ("--json",)):
        assert _both(world, "plan", "list", *output)[0] == 0
        assert _both(world, "plan", "show", "auth-refresh", *output)[0] == 0
        assert _both(world, "ready", "auth-refresh", *output)[0] == 0
        assert _both(world, "ready", "auth-refresh", *output, token=a)[0] == 0
        assert _both(world, "step", world.steps["s5"], *output)[0] == 0
        assert _both(world, "log", "--limit", "5", *output)[0] == 0
        assert _both(world, "log", "--after=2", "--limit", "3", *output)[0] == 0
        assert _both(world, "session", "show", world.sessions["a"], *output)[0] == 0
        assert _both(world, "paths", "check", *output)[0] == 0
        assert _both(world, "paths", "check", "src/**", "--file", "a.py", "--but", "x",
                     "--exclusive-only", *output)[0] == 0
    assert "Refresh-token rotation" in _both(world, "plan", "list")[1]


def test_work_prints_as_the_full_command_line(world: World) -> None:
    a, b = world.tokens["a"], world.tokens["b"]
    s4, s5 = world.steps["s4"], world.steps["s5"]
    assert _both(world, "session", "start", "--name", "agent c")[0] == 0
    assert _both(world, "session", "start", "--json")[0] == 0
    assert _both(world, "claim", s4, "--lease", "600", "--path", "src/**",
                 "--shared-path", "docs", token=a)[0] == 0
    assert _both(world, "heartbeat", s4, "--lease", "900", "--json", token=a)[0] == 0
    assert _both(world, "note", s4, "the cookie flags are set", token=a)[0] == 0
    bounced = _both(world, "claim", s4, token=b)
    assert bounced[0] == 3 and "task already claimed" in bounced[2]
    assert _both(world, "paths", "check", "src/x.py", "--exclusive-only")[0] == 3
    assert _both(world, "claim-next", "auth-refresh", "--json", token=b)[0] == 4
    assert _both(world, "claim-next", "auth-refresh", token=b)[0] == 4
    assert _both(world, "complete", s4, "--fence", "1", "--note", "done", token=a)[0] == 0
    assert _both(world, "claim-next", "auth-refresh", "--lease", "60", token=b)[0] == 0
    assert _both(world, "release", s5, "--json", token=b)[0] in (0, 3)
    assert _both(world, "drop", world.steps["s6"], token=a)[0] in (0, 3)
    assert _both(world, "session", "end", token=b)[0] == 0


def test_refusals_and_bad_answers_read_as_the_full_command_line(world: World) -> None:
    s5 = world.steps["s5"]
    assert _both(world, "claim", s5)[0] == 1  # no token: the server's 401
    assert _both(world, "step", "01NOSUCHSTEP")[0] == 1
    assert _both(world, "plan", "show", "nope", "--json")[0] == 1
    assert _both(world, "claim", s5, "--lease", "-5", token=world.tokens["a"])[0] == 1
    world.relay.canned = (502, b"<html>bad gateway</html>")
    try:
        assert _both(world, "plan", "list")[0] == 1
        assert _both(world, "claim", s5, token=world.tokens["a"])[0] == 1
    finally:
        world.relay.canned = None
    world.relay.canned = (500, b'{"reason": "internal", "message": "internal error; the '
                               b'server log has the details"}')
    try:  # a server's failure is one line on both paths, never a traceback
        failed = _both(world, "claim", s5, token=world.tokens["a"])
        assert failed[0] == 1
        assert failed[2].strip() == ("the server failed (500): internal error; the server "
                                     "log has the details")
    finally:
        world.relay.canned = None


def test_layouts_rich_must_draw_read_as_the_full_command_line(world: World) -> None:
    for env in ({"COLUMNS": "40"}, {"COLUMNS": "200"}, {"FORCE_COLOR": "1"}):
        assert _both(world, "plan", "show", "auth-refresh", env=env)[0] == 0
        assert _both(world, "log", "--limit", "4", env=env)[0] == 0
        assert _both(world, "step", "01NOSUCHSTEP", env=env)[0] == 1


@pytest.mark.parametrize("args", [
    ("claim",), ("claim", "x", "y"), ("claim-next", "p", "--wait", str(MAX_WAIT_SECONDS + 1)),
    ("claim", "x", "--lease", "abc"), ("plan", "list", "--session", "x"), ("log", "--limit"),
    ("claim", "x", "--help"), ("plan", "list", "--json=1"), ("step", "-x"), ("plan",),
    ("plan", "nope"), ("paths", "check", *["g"] * 101),
])
def test_bad_input_reads_as_the_full_command_line(world: World, args: tuple[str, ...]) -> None:
    code, _, _ = _both(world, *args, short_path=False)
    assert code != 0 or "--help" in args


@pytest.mark.parametrize("url", ["not-a-url", "http://127.0.0.1:notaport", "ftp://h/"])
def test_a_bad_url_reads_as_the_full_command_line(world: World, url: str) -> None:
    assert _both(world, "plan", "list", url=url, short_path=False)[0] == 1


def test_no_server_reads_as_the_full_command_line(world: World) -> None:
    nobody = f"http://127.0.0.1:{free_port()}"
    for args in (("plan", "list"), ("claim", "x", "--json"), ("session", "end")):
        code, out, err = _both(world, *args, url=nobody, token=world.tokens["a"])
        assert (code, out) == (1, "") and err.startswith("cannot reach the server")


def test_the_short_path_answers_what_it_covers(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("URL", "DB", "TOKEN", "SESSION"):
        monkeypatch.delenv(f"PLANLEDGER_{name}", raising=False)
    for args in (["plan", "list", "--url", "http://h"], ["claim", "x", "--url=http://h",
                                                        "--token", "t", "--lease", "5"],
                 ["plan", "list"], ["ready", "p", "--db", "x.sqlite"], ["claim", "x"],
                 ["ready", "p", "--session", "s"], ["session", "start"]):
        assert direct.parse(args) is not None, args
    for args in (["plan", "create", "plan.yaml"], ["timeline"], ["db", "info"], ["serve"],
                 ["plan", "list", "--session", "s"]):
        assert direct.parse(args) is None, args


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """An embedded store with a plan, one step held and a session holding nothing; its path
    and step ids by key (and the sessions' ids as "holder" and "idle")."""
    directory = tmp_path_factory.mktemp("embedded")
    db = str(directory / "ledger.sqlite")
    plan = directory / "plan.yaml"
    plan.write_text(PLAN_YAML)
    made = _json_db(db, "plan", "create", str(plan))
    ids = {s["key"]: s["step_id"] for s in made["steps"]}
    ids["holder"] = _json_db(db, "session", "start", "--name", "agent a")["session_id"]
    ids["idle"] = _json_db(db, "session", "start", "--name", "agent b")["session_id"]
    _json_db(db, "claim", ids["s4"], "--session", ids["holder"])
    yield db, ids


def _json_db(db: str, *args: str) -> Any:
    done = subprocess.run([PLANLEDGER, *args, "--db", db, "--json"], capture_output=True,
                          check=True, timeout=120)
    return json.loads(done.stdout)


def _both_here(db: str, *args: str, short_path: bool = True, env: dict[str, str] | None = None,
               clean: bool = True, at_once: bool = True) -> tuple[int, str, str]:
    """Run `args` (a read) on the embedded store both ways at once (unless not `at_once`);
    assert they print and exit the same."""
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith("PLANLEDGER_") and k not in ("COLUMNS", "FORCE_COLOR")}
    environment |= {"PLANLEDGER_DB": db, **(env or {})}
    with mock.patch.dict(os.environ, environment, clear=True):
        assert (direct.parse(list(args)) is not None) == short_path, args
    short, full = _together(([PLANLEDGER, *args], environment),
                            ([sys.executable, "-c", FULL, *args], environment), at_once)
    assert short == full, args
    assert "Traceback" not in short[2] or not clean, short
    return short


MOMENT = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?|"
                    r"\d+(\.\d+)? s left|\"seconds_left\": [\d.]+")


def _both_on_copies(db: str, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """Run a write both ways at once, each on its own copy of the store at `db`; assert
    they print and exit the same, moments aside (each writes at its own)."""
    runs = []
    for way, command in (("short", [PLANLEDGER, *args]),
                         ("full", [sys.executable, "-c", FULL, *args])):
        copy = tmp_path / way
        shutil.copytree(Path(db).parent, copy)
        environment = {k: v for k, v in os.environ.items()
                       if not k.startswith("PLANLEDGER_") and k != "COLUMNS"}
        environment["PLANLEDGER_DB"] = str(copy / Path(db).name)
        with mock.patch.dict(os.environ, environment, clear=True):
            assert direct.parse(list(args)) is not None, args
        runs.append((command, environment))
    outcomes = [(code, MOMENT.sub("<moment>", out), MOMENT.sub("<moment>", err))
                for code, out, err in _together(runs[0], runs[1])]
    for way in ("short", "full"):
        shutil.rmtree(tmp_path / way)
    assert outcomes[0] == outcomes[1], args
    assert "Traceback" not in outcomes[0][2], outcomes[0]
    return outcomes[0]


def test_embedded_work_prints_as_the_full_command_line(
        store: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    db, ids = store
    holder, idle, s4 = ids["holder"], ids["idle"], ids["s4"]
    for output in ((), ("--json",)):
        assert _both_on_copies(db, tmp_path, "ready", "auth-refresh", "--session", idle,
                               *output)[0] == 0
        assert _both_on_copies(db, tmp_path, "heartbeat", s4, "--lease", "600",
                               "--session", holder, *output)[0] == 0
        assert _both_on_copies(db, tmp_path, "complete", s4, "--note", "done", "--session",
                               holder, *output)[0] == 0
        assert _both_on_copies(db, tmp_path, "release", s4, "--session", holder,
                               *output)[0] == 0
        assert _both_on_copies(db, tmp_path, "note", s4, "see the PR", "--session", holder,
                               *output)[0] == 0
        assert _both_on_copies(db, tmp_path, "claim-next", "auth-refresh", "--session", idle,
                               *output)[0] == 4
        assert _both_on_copies(db, tmp_path, "session", "end", "--session", holder,
                               *output)[0] == 0
    bounced = _both_on_copies(db, tmp_path, "claim", s4, "--path", "src/**", "--session", idle)
    assert bounced[0] == 3 and "task already claimed" in bounced[2]
    assert _both_on_copies(db, tmp_path, "claim", ids["s5"], "--session", idle)[0] == 3
    assert _both_on_copies(db, tmp_path, "drop", s4, "--session", idle)[0] == 3
    assert _both_on_copies(db, tmp_path, "claim", s4)[0] == 1  # acts for no session
    assert _both_on_copies(db, tmp_path, "complete", "01NOSUCHSTEP", "--session", holder)[0] == 1


def test_embedded_reads_print_as_the_full_command_line(
        store: tuple[str, dict[str, str]]) -> None:
    db, ids = store
    for output in ((), ("--json",)):
        assert _both_here(db, "plan", "list", *output)[0] == 0
        assert _both_here(db, "plan", "show", "auth-refresh", *output)[0] == 0
        assert _both_here(db, "ready", "auth-refresh", *output)[0] == 0
        assert _both_here(db, "step", ids["s4"], *output)[0] == 0
        assert _both_here(db, "log", "--limit", "3", "--after", "1", *output)[0] == 0
        assert _both_here(db, "session", "show", ids["idle"], *output)[0] == 0
        assert _both_here(db, "paths", "check", "--exclusive-only", *output)[0] == 0
    assert "Refresh-token rotation" in _both_here(db, "plan", "list")[1]
    assert _both_here(db, "plan", "show", "auth-refresh", env={"COLUMNS": "40"})[0] == 0
    assert _both_here(db, "ready", "auth-refresh", env={"FORCE_COLOR": "1"})[0] == 0


PATHS_PLAN = """\
slug: paths
title: Paths
steps:
  - key: api
    title: Touch the API
    paths: ["src/**"]
  - key: handlers
    title: Touch the handlers
    priority: 0
    paths: ["src/api/**", {pattern: docs/, mode: shared}]
  - key: free
    title: Touch nothing
"""


def test_embedded_ready_with_reservations_prints_as_the_full_command_line(
        tmp_path: Path) -> None:
    """What a claim reserves, what a ready step would collide with, and the colliding step
    listed last, read by the short path without the schemas."""
    db = str(tmp_path / "ledger.sqlite")
    plan = tmp_path / "plan.yaml"
    plan.write_text(PATHS_PLAN)
    ids = {s["key"]: s["step_id"] for s in _json_db(db, "plan", "create", str(plan))["steps"]}
    holder = _json_db(db, "session", "start", "--name", "agent a")["session_id"]
    _json_db(db, "claim", ids["api"], "--path", "go.mod", "--session", holder)
    shown = json.loads(_both_here(db, "ready", "paths", "--json")[1])
    assert [s["step_id"] for s in shown["ready"]] == [ids["free"], ids["handlers"]]
    assert shown["ready"][1]["collides_with"][0]["holder"] == holder
    assert [p["pattern"] for p in shown["held"][0]["reserved"]] == ["src/**", "go.mod"]
    assert _both_here(db, "ready", "paths")[0] == 0
    assert _both_here(db, "plan", "list", "--json")[0] == 0


# Run as `planledger` runs; at exit, name what was loaded (on stderr).
LOADED_AT_EXIT = """
import atexit, sys
atexit.register(lambda: sys.stderr.write("LOADED " + " ".join(sorted(sys.modules)) + "\\n"))
from planledger.main import main
main(sys.argv[1:])
"""
# What an embedded read need not load: typer, pydantic and the API's schemas, and the
# ledger's write side (issue 19: they were two thirds of its start-up), nor the
# eventsourcing library (a fifth: the file is read directly, infra.sqlite_reading). (rich
# is loaded for a table it must draw itself: api.cli.output.)
NOT_FOR_A_READ = ("typer", "pydantic", "planledger.api.schemas",
                  "planledger.ledger.application", "planledger.ledger.commands",
                  "eventsourcing")


def test_an_embedded_ready_or_plan_list_loads_no_schemas_no_write_side_no_library(
        store: tuple[str, dict[str, str]]) -> None:
    db, _ = store
    for args in (["ready", "auth-refresh"], ["plan", "list", "--json"]):
        done = subprocess.run([sys.executable, "-c", LOADED_AT_EXIT, *args, "--db", db],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        loaded = done.stderr.split("LOADED ", 1)[1].split()
        heavy = [m for m in loaded
                 if m in NOT_FOR_A_READ or m.startswith(tuple(f"{n}." for n in NOT_FOR_A_READ))]
        assert heavy == [], (args, heavy)


def test_embedded_refusals_read_as_the_full_command_line(
        store: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    db, _ = store
    assert _both_here(db, "ready", "nope")[0] == 1
    assert _both_here(db, "step", "01NOSUCHSTEP", "--json")[0] == 1
    assert _both_here(db, "log", "--limit", "0")[0] == 1
    # (One after the other: the first creates the store, which is not what is compared.)
    assert _both_here(db, "plan", "list", "--db", str(tmp_path / "fresh.sqlite"),
                      at_once=False)[0] == 0
    # No database at that address: the full command line's traceback (api.errors words
    # no driver's error), which the short path leaves it to print.
    assert _both_here(db, "plan", "list", "--db", "postgresql://nobody@127.0.0.1:1/x",
                      clean=False)[0] == 1
    assert _both_here(db, "ready", "auth-refresh", "--session", "x")[0] == 1  # no such session
    assert _both_here(db, "claim-next", "auth-refresh", "--wait", "301",
                      short_path=False)[0] == 2


def test_the_short_path_keeps_the_ledgers_constants() -> None:
    assert direct.BOUNCE_REASONS == BOUNCE_REASONS
    assert direct.MAX_WAIT_SECONDS == MAX_WAIT_SECONDS


def test_the_short_path_reads_the_options_the_full_command_line_declares() -> None:
    import typer.main

    from planledger.main import ENTRIES

    for words, command in direct.ANSWERED.items():
        target = next(e for e in ENTRIES if e.name == words[0]).load()
        if isinstance(target, typer.Typer):
            group = typer.main.get_group(target)
            click_command = group.commands[words[1]]
        else:
            click_command = typer.main.get_command_from_info(
                typer.models.CommandInfo(callback=target), pretty_exceptions_short=True,
                rich_markup_mode=None)
        declared = {flag for p in click_command.params for flag in p.opts
                    if flag.startswith("-")} - {"--help"}
        shared = {**direct.SHARED, **(direct.ACTING if command.token else {})}
        assert declared == set(shared) | set(command.options), words
        arguments = [p.name for p in click_command.params if not p.opts[0].startswith("-")]
        assert len(arguments) == len(command.arguments), words
    assert Path(PLANLEDGER).exists()
