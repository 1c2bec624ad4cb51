"""Data files shipped inside the package (read by minimegatron.data.datasets)."""
