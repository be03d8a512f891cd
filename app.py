#!/usr/bin/env python3
"""The deployable app: reads the configuration and builds the stacks. No AWS calls here."""

from __future__ import annotations

import aws_cdk as cdk

from stacks.app_builder import build_app

app = cdk.App()
build_app(app)
app.synth()
