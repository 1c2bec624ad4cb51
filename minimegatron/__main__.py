"""``python -m minimegatron ...`` is the same as the ``minimegatron`` command."""
import sys

from minimegatron.cli import main

sys.exit(main())
