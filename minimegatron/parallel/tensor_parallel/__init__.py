"""Tensor parallelism: f and g (mappings.py), column/row layers (linear.py), the GPT (gpt.py)."""
