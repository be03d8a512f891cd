"""The pure core: catalog, budgets, task shapes, the planner, the fit rules, the fleet file and plan reports.

Nothing in this subpackage imports jsii (the CDK) or boto3; the layout test imports every module here and
checks that. The CLI plans through it, and the CDK constructs hand it their facts.
"""
