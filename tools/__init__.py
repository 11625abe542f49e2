"""Generators of the shipped experiments and templates, and the experiment validator: development tools, not
part of the installed package. Run each from the repository root, e.g. ``python -m tools.make_experiments``."""
