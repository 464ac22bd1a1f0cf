"""Set in the grading kernel's environment, so notebook code can tell it is being graded."""

GRADER_ENV = "COURSE_GRADER_ACTIVE"
