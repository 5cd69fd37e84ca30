"""Convolutions: Conv1d/2d/3d and ConvTranspose1d/2d/3d (torch.nn's signatures,
weight layouts, initialisation and reprs)."""

import math

import ember_autograd as ag
import ember_core as ec
from ember_nn import functional as F
from ember_nn import init
from ember_nn.modules.lazy import LazyModuleMixin
from ember_nn.modules.module import Module
from ember_nn.parameter import Parameter, UninitializedParameter


def _ntuple(v, n):
    if isinstance(v, (tuple, list)):
        return tuple(v)
    return (v,) * n


class _ConvNd(Module):
    _dims = 2
    _transposed = False

    def _setup(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride,
        padding,
        dilation,
        output_padding,
        groups,
        bias,
        padding_mode,
        device,
        dtype,
    ):
        n = self._dims
        kernel_size, stride, dilation = (
            _ntuple(kernel_size, n),
            _ntuple(stride, n),
            _ntuple(dilation, n),
        )
        if not isinstance(padding, str):
            padding = _ntuple(padding, n)
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}"
                )
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(
                "padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, but "
                "got "
                f"padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = self._transposed
        self.output_padding = _ntuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        # the padding F.pad needs for non-zero padding modes: last dim first, each twice
        if isinstance(padding, str):
            pads = [0, 0] * n
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(n - 1, -1, -1)):
                    total = d * (k - 1)
                    pads[2 * i], pads[2 * i + 1] = total // 2, total - total // 2
            self._reversed_padding_repeated_twice = pads
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(padding) for _ in range(2)]
        if self._transposed:
            shape = (in_channels, out_channels // groups) + kernel_size
        else:
            shape = (out_channels, in_channels // groups) + kernel_size
        self.weight = Parameter(ec.empty(shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(ec.empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        # kaiming_uniform_ with a=sqrt(5): U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as PyTorch
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"
        s += f", stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault("padding_mode", "zeros")


class _Conv(_ConvNd):
    _fn = None

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        super().__init__()
        self._setup(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            0,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def _conv_forward(self, input, weight, bias):
        conv = type(self)._fn
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(
                padded, weight, bias, self.stride, (0,) * self._dims, self.dilation, self.groups
            )
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C, L) or (C, L) inputs."""

    _dims = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C, H, W) or (C, H, W) inputs.

    >>> Conv2d(1, 8, 3, padding=1)(ember_core.randn(2, 1, 8, 8)).shape
    ember.Size([2, 8, 8, 8])
    """

    _dims = 2
    _fn = staticmethod(F.conv2d)


class Conv3d(_Conv):
    _dims = 3
    _fn = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    _transposed = True
    _fn = None

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__()
        self._setup(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            output_padding,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def _output_padding(self, input, output_size):
        """The output_padding that gives output_size (or the module's own)."""
        if output_size is None:
            return self.output_padding
        n = self._dims
        batched = input.dim() == n + 2
        lead = 2 if batched else 1
        output_size = list(output_size)
        if len(output_size) == lead + n:
            output_size = output_size[lead:]
        if len(output_size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or "
                f"{lead + n} elements "
                f"(got {len(output_size)})"
            )
        mins, maxs = [], []
        for d in range(n):
            size = (
                (input.shape[d + lead] - 1) * self.stride[d]
                - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1)
                + 1
            )
            mins.append(size)
            maxs.append(size + self.stride[d] - 1)
        for size, lo, hi in zip(output_size, mins, maxs):
            if size < lo or size > hi:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from "
                    f"{mins} to {maxs} "
                    f"(for an input of {input.shape[lead:]})"
                )
        return tuple(s - lo for s, lo in zip(output_size, mins))

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return type(self)._fn(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            output_padding,
            self.groups,
            self.dilation,
        )


class ConvTranspose1d(_ConvTransposeNd):
    _dims = 1
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """The gradient of Conv2d with respect to its input, as a layer (upsampling)."""

    _dims = 2
    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    _dims = 3

    @staticmethod
    def _fn(*args):
        return F.conv_transpose3d(*args)


# ------------------------------------------------------------------ lazy


class _LazyConvMixin(LazyModuleMixin):
    """in_channels comes from the first input (dim 1, or 0 when unbatched)."""

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input):
        batched_dims = self._dims + 2
        if input.dim() not in (batched_dims - 1, batched_dims):
            raise RuntimeError(
                f"Expected {batched_dims - 1}D (unbatched) or {batched_dims}D (batched) input to "
                f"{type(self).__name__}, but got input of size: {input.shape}"
            )
        return input.shape[1] if input.dim() == batched_dims else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            with ag.no_grad():
                if self.transposed:
                    self.weight.materialize(
                        (self.in_channels, self.out_channels // self.groups) + self.kernel_size
                    )
                else:
                    self.weight.materialize(
                        (self.out_channels, self.in_channels // self.groups) + self.kernel_size
                    )
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()


def _lazy_conv(name, base):
    def __init__(
        self,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        # LazyModuleMixin.__init__ runs base.__init__, then adds the hooks
        LazyModuleMixin.__init__(
            self,
            0,
            0,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            False,
            padding_mode,
            device,
            dtype,
        )
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    return type(
        name,
        (_LazyConvMixin, base),
        {
            "cls_to_become": base,
            "__init__": __init__,
            "__doc__": f"A {base.__name__} whose in_channels is inferred.",
        },
    )


def _lazy_conv_transpose(name, base):
    def __init__(
        self,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        LazyModuleMixin.__init__(
            self,
            0,
            0,
            kernel_size,
            stride,
            padding,
            output_padding,
            groups,
            False,
            dilation,
            padding_mode,
            device,
            dtype,
        )
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    return type(
        name,
        (_LazyConvMixin, base),
        {
            "cls_to_become": base,
            "__init__": __init__,
            "__doc__": f"A {base.__name__} whose in_channels is inferred.",
        },
    )


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d)
LazyConvTranspose1d = _lazy_conv_transpose("LazyConvTranspose1d", ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv_transpose("LazyConvTranspose2d", ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv_transpose("LazyConvTranspose3d", ConvTranspose3d)
