"""The version of sparrow-core, written only here: pyproject.toml reads it (dynamic version), and
`sparrow_core.__version__` and `sparrow --version` show it."""

__version__ = "0.1.0"
