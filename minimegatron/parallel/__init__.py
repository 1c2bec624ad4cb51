"""Parallel schemes built on comm.py: grid, data, zero, tensor, pipeline."""
