"""Which planledger a store was last made ready by, so that an older planledger refuses a
store it would misread instead of reading it.

Every store (the SQLite file, a PostgreSQL schema) keeps one row in `FORMAT_TABLE`: the
store format and the planledger version that wrote it. FORMAT goes up when a release
stores something an older release would misread (a new event shape, a table whose rows
change meaning); a release that only adds what older ones ignore keeps it. A store made
before the row existed (0.1 to 0.3) gets it when it is next opened for writing (SQLite) or
at `planledger db init` (PostgreSQL). A planledger opening a store of a higher format
refuses it at open, naming both versions. Standard library only: the file's checks
(infra.sqlite_shape) load nothing else.
"""

from planledger.version import __version__

FORMAT = 1
FORMAT_TABLE = "planledger_store"


class NewerStore(ValueError):
    """The store was written by a newer planledger, in a format this one does not read."""


def refuse_newer(store: str, found: tuple[int, str] | None) -> None:
    """Refuse the store named `store` if `found` (its format and the version that wrote it)
    is newer than this planledger reads; nothing for a store of this format, an older one,
    or one without the row (written before it existed)."""
    if found is None or found[0] <= FORMAT:
        return
    store_format, written_by = found
    raise NewerStore(f"{store} was written by planledger {written_by} (store format "
                     f"{store_format}); this is planledger {__version__}, which reads store "
                     f"formats up to {FORMAT}: upgrade planledger to open it")
