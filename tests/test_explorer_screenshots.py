"""The README's screenshots of the explorer, in both languages at both widths:

    .venv/bin/python tests/test_explorer_screenshots.py      # writes docs/explorer*.png

docs/explorer.png (English, 1280 px, the top of the page), docs/explorer-zh.png (Chinese, 1280 px, §01),
docs/explorer-390.png and docs/explorer-zh-390.png (390 px, attention opened up). Under pytest the same four go to
artifacts/ (or $FORWARDPASS_ARTIFACTS): a check that they can still be made."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from test_explorer_fixtures import chromium, explorer, idle, needs_chromium, open_page

ROOT = Path(__file__).parent.parent
ATTENTION = '[data-widget="W-attention"]'
# file, language, width, height, what is scrolled to the top (None: the page's top)
SHOTS = [("explorer.png", "en", 1280, 1000, None), ("explorer-zh.png", "zh", 1280, 1000, "#s01"),
         ("explorer-390.png", "en", 390, 844, ATTENTION), ("explorer-zh-390.png", "zh", 390, 844, ATTENTION)]


def take(pipeline, out: Path) -> list[Path]:
    """The four screenshots of the explorer on `pipeline`, written into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with chromium() as browser, explorer(pipeline) as url:
        pages = {}
        for name, lang, width, height, target in SHOTS:
            if lang not in pages:
                pages[lang] = open_page(browser, url, width, lang)
            page = pages[lang]
            page.set_viewport_size({"width": width, "height": height})
            page.wait_for_timeout(300)  # charts are drawn again at the new width
            idle(page)
            page.evaluate("sel => sel ? document.querySelector(sel).scrollIntoView() : window.scrollTo(0, 0)", target)
            page.screenshot(path=str(out / name))
            written.append(out / name)
        for page in pages.values():
            page.context.close()
    return written


@needs_chromium
def test_the_readmes_screenshots_can_be_made(smollm):
    out = Path(os.environ.get("FORWARDPASS_ARTIFACTS", ROOT / "artifacts"))
    for path in take(smollm, out):
        assert path.stat().st_size > 10_000


if __name__ == "__main__":
    import forwardpass

    if not Path("/usr/bin/chromium").exists():
        sys.exit("Debian's chromium is needed: make browser")
    for path in take(forwardpass.load(), ROOT / "docs"):
        print(path.relative_to(ROOT))
