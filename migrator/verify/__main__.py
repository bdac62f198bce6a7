"""``python -m migrator.verify ORIGINAL MIGRATED [--json] [--rtol R] [--atol A] [--timeout S]``."""
from __future__ import annotations

import argparse
import sys

from migrator.verify import cli_verify


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tfgradmigrate verify",
                                 description="Run ORIGINAL (TF1 semantics) and MIGRATED (TF2) and compare gradients.")
    ap.add_argument("original")
    ap.add_argument("migrated")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--rtol", type=float, default=None, help="relative tolerance (default: by dtype)")
    ap.add_argument("--atol", type=float, default=None, help="absolute tolerance (default: by dtype)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per side (default 300)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    return cli_verify(args.original, args.migrated, json_output=args.json, rtol=args.rtol, atol=args.atol,
                      timeout=args.timeout)


if __name__ == "__main__":
    sys.exit(main())
