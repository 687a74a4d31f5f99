#!/usr/bin/env python3
"""Drives ciprof's HTML report (argv[1]) in headless Chromium through Selenium and checks what
a reader does with it: no console errors (CSP violations are), zoom, search, tooltips, the
base/head/diff toggle, the sandwich view, sorting, and a hostile name that stays text.
argv[2], when not empty, is a directory for screenshots. Prints one line per check; exits 1
on the first failure with what was found.

    html_browser.py REPORT.html [SHOTS_DIR]                  test_html_browser.sh's fixture
    html_browser.py REPORT.html [SHOTS_DIR] --expect T.json  any fixture: what to expect in T

The names and figures checked are test_html_browser.sh's small fixture unless --expect names
a truth file (tests/tools/wide_suite.py writes one): then zoom, search, tooltip, the diff
view's colours, the sandwich view and sorting are checked on its planted function."""
import json
import os
import sys

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

# The hostile function name test_html_browser.sh stores ends in U+202E "evil"; the page
# must show the bidi override as U+FFFD, as everywhere in ciprof's text output.
HOSTILE = '<img src=x onerror="window.pwned=1">\ufffdevil'
HEAD_TOTAL = 3000 + 1000 + 2000 + 1000 + 2500 + 4000


def check(what, cond, found=None):
    if not cond:
        print(f"FAIL: {what}" + (f" (found {found!r})" if found is not None else ""))
        sys.exit(1)
    print(f"ok: {what}")


def frames(d, box):
    """(label, width in px, class) of every frame in box."""
    return d.execute_script(
        "return Array.from(document.querySelectorAll('#' + arguments[0] + ' .frame'))"
        ".map(f => [f.node.name, f.getBoundingClientRect().width, f.className]);", box)


def frame_el(d, box, name):
    return d.execute_script(
        "return Array.from(document.querySelectorAll('#' + arguments[0] + ' .frame'))"
        ".find(f => f.node.name === arguments[1] && !f.classList.contains('caller'));",
        box, name)


def main():
    args = sys.argv[1:]
    expect = None
    if "--expect" in args:
        i = args.index("--expect")
        with open(args[i + 1], encoding="utf-8") as f:
            expect = json.load(f)
        del args[i:i + 2]
    path, shots = args[0], args[1] if len(args) > 1 else ""
    o = Options()
    o.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1300,1800",
              "--disable-dev-shm-usage"):
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
    try:
        if expect:
            run_expect(d, path, shots, expect)
        else:
            run(d, path, shots)
    finally:
        d.quit()


def load(d, path):
    """Opens the page; checks that its script ran, without console errors, under a CSP that
    admits scripts only by hash."""
    d.get("file://" + os.path.abspath(path))
    WebDriverWait(d, 20).until(
        lambda d: d.find_element(By.TAG_NAME, "html").get_attribute("data-ciprof-ready"))
    check("the script ran under the page's CSP", True)
    errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    check("no console errors", not errors, errors)
    csp = d.find_element(By.CSS_SELECTOR, "meta[http-equiv=Content-Security-Policy]")
    policy = csp.get_attribute("content")
    script_src = [p for p in policy.split(";") if p.strip().startswith("script-src")]
    check("the CSP admits scripts only by hash",
          script_src and "'sha256-" in script_src[0] and "unsafe" not in policy, policy)


def run(d, path, shots):
    load(d, path)
    if shots:
        d.save_screenshot(os.path.join(shots, "report-html.png"))

    # The hostile name is a frame's text, never an element; its onerror never ran.
    hostile = frame_el(d, "flame", HOSTILE)
    check("the hostile name is drawn as a frame", hostile is not None)
    check("the hostile name is text", hostile.text == HOSTILE or
          d.execute_script("return arguments[0].node.name", hostile) == HOSTILE, hostile.text)
    check("no element came from a name", not d.find_elements(By.CSS_SELECTOR, "main img"))
    check("no script came from a name", d.execute_script("return window.pwned") is None)
    check("no bidi override reaches the page's text",
          not d.execute_script("return document.body.innerText.includes('\\u202e') || "
                               "JSON.stringify(Array.from(document.querySelectorAll('.frame'))"
                               ".map(f => f.node.name)).includes('\\u202e')"))

    # Zoom: clicking work_hot makes it the full width; its callers stay above; reset undoes.
    width = d.execute_script("return document.getElementById('flame').clientWidth")
    before = frame_el(d, "flame", "work_hot").rect["width"]
    check("work_hot is drawn at its share", abs(before - width * 4000 / HEAD_TOTAL) < 3,
          (before, width))
    frame_el(d, "flame", "work_hot").click()
    after = frame_el(d, "flame", "work_hot").rect["width"]
    check("click zooms: work_hot fills the width", abs(after - width) < 3, (after, width))
    callers = [f[0] for f in frames(d, "flame") if "caller" in f[2]]
    check("the zoomed frame's callers are shown above it", callers == ["all", "suite", "main"],
          callers)
    check("tokenize is out of view when zoomed", frame_el(d, "flame", "tokenize") is None)
    d.find_element(By.ID, "reset").click()
    check("reset zoom shows everything again", frame_el(d, "flame", "tokenize") is not None)

    # Tooltip on hover, with base, head and change.
    ActionChains(d).move_to_element(frame_el(d, "flame", "work_hot")).perform()
    tip = d.find_element(By.ID, "tip").text
    check("hovering shows a tooltip with the change", "change: +" in tip and "base:" in tip, tip)

    # Search: highlight and matched share.
    box = d.find_element(By.ID, "search")
    box.send_keys("mix")
    matched = [f[0] for f in frames(d, "flame") if "match" in f[2]]
    check("search highlights both mix frames", matched == ["mix", "mix"], matched)
    share = d.find_element(By.ID, "matched").text
    want = f"{100 * 3000 / HEAD_TOTAL:.1f} %"
    check(f"the matched share is {want} of head samples", want in share and "2 frames" in share,
          share)
    if shots:
        d.save_screenshot(os.path.join(shots, "report-search.png"))
    d.execute_script("document.getElementById('search').value='';"
                     "document.getElementById('search').dispatchEvent(new Event('input'))")
    check("clearing the search clears the highlight",
          not [f for f in frames(d, "flame") if "match" in f[2]])

    # base / head / diff: the base view sizes frames by base samples.
    d.find_element(By.ID, "mode-base").click()
    hot_base = frame_el(d, "flame", "work_hot").rect["width"]
    base_total = HEAD_TOTAL - 2000 + 3 * 2  # per run, about
    check("the base view draws work_hot at its base share",
          abs(hot_base - width * 2000 / base_total) < 4, hot_base)
    check("the toggle says which view is on",
          d.find_element(By.ID, "mode-base").get_attribute("aria-pressed") == "true")
    d.find_element(By.ID, "mode-diff").click()
    check("the diff view colours only the flagged function",
          [f[0] for f in frames(d, "flame") if "slower" in f[2] or "faster" in f[2]] ==
          ["work_hot"], frames(d, "flame"))

    # Sandwich: mix is called from hash and render; callers above, the function at the
    # bottom of them; nothing below it.
    d.execute_script("Array.from(document.querySelectorAll('#functions-table button'))"
                     ".find(b => b.textContent === 'mix').click()")
    up = frames(d, "callers")
    check("the sandwich shows mix's callers", sorted(f[0] for f in up) ==
          ["hash", "main", "main", "mix", "render", "suite", "suite"] or
          sorted(f[0] for f in up) == ["hash", "main", "mix", "render", "suite"], up)
    tops = d.execute_script(
        "return Array.from(document.querySelectorAll('#callers .frame'))"
        ".map(f => [f.node.name, f.offsetTop]);")
    ys = dict((n, y) for n, y in tops)
    check("callers are drawn above the function", ys["hash"] < ys["mix"] and ys["suite"] < ys["hash"],
          tops)
    down = frames(d, "callees")
    check("the callees start with the function", [f[0] for f in down] == ["mix"], down)
    info = d.find_element(By.ID, "sandwich-info").text
    check("the sandwich counts the call sites", "2 call sites" in info, info)
    if shots:
        d.find_element(By.ID, "sandwich").location_once_scrolled_into_view
        d.save_screenshot(os.path.join(shots, "report-sandwich.png"))

    # Sortable tables: by change, biggest first.
    th = [t for t in d.find_elements(By.CSS_SELECTOR, "#functions-table th") if t.text == "change"]
    th[0].click()
    first = d.find_element(By.CSS_SELECTOR, "#functions-table tbody tr td button").text
    check("sorting by change puts work_hot first", first == "work_hot", first)
    # 'could see': each judged function's detectable change from the data block, as a whole
    # percentage; blank for items not judged.
    data = d.execute_script(
        "return JSON.parse(document.getElementById('ciprof-data').textContent).functions")
    heads = [t.text for t in d.find_elements(By.CSS_SELECTOR, "#functions-table th")]
    col = [i for i, h in enumerate(heads) if h.startswith("could see")]
    check("the functions table has a 'could see' column", len(col) == 1, heads)
    cells = {}
    for row in d.find_elements(By.CSS_SELECTOR, "#functions-table tbody tr"):
        tds = row.find_elements(By.TAG_NAME, "td")
        cells.setdefault(tds[0].text, []).append(tds[col[0]].text)
    want = {}
    for f in data:
        det = f["detectable"]
        want.setdefault(f["name"], []).append(
            "" if det is None else "over +1000 %" if det > 10 else f"+{100 * det:.0f} %")
    check("'could see' shows each item's detectable change",
          {k: sorted(v) for k, v in cells.items()} == {k: sorted(v) for k, v in want.items()},
          (cells, want))
    check("work_hot, judged, has a percentage there",
          any(c.startswith("+") for c in cells.get("work_hot", [])), cells.get("work_hot"))
    errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    check("still no console errors", not errors, errors)


def run_expect(d, path, shots, t):
    """The checks of run(), on any fixture: t is its truth file (tests/tools/wide_suite.py)."""
    load(d, path)
    fn = t["planted"]
    total = t["head_samples"]
    # The page's nodes know their parents only by id: a frame's path, from the process down.
    path_js = ("var byId = {}; (function walk(n) { byId[n.id] = n; n.kids.forEach(walk); })"
               "(document.querySelector('#flame .frame').node);"
               "function pathOf(n) { var p = []; while (n && n.id !== 0) { p.unshift(n.name);"
               " n = byId[n.parent]; } return p; }")

    def frame_by_path(box, want):
        return d.execute_script(
            path_js + "return Array.from(document.querySelectorAll('#' + arguments[0] + "
            "' .frame')).find(f => !f.classList.contains('caller') && "
            "JSON.stringify(pathOf(f.node)) === JSON.stringify(arguments[1]));", box, want)

    # The diff view (the default) colours only the planted function's frames.
    coloured = sorted({f[0] for f in frames(d, "flame") if "slower" in f[2] or "faster" in f[2]})
    check(f"the diff view colours only {fn}", coloured == [fn], coloured)
    if shots:
        d.save_screenshot(os.path.join(shots, "report-wide-html.png"))

    # Zoom: the widest frame of the planted function fills the width when clicked; its
    # callers stay above it; a frame of another test goes out of view; reset undoes.
    widest = t["planted_frames"][0]
    width = d.execute_script("return document.getElementById('flame').clientWidth")
    f = frame_by_path("flame", widest["path"])
    check(f"{fn}'s widest frame is drawn", f is not None, widest["path"])
    before = f.rect["width"]
    check(f"it is drawn at its share ({widest['head']} of {total} samples)",
          abs(before - width * widest["head"] / total) < 3, (before, width))
    f.click()
    after = frame_by_path("flame", widest["path"]).rect["width"]
    check("click zooms: it fills the width", abs(after - width) < 3, (after, width))
    callers = [c[0] for c in frames(d, "flame") if "caller" in c[2]]
    check("its callers are shown above it", callers == ["all"] + widest["path"][:-1], callers)
    other = t["planted_frames"][1]["path"]
    check("another test's frame is out of view", frame_by_path("flame", other) is None)
    d.find_element(By.ID, "reset").click()
    check("reset zoom shows everything again", frame_by_path("flame", other) is not None)

    # Tooltip: base, head, change, and that it is flagged.
    ActionChains(d).move_to_element(frame_by_path("flame", widest["path"])).perform()
    tip = d.find_element(By.ID, "tip").text
    check("hovering shows a tooltip with the change and the flag",
          "change: +" in tip and "base:" in tip and "flagged: slower" in tip, tip)

    # Search: every frame of the planted function, and of a leaf hot in many tests.
    box = d.find_element(By.ID, "search")
    for s in t["search"]:
        d.execute_script("document.getElementById('search').value = arguments[0];"
                         "document.getElementById('search').dispatchEvent(new Event('input'))",
                         s["text"])
        share = d.find_element(By.ID, "matched").text
        want = f"{100 * s['share']:.1f} % of head samples in {s['frames']} frames"
        check(f"search '{s['text']}': {want}", want in share, share)
        drawn = [m[0] for m in frames(d, "flame") if "match" in m[2]]
        check(f"search '{s['text']}' highlights only matching frames",
              drawn and all(s["text"] in n.lower() for n in drawn), drawn)
        if shots and s["text"] == fn:
            d.save_screenshot(os.path.join(shots, "report-wide-search.png"))
    box.clear()
    d.execute_script("document.getElementById('search').value='';"
                     "document.getElementById('search').dispatchEvent(new Event('input'))")
    check("clearing the search clears the highlight",
          not [m for m in frames(d, "flame") if "match" in m[2]])

    # Sandwich: the planted function's callers over every call site, its callees below.
    d.execute_script("Array.from(document.querySelectorAll('#functions-table button'))"
                     ".find(b => b.textContent === arguments[0]).click()", fn)
    up = frames(d, "callers")
    check("the sandwich shows every caller of " + fn,
          sorted({u[0] for u in up}) == sorted(set(t["planted_callers"]) | {fn}), up)
    tops = d.execute_script(
        "return Array.from(document.querySelectorAll('#callers .frame'))"
        ".map(f => [f.node.name, f.offsetTop]);")
    bottom = max(y for _, y in tops)
    check("the function is at the bottom of its callers",
          [n for n, y in tops if y == bottom] == [fn], tops)
    down = frames(d, "callees")
    check("the callees start with the function and hold its callees",
          down and down[0][0] == fn and sorted({c[0] for c in down[1:]}) ==
          t["planted_callees"], down)
    info = d.find_element(By.ID, "sandwich-info").text
    sites = len(t["planted_frames"])
    check(f"the sandwich counts {sites} call sites", f"{sites} call sites" in info, info)
    if shots:
        d.find_element(By.ID, "sandwich").location_once_scrolled_into_view
        d.save_screenshot(os.path.join(shots, "report-wide-sandwich.png"))

    # Sorting the functions by change puts the planted one first.
    th = [h for h in d.find_elements(By.CSS_SELECTOR, "#functions-table th") if h.text == "change"]
    th[0].click()
    first = d.find_element(By.CSS_SELECTOR, "#functions-table tbody tr td button").text
    check(f"sorting by change puts {fn} first", first == fn, first)
    errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    check("still no console errors", not errors, errors)


if __name__ == "__main__":
    main()
