"""English table headers and row labels of the tutorials (tutorials/*.py), one key a line.

A header is the whole line, columns aligned as the rows below it print; a row label is
one cell. Keys start with the tutorial's number (tests/test_tutorials_ko.py checks that
each tutorial prints only its own keys, with the fields it passes).
"""

MESSAGES = {
    "t01.group": "group",
    "t03.serial": "serial",
    "t03.parameters": "parameters",
    "t03.per_step": "all-reduces / step",
    "t07.stage": "PipelineStage({stage}/{stages}, blocks {blocks}, {params:,} parameters)",
    "t08.group": "group",
    "t08.head_bytes": "rank (dp,pp,tp)   params  weights B   grads B  Adam m,v B  dp sent B  "
                      "pp sent B  tp sent B",
    "t05.head_losses": "step     serial  DataParallel        DDP",
    "t05.head_bytes": "rank    DP sent    DP recv   DDP sent   DDP recv  DP grads+optim",
    "t06.head_losses": "step      ZeRO-0      ZeRO-1      ZeRO-2      ZeRO-3",
    "t06.head_memory": "stage              weights               grads           optimizer"
                       "               total peak gathered  sent/step  model",
    "t07.head_table": "\nschedule   M       pipeline loss       serial loss   |diff|  bubble: "
                      "formula  emulated   plain  in flight per stage  peak KiB per stage",
    "t08.step_line": "step {step:3d}  loss {loss:.6f}  serial {serial:.6f}  |diff| {diff:.1e}"
                     "  {ms:7.1f} ms",
    "t08.head_losses": "\nstep      3D loss  serial loss    |diff|",
    "t10.one_process": "one process",
    "t10.sp_row": "tp={t} + sequence",
    "t12.head_tokens": "rank  contiguous            zigzag                 ring blocks  pairs "
                       "contig.  pairs zigzag",
    "t12.head_variants": "variant            Y       dQ       dK       dV   sent (trace)   "
                         "formula",
    "t12.head_bytes": "variant        measured  calculator",
    "t12.head_steps": "step  loss, one process   loss, {cp} mean   |loss diff|   |grad diff| "
                      "|weight diff|",
    "t13.head_table": "schedule   bubble ms  simulated   table  makespan ms  simulated         "
                      "       loss         serial loss   |diff|",
    "t14.head_losses": "step   one process{ep:>14}    |diff|  assignments per expert      "
                       "rows per rank",
    "t14.head_tokens": "token  id  experts   kept",
    "t14.head_factor": "  factor   C       dropped   tokens with no expert",
    "t14.head_a2a": "all-to-all             calls  bytes each (trace)  formula",
    "t14.head_memory": "                            measured  calculator",
    "t14.expert_params": "expert parameters",
    "t14.dense_params": "dense parameters",
    "t14.dispatch_buffer": "dispatch buffer (bytes)",
}
