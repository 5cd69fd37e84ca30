"""The layer every other part of ember_core is written with: the C kernels
(lib), the op table and its dispatch (dispatch, autocast), argument errors,
shape arithmetic, named-tuple results, runtime settings, and finding
ember_autograd."""
