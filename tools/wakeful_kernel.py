"""A kernel manager for running notebooks unattended whose client cannot sleep through a cell's reply.

nbconvert's ``--execute`` (through nbclient) waits for each cell's ``execute_reply`` with one asyncio poll of
jupyter_client's shell socket, as long as the cell's timeout. Now and then that poll misses the wake-up of a reply
that has arrived: the kernel has run the cell and sits idle, the client sleeps on, and only when the poll's timer
fires does it look again and find the reply waiting. On 2026-11-27 (ipykernel 7.4.0, jupyter_client 8.10.0,
nbclient 0.11.0, pyzmq 27.3.0) chapter 10 took 615.9 s instead of about 20 s: its slider cell had run (the kernel's
history held it, and a second client got answers at once), and the reply was read when the 600 s timeout ran out.
ZeroMQ wakes an asyncio poller through an edge-triggered descriptor, and an edge that something else consumes is
gone (pyzmq's notes on event-loop integration; ipykernel#1554 describes the kernel's side of the same kind of bug).

This client's channels poll in slices of at most ``SLICE`` seconds up to the same deadline, so a missed wake-up costs
a second, not the cell's timeout. Use it as ``python -m jupyter nbconvert --execute
--ExecutePreprocessor.kernel_manager_class=tools.wakeful_kernel.WakefulKernelManager ...`` from the repository root
(``python -m`` puts the root on the import path, so ``tools`` imports).
"""

from __future__ import annotations

import time
from queue import Empty
from typing import Any

from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.manager import AsyncKernelManager
from traitlets import DottedObjectName, Type

SLICE = 1.0  # seconds: the longest a missed wake-up can delay a message


class WakefulChannel(AsyncZMQSocketChannel):
    """A channel whose ``get_msg(timeout)`` polls again every ``SLICE`` seconds until the timeout (None: forever)."""

    async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = SLICE if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await super().get_msg(timeout=min(SLICE, left))
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise


class WakefulKernelClient(AsyncKernelClient):
    shell_channel_class = Type(WakefulChannel)
    iopub_channel_class = Type(WakefulChannel)
    stdin_channel_class = Type(WakefulChannel)
    control_channel_class = Type(WakefulChannel)


class WakefulKernelManager(AsyncKernelManager):
    # Both: AsyncKernelManager's client_factory has a default of its own, not one read from client_class.
    client_class = DottedObjectName(f"{__name__}.WakefulKernelClient")
    client_factory = Type(WakefulKernelClient)
