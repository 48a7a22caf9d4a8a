"""The explorer's page speed on a model: first paint, the page's words in place, and the time until each widget shows
its first current result, in Debian's headless Chromium against an explorer started in this process.

    .venv/bin/python bench/explorer.py [--model PATH_OR_NAME] [--prompt TEXT] [--runs 3] [--width 1280]
                                       [--lang en|zh] [--json] [--device cpu] [--threads N]

Each run is the first reader of a newly started explorer: the model is loaded once, but every run starts an explorer
of its own (nothing remembered), lets it prepare the opening page's slow answers as `forwardpass explore` does when it
starts, and opens the page in a fresh browser context. `--prompt` opens the page on a prompt of the reader's own,
which nothing has prepared. Times are from navigation start, medians over --runs. "Every widget live" is the last
widget that shows a result without the reader asking (those that follow the prompt or the model, and the on-demand
ones that show a first result when the page opens); the widgets that wait for their Run button are listed as on
demand.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
from pathlib import Path
from urllib.parse import quote

from common import machine

CHROMIUM = "/usr/bin/chromium"

# Records, in the page, when each widget first reaches data-state=current (ms from navigation start), and whether it
# runs by itself. Installed before the page's own scripts.
WATCH = """
window.__live = {};
new MutationObserver((changes) => {
  for (const c of changes) {
    const w = c.target;
    if (w.dataset && w.dataset.widget && w.dataset.state === 'current' && !(w.dataset.widget in window.__live))
      window.__live[w.dataset.widget] = performance.now();
  }
}).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-state'] });
"""


def one_run(browser, url: str, width: int) -> dict:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.add_init_script(WATCH)
    try:
        page.goto(url, wait_until="commit")
        page.wait_for_function("performance.getEntriesByName('first-contentful-paint').length > 0", timeout=30_000)
        page.wait_for_selector("body[data-ready=true]", timeout=120_000)
        try:
            page.wait_for_function("document.getElementById('status').textContent === ''", timeout=300_000)
        except PlaywrightTimeout:
            sys.exit("error: the page did not settle within 300 s")
        return page.evaluate("""() => {
          const mark = (n) => (performance.getEntriesByName(n)[0] || {}).startTime ?? null;
          const widgets = [...document.querySelectorAll('[data-widget]')].map((w) => ({
            name: w.dataset.widget, live_ms: window.__live[w.dataset.widget] ?? null }));
          return { first_paint_ms: mark('first-contentful-paint'), words_ms: mark('forwardpass:text'), widgets };
        }""")
    finally:
        context.close()


@contextlib.contextmanager
def explorer(fp):
    """A newly started explorer on `fp` (as `forwardpass explore` starts it, the model already loaded), once it has
    prepared the opening page's slow answers and nothing else is remembered: its address."""
    from forwardpass.explorer import trace
    from forwardpass.explorer.app import build_explorer, served

    trace.forget()
    app = build_explorer(fp, prepare=True)
    app.state.prepared.join()
    with served(app) as url:
        yield url


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None,
                    help="a model file or an installed model's name (default: the embedded one)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--lang", choices=["en", "zh"], default="en")
    ap.add_argument("--prompt", default=None,
                    help="open the page on this prompt (default: the page's own, whose slow answers are prepared)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.runs < 1:
        sys.exit("error: --runs must be at least 1")
    if not Path(CHROMIUM).exists():
        sys.exit(f"error: {CHROMIUM} is not installed (Debian's chromium package)")

    from common import checked_device
    from playwright.sync_api import sync_playwright

    from forwardpass.explorer.names import display_name
    from forwardpass.loader import load

    device = checked_device(args.device)
    if args.threads:
        import torch
        torch.set_num_threads(args.threads)
    fp = load(args.model, device=device)
    query = f"?lang={args.lang}" + (f"&prompt={quote(args.prompt)}" if args.prompt else "")
    runs = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            for i in range(args.runs):
                with explorer(fp) as url:
                    runs.append(one_run(browser, url + query, args.width))
                print(f"run {i + 1}/{args.runs} done", file=sys.stderr)
        finally:
            browser.close()

    med = lambda xs: statistics.median(xs) if xs else None  # noqa: E731
    names = [w["name"] for w in runs[0]["widgets"]]
    per = {n: med([w["live_ms"] for r in runs for w in r["widgets"] if w["name"] == n and w["live_ms"] is not None])
           for n in names}
    live = [per[n] for n in names if per[n] is not None]
    result = {"machine": machine(device), "model": display_name("model", fp), "prompt": args.prompt,
              "width": args.width, "lang": args.lang, "runs": args.runs,
              "first_paint_ms": med([r["first_paint_ms"] for r in runs]),
              "words_ms": med([r["words_ms"] for r in runs]),
              "every_widget_live_ms": max(live) if live else None,
              "on_demand": [n for n in names if per[n] is None],
              "widgets": {n: per[n] for n in names if per[n] is not None}}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    m = result["machine"]
    print(f"{m['date']} · {m['cpu']} · {m['cores']} cores · load {m['load_average']} · {args.width}px {args.lang} · "
          f"{'prompt ' + repr(args.prompt) if args.prompt else 'the default prompt'} · median of {args.runs}")
    print(f"first paint {result['first_paint_ms']:.0f} ms · words in place {result['words_ms']:.0f} ms · "
          f"every widget live {result['every_widget_live_ms']:.0f} ms ({len(live)} widgets)")
    for n in sorted(result["widgets"], key=per.get, reverse=True)[:10]:
        print(f"  {n:24s} {per[n]:6.0f} ms")
    print(f"  on demand (wait for Run): {', '.join(result['on_demand'])}")


if __name__ == "__main__":
    main()
