"""Shared test support: fakes that subclass the real ports, and small builders."""
