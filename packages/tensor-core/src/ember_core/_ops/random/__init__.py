"""Generators and the random ops, and the per-element-parameter samplers."""
