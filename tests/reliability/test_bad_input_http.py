"""Bad input over HTTP, generated: schemathesis reads `/openapi.json` of a real server and
sends a few thousand requests built from it (valid, invalid, odd: wrong types, missing and
extra fields, huge and strange strings), with a session's token so they reach the ledger.
No answer is a 5xx, and every answer matches the status codes, content type and schema the
document declares."""

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.reliability.conftest import Served

SCHEMATHESIS = str(Path(sys.executable).parent / "st")
CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,"
          "response_schema_conformance")
EXAMPLES = 70


@pytest.mark.slow
def test_generated_requests_never_get_a_5xx_and_answers_match_the_schema(
    served: Served, tmp_path: Path,
) -> None:
    served.plan("fuzzed", 3)
    _, client = served.session("schemathesis")
    token = client.headers["Authorization"]
    report = tmp_path / "report.json"
    run = subprocess.run(
        [SCHEMATHESIS, "run", f"{served.url}/openapi.json", "--checks", CHECKS,
         "--max-examples", str(EXAMPLES), "--seed", "9", "--workers", "2", "--no-color",
         "--header", f"Authorization: {token}",
         # (The coverage phase of this schemathesis fails inside itself on our document.)
         "--phases", "examples,fuzzing,stateful",
         # A live event stream never ends, so it cannot be fuzzed request by request.
         "--exclude-path", "/api/console/events", "--request-timeout", "20",
         "--report", "json", "--report-json-path", str(report),
         "--generation-database", "none"],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)

    summary = run.stdout[run.stdout.rfind("SUMMARY"):]
    # (An "Errors:" entry is schemathesis failing inside itself, now and then; a server that
    # fell over would show as failures, 5xx lines in its log, and a dead /healthz.)
    assert "Failures:" not in summary, run.stdout[-6000:]
    generated = _generated(summary)
    print(summary)  # the figures for the README's report (pytest -s)
    assert generated >= 1500, summary
    assert json.loads(report.read_text())  # the run's report, for a failure's details
    assert httpx.get(f"{served.url}/healthz", timeout=10).status_code == 200
    assert "500" not in {line.split('" ')[-1][:3] for line in served.replica.output()
                         .splitlines() if "HTTP/1.1" in line}


def _generated(summary: str) -> int:
    """The number of test cases schemathesis generated (and sent)."""
    found = re.search(r"^\s*(\d+) generated", summary, re.MULTILINE)
    assert found is not None, summary
    return int(found.group(1))
