"""``benchmarks/by_turns.py``: two versions of the command timed by turns, so the machine's drift falls on both."""

from __future__ import annotations

from conftest import REPO, load_script


def test_by_turns_swaps_which_version_goes_first_so_a_drift_falls_on_both() -> None:
    """A machine that slows down with every run it makes: where one version always ran first, it would seem faster by
    the drift alone. By turns, each file's first runs alternate, and two versions that take as long come out even; one
    a tenth faster is found faster on every file, by its tenth within the drift's share."""
    by_turns = load_script(REPO / "benchmarks" / "by_turns.py")
    files = [f"fleet-{i}.toml" for i in range(6)]
    order: list[tuple[str, str]] = []

    def drifting(cost: dict[str, float]) -> object:
        def run(version: str, fleet: str) -> float:
            order.append((version, fleet))
            return cost[version] * (1 + 0.01 * len(order))  # each run 1% slower than the one before

        return run

    seconds = by_turns.by_turns(files, ("old", "new"), 4, drifting({"old": 1.0, "new": 1.0}))
    assert all(len(seconds[v][f]) == 4 for v in seconds for f in files)
    firsts = [order[k][0] for k in range(0, len(order), 2)]
    assert firsts.count("old") == firsts.count("new") == len(firsts) // 2
    _, _, difference, _ = by_turns.summary(seconds, "old", "new")
    assert abs(difference) < 0.02  # the drift of one run, not of a whole version's runs
    order.clear()
    seconds = by_turns.by_turns(files, ("old", "new"), 4, drifting({"old": 1.0, "new": 0.9}))
    before, after, difference, faster = by_turns.summary(seconds, "old", "new")
    assert faster == len(files) and -0.13 < difference < -0.07 and after < before
