#!/usr/bin/env bash
# The HTML memory timeline in headless Chromium.
#
#   tests/browser/timeline_browser_test.sh RENDER_SAMPLE [WORK_DIR]
#
# RENDER_SAMPLE is the galloc_render_sample program (tests/browser/render_sample.cpp). It
# writes the page and says how many rect.storage elements and .peak-marker lines it must
# have. This script loads the page in Chromium and checks, in the DOM after the page's script
# has run, those counts, the header, and the script's ready mark; then it takes a 1200x800
# screenshot and checks that it is not blank: more than one distinct pixel value, and the
# colour of the first storage block present.
#
# Without Chromium it installs Debian's package when it can (root with apt-get; about a
# minute with the package lists to fetch) and otherwise exits 77, which CTest reports as
# skipped. Exit 1: a check failed.
set -euo pipefail

render=${1:?usage: $0 RENDER_SAMPLE [WORK_DIR]}
work=${2:-$(mktemp -d)}
mkdir -p "$work"
work=$(cd "$work" && pwd)

find_chromium() { command -v chromium || command -v chromium-browser || command -v google-chrome || true; }
browser=$(find_chromium)
if [ -z "$browser" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "chromium is missing; installing Debian's package"
    start=$(date +%s)
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >"$work/apt.log" 2>&1; then
      apt-get update >>"$work/apt.log" 2>&1 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >>"$work/apt.log" 2>&1 || true
    fi
    echo "apt-get took $(( $(date +%s) - start )) s"
    browser=$(find_chromium)
  fi
  if [ -z "$browser" ]; then
    echo "SKIP: no chromium, and it could not be installed"
    exit 77
  fi
fi
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }

page="$work/timeline.html"
"$render" "$page" >"$work/expected.txt"
expect() { awk -v key="$1" '$1 == key { print $2 }' "$work/expected.txt"; }
want_rects=$(expect storage_rects)
want_markers=$(expect peak_markers)
want_panels=$(expect panels)

profiles=()
cleanup() { for p in "${profiles[@]}"; do rm -rf "$p"; done; }
trap cleanup EXIT
run_chromium() {
  local profile
  profile=$(mktemp -d)
  profiles+=("$profile")
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" "$@"
}

run_chromium --dump-dom "file://$page" >"$work/dom.html" 2>"$work/chromium-dom.log" ||
  { echo "FAIL: chromium --dump-dom failed"; tail -n 20 "$work/chromium-dom.log"; exit 1; }
run_chromium --screenshot="$work/timeline.png" --window-size=1200,800 "file://$page" \
  >"$work/chromium-shot.log" 2>&1 ||
  { echo "FAIL: chromium --screenshot failed"; tail -n 20 "$work/chromium-shot.log"; exit 1; }

python3 - "$work/dom.html" "$work/timeline.png" "$page" "$want_rects" "$want_markers" "$want_panels" <<'PY'
import re
import struct
import sys
import zlib
from html.parser import HTMLParser

dom_path, png_path, page_path, want_rects, want_markers, want_panels = sys.argv[1:]
failures = []


class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.elements = []  # (tag, attrs)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag


dom = Dom()
dom.feed(open(dom_path, encoding="utf-8").read())


def with_class(name, tag=None):
    return [a for t, a in dom.elements
            if name in (a.get("class") or "").split() and (tag is None or t == tag)]


rects = with_class("storage", "rect")
markers = with_class("peak-marker")
panels = with_class("panel", "figure")
print(f"rect.storage: {len(rects)} (want {want_rects}); .peak-marker: {len(markers)} (want {want_markers}); "
      f"panels: {len(panels)} (want {want_panels})")
if len(rects) != int(want_rects) or int(want_rects) == 0:
    failures.append("wrong number of rect.storage")
if len(markers) != int(want_markers):
    failures.append("wrong number of .peak-marker")
if len(panels) != int(want_panels):
    failures.append("wrong number of panels")
if not with_class("lower-bound"):
    failures.append("no .lower-bound line")
bodies = [a for t, a in dom.elements if t == "body"]
if not bodies or bodies[0].get("data-timeline-ready") != "1":
    failures.append("the page's script did not run to the end")
for rect in rects:
    for key in ("data-tensor", "data-size", "data-storage", "data-from", "data-to"):
        if key not in rect:
            failures.append(f"a rect.storage has no {key}")
            break
ids = {a.get("id") for t, a in dom.elements}
for wanted in ("strategy", "peak", "lower-bound", "ratio", "details"):
    if wanted not in ids:
        failures.append(f"no #{wanted}")
page = open(page_path, encoding="utf-8").read()
if re.search(r'\s(src|href)\s*=|url\(|@import', page):
    failures.append("the page refers to something outside itself")


def png_pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace != 0:
        raise ValueError(f"unsupported PNG (depth {depth}, colour type {colour}, interlace {interlace})")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, previous, pos = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = previous[i]
            c = previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, bpp, rows


width, height, bpp, rows = png_pixels(png_path)
colours = set()
for row in rows:
    for x in range(0, len(row), bpp):
        colours.add(row[x:x + 3])
print(f"screenshot {width}x{height}: {len(colours)} distinct colours")
if (width, height) != (1200, 800):
    failures.append("the screenshot is not 1200x800")
if len(colours) <= 1:
    failures.append("the screenshot is blank")
first_fill = rects[0].get("fill", "") if rects else ""
if re.fullmatch(r"#[0-9a-f]{6}", first_fill):
    rgb = bytes.fromhex(first_fill[1:])
    if rgb not in colours:
        failures.append(f"the first block's colour {first_fill} is nowhere on the screenshot")

if failures:
    print("FAIL: " + "; ".join(failures))
    sys.exit(1)
print("PASS")
PY
