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


def refuse_newer(store: str, row: tuple[object, ...] | None) -> None:
    """Refuse the store named `store` if its format row (`row`: the format and the version
    that wrote it, as read) is newer than this planledger reads, or is not one it can read
    at all (the row is read back from a file anyone may have written); nothing for a store
    of this format, an older one, or one without the row (written before it existed)."""
    if row is None:
        return
    store_format, written_by = (*row, None, None)[:2]
    if type(store_format) is not int or not isinstance(written_by, str):
        raise NewerStore(f"{store}: its store format row ({FORMAT_TABLE}) is not one "
                         f"planledger {__version__} reads; it was altered, or written by "
                         "another program")
    if store_format <= FORMAT:
        return
    shown = "".join(c for c in written_by[:40] if c.isprintable())  # to a terminal: no escapes
    raise NewerStore(f"{store} was written by planledger {shown} (store format "
                     f"{store_format}); this is planledger {__version__}, which reads store "
                     f"formats up to {FORMAT}: upgrade planledger to open it")
