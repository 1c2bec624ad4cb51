"""Tools around the schemes: memory calculator, timelines, checkpoints."""
