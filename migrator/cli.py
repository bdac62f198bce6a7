"""The ``tfgradmigrate`` command line.

``tfgradmigrate [OPTIONS] PATH...`` migrates; ``tfgradmigrate verify
ORIGINAL MIGRATED`` verifies a migration.  A path literally named ``verify``
still works when written ``./verify``; ``-`` reads standard input and writes
standard output.  Start-up imports neither libcst nor TensorFlow.  Exit codes:
0 nothing to do, 1 changed / would change / manual sites, 2 usage or config
error, 123 some file could not be read or parsed.
"""
from __future__ import annotations

import difflib
import os
import sys
from typing import Optional

import click

from migrator import __version__, config, files, output, reports, runner
from migrator.model import MANUAL, FileResult
from migrator.pipeline import Options

EXIT_OK, EXIT_CHANGED, EXIT_USAGE, EXIT_UNVERIFIED, EXIT_ERROR = 0, 1, 2, 3, 123
PROGRESS_THRESHOLD = 200
STDIN = "-"

EPILOG = """\b
Subcommand:
  tfgradmigrate verify ORIGINAL MIGRATED   check a migration numerically
\b
Exit codes: 0 nothing to change, 1 changed / would change / manual sites
(or, with --verify, a site whose verification found a mismatch), 2 usage or
config error, 3 with --verify --strict: some migrated site is unverified,
123 some file could not be read or parsed.
A manual site is acknowledged by a `# tfgradmigrate: ignore[TFG1xx]` comment.
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
@click.option("--diff", is_flag=True, help="Print a unified diff; write nothing. With --check: the diff, as black does.")
@click.option("--check", is_flag=True, help="Write nothing; print each file that would change.")
@click.option("--report", "report_paths", multiple=True, metavar="FILE",
              help="Write a report; the format follows the extension (.json, .md, .html, .sarif). Repeatable.")
@click.option("--output-format", type=click.Choice(output.FORMATS), default="text", show_default=True,
              help="How sites are printed: text lines on stderr, or json, github annotations or sarif on stdout.")
@click.option("--statistics", is_flag=True, help="Print the number of sites by code and status instead of each site.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when files changed or sites need a person (errors still exit 123).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: number of CPUs).")
@click.option("--exclude", multiple=True, metavar="PATTERN",
              help="Skip matching files and folders (.gitignore syntax, relative to the current directory). Repeatable.")
@click.option("--force-exclude/--no-force-exclude", default=None,
              help="Apply the excludes and .gitignore to files named on the command line too (for pre-commit).")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None,
              help="Skip what .gitignore ignores when walking folders (default: on).")
@click.option("--stdin-filename", metavar="PATH", help="The name of the file read from standard input (`-`), for messages, config and excludes.")
@click.option("--annotate/--no-annotate", default=None, help="Add a TODO comment above each manual site.")
@click.option("--verify/--no-verify", "verify", default=None, help="Verify every migrated site numerically.")
@click.option("--strict", is_flag=True, help="With --verify: exit 3 when a migrated site is unverified.")
@click.option("--unsafe-fixes/--no-unsafe-fixes", "unsafe_fixes", default=None,
              help="Also apply rewrites that are right only under an assumption; reports name it.")
@click.option("--select", metavar="NAMES", help="Comma-separated rewrite plugins to run (default: all).")
@click.option("--rtol", type=float, help="Verifier relative tolerance.")
@click.option("--atol", type=float, help="Verifier absolute tolerance.")
@click.option("--timeout", type=float, help="Verifier timeout per file, seconds.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="pyproject.toml to read instead of the nearest one.")
@click.option("--color/--no-color", default=None,
              help="Colour the diff (default: when stdout is a terminal; NO_COLOR and FORCE_COLOR are honoured).")
@click.option("-q", "--quiet", is_flag=True, help="No summary, no per-file messages; errors only.")
@click.version_option(__version__, prog_name="tfgradmigrate")
def migrate_command(paths, diff, check, report_paths, output_format, statistics, exit_zero, jobs, exclude,
                    force_exclude, respect_gitignore, stdin_filename, annotate, verify, strict, unsafe_fixes, select,
                    rtol, atol, timeout, config_path, color, quiet):
    """Migrate TensorFlow 1 gradient code under PATH... to TF2, in place.

    PATH `-` reads one file from standard input and writes the result to
    standard output.
    """
    use_stdin = STDIN in paths or (stdin_filename is not None and not paths)
    if not paths and not use_stdin:
        _fail_usage("no PATH given (try `tfgradmigrate --help`)")
    if use_stdin and len(paths) > 1:
        _fail_usage("`-` (standard input) cannot be combined with other paths")
    for p in paths if not use_stdin else ():
        if not os.path.lexists(p):
            _fail_usage(f"path does not exist: {p}")
    for r in report_paths:
        problem = _report_problem(r)
        if problem:
            _fail_usage(f"--report {r}: {problem}")
    if diff and output_format != "text":
        _fail_usage(f"--diff prints a diff; it cannot be combined with --output-format {output_format} "
                    "(use --report FILE for a machine-readable report)")
    try:
        if config_path and not os.path.isfile(config_path):
            raise config.ConfigError(f"{config_path}: no such file")
        found_config = config_path or config.find_pyproject([stdin_filename] if use_stdin and stdin_filename else
                                                            [] if use_stdin else paths)
        cfg = config.load(found_config)
    except config.ConfigError as e:
        _fail_usage(str(e))

    mode = runner.DIFF if diff else runner.CHECK if check else runner.WRITE
    annotate = cfg.get("annotate", False) if annotate is None else annotate
    unsafe_fixes = cfg.get("unsafe-fixes", False) if unsafe_fixes is None else unsafe_fixes
    verify = bool(cfg.get("verify", {}).get("enabled", False)) if verify is None else verify
    names = _selected(select, cfg.get("select"), found_config)
    jobs = jobs or cfg.get("jobs") or runner.default_jobs()
    if jobs < 1:
        _fail_usage("jobs must be at least 1")
    run_opts = runner.RunOptions(
        mode=mode,
        options=Options(annotate=annotate, select=frozenset(names) if names is not None else None,
                        unsafe_fixes=unsafe_fixes),
        jobs=jobs,
        max_bytes=cfg.get("max-file-size", files.MAX_BYTES),
        keep_text=diff or verify or any(r.lower().endswith(".html") for r in report_paths),
    )
    filters = files.Filters(
        excludes=(files.ExcludeSet(cfg.get("exclude", ()), os.path.dirname(os.path.abspath(found_config or "."))),
                  files.ExcludeSet(exclude)),
        default_excludes=cfg.get("default-excludes", True),
        respect_gitignore=cfg.get("respect-gitignore", True) if respect_gitignore is None else respect_gitignore,
        force_exclude=cfg.get("force-exclude", False) if force_exclude is None else force_exclude,
    )
    stdout_taken = False
    if use_stdin:
        result, stdout_taken = _run_stdin(stdin_filename or STDIN, filters, run_opts)
    else:
        found = files.discover(paths, filters=filters)
        result = _run(found.files, run_opts, quiet)
        result.results += [FileResult(p, error=f"{p}:1:1: {msg}") for p, msg in found.errors]
    verify_seconds = None
    if verify:
        # standard input is not on disk: the verifier works on copies, as in a dry run
        verify_seconds = runner.attach_verification(
            result.results, runner.CHECK if use_stdin else mode, rtol if rtol is not None else cfg.get("rtol"),
            atol if atol is not None else cfg.get("atol"), timeout if timeout is not None else cfg.get("timeout"), jobs)
    summary = result.summary(mode)
    if verify_seconds is not None:
        summary["verification"] = dict(runner.verification_counts(result.results), seconds=round(verify_seconds, 3))
    if output_format == "text":
        _print_results(result.results, mode, use_colour(color), quiet or statistics)
        if statistics:
            click.echo(output.statistics_text(output.statistics(result.results)), nl=False)
    else:
        # with `-` in write mode stdout carries the migrated file: the format goes to stderr, as ruff does
        click.echo(output.render(output_format, result.results, summary, statistics), nl=False, err=stdout_taken)
    report_failed = False
    for r in report_paths:
        try:
            reports.write(r, result.results, summary)
        except OSError as e:
            click.echo(f"{r}:1:1: cannot write report: {e.strerror or e}", err=True)
            report_failed = True
    if not quiet:
        click.echo(_summary_line(summary), err=True)
    sys.exit(EXIT_USAGE if report_failed else exit_code(result.results, exit_zero, strict=strict and verify))


def _report_problem(path: str) -> Optional[str]:
    """Why a report cannot be written to ``path`` (checked before any file changes), or None."""
    if os.path.splitext(path)[1].lower() not in reports.FORMATS:
        return f"unknown format; use one of {', '.join(reports.FORMATS)}"
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        return "is a folder"
    if not os.path.isdir(folder):
        return f"cannot write report: no such folder {folder}"
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return "cannot write report: the file is read-only"
    if not os.path.exists(path) and not os.access(folder, os.W_OK | os.X_OK):
        return f"cannot write report: the folder {folder} is not writable"
    return None


def _selected(select: Optional[str], configured: Optional[list], where: Optional[str]) -> Optional[list[str]]:
    """The plugin names --select (or the config's ``select``) asks for; a usage error names the valid ones."""
    if select is not None:
        names, origin = [s.strip() for s in select.split(",") if s.strip()], "--select"
    elif configured is not None:
        names, origin = list(configured), f"{where}: tool.tfgradmigrate.select"
    else:
        return None
    from migrator._plugins import plugins  # imports libcst: only when a selection is to be checked

    valid = [p.name for p in plugins()]
    unknown = [n for n in names if n not in valid]
    if unknown or not names:
        what = f"unknown plugin {', '.join(map(repr, unknown))}" if unknown else "no plugin named"
        _fail_usage(f"{origin}: {what}; valid names: {', '.join(valid)}")
    return names


def exit_code(results: list[FileResult], exit_zero: bool = False, strict: bool = False) -> int:
    if any(r.error for r in results):
        return EXIT_ERROR
    if exit_zero:
        return EXIT_OK
    if runner.verification_failed(results):
        return EXIT_CHANGED
    if strict and runner.verification_counts(results)["unverified"]:
        return EXIT_UNVERIFIED
    if any(r.changed or r.manual for r in results):
        return EXIT_CHANGED
    return EXIT_OK


def _run(paths: list[str], run_opts: runner.RunOptions, quiet: bool) -> runner.RunResult:
    if quiet or len(paths) <= PROGRESS_THRESHOLD or not sys.stderr.isatty():
        return runner.run(paths, run_opts)
    # one step per file in each of the two passes
    with click.progressbar(length=2 * len(paths), label="tfgradmigrate", file=sys.stderr) as bar:
        return runner.run(paths, run_opts, progress=bar.update)


def _run_stdin(name: str, filters: files.Filters, run_opts: runner.RunOptions) -> tuple[runner.RunResult, bool]:
    """Migrate standard input; in write mode the result goes to stdout.  Returns (result, stdout used)."""
    raw = sys.stdin.buffer.read()
    out = sys.stdout.buffer
    if name != STDIN and filters.skip_explicit(name):  # --force-exclude: pass it through untouched
        if run_opts.mode == runner.WRITE:
            out.write(raw)
            out.flush()
        return runner.RunResult([]), run_opts.mode == runner.WRITE
    keep = run_opts.keep_text
    run_opts.keep_text = True  # the diff needs the text
    result, data = runner.migrate_bytes(raw, name, run_opts)
    run_opts.keep_text = keep
    if run_opts.mode == runner.WRITE:
        out.write(data)
        out.flush()
    return runner.RunResult([result]), run_opts.mode == runner.WRITE


def use_colour(flag: Optional[bool]) -> bool:
    """--color/--no-color, else NO_COLOR (wins), else FORCE_COLOR, else whether stdout is a terminal."""
    if flag is not None:
        return flag
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty()


def _print_results(results: list[FileResult], mode: str, color: Optional[bool], quiet: bool) -> None:
    for r in results:
        if r.error:
            click.echo(r.error, err=True)
        for s in r.sites:
            if s.status == MANUAL and not quiet:
                click.echo(f"{reports.position(r, s)}: {s.code} manual {s.kind}: {reports.site_reason(s)}", err=True)
            elif s.verification and (not quiet or s.verification.get("status") in runner.FAILED_VERIFICATION):
                click.echo(f"{reports.position(r, s)}: {s.code} {_verdict(s.verification)}", err=True)
            elif s.unsafe and not quiet:
                click.echo(f"{reports.position(r, s)}: {s.code} unsafe fix: assumes {'; '.join(s.assumptions)}",
                           err=True)
        if not r.changed:
            continue
        if mode == runner.DIFF:
            click.echo(colour_diff(unified_diff(r), color), nl=False, color=color)
        elif mode == runner.CHECK and not quiet:
            click.echo(f"would change: {r.path}")
        elif mode == runner.WRITE and not quiet:
            click.echo(f"migrated: {r.path}", err=True)


def _verdict(v: dict) -> str:
    """One verdict in words: match (mode, error), mismatch (where), unverified (why)."""
    status = v.get("status", "unverified")
    detail = v.get("detail") or v.get("reason") or ""
    if status == "match":
        err = v.get("max_abs_err")
        return f"verification match [{v.get('mode', '-')}]" + (f" max abs err {err:.3g}" if err is not None else "")
    return f"verification {status}: {detail}"


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


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _summary_line(s: dict) -> str:
    dry = s["mode"] != runner.WRITE
    migrated = f"{_plural(s['sites_migrated'], 'site')} {'would migrate' if dry else 'migrated'}"
    if s.get("sites_unsafe"):
        migrated += f" ({s['sites_unsafe']} unsafe)"
    parts = [f"{_plural(s['files_scanned'], 'file')} scanned",
             f"{s['files_changed']} {'would change' if dry else 'changed'}", migrated, f"{s['sites_manual']} manual"]
    if s.get("sites_ignored"):
        parts.append(f"{s['sites_ignored']} ignored")
    parts.append(_plural(s["errors"], "error"))
    line = f"tfgradmigrate: {', '.join(parts)} in {s['seconds']:.2f}s"
    v = s.get("verification")
    if v is not None:
        line += (f"; verified in {v['seconds']:.2f}s: {v['match']} match, {v['mismatch']} mismatch, "
                 f"{v['unverified']} unverified")
    return line


VERIFY_EPILOG = """\b
Exit codes: 0 every check matched, 1 some mismatch (a migrated program that
crashes included), 3 no mismatch but something unverified or nothing
compared, 2 usage error, or the original fails on its own.
"""


@click.command(context_settings={"help_option_names": ["-h", "--help"]}, epilog=VERIFY_EPILOG)
@click.argument("original", type=click.Path(exists=True))
@click.argument("migrated", type=click.Path(exists=True))
@click.option("--run", "run_command", metavar="CMD",
              help='Run CMD (e.g. "pytest tests/") in the ORIGINAL tree under TF1 semantics and in the MIGRATED '
                   "tree under TF2; compare the outcomes test by test and the gradients at each site.")
@click.option("--json", "json_output", is_flag=True, help="Print the verdict as JSON.")
@click.option("--rtol", type=float, help="Relative tolerance.")
@click.option("--atol", type=float, help="Absolute tolerance.")
@click.option("--timeout", type=float, help="Seconds per run of each program.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Files verified side by side (folders).")
def verify_command(original, migrated, run_command, json_output, rtol, atol, timeout, jobs):
    """Check that MIGRATED computes the same values and gradients as ORIGINAL.

    ORIGINAL and MIGRATED are two files (.py or .ipynb) or two folders, whose
    files are paired by relative path.
    """
    try:
        cfg = config.load(config.find_pyproject([migrated]))
    except config.ConfigError as e:
        _fail_usage(str(e))
    try:
        from migrator.verify import INSTALL_HINT, cli_verify, tensorflow_available
    except ImportError as e:
        _fail_usage(f"the verifier is not available: {e}")
    if not tensorflow_available():
        click.echo(f"tfgradmigrate verify needs TensorFlow, which is not installed: {INSTALL_HINT}", err=True)
        sys.exit(EXIT_USAGE)
    rtol = rtol if rtol is not None else cfg.get("rtol")
    atol = atol if atol is not None else cfg.get("atol")
    timeout = timeout if timeout is not None else cfg.get("timeout")
    extra = {k: v for k, v in (("run", run_command), ("jobs", jobs)) if v is not None}
    sys.exit(cli_verify(original, migrated, json_output, rtol, atol, timeout, **extra))


def main(argv=None):
    """Console-script entry point."""
    return migrate_command.main(argv)
