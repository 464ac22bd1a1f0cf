"""The student's side: `grade list`, `grade hint`, `grade watch`, and ``check()`` inside notebooks."""
