"""The verbs of the `planledger` command line that api/ provides, written as data.

The data types come from api.cli.grammar. The program (planledger.main) puts these verbs
in one table with the verbs of the replays and the benchmarks. Every verb works on the
embedded store (`--db`, default ./.planledger/ledger.sqlite) or, with `--url`, on a
running server. `--json` prints output for scripts.

Exit codes: 0 done; 1 error; 2 a usage error (api.cli.parser); 3 refused by the ledger
(bounced); 4 nothing ready.

Each verb names the module that runs it. A call imports only that module, and `--help`
imports none. This matters because agents run these commands by the hundred, and each
module loads what its verbs need. tests/unit/test_cli_table.py checks every entry against
the code it names.
"""

from planledger.api.cli.grammar import (
    ACTING,
    DB,
    FENCE,
    JSON,
    LEASE,
    LEASE_DEFAULT,
    NOTE,
    PLAN,
    READING,
    SESSION,
    STEP,
    TOKEN,
    URL,
    Argument,
    Group,
    Option,
    Verb,
)

HELP = "planledger: one dependency-aware queue of plan steps for many agents."

EXIT_ERROR = 1
EXIT_BOUNCED = 3
EXIT_NOTHING_READY = 4

_CLI = "planledger.api.cli"
_CALLS = f"{_CLI}.calls:answer"  # verbs answered from the table in api.cli.calls
_CLOSING = (FENCE, NOTE)
# Evidence for a completion (ledger.domain.evidence). It is stored in the event.
_EVIDENCE = (
    Option("--commit", "commit", "A commit that did the work, by its sha (7 to 64 hex "
           "digits); repeat for more.", kind="list", metavar="SHA"),
    Option("--branch", "branch", "The branch the commits are on.", metavar="BRANCH"),
    Option("--pr", "pr", "The change request (pull or merge request): an http(s) URL.",
           metavar="URL"),
    Option("--check", "check", "A check run on the work and its result, with a short "
           "summary if you like (`tests=pass:383 passed`, `lint=fail`); repeat for more. A "
           "failed one refuses the completion where the plan requires every check to pass.",
           kind="list", metavar="NAME=pass|fail[:SUMMARY]"),
)
MAX_WAIT_SECONDS = 300  # equals ledger.commands.MAX_WAIT_SECONDS; a test checks this
_REPO = Option("--repo", "repo", "The git repository (any directory in it).",
               metavar="DIR", default=".")
_FAIL_CLOSED = Option("--fail-closed", "fail_closed", "Refuse the commit when the ledger "
                      "cannot be asked (default: allow it, with a warning).", kind="flag")
_ROLES = ("reader (every read), worker (its own sessions and claims, notes, new steps), "
          "planner (plans, priorities, dependencies, others' steps) or admin "
          "(force-release, keys); each includes the ones before it.")
_ADMIN = (DB, URL, TOKEN, JSON)
_FILE = Argument("file", "FILE", "")  # each verb says what its FILE is

GROUPS = (
    Group("plan", "Create and inspect plans."),
    Group("session", "Start, show and end sessions."),
    Group("paths", "Path reservations: who holds which paths."),
    Group("guard", "A git pre-commit hook that refuses commits touching paths other "
                   "sessions hold."),
    Group("db", "Set up, inspect, back up and restore the store."),
    Group("keys", "Issue, list and revoke access keys."),
    Group("import", "Bring a plan in from beads or a Claude Code task list."),
    Group("export", "Write a plan out in another tool's format."),
)
_INTO = Option("--plan", "plan", "The plan to create (a new slug); importing into the plan "
               "an earlier import made adds nothing.", metavar="PLAN", required=True)
_TITLE = Option("--title", "title", "The new plan's title (default: named after the "
                "source).", metavar="TITLE")

VERBS = (
    Verb(("serve",), f"{_CLI}.serve:serve",
         "Serve the HTTP API (OpenAPI docs at /docs, health at /healthz, metrics at "
         "/metrics).",
         options=(DB, Option("--host", "host", "The address to bind (default 127.0.0.1: "
                             "this machine only).", metavar="ADDRESS",
                             env="PLANLEDGER_HOST"),
                  Option("--port", "port", "The port (default 8765).", kind="int", low=0,
                         high=65535, metavar="PORT", env="PLANLEDGER_PORT"),
                  LEASE_DEFAULT)),
    Verb(("plan", "create"), f"{_CLI}.plans:plan_create",
         "Create a plan, its constraints and its steps (with dependencies) from FILE.",
         (_FILE._replace(help="A YAML or Markdown plan file."),), ACTING),
    Verb(("import", "beads"), f"{_CLI}.imports:import_beads",
         "Create a plan from a beads export (.beads/issues.jsonl), one step an issue.\n\n"
         "Each issue's id is its step's key (`PLAN/bd-a1b2`, or `bd-a1b2` alone); blocks "
         "dependencies are dependencies, parent-child the parent, discovered-from the "
         "origin, other types links; labels and priority are kept; closed issues arrive "
         "done, in-progress ones open with a note naming who held them. All steps or none: "
         "a bad line, a cycle or a dependency on an issue the file lacks is refused, "
         "naming it. Run again, it says there is nothing to add, or names each issue "
         "that differs from the plan's step.",
         (_FILE._replace(help="The beads JSONL export (`-`: standard input)."),),
         (_INTO, _TITLE, *ACTING)),
    Verb(("import", "claude-tasks"), f"{_CLI}.imports:import_claude_tasks",
         "Create a plan from a Claude Code task list (~/.claude/tasks/<list>/), one step a "
         "task.\n\nTask N is the step keyed `task-N`; blockedBy and blocks are "
         "dependencies; completed tasks arrive done, in-progress ones open with a note "
         "naming their owner; fields the step has no place for are kept in its body; "
         "deleted tasks, files that are not tasks and symbolic links are left out and "
         "counted.",
         (Argument("dir", "DIR", "The task list's directory."),),
         (_INTO, _TITLE, *ACTING)),
    Verb(("export", "beads"), f"{_CLI}.imports:export_beads",
         "Write a plan as a beads export (JSONL, one issue a line), as `import beads` reads "
         "it.",
         (), (Option("--plan", "plan", "The plan to export.", metavar="PLAN", required=True),
              Option("--output", "output", "The file to write (default: standard output).",
                     metavar="FILE", aliases=("-o",)), DB, URL)),
    Verb(("plan", "show"), _CALLS, "A plan's progress, constraints and steps.",
         (PLAN,), READING),
    Verb(("plan", "list"), _CALLS, "Every plan with its progress line.", (), READING),
    Verb(("session", "start"), _CALLS,
         "Start a session; prints its id and token (keep the token: it proves the "
         "session).", (),
         (Option("--name", "session_name", "A label for people.", metavar="NAME"),
          *READING)),
    Verb(("session", "end"), _CALLS, "End the session; releases every step it holds.",
         (), ACTING),
    Verb(("session", "show"), _CALLS, "A session and what it holds.",
         (Argument("session_id", "SESSION", "The session's id."),), READING),
    Verb(("ready",), _CALLS,
         "The steps of PLAN a claim would accept now, then the held and blocked ones.",
         (PLAN,), ACTING),
    Verb(("step",), _CALLS, "A step with its holder, blockers and history.", (STEP,),
         READING),
    Verb(("claim",), _CALLS,
         "Claim STEP; exits 3 if it bounced (held by another session, blocked, closed, or "
         "its paths reserved by another session).", (STEP,),
         (LEASE,
          Option("--path", "path", "A path to reserve with the claim, exclusively, beside "
                 "the step's own (a glob from the repository root).", kind="list",
                 metavar="GLOB"),
          Option("--shared-path", "shared_path", "A path to reserve with the claim, "
                 "shared with other shared reservations.", kind="list", metavar="GLOB"),
          *ACTING)),
    Verb(("claim-next",), _CALLS,
         "Claim the next ready step of PLAN (by priority, then the longest chain waiting "
         "on it, then the oldest); exits 4 (saying why) when nothing is ready (with "
         "--wait: when nothing became ready in time).", (PLAN,),
         (LEASE,
          Option("--wait", "wait_seconds", "When nothing is ready, wait up to SECONDS for "
                 "a step to become claimable and claim it (0 answers at once).",
                 kind="int", metavar="SECONDS", default=0, low=0, high=MAX_WAIT_SECONDS,
                 aliases=("--wait-seconds",)),
          Option("--review", "review", "Take a step in review to review instead (not your "
                 "own work, nor your key's); exits 4 when there is none.", kind="flag"),
          *ACTING)),
    Verb(("heartbeat",), _CALLS,
         "Extend your lease on STEP; exits 3 if you no longer hold it.", (STEP,),
         (LEASE, *ACTING)),
    Verb(("complete",), _CALLS,
         "Mark STEP done (you must hold it), with the evidence of the work if you give it."
         "\n\nThe commits, branch, change request and checks are kept in the completion's "
         "event and shown in the step's history and the timeline. Exits 1 (naming the "
         "check) when a check failed and the plan requires every check to pass. With "
         "--claim-next it then claims the plan's next step for you, as claim-next does.",
         (STEP,),
         (*_CLOSING, *_EVIDENCE,
          Option("--claim-next", "claim_next", "Then claim the plan's next ready step, in the "
                 "same call.", kind="flag"),
          LEASE._replace(help="With --claim-next: the next claim's lease in seconds."),
          *ACTING)),
    Verb(("review",), _CALLS,
         "Review STEP, a step in review: --approve makes it done (its dependents unblock), "
         "--reject opens it again with your --note for its next claimer.\n\nFour eyes: "
         "refused (exit 1, naming the rule) for the session that finished the work and for "
         "any session started with its author's key. Take one first with `claim-next PLAN "
         "--review`, so no other reviewer reviews it at the same time.",
         (STEP,),
         (Option("--approve", "approve", "Approve the work: the step is done.", kind="flag"),
          Option("--reject", "reject", "Reject the work: the step is open again.",
                 kind="flag"),
          Option("--note", "note", "What you found, handed to the step's next claimer.",
                 metavar="TEXT"),
          *ACTING)),
    Verb(("release",), _CALLS, "Give STEP back; it is claimable again at once.", (STEP,),
         (*_CLOSING, *ACTING)),
    Verb(("drop",), _CALLS, "Drop STEP (by its holder, or by anyone when nobody holds it).",
         (STEP,), (*_CLOSING, *ACTING)),
    Verb(("note",), _CALLS, "Leave a handoff note on STEP for whoever picks it up next.",
         (STEP, Argument("text", "TEXT", "The note.")), ACTING),
    Verb(("add",), _CALLS,
         "Add a step to PLAN: work found on the way, or a child of an epic.\n\nSay where "
         "you found it with --discovered-from; --parent puts it under an epic, which is "
         "claimable only once none of its children is open, and closes itself once all "
         "it waits on is done (unless it requires a review).",
         (PLAN, Argument("title", "TITLE", "What the step does, in one line.")),
         (Option("--body", "body", "Details: acceptance criteria, files, notes.",
                 metavar="TEXT"),
          Option("--depends-on", "depends_on", "A step that must be done (or dropped) "
                 "first: its reference or id.", kind="list",
                 metavar="STEP"),
          Option("--parent", "parent", "The step it belongs under (an epic of the plan).",
                 metavar="STEP"),
          Option("--discovered-from", "discovered_from", "The step you found it while "
                 "working on.", metavar="STEP"),
          Option("--label", "label", "A free label.", kind="list",
                 metavar="LABEL"),
          Option("--priority", "priority", "0 (highest) .. 4, or beads' P0 .. P4 "
                 "(default 2).", metavar="P"),
          Option("--key", "key", "Its name within the plan: `<plan>/<key>` names it.",
                 metavar="KEY"),
          *ACTING)),
    Verb(("paths", "check"), _CALLS,
         "Who holds what: the live reservations GLOBs overlap or --file paths fall under "
         "(every live one when none are given), each with its holder, step and the "
         "patterns met.\n\nExits 3 when one is found with --exclusive-only (something "
         "would refuse the paths).",
         (Argument("patterns", "GLOB", "Globs: the live reservations they overlap.",
                   many=True),),
         (Option("--file", "file", "A file path, taken literally: the live reservations "
                 "that cover it.", kind="list", metavar="PATH"),
          Option("--exclusive-only", "exclusive_only", "Leave shared reservations out.",
                 kind="flag"),
          Option("--but", "but", "Leave this session's reservations out.",
                 metavar="SESSION"),
          *READING)),
    Verb(("guard", "install"), f"{_CLI}.guard:install",
         "Write the commit guard's hooks into a git repository.\n\nAt every commit (and "
         "merge) the hook runs `planledger guard check` against this store (--db, its "
         "path resolved now) or server (--url). The committing session comes from "
         "PLANLEDGER_SESSION or PLANLEDGER_TOKEN in the committer's environment; its own "
         "reservations never refuse its commits. The prepare-commit-msg and commit-msg "
         "hooks add Planledger-* trailers naming the session's live claims (`planledger "
         "guard trailers`), which `planledger audit git` reads.", (),
         (_REPO, DB, URL, _FAIL_CLOSED,
          Option("--force", "force", "Replace a hook that is not planledger's (without "
                 "it, that hook is kept as <hook>.pre-planledger and run first).",
                 kind="flag"))),
    Verb(("guard", "check"), f"{_CLI}.guard:check",
         "Refuse a commit that changes paths other sessions hold: what the hook runs.\n\n"
         "Exits 1 when a staged change falls under another session's live exclusive path "
         "reservation, naming each file, pattern, holder and step. A merge is judged by "
         "what it changes against its first parent. When the ledger cannot be asked, the "
         "commit is allowed with a warning (refused with --fail-closed).", (),
         (_REPO, DB, URL, SESSION, TOKEN, _FAIL_CLOSED)),
    Verb(("guard", "trailers"), f"{_CLI}.guard:trailers",
         "Add Planledger-Step, -Fence and -Session trailers to a commit message: what the "
         "trailer hooks run.\n\nFor each live claim of the committing session "
         "(PLANLEDGER_SESSION or PLANLEDGER_TOKEN), one Planledger-Step (`<plan>#<number> "
         "<step id>`) and Planledger-Fence pair, then Planledger-Session once; a pair the "
         "message carries already is not added again. Never refuses a commit: a failure is "
         "one line on stderr.",
         (Argument("hook_args", "HOOK_ARG", "What git hands the hook: the message file, "
                   "then (prepare-commit-msg) its source and commit.", many=True),),
         (_REPO, DB, URL, SESSION, TOKEN)),
    Verb(("log",), _CALLS, "The event log, in the order events were appended.", (),
         (Option("--after", "after", "Events after this log position.", kind="int",
                 metavar="POSITION", default=0),
          Option("--limit", "limit", "At most this many events.", kind="int",
                 metavar="N", default=100),
          *READING)),
    Verb(("timeline",), f"{_CLI}.plans:timeline",
         "The merged timeline of the live log: one clock, a lane per session.", (),
         (Option("--plan", "plan", "One plan's entries.", metavar="PLAN"),
          Option("--session", "sessions", "Only this session's lane.", kind="list",
                 metavar="SESSION"),
          *READING)),
    Verb(("db", "init"), f"{_CLI}.db:init",
         "Create the PostgreSQL schema and tables; safe to run at once from many "
         "processes.", (), (DB,)),
    Verb(("db", "status"), f"{_CLI}.db:status",
         "Say whether the PostgreSQL schema is ready; exits 1 if `db init` is still "
         "needed.", (), (DB,)),
    Verb(("db", "backup"), f"{_CLI}.db:backup",
         "Copy the SQLite store to FILE while it serves (SQLite's online backup): every "
         "write acknowledged before the copy began is in it.\n\nThe secret (<db>.secret) "
         "is not, unless --with-secret: keep it apart, as a secret.",
         (_FILE._replace(help="The new file to write the copy to."),),
         (DB, Option("--with-secret", "with_secret", "Also write the store's secret beside "
                     "the copy, as FILE.secret (readable by you only).", kind="flag"))),
    Verb(("db", "restore"), f"{_CLI}.db:restore",
         "Put a backup in place of the SQLite store (created if missing).",
         (_FILE._replace(help="A file written by `planledger db backup`."),),
         (DB, Option("--replace", "replace", "Replace a store that holds events (stop its "
                     "servers first).", kind="flag"))),
    Verb(("keys", "create"), f"{_CLI}.keys:create",
         "Issue a key with a role and print it once, alone on the last line (the store "
         "keeps only its hash: keep the key now).\n\n--json prints {\"name\", \"role\", "
         "\"key\"}. With --url, send an admin credential: an admin key in PLANLEDGER_KEY, "
         "or the admin token as --token.", (),
         (Option("--name", "key_name", "Who or what holds the key (1-64 letters, digits, "
                 "'.', '_', '@', '-'): the log names it beside every write made with it.",
                 metavar="NAME", required=True),
          Option("--role", "role", _ROLES, metavar="ROLE", required=True), *_ADMIN)),
    Verb(("keys", "list"), f"{_CLI}.keys:list_keys",
         "Every key name with its role, and whether it is live (never the keys "
         "themselves).", (), _ADMIN),
    Verb(("keys", "revoke"), f"{_CLI}.keys:revoke",
         "Revoke a key: it and every session started with it stop working at once.",
         (Argument("key_name", "NAME", "The key's name."),), _ADMIN),
    Verb(("mcp",), "planledger.api.mcp.stdio:mcp",
         "Serve the MCP tools to one agent over stdio: on the embedded store, or relayed "
         "to the running server at --url (its /mcp endpoint).", (),
         (DB, URL, LEASE_DEFAULT._replace(help="The lease of a claim that names none, in "
                                          "seconds (default 900; embedded store only: a "
                                          "server applies its own).")),
         before="planledger.api.mcp.handshake:answer_early"),
)
