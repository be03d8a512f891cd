"""``GpuManagedInstancesCapacity``: GPU hosts for an ECS cluster through ECS Managed Instances."""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
import jsii
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from constructs import Construct

from ..core.aws_text import SECURITY_GROUP_DESCRIPTION
from ..core.capacity_facts import ROOT_VOLUME_MAX_GIB, ROOT_VOLUME_MIN_GIB, HostFacts, host_facts
from ..core.errors import CapacityError
from ..core.gpu_memory import DEFAULT_GPU_MARGIN_MIB
from ..core.mps import require_int
from ..core.planner import MANAGED_INSTANCES
from .capacity import GpuCapacity, PlannedGpuCapacity, evidence_write_denial
from .fleet_plan import FleetPlan
from .refusals import require_kind

_ACCELERATOR_NAMES = {
    name: getattr(ec2.AcceleratorName, name) for name in ("A100", "A10G", "H100", "L4", "L40S", "T4", "V100")
}


@jsii.implements(ec2.IConnectable)  # taken where aws-cdk-lib takes a connectable: allow_from(capacity, ...)
class GpuManagedInstancesCapacity(PlannedGpuCapacity, Construct):
    """GPU hosts that ECS Managed Instances launches, patches and replaces, added to ``cluster`` as a capacity
    provider. AWS owns the host image (there is no AMI to pin) and picks the instance type among the allowed ones.

    Creates a security group with no ingress, and a ``ManagedInstancesCapacityProvider`` restricted to the given
    NVIDIA instance types of one GPU model (``allowed_instance_types``, GPU accelerators of that model), in the VPC's
    private subnets, with its own infrastructure role and instance profile (aws-ecs creates them with AWS's
    managed policies for Managed Instances), on demand or spot.

    The fleet plan plans it like any capacity, against the allowed type that holds the least (AWS may pick any of
    them). Managed Instances takes no instance limit, so there is no ``max_instances`` to derive; give one to have
    the plan check the counts against it.

    :param cluster: the ECS cluster; its VPC hosts the instances.
    :param instance_types: NVIDIA GPU instance types of one GPU model (from the catalog).
    :param name: the capacity's name in the fleet plan; the construct id by default. Unique within the app.
    :param capacity_option_type: on demand (the default) or spot.
    :param max_instances: the most hosts the plan may use (checked, not enforced by ECS); without one, none is
        checked.
    :param gpu_margin_mib: per-GPU memory (MiB) plans keep free below what ECS registers, for the MPS server;
        256 MiB by default.
    :param ecs_gpu_memory_mib: one GPU's memory (MiB) as your cluster's ECS registers it, in place of the library's
        per-model figure; without it, the catalog's figure.
    :param vpc_subnets: where instances run; the VPC's private subnets by default.
    :param capacity_provider_name: the capacity provider's name; CloudFormation names it by default.
    :param task_volume_gib: each host's data volume (GiB), where the images, container logs and model caches go
        (``storageConfiguration.storageSizeGiB``); ECS's default (80 GiB, as aws-cdk-lib's ``taskVolumeStorage``
        documents it) unless given. A host holds every image its tasks run.
    """

    kind = MANAGED_INSTANCES

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: ecs.Cluster,
        instance_types: Sequence[str],
        name: str | None = None,
        capacity_option_type: ecs.CapacityOptionType = ecs.CapacityOptionType.ON_DEMAND,
        max_instances: int | None = None,
        gpu_margin_mib: int = DEFAULT_GPU_MARGIN_MIB,
        ecs_gpu_memory_mib: int | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        capacity_provider_name: str | None = None,
        task_volume_gib: int | None = None,
    ) -> None:
        path = f"{scope.node.path}/{id_}"
        require_kind(
            "vpc_subnets", vpc_subnets, ec2.SubnetSelection, "aws_ec2.SubnetSelection", owner=path, error=CapacityError
        )
        require_kind(
            "capacity_option_type",
            capacity_option_type,
            ecs.CapacityOptionType,
            "aws_ecs.CapacityOptionType",
            owner=path,
            error=CapacityError,
        )
        volume = None
        if task_volume_gib is not None:
            volume = require_int(
                "task_volume_gib",
                task_volume_gib,
                low=ROOT_VOLUME_MIN_GIB,
                high=ROOT_VOLUME_MAX_GIB,
                owner=path,
                error=CapacityError,
            )
        self.facts: HostFacts = host_facts(
            instance_types,
            gpu_margin_mib=gpu_margin_mib,
            ecs_gpu_memory_mib=ecs_gpu_memory_mib,
            owner=path,
        )
        self._plan_arguments(
            scope,
            id_,
            cluster=cluster,
            name=name,
            min_instances=0,  # Managed Instances keeps no minimum
            max_instances=max_instances,
            provider_name=capacity_provider_name,
        )
        super().__init__(scope, id_)
        self.cluster = cluster
        subnets, _ = GpuCapacity._private_subnets(cluster.vpc, vpc_subnets, path)
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=cluster.vpc,
            description=SECURITY_GROUP_DESCRIPTION.fitted(f"ECS Managed Instances GPU hosts of {path}"),
        )
        self._connections = ec2.Connections(security_groups=[self.security_group])
        facts = self.facts
        accelerator = _ACCELERATOR_NAMES.get(facts.gpu_name.replace(" ", ""))
        self.capacity_provider = ecs.ManagedInstancesCapacityProvider(
            self,
            "Provider",
            subnets=cluster.vpc.select_subnets(
                subnet_type=subnets.subnet_type, subnet_group_name=subnets.subnet_group_name, subnets=subnets.subnets
            ).subnets,
            security_groups=[self.security_group],
            capacity_option_type=capacity_option_type,
            capacity_provider_name=capacity_provider_name,
            task_volume_storage=cdk.Size.gibibytes(volume) if volume is not None else None,
            instance_requirements=ec2.InstanceRequirementsConfig(
                v_cpu_count_min=facts.host_cpu_units // 1024,
                memory_min=cdk.Size.mebibytes(facts.host_memory_mib),
                allowed_instance_types=list(facts.instance_types),
                accelerator_types=[ec2.AcceleratorType.GPU],
                accelerator_manufacturers=[ec2.AcceleratorManufacturer.NVIDIA],
                accelerator_names=[accelerator] if accelerator is not None else None,
                accelerator_count_min=facts.gpus_per_instance,
            ),
        )
        self._require_provider_name(path)
        cluster.add_managed_instances_capacity_provider(self.capacity_provider)
        host_role = self.capacity_provider.node.try_find_child("InstanceRole")
        if isinstance(host_role, iam.Role):
            host_role.add_to_policy(evidence_write_denial(cdk.Stack.of(self)))
        FleetPlan.of(self).add_capacity(self)
        self._acknowledge_nag_rules()

    @property
    def connections(self) -> ec2.Connections:
        """The hosts' security group, as aws-ec2's connections: ``other.connections.allow_from(capacity, port)``."""
        return self._connections

    def _acknowledge_nag_rules(self) -> None:
        """Acknowledges cdk-nag's findings on the roles aws-ecs creates for Managed Instances, each with its reason."""
        findings = (
            (
                "ProviderRole",
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/"
                "AmazonECSInfrastructureRolePolicyForManagedInstances]",
                "the ECS infrastructure role for Managed Instances, with the policy AWS maintains for that role",
            ),
            (
                "InstanceRole",
                "AwsSolutions-IAM5[Resource::*]",
                "the Managed Instances host's ECS agent policy as aws-ecs writes it: ecs:DiscoverPollEndpoint and the "
                "agent's logs actions take no resource",
            ),
            (
                "InstanceRole",
                "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:"
                "container-instance/*]",
                "the agent registers and updates container instances whose ids exist only at run time",
            ),
        )
        for child_id, rule, reason in findings:
            role = self.capacity_provider.node.try_find_child(child_id)
            resource = role.node.default_child if role is not None else None
            if resource is not None:
                cdk.Validations.of(resource).acknowledge(cdk.Acknowledgment(id=f"AwsSolutions::{rule}", reason=reason))
