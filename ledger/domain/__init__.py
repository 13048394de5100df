"""The pure domain: commands and the current time in, events out. No I/O, no clock."""
