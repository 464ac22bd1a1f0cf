"""The instructor's commands: `grade batch` (a class into a gradebook), `grade fixtures`, and the
Gradescope runner that ``course gradescope`` packs into an autograder."""
