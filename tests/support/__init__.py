"""Shared test support: fakes that subclass the real ports, and small builders."""

from planledger.ledger.domain.ids import local_operator

# Who makes the plan and step changes tests set up without a session: every write names
# its author, as the local operator of an embedded store would be named.
OPERATOR = local_operator("tests")

# The base URL of in-process test clients: a host name the server answers to (the
# origin guard refuses the test client's default, "testserver", as it would any other).
LOCAL = "http://127.0.0.1"
