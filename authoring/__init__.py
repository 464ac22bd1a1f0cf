"""Instructors' tools: build exercises from solutions, apply the glossary, export the site."""

import grader as _grader  # noqa: E402,F401  (its import keeps nbformat quick to load)
