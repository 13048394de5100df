"""Typed identifiers, and the names of the streams they own."""

from typing import NewType

StepId = NewType("StepId", str)
SessionId = NewType("SessionId", str)
PlanSlug = NewType("PlanSlug", str)

PLAN_STREAM_PREFIX = "plan:"


def plan_stream(slug: PlanSlug) -> str:
    """The stream of a plan's structure: its steps, their dependencies, its constraints."""
    return f"{PLAN_STREAM_PREFIX}{slug}"
