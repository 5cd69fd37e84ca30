"""Module system semantics (ember_nn.modules.module): registration, traversal,
modes, conversion, state_dict, hooks and repr, as torch.nn.Module behaves."""

from collections import OrderedDict

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec
import ember_nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(3, 2, bias=False)
        self.scale = nn.Parameter(ec.ones(2))
        self.register_buffer("count", ec.zeros((), dtype=ec.int64))
        self.register_buffer("cache", ec.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


def arr(t):
    return np.asarray(t.detach().numpy())


# --------------------------------------------------------------- registration


def test_attribute_assignment_registers_parameters_buffers_and_modules():
    m = Net()
    assert list(m._parameters) == ["scale"]
    assert list(m._buffers) == ["count", "cache"]
    assert list(m._modules) == ["fc1", "act", "fc2"]
    assert m._non_persistent_buffers_set == {"cache"}
    assert m.fc2.bias is None and "bias" in m.fc2._parameters
    # plain attributes stay plain
    m.note = 3
    assert m.note == 3 and "note" not in m._parameters


def test_buffer_class_registers_by_assignment():
    m = nn.Module()
    m.stat = nn.Buffer(ec.ones(3))
    m.tmp = nn.Buffer(ec.zeros(1), persistent=False)
    assert list(m._buffers) == ["stat", "tmp"]
    assert type(m.stat) is ec.Tensor
    assert list(m.state_dict()) == ["stat"]
    # plain tensors assigned to a registered buffer name stay buffers
    m.stat = ec.zeros(3)
    assert "stat" in m._buffers and np.all(arr(m.stat) == 0)


def test_reassignment_moves_between_registries():
    m = nn.Module()
    m.x = nn.Parameter(ec.ones(1))
    m.x = None
    assert m._parameters["x"] is None
    m.y = nn.Linear(1, 1)
    m.y = nn.Parameter(ec.ones(1))  # a module name re-bound to a parameter
    assert "y" not in m._modules and "y" in m._parameters
    del m.y
    assert "y" not in m._parameters
    with pytest.raises(AttributeError):
        m.y  # noqa: B018


def test_registration_errors():
    m = nn.Module()
    m.w = nn.Parameter(ec.ones(2))
    with pytest.raises(TypeError, match="cannot assign"):
        m.w = ec.ones(2)  # a plain tensor to a parameter name
    with pytest.raises(TypeError):
        m.register_parameter("p", ec.ones(2))
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", ec.ones(1))
    with pytest.raises(KeyError, match="empty"):
        m.register_parameter("", None)
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("w", ec.ones(1))
    with pytest.raises(TypeError):
        m.add_module("sub", 3)

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ec.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_getattr_error_names_the_class():
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nope'"):
        nn.Linear(1, 1).nope  # noqa: B018


def test_get_submodule_parameter_buffer():
    m = nn.Sequential(Net(), nn.Linear(2, 2))
    assert m.get_submodule("0.fc1") is m[0].fc1
    assert m.get_parameter("0.fc1.weight") is m[0].fc1.weight
    assert m.get_buffer("0.count") is m[0].count
    with pytest.raises(AttributeError):
        m.get_submodule("0.nope")
    with pytest.raises(AttributeError):
        m.get_parameter("0.fc1.nope")


# ------------------------------------------------------------------ traversal


def test_named_parameters_order_prefix_and_recurse():
    m = Net()
    assert [n for n, _ in m.named_parameters()] == ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["scale"]
    assert [n for n, _ in m.named_parameters(prefix="net")] == [
        "net.scale",
        "net.fc1.weight",
        "net.fc1.bias",
        "net.fc2.weight",
    ]
    assert len(list(m.parameters())) == 4
    assert [n for n, _ in m.named_buffers()] == ["count", "cache"]
    assert [n for n, _ in m.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in m.named_modules()] == ["", "fc1", "act", "fc2"]
    assert [n for n, _ in m.named_modules(prefix="root")] == [
        "root",
        "root.fc1",
        "root.act",
        "root.fc2",
    ]


def test_shared_parameters_and_modules_are_deduplicated_unless_asked():
    shared = nn.Linear(2, 2)
    m = nn.Sequential(shared, nn.ReLU(), shared)
    assert [n for n, _ in m.named_modules()] == ["", "0", "1"]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == ["", "0", "1", "2"]
    assert [n for n, _ in m.named_parameters()] == ["0.weight", "0.bias"]
    assert [n for n, _ in m.named_parameters(remove_duplicate=False)] == [
        "0.weight",
        "0.bias",
        "2.weight",
        "2.bias",
    ]
    assert len(list(m.children())) == 2
    # tied weights inside one module
    tied = nn.Module()
    tied.a = nn.Linear(3, 3)
    tied.b = nn.Linear(3, 3)
    tied.b.weight = tied.a.weight
    assert [n for n, _ in tied.named_parameters()] == ["a.weight", "a.bias", "b.bias"]
    assert list(tied.state_dict()) == ["a.weight", "a.bias", "b.weight", "b.bias"]


# ---------------------------------------------------------------------- modes


def test_train_eval_recurse_and_return_self():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(), nn.BatchNorm1d(2)))
    assert m.eval() is m
    assert all(not mod.training for mod in m.modules())
    assert m.train() is m
    assert all(mod.training for mod in m.modules())
    with pytest.raises(ValueError, match="boolean"):
        m.train("yes")


def test_requires_grad_and_zero_grad():
    m = Net()
    assert m.requires_grad_(False) is m
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    out = m(ec.randn(5, 4)).sum()
    out.backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    for p in m.parameters():
        assert p.grad is not None and np.all(arr(p.grad) == 0)
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


# ----------------------------------------------------------------- conversion


def test_to_double_float_half_keep_integer_buffers():
    m = Net()
    w = m.fc1.weight
    m.double()
    assert m.fc1.weight is w, "conversion changes parameters in place (same Parameter object)"
    assert {p.dtype for p in m.parameters()} == {ec.float64}
    assert m.count.dtype is ec.int64 and m.cache.dtype is ec.float64
    m.to(ec.float32)
    assert {p.dtype for p in m.parameters()} == {ec.float32}
    m.half()
    assert m.fc1.weight.dtype is ec.float16 and m.count.dtype is ec.int64
    m.float()
    m.to("cpu")
    m.to(device="cpu", dtype=ec.float64)
    assert m.scale.dtype is ec.float64
    with pytest.raises(TypeError, match="floating point"):
        m.to(ec.int32)
    assert isinstance(m.fc1.weight, nn.Parameter) and m.fc1.weight.requires_grad


def test_conversion_converts_gradients_too():
    m = nn.Linear(2, 1)
    m(ec.ones(1, 2)).sum().backward()
    m.double()
    assert m.weight.grad.dtype is ec.float64


def test_cuda_without_gpu_is_a_clear_error():
    from ember_core._cuda import runtime as _cuda

    if _cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="(?i)cuda"):
        nn.Linear(1, 1).cuda()


def test_apply_visits_children_first_then_self():
    seen = []
    m = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.ReLU()))
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen == ["Linear", "ReLU", "Sequential", "Sequential"]

    def init_weights(mod):
        if isinstance(mod, nn.Linear):
            nn.init.constant_(mod.weight, 0.5)

    m.apply(init_weights)
    assert np.all(arr(m[0].weight) == 0.5)


# ----------------------------------------------------------------- state_dict


def test_state_dict_keys_values_and_detach():
    m = Net()
    sd = m.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["scale", "count", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert sd["fc1.weight"].grad_fn is None and not sd["fc1.weight"].requires_grad
    assert sd["fc1.weight"].data_ptr() == m.fc1.weight.data_ptr(), "state_dict shares memory"
    kept = m.state_dict(keep_vars=True)
    assert kept["fc1.weight"] is m.fc1.weight
    assert list(m.state_dict(prefix="model.")) == ["model." + k for k in sd]
    bn = nn.BatchNorm1d(3)
    assert list(bn.state_dict()) == [
        "weight",
        "bias",
        "running_mean",
        "running_var",
        "num_batches_tracked",
    ]


def test_load_state_dict_round_trip_copies_values():
    a, b = Net(), Net()
    with ag.no_grad():
        a.count.fill_(7)
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert na == nb
        np.testing.assert_array_equal(arr(pa), arr(pb))
    assert b.count.item() == 7
    w = b.fc1.weight
    b.load_state_dict(a.state_dict())
    assert b.fc1.weight is w, "load_state_dict copies in place by default"


def test_load_state_dict_strict_report():
    m = nn.Linear(3, 2)
    sd = m.state_dict()
    del sd["bias"]
    sd["extra"] = ec.zeros(1)
    with pytest.raises(RuntimeError) as info:
        m.load_state_dict(sd)
    msg = str(info.value)
    assert msg.startswith("Error(s) in loading state_dict for Linear:")
    assert 'Missing key(s) in state_dict: "bias".' in msg
    assert 'Unexpected key(s) in state_dict: "extra".' in msg
    assert msg.index("Missing") < msg.index("Unexpected")
    result = m.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["bias"] and result.unexpected_keys == ["extra"]
    assert result == (["bias"], ["extra"])


def test_load_state_dict_shape_mismatch_is_reported_even_non_strict():
    m = nn.Linear(3, 2)
    sd = nn.Linear(4, 2).state_dict()
    with pytest.raises(
        RuntimeError,
        match=r"size mismatch for weight: copying a param with shape .*\[2, 4\].* "
        r"from checkpoint, the shape in current model is .*\[2, 3\]",
    ):
        m.load_state_dict(sd, strict=False)


def test_load_state_dict_nested_unexpected_and_non_persistent_keys():
    m = Net()
    sd = m.state_dict()
    sd["fc1.extra"] = ec.zeros(1)
    sd["cache"] = ec.zeros(2)  # non-persistent buffers are not expected
    result = m.load_state_dict(sd, strict=False)
    assert result.unexpected_keys == ["cache", "fc1.extra"]
    with pytest.raises(TypeError, match="dict-like"):
        m.load_state_dict([1, 2])


def test_load_state_dict_assign_replaces_parameters():
    m = nn.Linear(2, 2)
    w = m.weight
    src = nn.Linear(2, 2).double()
    m.load_state_dict(src.state_dict(), assign=True)
    assert m.weight is not w and isinstance(m.weight, nn.Parameter)
    assert m.weight.requires_grad
    assert m.weight.dtype is ec.float64, "assign keeps the checkpoint's tensors as they are"
    np.testing.assert_array_equal(arr(m.weight), arr(src.weight))


def test_load_state_dict_copies_into_other_dtype():
    m = nn.Linear(2, 2)
    src = nn.Linear(2, 2).double()
    m.load_state_dict(src.state_dict())
    assert m.weight.dtype is ec.float32
    np.testing.assert_allclose(arr(m.weight), arr(src.weight), rtol=1e-6)


def test_extra_state_round_trip():
    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.value = 1

        def get_extra_state(self):
            return {"value": self.value}

        def set_extra_state(self, state):
            self.value = state["value"]

    a, b = WithExtra(), WithExtra()
    a.value = 5
    sd = a.state_dict()
    assert list(sd) == ["_extra_state"]
    b.load_state_dict(sd)
    assert b.value == 5


def test_state_dict_hooks():
    calls = []
    m = nn.Linear(2, 2)
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append(("pre", prefix)))

    def post(mod, sd, prefix, local_metadata):
        calls.append(("post", prefix))
        sd[prefix + "tag"] = ec.zeros(1)

    m.register_state_dict_post_hook(post)
    sd = m.state_dict(prefix="x.")
    assert calls == [("pre", "x."), ("post", "x.")]
    assert list(sd) == ["x.weight", "x.bias", "x.tag"]

    seen = []

    def load_pre(mod, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        seen.append("pre")
        state_dict.pop(prefix + "tag", None)

    def load_post(mod, incompatible):
        seen.append(("post", list(incompatible.missing_keys), list(incompatible.unexpected_keys)))

    m.register_load_state_dict_pre_hook(load_pre)
    h = m.register_load_state_dict_post_hook(load_post)
    m.load_state_dict({"weight": ec.zeros(2, 2), "bias": ec.zeros(2), "tag": ec.zeros(1)})
    assert seen == ["pre", ("post", [], [])]
    h.remove()
    m.load_state_dict({"weight": ec.zeros(2, 2), "bias": ec.zeros(2)})
    assert len(seen) == 3


# ---------------------------------------------------------------------- hooks


def test_forward_hook_order_and_results():
    calls = []
    m = nn.Linear(2, 2)

    def pre1(mod, args):
        calls.append("pre1")
        return (args[0] * 2,)

    def pre2(mod, args):
        calls.append("pre2")

    def fwd1(mod, args, out):
        calls.append("fwd1")
        return out + 1

    def fwd2(mod, args, out):
        calls.append("fwd2")

    h1 = m.register_forward_pre_hook(pre1)
    m.register_forward_pre_hook(pre2, prepend=True)
    m.register_forward_hook(fwd1)
    m.register_forward_hook(fwd2, prepend=True)
    x = ec.ones(1, 2)
    y = m(x)
    assert calls == ["pre2", "pre1", "fwd2", "fwd1"]
    expected = arr(x) * 2 @ arr(m.weight).T + arr(m.bias) + 1
    np.testing.assert_allclose(arr(y), expected, rtol=1e-6)
    h1.remove()
    calls.clear()
    y = m(x)
    assert calls == ["pre2", "fwd2", "fwd1"]
    np.testing.assert_allclose(arr(y), arr(x) @ arr(m.weight).T + arr(m.bias) + 1, rtol=1e-6)


def test_forward_hooks_with_kwargs():
    class Scale(nn.Module):
        def forward(self, x, factor=1.0):
            return x * factor

    m = Scale()

    def pre(mod, args, kwargs):
        return args, {**kwargs, "factor": 3.0}

    def post(mod, args, kwargs, out):
        assert kwargs["factor"] == 3.0
        return out - 1

    m.register_forward_pre_hook(pre, with_kwargs=True)
    m.register_forward_hook(post, with_kwargs=True)
    np.testing.assert_allclose(arr(m(ec.ones(2))), [2.0, 2.0])


def test_single_value_from_pre_hook_is_wrapped():
    m = nn.Identity()
    m.register_forward_pre_hook(lambda mod, args: args[0] + 1)
    np.testing.assert_allclose(arr(m(ec.zeros(2))), [1.0, 1.0])


def test_handle_as_context_manager():
    m = nn.Identity()
    calls = []
    with m.register_forward_hook(lambda *a: calls.append(1)):
        m(ec.zeros(1))
    m(ec.zeros(1))
    assert calls == [1]


def test_global_module_hooks():
    calls = []
    h1 = nn.modules.module.register_module_forward_pre_hook(
        lambda mod, args: calls.append(("pre", type(mod).__name__))
    )
    h2 = nn.modules.module.register_module_forward_hook(
        lambda mod, args, out: calls.append(("fwd", type(mod).__name__))
    )
    try:
        nn.Sequential(nn.ReLU())(ec.ones(1))
    finally:
        h1.remove()
        h2.remove()
    assert calls == [("pre", "Sequential"), ("pre", "ReLU"), ("fwd", "ReLU"), ("fwd", "Sequential")]
    nn.ReLU()(ec.ones(1))
    assert len(calls) == 4


def test_full_backward_hook_sees_module_gradients():
    m = nn.Linear(3, 2)
    seen = {}

    def hook(mod, grad_input, grad_output):
        seen["gi"] = [arr(g) for g in grad_input]
        seen["go"] = [arr(g) for g in grad_output]

    def pre(mod, grad_output):
        seen["pre"] = True
        return (grad_output[0] * 2,)

    m.register_full_backward_hook(hook)
    m.register_full_backward_pre_hook(pre)
    x = ec.randn(4, 3, requires_grad=True)
    m(x).sum().backward()
    assert seen["pre"]
    np.testing.assert_allclose(seen["go"][0], np.full((4, 2), 2.0))
    expected_gi = np.full((4, 2), 2.0) @ arr(m.weight)
    np.testing.assert_allclose(seen["gi"][0], expected_gi, rtol=1e-5)
    np.testing.assert_allclose(arr(x.grad), expected_gi, rtol=1e-5)
    np.testing.assert_allclose(arr(m.weight.grad), np.full((2, 4), 2.0) @ arr(x), rtol=1e-5)


def test_full_backward_hook_can_replace_grad_input():
    m = nn.Sigmoid()
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0,))
    x = ec.randn(5, requires_grad=True)
    m(x).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), np.zeros(5))


def test_full_backward_hook_with_inputs_not_requiring_grad():
    m = nn.Linear(2, 2)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, len(go))))
    m(ec.ones(3, 2)).sum().backward()
    assert len(seen) == 1
    gi, n_go = seen[0]
    assert gi == (None,) and n_go == 1


# ----------------------------------------------------------------------- repr


def test_repr_nested_like_pytorch():
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.Sequential(OrderedDict(pool=nn.MaxPool2d(2), flat=nn.Flatten())),
        nn.Linear(8 * 4 * 4, 10),
    )
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
        "  (1): ReLU()\n"
        "  (2): Sequential(\n"
        "    (pool): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
        "    (flat): Flatten(start_dim=1, end_dim=-1)\n"
        "  )\n"
        "  (3): Linear(in_features=128, out_features=10, bias=True)\n"
        ")"
    )
    assert repr(nn.Module()) == "Module()"
    assert repr(nn.ModuleList()) == "ModuleList()"


def test_repr_with_multiline_extra_repr_and_children():
    class Custom(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Identity()

        def extra_repr(self):
            return "a=1\nb=2"

    assert repr(Custom()) == "Custom(\n  a=1\n  b=2\n  (inner): Identity()\n)"


@pytest.mark.parity
def test_repr_matches_torch():
    torch = pytest.importorskip("torch")

    def build(T):
        N = T.nn
        return N.Sequential(
            N.Conv2d(3, 16, 3, stride=2, padding=1, bias=False),
            N.BatchNorm2d(16),
            N.ReLU(inplace=True),
            N.MaxPool2d(2, 2),
            N.Identity(),
            N.AdaptiveAvgPool2d(1),
            N.Flatten(),
            N.Dropout(0.2),
            N.Linear(16, 8),
            N.LayerNorm(8),
            N.GELU(),
            N.LeakyReLU(0.2),
            N.Embedding(10, 3, padding_idx=0),
            N.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True),
            N.GRU(3, 4),
            N.ModuleDict({"a": N.Tanh(), "b": N.Softmax(dim=1)}),
            N.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1),
            N.GroupNorm(2, 4),
            N.MultiheadAttention(8, 2),
            N.CrossEntropyLoss(),
            N.Hardtanh(0.0, 6.0),
            N.ELU(alpha=0.5),
            N.Softplus(beta=2),
            N.PixelShuffle(2),
            N.Upsample(scale_factor=2.0, mode="nearest"),
            N.Unflatten(1, (2, 4)),
            N.ZeroPad2d(1),
            N.AvgPool2d(2),
            N.InstanceNorm2d(3),
            N.RMSNorm(4),
            N.PReLU(),
            N.BatchNorm1d(5, momentum=None),
        )

    assert repr(build(nn_ns())) == repr(build(torch))


def nn_ns():
    class NS:
        nn = nn

    return NS


# ------------------------------------------------------------------ set_submodule, to_empty


def test_set_submodule_and_to_empty():
    import ember_nn as nn_

    m = nn_.Sequential(nn_.Linear(2, 3), nn_.Sequential(nn_.ReLU()))
    tanh = nn_.Tanh()
    m.set_submodule("1.0", tanh)
    assert m[1][0] is tanh
    m.set_submodule("1.extra", nn_.ReLU())
    assert [n for n, _ in m[1].named_children()] == ["0", "extra"]
    with pytest.raises(AttributeError, match="Sequential has no attribute `x`"):
        m.set_submodule("1.x", nn_.Tanh(), strict=True)
    with pytest.raises(ValueError, match="Cannot set the submodule without a target name"):
        m.set_submodule("", nn_.Tanh())
    with pytest.raises(ValueError, match="is not an nn.Module"):
        m.set_submodule("0", 3)
    weight = m[0].weight
    assert m.to_empty(device="cpu") is m
    assert type(m[0].weight) is type(weight) and tuple(m[0].weight.shape) == (3, 2)
    assert m[0].weight is weight  # the Parameter object is kept, as in torch


def test_a_model_built_on_the_meta_device_then_materialized():
    import ember_core as ec

    with ec.device("meta"):
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    assert all(p.is_meta for p in model.parameters())
    with pytest.raises(NotImplementedError, match="to_empty"):
        model.to("cpu")
    source = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model.to_empty(device="cpu")
    model.load_state_dict(source.state_dict())
    x = ec.randn(3, 4)
    assert ec.equal(model(x), source(x))
