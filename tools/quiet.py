"""Wait for a quiet machine before storing timings: ``make outputs`` runs this first.

    python -m tools.quiet [--max-load 0.5] [--timeout 900]

A stored timing is read as the cost of the code it times; on a machine whose cores are busy with other work it
records that work instead. So before the notebooks are executed for their stored outputs, this waits until the
1-minute load average is at most ``--max-load`` (0.5: half a core busy on average, the project's rule), checking every
``POLL_S`` seconds, and gives up with exit status 1 and a message saying what was running after ``--timeout``
seconds. The load average decays with a time constant of a minute, so after a heavy job it takes a minute or two.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

MAX_LOAD = 0.5
TIMEOUT_S = 900.0
POLL_S = 5.0


def wait_for_quiet(max_load: float = MAX_LOAD, timeout_s: float = TIMEOUT_S, poll_s: float = POLL_S) -> float | None:
    """Wait until the 1-minute load average is at most ``max_load``; return it, or None after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        load = os.getloadavg()[0]
        if load <= max_load:
            return load
        if time.monotonic() >= deadline:
            return None
        print(f"==> load average {load:.2f} > {max_load}: waiting for a quiet machine before timing", flush=True)
        time.sleep(poll_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.quiet", description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-load", type=float, default=MAX_LOAD, help="highest 1-minute load average to start at")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds to wait before giving up")
    args = parser.parse_args(argv)
    load = wait_for_quiet(args.max_load, args.timeout)
    if load is None:
        print(f"error: the 1-minute load average stayed above {args.max_load} for {args.timeout:.0f} s "
              f"(now {os.getloadavg()[0]:.2f}): the stored timings would record other work. Stop what else runs "
              "(top shows it) and try again.", file=sys.stderr)
        return 1
    print(f"==> load average {load:.2f} <= {args.max_load}: a quiet machine")
    return 0


if __name__ == "__main__":
    sys.exit(main())
