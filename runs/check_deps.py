"""No notebook imports from a notebook numbered after it.

Every `nanochat.X` a notebook's code cells import (or run/patch by name: run_torchrun('nanochat.X'), '-m', 'nanochat.X',
mock.patch('nanochat.X.f')) is mapped to the notebook that exports X (`#| default_exp`). An import at the start of a
line, or indented under a `with`, `try`, `if` or loop, runs when the cell runs: a forward one is an error. An import
inside a function body runs only when the function is called: it is listed as lazy, for a reader to judge.
"""
import json, re, sys, glob, os
NBS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nbs")
nbs = sorted(glob.glob(os.path.join(NBS, '[0-9][0-9]_*.ipynb')))
exporter = {}
for p in nbs:
    for c in json.load(open(p))['cells']:
        m = re.search(r'^#\|\s*default_exp\s+(\S+)', ''.join(c['source']), re.M)
        if m: exporter['nanochat.' + m.group(1)] = os.path.basename(p); break

def owner(mod):
    while mod not in exporter and mod.count('.') > 1: mod = mod.rsplit('.', 1)[0]
    return mod, exporter.get(mod)

errors, lazy = [], []
IMPORT = re.compile(r'^([ \t]*)(?:from|import)\s+(nanochat(?:\.\w+)+)', re.M)
BY_NAME = re.compile(r"(?:run_torchrun\(\s*|patch\(\s*|['\"]-m['\"],\s*)['\"](nanochat(?:\.\w+)+)['\"]")
# `from nanochat import a, b` (the modules a and b), the other names of `import nanochat.a, nanochat.b`, and
# importlib.import_module("nanochat.a")
FROM_PACKAGE = re.compile(r'^([ \t]*)from\s+nanochat\s+import\s+\(?([\w ,]+)', re.M)
MORE_IMPORTS = re.compile(r'^([ \t]*)import\s+nanochat\.[\w.]+(?:\s+as\s+\w+)?((?:\s*,\s*nanochat\.[\w.]+(?:\s+as\s+\w+)?)+)', re.M)
IMPORT_MODULE = re.compile(r"import_module\(\s*['\"](nanochat(?:\.\w+)+)['\"]")
def in_function(src, pos):
    "True when the line at `pos` sits in a function body: an enclosing line (by indentation) is a `def`"
    lines = src[:pos].split('\n')
    indent = len(lines[-1])  # the import line up to the import: its indentation
    for line in reversed(lines[:-1]):
        code = line.lstrip()
        if not code or code.startswith('#') or len(line) - len(code) >= indent:
            continue
        if re.match(r'(async\s+)?def\s', code):
            return True
        indent = len(line) - len(code)
    return False

for p in nbs:
    me = os.path.basename(p)
    for c in json.load(open(p))['cells']:
        if c['cell_type'] != 'code': continue
        src = ''.join(c['source'])
        found = [(in_function(src, m.start(2)), m.group(2)) for m in IMPORT.finditer(src)]
        found += [(False, mod) for mod in BY_NAME.findall(src)]
        found += [(in_function(src, m.start(2)), 'nanochat.' + name.strip().split()[0]) for m in FROM_PACKAGE.finditer(src)
                  for name in m.group(2).split(',') if name.strip()]
        found += [(in_function(src, m.start(2)), mod) for m in MORE_IMPORTS.finditer(src)
                  for mod in re.findall(r'nanochat(?:\.\w+)+', m.group(2))]
        found += [(True, mod) for mod in IMPORT_MODULE.findall(src)]  # at run time, like a lazy import
        for is_lazy, mod in found:
            mod, ex = owner(mod)
            if ex is None or ex[:2] <= me[:2]: continue
            (lazy if is_lazy else errors).append(f"{me} (cell {c.get('id')}): {mod} is exported by later notebook {ex}")
for line in sorted(set(lazy)): print("lazy:", line)
for line in sorted(set(errors)): print("FORWARD:", line)
print(f"{len(nbs)} notebooks: {len(set(errors))} forward imports, {len(set(lazy))} lazy ones")
sys.exit(1 if errors else 0)
