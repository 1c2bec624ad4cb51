"""The classroom: student copies with blanks, the grader, and the gradebook for a class.

exercises.py        the EXERCISE blocks, `exercises make` (a copy with blanks)
grader.py           grade one copy: run the student's block, judge the evidence
gradebook.py        grade a whole class in one command
exercise_checks/    one Lesson per exercise: the evidence it collects and the points it judges
"""
