"""tools/wakeful_kernel.py: a missed wake-up costs at most a slice of a second, and notebooks run with it."""

import asyncio
from queue import Empty

import nbclient
import nbformat
import pytest

from tools import wakeful_kernel
from tools.wakeful_kernel import SLICE, WakefulChannel, WakefulKernelManager


class Clock:
    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now


class Socket:
    """A shell socket whose message is there from the start, but whose poll sees it only after ``misses`` polls
    (each missed poll sleeps its whole timeout, as a poll that missed its wake-up does)."""

    def __init__(self, clock, misses):
        self.clock, self.misses, self.polls = clock, misses, []

    async def poll(self, timeout_ms):
        self.polls.append(timeout_ms)
        if len(self.polls) <= self.misses:
            self.clock.now += timeout_ms / 1000
            return 0
        return 1


def channel(monkeypatch, misses):
    clock = Clock()
    monkeypatch.setattr(wakeful_kernel.time, "monotonic", clock.monotonic)
    chan = WakefulChannel.__new__(WakefulChannel)  # no real socket or session
    chan.socket = Socket(clock, misses)

    async def recv():
        return {"msg_type": "execute_reply"}

    chan._recv = recv
    return chan, clock


def test_a_missed_wake_up_costs_one_slice_not_the_timeout(monkeypatch):
    chan, clock = channel(monkeypatch, misses=2)
    assert asyncio.run(chan.get_msg(timeout=600))["msg_type"] == "execute_reply"
    assert chan.socket.polls == [SLICE * 1000] * 3 and clock.now == 2 * SLICE


def test_the_timeout_still_holds_to_the_fraction_of_a_slice(monkeypatch):
    chan, clock = channel(monkeypatch, misses=10**6)
    with pytest.raises(Empty):
        asyncio.run(chan.get_msg(timeout=2.5))
    assert chan.socket.polls == [1000, 1000, 500] and clock.now == 2.5


def test_no_timeout_polls_in_slices_until_the_message_comes(monkeypatch):
    chan, _ = channel(monkeypatch, misses=5)
    assert asyncio.run(chan.get_msg())["msg_type"] == "execute_reply"
    assert chan.socket.polls == [SLICE * 1000] * 6


@pytest.mark.slow  # executes a notebook in a fresh kernel
def test_a_notebook_runs_with_the_wakeful_kernel_manager():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 6 * 7"), nbformat.v4.new_code_cell("x")])
    client = nbclient.NotebookClient(nb, timeout=60, kernel_name="python3", kernel_manager_class=WakefulKernelManager)
    with client.setup_kernel():
        assert type(client.kc.shell_channel) is WakefulChannel and type(client.kc.iopub_channel) is WakefulChannel
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
    assert nb.cells[1].outputs[0]["data"]["text/plain"] == "42"
