"""Typed identifiers, and the names of the streams they own."""

from typing import NewType

StepId = NewType("StepId", str)
SessionId = NewType("SessionId", str)
PlanSlug = NewType("PlanSlug", str)
# Who made a write: a session's id, `ADMIN` (the admin token), or the local operator
# running a command on the embedded store (`local:<OS user>`). Session ids never hold a
# colon (ids are checked at every door), so the three kinds never collide.
Actor = NewType("Actor", str)

ADMIN = Actor("admin")
LOCAL_PREFIX = "local:"


def local_operator(user: str) -> Actor:
    """The operator of the embedded store, named by the OS user running the command."""
    return Actor(f"{LOCAL_PREFIX}{user}")


def acting_session(actor: Actor) -> SessionId | None:
    """The session an actor is, or None for the admin and the local operator."""
    if actor == ADMIN or actor.startswith(LOCAL_PREFIX):
        return None
    return SessionId(actor)

PLAN_STREAM_PREFIX = "plan:"


def plan_stream(slug: PlanSlug) -> str:
    """The stream of a plan's structure: its steps, their dependencies, its constraints."""
    return f"{PLAN_STREAM_PREFIX}{slug}"
