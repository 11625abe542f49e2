"""Plug-ins that live in the tests (:mod:`chaosdb.core.plugins`)."""
