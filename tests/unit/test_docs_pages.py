"""The reference pages under docs/reference/ say what the code says now: each is made again
in memory from the code (the MCP server's tool listing, the OpenAPI document, the command
line's table) and compared with the file readers get."""

import pytest

from planledger import docs_pages


@pytest.mark.parametrize("name", sorted(docs_pages.PAGES))
def test_reference_page_matches_what_the_code_makes_now(name: str) -> None:
    page = docs_pages.REFERENCE / name
    made = docs_pages.PAGES[name]()
    written = page.read_text(encoding="utf-8") if page.is_file() else None
    assert written == made, (f"docs/reference/{name} is stale: run "
                             f"`{docs_pages.COMMAND}` and commit what it writes")


def test_every_reference_page_names_the_command_that_makes_it() -> None:
    for make in docs_pages.PAGES.values():
        assert docs_pages.COMMAND in make().splitlines()[0]
