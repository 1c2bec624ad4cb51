"""``minimegatron exercises list | make DIR | solve DIR ID...``: student copies.

The blocks, the copy with blanks and the solutions put back are
``minimegatron/classroom/exercises.py``; this is the command: its arguments and what
it prints (the files written, the next steps).
"""
import sys

from minimegatron import i18n
from minimegatron.classroom import exercises
from minimegatron.classroom.exercise_checks import CHAPTERS, EXERCISES
from minimegatron.commands.parser import ArgumentParser, RawDescriptionHelpFormatter, say
from minimegatron.i18n.columns import fit, width


def parser():
    """``exercises list | make DIR [--force] | solve DIR ID...``, every argument with help."""
    def msg(key):
        return say(f"cli.exercises.{key}")
    ap = ArgumentParser(
        prog="minimegatron exercises", formatter_class=RawDescriptionHelpFormatter,
        description=msg("description"), epilog=msg("epilog"))
    sub = ap.add_subparsers(dest="action", required=True, help=msg("action"))
    sub.add_parser("list", help=msg("list"), description=msg("list"))
    make_parser = sub.add_parser("make", help=msg("make"), description=msg("make"))
    make_parser.add_argument("dir", metavar="DIR", help=msg("make_dir"))
    make_parser.add_argument("--force", action="store_true", help=msg("force"))
    solve_parser = sub.add_parser("solve", help=msg("solve"), description=msg("solve"))
    solve_parser.add_argument("dir", metavar="DIR", help=msg("solve_dir"))
    solve_parser.add_argument("exercise", nargs="+", metavar="ID", help=msg("ids"))
    return ap


def main(argv=None):
    """`minimegatron exercises list | make DIR | solve DIR ID...`: 0, or 2 on an error."""
    opts = parser().parse_args(argv)
    if opts.action == "list":
        blocks = exercises.find_blocks()
        titles = [i18n.exercise_text(ex, "title") for ex in EXERCISES]
        size = max(48, *(width(title) + 1 for title in titles))    # Hangul: 2 columns
        for ex, title in zip(EXERCISES, titles):
            where = (f"minimegatron/{blocks[ex.id].path}:{blocks[ex.id].begin + 1}"
                     if ex.id in blocks else say("cli.exercises.not_marked"))
            print(f"{ex.id:<5} {fit(title, size, '<')} {where}")
        print("\n" + say("cli.exercises.order"))
        for chapter in CHAPTERS:
            print(f"{chapter.id:>4}  {exercises.order_text(chapter)}\n"
                  f"      {i18n.chapter_text(chapter)}")
        return 0
    try:
        if opts.action == "make":
            for path in exercises.make(opts.dir, force=opts.force):
                print(say("cli.wrote", path=path))
            print(say("cli.exercises.next_student", path=opts.dir))
            print(say("cli.exercises.next_teacher", path=opts.dir))
        else:
            known = list(exercises.find_blocks())
            ids = [i for spec in opts.exercise for i in exercises.select(spec, known)]
            exercises.solve(opts.dir, ids)
            print(say("cli.exercises.solved", ids=", ".join(ids), path=opts.dir))
    except (ValueError, FileExistsError, OSError) as err:
        print(say("cli.exercises.error", error=err), file=sys.stderr)
        return 2
    return 0
