"""``python -m migrator.verify ...``: the same click command as ``tfgradmigrate verify``."""
from __future__ import annotations

import sys

from migrator.cli import verify_command


def main(argv=None) -> int:
    return verify_command.main(args=argv, prog_name="python -m migrator.verify")


if __name__ == "__main__":
    sys.exit(main())
