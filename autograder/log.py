"""What the grader tells the person running it, through the standard ``logging``.

Every module logs to a child of the ``autograder`` logger
(``logging.getLogger(__name__)``). The console handler installed here keeps
what a terminal user has always seen: results on standard output; progress,
warnings and errors on standard error; each message one plain line, no level
or time stamp. An application that embeds the grader can remove the handler
(``logging.getLogger("autograder").handlers``) and route the records itself;
a record sent to standard error carries ``to="stderr"``.
"""

from __future__ import annotations

import logging
import sys

LOGGER = "autograder"
TO_STDERR = {"to": "stderr"}  #: ``extra=`` for an informational line meant for standard error


class Console(logging.Handler):
    """Write each record's message as a line, to the stream of the moment.

    The streams are looked up at each record, not kept: a test or a caller that
    swaps ``sys.stdout`` sees the lines.
    """

    def emit(self, record: logging.LogRecord) -> None:
        """Standard error for warnings and up and for ``to="stderr"``, else standard output."""
        to_stderr = record.levelno >= logging.WARNING or getattr(record, "to", "") == "stderr"
        stream = sys.stderr if to_stderr else sys.stdout
        try:
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


def install() -> None:
    """Give the ``autograder`` logger its console handler, once; INFO and up."""
    logger = logging.getLogger(LOGGER)
    if not any(isinstance(handler, Console) for handler in logger.handlers):
        logger.addHandler(Console())
    logger.setLevel(logging.INFO)
    logger.propagate = False
