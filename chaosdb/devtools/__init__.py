"""Tools for developing and checking this pack (not activities)."""
