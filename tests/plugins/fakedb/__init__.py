"""A database that lives outside chaosdb: what adding one takes is this folder and one entry-point line
(``fakedb = tests.plugins.fakedb`` in the group ``chaosdb.plugins``), used by tests/unit/test_plugins.py."""
