"""The CDK constructs: thin layers that hand their facts to the pure core and turn its verdicts into synth
errors and acknowledgeable warnings."""

from .refusals import install as _install_refusals

_install_refusals()
