"""The container instances' way out: a host the templates put in a subnet they make with no route out and no VPC
endpoints never registers with ECS. Pure Python, over the templates; ``fleet egress`` reads an existing VPC's
subnets in the account instead.

A host reaches the ECS endpoints through a route out of its subnet (a NAT gateway or instance, a transit gateway, a
peering, a virtual private gateway; an internet gateway where the subnet gives the host a public address), or
through the VPC's interface endpoints (Amazon ECS Developer Guide, "Amazon ECS interface VPC endpoints (AWS
PrivateLink)": ``ecs-agent``, ``ecs-telemetry`` and ``ecs``), with those of the services it pulls from and writes to.
moto starts no host, so the emulator cannot see it: the deploy waits for instances that never register, and the
rolling update for their signal.

A task that mounts an EFS file system reaches its mount targets on NFS (TCP 2049) through the security groups of the
host that mounts it (and, in the awsvpc mode, its own): where none admits the other, each task stops as it starts
with the mount timed out, which no emulator shows either.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..rule_family import PREFIX
from ..shape import camel_keys
from .base import (
    ECS_API,
    Finding,
    Resource,
    ServiceRule,
    Templates,
    construct_path,
    efs_volumes,
    launch_data,
    listed,
    provider_group,
)

HOSTS_REACH_ECS = f"{PREFIX}HostSubnetsReachEcs"
EFS_REACHABLE = f"{PREFIX}EfsReachableFromTasks"
NFS_PORT = 2049  # Amazon EFS User Guide, 'Using VPC security groups': mount targets take NFS on TCP 2049

NEEDED_ENDPOINTS: Mapping[str, str] = {
    "ecs": "the agent registers the host",
    "ecs-agent": "the agent polls for tasks",
    "ecs-telemetry": "the agent reports",
    "ecr.api": "images from ECR, the telemetry daemon's among them",
    "ecr.dkr": "images from ECR",
    "s3": "image layers and the packages the user data installs",
    "logs": "the awslogs driver; a container whose log stream cannot be made does not start",
    "cloudformation": "the host's signal to a rolling update",
}
"""What a host without a route out needs a VPC endpoint for, each with why (the services its user data, agent and
tasks call at start)."""

ROUTE_OUT = ("NatGatewayId", "InstanceId", "NetworkInterfaceId", "TransitGatewayId", "VpcPeeringConnectionId")
"""Route targets that carry a default route out of a private subnet (``GatewayId`` is judged by what it names)."""


def _same(ctx: Templates, a: Resource, value: object, stack: str) -> bool:
    found = ctx.target(value, stack)
    return found is not None and (found.stack, found.logical_id) == (a.stack, a.logical_id)


def _routes_out(ctx: Templates, subnet: Resource) -> bool:
    """Whether the templates give the subnet a default route a host can leave by."""
    tables = [
        ctx.target(a.props.get("RouteTableId"), a.stack)
        for a in ctx.of_type("AWS::EC2::SubnetRouteTableAssociation")
        if _same(ctx, subnet, a.props.get("SubnetId"), a.stack)
    ]
    public = subnet.props.get("MapPublicIpOnLaunch") in (True, "true")
    for route in ctx.of_type("AWS::EC2::Route"):
        if route.props.get("DestinationCidrBlock") != "0.0.0.0/0":
            continue
        if not any(t is not None and _same(ctx, t, route.props.get("RouteTableId"), route.stack) for t in tables):
            continue
        if any(route.props.get(k) is not None for k in ROUTE_OUT):
            return True
        gateway = route.props.get("GatewayId")
        named = ctx.target(gateway, route.stack)
        if gateway is not None and (public or named is None or named.kind != "AWS::EC2::InternetGateway"):
            return True
    return False


def _endpoints(ctx: Templates, subnet: Resource) -> set[str]:
    """The services the subnet's VPC has endpoints for in the templates (``com.amazonaws.<region>.<service>``)."""
    vpc = ctx.text(subnet.props.get("VpcId"), subnet.stack)
    found = set()
    for endpoint in ctx.of_type("AWS::EC2::VPCEndpoint"):
        if ctx.text(endpoint.props.get("VpcId"), endpoint.stack) != vpc:
            continue
        name = ctx.text(endpoint.props.get("ServiceName"), endpoint.stack)
        parts = name.split(".", 3)
        if len(parts) == 4 and parts[:2] == ["com", "amazonaws"]:
            found.add(parts[3])
    return found


def hosts_reach_ecs(ctx: Templates) -> Iterator[Finding]:
    for provider in ctx.of_type("AWS::ECS::CapacityProvider"):
        group = provider_group(ctx, provider)
        if group is None:
            continue  # a group of the account: fleet egress reads its subnets
        subnets = group.props.get("VPCZoneIdentifier")
        for value in subnets if isinstance(subnets, list) else []:
            subnet = ctx.target(value, group.stack)
            if subnet is None or subnet.kind != "AWS::EC2::Subnet" or _routes_out(ctx, subnet):
                continue  # a subnet of the account (fleet egress reads it), or one with a way out
            missing = [name for name in NEEDED_ENDPOINTS if name not in _endpoints(ctx, subnet)]
            if missing:
                yield (
                    group,
                    f"its hosts go in subnet {construct_path(subnet)}, which has no route out "
                    f"and no VPC endpoint for {', '.join(missing)}: they would never register with ECS, and the "
                    "deploy waits for them; put the capacity in subnets with egress (PRIVATE_WITH_EGRESS: a NAT "
                    "gateway), or add the interface and gateway endpoints",
                )
                break  # one finding a group


Key = tuple[str, str]  # a security group of the templates: (stack, logical id)


def _groups(ctx: Templates, values: Any, stack: str) -> set[Key] | None:
    """The security groups of the templates ``values`` name; ``None`` where one is not the templates' (imported)."""
    out = set()
    for value in listed(values):
        group = ctx.target(value, stack)
        if group is None or group.kind != "AWS::EC2::SecurityGroup":
            return None
        out.add((group.stack, group.logical_id))
    return out


def _host_groups(ctx: Templates, service: Resource) -> set[Key] | None:
    """The security groups of the hosts a service's capacity providers launch (their launch templates' or launch
    configurations'); ``None`` where one cannot be read, or the service names no strategy (its cluster's default)."""
    out: set[Key] = set()
    strategy = listed(service.props.get("CapacityProviderStrategy"))
    if not strategy:
        return None
    for item in strategy:
        group = provider_group(ctx, ctx.target(camel_keys(item).get("capacityProvider"), service.stack))
        if group is None:
            return None
        data = launch_data(ctx, group)
        written = data.get("securityGroupIds") or [
            g for nic in listed(data.get("networkInterfaces")) for g in listed(camel_keys(nic).get("groups"))
        ]
        configuration = ctx.target(group.props.get("LaunchConfigurationName"), group.stack)
        if not written and configuration is not None:
            written = configuration.props.get("SecurityGroups")
        found = _groups(ctx, written, group.stack)
        if found is None:
            return None
        out |= found
    return out


def _carries_nfs(rule: Mapping[str, Any]) -> bool:
    protocol = str(rule.get("IpProtocol", "")).lower()
    if protocol in ("-1", "all"):
        return True
    if protocol not in ("tcp", "6"):
        return False
    try:
        return int(rule.get("FromPort", -1)) <= NFS_PORT <= int(rule.get("ToPort", -1))
    except (TypeError, ValueError):
        return True  # a port chosen at deploy: not judged


def _rules(ctx: Templates, group: Key, key: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    """A security group's rules one way (``SecurityGroupIngress`` or ``SecurityGroupEgress``), inline or of their
    own, each with the stack its references are read in."""
    resource = ctx.resource(*group)
    for rule in listed((resource.props if resource else {}).get(key) or []):
        if isinstance(rule, Mapping):
            yield rule, group[0]
    for standalone in ctx.of_type(f"AWS::EC2::{key}"):
        if _groups(ctx, standalone.props.get("GroupId"), standalone.stack) == {group}:
            yield standalone.props, standalone.stack


def _admits(ctx: Templates, groups: set[Key], key: str, peers: set[Key], peer_key: str) -> bool:
    """Whether a rule of ``groups`` one way carries NFS to or from ``peers``, or an address range (not judged)."""
    for group in groups:
        for rule, stack in _rules(ctx, group, key):
            if not _carries_nfs(rule):
                continue
            if peer_key not in rule:
                return True  # an address range or a prefix list: the synth cannot tell whom it holds
            named = _groups(ctx, rule[peer_key], stack)
            if named is None or named & peers:
                return True
    return False


def _egress_open(ctx: Templates, groups: set[Key], targets: set[Key]) -> bool:
    """Whether NFS may leave ``groups`` for ``targets``: a group with no egress rules written keeps EC2's default, all
    traffic out, and a host's groups' rules add up."""
    if any(next(_rules(ctx, g, "SecurityGroupEgress"), None) is None for g in groups):
        return True
    return _admits(ctx, groups, "SecurityGroupEgress", targets, "DestinationSecurityGroupId")


def efs_reachable(ctx: Templates) -> Iterator[Finding]:
    for service in ctx.of_type("AWS::ECS::Service"):
        task = ctx.target(service.props.get("TaskDefinition"), service.stack)
        if task is None:
            continue
        for _, config in efs_volumes(task):
            system = ctx.target(config.get("filesystemid"), task.stack)
            if system is None or system.kind != "AWS::EFS::FileSystem":
                continue  # no EFS, or a file system of the account
            yield from _efs_findings(ctx, service, system)


def _efs_findings(ctx: Templates, service: Resource, system: Resource) -> Iterator[Finding]:
    targets = [
        m for m in ctx.of_type("AWS::EFS::MountTarget") if ctx.target(m.props.get("FileSystemId"), m.stack) is system
    ]
    where = f"its tasks mount EFS file system {construct_path(system)}"
    if not targets:
        yield (
            service,
            f"{where}, which has no mount target in the templates, so no host can mount it; add one per subnet",
        )
        return
    target_groups: set[Key] = set()
    for target in targets:
        found = _groups(ctx, target.props.get("SecurityGroups"), target.stack)
        if found is None:
            return  # a group of the account: not judged
        target_groups |= found
    hosts = _host_groups(ctx, service)
    if not hosts:
        return  # the hosts, which mount the file system on EC2, cannot be read
    awsvpc = camel_keys(camel_keys(service.props.get("NetworkConfiguration")).get("awsvpcConfiguration"))
    clients = [g for g in (hosts, _groups(ctx, awsvpc.get("securityGroups"), service.stack)) if g]
    names = ", ".join(sorted(construct_path(r) for g in clients for k in g if (r := ctx.resource(*k)) is not None))
    if not any(_admits(ctx, target_groups, "SecurityGroupIngress", g, "SourceSecurityGroupId") for g in clients):
        yield (
            service,
            f"{where}, whose mount targets' security groups admit no NFS (TCP {NFS_PORT}) from the hosts' or the "
            f"tasks' groups ({names}): the mount times out and each task stops as it starts; allow it "
            "(file_system.connections.allow_default_port_from(capacity), or from the service)",
        )
    elif not any(_egress_open(ctx, g, target_groups) for g in clients):
        yield (
            service,
            f"{where}, and the hosts' and tasks' security groups ({names}) let no NFS (TCP {NFS_PORT}) out to its "
            "mount targets: the mount times out; allow it out (connections.allow_to_default_port(file_system))",
        )


NETWORK_RULES: tuple[ServiceRule, ...] = (
    ServiceRule(
        HOSTS_REACH_ECS,
        "Amazon ECS (the container agent)",
        "the subnets of a capacity provider's Auto Scaling group, where the templates make them, have a route out or "
        "VPC endpoints for " + ", ".join(NEEDED_ENDPOINTS),
        "Amazon ECS Developer Guide, 'Amazon ECS interface VPC endpoints (AWS PrivateLink)': container instances in "
        f"subnets without internet access reach ECS through the ecs-agent, ecs-telemetry and ecs endpoints; {ECS_API}, "
        "RegisterContainerInstance (called by the agent at start)",
        hosts_reach_ecs,
    ),
    ServiceRule(
        EFS_REACHABLE,
        "Amazon ECS and Amazon EFS",
        f"a service whose tasks mount an EFS file system of the templates reaches its mount targets on NFS (TCP "
        f"{NFS_PORT}): the targets' security groups admit the hosts' or the tasks' groups, and those let it out",
        "AWS Knowledge Center, 'How do I mount an Amazon EFS file system on an Amazon ECS container or task running on "
        "Amazon EC2?': the file system's security groups \"must allow inbound connections on port 2049 ... from the "
        'ECS container instance and the ECS task", and theirs "must allow outbound connections on port 2049"; no '
        "emulator checks reachability: the task stops at start with the mount timed out",
        efs_reachable,
    ),
)
