"""Parallel schemes built on comm.py, one folder per scheme.

grid.py (the dp x pp x tp rank layout), split.py (who holds which rows),
data_parallel/, tensor_parallel/, pipeline_parallel/ and threed.py (all three).
"""
