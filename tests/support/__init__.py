"""Shared test support: fakes that subclass the real ports, and small builders."""

from planledger.ledger.domain.ids import local_operator

# Who makes the plan and step changes tests set up without a session: every write names
# its author, as the local operator of an embedded store would be named.
OPERATOR = local_operator("tests")
