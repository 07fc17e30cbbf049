"""The workers' retry schedules (workers._retrying): what each waits, what it retries."""

from __future__ import annotations

import pytest

from workers._retrying import (
    CHECKPOINT_RACE,
    JOB_OUTAGE,
    LISTENER_OUTAGE,
    WEBHOOK_POST,
    Schedule,
    patiently,
)
from workers.errors import BrokerUnavailableError, StoreRecoveredError, StoreUnavailableError


def test_a_job_waits_out_an_outage_for_about_six_minutes() -> None:
    waits = [JOB_OUTAGE.delay(n) for n in range(40)]
    assert waits[:6] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0]
    assert sum(waits) == pytest.approx(365.5)
    assert not JOB_OUTAGE.exhausted(39)
    assert JOB_OUTAGE.exhausted(40)


def test_a_listener_never_gives_up_and_its_wait_stays_capped() -> None:
    assert [LISTENER_OUTAGE.delay(n) for n in range(5)] == [0.5, 1.0, 2.0, 4.0, 5.0]
    assert LISTENER_OUTAGE.delay(5_000) == 5.0  # hours of failures: no overflow
    assert not LISTENER_OUTAGE.exhausted(10**6)


def test_tries_in_all() -> None:
    assert WEBHOOK_POST.retries == 2  # three POSTs in a row
    assert CHECKPOINT_RACE.retries == 19
    assert CHECKPOINT_RACE.delay(5) == 0.0


class Flaky:
    def __init__(self, errors: list[BaseException]) -> None:
        self.errors = errors
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


NOW = Schedule(first=0.0, cap=0.0, retries=2)


def test_call_retries_what_it_is_told_and_returns() -> None:
    flaky = Flaky([ValueError("a"), ValueError("b")])
    assert NOW.call(flaky, lambda e: isinstance(e, ValueError)) == "done"
    assert flaky.calls == 3


def test_call_reraises_the_last_error_when_the_retries_run_out() -> None:
    flaky = Flaky([ValueError("a"), ValueError("b"), ValueError("c"), ValueError("d")])
    with pytest.raises(ValueError, match=r"^c$"):
        NOW.call(flaky, lambda e: isinstance(e, ValueError))
    assert flaky.calls == 3


def test_call_does_not_retry_other_errors() -> None:
    flaky = Flaky([KeyError("k")])
    with pytest.raises(KeyError):
        NOW.call(flaky, lambda e: isinstance(e, ValueError))
    assert flaky.calls == 1


def test_patiently_waits_out_an_outage_but_not_a_recovery() -> None:
    flaky = Flaky([StoreUnavailableError("down"), BrokerUnavailableError("down")])
    assert patiently(flaky, "freeing a lease", within=60.0) == "done"
    assert flaky.calls == 3
    recovered = Flaky([StoreRecoveredError("crashed")])
    with pytest.raises(StoreRecoveredError):
        patiently(recovered, "freeing a lease", within=60.0)
    assert recovered.calls == 1
    fault = Flaky([RuntimeError("a bug")])
    with pytest.raises(RuntimeError):
        patiently(fault, "freeing a lease", within=60.0)
    assert fault.calls == 1


def test_patiently_gives_up_after_its_time() -> None:
    flaky = Flaky([StoreUnavailableError("down"), StoreUnavailableError("still down")])
    with pytest.raises(StoreUnavailableError, match=r"^down$"):
        patiently(flaky, "freeing a lease", within=0.0)
    assert flaky.calls == 1


def test_call_waits_as_the_schedule_says_from_the_first_retry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slept: list[float] = []
    monkeypatch.setattr("time.sleep", slept.append)  # tenacity's nap too
    schedule = Schedule(first=0.5, cap=3.0, retries=4)
    flaky = Flaky([ValueError("a"), ValueError("b"), ValueError("c"), ValueError("d")])
    assert schedule.call(flaky, lambda e: isinstance(e, ValueError)) == "done"
    assert flaky.calls == 5
    assert slept == [0.5, 1.0, 2.0, 3.0]
    slept.clear()
    always = Flaky([ValueError(str(n)) for n in range(9)])
    with pytest.raises(ValueError, match=r"^4$"):
        schedule.call(always, lambda e: isinstance(e, ValueError))
    assert always.calls == 5  # four retries in all
    assert slept == [0.5, 1.0, 2.0, 3.0]
