"""Make tests/mpi_harness.py and the repository's minimegatron importable from every test."""
import os
import sys

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
for path in (TESTS_DIR, os.path.dirname(TESTS_DIR)):
    if path not in sys.path:
        sys.path.insert(0, path)
