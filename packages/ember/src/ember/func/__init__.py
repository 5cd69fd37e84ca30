"""ember.func: composable function transforms, as ``torch.func``.

    grad, grad_and_value   gradients of a scalar function (argnums, has_aux)
    vjp, jvp, linearize    vector-Jacobian / Jacobian-vector products
    jacrev, jacfwd, hessian
    vmap                   map a function over a batch dimension
    functional_call        call a module with other parameters/buffers
    stack_module_state     stack an ensemble's parameters for vmap

Per-sample gradients, the main use:

>>> params = {k: v.detach() for k, v in model.named_parameters()}
>>> def loss(p, x, y):
...     return F.cross_entropy(functional_call(model, p, (x[None],)), y[None])
>>> per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)

How ember implements them (torch.func wraps tensors per transform level; ember
has no such wrappers):

- grad/vjp/jvp/jacrev/jacfwd/hessian run on ember's tape autograd; nesting
  works by keeping graphs for the enclosing level (Note [Transform levels] in
  _transforms.py).  jvp uses the double-vjp identity; jacfwd is computed by
  reverse mode (same values and layout as torch's).
- vmap calls the function once per batch element and stacks the results
  (see _vmap.py): results, shapes and argument errors follow torch.vmap;
  randomness='error' refuses random ops, 'same' replays the generator state
  for every element.  It costs one Python call per element.
"""

from ember.func._module_state import functional_call, stack_module_state
from ember.func._transforms import (
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    vjp,
)
from ember.func._vmap import vmap

__all__ = [
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "stack_module_state",
    "vjp",
    "vmap",
]
