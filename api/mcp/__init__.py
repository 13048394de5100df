"""The MCP server: planledger's operations as tools for coding agents (official `mcp` SDK).

`server.build_server` makes the tools over an `api.service.Service`; `http.install_mcp`
mounts them at `/mcp` (streamable HTTP) on the app `planledger serve` runs; `stdio` is the
`planledger mcp` command (one agent over stdin/stdout, on the embedded store or, through
`bridge`, on a running server). Tools translate only: every rule, conversion and message
comes from the service, the views and `api.errors`.
"""
