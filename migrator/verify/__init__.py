"""Differential verification of migrations: run both versions, compare gradients.

Importing this package never imports TensorFlow; TensorFlow runs only in the
child processes started by :mod:`migrator.verify.engine`.  See
``docs/verification.md``.
"""
from __future__ import annotations

INSTALL_HINT = "pip install 'tfgradmigrate[verify]'"


def tensorflow_available() -> bool:
    """Whether TensorFlow can be imported here, without importing it."""
    import importlib.util
    import sys

    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"] is not None
    try:
        return importlib.util.find_spec("tensorflow") is not None
    except (ImportError, ValueError):
        return False


def cli_verify(original, migrated, json_output=False, rtol=None, atol=None, timeout=None, **options):
    from migrator.verify.report import cli_verify as _cli_verify

    return _cli_verify(original, migrated, json_output=json_output, rtol=rtol, atol=atol, timeout=timeout,
                       **options)


def verify_files(pairs, rtol=None, atol=None, timeout=None, jobs=1):
    from migrator.verify.sites import verify_files as _verify_files

    return _verify_files(pairs, rtol=rtol, atol=atol, timeout=timeout, jobs=jobs)


__all__ = ["INSTALL_HINT", "cli_verify", "tensorflow_available", "verify_files"]
