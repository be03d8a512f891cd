"""The fleet file's named values and the patterns its keys are held to. Pure Python, a leaf of ``core.fleet``."""

from __future__ import annotations

import re

from ..file_key import NAME

APPLICATION = "application"
NETWORK = "network"
LOAD_BALANCER_METADATA = "ecs-gpu-sharing:load-balancer"  # on each balancer the fleet app builds: its fleet-file name
BRIDGE = "bridge"
AWSVPC = "awsvpc"

CONTAINER_NAME = "model"
"""The name of each fleet service's container in its task definition."""

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$", re.ASCII)
ACCOUNT = re.compile(r"^\d{12}$", re.ASCII)
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$", re.ASCII)
VPC_ID = re.compile(r"^vpc-[0-9a-f]{8}([0-9a-f]{9})?$", re.ASCII)
# An image reference as Docker parses it (distribution/reference): an optional registry (with a dot or a port, or
# localhost), lowercase path components, an optional tag, an optional sha256 digest of 64 hex digits; at most 255
# characters (ECS's image field).
_REGISTRY = r"(?:localhost|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+|[A-Za-z0-9-]+(?=:[0-9]))(?::[0-9]+)?/"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE = re.compile(
    rf"(?=.{{1,255}}\Z)(?:{_REGISTRY})?{_COMPONENT}(?:/{_COMPONENT})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
    r"(?:@sha256:[0-9a-f]{64})?",
    re.ASCII | re.S,
)
DNS_NAME = re.compile(  # labels of 1..63 characters, 253 characters in all (Cloud Map's namespace name)
    r"(?=.{1,253}\Z)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?)*", re.ASCII | re.S
)
ACM_ARN = re.compile(r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate/[0-9a-f-]{36}$", re.ASCII)
KMS_KEY_ARN = re.compile(
    r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})$",
    re.ASCII,
)
ABSOLUTE_PATH = re.compile(r"^/[A-Za-z0-9_./-]*$", re.ASCII)

__all__ = [
    "ABSOLUTE_PATH",
    "ACCOUNT",
    "ACM_ARN",
    "APPLICATION",
    "AWSVPC",
    "BRIDGE",
    "CONTAINER_NAME",
    "DNS_NAME",
    "ENV_NAME",
    "IMAGE",
    "KMS_KEY_ARN",
    "NAME",
    "NETWORK",
    "REGION",
    "VPC_ID",
]
