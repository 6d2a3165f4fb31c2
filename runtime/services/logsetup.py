"""Logging for the `sparrow` commands: standard `logging` to stderr, one line per event.

Every record becomes one line (a traceback's newlines are written as "\\n"), with time, level and
logger name. The cluster secret, if given, is replaced by "***" wherever it would appear, as a
safety net: the runtime never logs it on purpose.
"""

from __future__ import annotations

import logging
import sys

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_LEVELS = ("debug", "info", "warning", "error")


class OneLineFormatter(logging.Formatter):
    def __init__(self, secrets: list[str]) -> None:
        super().__init__(FORMAT)
        self._secrets = [s for s in secrets if s]

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text.replace("\r", "").replace("\n", "\\n")


def setup_logging(level: str, *, secret: bytes | str | None = None) -> None:
    """Send every log record of level `level` ("debug", "info", ...) or above to stderr."""
    if isinstance(secret, bytes):
        secret = secret.decode(errors="replace")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter([secret] if secret else []))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
