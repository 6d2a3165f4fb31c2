"""The `sparrow` command line (see main.py)."""
