"""The neural-network ops: activations, convolution, pooling, resampling,
normalization, softmax, losses, dropout, embedding, attention, recurrent
cells, grid sampling and mixed precision (amp); nnutil and spatial hold
what they share."""
