"""planledger's benchmarks: `python -m planledger.bench [name ...] [--smoke]` (see
bench/README.md)."""

# Mapped in as planledger.bench (see planledger/__init__.py), and imported only so.
if __name__ != "planledger.bench":
    raise ImportError(f"import this folder as planledger.bench, not as {__name__}")

