"""Checkpoints: a read model's state saved with its log position, in one transaction.

Each recorder is one of the `eventsourcing` library's tracking recorders with a table
beside its tracking table, so a checkpoint's state and its `Tracking` record commit
together or not at all. The tracking record only ever moves forward (the library refuses
a position at or below the recorded one), so a slower process cannot overwrite a newer
checkpoint with an older one, and a model restored from a checkpoint resumes exactly
after the position its state includes: nothing is applied twice, nothing is skipped.

Several processes following the same log fold the same state at the same position, so
they may share one checkpoint: a CLI process starts from whatever a server saved.

A recorder stores a state's bytes exactly as given and trusts nothing in them.
`projections.resume` decides what the bytes mean and when a process may believe them
(their MAC under the store's secret, and the log they name).

Whoever opens the store hands the read model its recorder (`open_checkpoints` in
`api.runtime`). There are three:

- `MemoryCheckpointRecorder` (here) keeps checkpoints in this process.
- `infra.sqlite_checkpoints` keeps them in a file beside the SQLite log, so the log's
  writers never wait on a checkpoint.
- `infra.pg_checkpoints` keeps them in two tables in the log's own PostgreSQL schema.
  `planledger db init` creates them with the log's tables, and every replica shares
  them.
"""

import threading
from abc import abstractmethod
from typing import Protocol

from eventsourcing.persistence import IntegrityError, Tracking, TrackingRecorder


class Checkpoints(Protocol):
    """What a read model asks of its checkpoints: a `CheckpointRecorder`, or a process's
    read-only look at an embedded store's (infra.sqlite_reading), which saves none."""

    def save_checkpoint(self, tracking: Tracking, state: bytes | memoryview) -> bool: ...
    def load_checkpoint(self, application_name: str) -> tuple[int, bytes] | None: ...
    def max_tracking_id(self, application_name: str) -> int | None: ...
    def forget(self, application_name: str) -> None: ...
    def close(self) -> None: ...


class CheckpointRecorder(TrackingRecorder):
    """Saves and loads one checkpoint per upstream application."""

    @abstractmethod
    def save_checkpoint(self, tracking: Tracking, state: bytes | memoryview) -> bool:
        """Record `state` as of `tracking`; False when a checkpoint at or past that position
        is recorded already (the newer one stays)."""

    @abstractmethod
    def load_checkpoint(self, application_name: str) -> tuple[int, bytes] | None:
        """The newest checkpoint's position and state, or None."""

    @abstractmethod
    def forget(self, application_name: str) -> None:
        """Drop the checkpoint and its tracked position, so saving starts again from any
        position (a tracked position past the log's end would refuse every later save)."""

    def close(self) -> None:
        """Let go of whatever the recorder holds open (nothing, unless a subclass says)."""


class MemoryCheckpointRecorder(CheckpointRecorder):
    """Checkpoints kept in this process (tests, and `--db memory`): each application's
    state with the position it is at, under one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tracked: dict[str, int] = {}
        self._states: dict[str, tuple[int, bytes]] = {}

    def _moves_forward(self, tracking: Tracking) -> bool:
        tracked = self._tracked.get(tracking.application_name)
        return tracked is None or tracking.notification_id > tracked

    def insert_tracking(self, tracking: Tracking) -> None:
        with self._lock:
            if not self._moves_forward(tracking):
                raise IntegrityError(f"{tracking.application_name} is tracked at or past "
                                     f"{tracking.notification_id} already")
            self._tracked[tracking.application_name] = tracking.notification_id

    def max_tracking_id(self, application_name: str) -> int | None:
        with self._lock:
            return self._tracked.get(application_name)

    def save_checkpoint(self, tracking: Tracking, state: bytes | memoryview) -> bool:
        with self._lock:
            if not self._moves_forward(tracking):
                return False
            self._tracked[tracking.application_name] = tracking.notification_id
            self._states[tracking.application_name] = (tracking.notification_id, bytes(state))
            return True

    def load_checkpoint(self, application_name: str) -> tuple[int, bytes] | None:
        with self._lock:
            saved = self._states.get(application_name)
            # As the others: never a state whose position is not the tracked one.
            tracked = self._tracked.get(application_name)
            return saved if saved is not None and saved[0] == tracked else None

    def forget(self, application_name: str) -> None:
        with self._lock:
            self._states.pop(application_name, None)
            self._tracked.pop(application_name, None)
