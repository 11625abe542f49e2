"""Checkers of recorded operation histories: ``linearizable`` (single-key registers, Wing & Gong with Lowe's cache)."""
