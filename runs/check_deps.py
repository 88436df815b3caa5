"""No notebook imports from a notebook numbered after it.

Every `nanochat.X` a notebook's code cells import (or run/patch by name: run_torchrun('nanochat.X'), '-m', 'nanochat.X',
mock.patch('nanochat.X.f')) is mapped to the notebook that exports X (`#| default_exp`). An import at the start of a
line runs when the cell runs: a forward one is an error. An indented import (inside a function body) runs only when
the function is called: it is listed as lazy, for a reader to judge.
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
for p in nbs:
    me = os.path.basename(p)
    for c in json.load(open(p))['cells']:
        if c['cell_type'] != 'code': continue
        src = ''.join(c['source'])
        found = [(bool(indent), mod) for indent, mod in IMPORT.findall(src)] + [(False, mod) for mod in BY_NAME.findall(src)]
        found += [(bool(indent), 'nanochat.' + name.strip().split()[0]) for indent, names in FROM_PACKAGE.findall(src)
                  for name in names.split(',') if name.strip()]
        found += [(bool(indent), mod) for indent, rest in MORE_IMPORTS.findall(src)
                  for mod in re.findall(r'nanochat(?:\.\w+)+', rest)]
        found += [(True, mod) for mod in IMPORT_MODULE.findall(src)]  # at run time, like a lazy import
        for is_lazy, mod in found:
            mod, ex = owner(mod)
            if ex is None or ex[:2] <= me[:2]: continue
            (lazy if is_lazy else errors).append(f"{me} (cell {c.get('id')}): {mod} is exported by later notebook {ex}")
for line in sorted(set(lazy)): print("lazy:", line)
for line in sorted(set(errors)): print("FORWARD:", line)
print(f"{len(nbs)} notebooks: {len(set(errors))} forward imports, {len(set(lazy))} lazy ones")
sys.exit(1 if errors else 0)
