"""``python -m hepbdt``: the command line of :func:`hepbdt.cli.main`, as the ``hepbdt``
script runs it (for an environment whose scripts are not on ``PATH``)."""

from __future__ import annotations

import sys

from hepbdt.cli import main

if __name__ == "__main__":
    sys.exit(main())
