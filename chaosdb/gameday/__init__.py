"""Game days: suites of repeated runs, target cycling, sweeps and UPB scenarios; a resumable runner;
the aggregated report; a regression gate. See ``chaosdb.gameday.suite`` for the suite format."""
