"""A wait with a time limit keeps the cancellation (the interrupt) that lands as it finishes."""

import asyncio
import sys

import pytest

from codingcode_jupyter.engine.deadline import within


async def _cancelled_as_it_finishes(wait) -> object:
    """Cancel the waiting task in the same loop step as the awaited future gets its result,
    as an interrupt landing with a frontend's render message does; returns what the task ended with."""
    inner: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(wait(inner))
    await asyncio.sleep(0)  # the task now waits on ``inner``
    inner.set_result(1)
    task.cancel()
    try:
        return await task
    except asyncio.CancelledError:
        return "cancelled"


async def test_a_cancellation_landing_as_the_awaited_thing_finishes_is_kept():
    assert await _cancelled_as_it_finishes(lambda inner: within(inner, 10)) == "cancelled"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="wait_for keeps it from 3.12 on")
async def test_control_asyncio_wait_for_loses_it_on_python_3_11():
    # Why `within` exists (and ruff bans asyncio.wait_for in the package): the task returned 1
    # and went on, as the trust card's wait did after an interrupt.
    assert await _cancelled_as_it_finishes(lambda inner: asyncio.wait_for(inner, 10)) == 1


async def test_within_still_times_out_and_returns_results():
    assert await within(asyncio.sleep(0, result="done"), 1) == "done"
    assert await within(asyncio.sleep(0, result="no limit"), None) == "no limit"
    with pytest.raises(TimeoutError):
        await within(asyncio.sleep(5), 0.05)
