"""Builds the deployable app's stacks into a CDK app; shared by app.py and the tests."""

from __future__ import annotations

import aws_cdk as cdk

from .cluster import ClusterStack
from .network import NetworkStack


def build_app(app: cdk.App, *, prefix: str = "GpuSharing") -> dict[str, cdk.Stack]:
    """Adds the network and cluster stacks to ``app`` and returns them by role."""
    network = NetworkStack(app, f"{prefix}Network")
    cluster = ClusterStack(app, f"{prefix}Cluster", vpc=network.vpc)
    return {"network": network, "cluster": cluster}
