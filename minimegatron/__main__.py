"""``python -m minimegatron ...`` is the same as the ``minimegatron`` command."""
import sys

from minimegatron.commands.cli import main

sys.exit(main())
