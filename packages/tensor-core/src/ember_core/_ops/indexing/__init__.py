"""Indexing (tensor[key]), advanced indexing and the index/gather/scatter ops."""
