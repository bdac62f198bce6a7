"""tfgradmigrate: migrate TF1 gradient code to TF2 and prove each change.

Importing this package is cheap on purpose: no libcst, no TensorFlow.
The pipeline (discover -> parse -> analyse -> transform -> write -> verify)
lives in :mod:`migrator.pipeline`.
"""

__version__ = "0.1.0"
