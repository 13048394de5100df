"""Reading beads' JSONL export (api.imports.beads): each issue a step keyed by its beads
id, every dependency type where a step holds it, closed and in-progress issues, deleted
ones left out and counted; a bad line refused naming its number and why."""

import json
from pathlib import Path

import pytest

from planledger.api.imports.beads import read_beads
from planledger.api.imports.steps import ImportedStep, kept_open, ordered
from planledger.ledger.domain.errors import InvalidInput

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "beads"


def _issue(issue_id: str, **fields: object) -> str:
    return json.dumps({"id": issue_id, "title": f"Issue {issue_id}", "status": "open",
                       "priority": 2, "issue_type": "task",
                       "created_at": "2026-01-02T10:00:00Z", **fields})


def _steps(*lines: str) -> dict[str, ImportedStep]:
    return {s.key: s for s in read_beads("\n".join(lines).encode()).steps}


def _refusal(data: bytes) -> str:
    with pytest.raises(InvalidInput) as refused:
        ordered("beads file", read_beads(data).steps)
    return str(refused.value)


def test_every_issue_of_the_export_is_a_step_keyed_by_its_beads_id() -> None:
    imported = read_beads((FIXTURES / "issues.jsonl").read_bytes())
    steps = {s.key: s for s in imported.steps}
    assert list(steps) == ["bd-a1b2", "bd-c3d4", "bd-e5f6", "bd-g7h8", "bd-i9j0", "bd-k1l2"]
    table = steps["bd-c3d4"]
    assert table.title == "Add the token_families table"
    assert table.body == ("Migration and model.\n\n## Design\n\n"
                          "One row per family; revoked_at nullable.")
    assert (table.priority, table.labels, table.done) == (1, ("auth", "db"), True)
    assert imported.skipped == {"deleted issue": 1}


def test_each_dependency_type_lands_where_a_step_holds_it() -> None:
    steps = {s.key: s for s in read_beads((FIXTURES / "issues.jsonl").read_bytes()).steps}
    pair = steps["bd-e5f6"]
    assert (pair.depends_on, pair.parent) == (("bd-c3d4",), "bd-a1b2")
    found = steps["bd-i9j0"]
    assert (found.discovered_from, found.depends_on) == ("bd-e5f6", ("bd-c3d4",))
    assert steps["bd-g7h8"].links == (("related", "bd-k1l2"),)
    assert steps["bd-k1l2"].links == (("waits-for", "bd-g7h8"),)
    assert steps["bd-k1l2"].parent == "bd-a1b2"


def test_an_issue_in_progress_arrives_open_with_a_note_naming_its_holder() -> None:
    steps = {s.key: s for s in read_beads((FIXTURES / "issues.jsonl").read_bytes()).steps}
    held = steps["bd-e5f6"]
    assert not held.done
    assert held.note is not None and '"bob"' in held.note and "in_progress" in held.note
    assert steps["bd-k1l2"].note == '"deferred" in beads'
    assert steps["bd-i9j0"].note is None  # blocked is what its dependencies say here


def test_priorities_are_read_as_numbers_or_as_beads_writes_them_for_people() -> None:
    steps = _steps(_issue("bd-1", priority=0), _issue("bd-2", priority="P3"),
                   _issue("bd-3", priority=None))
    assert [s.priority for s in steps.values()] == [0, 3, None]
    assert "line 1" in _refusal(_issue("bd-1", priority=7).encode())
    assert "priority" in _refusal(_issue("bd-1", priority=True).encode())


def test_a_dependency_on_a_deleted_issue_is_left_out_and_counted() -> None:
    imported = read_beads("\n".join([
        _issue("bd-1", status="tombstone"),
        _issue("bd-2", dependencies=[{"issue_id": "bd-2", "depends_on_id": "bd-1",
                                      "type": "blocks"}])]).encode())
    assert [(s.key, s.depends_on) for s in imported.steps] == [("bd-2", ())]
    assert imported.skipped == {"deleted issue": 1, "dependency on a deleted issue": 1}


def test_dependencies_written_without_issue_id_or_type_are_read_as_blocks() -> None:
    steps = _steps(_issue("bd-1"), _issue("bd-2", dependencies=[{"depends_on_id": "bd-1"}]),
                   _issue("bd-3", dependencies=[{"depends_on_id": "bd-1",
                                                 "dep_type": "parent-child"}]))
    assert steps["bd-2"].depends_on == ("bd-1",)
    assert steps["bd-3"].parent == "bd-1"


def test_records_that_are_not_issues_are_left_out_and_counted() -> None:
    imported = read_beads("\n".join([json.dumps({"_type": "memory", "key": "k"}),
                                     _issue("bd-1"), ""]).encode())
    assert [s.key for s in imported.steps] == ["bd-1"]
    assert imported.skipped == {"memory record": 1}


def test_a_cycle_is_refused_naming_every_issue_on_it() -> None:
    refused = _refusal((FIXTURES / "cycle.jsonl").read_bytes())
    assert "the dependencies form a cycle: bd-x1 -> bd-x3 -> bd-x2 -> bd-x1" in refused
    assert "parent" not in refused  # no parent is on this cycle


def test_a_dependency_on_an_issue_the_file_lacks_is_refused_naming_both() -> None:
    refused = _refusal("\n".join([_issue("bd-1"), _issue("bd-2", dependencies=[
        {"issue_id": "bd-2", "depends_on_id": "bd-zz", "type": "blocks"}])]).encode())
    assert refused == ("invalid beads file: line 2 (bd-2): names 'bd-zz', which the source "
                       "does not hold")


@pytest.mark.parametrize(("line", "why"), [
    (b'{"id": "bd-1", "title": ', "line 2: is not JSON"),
    (b'["bd-1"]', "line 2: is a list, not an issue"),
    (b"null", "line 2: is null, not an issue"),
    (b'{"id": "bd-1", "title": null, "description": 5}', "line 2: has no title"),
    (b'{"id": "bd-1", "title": "t", "description": 5}', "description is a number, not text"),
    (b'{"id": "bd-1", "title": "t", "dependencies": ['
     b'{"depends_on_id": "bd-0", "type": "parent-child"}, '
     b'{"depends_on_id": "bd-9", "type": "parent-child"}]}',
     "line 2, dependency 2: gives 'bd-1' a second parent, 'bd-9' (the first is 'bd-0')"),
    (b'{"id": "bd-1"}', "line 2: has no title"),
    (b'{"id": "bd 1", "title": "spaces"}', "line 2 (bd 1): invalid key"),
    (b'{"id": "bd-1", "title": "x\\ud800y"}', "line 2: holds a lone surrogate"),
    (b'{"id": "bd-1", "title": "\xff\xfe"}', "line 2: is not UTF-8 text"),
    (b'{"id": "bd-1", "title": "a\\nb"}', "line 2 (bd-1): invalid title"),
    (b'{"id": "bd-1", "title": "t", "labels": "auth"}', "line 2: labels is not a list"),
    (b'{"id": "bd-1", "title": "t", "dependencies": [{"issue_id": "bd-1", '
     b'"depends_on_id": "bd-1"}]}', "makes 'bd-1' depend on itself"),
    (b"[" * 100_000 + b"]" * 100_000, "line 2: is nested too deeply"),
    (b'{"id": "bd-1", "title": "' + b"x" * 1_000_001 + b'"}',
     "line 2: is 1000028 bytes; an issue takes at most"),
])
def test_a_bad_line_is_refused_naming_its_number_and_why(line: bytes, why: str) -> None:
    assert why in _refusal(_issue("bd-0").encode() + b"\n" + line)


def test_an_issue_given_twice_is_refused_naming_both_lines() -> None:
    refused = _refusal("\n".join([_issue("bd-1"), _issue("bd-1")]).encode())
    assert "line 2: 'bd-1' is given twice (first at line 1)" in refused


def test_steps_are_ordered_after_what_they_wait_on_their_parent_and_origin() -> None:
    steps = read_beads("\n".join([
        _issue("bd-3", dependencies=[{"depends_on_id": "bd-2", "type": "discovered-from"}]),
        _issue("bd-2", dependencies=[{"depends_on_id": "bd-1", "type": "parent-child"}]),
        _issue("bd-1"), _issue("bd-0"),
        _issue("bd-4", dependencies=[{"depends_on_id": "bd-3", "type": "blocks"}])]).encode()
                       ).steps
    assert [s.key for s in ordered("beads file", steps)] == [
        "bd-1", "bd-2", "bd-3", "bd-0", "bd-4"]


def test_a_long_chain_is_ordered_without_recursion() -> None:
    count = 20_000
    lines = [_issue(f"bd-{n}", dependencies=[{"depends_on_id": f"bd-{n + 1}"}])
             for n in range(count)] + [_issue(f"bd-{count}")]
    steps = ordered("beads file", read_beads("\n".join(lines).encode()).steps)
    assert steps[0].key == f"bd-{count}" and steps[-1].key == "bd-0"


def test_a_child_its_parent_must_wait_for_is_refused_as_a_cycle() -> None:
    refused = _refusal("\n".join([
        _issue("bd-epic"),
        _issue("bd-child", dependencies=[
            {"depends_on_id": "bd-epic", "type": "parent-child"},
            {"depends_on_id": "bd-epic", "type": "blocks"}])]).encode())
    assert ("the dependencies and parents form a cycle (a parent waits on its children): "
            "bd-epic -> bd-child -> bd-epic" in refused)


def _child(key: str, parent: str, **fields: object) -> str:
    return _issue(key, dependencies=[{"depends_on_id": parent, "type": "parent-child"}],
                  **fields)


def test_an_epic_waiting_on_its_own_grandchild_is_taken_as_the_ledger_takes_it() -> None:
    steps = ordered("beads file", list(_steps(
        _issue("e", dependencies=[{"depends_on_id": "k", "type": "blocks"}]),
        _child("g", "e"), _child("k", "g")).values()))
    assert [s.key for s in steps] == ["e", "g", "k"]  # each after its parent
    assert (steps[0].depends_on, steps[0].declared_after) == ((), ("k",))


def test_an_origin_orders_nothing_and_is_kept_as_a_link_when_it_comes_later() -> None:
    steps = ordered("beads file", list(_steps(
        _issue("e", dependencies=[{"depends_on_id": "c", "type": "discovered-from"}]),
        _child("c", "e")).values()))
    assert [s.key for s in steps] == ["e", "c"]
    assert (steps[0].discovered_from, steps[0].links) == (None, (("discovered-from", "c"),))


def test_a_dependency_on_a_later_issue_still_moves_it_first() -> None:
    steps = ordered("beads file", list(_steps(
        _issue("a", dependencies=[{"depends_on_id": "b", "type": "blocks"}]),
        _issue("b")).values()))
    assert [(s.key, s.depends_on, s.declared_after) for s in steps] == [
        ("b", (), ()), ("a", ("b",), ())]


def test_a_link_keeps_its_target_as_text_even_outside_the_file() -> None:
    steps = _steps(_issue("bd-1", dependencies=[
        {"depends_on_id": "external:billing:invoices", "type": "related"}]))
    assert ordered("beads file", list(steps.values()))[0].links == (
        ("related", "external:billing:invoices"),)


def test_a_dependency_on_another_projects_issue_is_kept_as_a_link() -> None:
    steps = _steps(_issue("bd-1", dependencies=[
        {"depends_on_id": "external:billing:invoices", "type": "blocks"}]))
    assert (steps["bd-1"].depends_on, steps["bd-1"].links) == (
        (), (("blocks", "external:billing:invoices"),))


def test_a_byte_order_mark_at_the_start_of_the_file_is_skipped() -> None:
    steps = read_beads(b"\xef\xbb\xbf" + _issue("bd-1").encode()).steps
    assert [s.key for s in steps] == ["bd-1"]


def test_an_issue_closed_as_dropped_arrives_done_and_labelled_dropped() -> None:
    steps = _steps(_issue("bd-1", status="closed", close_reason="dropped", labels=["auth"]),
                   _issue("bd-2", status="closed", close_reason="Done"))
    assert (steps["bd-1"].done, steps["bd-1"].labels) == (True, ("auth", "dropped"))
    assert (steps["bd-2"].done, steps["bd-2"].labels) == (True, ())


def test_a_closed_parent_with_open_children_arrives_open_with_a_note() -> None:
    steps, reopened = kept_open(ordered("beads file", list(_steps(
        _issue("e", status="closed"), _child("g", "e", status="closed"),
        _child("k", "g"), _child("d", "e", status="closed")).values())), "beads")
    by_key = {s.key: s for s in steps}
    assert reopened == 2
    assert (by_key["e"].done, by_key["e"].note) == (
        False, "closed in beads, but 1 of its children is open")
    assert (by_key["g"].done, by_key["d"].done) == (False, True)
