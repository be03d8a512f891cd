"""What a GPU host of a ``GpuCapacity`` runs at boot, as user data: ECS's settings, the block on the instance
metadata service for containers, and the signal that its ECS agent registered (a rolling replacement waits for it).
"""

from __future__ import annotations

ROLL_SIGNAL_MINUTES = 20
"""How long a rolling replacement waits for a new host to signal that its ECS agent registered (PauseTime with
WaitOnResourceSignals); no signal in that time fails the update, and CloudFormation rolls it back."""

AGENT_METADATA_URL = "http://localhost:51678/v1/metadata"  # the ECS agent's introspection: names its registered host


def registered_signal_commands(stack: str, resource: str, region: str) -> list[str]:
    """User data that signals ``resource`` once this host's ECS agent has registered with the cluster.

    The agent's unit starts after cloud-init's final stage (``ecs.service``: After=cloud-final.service), so user
    data cannot wait for it in line: a transient systemd unit waits in the background and signals with cfn-signal
    (aws-cfn-bootstrap; it needs no credentials: CloudFormation checks the instance belongs to the stack, per the
    CloudFormation User Guide's "cfn-signal"). A host whose agent does not register within the timeout signals
    failure, and one that cannot install the package signals nothing: either way the update rolls back."""
    wait = (
        f"ok=1; for i in $(seq 1 {ROLL_SIGNAL_MINUTES * 6 - 6}); do "
        f"if curl -sf {AGENT_METADATA_URL} | grep -q ContainerInstanceArn; then ok=0; break; fi; sleep 10; done; "
        f"/opt/aws/bin/cfn-signal -e $ok --stack {stack} --resource {resource} --region {region}"
    )
    return [
        "dnf install -y aws-cfn-bootstrap",
        f"systemd-run --no-block --unit=ecs-gpu-sharing-registered /bin/bash -c '{wait}'",
    ]


# Lines appended to /etc/ecs/ecs.config (the AMI sets GPU support too; stating it keeps a custom AMI honest).
ECS_CONFIG = (
    "ECS_ENABLE_GPU_SUPPORT=true",
    # Containers in awsvpc mode must not reach the instance's credentials (in bridge mode the launch template's
    # IMDS hop limit of 1 is the barrier).
    "ECS_AWSVPC_BLOCK_IMDS=true",
    # No privileged containers on hosts that share GPUs between tenants' models.
    "ECS_DISABLE_PRIVILEGED=true",
)


# A second barrier beside the hop limit, for bridge-mode containers: AWS's own rule, in Docker's DOCKER-USER chain
# (Amazon ECS Developer Guide, "Amazon ECS task IAM role", blocking containers' access to the instance metadata).
# The chain is made first if Docker has not yet started (Docker keeps an existing chain's rules), and the rule is
# saved so it survives a reboot. Task roles are unaffected: their credentials come from 169.254.170.2.
IMDS_BLOCK = (
    "iptables -N DOCKER-USER 2>/dev/null || true",
    "iptables -C DOCKER-USER -i docker+ -d 169.254.169.254/32 -j DROP 2>/dev/null || "
    "iptables -I DOCKER-USER 1 -i docker+ -d 169.254.169.254/32 -j DROP",
    "dnf install -y iptables-services && iptables-save > /etc/sysconfig/iptables && systemctl enable iptables",
)
