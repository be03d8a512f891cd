#!/usr/bin/env python3
"""The deployable app: reads the fleet file and builds the stacks. No AWS calls here."""

from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk

from ecs_gpu_sharing import FleetPlan, GpuSharingError
from stacks.fleet_app import build_app


def main() -> int:
    app = cdk.App()
    try:
        build_app(app)
        app.synth()
    except GpuSharingError as error:
        FleetPlan.remove_plan_files(Path(app.outdir))  # a synth that fails leaves no plan file of an earlier one
        for line in str(error).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return 1
    except RuntimeError as error:
        # A failed synth-time check arrives through jsii: show its message, not the JavaScript stack.
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
