"""The history checker itself: it catches each kind of planted violation, prints the
minimal history that shows it, and accepts valid histories, unknown outcomes included."""

from tests.reliability.history import Call, check

A, B = "session-A", "session-B"
S = "step-1"


def grant(who: str, fence: int, start: float, end: float, expires: float) -> Call:
    return Call(who, "claim", S, start, end, "ok", fence=fence, expires=expires, lease=1)


def renew(who: str, fence: int, start: float, end: float, expires: float) -> Call:
    return Call(who, "heartbeat", S, start, end, "ok", fence=fence, expires=expires,
                renewed=True, lease=1)


def close(who: str, op: str, fence: int, start: float, end: float, outcome: str = "ok",
          reason: str | None = None) -> Call:
    return Call(who, op, S, start, end, outcome, fence=fence, reason=reason)


def bounce(who: str, holder: str, fence: int, start: float, end: float) -> Call:
    return Call(who, "claim", S, start, end, "refused", fence=fence, reason="already_claimed",
                holder=holder, lease=1)


def rules(history: list[Call]) -> list[str]:
    return [v.rule for v in check(history)]


def test_a_valid_history_with_lapses_bounces_and_unknown_outcomes_passes() -> None:
    history = [
        grant(A, 1, 0.00, 0.01, 1.00),
        bounce(B, A, 1, 0.10, 0.11),
        renew(A, 1, 0.50, 0.51, 1.50),
        Call(A, "heartbeat", S, 1.20, 1.30, "unknown", lease=1),  # may have extended to 2.30
        bounce(B, A, 1, 2.00, 2.01),  # possible: the unknown heartbeat may have landed
        grant(B, 2, 2.40, 2.41, 3.40),  # after every possible lease end
        close(A, "complete", 1, 2.50, 2.51, "refused", "stale_fence"),
        Call(B, "release", S, 2.60, 2.70, "unknown", fence=2),
        grant(A, 3, 2.65, 2.75, 3.75),  # possible: B's release may have landed first
        close(A, "complete", 3, 2.80, 2.81),
        close(B, "complete", 2, 2.90, 2.91, "refused", "closed"),
    ]
    assert check(history) == []


def test_two_grants_of_one_fence_are_a_double_grant() -> None:
    history = [grant(A, 1, 0.0, 0.1, 1.0), grant(B, 1, 0.05, 0.1, 1.05)]
    assert "double grant" in rules(history)


def test_a_grant_during_a_live_unreleased_lease_is_an_overlap() -> None:
    history = [grant(A, 1, 0.0, 0.01, 1.0), renew(A, 1, 0.5, 0.51, 1.5),
               grant(B, 2, 1.2, 1.21, 2.2)]
    (violation,) = check(history)
    assert violation.rule == "overlap"
    text = violation.describe()
    assert 'fence 2 granted to "session-B" while "session-A" certainly held fence 1' in text
    assert text.count("\n  ") == 3  # the grant, the renewal that set the lease, the overlap
    assert "+0.500s..+0.510s  session-A  heartbeat" in text


def test_a_release_that_may_have_landed_excuses_an_overlap() -> None:
    history = [grant(A, 1, 0.0, 0.01, 1.0), Call(A, "end", None, 0.3, 0.4, "unknown"),
               grant(B, 2, 0.45, 0.46, 1.45)]
    assert check(history) == []


def test_smaller_fence_after_larger_is_a_fence_order_violation() -> None:
    history = [grant(B, 2, 0.0, 0.01, 1.0), grant(A, 1, 2.0, 2.01, 3.0)]
    assert "fence order" in rules(history)


def test_completion_with_a_superseded_fence_is_a_stale_close() -> None:
    history = [grant(A, 1, 0.0, 0.01, 1.0), grant(B, 2, 1.1, 1.11, 2.1),
               close(A, "complete", 1, 1.5, 1.51)]
    assert "stale close" in rules(history)


def test_completion_after_the_lease_lapsed_is_a_stale_close() -> None:
    history = [grant(A, 1, 0.0, 0.01, 1.0), close(A, "complete", 1, 1.5, 1.51)]
    assert rules(history) == ["stale close"]


def test_two_completions_are_closed_twice_and_a_grant_after_completion_is_caught() -> None:
    history = [grant(A, 1, 0.0, 0.01, 1.0), close(A, "complete", 1, 0.2, 0.21),
               grant(B, 2, 0.5, 0.51, 1.5), close(B, "complete", 2, 0.6, 0.61)]
    assert {"closed twice", "granted after completion"} <= set(rules(history))


def test_a_bounce_naming_a_lapsed_or_wrong_holder_is_false() -> None:
    assert rules([grant(A, 1, 0.0, 0.01, 1.0), bounce(B, A, 1, 1.2, 1.21)]) == ["false bounce"]
    assert rules([grant(A, 1, 0.0, 0.01, 1.0), bounce(B, B, 1, 0.2, 0.21)]) == ["false bounce"]
    assert rules([bounce(B, A, 7, 0.2, 0.21)]) == ["false bounce"]


def test_refusing_the_certainly_live_holder_is_a_lost_hold() -> None:
    history = [grant(A, 1, 0.0, 0.01, 1.0),
               Call(A, "heartbeat", S, 0.3, 0.31, "refused", reason="not_holder", lease=1)]
    assert rules(history) == ["lost hold"]


def test_a_renewal_may_shorten_a_lease_acknowledged_or_not() -> None:
    shortened = [grant(A, 1, 0.0, 0.01, 2.0), renew(A, 1, 0.5, 0.51, 1.5),
                 grant(B, 2, 1.6, 1.61, 2.6)]
    assert check(shortened) == []
    maybe_shortened = [grant(A, 1, 0.0, 0.01, 2.0),
                       Call(A, "heartbeat", S, 0.5, 0.6, "unknown", lease=1),
                       grant(B, 2, 1.65, 1.66, 2.66)]
    assert check(maybe_shortened) == []
    assert rules([*maybe_shortened[:2], grant(B, 2, 1.3, 1.31, 2.3)]) == ["overlap"]


def test_a_renewal_of_a_grant_whose_answer_was_lost_stands_for_it() -> None:
    history = [Call(A, "claim", S, 0.0, 0.003, "unknown", lease=1),
               renew(A, 1, 0.2, 0.21, 1.2), bounce(B, A, 1, 0.3, 0.31),
               close(A, "complete", 1, 0.4, 0.41)]
    assert check(history) == []
    assert rules([renew(A, 1, 0.2, 0.21, 1.2)]) == ["renewal by a stranger"]
    assert rules([*history[:2], grant(B, 2, 0.5, 0.51, 1.5)]) == ["overlap"]
