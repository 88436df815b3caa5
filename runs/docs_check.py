"""Check the built docs site (_docs/) as a reader sees it: headless Chromium opens every page, offline.

Run `bash runs/docs.sh` first, then `bash runs/docs_check.sh [--page 08_loss_eval] [--strict]` (the wrapper installs
Chromium from Debian when it is missing). Playwright drives the system's Chromium (nanochat.testing.find_chromium,
CHROMIUM_ARGS) over file:// URLs; every request that is not file:, data: or blob: is aborted and is an error (host names
also resolve to nothing, so nothing can leave the machine). For each page it saves the DOM after scripts ran and a
screenshot under _docs_shots/, then checks:

* static, for every page: each local href/src (and each url() in the site's own CSS) points at a file in _docs/;
  no CDN URL is left. A link in page text to a notebook that exists but is not rendered is a warning (an error with
  --strict); to a page that no notebook makes, an error.
* every page, in the browser: navbar title; a title; the page is the active sidebar entry; a notebook page has code
  cells; no JavaScript error; no network request; every image loads; the screenshot is not blank and its navbar has
  the theme's colour (so the theme CSS loaded). The home page: every sidebar link resolves, every page is reachable.
* figures: a page whose notebook draws a figure (a code cell that runs in the test run, shows its output and calls
  plt.show/plt.subplots/plt.figure/plt.plot/imshow, display(fig) or Image/SVG) must show at least one image in its
  cell outputs. A drawing cell whose executed copy (build/executed/nbs/) has no image is named as a warning.
* the generated "Differences from nanochat" page links every notebook that has such a section.
* every page that loads KaTeX: after scripts ran, it holds rendered `.katex` elements and no `.katex-error`.

Exit 1 on any error, printing one line per problem.
"""
import argparse, html.parser, json, os, re, sys, time
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
CDN = re.compile(r'(?:jsdelivr|cdnjs|unpkg|googleapis|gstatic)\.')
NAVBAR_RGB = (39, 128, 227)  # cosmo's primary colour (#2780e3), the navbar background
VOID = {'area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'track', 'wbr'}


class Doc(html.parser.HTMLParser):
    "The DOM facts the checks need: links by page region, class counts, the title (stdlib only)."
    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.links, self.assets, self.classes, self.stack = [], [], {}, []
        self.h1, self._in_h1, self.navbar_title, self._in_brand = '', False, '', False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get('class') or '').split()
        for c in cls: self.classes[c] = self.classes.get(c, 0) + 1
        region = next((r for r in reversed(self.stack) if r), None)
        if tag not in VOID:
            self.stack.append('sidebar' if a.get('id') == 'quarto-sidebar' else 'toc' if a.get('id') == 'TOC'
                              else 'navbar' if a.get('id') == 'quarto-header' else 'main' if tag == 'main' else None)
        if tag == 'a' and a.get('href') is not None:
            self.links.append((region, a['href'], 'active' in cls))
        if tag in ('script', 'img', 'source') and a.get('src'): self.assets.append(a['src'])
        if tag == 'link' and a.get('href'): self.assets.append(a['href'])
        if tag == 'h1': self._in_h1 = True
        if 'navbar-title' in cls: self._in_brand = True

    def handle_endtag(self, tag):
        if tag not in VOID and self.stack:
            self.stack.pop()
        if tag == 'h1': self._in_h1 = False
        if tag == 'span': self._in_brand = False

    def handle_data(self, data):
        if self._in_h1: self.h1 += data
        if self._in_brand: self.navbar_title += data


def local_target(page: Path, ref: str, docs: Path):
    "The file a local href/src points at, or None for external links, anchors and data URLs."
    u = urlsplit(ref)
    if u.scheme or ref.startswith('//') or not u.path: return None
    return (page.parent / unquote(u.path)).resolve() if not u.path.startswith('/') else (docs / unquote(u.path[1:])).resolve()


def check_css(css: Path, docs: Path, seen=None):
    "Problems with the url()s of a stylesheet and of the stylesheets it @imports: network URLs, missing files."
    seen = set() if seen is None else seen
    if css in seen: return []
    seen.add(css)
    out, rel = [], css.relative_to(docs)
    for u in re.findall(r'url\(["\']?([^)"\']+)["\']?\)', css.read_text(encoding='utf-8', errors='replace')):
        if u.startswith(('data:', '#')): continue
        if u.startswith('//') or re.match(r'https?:', u): out.append(f'{rel}: loads {u} from the network'); continue
        t = (css.parent / unquote(u.split('?')[0].split('#')[0])).resolve()
        if not t.exists(): out.append(f'{rel}: url({u}) is missing')
        elif t.suffix == '.css': out += check_css(t, docs, seen)
    return out


FIGURE = re.compile(r'\bplt\.(?:show|subplots|figure|imshow|plot)\(|\bdisplay\(\s*(?:fig\b|plt\.gcf)|\b(?:Image|SVG)\(')
HIDDEN = {'hide', 'export', 'exports', 'exporti', 'exec_doc'}   # cells whose output the page never shows (or defining)


def directives(src):
    "nbdev/Quarto `#|` options at the top of a cell: {'eval:': ['false'], 'hide': [], ...} (nbdev's spelling)."
    out = {}
    for line in src.splitlines():
        if not line.startswith('#|'): break
        words = line[2:].split()
        if words: out[words[0] if words[0].endswith(':') or len(words) == 1 else words[0]] = [w.lower() for w in words[1:]]
    return out


def figure_cells(nb_path: Path, skip_flags):
    "(index, first line) of the cells of a notebook that draw a figure the page should show."
    out = []
    for i, c in enumerate(json.loads(nb_path.read_text(encoding='utf-8'))['cells']):
        if c['cell_type'] != 'code': continue
        src = ''.join(c['source'])
        d = directives(src)
        if d.get('eval:') == ['false'] or d.get('include:') == ['false'] or d.get('output:') == ['false']: continue
        if set(d) & (HIDDEN | set(skip_flags)): continue
        code = '\n'.join(l for l in src.splitlines() if not l.lstrip().startswith('#'))
        if FIGURE.search(code): out.append((i, next((l for l in code.splitlines() if FIGURE.search(l)), '').strip()))
    return out


def has_image(cell):
    return any(k.startswith('image/') for o in cell.get('outputs', []) for k in (o.get('data') or {}))


FACTS = """() => {
  const main = document.querySelector('main') || document.body;
  const imgs = [...main.querySelectorAll('img')];
  const out = [...main.querySelectorAll('.cell-output img, .cell-output svg')];
  const nav = document.querySelector('#quarto-header nav, nav.navbar');
  return {
    broken: imgs.filter(e => !(e.complete && e.naturalWidth > 0)).map(e => (e.getAttribute('src') || '').slice(0, 80)),
    figures: out.filter(e => e.tagName.toLowerCase() === 'svg' ? e.getBoundingClientRect().width > 0
                                                               : e.complete && e.naturalWidth > 0).length,
    navbar: nav ? getComputedStyle(nav).backgroundColor : null,
  };
}"""


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--docs', default=str(ROOT / '_docs'), help='the built site')
    p.add_argument('--out', default=str(ROOT / '_docs_shots'), help='where screenshots and DOM dumps go')
    p.add_argument('--page', action='append', default=None,
                   help='open only this page (and the home page) in the browser, e.g. 08_loss_eval; repeatable')
    p.add_argument('--strict', action='store_true', help='links in page text to missing pages are errors too')
    p.add_argument('--nbs', default=str(ROOT / 'nbs'), help='the notebooks the pages come from')
    p.add_argument('--executed', default=str(ROOT / 'build' / 'executed' / 'nbs'), help="runs/nb_run.py's output")
    a = p.parse_args(argv)
    docs, out, nbs, executed = Path(a.docs).resolve(), Path(a.out).resolve(), Path(a.nbs), Path(a.executed)
    errors, warnings = [], []
    if not (docs / 'index.html').exists():
        sys.exit(f'docs_check: {docs}/index.html is missing; build the site first: bash runs/docs.sh')
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob('*.png'), *out.glob('*.dom.html'), *out.glob('*.netlog.json')]:
        if not old.name.startswith('lab_'): old.unlink()   # no stale shots (lab_*.png are runs/lab_check.py's)
    pages = sorted(docs.rglob('*.html'))
    t0 = time.time()

    # 1. static: every local reference resolves, nothing from a CDN
    for f in pages:
        text = f.read_text(encoding='utf-8')
        d = Doc(text)
        rel = f.relative_to(docs)
        for region, href, _ in d.links:
            t = local_target(f, href, docs)
            if t is not None and not t.exists():
                msg = f'{rel}: link to missing {href}' + ('' if region == 'main' else f' (in the {region})')
                # a page whose notebook exists but is not rendered (a partial build) warns; a link to no notebook at
                # all (a typo) is an error
                unrendered = region == 'main' and (nbs / (Path(href.split('#')[0]).stem + '.ipynb')).exists()
                (warnings if unrendered and not a.strict else errors).append(msg)
        for src in d.assets:
            if CDN.search(src): errors.append(f'{rel}: loads {src} from a CDN')
            t = local_target(f, src, docs)
            if t is not None and not t.exists(): errors.append(f'{rel}: asset {src} is missing')
        for src in re.findall(r'<link[^>]+href="([^"]+\.css)"', text):
            css = local_target(f, src, docs)
            if css is not None and css.exists(): errors += check_css(css, docs)
    errors = list(dict.fromkeys(errors))

    # what the notebooks promise: figures, and a Differences section for the generated page
    import configparser
    cfg = configparser.ConfigParser(); cfg.read(ROOT / 'settings.ini')
    skip_flags = cfg['DEFAULT'].get('tst_flags', '').split()
    draws = {nb.stem: figure_cells(nb, skip_flags) for nb in sorted(nbs.glob('[!_.]*.ipynb'))}
    with_diffs = [nb.stem for nb in sorted(nbs.glob('[!_.]*.ipynb')) if nb.stem != 'index' and re.search(
        r'^##\s+Differences from nanochat\s*$', ''.join(''.join(c['source']) for c in json.loads(nb.read_text(encoding='utf-8'))['cells']
                                                       if c['cell_type'] == 'markdown'), re.M)]
    for name, cells in draws.items():   # the executed notebook: which drawing cells produced no image
        ex = executed / f'{name}.ipynb'
        if not cells or not ex.exists(): continue
        ex_cells = json.loads(ex.read_text(encoding='utf-8'))['cells']
        for i, line in cells:
            if i < len(ex_cells) and not has_image(ex_cells[i]):
                warnings.append(f'{name}.html: cell #{i + 1} draws a figure (`{line[:60]}`) but its test run showed none')

    sys.path.insert(0, str(ROOT))
    from nanochat.testing import find_chromium, CHROMIUM_ARGS
    exe = find_chromium()
    try: from playwright.sync_api import sync_playwright
    except ImportError: exe = None
    if exe is None:
        print('docs_check: SKIPPED the browser checks: no chromium on PATH or no playwright (bash runs/docs_check.sh '
              'installs chromium with apt-get); the static checks ran', file=sys.stderr)
        for w in warnings: print(f'warning: {w}')
        for e in errors: print(f'ERROR: {e}')
        return 1 if errors else 3  # 3: the static checks passed, the browser ones were skipped

    if a.page:
        want = {Path(n).stem for n in a.page} | {'index'}
        browse = [f for f in pages if f.stem in want and f.parent == docs]
        for n in want - {f.stem for f in browse}: errors.append(f'{n}.html was not built')
    else: browse = pages
    browse.sort(key=lambda f: f.name != 'index.html')   # the home page first: its sidebar is the site's map
    from PIL import Image
    checked, n_math, n_figs, math_pages, figs = {}, 0, 0, 0, {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS + ['--host-resolver-rules=MAP * ~NOTFOUND'])
        ctx = browser.new_context(viewport={'width': 1280, 'height': 900}, service_workers='block')
        current = {'page': None}
        network = []

        def refuse(route):   # nothing but the site's own files: every other request is aborted and reported
            url = route.request.url
            if url.startswith(('file:', 'data:', 'blob:', 'about:')): return route.continue_()
            network.append((current['page'], url)); route.abort('blockedbyclient')

        def refuse_ws(ws):
            network.append((current['page'], ws.url)); ws.close()
        ctx.route('**/*', refuse)
        ctx.route_web_socket(re.compile('.*'), refuse_ws)
        page = ctx.new_page()
        js_errors = []
        page.on('pageerror', lambda e: js_errors.append((current['page'], str(e))))
        page.on('console', lambda m: js_errors.append((current['page'], m.text)) if m.type == 'error' else None)
        page.on('requestfailed', lambda r: js_errors.append((current['page'], f'failed to load {r.url[:100]}'))
                if r.url.startswith('file:') else None)
        side = []
        for f in browse:
            rel = str(f.relative_to(docs)); current['page'] = rel
            try: page.goto(f.as_uri(), wait_until='load', timeout=60_000)
            except Exception as e: errors.append(f'{rel}: did not load: {e}'); continue
            dom = page.content()
            (out / f'{f.stem}.dom.html').write_text(dom, encoding='utf-8')
            page.screenshot(path=str(out / f'{f.stem}.png'))
            facts = page.evaluate(FACTS)
            d = Doc(dom)
            checked[rel] = d
            if not d.navbar_title.strip(): errors.append(f'{rel}: no navbar title')
            if not d.h1.strip(): errors.append(f'{rel}: no title')
            if not [h for r, h, _ in d.links if r == 'sidebar']: errors.append(f'{rel}: no sidebar')
            elif f.name != '404.html' and not any(Path(h).name == f.name for r, h, act in d.links if r == 'sidebar' and act):
                errors.append(f'{rel}: not the active sidebar entry')
            if re.match(r'\d\d_', f.stem) and not (d.classes.get('cell') or d.classes.get('sourceCode')):
                errors.append(f'{rel}: no code cells')
            for src in facts['broken']: errors.append(f'{rel}: image {src} does not load')
            n_figs += facts['figures']; figs[rel] = {'figures': facts['figures'], 'drawing_cells': len(draws.get(f.stem, []))}
            cells = draws.get(f.stem, [])
            if cells and facts['figures'] == 0:
                where = ', '.join(f'#{i + 1} `{line[:50]}`' for i, line in cells[:3])
                errors.append(f'{rel}: its notebook draws {len(cells)} figure(s) (cell {where}) but the page shows none')
            if 'katex.min.js' in f.read_text(encoding='utf-8'):
                math_pages += 1; n_math += d.classes.get('katex', 0)
                if not d.classes.get('katex'): errors.append(f'{rel}: has math but no rendered .katex element')
                if d.classes.get('katex-error'):
                    errors.append(f'{rel}: KaTeX could not parse {d.classes["katex-error"]} formula(s)')
            im = Image.open(out / f'{f.stem}.png').convert('RGB')
            colours = len(im.resize((160, 112)).getcolors(160 * 112))
            nav = im.getpixel((im.width // 2, 8))
            if colours < 20: errors.append(f'{rel}: the screenshot looks blank ({colours} colours)')
            if max(abs(x - y) for x, y in zip(nav, NAVBAR_RGB)) > 40:
                errors.append(f"{rel}: navbar colour {nav} is not the theme's {NAVBAR_RGB}: did the theme CSS load?")
            if f.name == 'index.html':   # the sidebar is the site's map: every link resolves, every page is on it
                side = [h for r, h, _ in d.links if r == 'sidebar' and h and not h.startswith('#')]
                reachable = set()
                for h in side:
                    t = local_target(f, h, docs)
                    if t is None: continue
                    if not t.exists(): errors.append(f'index.html: sidebar link {h} does not resolve')
                    else: reachable.add(t)
                for g in pages:
                    if g.name not in ('index.html', '404.html') and g.resolve() not in reachable:
                        errors.append(f'{g.relative_to(docs)} is rendered but not in the sidebar (add a glob in nbs/sidebar.yml)')
            if f.name == 'differences.html':
                linked = {Path(h).stem for r, h, _ in d.links if r == 'main'}
                for n in with_diffs:
                    if n not in linked: errors.append(f'differences.html: no link to {n}, which has a Differences section')
        browser.close()
    if 'differences.html' not in {f.name for f in pages}:
        errors.append('differences.html was not built (runs/docs_build.py generates it)')
    for rel, e in js_errors: errors.append(f'{rel}: JavaScript: {e[:200]}')
    for rel, u in network: errors.append(f'{rel}: requested {u[:120]} over the network (refused)')

    (out / 'figures.json').write_text(json.dumps(figs, indent=1))   # figures shown per page, for the curious
    for w in warnings: print(f'warning: {w}')
    for e in errors: print(f'ERROR: {e}')
    n_draw = sum(1 for f in browse if draws.get(f.stem))
    print(f'docs_check: {len(pages)} pages, {len(side)} sidebar links, {len(checked)} opened in Chromium; '
          f'{n_figs} figures shown ({n_draw} opened page(s) come from notebooks that draw); '
          f'{n_math} formulas rendered on {math_pages} page(s) with math; {len(network)} network request(s) refused; '
          f'screenshots in {os.path.relpath(out, ROOT)}/; {len(errors)} error(s), {len(warnings)} warning(s); '
          f'{time.time() - t0:.1f}s')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
