"""Differential verification of migrations: run both versions, compare gradients.

Importing this package never imports TensorFlow; TensorFlow runs only in the
child processes started by :mod:`migrator.verify.engine`.  See
``docs/verification.md``.
"""
from __future__ import annotations


def cli_verify(original, migrated, json_output=False, rtol=None, atol=None, timeout=None):
    from migrator.verify.report import cli_verify as _cli_verify

    return _cli_verify(original, migrated, json_output=json_output, rtol=rtol, atol=atol, timeout=timeout)


def verify_files(pairs, rtol=None, atol=None, timeout=None, jobs=1):
    from migrator.verify.sites import verify_files as _verify_files

    return _verify_files(pairs, rtol=rtol, atol=atol, timeout=timeout, jobs=jobs)


__all__ = ["cli_verify", "verify_files"]
