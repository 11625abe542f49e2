"""The run of an experiment as a whole: its arguments checked before anything starts, its verdict after."""
