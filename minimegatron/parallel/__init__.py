"""Parallel schemes built on comm/, one folder per scheme.

grid.py (the dp x pp x tp rank layout), split.py (who holds which rows),
data_parallel/, tensor_parallel/, pipeline_parallel/ and threed.py (all three).
"""
