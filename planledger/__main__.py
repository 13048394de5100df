"""`python -m planledger`: the command line, as the `planledger` script runs it."""

from planledger.main import main

main()
