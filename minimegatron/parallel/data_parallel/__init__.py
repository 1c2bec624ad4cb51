"""Data parallelism: master style (master.py), DDP (ddp.py) and ZeRO (zero.py)."""
