"""The console: a live page of who holds what, served at `/` by the HTTP app.

The page is static (HTML, CSS and JavaScript in `static/`, no build step, nothing fetched
from outside the server). It reads the same JSON the HTTP API serves (`/api/plans/…`,
`/api/steps/…`, `/api/timeline`), plus one aggregate snapshot (`/api/console`) and a
stream of log changes (`/api/console/events`, server-sent events) that tells it when to
read again.
"""
