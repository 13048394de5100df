"""How many files a server process may open, and raising that number at start.

Every connection a server holds is an open file, and so is each of the store's files. The
system gives a process two limits: the soft one is in force, and the process may raise it
up to the hard one. `planledger serve` raises the soft limit to the hard one at start,
and holds its connections some way below it (api.settings: `PLANLEDGER_MAX_CONNECTIONS`),
so a flood of connections leaves files for the store and the logs.
"""

import sys
from contextlib import suppress


def raise_open_file_limit() -> int | None:
    """Raise the soft limit on open files to the hard limit. Answers the limit now in
    force; None where there is none to read (Windows) or it is unlimited."""
    if sys.platform == "win32":
        return None
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:  # macOS refuses an unlimited soft limit: the current one then stays
        with suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return open_file_limit()


def open_file_limit() -> int | None:
    """The number of files this process may open now; None where there is no limit to
    read (Windows) or it is unlimited."""
    if sys.platform == "win32":
        return None
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else soft
