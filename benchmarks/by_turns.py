#!/usr/bin/env python3
"""The whole ``plan --json`` command of an earlier version of the library and of the working tree's, run by turns on
the same fleet files: how the "by turns" figures of docs/planning.md are measured.

Usage: python benchmarks/by_turns.py REV [FLEET.toml ...] [--seeds 1000-1008] [--hosts g6.48xlarge,...]
                                     [--tasks 100000] [--rounds 5] [--same-output]

REV is a git revision; its ``constructs/`` is written to a temporary directory (``git archive``) and compiled as pip
would, and the working tree's ``constructs/`` is the other version. The fleet files are those named, or each seed's
generated fleet on each host (``fleet_generator.fitting_fleet_file``: the tasks halved until the command says they
fit). Each round runs every file once with each version, which goes first swapped from round to round and from file to
file, so a drift in the machine's speed (it moves by a tenth within minutes on the build machines) falls on both. It
prints each file's median over the rounds with each version, the median over files, and the median of the per-file
differences with the files the working tree is faster on; a reference run (``generated_benchmark.reference_seconds``)
before and after. ``--same-output``: first checks that both versions write the same bytes for each file (an exact
change); it stops where one differs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def by_turns(
    files: Sequence[str], versions: tuple[str, str], rounds: int, run: Callable[[str, str], float]
) -> dict[str, dict[str, list[float]]]:
    """``run(version, file)`` seconds for each file and version, ``rounds`` times, the version that goes first
    swapped from round to round and from file to file: per version, per file, its seconds."""
    seconds: dict[str, dict[str, list[float]]] = {v: {f: [] for f in files} for v in versions}
    for r in range(rounds):
        for i, f in enumerate(files):
            for v in versions if (r + i) % 2 == 0 else versions[::-1]:
                seconds[v][f].append(run(v, f))
    return seconds


def summary(seconds: dict[str, dict[str, list[float]]], before: str, after: str) -> tuple[float, float, float, int]:
    """The median over files of each file's median with ``before`` and with ``after``, the median of the per-file
    differences (after less before), and the files ``after`` is faster on."""
    files = list(seconds[before])
    a = [statistics.median(seconds[before][f]) for f in files]
    b = [statistics.median(seconds[after][f]) for f in files]
    differences = [y - x for x, y in zip(a, b, strict=True)]
    return statistics.median(a), statistics.median(b), statistics.median(differences), sum(d < 0 for d in differences)


def _tree(revision: str, into: Path) -> Path:
    """``revision``'s ``constructs/`` under ``into``, compiled: a command run from it reads bytecode, as an installed
    package's does."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", revision, "constructs"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(into / "constructs")], check=True)
    return into / "constructs"


def _command(tree: Path, fleet: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    done = subprocess.run(
        [sys.executable, "-m", "ecs_gpu_sharing.cli", "plan", fleet, "--json"], env=env, capture_output=True
    )
    if not done.stdout or b"Traceback" in done.stderr:  # exit 1 with a plan: the fleet does not fit, timed all the same
        sys.exit(
            f"{fleet}: the command of {tree} wrote no plan (exit {done.returncode}): {done.stderr.decode()[-2000:]}"
        )
    return done.stdout


def _fleet_files(args: argparse.Namespace, into: Path) -> list[str]:
    if args.fleets:
        return list(args.fleets)
    from fleet_generator import fitting_fleet_file, generate

    low, _, high = args.seeds.partition("-")
    files = []
    for seed in range(int(low), int(high or low) + 1):
        for host in args.hosts.split(","):
            path = into / f"{seed}-{host}.toml"
            path.write_text(fitting_fleet_file(generate(seed, args.tasks, host))[0])
            files.append(str(path))
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revision", help="the earlier version: a git revision, such as a stop's commit")
    parser.add_argument("fleets", nargs="*", help="fleet files; none: the seeds' generated fleets")
    parser.add_argument("--seeds", default="1000-1008", help="a seed or a range of them (default 1000-1008)")
    parser.add_argument("--hosts", default="g6.48xlarge,g6e.48xlarge,p5.48xlarge")
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--same-output", action="store_true", help="first check both write the same bytes")
    args = parser.parse_args()
    from generated_benchmark import reference_seconds

    with tempfile.TemporaryDirectory() as tmp:
        trees = {args.revision: _tree(args.revision, Path(tmp)), "working tree": REPO / "constructs"}
        # the working tree compiled too, before the first run: neither version's first run pays for its bytecode
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(trees["working tree"])], check=True)
        files = _fleet_files(args, Path(tmp))
        if args.same_output:
            for f in files:
                if len({_command(t, f) for t in trees.values()}) != 1:
                    sys.exit(f"{f}: the two versions write different plans")
            print(f"the same bytes on all {len(files)} fleet files")
        print(f"reference run: {reference_seconds():.3f} s", flush=True)

        def run(version: str, fleet: str) -> float:
            start = time.perf_counter()
            _command(trees[version], fleet)
            return time.perf_counter() - start

        seconds = by_turns(files, (args.revision, "working tree"), args.rounds, run)
        print(f"reference run: {reference_seconds():.3f} s\n")
    print(f"| fleet file | {args.revision} s | working tree s |\n| --- | ---: | ---: |")
    for f in files:
        before, after = (statistics.median(seconds[v][f]) for v in seconds)
        print(f"| {Path(f).name} | {before:.3f} | {after:.3f} |")
    a, b, difference, faster = summary(seconds, args.revision, "working tree")
    print(
        f"\nmedian of {len(files)} files: {a:.3f} s -> {b:.3f} s; per file {difference * 1000:+.1f} ms at the median, "
        f"the working tree faster on {faster} of {len(files)} ({args.rounds} rounds)"
    )


if __name__ == "__main__":
    main()
