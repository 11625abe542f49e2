"""Database-aware checks as a command and as HTTP endpoints, for platforms that know no database.

A Chaos Mesh Workflow (a ``Task`` container, a ``StatusCheck`` of type HTTP) or a LitmusChaos experiment (a
``cmdProbe``, an ``httpProbe``) can tell whether a URL answers or a command exits 0, not whether a Patroni cluster
has a primary or a TiKV region has a leader. Checks are Chaos Toolkit probes with their tolerances (this pack's
probes, or any others), judged exactly as a steady-state hypothesis judges them: ``chaosdb check`` evaluates them
once (one JSON line, exit 0, 1 or 2), ``chaosdb serve`` keeps evaluating them and answers 200 or 503 per check.

What is in it:

* ``spec``: What a check is, and where checks come from
* ``evaluate``: One check evaluated as Chaos Toolkit would judge its probe in a steady-state hypothesis
* ``command``: ``chaosdb check FILE [NAME ...]`` and ``chaosdb serve FILE``
* ``server``: ``chaosdb serve``: the checks as HTTP endpoints
"""
