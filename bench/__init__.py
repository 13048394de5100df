"""planledger's benchmarks: `python -m bench [name ...] [--smoke]` (see bench/README.md)."""
