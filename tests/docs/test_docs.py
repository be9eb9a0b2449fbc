"""The documentation runs as written: every command and snippet of README.md and docs/*.md, from a clean folder.

Each page's fenced blocks run in order, in a fresh temporary folder that holds
nothing but what the page has written so far:

* a ```sh block line by line: ``schedsearch ARGS`` through the command's own
  entry point (``schedsearch.cli.main``) in this process; ``python ...`` and
  ``pytest ...`` in a child interpreter that imports this checkout's package
  (and nothing else of the checkout); every command must exit 0;
* a ```python block with ``exec``, in a fresh namespace (a snippet stands on
  its own; files it writes stay for the next blocks).

A block that does not run says so where the reader sees it: a ```text fence
(output, layouts; also ```toml / ```json data), or a marker on the line
above a sh or python block, ``<!-- not run: REASON -->`` (installs, the
whole test suite). Two more markers:

* ``<!-- from a clone: models/ examples/ -->``: the reader runs this block
  in a clone's root folder; the named paths of the repository are copied
  into the folder first (the package itself never is);
* ``<!-- slow: REASON -->``: the block runs only in the complete run
  (``-m slow``, :func:`test_page_runs_complete`); the blocks after it must
  not need what it writes (the default run checks that).

:func:`test_every_block_is_run_or_marked` checks that every fence says its
language, that every sh/python block either runs (only commands this module
knows how to run) or carries ``not run``, and that no marker dangles.
Commands quoted inline in the prose (``schedsearch jobshop DAG.json ...``)
do not run; :func:`test_commands_in_the_prose_are_real` checks that what
they name exists: subcommands, flags and values, scripts, benchmarks, and
the files they read (in the repository, or written by a block of the page;
a file the reader supplies is written as a placeholder, ``FILE.json``).
The site builds with warnings as errors.

``SCHEDSEARCH_DOCS_TIMINGS=1`` prints what each command and snippet costs.
"""

from __future__ import annotations

import contextlib
import functools
import io
import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES: tuple[Path, ...] = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

#: fence languages that run
SHELL = frozenset({"sh", "bash", "shell"})
PYTHON = frozenset({"python", "py"})
#: fence languages that never run: output samples, layouts, data files
INERT = frozenset({"text", "toml", "json", "yaml", "csv"})

#: how long one child command may take before the test fails (a hang, not a slow doc)
CHILD_TIMEOUT_S = 600

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)[^`]*$")
_COMMENT = re.compile(r"^\s*<!--(?P<body>.*?)-->\s*$")
_MARKER = re.compile(r"^\s*(?P<kind>not run|slow|from a clone)\s*:\s*(?P<text>.*?)\s*$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _rel(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else Path(path.name)


@dataclass
class Block:
    """One fenced block of a page: where it starts (1-based line of its first code line), its language,
    its code and the markers on the lines above it."""

    page: Path
    line: int
    lang: str
    code: str
    markers: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{_rel(self.page)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in SHELL | PYTHON and "not run" not in self.markers

    @property
    def slow(self) -> bool:
        return "slow" in self.markers

    @property
    def clone_paths(self) -> list[str]:
        return self.markers.get("from a clone", "").split()


@dataclass
class Page:
    path: Path
    blocks: list[Block]
    problems: list[str]  # what the parser found wrong: dangling or unknown markers, unclosed fences
    prose: str = ""  # the page without its fenced blocks and HTML comments (blank lines in their place)


def parse_page(path: Path) -> Page:
    """The fenced blocks of a markdown page, with their markers (HTML comments on the lines just above)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    rel = _rel(path)
    blocks: list[Block] = []
    problems: list[str] = []
    pending: dict[str, str] = {}
    pending_line = 0
    prose = list(lines)
    i = 0
    while i < len(lines):
        line = lines[i]
        comment = _COMMENT.match(line)
        fence = _FENCE.match(line)
        if comment:
            prose[i] = ""
            marker = _MARKER.match(comment["body"])
            if marker:
                kind, text = marker["kind"], marker["text"]
                if not text:
                    problems.append(f"{rel}:{i + 1}: marker '{kind}:' needs a reason or, for 'from a clone', paths")
                if kind in pending:
                    problems.append(f"{rel}:{i + 1}: marker '{kind}' given twice for one block")
                pending[kind] = text
                pending_line = pending_line or i + 1
            elif re.match(r"^\s*(not[ -]?run|slow|from a clone|clone)\b", comment["body"], re.IGNORECASE):
                problems.append(f"{rel}:{i + 1}: malformed marker {line.strip()!r} (write 'not run: REASON', "
                                "'slow: REASON' or 'from a clone: PATHS')")
            i += 1
            continue
        if fence:
            indent, mark, lang = len(fence["indent"]), fence["fence"], fence["info"].lower()
            close = re.compile(rf"^[ \t]*{re.escape(mark[0])}{{{len(mark)},}}[ \t]*$")
            j = i + 1
            while j < len(lines) and not close.match(lines[j]):
                j += 1
            if j == len(lines):
                problems.append(f"{rel}:{i + 1}: fence never closed")
            code = "\n".join(text[indent:] if text[:indent].strip() == "" else text for text in lines[i + 1:j])
            blocks.append(Block(page=path, line=i + 2, lang=lang, code=code + "\n", markers=pending))
            pending, pending_line = {}, 0
            prose[i:j + 1] = [""] * (min(j, len(lines) - 1) + 1 - i)
            i = j + 1
            continue
        if line.strip() and pending:
            problems.append(f"{rel}:{pending_line}: marker {sorted(pending)} is not followed by a fenced block")
            pending, pending_line = {}, 0
        i += 1
    if pending:
        problems.append(f"{rel}:{pending_line}: marker {sorted(pending)} is not followed by a fenced block")
    return Page(path=path, blocks=blocks, problems=problems, prose="\n".join(prose))


def shell_commands(block: Block) -> list[tuple[int, list[str]]]:
    """The commands of a sh block: ``(line, argv)``, comments dropped, ``\\`` continuations joined."""
    commands: list[tuple[int, list[str]]] = []
    pending, start = "", 0
    for k, text in enumerate(block.code.splitlines()):
        if not pending:
            start = block.line + k
        if text.rstrip().endswith("\\"):
            pending += text.rstrip()[:-1] + " "
            continue
        argv = shlex.split(pending + text, comments=True)
        pending = ""
        if argv:
            commands.append((start, argv))
    if pending.strip():
        commands.append((start, shlex.split(pending, comments=True)))
    return commands


def _strip_env(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    env = {}
    while argv and _ENV.match(argv[0]):
        name, _, value = argv[0].partition("=")
        env[name] = value
        argv = argv[1:]
    return env, argv


def unrunnable(argv: list[str]) -> str | None:
    """Why this module cannot run the command (None: it can)."""
    _, argv = _strip_env(argv)
    if not argv:
        return "an assignment alone"
    if any(tok in {"|", "||", "&&", ";", ">", ">>", "<", "&"} for tok in argv):
        return "a pipe, a list or a redirection"
    head = argv[0]
    if head == "schedsearch" or head == "pytest":
        return None
    if head in {"python", "python3"}:
        if len(argv) >= 3 and argv[1] == "-m" and argv[2] == "pip":
            return "an install"
        if len(argv) >= 2 and (argv[1] == "-m" or argv[1].endswith(".py")):
            return None
        return "python without a script or -m MODULE"
    return f"{head!r} is not a command this test runs"


def check_page(page: Page) -> list[str]:
    """Everything that is neither run nor marked, or marked wrongly, on a page."""
    problems = list(page.problems)
    for block in page.blocks:
        if not block.lang:
            problems.append(f"{block.where}: a fence without a language (```sh, ```python, or ```text for "
                            "output and layouts)")
            continue
        if block.lang not in SHELL | PYTHON | INERT:
            problems.append(f"{block.where}: fence language {block.lang!r} is neither run ({sorted(SHELL | PYTHON)})"
                            f" nor inert ({sorted(INERT)})")
        if block.lang not in SHELL | PYTHON and block.markers:
            problems.append(f"{block.where}: markers {sorted(block.markers)} on a ```{block.lang} block, which "
                            "never runs")
        if block.runs and block.lang in SHELL:
            for line, argv in shell_commands(block):
                why = unrunnable(argv)
                if why:
                    problems.append(f"{block.where.rsplit(':', 1)[0]}:{line}: {shlex.join(argv)!r}: {why}; mark "
                                    "the block '<!-- not run: REASON -->' if it is not meant to run")
        for rel in block.clone_paths:
            if not (ROOT / rel).exists() or ".." in Path(rel).parts or Path(rel).is_absolute():
                problems.append(f"{block.where}: 'from a clone' names {rel!r}, which is not a path of the "
                                "repository")
            elif Path(rel).parts[0] == "schedsearch":
                problems.append(f"{block.where}: 'from a clone' never copies the package; it is installed")
    return problems


# -------------------------------------------------------------------------------- commands in the prose

#: an inline code span (line breaks allowed, as a wrapped paragraph has, but no blank line)
_SPAN = re.compile(r"(?<!`)`(?P<code>(?:[^`\n]|\n(?![ \t]*\n))+)`(?!`)")
#: a file operand: a relative path with a suffix
_FILE = re.compile(r"^[\w.-][\w./-]*\.(json|toml|txt|csv|py)$")


def _placeholder(token: str) -> bool:
    """``FILE``, ``NAME``, ``FILE.json``, ``dp|dpl|...``: a word the reader replaces."""
    stem = token.split(".")[0]
    return "|" in token or "..." in token or (len(stem) > 1 and stem.isupper() and stem.isalpha())


def inline_commands(page: Page) -> list[tuple[int, list[str]]]:
    """The commands written in the page's prose as inline code: ``(line, argv)``."""
    commands = []
    for match in _SPAN.finditer(page.prose):
        try:
            argv = shlex.split(match["code"])
        except ValueError:
            continue
        if len(argv) >= 2 and argv[0] in {"schedsearch", "pytest"} or argv[:1] == ["python"] and len(argv) >= 2 and (
                argv[1].endswith(".py") or argv[1:3] == ["-m", "benchmarks"]):
            commands.append((page.prose.count("\n", 0, match.start()) + 1, argv))
    return commands


@functools.cache
def _cli_parser():
    from schedsearch.cli import build_parser

    return build_parser()


def check_inline_command(page: Page, argv: list[str]) -> str | None:
    """What is wrong with a command of the prose: a subcommand, flag or value the CLI does not take, a script or
    benchmark that does not exist, a file that is neither in the repository nor written by a block of the page.
    Placeholders (``FILE``, ``a|b``) and bare references (``schedsearch sweep``, ``search --problem``) are
    checked as far as they go."""
    import argparse

    written = "\n".join(block.code for block in page.blocks if block.runs)
    for token in argv[1:]:
        named = re.search(rf"(?<![\w./-]){re.escape(token)}(?![\w/-])", written)  # as a path, not a part of one
        if _FILE.match(token) and not _placeholder(token) and not (ROOT / token).exists() and not named:
            return f"{token!r} is neither a file of the repository nor one a block of the page writes"
    if argv[0] == "python":
        if argv[1] == "-m":  # python -m benchmarks NAME ...: a name selects the benchmarks whose name holds it
            names = [module.stem for module in (ROOT / "benchmarks").glob("*.py")]
            for selector in itertools.takewhile(lambda a: not a.startswith("-"), argv[3:]):
                if not _placeholder(selector) and not any(selector in name for name in names):
                    return f"no benchmark {selector!r} in benchmarks/"
            return None
        return None if (ROOT / argv[1]).is_file() else f"no script {argv[1]!r}"
    if argv[0] == "pytest":
        return None if (ROOT / argv[1]).exists() else f"no test file {argv[1]!r}"
    parser = _cli_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    if argv[1].startswith("-"):
        name, sub = None, parser
    elif argv[1] in commands:
        name, sub = argv[1], commands[argv[1]]
    elif _placeholder(argv[1]):
        return None
    else:
        return f"no command {argv[1]!r}"
    flags = {flag for action in sub._actions for flag in action.option_strings}
    for token in argv[2 if name else 1:]:
        flag = token.split("=")[0]
        if token.startswith("--") and flag not in flags:
            return f"{name or 'schedsearch'} takes no {flag}"
    if any(_placeholder(token) for token in argv) or len(argv) == 2 or argv[-1].startswith("--"):
        return None  # a form or a reference, not a command to run as it is
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            parser.parse_args(argv[1:])
        except SystemExit as exc:
            if exc.code:
                return f"the command line does not parse: {err.getvalue().strip().splitlines()[-1]}"
    return None


# ----------------------------------------------------------------------------------------------- running


@pytest.fixture(scope="session")
def package_path(tmp_path_factory) -> Path:
    """A folder holding only this checkout's package (a link): the child interpreters' PYTHONPATH, so they
    run this code and see no other folder of the checkout (``examples``, ``benchmarks``) by accident."""
    folder = tmp_path_factory.mktemp("package")
    (folder / "schedsearch").symlink_to(ROOT / "schedsearch", target_is_directory=True)
    return folder


def _child_env(package_path: Path, extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(package_path), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("MPLBACKEND", "Agg")
    env.pop("PYTEST_ADDOPTS", None)
    env.update(extra)
    return env


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


def run_command(where: str, argv: list[str], folder: Path, package_path: Path) -> float:
    """Run one documented command in ``folder``; fail the test unless it exits 0. Returns its seconds."""
    env, argv = _strip_env(argv)
    t0 = time.perf_counter()
    if argv[0] == "schedsearch" and not env:
        from schedsearch.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv[1:])
            except SystemExit as exc:  # argparse: a bad flag, --help
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        output = out.getvalue() + err.getvalue()
    else:
        if argv[0] == "schedsearch":
            argv = [sys.executable, "-m", "schedsearch", *argv[1:]]
        elif argv[0] == "pytest":
            argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *argv[1:]]
        else:
            argv = [sys.executable, *argv[1:]]
        try:
            run = subprocess.run(argv, cwd=folder, env=_child_env(package_path, env), capture_output=True, text=True,
                                 timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{where}: {shlex.join(argv)} ran longer than {CHILD_TIMEOUT_S} s")
        code, output = run.returncode, run.stdout + run.stderr
    if code != 0:
        pytest.fail(f"{where}: `{shlex.join(argv)}` exited {code}:\n{_tail(output)}", pytrace=False)
    return time.perf_counter() - t0


def run_python(block: Block) -> float:
    t0 = time.perf_counter()
    # line numbers of the traceback are the page's
    code = compile("\n" * (block.line - 1) + block.code, str(block.page), "exec")
    try:
        exec(code, {"__name__": "__main__"})
    except Exception:
        pytest.fail(f"{block.where}: the python block fails:\n{_tail(traceback.format_exc())}", pytrace=False)
    return time.perf_counter() - t0


def run_page(page: Page, folder: Path, package_path: Path, monkeypatch, *, slow: bool,
             timings: list[tuple[str, float]]) -> None:
    """Run every block of ``page`` that runs, in order, in ``folder``; ``slow`` blocks only when asked.
    Appends each command's or snippet's seconds to ``timings``."""
    monkeypatch.chdir(folder)
    for block in page.blocks:
        if not block.runs or block.slow and not slow:
            continue
        for rel in block.clone_paths:
            source, target = ROOT / rel, folder / rel
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.local.json"))
            else:
                shutil.copy2(source, target)
        if block.lang in PYTHON:
            timings.append((block.where, run_python(block)))
        else:
            for line, argv in shell_commands(block):
                where = f"{block.where.rsplit(':', 1)[0]}:{line}"
                timings.append((f"{where} {shlex.join(argv)}", run_command(where, argv, folder, package_path)))


_PARSED = {path: parse_page(path) for path in PAGES}


def _needs_pictures(page: Page) -> None:
    """A page that draws (png, svg, plot_schedule) needs the plot extra: skip without it, except on CI."""
    draws = any(block.runs and re.search(r"\b(png|svg)\b|plot_schedule|save_plot", block.code) for block in page.blocks)
    if draws and not os.environ.get("CI"):
        pytest.importorskip("matplotlib", reason="the plot extra is not installed (python -m pip install -e '.[plot]')")


def _page_id(path: Path) -> str:
    return str(_rel(path))


def test_every_block_is_run_or_marked():
    problems = [problem for page in _PARSED.values() for problem in check_page(page)]
    assert not problems, "\n".join(problems)


def test_commands_in_the_prose_are_real():
    """Commands quoted inline in a paragraph do not run, but what they name exists: the subcommand, its flags
    and values, the script, the benchmark, and any file they read (in the repository, or written by a block of
    the same page)."""
    problems = []
    for page in _PARSED.values():
        for line, argv in inline_commands(page):
            if why := check_inline_command(page, argv):
                problems.append(f"{_rel(page.path)}:{line}: `{shlex.join(argv)}`: {why}")
    assert not problems, "\n".join(problems)


def test_the_pages_have_blocks_that_run():
    """The parser sees the pages' blocks (a broken fence pattern would make every other test pass vacuously)."""
    runs = {path.name: sum(block.runs for block in page.blocks) for path, page in _PARSED.items()}
    assert runs["README.md"] >= 4 and runs["index.md"] >= 3, runs
    inline = {path.name: len(inline_commands(page)) for path, page in _PARSED.items()}
    assert inline["README.md"] >= 5, inline


@pytest.mark.parametrize("path", [p for p in PAGES if any(b.runs for b in _PARSED[p].blocks)], ids=_page_id)
def test_page_runs(path, tmp_path, package_path, monkeypatch, capsys):
    """Every block of the page that runs, except the ``slow`` ones, in order from an empty folder."""
    page = _PARSED[path]
    if problems := check_page(page):
        pytest.fail("\n".join(problems), pytrace=False)
    _needs_pictures(page)
    folder = tmp_path / "reader"  # a folder whose name shadows nothing
    folder.mkdir()
    timings: list[tuple[str, float]] = []
    try:
        run_page(page, folder, package_path, monkeypatch, slow=False, timings=timings)
    finally:
        if os.environ.get("SCHEDSEARCH_DOCS_TIMINGS"):  # what each command costs the default run
            with capsys.disabled():
                for where, seconds in timings:
                    print(f"\n{seconds:7.2f} s  {where}", end="")


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in PAGES if any(b.runs and b.slow for b in _PARSED[p].blocks)],
                         ids=_page_id)
def test_page_runs_complete(path, tmp_path, package_path, monkeypatch):
    """Every block of the page that runs, the ``slow`` ones included."""
    _needs_pictures(_PARSED[path])
    folder = tmp_path / "reader"
    folder.mkdir()
    run_page(_PARSED[path], folder, package_path, monkeypatch, slow=True, timings=[])


def test_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocstrings", reason="the docs extra is not installed (python -m pip install -e '.[docs]')")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                          "--site-dir", str(tmp_path / "site")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "site" / "cli" / "index.html").is_file()


# ------------------------------------------------------------------------------------ the harness itself

_BAD_PAGE = """# A page

<!-- not run: -->

```sh
make demo
```

```
loose output
```

<!-- slow: dangles -->

Some prose, and `schedsearch search --placement zb-x` and `schedsearch bound missing.json` inline,
`python -m benchmarks no_such_benchmark` and `python -m benchmarks optimal`.

<!-- not-run because -->

```sh
schedsearch demo | head
```
"""


def test_the_checks_catch_what_is_neither_run_nor_marked(tmp_path):
    path = tmp_path / "page.md"
    path.write_text(_BAD_PAGE)
    page = parse_page(path)
    found = "\n".join(check_page(page))
    assert "page.md:3: marker 'not run:' needs a reason" in found
    assert "page.md:10: a fence without a language" in found
    assert "page.md:13: marker ['slow'] is not followed by a fenced block" in found
    assert "page.md:18: malformed marker" in found
    assert re.search(r"page.md:21: .*head.*: a pipe", found)
    assert "make demo" not in found  # marked (without a reason, which is reported)
    inline = {argv[-1] if argv[0] == "python" else argv[1]: check_inline_command(page, argv)
              for _, argv in inline_commands(page)}
    assert "does not parse" in inline["search"] and "invalid choice: 'zb-x'" in inline["search"]
    assert "'missing.json' is neither a file of the repository" in inline["bound"]
    assert inline["no_such_benchmark"] == "no benchmark 'no_such_benchmark' in benchmarks/"
    assert inline["optimal"] is None


def test_a_page_runs_in_order_and_a_failing_command_fails_it(tmp_path, package_path, monkeypatch):
    path = tmp_path / "page.md"
    path.write_text("""```python
from pathlib import Path
Path("note.txt").write_text("written")
```

<!-- slow: the complete run only -->

```python
raise AssertionError("a slow block ran in the default run")
```

<!-- from a clone: models/jobshop/ft06.txt -->

```sh
schedsearch jobshop models/jobshop/ft06.txt --quiet --baseline-only --out ''
schedsearch validate note.txt note.txt
```
""")
    page = parse_page(path)
    assert check_page(page) == []
    folder = tmp_path / "reader"
    folder.mkdir()
    timings: list[tuple[str, float]] = []
    with pytest.raises(pytest.fail.Exception, match=r"page.md:16: `schedsearch validate note.txt note.txt` exited 2"):
        run_page(page, folder, package_path, monkeypatch, slow=False, timings=timings)
    assert [where.split()[0] for where, _ in timings] == ["page.md:2", "page.md:15"]  # the slow block skipped
    assert (folder / "note.txt").read_text() == "written"
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == [
        "models/jobshop/ft06.txt", "note.txt"]  # only what the marker names was copied
