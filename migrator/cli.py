"""The ``tfgradmigrate`` command line.

``tfgradmigrate [OPTIONS] PATH...`` migrates; ``tfgradmigrate verify
ORIGINAL MIGRATED`` verifies a migration.  A path literally named ``verify``
still works when written ``./verify``.  Start-up imports neither libcst nor
TensorFlow.  Exit codes: 0 nothing to do, 1 changed / would change / manual
sites, 2 usage or config error, 123 some file could not be read or parsed.
"""
from __future__ import annotations

import difflib
import os
import sys
from typing import Optional

import click

from migrator import __version__, config, files, reports, runner
from migrator.model import MANUAL, FileResult
from migrator.pipeline import Options

EXIT_OK, EXIT_CHANGED, EXIT_USAGE, EXIT_ERROR = 0, 1, 2, 123
PROGRESS_THRESHOLD = 200

EPILOG = """\b
Subcommand:
  tfgradmigrate verify ORIGINAL MIGRATED   check a migration numerically
\b
Exit codes: 0 nothing to change, 1 changed / would change / manual sites,
2 usage or config error, 123 some file could not be read or parsed.
"""


class _MainCommand(click.Command):
    """Dispatches ``verify`` to the verify command; anything else migrates."""

    def main(self, args=None, prog_name=None, **extra):
        args = list(sys.argv[1:] if args is None else args)
        if args[:1] == ["verify"]:
            name = f"{prog_name or 'tfgradmigrate'} verify"
            return verify_command.main(args[1:], prog_name=name, **extra)
        return super().main(args, prog_name=prog_name or "tfgradmigrate", **extra)


def _fail_usage(message: str) -> None:
    click.echo(f"tfgradmigrate: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


@click.command(cls=_MainCommand, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option("--diff", is_flag=True, help="Print a unified diff; write nothing.")
@click.option("--check", is_flag=True, help="Write nothing; print each file that would change.")
@click.option("--report", "report_paths", multiple=True, metavar="FILE",
              help="Write a report; the format follows the extension (.json, .md, .html, .sarif). Repeatable.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: number of CPUs).")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip matching files and folders. Repeatable.")
@click.option("--annotate/--no-annotate", default=None, help="Add a TODO comment above each manual site.")
@click.option("--verify/--no-verify", "verify", default=None, help="Verify every migrated site numerically.")
@click.option("--unsafe-fixes/--no-unsafe-fixes", "unsafe_fixes", default=None,
              help="Also apply rewrites that are right only under an assumption; reports name it.")
@click.option("--select", metavar="NAMES", help="Comma-separated rewrite plugins to run (default: all).")
@click.option("--rtol", type=float, help="Verifier relative tolerance.")
@click.option("--atol", type=float, help="Verifier absolute tolerance.")
@click.option("--timeout", type=float, help="Verifier timeout per file, seconds.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="pyproject.toml to read instead of the nearest one.")
@click.option("--color/--no-color", default=None, help="Colour the diff (default: when stdout is a terminal).")
@click.option("-q", "--quiet", is_flag=True, help="No summary, no per-file messages; errors only.")
@click.version_option(__version__, prog_name="tfgradmigrate")
def migrate_command(paths, diff, check, report_paths, jobs, exclude, annotate, verify, unsafe_fixes, select,
                    rtol, atol, timeout, config_path, color, quiet):
    """Migrate TensorFlow 1 gradient code under PATH... to TF2, in place."""
    if not paths:
        _fail_usage("no PATH given (try `tfgradmigrate --help`)")
    for p in paths:
        if not os.path.lexists(p):
            _fail_usage(f"path does not exist: {p}")
    for r in report_paths:
        if os.path.splitext(r)[1].lower() not in reports.FORMATS:
            _fail_usage(f"--report {r}: unknown format; use one of {', '.join(reports.FORMATS)}")
    try:
        if config_path and not os.path.isfile(config_path):
            raise config.ConfigError(f"{config_path}: no such file")
        cfg = config.load(config_path or config.find_pyproject(paths))
    except config.ConfigError as e:
        _fail_usage(str(e))

    mode = runner.DIFF if diff else runner.CHECK if check else runner.WRITE
    annotate = cfg.get("annotate", False) if annotate is None else annotate
    unsafe_fixes = cfg.get("unsafe-fixes", False) if unsafe_fixes is None else unsafe_fixes
    verify = bool(cfg.get("verify", {}).get("enabled", False)) if verify is None else verify
    names = [s.strip() for s in select.split(",") if s.strip()] if select else cfg.get("select")
    jobs = jobs or cfg.get("jobs") or runner.default_jobs()
    if jobs < 1:
        _fail_usage("jobs must be at least 1")
    run_opts = runner.RunOptions(
        mode=mode,
        options=Options(annotate=annotate, select=frozenset(names) if names else None,
                        unsafe_fixes=unsafe_fixes),
        jobs=jobs,
        max_bytes=cfg.get("max-file-size", files.MAX_BYTES),
        keep_text=diff or verify or any(r.lower().endswith(".html") for r in report_paths),
    )
    found = files.discover(paths, tuple(cfg.get("exclude", ())) + exclude, cfg.get("default-excludes", True))
    result = _run(found.files, run_opts, quiet)
    result.results += [FileResult(p, error=f"{p}:1:1: {msg}") for p, msg in found.errors]
    if verify:
        runner.attach_verification(result.results, mode, rtol if rtol is not None else cfg.get("rtol"),
                                   atol if atol is not None else cfg.get("atol"),
                                   timeout if timeout is not None else cfg.get("timeout"), jobs)
    _print_results(result.results, mode, color, quiet)
    summary = result.summary(mode)
    for r in report_paths:
        try:
            reports.write(r, result.results, summary)
        except OSError as e:
            click.echo(f"{r}:1:1: cannot write report: {e.strerror or e}", err=True)
            sys.exit(EXIT_USAGE)
    if not quiet:
        click.echo(_summary_line(summary), err=True)
    sys.exit(exit_code(result.results))


def exit_code(results: list[FileResult]) -> int:
    if any(r.error for r in results):
        return EXIT_ERROR
    if any(r.changed or r.manual for r in results) or runner.verification_failed(results):
        return EXIT_CHANGED
    return EXIT_OK


def _run(paths: list[str], run_opts: runner.RunOptions, quiet: bool) -> runner.RunResult:
    if quiet or len(paths) <= PROGRESS_THRESHOLD or not sys.stderr.isatty():
        return runner.run(paths, run_opts)
    with click.progressbar(length=len(paths), label="tfgradmigrate", file=sys.stderr) as bar:
        return runner.run(paths, run_opts, progress=bar.update)


def _print_results(results: list[FileResult], mode: str, color: Optional[bool], quiet: bool) -> None:
    for r in results:
        if r.error:
            click.echo(r.error, err=True)
        for s in r.sites:
            if s.status == MANUAL and not quiet:
                click.echo(f"{r.path}:{s.line}:{s.col}: {s.code} manual {s.kind}: {reports.site_reason(s)}", err=True)
            elif s.verification and s.verification.get("status") in runner.FAILED_VERIFICATION:
                click.echo(f"{r.path}:{s.line}:{s.col}: {s.code} verification {s.verification['status']}: "
                           f"{s.verification.get('detail') or s.verification.get('reason', '')}", err=True)
        if not r.changed:
            continue
        if mode == runner.DIFF:
            click.echo(colour_diff(unified_diff(r), color), nl=False, color=color)
        elif mode == runner.CHECK:
            click.echo(f"would change: {r.path}")
        elif not quiet:
            click.echo(f"migrated: {r.path}", err=True)


def unified_diff(r: FileResult) -> str:
    old = (r.original or "").splitlines(keepends=True)
    new = (r.migrated or "").splitlines(keepends=True)
    lines = []
    name = r.path.replace(os.sep, "/").lstrip("/")
    for line in difflib.unified_diff(old, new, f"a/{name}", f"b/{name}"):
        lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(lines)


def colour_diff(diff: str, color: Optional[bool]) -> str:
    if color is False or (color is None and not sys.stdout.isatty()):
        return diff
    out = []
    for line in diff.splitlines(keepends=True):
        if line.startswith(("+++", "---")):
            out.append(click.style(line, bold=True))
        elif line.startswith("@@"):
            out.append(click.style(line, fg="cyan"))
        elif line.startswith("+"):
            out.append(click.style(line, fg="green"))
        elif line.startswith("-"):
            out.append(click.style(line, fg="red"))
        else:
            out.append(line)
    return "".join(out)


def _summary_line(s: dict) -> str:
    verb = "changed" if s["mode"] == runner.WRITE else "would change"
    return (f"tfgradmigrate: {s['files_scanned']} files scanned, {s['files_changed']} {verb}, "
            f"{s['sites_migrated']} sites migrated, {s['sites_manual']} manual, "
            f"{s['errors']} errors in {s['seconds']:.2f}s")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("original", type=click.Path(exists=True, dir_okay=False))
@click.argument("migrated", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "json_output", is_flag=True, help="Print the verdict as JSON.")
@click.option("--rtol", type=float, help="Relative tolerance.")
@click.option("--atol", type=float, help="Absolute tolerance.")
@click.option("--timeout", type=float, help="Seconds per run of each program.")
def verify_command(original, migrated, json_output, rtol, atol, timeout):
    """Check that MIGRATED computes the same values and gradients as ORIGINAL."""
    try:
        cfg = config.load(config.find_pyproject([migrated]))
    except config.ConfigError as e:
        _fail_usage(str(e))
    try:
        from migrator.verify import cli_verify
    except ImportError as e:
        _fail_usage(f"the verifier is not available: {e}")
    rtol = rtol if rtol is not None else cfg.get("rtol")
    atol = atol if atol is not None else cfg.get("atol")
    timeout = timeout if timeout is not None else cfg.get("timeout")
    sys.exit(cli_verify(original, migrated, json_output, rtol, atol, timeout))


def main(argv=None):
    """Console-script entry point."""
    return migrate_command.main(argv)
