"""The classroom: student copies with blanks, the grader, and the gradebook for a class.

exercises.py        the EXERCISE blocks, `exercises make` (a copy with blanks)
grader.py           grade one copy: run the student's block, judge the evidence
gradebook.py        grade a whole class in one command
blank.py            a blank block's message in the reader's language
exercise_checks/    one Lesson per exercise: the evidence it collects and the points it judges
"""
import os

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # .../minimegatron
