"""DDP's flat gradient buffer: ``FlatBuffer`` lives in minimegatron/flat.py.

It moved there because the optimizers (optim.py, ``flat=True``) keep their
weights and state in the same kind of buffer, and optim.py sits below
``parallel/``. This import path stays for ddp.py, the tests and the exercises.
"""
from minimegatron.flat import FlatBuffer

__all__ = ["FlatBuffer"]
