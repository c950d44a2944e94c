"""The in-process write queues that replace SQLite's sleeping busy handler: ledger writes of one
process are served in arrival order (``app.core.services.AsyncGate`` on the event loop, then
``app.db.session.FifoGate`` around the transaction), a bounded number wait, a waiter gives up at
its deadline, and no slot is ever lost or duplicated — whatever order waits end in."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from app.core.services import AsyncGate
from app.db.session import DatabaseUnavailable, FifoGate


# ---------------------------------------------------------------------------------------------- threads
def _queue_up(gate: FifoGate, n: int) -> tuple[list[int], list[threading.Thread]]:
    """Hold the gate, then start ``n`` threads one after the other, each waiting on it; returns the
    order in which they got it (filled as they run) and the threads."""
    order: list[int] = []

    def worker(i: int) -> None:
        assert gate.acquire(10.0)
        order.append(i)
        time.sleep(0.002)
        gate.release()

    threads = []
    for i in range(n):
        t = threading.Thread(target=worker, args=(i,))
        t.start()
        deadline = time.monotonic() + 5
        while gate.waiting < i + 1 and time.monotonic() < deadline:  # queued before the next starts
            time.sleep(0.001)
        assert gate.waiting == i + 1
        threads.append(t)
    return order, threads


def test_fifo_gate_serves_writers_in_arrival_order():
    gate = FifoGate(width=1, max_waiting=64)
    assert gate.acquire(1.0)
    order, threads = _queue_up(gate, 12)
    gate.release()
    for t in threads:
        t.join(10)
    assert order == list(range(12))
    assert gate.waiting == 0 and gate.held == 0  # every slot came back


def test_fifo_gate_refuses_beyond_its_queue_and_a_timed_out_waiter_loses_nothing():
    gate = FifoGate(width=1, max_waiting=2)
    assert gate.acquire(1.0)
    order, threads = _queue_up(gate, 2)
    with pytest.raises(DatabaseUnavailable) as exc:
        gate.acquire(1.0)
    assert exc.value.cause == "busy" and exc.value.retry_after >= 1
    gate.release()
    for t in threads:
        t.join(10)
    assert order == [0, 1]
    # a waiter that times out leaves the queue; the slot it never got still reaches the next one
    assert gate.acquire(1.0)
    t0 = time.monotonic()
    assert gate.acquire(0.05) is False
    assert time.monotonic() - t0 < 2.0 and gate.waiting == 0
    got: list[bool] = []
    t = threading.Thread(target=lambda: got.append(gate.acquire(5.0)))
    t.start()
    while gate.waiting < 1:
        time.sleep(0.001)
    gate.release()
    t.join(5)
    assert got == [True] and gate.held == 1
    gate.release()
    assert gate.held == 0


def test_fifo_gate_width_admits_that_many_at_once():
    gate = FifoGate(width=4, max_waiting=8)
    assert all(gate.acquire(0.1) for _ in range(4))
    assert gate.acquire(0.01) is False  # the fifth waits, then gives up
    for _ in range(4):
        gate.release()
    assert gate.held == 0 and gate.acquire(0.01)


# ---------------------------------------------------------------------------------------------- event loop
def test_async_gate_serves_in_arrival_order_and_refuses_a_full_queue():
    async def main() -> tuple[list[int], str]:
        gate = AsyncGate(width=1, max_waiting=8)
        await gate.acquire(1.0)
        order: list[int] = []

        async def writer(i: int) -> None:
            await gate.acquire(5.0)
            order.append(i)
            await asyncio.sleep(0.001)
            gate.release()

        tasks = []
        for i in range(8):
            tasks.append(asyncio.create_task(writer(i)))
            await asyncio.sleep(0)  # queued in this order
        await asyncio.sleep(0.01)
        try:
            await gate.acquire(1.0)
            cause = "admitted"
        except DatabaseUnavailable as exc:
            cause = exc.cause
        gate.release()
        await asyncio.gather(*tasks)
        assert gate.held == 0
        return order, cause

    order, cause = asyncio.run(main())
    assert order == list(range(8))
    assert cause == "busy"


def test_async_gate_timeouts_and_cancellations_never_lose_a_slot():
    async def main() -> int:
        gate = AsyncGate(width=1, max_waiting=16)
        await gate.acquire(1.0)
        # one waiter times out, one is cancelled by its client, one waits long enough
        late = asyncio.create_task(gate.acquire(0.02))
        gone = asyncio.create_task(gate.acquire(5.0))
        patient = asyncio.create_task(gate.acquire(5.0))
        await asyncio.sleep(0.05)
        with pytest.raises(DatabaseUnavailable):
            await late
        gone.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gone
        gate.release()  # handed to the patient waiter, skipping the two that left
        await asyncio.wait_for(patient, 1.0)
        assert gate.held == 1
        gate.release()
        return gate.held

    assert asyncio.run(main()) == 0
