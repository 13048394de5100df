"""One exception class per refused rule, each with a message a person understands."""

from collections.abc import Mapping, Sequence


class LedgerError(Exception):
    """Base of every refusal the ledger gives; `str(error)` is the message for people."""


class InvalidInput(LedgerError):
    """An argument is outside what the ledger accepts."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"invalid {field}: {problem}")


class PlanExists(LedgerError):
    """A plan with this slug already exists."""

    def __init__(self, slug: str) -> None:
        self.slug = slug
        super().__init__(f'plan "{slug}" already exists')


class UnknownPlan(LedgerError):
    """No plan has this slug."""

    def __init__(self, slug: str) -> None:
        self.slug = slug
        super().__init__(f'plan not found: "{slug}"')


class UnknownStep(LedgerError):
    """No step has this id."""

    def __init__(self, step_id: str) -> None:
        self.step_id = step_id
        super().__init__(f'step not found: "{step_id}"')


class AmbiguousReference(LedgerError):
    """A bare key names steps in several plans: the caller must say which plan."""

    def __init__(self, reference: str, candidates: Sequence[str]) -> None:
        self.reference = reference
        self.candidates = list(candidates)
        super().__init__(f'step reference "{reference}" is ambiguous: it names '
                         f'{", ".join(candidates)}; give one of those')


class UnknownSession(LedgerError):
    """No session has this id."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f'session not found: "{session_id}": call session_start first')


class SessionClosed(LedgerError):
    """The session has ended and can do nothing more."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f'session "{session_id}" has ended; start a new session')


class AlreadyClaimed(LedgerError):
    """Another session holds a live lease on the step."""

    def __init__(self, step_id: str, title: str, holder: str, fence: int, *,
                 holder_name: str | None = None, retry_after: int | None = None,
                 ref: str | None = None) -> None:
        self.step_id = step_id
        self.holder = holder
        self.holder_name = holder_name
        self.fence = fence
        self.retry_after = retry_after  # seconds until the holder's lease runs out
        named = f" ({holder_name})" if holder_name else ""
        super().__init__(
            f'task already claimed: held by "{holder}"{named} (step {ref or step_id} '
            f'"{title}")'
        )


class Blocked(LedgerError):
    """The step waits on dependencies that are neither done nor dropped. `refs` names
    steps by their references (`plan#N`) in the message; `detail` is the message by ids,
    as a refused claim's event keeps it."""

    def __init__(self, step_id: str, title: str, blockers: Sequence[tuple[str, str, str]],
                 refs: Mapping[str, str] | None = None) -> None:
        self.step_id = step_id
        self.blockers = list(blockers)
        self.refs = dict(refs or {})
        self.detail = _blocked(step_id, title, blockers, {})
        super().__init__(_blocked(step_id, title, blockers, refs or {}))


def _blocked(step_id: str, title: str, blockers: Sequence[tuple[str, str, str]],
             refs: Mapping[str, str]) -> str:
    waits = ", ".join(f'{refs.get(bid, bid)} "{btitle}" ({status})'
                      for bid, btitle, status in blockers)
    return f'task blocked: step {refs.get(step_id, step_id)} "{title}" waits on {waits}'


class Closed(LedgerError):
    """The step is done or dropped; reopen it first. `detail`: the message by id."""

    def __init__(self, step_id: str, title: str, status: str, ref: str | None = None) -> None:
        self.step_id = step_id
        self.status = status
        self.detail = f'task closed: step {step_id} "{title}" is {status}'
        super().__init__(f'task closed: step {ref or step_id} "{title}" is {status}')


class NotHolder(LedgerError):
    """The acting session does not hold a live claim on the step."""

    def __init__(self, step_id: str, session_id: str, holder: str | None) -> None:
        self.step_id = step_id
        self.session_id = session_id
        self.holder = holder
        held = f'held by "{holder}"' if holder else "not claimed by anyone"
        super().__init__(
            f'not the holder: session "{session_id}" holds no live claim on step {step_id}'
            f" (it is {held}); claim it first"
        )


class HeldElsewhere(LedgerError):
    """Another session holds the step: only its holder (or an operator) may revise it."""

    def __init__(self, step_id: str, holder: str, holder_name: str | None = None) -> None:
        self.step_id = step_id
        self.holder = holder
        self.holder_name = holder_name
        named = f" ({holder_name})" if holder_name else ""
        super().__init__(
            f'step {step_id} is held by "{holder}"{named}: only its holder (or the admin) '
            "revises it"
        )


class StaleFence(LedgerError):
    """The call carries a fence older than the step's current one."""

    def __init__(self, step_id: str, fence: int, current: int, holder: str | None) -> None:
        self.step_id = step_id
        self.fence = fence
        self.current = current
        self.holder = holder
        by = f' (now held by "{holder}")' if holder else ""
        super().__init__(
            f"stale fence: step {step_id} is at fence {current}, the call carried fence {fence}"
            f"{by}"
        )


class NotReopenable(LedgerError):
    """Only a done or dropped step can be reopened."""

    def __init__(self, step_id: str, status: str) -> None:
        self.step_id = step_id
        self.status = status
        super().__init__(f"cannot reopen step {step_id}: it is {status}, not done or dropped")


class SelfDependency(LedgerError):
    """A step was declared to depend on itself."""

    def __init__(self, step_id: str) -> None:
        self.step_id = step_id
        super().__init__(f"step {step_id} cannot depend on itself")


class UnknownDependency(LedgerError):
    """A declared dependency names no step of the plan."""

    def __init__(self, step_id: str, unknown: Sequence[str]) -> None:
        self.step_id = step_id
        self.unknown = list(unknown)
        names = ", ".join(unknown)
        super().__init__(f"step {step_id} depends on unknown step(s) in its plan: {names}")


class DependencyCycle(LedgerError):
    """Declaring these dependencies would close a cycle. `cycle` is the path by ids;
    `names` says each step in the message as people know it (`plan#N`, a new step's key
    or title)."""

    def __init__(self, cycle: Sequence[str], names: Mapping[str, str] | None = None) -> None:
        self.cycle = list(cycle)
        said = names or {}
        super().__init__("dependency cycle: " + " -> ".join(said.get(s, s) for s in cycle))


class Contention(LedgerError):
    """The decision kept losing optimistic-concurrency races; try again."""

    def __init__(self, stream: str, attempts: int) -> None:
        self.stream = stream
        super().__init__(f"too much contention on {stream}: gave up after {attempts} attempts")


class PathsHeld(LedgerError):
    """The claim's paths overlap paths another session holds reserved.

    `conflicts`: per holder's step, (holder, holder's name, their step, its title, their
    overlapping patterns); the first names `holder`, `holder_name` and `holder_step`."""

    def __init__(self, step_id: str,
                 conflicts: Sequence[tuple[str, str | None, str, str, Sequence[str]]],
                 refs: Mapping[str, str] | None = None) -> None:
        self.step_id = step_id
        self.conflicts = [(h, n, s, t, list(p)) for h, n, s, t, p in conflicts]
        self.holder, self.holder_name, self.holder_step = conflicts[0][:3]
        self.patterns = list(conflicts[0][4])
        shown = dict(refs or {})  # the holders' steps by reference (`plan#N`), in the message

        def one(holder: str, name: str | None, step: str, title: str,
                patterns: Sequence[str]) -> str:
            quoted = ", ".join(f'"{p}"' for p in patterns)
            named = f"{name}, " if name else ""
            return f'{quoted} held by "{holder}" ({named}step {shown.get(step, step)} "{title}")'

        super().__init__("paths reserved: " + "; ".join(one(*c) for c in self.conflicts))


class KeyNameTaken(LedgerError):
    """A live access key already has this name."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f'a live key is already named "{name}": revoke it first, or '
                         f"choose another name")


class UnknownKey(LedgerError):
    """No live access key has this name."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f'no live key is named "{name}" (planledger keys list shows them)')


class NotPermitted(LedgerError):
    """The caller's role does not allow the operation (ledger.domain.access)."""

    def __init__(self, action: str, needs: str, role: str) -> None:
        self.action = action
        self.needs = needs
        self.role = role
        super().__init__(f"{action} needs the {needs} role; this caller is a {role}")


class CheckFailed(LedgerError):
    """The completion reports a failed check, and the step's plan requires every check to
    pass."""

    def __init__(self, step_id: str, plan: str, check: str) -> None:
        self.step_id = step_id
        self.check = check
        super().__init__(f'check "{check}" failed: plan {plan} requires every check to pass '
                         f"before step {step_id} is done")


class InReview(LedgerError):
    """The step's work is finished and waits for a review: it cannot be claimed, completed,
    released or dropped, only reviewed. `reviewing`: the caller is its reviewer."""

    def __init__(self, step_id: str, title: str, reviewing: bool = False) -> None:
        self.step_id = step_id
        how = ("you review it: renew your review lease with review=true (tasks_claim), "
               "then give your verdict (tasks_review)" if reviewing else
               "a reviewer approves or rejects it (tasks_review), or takes it with "
               "tasks_claim_next(review=true)")
        super().__init__(f'step {step_id} "{title}" is in review: {how}')


class NotInReview(LedgerError):
    """A review of a step that is not waiting for one."""

    def __init__(self, step_id: str, status: str) -> None:
        self.step_id = step_id
        self.status = status
        super().__init__(f"cannot review step {step_id}: it is {status}, not in review")


class OwnWork(LedgerError):
    """Four eyes: the author of a completion cannot review it, nor can another session
    started with the author's access key."""

    def __init__(self, step_id: str, author: str, same_key: str | None = None) -> None:
        self.step_id = step_id
        self.author = author
        self.same_key = same_key
        who = (f'a session started with key "{same_key}", the key of its author "{author}"'
               if same_key else f'its author "{author}"')
        super().__init__(f"cannot review step {step_id}: the rule is four eyes, and you are "
                         f"{who}: a session not of the author's key must review it")
