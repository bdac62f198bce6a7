"""The one data model that rewrites, reports and the verifier share."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

MIGRATED = "migrated"
MANUAL = "manual"
#: a manual site acknowledged by ``# tfgradmigrate: ignore[CODE]`` (migrator/suppress.py):
#: reported and counted, but it no longer fails the run
IGNORED = "ignored"

# Site kinds (stable strings; they appear in every report format).
OVERRIDE_MAP = "override_map"
REGISTER_GRADIENT = "register_gradient"
TF_GRADIENTS = "tf_gradients"
JACOBIAN = "jacobian"
HESSIANS = "hessians"
PY_FUNC_GRADIENT = "py_func_gradient"


@dataclass
class Site:
    """One place in a file that the migrator rewrote or refused to rewrite.

    ``line``/``col`` are 1-based positions in the *original* file.
    ``new_line`` is where the replacement starts in the migrated file (None for
    manual sites); the verifier uses it to pair old and new gradient values.
    ``proof`` lists the soundness obligations discharged for a migrated site, in
    words (docs/soundness.md); ``assumptions`` the ones taken on trust instead,
    which only ``--unsafe-fixes`` allows: a site with assumptions is an unsafe fix.
    """

    kind: str
    code: str
    line: int
    col: int = 1
    status: str = MANUAL
    reason: str = ""
    new_line: Optional[int] = None
    notes: list[str] = field(default_factory=list)
    verification: Optional[dict] = None
    proof: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)

    @property
    def migrated(self) -> bool:
        return self.status == MIGRATED

    @property
    def unsafe(self) -> bool:
        """Migrated only because --unsafe-fixes accepted its assumptions."""
        return self.status == MIGRATED and bool(self.assumptions)

    def to_json(self) -> dict:
        data = {
            "kind": self.kind,
            "code": self.code,
            "line": self.line,
            "col": self.col,
            "status": self.status,
            "reason": self.reason,
            "new_line": self.new_line,
            "notes": list(self.notes),
            "proof": list(self.proof),
            "assumptions": list(self.assumptions),
        }
        if self.verification is not None:
            data["verification"] = self.verification
        return data


@dataclass
class FileResult:
    """What happened to one input file."""

    path: str
    changed: bool = False
    error: Optional[str] = None
    sites: list[Site] = field(default_factory=list)
    original: Optional[str] = None  # decoded text, kept only when a diff/report needs it
    migrated: Optional[str] = None

    @property
    def manual(self) -> list[Site]:
        return [s for s in self.sites if s.status == MANUAL]

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "changed": self.changed,
            "error": self.error,
            "sites": [s.to_json() for s in self.sites],
        }
