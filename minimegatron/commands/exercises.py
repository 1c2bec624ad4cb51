"""``minimegatron exercises list | make DIR | solve DIR ID...``: student copies.

The blocks, the copy with blanks and the solutions put back are
``minimegatron/classroom/exercises.py``; this is the command: its arguments and what
it prints (the files written, the next steps).
"""
import argparse
import sys

from minimegatron.classroom import exercises
from minimegatron.classroom.exercise_checks import EXERCISES


def main(argv=None):
    """`minimegatron exercises list | make DIR | solve DIR ID...`: 0, or 2 on an error."""
    parser = argparse.ArgumentParser(
        prog="minimegatron exercises", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="classroom copies with blanked blocks", epilog="""\
hand out:   minimegatron exercises make class/alice     (one copy per student)
the student installs the copy:  pip install -e 'class/alice[mpi,plot]'
collect the copies into class/, then grade them all:
            minimegatron grade --class class/ --csv book.csv --json book.json
a copy may change the exercise blocks only; any other change is reported
(CHANGED) and never passes. The teacher's guide: docs/teaching.md.""")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("list", help="the exercises and the file each one is in")
    make_parser = sub.add_parser("make", help="write a student copy into DIR")
    make_parser.add_argument("dir")
    make_parser.add_argument("--force", action="store_true",
                             help="write into a non-empty DIR (its minimegatron/ is replaced)")
    solve_parser = sub.add_parser("solve", help="put reference solutions back into a copy")
    solve_parser.add_argument("dir")
    solve_parser.add_argument("exercise", nargs="+", help="ids, groups, or all")
    opts = parser.parse_args(argv)
    if opts.action == "list":
        blocks = exercises.find_blocks()
        for ex in EXERCISES:
            where = (f"minimegatron/{blocks[ex.id].path}:{blocks[ex.id].begin + 1}"
                     if ex.id in blocks else "(not marked in this package)")
            print(f"{ex.id:<5} {ex.title:<48} {where}")
        return 0
    try:
        if opts.action == "make":
            for path in exercises.make(opts.dir, force=opts.force):
                print(f"wrote {path}")
            print(f"next (student): python3 -m venv venv && . venv/bin/activate && "
                  f"pip install -e '{opts.dir}[mpi,plot]'\n"
                  f"next (teacher): minimegatron grade --path {opts.dir}   (every exercise "
                  "is TODO at first)")
        else:
            known = list(exercises.find_blocks())
            ids = [i for spec in opts.exercise for i in exercises.select(spec, known)]
            exercises.solve(opts.dir, ids)
            print(f"solved {', '.join(ids)} in {opts.dir}")
    except (ValueError, FileExistsError, OSError) as err:
        print(f"minimegatron exercises: {err}", file=sys.stderr)
        return 2
    return 0
