"""Reading a Claude Code task list (api.imports.claude_tasks): one step a task file, both
directions of its dependencies, unknown fields kept in the body, and what is left out
counted; a file that is not a task refused naming it."""

import json
from pathlib import Path

import pytest

from planledger.api.imports.claude_tasks import read_task_list
from planledger.api.imports.steps import ordered
from planledger.ledger.domain.errors import InvalidInput

LIST = Path(__file__).resolve().parents[1] / "fixtures" / "claude-tasks" / "auth-list"


def _files(directory: Path) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted(directory.iterdir())]


def test_each_task_is_a_step_keyed_by_its_id_in_the_order_of_the_ids() -> None:
    imported = read_task_list(_files(LIST))
    assert [s.key for s in imported.steps] == ["task-1", "task-2", "task-3", "task-10"]
    first = imported.steps[0]
    assert (first.title, first.done) == ("Add the token_families table", True)
    assert first.body.startswith("Migration and model for refresh-token families.")


def test_blocks_and_blocked_by_both_become_dependencies() -> None:
    steps = {s.key: s for s in read_task_list(_files(LIST)).steps}
    assert steps["task-2"].depends_on == ("task-1",)  # 1.json blocks 2; 2.json agrees
    assert steps["task-3"].depends_on == ("task-2",)
    assert steps["task-10"].depends_on == ("task-3",)  # task 4 was deleted


def test_fields_a_step_has_no_place_for_are_kept_in_its_body() -> None:
    steps = {s.key: s for s in read_task_list(_files(LIST)).steps}
    kept = steps["task-2"].body.split("Claude Code task fields: ", 1)[1]
    assert json.loads(kept) == {
        "activeForm": "Issuing a rotating token pair", "owner": "backend-dev",
        "metadata": {"priority": "high", "files": ["internal/auth/refresh.go"]}}
    assert '"reviewer": "team-lead"' in steps["task-10"].body


def test_a_task_in_progress_arrives_open_with_a_note_naming_its_owner() -> None:
    steps = {s.key: s for s in read_task_list(_files(LIST)).steps}
    assert not steps["task-2"].done
    assert steps["task-2"].note is not None and '"backend-dev"' in steps["task-2"].note


def test_what_is_left_out_is_counted_by_why() -> None:
    assert read_task_list(_files(LIST)).skipped == {
        "file that is not a task": 2, "deleted task": 1, "dependency on a deleted task": 1}


def test_a_dependency_on_a_task_the_list_lacks_is_refused_naming_both() -> None:
    files = [("1.json", json.dumps({"id": "1", "subject": "s", "blockedBy": ["9"]}).encode())]
    with pytest.raises(InvalidInput) as refused:
        ordered("Claude Code task list", read_task_list(files).steps)
    assert "file 1.json (task-1): names 'task-9'" in str(refused.value)


def test_a_cycle_is_refused_naming_it() -> None:
    files = [("1.json", b'{"id": "1", "subject": "a", "blocks": ["2"]}'),
             ("2.json", b'{"id": "2", "subject": "b", "blocks": ["1"]}')]
    with pytest.raises(InvalidInput) as refused:
        ordered("Claude Code task list", read_task_list(files).steps)
    assert "cycle: task-1 -> task-2 -> task-1" in str(refused.value)


@pytest.mark.parametrize(("content", "why"), [
    (b"{not json", "file 7.json: is not JSON"),
    (b'"a task"', "file 7.json: is text, not a task"),
    (b"null", "file 7.json: is null, not a task"),
    (b'{"id": "7", "subject": "s", "blocks": ["7"]}',
     "file 7.json: task '7' lists itself in blocks"),
    (b'{"id": "7", "subject": "s", "blockedBy": [7]}',
     "file 7.json: task '7' lists itself in blockedBy"),
    (b'{"id": "7", "subject": "s", "metadata": {"priority": 9}}',
     "file 7.json: metadata.priority '9' is not 0 (highest) .. 4"),
    (b'{"id": "7", "subject": "s", "metadata": {"priority": "soonish"}}',
     "file 7.json: metadata.priority 'soonish' is not"),
    (b'{"id": "7", "description": "no subject"}', "file 7.json: has no subject"),
    (b'{"id": "7", "subject": "s", "blockedBy": "1"}', "blockedBy is not a list"),
    (b'{"id": "7", "subject": "\\udc00"}', "file 7.json: holds a lone surrogate"),
    (b'{"id": "7", "subject": "s", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
     "file 7.json: is nested too deeply"),
])
def test_a_file_that_is_not_a_task_is_refused_naming_it(content: bytes, why: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        read_task_list([("7.json", content)])
    assert why in str(refused.value)


@pytest.mark.parametrize(("said", "priority"), [
    ("urgent", 0), ("high", 1), ("Medium", 2), ("low", 3), ("P4", 4), (1, 1), (None, None)])
def test_a_metadata_priority_is_a_number_or_a_documented_word(said: object,
                                                              priority: int | None) -> None:
    task = {"id": "1", "subject": "s", "metadata": {"priority": said}}
    step = read_task_list([("1.json", json.dumps(task).encode())]).steps[0]
    assert step.priority == priority


def test_a_byte_order_mark_at_the_start_of_a_file_is_skipped() -> None:
    step = read_task_list([("1.json", b'\xef\xbb\xbf{"id": "1", "subject": "s"}')]).steps[0]
    assert step.title == "s"
