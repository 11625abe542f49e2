"""Chaos Mesh: create, watch, pause and delete chaos objects aimed at database roles."""
