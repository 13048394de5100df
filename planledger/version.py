"""The contract's version (agents and scripts depend on it): the package's, the OpenAPI
document's, the MCP server's, and the one a store records it was written by
(infra.store_format). Bump it when what callers send or get changes. A module of its own,
importing nothing, so that any layer may read it."""

__version__ = "0.4.0"
