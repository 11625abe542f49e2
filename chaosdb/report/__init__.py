"""Reports: journals + load samples -> degradation/recovery metrics, tables and plots."""
