"""The run of an experiment as a whole: its context, its arguments checked before anything starts, its verdict after.

What is in it:

* ``checks``: Every activity of an experiment checked against its function's argument rules, values substituted
* ``context``: One run context: the state of one ``chaos run``, in one object that the first control of the pack creates
* ``control``: Chaos Toolkit control
* ``malformed``: What is wrong with a malformed experiment file, in plain sentences
* ``refusals``: Why a control stopped the run
* ``secrets``: An experiment's secrets kept out of the journal Chaos Toolkit writes and out of the run's log
* ``shape``: The shape of a Chaos Toolkit experiment as one typed model
* ``verdict``: What a run's journal says happened, in one plain sentence, and the status the run must end with
"""
