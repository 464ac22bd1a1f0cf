"""Instructors' tools: build exercises from solutions, apply the glossary, export the site."""
