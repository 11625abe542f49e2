"""Reports: journals + load samples -> degradation/recovery metrics, tables and plots.

What is in it:

* ``build``: build a run's report: metrics.json, report.md, report.html, plots
* ``cli_plugin``: ``chaos db-report JOURNAL``
* ``compare``: Compare runs in the style of the thesis's Table 6.1
* ``console``: The reporter from a terminal
* ``control``: Chaos Toolkit control that writes the report when the experiment ends
* ``data``: Samples as numpy arrays for the reporter
* ``definitions``: how every figure of a report is defined (printed at the end of the report itself)
* ``findings``: what a report says first (the outage beside the verdict, throughput not recovered, availability)
* ``histories``: the section on the load's operation history (checked from the run's folder alone)
* ``html``: HTML reports from Jinja2 templates (``templates/``), plots inlined
* ``journal``: Reading Chaos Toolkit journals
* ``metrics``: Degradation and recovery metrics from samples and fault windows (``metrics.json``)
* ``operations``: Operator actions measured under load
* ``plots``: PNG plots of a run (matplotlib, Agg backend)
* ``probes``: probes that bound the outage while the run goes on (commit gap, recovery, new leader)
* ``spans``: How long each fault was in effect, and what the database did after the first one
* ``tolerance``: a probe's tolerance in words
* ``upb``: UPB degradation indices (Under Pressure Benchmark, seeds/001)
"""
