"""How the fleet's services are reached: shared load balancers (built with the cluster) and each service's route.

An application load balancer routes to several services by path or host, one listener rule each, in the order
the services appear in the fleet file; a network load balancer gives each service a listener port. aws-ecs-
patterns builds one load balancer per service, and its shared-balancer patterns take no capacity provider
strategy (they would bypass the GPU capacity), so the balancers are built here from aws-elasticloadbalancingv2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_s3 as s3
from constructs import Construct, IConstruct

from ecs_gpu_sharing import GpuCapacity, GpuManagedInstancesCapacity
from ecs_gpu_sharing.core.fleet import (
    APPLICATION,
    BRIDGE,
    CONTAINER_NAME,
    LOAD_BALANCER_METADATA,
    LoadBalancerSpec,
    ServiceSpec,
)

# The host ports ECS maps a bridge-mode container's dynamic port mapping to (aws-ecs opens the same range).
EPHEMERAL_PORTS = ec2.Port.tcp_range(32768, 65535)
ACCESS_LOG_DAYS = 90
# Model servers answer within seconds; ELB's default of 300 s would slow every deployment by five minutes.


@dataclass
class Balancer:
    spec: LoadBalancerSpec
    load_balancer: elbv2.ApplicationLoadBalancer | elbv2.NetworkLoadBalancer
    listener: elbv2.ApplicationListener | None  # the ALB's listener that carries the services' rules
    # An ALB's awsvpc targets join this group, and the ALB sends to it by one outbound rule (open_task_ports).
    targets: ec2.SecurityGroup | None = None

    @property
    def security_group(self) -> ec2.ISecurityGroup:
        return self.load_balancer.connections.security_groups[0]


def _ack(scope: IConstruct, pack: str, rule: str, reason: str) -> None:
    cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=f"{pack}::{pack}-{rule}", reason=reason))


def build_load_balancers(scope: Construct, vpc: ec2.IVpc, specs: Mapping[str, LoadBalancerSpec]) -> dict[str, Balancer]:
    """The fleet's load balancers, with one access-log bucket for them all; none when the fleet declares none."""
    if not specs:
        return {}
    logs = _access_log_bucket(scope)
    out = {}
    for name, spec in specs.items():
        if spec.type == APPLICATION:
            out[name] = _application(scope, vpc, spec, logs)
        else:
            out[name] = _network(scope, vpc, spec, logs)
        cdk.CfnOutput(out[name].load_balancer, "DnsName", value=out[name].load_balancer.load_balancer_dns_name)
        # Its fleet-file name, for the pre-deploy check that reads the deployed template (fleet balancers).
        resource = out[name].load_balancer.node.default_child
        assert isinstance(resource, cdk.CfnResource)
        resource.add_metadata(LOAD_BALANCER_METADATA, name)
    return out


def _access_log_bucket(scope: Construct) -> s3.IBucket | None:
    """One bucket for every balancer's access logs, in an environment-bound app. Elastic Load Balancing writes
    them from a per-region account, so an environment-agnostic app cannot turn them on (aws-elasticloadbalancingv2
    refuses): its balancers acknowledge that instead."""
    if cdk.Token.is_unresolved(cdk.Stack.of(scope).region):
        return None
    logs = s3.Bucket(
        scope,
        "AccessLogs",
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        encryption=s3.BucketEncryption.S3_MANAGED,  # ELB access logs support only S3-managed keys
        enforce_ssl=True,
        versioned=True,
        # Versioned, an expired log only becomes a noncurrent version, kept (and paid for) until its own expiration.
        lifecycle_rules=[
            s3.LifecycleRule(
                expiration=cdk.Duration.days(ACCESS_LOG_DAYS),
                noncurrent_version_expiration=cdk.Duration.days(1),
            )
        ],
    )
    _ack(logs, "AwsSolutions", "S1", "this bucket holds access logs; logging its own access would log the logs")
    for rule, reason in (
        ("S3BucketLoggingEnabled", "this bucket holds access logs; logging its own access would log the logs"),
        ("S3BucketReplicationEnabled", f"access logs kept {ACCESS_LOG_DAYS} days in one region; not replicated"),
        ("S3DefaultEncryptionKMS", "ELB writes access logs only to buckets encrypted with S3-managed keys"),
    ):
        _ack(logs, "NIST.800.53.R5", rule, reason)
    return logs


def _log_access(lb: elbv2.ApplicationLoadBalancer | elbv2.NetworkLoadBalancer, logs: s3.IBucket | None) -> None:
    if logs is not None:
        lb.log_access_logs(logs, prefix=lb.node.id)
        return
    reason = (
        "an environment-agnostic app cannot turn on load balancer access logs (they need the region); set account "
        "and region in the fleet file to get them"
    )
    _ack(lb, "AwsSolutions", "ELB2", reason)
    _ack(lb, "NIST.800.53.R5", "ELBLoggingEnabled", reason)


def _application(scope: Construct, vpc: ec2.IVpc, spec: LoadBalancerSpec, logs: s3.IBucket | None) -> Balancer:
    alb = elbv2.ApplicationLoadBalancer(
        scope,
        spec.name,
        vpc=vpc,
        internet_facing=spec.internet_facing,
        drop_invalid_header_fields=True,
        deletion_protection=False,
        idle_timeout=cdk.Duration.seconds(spec.idle_timeout_seconds) if spec.idle_timeout_seconds else None,
    )
    _log_access(alb, logs)
    not_found = elbv2.ListenerAction.fixed_response(404, content_type="text/plain", message_body="no such model")
    if spec.certificate_arn:
        listener = alb.add_listener(
            "Https",
            port=443,
            certificates=[elbv2.ListenerCertificate.from_arn(spec.certificate_arn)],
            ssl_policy=elbv2.SslPolicy.RECOMMENDED_TLS,
            open=spec.internet_facing,
            default_action=not_found,
        )
        redirect = alb.add_redirect(source_port=80, target_port=443, open=spec.internet_facing)
        _ack(redirect, "NIST.800.53.R5", "ELBv2ACMCertificateRequired", "this listener only redirects to HTTPS on 443")
    else:
        listener = alb.add_listener("Http", port=80, open=spec.internet_facing, default_action=not_found)
        # The fleet parser refuses HTTP from the internet without a stated reason, so one of these two is true.
        http_only = (
            f"HTTP from the internet without TLS, as the fleet file states: {spec.plaintext_reason}"
            if spec.internet_facing
            else "internal to the VPC (internet_facing = false) and no certificate_arn: HTTP on 80 inside the VPC; "
            "give certificate_arn for HTTPS with a redirect"
        )
        for rule in ("ALBHttpToHttpsRedirection", "ELBTlsHttpsListenersOnly", "ELBv2ACMCertificateRequired"):
            _ack(alb, "NIST.800.53.R5", rule, http_only)
    _guard(alb, vpc, spec, listener.connections, ec2.Port.tcp(spec.listener_port))
    _ack(
        alb,
        "NIST.800.53.R5",
        "ALBWAFEnabled",
        "internet-facing, and this app attaches no AWS WAF web ACL: associate your organization's web ACL with it"
        if spec.internet_facing
        else "internal to the VPC: only the VPC reaches it; this app attaches no AWS WAF web ACL",
    )
    _ack(alb, "NIST.800.53.R5", "ELBDeletionProtectionEnabled", "fleets are rebuilt from their fleet file")
    return Balancer(spec, alb, listener)


def _network(scope: Construct, vpc: ec2.IVpc, spec: LoadBalancerSpec, logs: s3.IBucket | None) -> Balancer:
    group = ec2.SecurityGroup(scope, f"{spec.name}-sg", vpc=vpc, description=f"network load balancer {spec.name}")
    nlb = elbv2.NetworkLoadBalancer(
        scope, spec.name, vpc=vpc, internet_facing=spec.internet_facing, security_groups=[group]
    )
    _log_access(nlb, logs)
    _ack(nlb, "NIST.800.53.R5", "ELBDeletionProtectionEnabled", "fleets are rebuilt from their fleet file")
    _ack(
        nlb,
        "NIST.800.53.R5",
        "ELBCrossZoneLoadBalancingEnabled",
        "each zone's hosts serve its own traffic; cross-zone balancing costs data transfer",
    )
    return Balancer(spec, nlb, None)


def _guard(lb: Construct, vpc: ec2.IVpc, spec: LoadBalancerSpec, connections: ec2.Connections, port: ec2.Port) -> None:
    """Who may reach a balancer: anyone for an internet-facing one (acknowledged), the VPC for an internal one."""
    if spec.internet_facing:
        if not isinstance(lb, elbv2.ApplicationLoadBalancer):  # an ALB listener opens itself (open=True)
            connections.allow_from_any_ipv4(port, "the internet")
        _ack(
            connections.security_groups[0],
            "AwsSolutions",
            "EC23",
            f"internet_facing = true in the fleet file, without TLS, because: {spec.plaintext_reason}"
            if spec.plaintext_from_internet
            else "internet_facing = true in the fleet file, HTTPS only (certificate_arn): it takes TLS from anywhere",
        )
    else:
        connections.allow_from(ec2.Peer.ipv4(vpc.vpc_cidr_block), port, "the VPC")
        _ack(
            connections.security_groups[0],
            "AwsSolutions",
            "EC23",
            "open only to the VPC's CIDR block, a value from the network stack that cdk-nag cannot read at synth",
        )
        for rule in ("EC2RestrictedCommonPorts", "EC2RestrictedSSH"):
            _ack(
                connections.security_groups[0],
                "NIST.800.53.R5",
                rule,
                f"only port {port.to_string()} is open, and only to the VPC's CIDR block (an imported value cdk-nag "
                "cannot read at synth)",
            )


def expose(
    scope: Construct,
    *,
    service: ecs.BaseService,
    spec: ServiceSpec,
    balancer: Balancer,
    priority: int,
    vpc: ec2.IVpc,
    moves: int = 0,
) -> elbv2.ApplicationTargetGroup | None:
    """Routes the balancer to ``service``: a target group and a listener rule (ALB) or a listener (NLB). Returns
    the ALB target group, which request-count scaling needs. ``moves``: how often the service moved to another
    balancer (the layout's count); each move is a new target group, since one group serves one balancer."""
    target = "Target" if moves == 0 else f"Target{moves}"
    assert spec.port is not None
    bridge = spec.network_mode == BRIDGE
    # An awsvpc service's own group admits the balancer on its port. aws-ecs's load balancer target would also add
    # an outbound rule to the balancer's group for each service, and an ALB's group holds at most 60
    # (core.quotas.RULES_PER_SECURITY_GROUP): the ALB reaches its awsvpc targets through one rule instead.
    own = None if bridge else task_security_group(service)
    if own is not None:
        own.add_ingress_rule(balancer.security_group, ec2.Port.tcp(spec.port), f"{balancer.spec.name} to {spec.name}")
    if balancer.listener is not None:
        group = elbv2.ApplicationTargetGroup(
            scope,
            target,
            vpc=vpc,
            port=spec.port,
            protocol=elbv2.ApplicationProtocol.HTTP,
            # Bridge-mode tasks register by instance, awsvpc tasks by IP; the rules are opened above and by the
            # cluster stack (open_host_ports, open_task_ports), once each.
            target_type=elbv2.TargetType.INSTANCE if bridge else elbv2.TargetType.IP,
            # Bridge-mode tasks listen on dynamic host ports: check each on the port it takes traffic on.
            health_check=elbv2.HealthCheck(
                path=spec.health_check_path, healthy_http_codes="200-399", port="traffic-port"
            ),
            deregistration_delay=cdk.Duration.seconds(spec.drain_seconds),
        )
        conditions = []
        if spec.paths:
            conditions.append(elbv2.ListenerCondition.path_patterns(list(spec.paths)))
        if spec.host:
            conditions.append(elbv2.ListenerCondition.host_headers([spec.host]))
        route = elbv2.ApplicationListenerRule(
            scope,
            "Route",
            listener=balancer.listener,
            priority=priority,
            conditions=conditions or [elbv2.ListenerCondition.path_patterns(["/*"])],
            target_groups=[group],
        )
        _attach(service, group, route, spec.port)
        if not bridge:
            assert balancer.targets is not None, f"open_task_ports did not open {balancer.spec.name}"
            join_security_group(service, balancer.targets)
        return group
    assert isinstance(balancer.load_balancer, elbv2.NetworkLoadBalancer) and spec.listener_port is not None
    nlb_group = elbv2.NetworkTargetGroup(
        scope,
        target,
        vpc=vpc,
        port=spec.port,
        protocol=elbv2.Protocol.TCP,
        targets=[service.load_balancer_target(container_name=CONTAINER_NAME, container_port=spec.port)],
        health_check=elbv2.HealthCheck(port="traffic-port"),
        deregistration_delay=cdk.Duration.seconds(spec.drain_seconds),
    )
    listener = elbv2.NetworkListener(
        scope,
        "Listener",
        load_balancer=balancer.load_balancer,
        port=spec.listener_port,
        default_target_groups=[nlb_group],
    )
    _ack(
        listener,
        "NIST.800.53.R5",
        "ELBv2ACMCertificateRequired",
        "a TCP listener passes the service's own protocol through; the service terminates TLS itself if it speaks it",
    )
    # Network target groups open no security group by themselves: an awsvpc service's own group admits the balancer
    # (above; the NLB's group lets all out), and bridge-mode hosts are opened once per balancer and capacity, by
    # open_host_ports in the cluster stack.
    nlb = balancer.load_balancer
    _guard(nlb, vpc, balancer.spec, nlb.connections, ec2.Port.tcp(spec.listener_port))
    return None


def task_security_group(service: ecs.BaseService) -> ec2.ISecurityGroup:
    """An awsvpc service's own security group, the one aws-ecs made for it. Rules go on it alone: a rule given to
    ``service.connections`` would also land on every group the service joins later (a shared one)."""
    groups = service.connections.security_groups
    assert groups, f"{service.node.path} has no security group of its own: is it in awsvpc mode?"
    return groups[0]


def join_security_group(service: ecs.BaseService, group: ec2.ISecurityGroup) -> None:
    """Adds a shared group to an awsvpc service's tasks. aws-ecs renders the tasks' groups from the list the service
    was made with, not from its connections, so the network configuration is written again with all of them."""
    service.connections.add_security_group(group)
    resource = service.node.default_child
    assert isinstance(resource, ecs.CfnService)
    resource.add_property_override(
        "NetworkConfiguration.AwsvpcConfiguration.SecurityGroups",
        [g.security_group_id for g in service.connections.security_groups],
    )


def _attach(
    service: ecs.BaseService, group: elbv2.ApplicationTargetGroup, route: elbv2.ApplicationListenerRule, port: int
) -> None:
    """Registers a service's tasks in ``group`` without the security group rules that aws-ecs's load balancer target
    adds. For bridge mode it opens the balancer to every host group of the cluster, once per service, and EC2 refuses
    the repeats (InvalidPermission.Duplicate): ``open_host_ports`` opens each pair once instead. For awsvpc it adds an
    outbound rule per service to the balancer's group: ``open_task_ports`` opens one for all."""
    resource = service.node.default_child
    assert isinstance(resource, ecs.CfnService)
    resource.add_property_override(
        "LoadBalancers",
        [{"ContainerName": CONTAINER_NAME, "ContainerPort": port, "TargetGroupArn": group.target_group_arn}],
    )
    # ECS needs the target group on a listener before the service names it.
    resource.node.add_dependency(route)


def open_task_ports(balancers: Mapping[str, Balancer], names: Iterable[str], vpc: ec2.IVpc) -> None:
    """Gives each named ALB a group for its awsvpc targets, and one outbound rule to it on any TCP port: each target
    admits the balancer on its own port only (``expose``), so the balancer can open no other. An NLB's group lets
    all out already."""
    for name in sorted(set(names)):
        balancer = balancers[name]
        if balancer.listener is None:
            continue
        balancer.targets = ec2.SecurityGroup(
            balancer.load_balancer,
            "Targets",
            vpc=vpc,
            description=f"awsvpc tasks behind {name}; each admits the balancer on its own port",
            allow_all_outbound=False,
        )
        balancer.security_group.add_egress_rule(
            balancer.targets, ec2.Port.all_tcp(), f"{name} to its awsvpc targets, each open on its own port only"
        )


def open_host_ports(
    balancers: Mapping[str, Balancer],
    capacities: Mapping[str, GpuCapacity | GpuManagedInstancesCapacity],
    pairs: Iterable[tuple[str, str]],
) -> None:
    """Opens each balancer to the bridge-mode host ports of each capacity that runs a service behind it: one rule
    per pair (and its egress twin on an ALB), however many services share the pair."""
    for balancer, name in sorted(set(pairs)):
        capacity = capacities[name]
        assert isinstance(capacity, GpuCapacity)  # the fleet file runs bridge mode on EC2 capacities only
        capacity.connections.allow_from(
            balancers[balancer].load_balancer, EPHEMERAL_PORTS, f"{balancer} to bridge-mode host ports"
        )
