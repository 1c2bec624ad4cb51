"""Every `minimegatron ...` command: cli.py dispatches, each command parses its arguments.

argparse and printing live here only; the layers below take plain arguments.

cli.py        the dispatcher: `minimegatron COMMAND [args]`
entry.py      what every entry point does first: the banner, one-line usage errors
argtypes.py   argparse types that reject nonsense in one line
run.py        `minimegatron run`: launch a script or command on N MPI ranks
verify.py     `minimegatron verify`: every scheme against one process
memory.py     `minimegatron memory`: parameters, memory, FLOPs and the scaling model
calibrate.py  `minimegatron calibrate`: this machine's GEMM and MPI rates
timeline.py   `minimegatron timeline`: a schedule or a traced run as a picture
exercises.py  `minimegatron exercises`: make a student copy
grade.py      `minimegatron grade`: grade one copy, or a class
sample.py     `minimegatron sample`: a trained GPT writes text
"""
