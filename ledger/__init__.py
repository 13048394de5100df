"""planledger's write side: the pure domain and the application that appends its events."""
