"""``GpuCapacity``: GPU hosts for an ECS cluster, on a pinned AL2023 GPU AMI, as a capacity provider."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct, IConstruct

from ..core import ami_release, aws_text
from ..core.capacity_facts import (
    RESERVED_HOST_PORTS,
    ROOT_VOLUME_DEFAULT_GIB,
    ROOT_VOLUME_MAX_GIB,
    ROOT_VOLUME_MIN_GIB,
    HostFacts,
    host_facts,
    log_drivers_in_user_data,
    reserved_memory_in_user_data,
    reserved_ports_in_user_data,
)
from ..core.errors import CapacityError
from ..core.gpu_memory import DEFAULT_GPU_MARGIN_MIB
from ..core.host_boot import ECS_CONFIG, IMDS_BLOCK, ROLL_SIGNAL_MINUTES, registered_signal_commands
from ..core.mps import MPS_HOSTS_EXPRESSION, require_int
from ..core.placement import ZONES
from ..core.planner import EC2
from ..core.quotas import MAX_INSTANCES_PER_CLUSTER, reserved_provider_prefix
from ..core.rules import UNVERIFIED_INSTANCE_FAMILY, roll_in_service
from ..core.telemetry import EVIDENCE_LOG_GROUP_PREFIX, STOPPED_TASKS_LOG_GROUP_PREFIX
from .ami import GpuAmi
from .fleet_plan import FleetPlan
from .refusals import kind_of, require_kind, require_name

UNVERIFIED_FAMILY_WARNING = UNVERIFIED_INSTANCE_FAMILY

# AWS advises suspending these during a rolling update (Knowledge Center, "Why does my CloudFormation stack fail to
# update an Auto Scaling group with a rolling update?"; AWS::AutoScaling::AutoScalingGroup UpdatePolicy reference):
# a scaling action or a health replacement mid-update can fail it. AlarmNotification is one: ECS managed scaling does
# not add hosts while a roll is under way, so each replaced host is held in service (MinInstancesInService) instead.
ROLL_SUSPENDED = (
    autoscaling.ScalingProcess.HEALTH_CHECK,
    autoscaling.ScalingProcess.REPLACE_UNHEALTHY,
    autoscaling.ScalingProcess.AZ_REBALANCE,
    autoscaling.ScalingProcess.ALARM_NOTIFICATION,
    autoscaling.ScalingProcess.SCHEDULED_ACTIONS,
)


class PlannedGpuCapacity:
    """What both GPU capacity constructs share: the checks on their plan arguments, their name in the fleet plan,
    and how a service's capacity provider strategy reaches them."""

    kind: str
    node: Any  # the construct's, in the classes that mix this in
    capacity_provider: Any  # an AsgCapacityProvider or a ManagedInstancesCapacityProvider
    _name: str
    _min_instances: int
    _max_instances: int | None
    _provider_name: str | None
    _zones: int = ZONES  # a GpuCapacity counts its subnets'

    def _plan_arguments(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: Any,
        name: str | None,
        min_instances: int,
        max_instances: int | None,
        provider_name: str | None,
    ) -> None:
        """Checks what the fleet plan relies on, before any resource is built."""
        path = f"{scope.node.path}/{id_}"
        quota = MAX_INSTANCES_PER_CLUSTER  # the ECS quota "container instances per cluster"
        self._min_instances = require_int(
            "min_instances", min_instances, low=0, high=quota, owner=path, error=CapacityError
        )
        self._max_instances = (
            None
            if max_instances is None
            else require_int("max_instances", max_instances, low=1, high=quota, owner=path, error=CapacityError)
        )
        if self._max_instances is not None and self._max_instances < self._min_instances:
            raise CapacityError(
                f"{path}: max_instances {self._max_instances} is below min_instances {self._min_instances}; "
                "raise max_instances or lower min_instances"
            )
        self._name = id_ if name is None else require_name(name, owner=path, error=CapacityError)
        if provider_name is not None and not isinstance(provider_name, str):
            raise CapacityError(
                f"{path}: capacity_provider_name must be a string, got {kind_of(provider_name)} {provider_name!r:.80}"
            )
        if FleetPlan.of(scope).capacity_name_taken(self._name):
            raise CapacityError(
                f"{path}: another GPU capacity of this app (or cdk.Stage) is already named {self._name!r}; plans "
                "are keyed by name, so give this one another construct id or name="
            )
        if not isinstance(cluster, ecs.Cluster):
            imported = _imported_cluster_name(cluster)
            got = f"an imported cluster ({imported!r})" if imported is not None else kind_of(cluster)
            raise CapacityError(
                f"{path}: cluster must be an aws_ecs.Cluster created in this app (the capacity provider is added "
                f"to it), got {got}; create the capacity in the app that creates the cluster, or create the "
                "cluster here"
            )
        self._provider_name = provider_name

    def _require_provider_name(self, path: str) -> None:
        """Refuses, as rendered, a capacity provider name ECS would refuse at deploy. Without a name, CloudFormation
        names the provider after the stack, and CDK renames it (``cp-...``) only for a lowercase reserved prefix: a
        stack named ``EcsModels`` synthesizes and then fails to deploy (``quotas.RESERVED_PROVIDER_PREFIXES``)."""
        resource = next(c for c in self.capacity_provider.node.find_all() if isinstance(c, ecs.CfnCapacityProvider))
        stack = cdk.Stack.of(self.capacity_provider).stack_name
        name = resource.name
        if name is None and not cdk.Token.is_unresolved(stack) and (prefix := reserved_provider_prefix(stack)):
            raise CapacityError(
                f"{path}: the stack's name {stack!r} starts with {prefix!r}, and CloudFormation names the capacity "
                "provider after the stack, which ECS refuses (a provider's name may not start with aws, ecs or "
                "fargate, in any case); give capacity_provider_name=, or name the stack otherwise"
            )
        if isinstance(name, str) and (prefix := reserved_provider_prefix(name)):
            raise CapacityError(
                f"{path}: capacity_provider_name {name!r} starts with {prefix!r}, which ECS refuses (a provider's "
                "name may not start with aws, ecs or fargate, in any case); choose another name"
            )

    @property
    def plan_name(self) -> str:
        """The capacity's name in the fleet plan."""
        return self._name

    @property
    def min_instances(self) -> int:
        return self._min_instances

    @property
    def given_max_instances(self) -> int | None:
        """``max_instances`` as given; ``None`` when the plan derives it (or, on Managed Instances, has none)."""
        return self._max_instances

    @property
    def log_drivers(self) -> tuple[str, ...] | None:
        """The log drivers the hosts' agent registers; ``None``: the plan's default for the kind."""
        return None

    @property
    def agent_reserved_memory_mib(self) -> int:
        """Memory (MiB) the hosts' agent keeps from what it registers for tasks (ECS_RESERVED_MEMORY); 0 unless the
        capacity's user data sets it."""
        return 0

    @property
    def reserved_ports(self) -> tuple[int, ...]:
        """The TCP host ports the hosts' agent keeps from tasks: its defaults unless the user data sets them."""
        return RESERVED_HOST_PORTS

    @property
    def zones(self) -> int:
        """The Availability Zones the hosts' subnets span, over which the plan replays ECS's placement."""
        return self._zones

    @property
    def provider_names(self) -> tuple[str, ...]:
        """How a capacity provider strategy may name this capacity's provider: its reference, or the literal name."""
        given = self._provider_name
        return (self.capacity_provider.capacity_provider_name, *([given] if given else []))

    def capacity_provider_strategies(self, *, weight: int = 1) -> list[ecs.CapacityProviderStrategy]:
        """A strategy that runs a service's tasks on this capacity: pass it as ``capacity_provider_strategies`` to
        an ECS service or an aws-ecs-patterns service, whose tasks the fleet plan then counts here. ``weight`` is
        ECS's, 0 to 1000 (botocore's ECS model, CapacityProviderStrategyItem)."""
        weight = require_int("weight", weight, low=0, high=1000, owner=self.node.path, error=CapacityError)
        return [
            ecs.CapacityProviderStrategy(capacity_provider=self.capacity_provider.capacity_provider_name, weight=weight)
        ]


def _imported_cluster_name(cluster: object) -> str | None:
    """The name of a cluster an app imports (``Cluster.from_cluster_attributes``, ``from_cluster_arn``: jsii gives
    them as a proxy of ``ecs.ICluster``), or ``None`` for anything else."""
    try:
        name = cluster.cluster_name if not isinstance(cluster, str) else None  # type: ignore[attr-defined]
    except Exception:  # a proxy whose getter fails is not a cluster to name
        return None
    return name if isinstance(name, str) else None


def evidence_write_denial(stack: cdk.Stack) -> iam.PolicyStatement:
    """Denies a host role writing what ``evaluate`` reads: the telemetry daemon's evidence log groups and the
    stopped-task log groups (``core.telemetry``). The hosts write containers' logs with their role; only the daemon's
    task role may write the evidence, and only EventBridge the stopped tasks."""
    return iam.PolicyStatement(
        effect=iam.Effect.DENY,
        actions=["logs:CreateLogStream", "logs:PutLogEvents"],
        resources=[
            stack.format_arn(
                service="logs",
                resource="log-group",
                resource_name=f"{prefix}*",
                arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
            )
            for prefix in (EVIDENCE_LOG_GROUP_PREFIX, STOPPED_TASKS_LOG_GROUP_PREFIX)
        ],
    )


@jsii.implements(ec2.IConnectable)  # taken where aws-cdk-lib takes a connectable: allow_from(capacity, ...)
class GpuCapacity(PlannedGpuCapacity, Construct):
    """GPU hosts on a pinned ECS-optimized AL2023 GPU AMI, added to ``cluster`` as a capacity provider.

    Creates a launch template (pinned AMI, IAM role with the ECS agent's and SSM Session Manager's
    permissions, IMDSv2 required with hop limit 1, encrypted gp3 root volume, no SSH key), an Auto Scaling
    group over the VPC's private subnets, and an ``AsgCapacityProvider`` with managed scaling, managed
    termination protection and managed draining. A change of AMI release or instance type rolls the hosts one at
    a time (a CloudFormation rolling update), each host's tasks drained to others before it goes.

    :param cluster: the ECS cluster; its VPC hosts the instances.
    :param instance_types: one or more GPU instance types, all with the same GPU model and memory. Several
        types add availability; plans use the smallest.
    :param ami: the AMI pin; defaults to ``GpuAmi.release()``, the newest release this library knows.
    :param name: the capacity's name in the fleet plan; the construct id by default. Unique within the app.
    :param min_instances: instances kept running; 0 by default (scale from zero).
    :param max_instances: the most instances; when left out, the fleet plan derives it so that every service
        on the capacity, at its largest count, fits during a deployment's surge, and above ``min_instances`` (at
        least 1), so a host roll keeps every minimum host in service. A given ``max_instances`` equal to
        ``min_instances`` makes a roll keep one host fewer in service (``RollTakesHostOutOfService``, a warning):
        CloudFormation launches a replacement only below MaxSize.
    :param gpu_margin_mib: per-GPU memory (MiB) plans keep free below what ECS registers, for the MPS server,
        which lives outside every container's limit (256 MiB by default).
    :param ecs_gpu_memory_mib: one GPU's memory (MiB) as your cluster's ECS registers it (``totalMemoryInMiB`` in
        ``ecs-gpu-sharing cluster status``), in place of the library's per-model figure; without it, the catalog's.
    :param host_memory_reserve_mib: host memory (MiB) not offered to tasks; about 6% of the host by default.
    :param root_volume_gib: root volume size (GiB); 200 GiB by default, room for model images.
    :param vpc_subnets: where instances run; the VPC's private subnets by default (two AZs at least).
    :param capacity_provider_name: the capacity provider's name; CloudFormation names it by default.
    :param notification_topic: an SNS topic for the group's launch, termination and failure events; without
        one, the group sends none (ECS managed scaling drives it, and its activity history keeps the record).
    """

    kind = EC2

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: ecs.Cluster,
        instance_types: Sequence[str],
        ami: GpuAmi | None = None,
        name: str | None = None,
        min_instances: int = 0,
        max_instances: int | None = None,
        gpu_margin_mib: int = DEFAULT_GPU_MARGIN_MIB,
        ecs_gpu_memory_mib: int | None = None,
        host_memory_reserve_mib: int | None = None,
        root_volume_gib: int = ROOT_VOLUME_DEFAULT_GIB,
        vpc_subnets: ec2.SubnetSelection | None = None,
        capacity_provider_name: str | None = None,
        notification_topic: sns.ITopic | None = None,
    ) -> None:
        path = f"{scope.node.path}/{id_}"
        require_kind(
            "vpc_subnets", vpc_subnets, ec2.SubnetSelection, "aws_ec2.SubnetSelection", owner=path, error=CapacityError
        )
        require_kind(
            "notification_topic", notification_topic, "topic_arn", "aws_sns.ITopic", owner=path, error=CapacityError
        )
        self.facts: HostFacts = host_facts(
            instance_types,
            gpu_margin_mib=gpu_margin_mib,
            ecs_gpu_memory_mib=ecs_gpu_memory_mib,
            host_memory_reserve_mib=host_memory_reserve_mib,
            owner=path,
        )
        self._plan_arguments(
            scope,
            id_,
            cluster=cluster,
            name=name,
            min_instances=min_instances,
            max_instances=max_instances,
            provider_name=capacity_provider_name,
        )
        root = require_int(
            "root_volume_gib",
            root_volume_gib,
            low=ROOT_VOLUME_MIN_GIB,
            high=ROOT_VOLUME_MAX_GIB,
            owner=path,
            error=CapacityError,
        )
        if not isinstance(ami, GpuAmi | None):
            raise CapacityError(f"{path}: ami must be a GpuAmi (GpuAmi.release(...)), got {ami!r}")
        self.ami = ami or GpuAmi.release()
        super().__init__(scope, id_)

        subnets, self._zones = self._private_subnets(cluster.vpc, vpc_subnets, path)
        self.cluster = cluster
        self._plan = FleetPlan.of(self)

        role, user_data = self._launch_template(cluster, path, root)
        self.auto_scaling_group = self._group(cluster, subnets, notification_topic)
        group_resource = self.auto_scaling_group.node.default_child
        assert isinstance(group_resource, autoscaling.CfnAutoScalingGroup)
        stack = cdk.Stack.of(self)
        user_data.add_commands(
            *registered_signal_commands(stack.stack_name, stack.get_logical_id(group_resource), stack.region)
        )
        self.capacity_provider = ecs.AsgCapacityProvider(
            self,
            "Provider",
            auto_scaling_group=self.auto_scaling_group,
            capacity_provider_name=capacity_provider_name,
            enable_managed_scaling=True,
            enable_managed_termination_protection=True,
            enable_managed_draining=True,
            target_capacity_percent=100,
        )
        self._require_provider_name(path)
        cluster.add_asg_capacity_provider(self.capacity_provider)
        self._plan.add_capacity(self)
        self._acknowledge_nag_rules(role, notification_topic is None)
        for note in self.facts.unverified:
            cdk.Annotations.of(self).add_warning_v2(
                UNVERIFIED_FAMILY_WARNING,
                f"{note}; ECS GPU sharing should work, but AWS has not named this family: test before relying "
                f"on it, then acknowledge '{UNVERIFIED_FAMILY_WARNING}'",
            )

    @property
    def connections(self) -> ec2.Connections:
        """The hosts' security group, as aws-ec2's connections: ``other.connections.allow_from(capacity, port)``."""
        return self._connections

    def _launch_template(self, cluster: ecs.Cluster, path: str, root: int) -> tuple[iam.Role, ec2.UserData]:
        """The hosts' launch template (the pinned AMI, IMDSv2 only, an encrypted root volume), their role, their
        security group, and the user data that writes ECS's settings."""
        role = iam.Role(
            self,
            "InstanceRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=aws_text.IAM_ROLE_DESCRIPTION.fitted(f"ECS GPU hosts of {path}"),
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSSMManagedInstanceCore")],
        )
        # The hosts write containers' logs (the awslogs driver) with this role, but never the telemetry daemon's
        # evidence: only the daemon's task role may write there, so no container can forge what evaluate reads.
        role.add_to_policy(evidence_write_denial(cdk.Stack.of(self)))
        security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=cluster.vpc,
            description=aws_text.SECURITY_GROUP_DESCRIPTION.fitted(f"ECS GPU hosts of {path}"),
            allow_all_outbound=True,
        )
        # The hosts' security group joins the cluster's connections, so a load balancer's target group (or
        # `cluster.connections.allow_from`) opens it to bridge-mode tasks' host ports. The group comes from the
        # launch template, which the Auto Scaling group's own connections do not see.
        self._connections = ec2.Connections(security_groups=[security_group])
        cluster.connections.add_security_group(security_group)
        user_data = ec2.UserData.for_linux()
        user_data.add_commands(*(f"echo {line} >> /etc/ecs/ecs.config" for line in ECS_CONFIG), *IMDS_BLOCK)
        self.launch_template = ec2.LaunchTemplate(
            self,
            "LaunchTemplate",
            machine_image=self.ami.machine_image(self),
            role=role,
            security_group=security_group,
            user_data=user_data,
            require_imdsv2=True,
            http_put_response_hop_limit=1,
            http_tokens=ec2.LaunchTemplateHttpTokens.REQUIRED,
            block_devices=[
                ec2.BlockDevice(
                    device_name=ami_release.ROOT_DEVICE,
                    volume=ec2.BlockDeviceVolume.ebs(
                        root,
                        volume_type=ec2.EbsDeviceVolumeType.GP3,
                        encrypted=True,
                        delete_on_termination=True,
                    ),
                )
            ],
        )
        return role, user_data

    def _group(
        self, cluster: ecs.Cluster, subnets: ec2.SubnetSelection, notification_topic: sns.ITopic | None
    ) -> autoscaling.AutoScalingGroup:
        """The Auto Scaling group over the launch template, on demand, rolled one host at a time on a change."""
        return autoscaling.AutoScalingGroup(
            self,
            "Group",
            vpc=cluster.vpc,
            vpc_subnets=subnets,
            mixed_instances_policy=autoscaling.MixedInstancesPolicy(
                launch_template=self.launch_template,
                launch_template_overrides=[
                    autoscaling.LaunchTemplateOverrides(instance_type=ec2.InstanceType(name))
                    for name in self.facts.instance_types
                ],
                instances_distribution=autoscaling.InstancesDistribution(
                    on_demand_percentage_above_base_capacity=100,
                    on_demand_allocation_strategy=autoscaling.OnDemandAllocationStrategy.PRIORITIZED,
                ),
            ),
            min_capacity=self._min_instances,
            # Resolved at synth, after a plan may have derived it.
            max_capacity=cdk.Lazy.number(_MaxCapacity(self)),
            notifications=(
                [autoscaling.NotificationConfiguration(topic=notification_topic)] if notification_topic else None
            ),
            # A new AMI release or instance type changes the launch template or its overrides, and CloudFormation
            # then replaces the hosts one at a time, each replacement held until its ECS agent has registered (a
            # signal); ECS managed draining (below) moves each old host's tasks to the others before it goes.
            update_policy=autoscaling.UpdatePolicy.rolling_update(
                max_batch_size=1,
                # Below MaxSize, which a plan may derive: resolved at synth (core.rules.roll_in_service).
                min_instances_in_service=cdk.Lazy.number(_RollInService(self)),
                wait_on_resource_signals=True,
                pause_time=cdk.Duration.minutes(ROLL_SIGNAL_MINUTES),
                suspend_processes=list(ROLL_SUSPENDED),
            ),
        )

    def _acknowledge_nag_rules(self, role: iam.Role, no_notifications: bool) -> None:
        """Acknowledges cdk-nag's AwsSolutions findings that this design accepts, each with its reason."""

        def ack(scope: IConstruct, rule: str, reason: str) -> None:
            cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=f"AwsSolutions::{rule}", reason=reason))

        ack(
            role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore]",
            "SSM Session Manager replaces SSH keys on GPU hosts. AmazonSSMManagedInstanceCore (AWS maintains it) "
            "lets the host's SSM agent register and report (ssm:UpdateInstanceInformation, associations, inventory), "
            "open Session Manager channels (ssmmessages:*, ec2messages:*) and read any SSM parameter and document "
            "(ssm:GetParameter(s), ssm:GetDocument on *): keep secrets in Secrets Manager or SecureString "
            "parameters under a KMS key the hosts' role cannot use",
        )
        policy = role.node.try_find_child("DefaultPolicy")
        if policy is not None:
            reason = (
                "the ECS agent's policy as aws-ecs writes it: ecs:Submit* is limited to this cluster and ecs:Poll to "
                "it by condition; ecs:DiscoverPollEndpoint and ecr:GetAuthorizationToken take no resource; "
                "logs:CreateLogStream and logs:PutLogEvents are on * because the awslogs driver on the host writes "
                "whichever log group each task definition names (unknown here), except the telemetry evidence "
                "groups, which this role is denied"
            )
            ack(policy, "AwsSolutions-IAM5[Action::ecs:Submit*]", reason)
            ack(policy, "AwsSolutions-IAM5[Resource::*]", reason)
        group = self.auto_scaling_group.node.default_child
        assert group is not None
        ack(
            group,
            "AwsSolutions-EC26",
            "the rule cannot read a launch template given by reference; this group's launch template encrypts "
            "its root volume (gp3, encrypted)",
        )
        if no_notifications:
            ack(
                group,
                "AwsSolutions-AS3",
                "no notification_topic was given: ECS managed scaling drives this group and its activity history "
                "records every launch and termination",
            )

    @staticmethod
    def _private_subnets(
        vpc: ec2.IVpc, selection: ec2.SubnetSelection | None, path: str
    ) -> tuple[ec2.SubnetSelection, int]:
        """The hosts' subnets, and the Availability Zones they span (at least two)."""
        chosen = selection or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
        try:
            selected = vpc.select_subnets(
                subnet_type=chosen.subnet_type,
                subnet_group_name=chosen.subnet_group_name,
                subnets=chosen.subnets,
                availability_zones=chosen.availability_zones,
                one_per_az=chosen.one_per_az,
                subnet_filters=chosen.subnet_filters,
            )
        except RuntimeError as error:
            raise CapacityError(
                f"{path}: the VPC has no subnets for the GPU hosts ({str(error).splitlines()[0]}); "
                "give the VPC private subnets with egress, or pass vpc_subnets"
            ) from None
        zones = selected.availability_zones
        if len(set(zones)) < 2:
            raise CapacityError(
                f"{path}: the GPU hosts' subnets span {len(set(zones))} availability zone(s); "
                "use subnets in at least two AZs, so a zone outage or a capacity shortage does not stop the fleet"
            )
        return chosen, len(set(zones))

    @property
    def log_drivers(self) -> tuple[str, ...]:
        """The log drivers the hosts' agent registers: the AMI's, or those a line of the launch template's user data
        sets (ECS_AVAILABLE_LOGGING_DRIVERS), read when the plan runs at synth; ``()`` where it cannot be read."""
        return log_drivers_in_user_data(self._user_data())

    @property
    def agent_reserved_memory_mib(self) -> int:
        """What a line of the launch template's user data keeps from the memory the agent registers
        (ECS_RESERVED_MEMORY), read when the plan runs at synth; the plan offers tasks that much less a host."""
        return reserved_memory_in_user_data(self._user_data())

    @property
    def reserved_ports(self) -> tuple[int, ...]:
        """The TCP host ports the hosts' agent keeps from tasks: ECS_RESERVED_PORTS where a line of the launch
        template's user data sets it, else the agent's defaults; read when the plan runs at synth."""
        return reserved_ports_in_user_data(self._user_data())

    def _user_data(self) -> str:
        """The launch template's user data as the hosts will run it (references as CDK renders them)."""
        user_data = self.launch_template.user_data
        return user_data.render() if user_data is not None else ""

    @property
    def max_instances(self) -> int:
        """The most instances: as given, else derived by the fleet plan. Read it at synth, once services exist."""
        return self._plan.max_instances(self)

    @staticmethod
    def mps_placement_constraints() -> list[ecs.PlacementConstraint]:
        """Keeps MPS tasks on hosts whose ECS agent advertises GPU sharing (``ecs.capability.gpu-sharing-mps``).

        ``SharedGpuService`` does not add it: a service on this capacity's provider runs only on its hosts, all on a
        sharing AMI, and a ``memberOf`` constraint can stop managed scaling from launching the first host ("Amazon
        ECS managed scaling behavior"). For a service placed some other way, on a cluster with other hosts."""
        return [ecs.PlacementConstraint.member_of(MPS_HOSTS_EXPRESSION)]

    @property
    def gpu_name(self) -> str:
        return self.facts.gpu_name

    @property
    def gpus_per_instance(self) -> int:
        return self.facts.gpus_per_instance

    @property
    def ec2_gpu_memory_mib(self) -> int:
        """Memory per GPU as EC2 lists it."""
        return self.facts.ec2_gpu_memory_mib

    @property
    def usable_gpu_memory_mib(self) -> int:
        """Memory per GPU that plans may fill: what ECS registers less ``gpu_margin_mib``."""
        return self.facts.usable_gpu_memory_mib

    @property
    def host_cpu_units(self) -> int:
        """CPU units one instance offers to tasks."""
        return self.facts.host_cpu_units

    @property
    def host_memory_mib(self) -> int:
        """Memory (MiB) one instance offers to tasks."""
        return self.facts.host_memory_mib


@jsii.implements(cdk.IStableNumberProducer)
class _RollInService:
    def __init__(self, capacity: GpuCapacity) -> None:
        self._capacity = capacity

    def produce(self) -> int:
        return roll_in_service(self._capacity.min_instances, self._capacity.max_instances)


@jsii.implements(cdk.IStableNumberProducer)
class _MaxCapacity:
    def __init__(self, capacity: GpuCapacity) -> None:
        self._capacity = capacity

    def produce(self) -> int:
        return self._capacity.max_instances
