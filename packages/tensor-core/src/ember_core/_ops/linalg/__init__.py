"""Matrix products, the LU family and distances (the public torch.linalg
namespace is ember_core.linalg)."""
