"""numba kernels over flat array.array buffers. They know nothing of Tensors or autograd."""
