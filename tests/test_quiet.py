"""tools/quiet.py: make outputs waits for a quiet machine before it stores timings, and gives up with a message."""

from tools import quiet


class Machine:
    """A machine whose load average takes the given values, one per look, and whose clock each sleep moves on."""

    def __init__(self, monkeypatch, loads):
        self.loads, self.seen, self.clock = list(loads), [], 0.0
        monkeypatch.setattr(quiet.os, "getloadavg", self.getloadavg)
        monkeypatch.setattr(quiet.time, "monotonic", lambda: self.clock)
        monkeypatch.setattr(quiet.time, "sleep", self.sleep)

    def getloadavg(self):
        self.seen.append(self.loads.pop(0))
        return self.seen[-1], 0.0, 0.0

    def sleep(self, seconds):
        self.clock += seconds


def test_it_waits_until_the_load_is_at_most_the_limit(monkeypatch, capsys):
    machine = Machine(monkeypatch, [2.1, 0.9, 0.5, 0.1])
    assert quiet.wait_for_quiet(0.5, timeout_s=60, poll_s=5) == 0.5
    assert machine.seen == [2.1, 0.9, 0.5] and machine.clock == 10
    assert capsys.readouterr().out.count("waiting for a quiet machine") == 2


def test_it_gives_up_after_the_timeout_with_a_message_naming_the_load(monkeypatch, capsys):
    Machine(monkeypatch, [3.0] * 20)
    assert quiet.main(["--max-load", "0.5", "--timeout", "20"]) == 1
    err = capsys.readouterr().err
    assert "stayed above 0.5 for 20 s" in err and "now 3.00" in err


def test_make_outputs_waits_before_it_executes():
    from pathlib import Path

    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    recipe = makefile.split("\noutputs:", 1)[1].split("\n\n", 1)[0]
    assert recipe.index("tools.quiet") < recipe.index("$(EXECUTE)")
