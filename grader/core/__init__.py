"""The grading core: grade one notebook in a fresh, limited kernel and gather a GradeReport.

Everything else in the grader (reports, the student's and the instructor's commands) builds on it;
it imports none of them, nor ``grader.checks``: it finds an exercise's checks by name
(``registry``) and runs them in the grading kernel. What both sides need (declarations, error
text, results) lives here.
"""
