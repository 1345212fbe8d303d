"""The demo's page in a real browser: Debian's chromium, headless, driven by python3-selenium
through chromium-driver (lessons/tools/setup installs the three).

    page_test.py DIR    DIR/index.html, written by demo/page from DIR's files

It checks, and prints each step as it goes:
  1. it loads from file:// with no console error and no network request (every request the
     browser made is file:// or data:);
  2. every figure renders: loaded, and drawn with a non-zero size;
  3. every number the page marks (<data data-key>) equals SUMMARY.txt's, and every number of
     SUMMARY.txt is on the page;
  4. pointing at a dot of a latency figure shows a tooltip naming that row's status;
  5. every figure has a text alternative (an image its alt, a drawn timeline its aria-label and
     <title>), and the headings go down one level at a time (h1, h2, h3: none skipped);
  6. a timeline zooms: a wheel turn over it narrows its viewBox, a drag then moves it along;
  7. printed on A4 (print media, A4's text width with 15 mm margins), no table, figure or block
     of text is wider than the page: nothing is cut at its right edge;
  8. the page demo/page writes from DIR now is the one DIR holds (a committed page cannot drift).
No bound here depends on how busy the machine is: the waits are for events, with a minute each.
"""
import json
import math
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run_data import summary_numbers  # noqa: E402

WAIT_S = 60  # a page load or a wait for an event; chromium starts in seconds even on busy cores


def fail(message):
    print(f"page_test: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def step(message):
    print(f"page_test: {message}", flush=True)


def check_current(folder):
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp) / "run"
        shutil.copytree(folder, copy)
        subprocess.run(["/usr/bin/python3", str(HERE / "page"), str(copy)], check=True,
                       stdout=subprocess.DEVNULL)
        if (copy / "index.html").read_bytes() != (folder / "index.html").read_bytes():
            fail(f"{folder}/index.html is not what demo/page writes from its files now: "
                 f"run demo/page {folder}")
    step("the page is what demo/page writes from the folder's files")


def browser(profile):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        fail("python3-selenium is missing: run lessons/tools/setup")
    for program in ("/usr/bin/chromium", "/usr/bin/chromedriver"):
        if not pathlib.Path(program).exists():
            fail(f"{program} is missing: run lessons/tools/setup (chromium, chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    # As root chromium needs --no-sandbox; the rest keep it from calling home (there is no
    # network here, and a request the page did not make must not show up as one it did).
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-dev-shm-usage", "--window-size=1200,900", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(WAIT_S)
    return driver


def check_in_browser(driver, folder):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import WebDriverWait
    url = (folder / "index.html").resolve().as_uri()
    # Chromium opens its own new-tab page at start (chrome:// requests): forget those first.
    driver.get("about:blank")
    driver.get_log("performance")
    driver.get(url)
    WebDriverWait(driver, WAIT_S).until(
        lambda d: d.execute_script("return document.readyState") == "complete")
    step(f"loaded {url}")

    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    if errors:
        fail("console errors: " + "; ".join(errors))
    requests = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requests.append(message["params"]["request"]["url"])
    outside = [u for u in requests if not u.startswith(("file:", "data:"))]
    if outside:
        fail("requests beyond the folder: " + ", ".join(outside))
    step(f"no console error; {len(requests)} requests, every one file:// or data:")

    figures = driver.execute_script(
        "return [...document.images].map(i => [i.getAttribute('src'), i.complete,"
        " i.naturalWidth, i.getBoundingClientRect().width, i.alt])")
    if not figures:
        fail("the page shows no figure")
    for src, complete, natural, width, alt in figures:
        if not (complete and natural > 0 and width > 0):
            fail(f"figure {src} did not render (loaded {complete}, {natural} px wide, "
                 f"drawn {width} px wide)")
        if not alt:
            fail(f"figure {src} has no alt text")
    step(f"{len(figures)} figures rendered, each with alt text")

    summary = summary_numbers(folder / "SUMMARY.txt")
    expected = {"pgbench": summary["pgbench"]}
    for run, fields in summary["runs"].items():
        for field, value in fields.items():
            if field == "statuses":
                expected.update({f"{run}.status.{k}": v for k, v in value.items()})
            else:
                expected[f"{run}.{field}"] = value
    shown = driver.execute_script(
        "return [...document.querySelectorAll('data[data-key]')]"
        ".map(d => [d.dataset.key, d.value, d.textContent])")
    on_page = {}
    for key, value, text in shown:
        if key not in expected:
            fail(f"the page marks {key}={value}, a number SUMMARY.txt does not have")
        if value != expected[key] or not text.startswith(value):
            fail(f"the page shows {key} as '{text}' (value {value}); SUMMARY.txt says "
                 f"{expected[key]}")
        on_page[key] = value
    missing = sorted(set(expected) - set(on_page))
    if missing:
        fail("SUMMARY.txt's numbers missing from the page: " + ", ".join(missing))
    step(f"{len(shown)} numbers on the page, all {len(expected)} of SUMMARY.txt's, equal")

    # Point at the first dot of the first figure that answers a pointer: where page.html's
    # script puts it on screen, from the same geometry.
    hover = driver.execute_script(
        "const img = document.querySelector('img[data-hover]'); img.scrollIntoView();"
        "const spec = JSON.parse(document.getElementById(img.dataset.hover).textContent);"
        "const r = img.getBoundingClientRect(); return [spec, r.width, r.height];")
    if not hover:
        fail("no figure answers a pointer")
    spec, width, height = hover
    ax = spec["axes"][0]
    x, y, label = ax["points"][len(ax["points"]) // 2]
    left, top, right, bottom = ax["box"]
    lo, hi = (math.log10(v) for v in ax["y"]) if ax["ylog"] else ax["y"]
    v = math.log10(y) if ax["ylog"] else y
    px = left + (x - ax["x"][0]) / (ax["x"][1] - ax["x"][0]) * (right - left)
    py = bottom - (v - lo) / (hi - lo) * (bottom - top)
    scale = width / spec["width"]
    image = driver.find_element("css selector", "img[data-hover]")
    # Selenium's offsets count from the element's centre.
    ActionChains(driver).move_to_element_with_offset(
        image, int(px * scale - width / 2), int(py * scale - height / 2)).perform()
    tip = driver.find_element("id", "tooltip")
    try:
        WebDriverWait(driver, WAIT_S).until(lambda d: tip.is_displayed())
    except Exception:
        fail(f"pointing at ({x} s, {y} ms) of the first latency figure showed no tooltip")
    if not tip.text.startswith(ax["labels"][label]):
        fail(f"the tooltip says '{tip.text}', expected the status {ax['labels'][label]}")
    step(f"pointing at a dot shows: {tip.text}")
    check_readable(driver)
    check_zoom(driver)
    check_print(driver)


A4_TEXT_PX = round((210 - 2 * 15) / 25.4 * 96)  # A4's width less page.html's margins, CSS px


def check_print(driver):
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": A4_TEXT_PX, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
    try:
        wide = driver.execute_script(
            "window.dispatchEvent(new Event('beforeprint'));"
            "const edge = document.documentElement.clientWidth + 1;"
            "return [...document.querySelectorAll('table, figure, figure img, figure svg, pre')]"
            ".filter(e => e.getBoundingClientRect().right > edge || e.scrollWidth > e.clientWidth + 1)"
            ".map(e => e.tagName + ' ' + (e.id || e.getAttribute('src') || '') + ' ' +"
            " Math.round(Math.max(e.getBoundingClientRect().right, e.scrollWidth)))")
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
    if wide:
        fail(f"printed on A4 ({A4_TEXT_PX} px of text width) these are cut: " + ", ".join(wide))
    step(f"printed on A4 ({A4_TEXT_PX} px wide) every table, figure and block of text fits")


def check_readable(driver):
    drawn = driver.execute_script(
        "return [...document.querySelectorAll('figure svg[role=img], figure > svg')].map(v =>"
        " [v.id, v.getAttribute('aria-label') || '', (v.querySelector(':scope > title') || {})"
        ".textContent || ''])")
    for ident, label, title in drawn:
        if not label.strip() or not title.strip():
            fail(f"the drawn figure {ident} has no text alternative (aria-label '{label}', "
                 f"title '{title}')")
    levels = driver.execute_script(
        "return [...document.querySelectorAll('h1,h2,h3,h4,h5,h6')].map(h => [h.tagName, "
        "h.textContent])")
    last = 0
    for tag, text in levels:
        level = int(tag[1])
        if level > last + 1:
            fail(f"the heading '{text}' is an {tag.lower()} after an h{last}: a level skipped")
        last = level
    if not levels or levels[0][0] != "H1":
        fail("the page does not begin with an h1")
    step(f"{len(drawn)} drawn figures with a text alternative; {len(levels)} headings in order")


def check_zoom(driver):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
    inner = driver.execute_script(
        "const v = document.querySelector('figure.timeline svg.zoom');"
        "if (v) v.scrollIntoView({block: 'center'}); return v;")
    if inner is None:
        fail("the page has no zoomable timeline")

    def view():
        box = driver.execute_script("return arguments[0].getAttribute('viewBox')", inner)
        return [float(v) for v in box.split()]
    before = view()
    # A real wheel turn (an input event through the browser, as a mouse makes it) over its middle.
    ActionChains(driver).scroll_from_origin(ScrollOrigin.from_element(inner), 0, -300).perform()
    zoomed = view()
    if not zoomed[2] < before[2]:
        fail(f"a wheel turn over the timeline left its viewBox at {zoomed} (was {before})")
    ActionChains(driver).move_to_element(inner).click_and_hold().move_by_offset(-200, 0) \
        .release().perform()
    dragged = view()
    if not (dragged[0] > zoomed[0] and dragged[2] == zoomed[2]):
        fail(f"a drag along the zoomed timeline left its viewBox at {dragged} (was {zoomed})")
    shown = driver.execute_script("return document.querySelector('.zoom-range').textContent")
    step(f"the timeline zooms: viewBox {before[0]:g} {before[2]:g} -> {zoomed[0]:g} {zoomed[2]:g}"
         f" (wheel) -> {dragged[0]:g} {dragged[2]:g} (drag): {shown}")


def main():
    if len(sys.argv) != 2:
        print("usage: page_test.py DIR", file=sys.stderr)
        sys.exit(2)
    folder = pathlib.Path(sys.argv[1]).resolve()
    profile = tempfile.mkdtemp(prefix="page-test-chromium.")
    driver = None
    try:
        driver = browser(profile)
        check_in_browser(driver, folder)
    finally:
        if driver is not None:
            driver.quit()  # stops chromium and chromedriver, pass or fail
        shutil.rmtree(profile, ignore_errors=True)
    check_current(folder)
    step("passed")


if __name__ == "__main__":
    main()
