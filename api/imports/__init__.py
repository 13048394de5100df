"""Other tools' plans, brought in and written back: beads' JSONL export (`beads`) and
Claude Code's task lists (`claude_tasks`).

Each format's module is pure: a file's text in, `ImportedStep`s out (`steps`), or an
InvalidInput naming the line (or file) and why. `steps.ordered` puts them in an order
where every step comes after the steps it names, and refuses a cycle or a dependency on
an issue the source does not hold. `api.cli.imports` writes the result as one CreatePlan:
all steps or none.
"""
