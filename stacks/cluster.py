"""The ECS cluster and its GPU capacities."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import aws_cdk as cdk
from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from ecs_gpu_sharing import FleetPlan, GpuAmi, GpuCapacity, GpuManagedInstancesCapacity, GpuTelemetry
from ecs_gpu_sharing.core.fleet import AUTO_SCALING_SERVICE_ROLE_PATH, MANAGED_INSTANCES, CapacitySpec, LoadBalancerSpec

from .ingress import EPHEMERAL_PORTS, Balancer, build_load_balancers, open_host_ports, open_task_ports

"""The role Auto Scaling acts as (EC2 Auto Scaling User Guide, "Service-linked roles for Amazon EC2 Auto Scaling")."""

# What Vpc.from_lookup returns while its lookup is not in the context yet.
LOOKUP_PLACEHOLDER_VPC = "vpc-12345"


class ClusterStack(Stack):
    """An ECS cluster with Container Insights and one GpuCapacity per fleet capacity, on ``vpc``, or on the
    existing VPC ``vpc_id`` (an environment-bound app), and a topic for the groups' scaling events.

    ``host_port_routes`` names the (load balancer, capacity) pairs whose bridge-mode services the balancer reaches,
    ``task_port_routes`` the load balancers with awsvpc services. With a Service Connect namespace,
    ``bridge_capacities`` names the EC2 capacities that run bridge-mode services (their hosts call through Service
    Connect) and ``bridge_listeners`` those of them where one has a port (a listener on a host port)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        vpc: ec2.IVpc | None,
        capacities: Mapping[str, CapacitySpec],
        vpc_id: str | None = None,
        load_balancers: Mapping[str, LoadBalancerSpec] | None = None,
        service_connect_namespace: str | None = None,
        telemetry: bool = True,
        host_port_routes: Iterable[tuple[str, str]] = (),
        task_port_routes: Iterable[str] = (),
        bridge_capacities: Iterable[str] = (),
        bridge_listeners: Iterable[str] = (),
        **kwargs: object,
    ) -> None:
        super().__init__(scope, id_, **kwargs)  # type: ignore[arg-type]
        if vpc is None:
            vpc = self._existing_vpc(vpc_id)
        self.vpc = vpc
        self.cluster = ecs.Cluster(self, "Cluster", vpc=vpc, container_insights_v2=ecs.ContainerInsights.ENABLED)
        CfnOutput(self, "ClusterName", value=self.cluster.cluster_name)
        # Service Connect: services with a port answer at http://<service>:<port> inside the namespace. Its tasks
        # (awsvpc) and hosts (bridge mode) join one group, which each listener admits (_open_service_connect).
        self.service_connect_members: ec2.SecurityGroup | None = None
        if service_connect_namespace:
            self.cluster.add_default_cloud_map_namespace(name=service_connect_namespace, use_for_service_connect=True)
            self.service_connect_members = ec2.SecurityGroup(
                self,
                "ServiceConnectMembers",
                vpc=vpc,
                description=f"tasks and hosts that call through Service Connect in {service_connect_namespace}",
                allow_all_outbound=False,
            )
        self.load_balancers: dict[str, Balancer] = build_load_balancers(
            Construct(self, "LoadBalancers"), vpc, load_balancers or {}
        )
        # Scaling events of every GPU group and the budget alarms; subscribe an address or a chat integration after
        # deploy. CloudWatch alarms cannot publish to a topic encrypted with the AWS managed key (alias/aws/sns), whose
        # policy admits no service (SNS Developer Guide, "Encryption at rest"): a customer managed key lets CloudWatch
        # and Auto Scaling's service-linked role use it, for this account only.
        self.topic_key = kms.Key(
            self, "TopicKey", enable_key_rotation=True, description="encrypts the GPU fleet's scaling and alarm topic"
        )
        self.topic_key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": self.account}},
            )
        )
        # Auto Scaling publishes the groups' notifications as its service-linked role, which an account has only once
        # its first Auto Scaling group exists; KMS refuses a key policy naming a principal that does not exist
        # (MalformedPolicyDocumentException). So the statement names the account, which always exists, and admits
        # only that role by its ARN (aws:PrincipalArn is matched at request time, not resolved when the key is made).
        self.topic_key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AutoScalingNotifications",
                principals=[iam.AccountRootPrincipal()],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={
                    "ArnEquals": {
                        "aws:PrincipalArn": self.format_arn(
                            service="iam",
                            region="",
                            resource="role",
                            resource_name=AUTO_SCALING_SERVICE_ROLE_PATH,
                        )
                    }
                },
            )
        )
        self.scaling_events = sns.Topic(self, "ScalingEvents", enforce_ssl=True, master_key=self.topic_key)
        # enforce_ssl writes a topic policy, and a topic policy replaces SNS's default one, which admitted the
        # account's services: without this statement every alarm's notification fails ("not authorized to perform:
        # SNS:Publish", AWS re:Post Knowledge Center, "CloudWatch alarm SNS notification"). Auto Scaling publishes as
        # its service-linked role, an identity of the account whose own policy allows sns:Publish on every topic
        # (AutoScalingServiceRolePolicy v10, statement SNSManagement), so it needs no statement here.
        self.scaling_events.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.scaling_events.topic_arn],
                # Only this account's alarms: the condition the Knowledge Center's article gives (aws:SourceArn).
                conditions={
                    "ArnLike": {
                        "aws:SourceArn": self.format_arn(
                            service="cloudwatch",
                            resource="alarm",
                            resource_name="*",
                            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
                        )
                    },
                },
            )
        )
        CfnOutput(self, "ScalingEventsTopic", value=self.scaling_events.topic_arn)
        self.capacities: dict[str, GpuCapacity | GpuManagedInstancesCapacity] = {}
        # One scope per kind, so a fleet name can never collide with a construct of the stack ("Cluster", say).
        scope = Construct(self, "Capacities")
        for name, spec in capacities.items():
            if spec.kind == MANAGED_INSTANCES:
                managed = GpuManagedInstancesCapacity(
                    scope,
                    name,
                    cluster=self.cluster,
                    instance_types=list(spec.instance_types),
                    max_instances=spec.max_instances,
                    gpu_margin_mib=spec.gpu_margin_mib,
                    ecs_gpu_memory_mib=spec.ecs_gpu_memory_mib,
                    task_volume_gib=spec.task_volume_gib,
                )
                self.capacities[name] = managed
                _acknowledge(managed, spec)
                CfnOutput(managed, "ProviderName", value=managed.capacity_provider.capacity_provider_name)
                continue
            capacity = GpuCapacity(
                scope,
                name,
                cluster=self.cluster,
                instance_types=list(spec.instance_types),
                ami=GpuAmi.release(spec.ami_release, verified=spec.ami_release_verified),
                min_instances=spec.min_instances,
                max_instances=spec.max_instances,
                gpu_margin_mib=spec.gpu_margin_mib,
                ecs_gpu_memory_mib=spec.ecs_gpu_memory_mib,
                root_volume_gib=spec.root_volume_gib,
                notification_topic=self.scaling_events,
            )
            self.capacities[name] = capacity
            _acknowledge(capacity, spec)
            CfnOutput(capacity, "ProviderName", value=capacity.capacity_provider.capacity_provider_name)

        # Each balancer reaches the bridge-mode host ports of the capacities its services run on, one rule a pair.
        open_host_ports(self.load_balancers, self.capacities, host_port_routes)
        # Each ALB reaches its awsvpc targets through one rule to a group they join (a group holds 60 rules a way).
        open_task_ports(self.load_balancers, task_port_routes, vpc)
        if self.service_connect_members is not None:
            self._open_service_connect(self.service_connect_members, set(bridge_capacities), set(bridge_listeners))

        # The GPU telemetry daemon on every EC2 GPU host (daemon services do not run on Managed Instances).
        ec2_capacities = [c for c in self.capacities.values() if isinstance(c, GpuCapacity)]
        self.telemetry = (
            GpuTelemetry(
                self,
                GpuTelemetry.DEFAULT_ID,
                cluster=self.cluster,
                capacities=ec2_capacities,
                alarm_topic=self.scaling_events,
            )
            if telemetry and ec2_capacities
            else None
        )

    def _open_service_connect(self, members: ec2.SecurityGroup, hosts: set[str], listeners: set[str]) -> None:
        """Bridge-mode tasks call from their host's interface, so those hosts join the members' group; a bridge-mode
        listener takes a host port of the agent's dynamic range (amazon-ecs-agent, agent/api/task/task.go,
        buildPortMapWithSCIngressConfig), so its hosts admit the members there. One rule a capacity."""
        for name in sorted(hosts):
            capacity = self.capacities[name]
            assert isinstance(capacity, GpuCapacity)  # bridge mode runs on EC2 capacities only
            capacity.launch_template.add_security_group(members)
            if name in listeners:
                capacity.connections.security_groups[0].add_ingress_rule(
                    members, EPHEMERAL_PORTS, "Service Connect to bridge-mode listeners"
                )

    def _existing_vpc(self, vpc_id: str | None) -> ec2.IVpc:
        """The fleet's existing VPC, looked up at synth (credentials needed) and cached in cdk.context.json."""
        assert vpc_id is not None, "give vpc or vpc_id"
        vpc = ec2.Vpc.from_lookup(self, "Vpc", vpc_id=vpc_id)
        if vpc.vpc_id == LOOKUP_PLACEHOLDER_VPC:
            # Before the lookup is cached, CDK synthesizes once with a placeholder VPC, and the CLI synthesizes
            # again with the real one; the placeholder's id is not a valid VPC id.
            cdk.Validations.of(self).acknowledge(
                cdk.Acknowledgment(
                    id="CloudFormation-Validate::E1151",
                    reason=f"placeholder VPC until the lookup of {vpc_id} is cached in cdk.context.json",
                )
            )
        return vpc


def _acknowledge(capacity: GpuCapacity | GpuManagedInstancesCapacity, spec: CapacitySpec) -> None:
    """The fleet file's acknowledgments of the capacity's warnings, with their reasons."""
    for rule_id, reason in spec.acknowledge.items():
        FleetPlan.of(capacity).acknowledge(capacity, rule_id, reason)
