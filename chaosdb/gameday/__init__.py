"""Game days: suites of repeated runs, target cycling, sweeps and UPB scenarios; a resumable runner;
the aggregated report; a regression gate. See ``chaosdb.gameday.suite`` for the suite format.

What is in it:

* ``aggregate``: A game day's numbers, aggregated over its runs
* ``cli``: ``chaosdb gameday``
* ``cluster_steps``: The between-run steps of a game day on the embedded cluster
* ``gate``: Regression gate
* ``manifest``: A game day's results directory as the runner keeps it
* ``render``: The aggregated game-day report written from :func:`chaosdb.gameday.aggregate.aggregate`
* ``runner``: Run a game-day suite into a results directory, resumably
* ``suite_schema``: the suite file's model (pydantic): its checks, and its JSON Schema for editors
"""
