"""Where a server's log lines go: plain lines on stderr, set up once before anything else.

Every server (`planledger serve`, `planledger mcp`) calls `configure_logging` first. The
MCP SDK configures the root logger as it builds a server (`logging.basicConfig` with
rich's handler wherever rich is installed: planledger does not need it, but another package
may bring it), and `basicConfig` does nothing when the root logger has a handler already:
the one installed here. Rich's handler imports its traceback module the first
time it logs an exception. When the process has used every file descriptor (a flood of
connections), that import fails inside the event loop's accept handler, the failure
escapes it, and the server never accepts a connection again. The standard library's
handler and formatter are built here, at start: writing a line imports nothing and opens
nothing.
"""

import logging
import sys
from typing import TextIO

FORMAT = "%(levelname)s %(name)s: %(message)s"
# Third-party loggers say what goes wrong; uvicorn's level is set by `uvicorn.run`.
ROOT_LEVEL = logging.WARNING


class PlainHandler(logging.StreamHandler[TextIO]):
    """Log lines as text on stderr, in `FORMAT`."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setFormatter(logging.Formatter(FORMAT))


def configure_logging() -> None:
    """Send every logger's lines to one `PlainHandler` on the root logger. planledger's
    loggers pass theirs up to it, and so do uvicorn's when uvicorn is run with
    `log_config=None`. Calling it again changes nothing."""
    root = logging.getLogger()
    if not any(isinstance(handler, PlainHandler) for handler in root.handlers):
        root.addHandler(PlainHandler())
    root.setLevel(ROOT_LEVEL)
