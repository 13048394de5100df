"""The replays' verbs of the `planledger` command line (`replay …`, `demo`, `audit
verify`), as data (api.cli.grammar): the program (planledger.main) puts them in its one
table beside the interfaces'."""

from planledger.api.cli.grammar import DB, JSON, TOKEN, URL, Argument, Group, Option, Verb

_CLI = "planledger.replays.cli"
CLOCK_BOUND = 120.0  # seconds: `audit git --clock-bound`'s default
_PLAN = Option("--plan", "plan", "Only this plan's entries.", metavar="PLAN")
_SESSIONS = Option("--session", "sessions", "Only this session's.", kind="list",
                   metavar="SESSION")
_RECORDING = Argument("recording", "RECORDING", "A recording (JSON Lines, see "
                      "replays/README.md); default: the shipped two-agent race.",
                      optional=True)

GROUPS = (
    Group("replay", "Recordings of the log: export, import, timeline, re-execute, "
                    "explore."),
    Group("audit", "Tamper evidence: check the log's hash chain; hold a git history "
                   "against the ledger."),
)

VERBS = (
    Verb(("replay", "export"), f"{_CLI}:export_command",
         "Export the log (all of it, a plan, some sessions, a time window) to a "
         "recording.",
         (Argument("file", "FILE", "Where to write the recording ('-': stdout)."),),
         (DB, _PLAN, _SESSIONS,
          Option("--since", "since", "From this time (ISO 8601; UTC unless it says "
                 "otherwise).", metavar="TIME"),
          Option("--until", "until", "Up to this time (ISO 8601).", metavar="TIME"))),
    Verb(("replay", "import"), f"{_CLI}:import_command",
         "Import a recording into a fresh (empty) store: all of it, or nothing.",
         (Argument("file", "RECORDING", "A recording (JSON Lines, see "
                   "replays/README.md)."),), (DB,)),
    Verb(("replay", "timeline"), f"{_CLI}:timeline_command",
         "The merged timeline: one clock, a lane per session, bounces naming the "
         "holder.\n\nWith --transcript: the agents' own transcripts merged with the "
         "ledger's events.",
         (_RECORDING._replace(help="A recording (JSON Lines, see replays/README.md)."),),
         (_PLAN, _SESSIONS, JSON,
          Option("--html", "html", "Print a self-contained HTML page.", kind="flag"),
          Option("--transcript", "transcripts", "An agent's transcript (Claude Code JSONL "
                 "or a Codex CLI rollout; one for each agent): merged with its sessions' "
                 "events from RECORDING, --db or --url.", kind="list", metavar="FILE"),
          DB, URL,
          Option("--clock-threshold", "clock_threshold", "Seconds a transcript's clock may "
                 "differ from the ledger's before the offset is reported and applied.",
                 kind="float", default=1.0),
          Option("--show-secrets", "show_secrets", "Copy tokens found in transcripts as "
                 "they are (masked by default).", kind="flag"),
          Option("--repo", "repo", "A git repository: each session's commits (matched by "
                 "their Planledger-Session trailer) in its lane, at their committer dates "
                 "(the committer's word; `planledger audit git` checks them).",
                 metavar="DIR"))),
    Verb(("replay", "run"), f"{_CLI}:run_command",
         "Re-execute the recorded commands (virtual clock, recorded ids) and check the "
         "events come out byte for byte the same; exits 1 naming the first event that "
         "differs.", (_RECORDING,)),
    Verb(("replay", "explore"), f"{_CLI}:explore_command",
         "What if the sessions had interleaved otherwise? Each session keeps its own "
         "order; prints the distinct outcomes and how many interleavings lead to each.",
         (_RECORDING,),
         (JSON,
          Option("--limit", "limit", "Try every interleaving up to this many.", kind="int",
                 default=1000),
          Option("--samples", "samples", "Otherwise, draw this many.", kind="int",
                 default=200),
          Option("--seed", "seed", "The seed of the draw.", kind="int", default=0))),
    Verb(("demo",), f"{_CLI}:demo",
         "Seed the seed's plan auth-refresh (steps 1-4 done); with --race, two agents on "
         "real threads race for step 5: one wins, the other bounces naming it and takes "
         "step 6.", (),
         (Option("--race", "race", "Step 6 waits on 4, so 5 and 6 are both claimable: two "
                 "agents race.", kind="flag"),
          Option("--db", "db", "Where to seed (an SQLite path, 'memory' or a "
                 "postgresql:// URL).", metavar="STORE", default="memory"),
          Option("--record", "record", "Write the log to this recording file.",
                 metavar="FILE"),
          JSON,
          Option("--example", "example", "With --race: write the run's recording, both "
                 "agents' transcripts (Claude Code format) and the merged HTML page into "
                 "this folder.", metavar="DIR"),
          Option("--audit", "audit", "Instead: make the auditor's example in this new "
                 "folder (a git repository with the guard's hooks, a store, two agents' "
                 "commits, three of them escaping their claims) and audit it as "
                 "`planledger audit git` does.", metavar="DIR"))),
    Verb(("audit", "verify"), "planledger.replays.audit_cli:verify_command",
         "Check that every event carries a hash chained to the event before it in its "
         "stream; name the first event changed, removed or reordered.\n\nOn a store, "
         "check too that the log adds up to the head the store signed with its secret (so "
         "its newest events cut off, or a stream deleted, show) and, on SQLite, that no "
         "position is missing. Prints a digest of every stream's head: note it, and a "
         "later run that prints another shows any change since.",
         (Argument("recording", "RECORDING", "A recording (JSON Lines) to check; without "
                   "it, the store (--db).", optional=True),),
         (DB, JSON)),
    Verb(("audit", "git"), "planledger.api.cli.audit_git:audit_git",
         "Hold a git repository's history against the ledger; exits 1 naming each "
         "disagreement.\n\nReads every commit reachable from the branches, tags, "
         "remote-tracking branches and HEAD, and reports, each with the commit, the step "
         "and the session: a commit whose Planledger trailers name a claim that did not "
         "hold when it was made (lease lapsed, stale fence, released, session ended); a "
         "commit that changed files under another session's live exclusive reservation "
         "(the guard bypassed with --no-verify, or not installed); a completion whose "
         "evidence names a commit the history does not hold; trailers naming no claim "
         "the ledger granted. Committer dates can be set by hand: where the ledger's "
         "clock contradicts one by more than --clock-bound, the commit is judged at the "
         "ledger's time and the disagreement reported.", (),
         (Option("--repo", "repo", "The git repository (any directory in it).",
                 metavar="DIR", default="."),
          Option("--since", "since", "Only the commits after this revision (what it "
                 "reaches is left out).", metavar="REV"),
          Option("--clock-bound", "clock_bound", "Seconds a commit's date may disagree "
                 "with the ledger's clock before it is a finding.", kind="float",
                 default=CLOCK_BOUND),
          DB, URL, TOKEN, JSON)),
)
