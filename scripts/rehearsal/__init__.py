"""A deploy rehearsal (a development tool for scripts/rehearse.py and the tests, not in the library's wheel): the
synthesized app deployed by the CDK CLI into moto's AWS emulator on loopback, then every
resource of every template accounted for.

moto's CloudFormation creates what it has a model for and quietly skips the rest while still reporting
CREATE_COMPLETE. The rehearsal therefore never trusts the stack status: for each resource it records one of

- ``created``: moto's CloudFormation made it and boto3 reads it back (``read back``) or, where no read-back is
  written here, moto lists it with a physical id (``listed``);
- ``adapted``: moto's CloudFormation has no model for the type, so the rehearsal made the same request through
  boto3 against moto's API (botocore checks the request against AWS's model; moto applies it);
- ``not checked``: neither; the report lists these, with why.

A security group rule declared twice fails the rehearsal, as EC2 would fail the deploy. What a rehearsal cannot
show (IAM evaluation, real placement on GPUs, the AMI's behaviour) is in docs/app.md.
"""

from __future__ import annotations

from .account import READ_BACK, account, current_task_definitions, empty_account, missing_key_policy_roles
from .adapters import ADAPTED_IDS, ADAPTERS
from .moto_gaps import DELETERS, MODEL_GAPS, install_adapters
from .report import ACCOUNT, ADAPTED, CREATED, NOT_CHECKED, REGION, Report, ResourceCheck
from .seeds import seed_certificates, seed_container_images, seed_public_amis

__all__ = [
    "ACCOUNT",
    "ADAPTED",
    "ADAPTED_IDS",
    "ADAPTERS",
    "CREATED",
    "DELETERS",
    "MODEL_GAPS",
    "NOT_CHECKED",
    "READ_BACK",
    "REGION",
    "Report",
    "ResourceCheck",
    "account",
    "current_task_definitions",
    "empty_account",
    "install_adapters",
    "missing_key_policy_roles",
    "seed_certificates",
    "seed_container_images",
    "seed_public_amis",
]
