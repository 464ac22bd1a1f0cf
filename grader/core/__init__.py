"""The grading core: grade one notebook in a fresh, limited kernel and gather a GradeReport.

Everything else in the grader (reports, the student's and the instructor's commands) builds on it;
it imports none of them, only ``grader.checks`` (the checks it runs).
"""
