"""Render nbs/index.ipynb into README.md without Quarto (nbdev_readme needs Quarto, which is not installable offline).
`python runs/readme.py` writes README.md; `--check` exits 1 when README.md is out of date."""
import json, re, sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
HEADER = "<!-- generated from nbs/index.ipynb by `python runs/readme.py`: edit the notebook, not this file -->\n\n"

def docs_url():
    "The published docs site, from settings.ini (doc_host + doc_baseurl)"
    import configparser
    cfg = configparser.ConfigParser()
    cfg.read(root / 'settings.ini')
    return cfg['DEFAULT']['doc_host'].rstrip('/') + cfg['DEFAULT']['doc_baseurl'].rstrip('/')

def render(nb_path=root / 'nbs' / 'index.ipynb'):
    "Markdown of the notebook: markdown cells as they are, visible code cells fenced, directives dropped"
    nb = json.loads(nb_path.read_text())
    out = []
    for cell in nb['cells']:
        src = ''.join(cell['source'])
        lines = src.splitlines()
        directives = [l for l in lines if re.match(r'\s*#\s*\|', l)]
        if any(re.search(r'\|\s*(hide|include:\s*false)', d) for d in directives): continue
        body = '\n'.join(l for l in lines if l not in directives).strip()
        if not body: continue
        if cell['cell_type'] == 'markdown':
            body = re.sub(r'^> (.*)$', r'> \1', body, flags=re.M)
            body = re.sub(r'\]\((\d\d_[\w-]+\.ipynb)\)', r'](nbs/\1)', body)
            # a page only the docs site has (no notebook of its own): linked on the published site
            out.append(re.sub(r'\]\((differences\.html)\)', rf']({docs_url()}/\1)', body))
        elif cell['cell_type'] == 'code':
            out.append(f"```python\n{body}\n```")
    return HEADER + '\n\n'.join(out) + '\n'

if __name__ == '__main__':
    text = render()
    readme = root / 'README.md'
    if '--check' in sys.argv:
        if not readme.exists() or readme.read_text() != text:
            print("README.md is out of sync with nbs/index.ipynb: run `python runs/readme.py`"); sys.exit(1)
    else:
        readme.write_text(text); print(f"wrote {readme} ({len(text)} chars)")
