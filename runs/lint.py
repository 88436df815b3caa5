"""Code hygiene of the exported package: the house rules the notebooks' exported cells follow.

Checks every module under nanochat/ (except the generated _modidx.py) for:
  - lines over 120 characters;
  - one-line compound statements: `if x: y`, `elif x: y`, `else: y`, `for ...: y`, `while ...: y`, `try: y`,
    `except ...: y`, `finally: y`, `with ...: y`, `case ...: y`, `def f(): y`, `class C: y` (found with ast + tokenize, so a colon inside a
    string, a dict, a slice or a lambda is never mistaken for one);
  - statements joined with `;`;
  - unused imports: a name an import binds that the module never reads and that is not listed in __all__.
    A deliberate re-export opts out with `# noqa` on the import line.
Prints `file:line: problem` for each finding and exits 1 if there is any.
Two kinds of line are nbdev's, not the notebook author's, and are not measured: the module docstring (nbdev copies
the notebook's one-line `> summary` there) and the `__all__` list after `# %% auto #0` (nbdev wraps it at 120 but
does not count the `__all__ = ` prefix). `--all-lines` measures them too.

    python runs/lint.py              # the whole package
    python runs/lint.py --summary    # also a count per module
    python runs/lint.py nanochat/gpt.py nanochat/optim.py
"""
import argparse
import ast
import io
import sys
import tokenize
from collections import Counter
from pathlib import Path

MAX_LINE = 120
ROOT = Path(__file__).resolve().parent.parent


def block_headers(node):
    "The (keyword, statements) blocks of a compound statement whose body could sit on the header's line."
    if isinstance(node, ast.If):
        yield "if", node.body
        # an `elif` is an If alone in orelse: it is checked as its own node, its header is on its own line
        is_elif = len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)
        if node.orelse and not is_elif:
            yield "else", node.orelse
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        yield "while" if isinstance(node, ast.While) else "for", node.body
        if node.orelse:
            yield "else", node.orelse
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        yield "with", node.body
    elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        yield "try", node.body
        for handler in node.handlers:
            yield "except", handler.body
        if node.orelse:
            yield "else", node.orelse
        if node.finalbody:
            yield "finally", node.finalbody
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield "class" if isinstance(node, ast.ClassDef) else "def", node.body
    elif hasattr(ast, "Match") and isinstance(node, ast.Match):
        for case in node.cases:
            yield "case", case.body


def char_col(lines, lineno, byte_col):
    "ast columns count UTF-8 bytes; tokenize columns count characters."
    return len(lines[lineno - 1].encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def one_line_compounds(tree, tokens, lines):
    "Blocks whose first statement follows the header's `:` on the same line."
    skip = (tokenize.COMMENT, tokenize.NL)
    significant = [t for t in tokens if t.type not in skip]
    index = {t.start: i for i, t in enumerate(significant)}
    for node in ast.walk(tree):
        for keyword, body in block_headers(node):
            first = body[0]
            i = index.get((first.lineno, char_col(lines, first.lineno, first.col_offset)))
            if i is None or i == 0:
                continue
            before = significant[i - 1]
            if before.type == tokenize.OP and before.string == ":" and before.start[0] == first.lineno:
                header = index.get((node.lineno, char_col(lines, node.lineno, node.col_offset)))
                if keyword == "if" and header is not None and significant[header].string == "elif":
                    keyword = "elif"
                yield first.lineno, keyword


def names_read(tree):
    "Every name the module reads, including the heads of dotted names and names inside string annotations."
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            used.add(node.id)
        annotation = getattr(node, "annotation", None) or getattr(node, "returns", None)
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                used |= names_read(ast.parse(annotation.value, mode="eval"))
            except SyntaxError:
                pass
    return used


def exported_names(tree):
    "The strings in a module-level `__all__ = [...]` (nbdev writes one per module)."
    names = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
            for elt in getattr(node.value, "elts", []):
                if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                    names.add(elt.value)
    return names


def unused_imports(tree, lines):
    used = names_read(tree) | exported_names(tree)
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        end = getattr(node, "end_lineno", node.lineno)
        if any("# noqa" in lines[n - 1] for n in range(node.lineno, end + 1)):
            continue
        for alias in node.names:
            if alias.name == "*":
                continue
            bound = alias.asname or alias.name.split(".")[0]
            if bound not in used:
                yield node.lineno, alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"


def generated_lines(tree):
    "Line numbers nbdev writes itself: the module docstring and the `__all__` assignment."
    lines = set()
    for i, node in enumerate(tree.body):
        is_docstring = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        is_all = isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets)
        if is_docstring or is_all:
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def lint_file(path, all_lines=False):
    "All findings of one file, as (line, problem), in line order."
    text = path.read_text(encoding="utf-8")
    lines = text.split('\n')  # not splitlines(): ast and tokenize count only '\n'
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as e:
        return [(e.lineno or 0, f"syntax error: {e.msg}")]
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    problems = []
    skip = set() if all_lines else generated_lines(tree)
    for n, line in enumerate(lines, 1):
        if len(line) > MAX_LINE and n not in skip:
            problems.append((n, f"line too long ({len(line)} > {MAX_LINE} characters)"))
    for n, keyword in one_line_compounds(tree, tokens, lines):
        problems.append((n, f"one-line compound statement (`{keyword}` header and its body on one line)"))
    for t in tokens:
        if t.type == tokenize.OP and t.string == ";":
            problems.append((t.start[0], "statements joined with `;`"))
    for n, name in unused_imports(tree, lines):
        problems.append((n, f"unused import `{name}` (not used, not in __all__; add `# noqa` if it is a re-export)"))
    return sorted(problems)


def package_files(root):
    return sorted(p for p in (root / "nanochat").rglob("*.py") if p.name != "_modidx.py")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="files to check (default: every module in nanochat/)")
    parser.add_argument("--summary", action="store_true", help="also print the number of findings per module")
    parser.add_argument("--all-lines", action="store_true", help="also measure nbdev's docstring and __all__ lines")
    args = parser.parse_args(argv)
    paths = args.paths or package_files(ROOT)
    counts = Counter()
    for path in paths:
        shown = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path
        for n, problem in lint_file(path, args.all_lines):
            print(f"{shown}:{n}: {problem}")
            counts[str(shown)] += 1
    if args.summary:
        for name, count in sorted(counts.items()):
            print(f"{count:5d}  {name}")
    total = sum(counts.values())
    print(f"lint: {total} problem(s) in {len(counts)} of {len(paths)} module(s)", file=sys.stderr)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
