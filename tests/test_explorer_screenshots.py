"""The README's screenshots of the explorer, in both languages at both widths:

    .venv/bin/python tests/test_explorer_screenshots.py      # writes docs/explorer*.png

docs/explorer.png (English, 1280 px, the top of the page), docs/explorer-zh.png (Chinese, 1280 px, §01),
docs/explorer-390.png and docs/explorer-zh-390.png (390 px, attention opened up). The script offers the installed
Gemma 3 270M beside the default model, as `forwardpass explore` does, so the Chinese page is on the model that reads
Chinese. Under pytest the same four go to artifacts/ (or $FORWARDPASS_ARTIFACTS), on the default model alone: a check
that they can still be made."""

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


def take(loaded, out: Path, others: dict | None = None) -> list[Path]:
    """The four screenshots of the explorer on `loaded` (and the models `others` names), written into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with chromium() as browser, explorer(loaded, others) as url:
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
def test_the_readmes_screenshots_can_be_made(stored):
    out = Path(os.environ.get("FORWARDPASS_ARTIFACTS", ROOT / "artifacts"))
    for path in take(stored, out):
        assert path.stat().st_size > 10_000


if __name__ == "__main__":
    import forwardpass
    from forwardpass.packaged import gemma3_270m

    if not Path("/usr/bin/chromium").exists():
        sys.exit("Debian's chromium is needed: make browser")
    for path in take(forwardpass.load(), ROOT / "docs", {"gemma3-270m": lambda: forwardpass.load(gemma3_270m())}):
        print(path.relative_to(ROOT))
