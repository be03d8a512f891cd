"""Deletes a fleet's stacks in the order a real account needs: services and dashboards, then the hosts' scale-in
protection (``ecs-gpu-sharing cluster unprotect``), then the cluster and the network.

`cdk destroy --all` alone waits for hours on the cluster stack: ECS protects each host that runs a task from scale-in
and leaves the protection when the capacity provider goes, so CloudFormation cannot empty the Auto Scaling groups
(aws-cdk issue 18179). Run as `make destroy [FLEET=path/to/fleet.toml]`; the deploy rehearsal runs the same steps.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CDK = REPO / "node_modules" / ".bin" / "cdk"

Run = Callable[[list[str]], subprocess.CompletedProcess[str]]


def first_stacks(stacks: Sequence[str], name: str) -> list[str]:
    """The stacks that go before the cluster's: each services and observability stack of the fleet ``name``."""
    return [s for s in stacks if s.startswith((f"{name}-services-", f"{name}-observability-"))]


def destroy(run: Run, stacks: Sequence[str], name: str, app: list[str], region: str | None) -> str | None:
    """Runs the three steps through ``run``; returns what went wrong, or ``None``."""
    first = first_stacks(stacks, name)
    if first:
        result = run([str(CDK), "destroy", "--force", "--no-notices", *app, *first])
        if result.returncode != 0:
            return f"cdk destroy of {', '.join(first)} exited {result.returncode}"
    unprotect = [sys.executable, "-m", "ecs_gpu_sharing.cli", "cluster", "unprotect", "--stack", f"{name}-cluster"]
    result = run(unprotect + (["--region", region] if region else []))
    text = result.stdout + result.stderr
    if result.returncode != 0 and "does not exist" not in text:  # a cluster stack never deployed has no hosts
        return f"cluster unprotect exited {result.returncode}: {text.strip().splitlines()[-1] if text.strip() else ''}"
    result = run([str(CDK), "destroy", "--all", "--force", "--no-notices", *app])
    return None if result.returncode == 0 else f"cdk destroy --all exited {result.returncode}"


def main(argv: list[str] | None = None) -> int:
    from ecs_gpu_sharing.core import fleet

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fleet", type=Path, default=REPO / "fleet.toml", help="the fleet file (default: fleet.toml)")
    args = parser.parse_args(argv)
    spec = fleet.load(args.fleet)
    app = ["-c", f"fleet={args.fleet}"]

    def run(command: list[str]) -> subprocess.CompletedProcess[str]:
        print("$ " + " ".join(command), flush=True)
        result = subprocess.run(command, cwd=REPO, text=True, capture_output=True, check=False)
        print(result.stdout + result.stderr, end="", flush=True)
        return result

    listed = subprocess.run(
        [str(CDK), "list", "--no-notices", *app], cwd=REPO, text=True, capture_output=True, check=False
    )
    if listed.returncode != 0:
        print(listed.stdout + listed.stderr, file=sys.stderr)
        return 1
    problem = destroy(run, listed.stdout.split(), spec.name, app, spec.region)
    if problem:
        print(f"destroy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
