"""The deployable app's stacks."""
