"""The interfaces' commands of the `planledger` command line, each group in its module.

The program (planledger.main) adds these to its command line beside the replays' and the
benchmarks', which the interfaces never import. Every command works on the embedded store
(`--db`, default ./.planledger/ledger.sqlite) or, with `--url`, on a running server.
`--json` prints for scripts. Exit codes: 0 done, 1 error, 3 refused by the ledger
(bounced), 4 nothing ready (see api.cli.common).

The commands are named here as data, each with where it lives and its one-line help, so
that the command line imports only the one a call runs (and `planledger --help` none):
agents run these commands by the hundred, and each module pulls in what its commands
need. tests/unit/test_cli_table.py holds every line here to the code it names.
"""

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import typer

HELP = "planledger: one dependency-aware queue of plan steps for many agents."

# The exit codes (api.cli.common words them); here, so a call to a server needs no more.
EXIT_ERROR = 1
EXIT_BOUNCED = 3
EXIT_NOTHING_READY = 4


class Entry(NamedTuple):
    """One command of the command line, named without importing it: `target` is
    'module:attribute', a function (a command) or a Typer (a group, `planledger plan …`);
    `summary` is its help's first paragraph, as `planledger --help` lists it; `settings`
    names the module's attribute holding the command's click settings, if any; `before`
    is a 'module:function' the program calls with the command's arguments before it
    loads the command (`planledger mcp` answers its client's handshake there). A named
    tuple, not a dataclass: `dataclasses` loads `inspect`, ~9 ms of every call's start."""

    name: str
    target: str
    summary: str
    settings: str | None = None
    before: str | None = None

    def prepare(self, args: list[str]) -> None:
        """Run `before` on the command's arguments, if the command has one."""
        if self.before is not None:
            Entry(self.name, self.before, "").load()(args)

    def load(self) -> Any:
        from importlib import import_module

        module, _, attribute = self.target.partition(":")
        return getattr(import_module(module), attribute)

    def add_to(self, app: "typer.Typer") -> None:
        """Register the command (or group) on `app` under its name."""
        import typer

        target = self.load()
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=self.name)
            return
        settings = None
        if self.settings is not None:
            settings = Entry(self.name, f"{target.__module__}:{self.settings}", "").load()
        app.command(self.name, context_settings=settings)(target)


_CLI = "planledger.api.cli"
ENTRIES = (
    Entry("serve", f"{_CLI}.serve:serve",
          "Serve the HTTP API (OpenAPI docs at /docs, health at /healthz, metrics at "
          "/metrics)."),
    Entry("plan", f"{_CLI}.plans:plan_app", "Create and inspect plans."),
    Entry("session", f"{_CLI}.work:session_app", "Start, show and end sessions."),
    Entry("ready", f"{_CLI}.plans:ready",
          "The steps of PLAN a claim would accept now, then the held and blocked ones."),
    Entry("step", f"{_CLI}.plans:step", "A step with its holder, blockers and history."),
    Entry("claim", f"{_CLI}.work:claim",
          "Claim STEP; exits 3 if it bounced (held by another session, blocked, closed, or "
          "its paths reserved by another session)."),
    Entry("claim-next", f"{_CLI}.work:claim_next",
          "Claim the next ready step of PLAN (by priority, then the longest chain waiting "
          "on it, then the oldest); exits 4 (saying why) when nothing is ready (with "
          "--wait: when nothing became ready in time)."),
    Entry("heartbeat", f"{_CLI}.work:heartbeat",
          "Extend your lease on STEP; exits 3 if you no longer hold it."),
    Entry("complete", f"{_CLI}.work:complete", "Mark STEP done (you must hold it)."),
    Entry("release", f"{_CLI}.work:release", "Give STEP back; it is claimable again at once."),
    Entry("drop", f"{_CLI}.work:drop",
          "Drop STEP (by its holder, or by anyone when nobody holds it)."),
    Entry("note", f"{_CLI}.work:note",
          "Leave a handoff note on STEP for whoever picks it up next."),
    Entry("paths", f"{_CLI}.paths:paths_app", "Path reservations: who holds which paths."),
    Entry("guard", f"{_CLI}.guard:guard_app",
          "A git pre-commit hook that refuses commits touching paths other sessions hold."),
    Entry("log", f"{_CLI}.plans:log", "The event log, in the order events were appended."),
    Entry("timeline", f"{_CLI}.plans:timeline",
          "The merged timeline of the live log: one clock, a lane per session."),
    Entry("db", f"{_CLI}.db:db_app", "Set up, inspect, back up and restore the store."),
    Entry("keys", f"{_CLI}.keys:keys_app", "Issue, list and revoke access keys."),
    Entry("mcp", "planledger.api.mcp.stdio:mcp",
          "Serve the MCP tools to one agent over stdio: on the embedded store, or relayed "
          "to the running server at --url (its /mcp endpoint).",
          before="planledger.api.mcp.handshake:answer_early"),
)


def register(app: "typer.Typer") -> None:
    """Add the interfaces' commands to `app` (all of them: the program adds only the one a
    call names)."""
    for entry in ENTRIES:
        entry.add_to(app)


def __getattr__(name: str) -> Any:
    """`app`: the interfaces' commands alone (the whole program's are planledger.main's),
    assembled when first asked for, so importing one command's module stays cheap."""
    if name == "app":
        import typer

        app = typer.Typer(help=HELP, no_args_is_help=True)
        register(app)
        globals()["app"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
