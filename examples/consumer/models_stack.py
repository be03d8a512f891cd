"""A team's own CDK stack that uses the library, as a consumer would write it (see test_models_stack.py)."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from constructs import Construct

from ecs_gpu_sharing import (
    GpuCapacity,
    GpuFleetDashboard,
    GpuTelemetry,
    MpsShare,
    SharedGpuService,
    SharedGpuTaskDefinition,
)


class ModelsStack(cdk.Stack):
    def __init__(self, scope: Construct, id_: str, **kwargs: object) -> None:
        super().__init__(scope, id_, **kwargs)  # type: ignore[arg-type]
        cluster = ecs.Cluster(self, "Cluster", vpc=ec2.Vpc(self, "Vpc", max_azs=2, nat_gateways=1))
        l4 = GpuCapacity(self, "l4", cluster=cluster, instance_types=["g6.2xlarge"])
        task = SharedGpuTaskDefinition(self, "EmbedderTask")
        task.add_container(
            "model",
            image=ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/python:3.12-slim"),
            cpu=1024,
            memory_limit_mib=4096,
            gpu=MpsShare(gpu_budget_mib=4096),
        )
        embedder = SharedGpuService(
            self, "embedder", cluster=cluster, capacity=l4, task_definition=task, desired_count=6
        )
        # The telemetry daemon on every GPU host, and a dashboard with an alarm per service; then
        # `ecs-gpu-sharing evaluate --cluster <name> --plan cdk.out/gpu-fleet-plan.json` judges the budgets.
        GpuTelemetry(self, "Telemetry", cluster=cluster, capacities=[l4])
        GpuFleetDashboard(self, "Dashboard", cluster=cluster, services={"embedder": embedder})
