"""ngshare as the course's hub runs it: a managed service, on the loopback only.

Run by the Python of ngshare's own environment (``make ngshare-env``), as
JupyterHub starts a managed service (``HUB_EXCHANGE=ngshare``): the arguments
are ngshare's own (``--admins``, ``--database``, ``--storage``). Two things
ngshare 0.6.0 does are not allowed here:

- it listens on every interface (``0.0.0.0``): here on ``127.0.0.1`` only, where
  the hub's proxy and the students' servers reach it;
- ``--debug`` answers an unknown address with the service's whole environment,
  its hub token among it, and ``--vngshare`` believes any ``?user=`` it is
  given: either lets a student act as anyone. Both are refused (as are their
  abbreviations, which argparse would accept).
"""

from __future__ import annotations

import sys
from typing import Any

REFUSED = ("--debug", "--vngshare")  #: ngshare's options that give a student anyone's rights
LOOPBACK = "127.0.0.1"


def refused(argv: list[str]) -> str | None:
    """The first argument naming a refused option (or an abbreviation of one), else None."""
    for argument in argv:
        name = argument.split("=", 1)[0]
        if len(name) > 2 and any(option.startswith(name) for option in REFUSED):
            return argument
    return None


def main(argv: list[str]) -> None:
    """Start ngshare with ``argv``, listening on the loopback only."""
    bad = refused(argv)
    if bad is not None:
        sys.exit(f"error: ngshare must not run with {bad}: it would let a student act as anyone")
    from tornado.httpserver import HTTPServer

    listen = HTTPServer.listen

    def on_loopback(self: HTTPServer, port: int, address: str = "", **kwargs: Any) -> None:
        listen(self, port, LOOPBACK, **kwargs)

    HTTPServer.listen = on_loopback  # type: ignore[method-assign]
    from ngshare.ngshare import main as ngshare_main

    ngshare_main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
