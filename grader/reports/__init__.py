"""What a grading shows: text for the terminal, HTML for Jupyter and feedback pages, JSON, JUnit XML;
and what the command lines share with the terminal (``console``). Built on ``grader.core``.
"""
