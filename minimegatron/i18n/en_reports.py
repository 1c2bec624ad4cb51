"""English texts of the memory and timeline commands' tables and lines (tools/memory*.py,
tools/scaling.py, commands/memory.py, commands/timeline.py): key -> template."""

MESSAGES = {
}
