"""Path reservations: who holds what (a read; claims reserve, see the steps' routes)."""

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from planledger.api import path_reads
from planledger.api.http.deps import ServiceDep
from planledger.api.http.docs import errors
from planledger.api.schemas import PathsCheckIn, PathsCheckOut

router = APIRouter(prefix="/api/reservations", tags=["reservations"])


@router.get("", response_model=PathsCheckOut, responses=errors())
async def reservations(
    service: ServiceDep,
    paths: Annotated[list[str] | None, Query(max_length=100, description="Globs: the live "
                                             "reservations they overlap.")] = None,
    files: Annotated[list[str] | None, Query(max_length=1_000, description="File paths, "
                                             "taken literally: the live reservations that "
                                             "cover them.")] = None,
    exclusive_only: bool = False,
    but: Annotated[str | None, Query(max_length=64, description="Leave this session's "
                                     "reservations out.")] = None,
) -> PathsCheckOut:
    """Who holds what: the live reservations (a claim's paths, held with its lease and
    fence) that the given paths overlap or files fall under, each with its holder, step
    and the patterns met; every live reservation when nothing is asked."""
    return await run_in_threadpool(lambda: path_reads.check(
        service.runtime, paths or [], files or [], exclusive_only, but))


@router.post("/check", response_model=PathsCheckOut, responses=errors())
async def check(service: ServiceDep, asked: PathsCheckIn) -> PathsCheckOut:
    """As `GET /api/reservations`, for more paths or files than a URL carries (a commit
    guard sends every staged file)."""
    return await run_in_threadpool(lambda: path_reads.check(
        service.runtime, asked.paths, asked.files, asked.exclusive_only, asked.but))
