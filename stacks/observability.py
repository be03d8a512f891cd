"""The fleet's GPU dashboard and budget alarms, over the telemetry daemon's metrics."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_sns as sns
from constructs import Construct

from ecs_gpu_sharing import GpuFleetDashboard


class ObservabilityStack(Stack):
    """One dashboard for the fleet; an alarm per service when its measured peak nears its budget."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: ecs.ICluster,
        services: Mapping[str, ecs.BaseService],
        alarm_topic: sns.ITopic | None,
        **kwargs: object,
    ) -> None:
        super().__init__(scope, id_, **kwargs)  # type: ignore[arg-type]
        self.dashboard = GpuFleetDashboard(self, "Gpu", cluster=cluster, services=services, alarm_topic=alarm_topic)
        CfnOutput(self, "DashboardName", value=self.dashboard.dashboard.dashboard_name)
