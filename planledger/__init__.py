"""planledger: an event-sourced plan ledger that lets several coding agents share one
dependency-aware queue of plan steps and never work the same step twice.

Everything installed lives under this one import root. The repository keeps one folder per
layer (`ledger/`, `projections/`, `api/`, `replays/`, `infra/`, `bench/`), and this package
maps each of them in as `planledger.<folder>` (a link in this folder): see ARCHITECTURE.md.
"""

from typing import TYPE_CHECKING, Any

from planledger.version import __version__

if TYPE_CHECKING:  # what type checkers see of the name loaded below
    from planledger.api.client import Client

__all__ = ["Client", "__version__"]


def __getattr__(name: str) -> Any:
    """`planledger.Client`, loaded when first asked for: `import planledger` stays cheap."""
    if name == "Client":
        from planledger.api.client import Client

        return Client
    raise AttributeError(f"module 'planledger' has no attribute {name!r}")
