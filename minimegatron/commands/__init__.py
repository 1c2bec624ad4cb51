"""Every `minimegatron ...` command: cli.py dispatches, each command parses its arguments."""
