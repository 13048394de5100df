"""Typed identifiers, and the names of the streams they own."""

from typing import NewType

StepId = NewType("StepId", str)
SessionId = NewType("SessionId", str)
PlanSlug = NewType("PlanSlug", str)
# Who made a write: a session's id, `ADMIN` (the admin token), an access key used without
# a session (`key:<name>`), or the local operator running a command on the embedded store
# (`local:<OS user>`). Session ids never hold a colon (ids are checked at every door), so
# the kinds never collide.
Actor = NewType("Actor", str)

ADMIN = Actor("admin")
LOCAL_PREFIX = "local:"
KEY_ACTOR_PREFIX = "key:"


def local_operator(user: str) -> Actor:
    """The operator of the embedded store, named by the OS user running the command."""
    return Actor(f"{LOCAL_PREFIX}{user}")


def key_actor(name: str) -> Actor:
    """An access key acting by itself, without a session (ledger.domain.access)."""
    return Actor(f"{KEY_ACTOR_PREFIX}{name}")


def acting_session(actor: Actor) -> SessionId | None:
    """The session an actor is, or None for the admin, a key and the local operator."""
    if actor == ADMIN or actor.startswith((LOCAL_PREFIX, KEY_ACTOR_PREFIX)):
        return None
    return SessionId(actor)

PLAN_STREAM_PREFIX = "plan:"


def plan_stream(slug: PlanSlug) -> str:
    """The stream of a plan's structure: its steps, their dependencies, its constraints."""
    return f"{PLAN_STREAM_PREFIX}{slug}"
