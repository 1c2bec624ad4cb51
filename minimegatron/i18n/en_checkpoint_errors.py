"""English messages of a checkpoint that cannot be written, read or loaded (tools/checkpoint*.py):
key -> template. ``ckpt.err.corrupt`` is "checkpoint PATH is corrupt: {why}", the why one
of the ``ckpt.why.*`` texts."""

MESSAGES = {
    "ckpt.err.empty_path": "checkpoint: the path is empty or not a path ({path!r})",
    "ckpt.err.directory": "checkpoint: {path!r} is a directory, not a file",
    "ckpt.err.nan_save": "checkpoint {path!r}: {key} holds NaN or inf; not saved (the "
                         "previous file is kept)",
    "ckpt.err.meta_size": "checkpoint {path!r}: meta takes {nbytes} bytes, more than {limit} "
                          "(is rng_state that large?)",
    "ckpt.err.no_file": "checkpoint {path!r}: no such file",
    "ckpt.err.too_big": "checkpoint {path!r} is {size} bytes, more than the {limit} a "
                        "checkpoint of this model can take",
    "ckpt.err.unreadable": "checkpoint {path!r} is truncated or corrupt (cannot read it: "
                           "{error})",
    "ckpt.err.corrupt": "checkpoint {path!r} is corrupt: {why}",
    "ckpt.err.nan_load": "checkpoint {path!r}: array {key!r} holds NaN or inf",
    "ckpt.err.format": "checkpoint {path!r}: format/version {got!r}, expected {format!r} "
                       "version {version}",
    "ckpt.err.disagree": "checkpoint: ranks disagree on the full shape of {name} ({first} vs "
                         "{shape} on rank {rank})",
    "ckpt.err.stream": "checkpoint {path!r}: dropout stream {name!r} holds an unusable state "
                       "({error})",
    "ckpt.err.config": "checkpoint {path!r} was saved for a different config: {differ}",
    "ckpt.err.optimizer_class": "checkpoint {path!r} holds {saved} state, this run uses {ours}",
    "ckpt.err.names": "checkpoint {path!r}: parameter names differ from the model's (only in "
                      "file: {in_file}, only in model: {in_model})",
    "ckpt.err.shape": "checkpoint {path!r}: {name} is {shape} in the file, this model's is "
                      "{ours}",
    "ckpt.err.optimizer_kind": "checkpoint {path!r} holds the state of {saved} (per weight: "
                               "{fields}); this run's optimizer is {ours} (keeps: {our_fields})",
    "ckpt.err.optimizer_params": "checkpoint: the optimizer's parameters are not exactly the "
                                 "model's parameters",
    "ckpt.err.no_config": "checkpoint: pass config=GPTConfig(...) (the model has no .config)",
    "ckpt.err.save": "checkpoint: could not save {path!r}: {error}",
    "ckpt.err.state_keys": "checkpoint: {count} optimizer state arrays per weight, at most "
                           "{most} are supported",
    "ckpt.err.load": "checkpoint {path!r} cannot be loaded ({error})",
    "ckpt.why.duplicate": "duplicate zip entries",
    "ckpt.why.compressed": "entry {name!r} is compressed or encrypted (the format stores "
                           "arrays as they are)",
    "ckpt.why.declared": "its entries declare more bytes than the file holds",
    "ckpt.why.no_meta": "no readable 'meta' record",
    "ckpt.why.missing": "arrays {arrays} are missing or unlisted",
    "ckpt.why.listed_as": "array {key!r} is listed as {shape} {dtype} in {size} bytes, "
                          "expected {want_shape} {want_dtype}",
    "ckpt.why.too_big": "{size} bytes, more than its arrays need",
    "ckpt.why.checksum": "array {key!r} does not match its recorded shape/dtype/crc32 checksum",
    "ckpt.why.not_npy": "{name} is not a .npy array of version 1 or 2",
    "ckpt.why.holds": "{name} holds {shape} {dtype} in {size} bytes",
    "ckpt.why.truncated": "{name} is truncated",
    "ckpt.why.too_long": "{name} is too long",
    "ckpt.why.no_listing": "no array listing in meta",
    "ckpt.why.meta_lists": "meta lists {key!r} as {info!r}",
    "ckpt.why.state_dtypes": "optimizer state dtypes {dtypes!r}",
    "ckpt.why.mixed": "mixed-precision record {record!r}",
    "ckpt.why.expert_bias": "bad expert bias record (aux-loss-free balancing)",
    "ckpt.why.moe": "its MoE config is {saved!r}",
    "ckpt.why.no_config": "no config in meta",
    "ckpt.why.records": "bad optimizer or rng record",
}
