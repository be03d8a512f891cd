#!/usr/bin/env python3
"""Regenerate the committed GPU catalog from the AWS instance-type data that moto ships (offline).

The committed catalog is, by design, the generator's output over AWS's published DescribeInstanceTypes
data as moto carries it, so a test can reproduce it without an AWS account. Upgrade moto to pick up new
instance types, then run this. (`ecs-gpu-sharing catalog refresh` runs the same generator against a
live account.)
"""

from __future__ import annotations

import boto3
from moto import mock_aws

from ecs_gpu_sharing.core import catalog
from ecs_gpu_sharing.operations import catalog_refresh


def main() -> None:
    with mock_aws():
        text = catalog_refresh.generate(boto3.client("ec2", region_name="us-east-1"))
    path = catalog.data_path()
    path.write_text(text, encoding="utf-8")
    print(f"wrote {len(catalog.parse(text))} GPU instance types to {path}")


if __name__ == "__main__":
    main()
