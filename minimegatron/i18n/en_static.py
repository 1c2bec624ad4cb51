"""English texts of the static read (classroom/static_read.py): the SUSPECT verdict.

``static.<kind>`` says why one line of a block is SUSPECT; ``{name}`` is what was
found there. Same keys and {fields} in ko_static.py (tests/test_static_read.py).
"""

MESSAGES = {
    "grader.result.SUSPECT": "SUSPECT",
    "static.suspect": "SUSPECT: the block was not run. Reading it before the run found "
                      "{count} thing(s) an exercise never needs; the teacher reads each line:",
    "static.line": "{path}:{line}: {code}\n  <- {reason}",
    "static.more": "... and {count} more line(s)",
    "static.import": "imports {name}, outside what a block may import (numpy, a few pure "
                     "helpers such as math, the package's book: docs/teaching.md)",
    "static.reaches": "reaches {name}, outside what a block may use (the interpreter, MPI "
                      "itself, the grader's own code)",
    "static.builtin": "uses {name}, which reads files or runs code the grader never sees",
    "static.dunder": "uses {name}, a dunder name (Python's own machinery)",
    "static.private": "uses {name}, a private member of another object (self._x is the only "
                      "private access a block needs)",
    "static.module": "reaches .{name}, a module the exercise never needs",
    "static.frame": "reaches {name}, the interpreter's frames or code",
    "static.spawn": "uses {name}, which starts or joins processes outside the job",
    "static.file_io": "uses {name}, which reads or writes files or raw memory",
    "static.numpy": "uses {name}, a NumPy name outside what a block may use (array math, "
                    "shapes, reductions, products: no file, pickle, raw memory or code "
                    "loading; docs/teaching.md)",
    "static.function_state": "sets {name}: an attribute on a function the block made (a "
                             "lambda, an inner def, a partial) is a hand-made object, such as "
                             "a handle whose wait does nothing",
    "static.trace": "touches {name}: the trace and the collective checks are the grader's "
                    "witnesses, not the block's to switch or to fill",
    "static.env": "names the setting {name}: the grader's switches are not the block's",
    "static.handle": "builds its own {name}: a collective's handle comes from comm's i* "
                     "functions",
    "static.class": "defines class {name} inside the block: an exercise needs none, and a "
                    "made-up object can stand in for the package's own",
    "static.global": "declares global {name}: the block rebinds a module-level name",
    "static.patch": "changes {name}, which the function does not own (a module or a "
                    "module-level object)",
    "static.alias": "passes the module {name} around as a value (the read follows a module by "
                    "its name only)",
    "static.string": "a string holds {name}: an attribute looked up by text",
    "static.escape": "a statement ({name}) indented less than the block: it left the "
                     "exercise's function",
    "static.past_end": "code ({name}) that runs on past the block's end marker",
    "static.unread": "the read could not finish this block ({name}); read it yourself",
}
