"""Make docs/img/explorer.png, the README's picture of the attention explorer, from a run of the
sorting transformer (headless Chromium, driven as in the browser tests):

    python demos/transformer.py --out runs/transformer
    python docs/screenshot.py runs/transformer/explorer.html docs/img/explorer.png
"""
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from browser import Browser  # noqa: E402  (tests/browser.py: WebDriver over plain HTTP)


def main(page, png, group=2, layer=1, head=0, query=8):
    with Browser(width=1280, height=920) as b:
        b.open(pathlib.Path(page).resolve().as_uri())
        for _ in range(100):
            if b.run("return document.body.dataset.ready === '1'"):
                break
            time.sleep(0.05)
        b.click(b.find(f".tab[data-group='{group}']"))
        b.click(b.find(f".thumb[data-layer='{layer}'][data-head='{head}']"))
        b.click(b.find(f"#lines .tok.q[data-i='{query}']"))           # pin a query
        b.run("window.scrollTo(0, 0)")
        b.screenshot(png)
        errors = b.console_errors()
    if errors:
        raise SystemExit(f"console errors: {errors}")
    print(f"wrote {png}")


if __name__ == "__main__":
    main(*sys.argv[1:3], *map(int, sys.argv[3:]))
