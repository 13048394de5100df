"""Step references people can type: `plan#N` and `plan/key`, beside the step's id.

A step's id is a ULID; steps made together share most of it, so a person cannot tell two
apart by a prefix. Every step also has a reference within its plan: `auth-refresh#5` (its
number in the plan, counted from 1 in the order the steps were added) and, where the plan
file or the request gave it a key, `auth-refresh/limit`. A bare key (`bd-a1b2`) names the
step when exactly one plan has a step with that key.

This module parses references and finds them in a plan; `ledger.references` resolves one
against the store before any command is built, so events and recordings hold ids only.
"""

import re
from dataclasses import dataclass
from itertools import islice

from planledger.ledger.domain import errors
from planledger.ledger.domain.ids import PlanSlug, StepId
from planledger.ledger.domain.state import PlanState, StepDef

# A key: 1-64 letters, digits, '.', '_' or '-', starting with a letter or a digit (beads'
# ids such as `bd-a1b2` and `bd-a1b2.1` fit).
KEY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# A ULID, as step ids are written: a key shaped like one would read as an id.
ULID_PATTERN = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
_SLUG = r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?"
_NUMBERED = re.compile(rf"^(?P<plan>{_SLUG})#(?P<number>[1-9][0-9]{{0,8}})$")
_KEYED = re.compile(rf"^(?P<plan>{_SLUG})/(?P<key>[A-Za-z0-9][A-Za-z0-9._-]{{0,63}})$")
MAX_REFERENCE = 200  # longer text is no reference (and is cut when a message shows it)
# What a door accepts where a step is named: an id or a reference, checked before any
# lookup so that no odd string reaches a database driver.
STEP_TEXT_PATTERN = r"^[0-9A-Za-z_.#/-]{1,200}$"
MAX_SHOWN = 100  # characters of unknown text a message repeats


@dataclass(frozen=True)
class Reference:
    """A parsed reference: `plan#number`, `plan/key`, or a bare `key` (plan None)."""

    plan: PlanSlug | None
    number: int | None = None
    key: str | None = None


def check_key(key: str) -> str:
    """A step's key as a plan file or a request gives it, refused naming the rule."""
    if not KEY_PATTERN.match(key):
        raise errors.InvalidInput("key", f"{key[:80]!r} is not 1-64 letters, digits, '.', "
                                         "'_' or '-' starting with a letter or a digit")
    if ULID_PATTERN.match(key):
        raise errors.InvalidInput("key", f"{key!r} reads as a step id; choose another key")
    return key


def shown(text: str) -> str:
    """Text a caller gave as a step, cut to what a message repeats."""
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "…"


def is_id(text: str) -> bool:
    """Whether the text is written as a step id (a ULID), never as a key."""
    return ULID_PATTERN.match(text) is not None


def parse_reference(text: str) -> Reference | None:
    """The reference the text is, or None when it can only be an id. Text that is
    neither (`plan#0`, `plan#x`, an empty string, a bad slug) is a step not found."""
    if len(text) > MAX_REFERENCE or not text:
        raise errors.UnknownStep(shown(text))
    if "#" in text:
        numbered = _NUMBERED.match(text)
        if numbered is None:
            raise errors.UnknownStep(shown(text))
        return Reference(PlanSlug(numbered["plan"]), number=int(numbered["number"]))
    if "/" in text:
        keyed = _KEYED.match(text)
        if keyed is None:
            raise errors.UnknownStep(shown(text))
        return Reference(PlanSlug(keyed["plan"]), key=keyed["key"])
    if is_id(text) or not KEY_PATTERN.match(text):
        return None
    return Reference(None, key=text)


def find_step(plan: PlanState, reference: Reference) -> StepId | None:
    """The step of the plan the reference names, or None."""
    if reference.number is not None:
        # The plan's table is in the order steps were added: a step's number is its place.
        found = next(islice(plan.steps.values(), reference.number - 1, None), None)
        return found.id if found is not None else None
    return next((d.id for d in plan.steps.values() if d.key == reference.key), None)


def step_reference(plan: str, position: int) -> str:
    """The numbered reference of the step at `position` (0-based) in the plan."""
    return f"{plan}#{position + 1}"


def key_reference(plan: str, definition: StepDef) -> str | None:
    """The keyed reference of a step (None: it has no key)."""
    return None if definition.key is None else f"{plan}/{definition.key}"
