"""Which role each command needs (ledger.domain.access has the roles and their order).

Most commands need one role whatever they touch. Three depend on the step: revising or
dropping a step its caller holds is a worker's own work, while revising, dropping or
reopening a step somebody else holds, or nobody holds, is a planner's. Adding a step is
a worker's (work found on the way). Setting a priority, on a new step or an old one, is
always a planner's.
"""

from collections.abc import Callable, Mapping
from typing import Any

from planledger.ledger import commands as c
from planledger.ledger.commands import Command
from planledger.ledger.domain.access import Role

NEEDS: Mapping[type[Command[Any]], Role] = {
    c.StartSession: "worker",
    c.EndSession: "worker",
    c.CreatePlan: "planner",
    c.AddStep: "worker",
    c.ReviseStep: "planner",
    c.DeclareDependencies: "planner",
    c.ListReady: "worker",
    c.Claim: "worker",
    c.Heartbeat: "worker",
    c.ClaimNext: "worker",
    c.Complete: "worker",
    c.Release: "worker",
    c.Drop: "planner",
    c.Reopen: "planner",
    c.ForceRelease: "admin",
    c.AddNote: "worker",
    c.IssueKey: "admin",
    c.RevokeKey: "admin",
    c.Review: "worker",  # four eyes, not a rank: any other key's worker may review
}
assert set(NEEDS) == set(c.COMMANDS), "every command needs a role"

# Commands that a step's own holder may make as a worker.
_HOLDER_MAY = (c.ReviseStep, c.Drop)


def needed_role(command: Command[Any], holds: Callable[[str], bool]) -> Role:
    """The role `command` needs; `holds(step_id)` says whether its actor holds the step."""
    if isinstance(command, c.AddStep | c.ReviseStep) and command.priority is not None:
        return "planner"
    if isinstance(command, _HOLDER_MAY) and holds(command.step_id):
        return "worker"
    return NEEDS[type(command)]
