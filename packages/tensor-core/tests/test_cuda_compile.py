"""The CUDA kernels compile: every kernel the launchers can ask for is
instantiated by NVRTC for sm_90 and every kernel source for sm_80, with no GPU
(NVRTC runs on any machine; CI installs the nvidia-cuda-nvrtc wheel).  Also the
parts of the CUDA backend that need no GPU: compile groups, the kernel cache."""

import concurrent.futures
import dataclasses
import os

import pytest

import ember_core as ec
from ember_core._cuda import compile as _cuda_compile
from ember_core._cuda import kernels as _cuda_kernels

try:
    _cuda_compile.nvrtc_version()
    HAVE_NVRTC = True
except RuntimeError:
    HAVE_NVRTC = False

needs_nvrtc = pytest.mark.skipif(not HAVE_NVRTC, reason="NVRTC (nvidia-cuda-nvrtc) not installed")


def _batches(groups, size):
    """Groups merged into programs of at most ``size`` kernels, per source."""
    by_source = {}
    for g in groups:
        by_source.setdefault((g.source, g.headers, g.options), []).extend(g.kernels)
    out = []
    for (source, headers, options), kernels in by_source.items():
        exprs = sorted({e for _, e in kernels})
        for i in range(0, len(exprs), size):
            chunk = tuple((0, e) for e in exprs[i : i + size])
            out.append(_cuda_kernels.Group(f"batch{i}", source, headers, chunk, options))
    return out


def _compile_all(groups, arch, size=400, ptx=False):
    batches = _batches(groups, size)
    kind = "ptx" if ptx else None  # PTX: the front end only, every template quickly

    def run(batch):
        return _cuda_compile.compile_source(batch, arch, kind=kind)

    # NVRTC releases the GIL: the batches compile in parallel threads
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(run, batches))
    return batches, results


def _representatives():
    """All kernels of one group per (kernel template, dtype): every template and
    launch variant of every source."""
    seen, groups = set(), []
    for g in _cuda_kernels.all_groups():
        key = (g.kernels[0][1].split("<")[0], g.name.rsplit("_", 1)[-1])
        if key not in seen:
            seen.add(key)
            groups.append(g)
    return groups


@needs_nvrtc
def test_every_functor_compiles():
    # every op of every dtype (each group's first kernel: the variants share the
    # functor), through NVRTC's front end to PTX
    groups = _cuda_kernels.all_groups()
    firsts = [dataclasses.replace(g, kernels=g.kernels[:1]) for g in groups]
    batches, results = _compile_all(firsts, 90, ptx=True)
    n = 0
    for batch, (image, lowered) in zip(batches, results):
        assert b".entry" in image  # PTX with kernel entries
        assert set(lowered) == {e for _, e in batch.kernels}
        n += len(lowered)
    assert n == len({g.kernels[0][1] for g in groups})


@pytest.mark.parametrize("arch", [80, 90])
@needs_nvrtc
def test_every_kernel_source_compiles_to_machine_code(arch):
    batches, results = _compile_all(_representatives(), arch)
    for batch, (image, lowered) in zip(batches, results):
        assert image[:4] == b"\x7fELF"  # a cubin
        assert set(lowered) == {e for _, e in batch.kernels}


def test_groups_name_every_variant():
    g = _cuda_kernels.group(ec._lib_c.ECU_FAM_BINARY, ec._lib_c.EC_B_ADD, ec.float16.code, 0)
    assert g.kernels == (
        (0, "ecu_binary_c<B_ADD_f16>"),
        (1, "ecu_binary_s<B_ADD_f16, true>"),
        (2, "ecu_binary_s<B_ADD_f16, false>"),
    )
    w = _cuda_kernels.group(ec._lib_c.ECU_FAM_TERNARY, ec._lib_c.EC_T_WHERE, ec.int64.code, 0)
    assert w.kernels[0] == (1, "ecu_ternary_s<T_WHERE_i64, uint8_t, int64_t, true>")
    c = _cuda_kernels.group(ec._lib_c.ECU_FAM_CAST, 0, ec.bfloat16.code, ec.bool.code)
    assert c.kernels[0] == (0, "ecu_unary_c<CAST_bf16_b>")
    with pytest.raises(RuntimeError, match="no CUDA kernel group"):
        _cuda_kernels.group(99, 0, 0, 0)


def test_every_op_code_has_a_name():
    # the Python side reads the op codes from the C enums, not from a copy
    assert _cuda_kernels.UNARY[ec._lib_c.EC_U_EXPM1] == "EXPM1"
    assert _cuda_kernels.BINARY[ec._lib_c.EC_B_ADD] == "ADD"
    assert len(_cuda_kernels.UNARY) == ec._lib_c.EC_NUM_UNARY
    assert len(_cuda_kernels.BINARY) == ec._lib_c.EC_NUM_BINARY
    assert len(_cuda_kernels.TERNARY) == ec._lib_c.EC_NUM_TERNARY


def test_embedded_sources_match_the_checkout():
    here = os.path.join(os.path.dirname(__file__), "..", "csrc")
    path = os.path.join(here, "cuda", "elementwise.cuh")
    if not os.path.exists(path):
        pytest.skip("not run from a checkout")
    with open(path) as f:
        assert _cuda_kernels._header_text("elementwise.cuh") == f.read()


@needs_nvrtc
def test_kernel_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_cuda_compile, "_memo", {})
    g = _cuda_kernels.group(ec._lib_c.ECU_FAM_UNARY, ec._lib_c.EC_U_EXP, ec.float32.code, 0)
    image, lowered = _cuda_compile.compile_group(g, 90)
    key = _cuda_compile.cache_key(g, 90)
    assert (tmp_path / f"{key}.cubin").read_bytes() == image
    assert set(lowered) == {e for _, e in g.kernels}
    # a second process reads the cache instead of compiling
    monkeypatch.setattr(_cuda_compile, "_memo", {})
    calls = []
    monkeypatch.setattr(_cuda_compile, "compile_source", lambda *a: calls.append(a))
    assert _cuda_compile.compile_group(g, 90) == (image, lowered)
    assert calls == []
    # the key covers the architecture and the sources
    assert _cuda_compile.cache_key(g, 80) != key
    other = dataclasses.replace(g, source=g.source + "\n")
    assert _cuda_compile.cache_key(other, 90) != key


@needs_nvrtc
def test_compile_errors_carry_the_log():
    bad = _cuda_kernels.Group("bad", "this is not CUDA\n", (), ((0, "nothing"),))
    with pytest.raises(_cuda_compile.CompileError, match="bad"):
        _cuda_compile.compile_source(bad, 90)


@needs_nvrtc
def test_unknown_arch_falls_back_to_ptx():
    archs = _cuda_compile.supported_archs()
    option, kind = _cuda_compile.target(max(archs) + 1)
    assert kind == "ptx" and option == f"--gpu-architecture=compute_{max(archs)}"
    assert _cuda_compile.target(90) == ("--gpu-architecture=sm_90", "cubin")


def test_cuda_unavailable_is_clear():
    if ec.cuda.is_available():
        pytest.skip("a GPU is present")
    assert ec.cuda.device_count() == 0
    assert ec.cuda.memory_allocated() == 0
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        ec.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        ec.ones(2).cuda()
