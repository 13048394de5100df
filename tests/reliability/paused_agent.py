"""An agent process for the paused-holder test: it claims a step, says so on stdout, waits
for a line on stdin (while it waits, the test stops it with SIGSTOP), then completes the
step with the fence it was granted and prints the answer.

    python -m tests.reliability.paused_agent URL STEP_ID
"""

import json
import sys

import httpx


def main(url: str, step: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as http:
        started = http.post("/api/sessions", json={"name": "paused agent"}).json()
        http.headers["Authorization"] = f"Bearer {started['token']}"
        claimed = http.post(f"/api/steps/{step}/claim", json={"lease_seconds": 1}).json()
        print(json.dumps({"session": started["session_id"], "fence": claimed["fence"]}),
              flush=True)
        sys.stdin.readline()  # "working": the test pauses the process here
        done = http.post(f"/api/steps/{step}/complete", json={"fence": claimed["fence"]})
        beat = http.post(f"/api/steps/{step}/heartbeat", json={})
        print(json.dumps({"complete": [done.status_code, done.json()],
                          "heartbeat": [beat.status_code, beat.json()]}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
