"""bench/chart_png.py: a small line chart written straight to PNG, stdlib only.

bench/scale.py draws its chart (speed-up over PostgreSQL's Sort against row
count) with this, because the GPU host has no matplotlib or gnuplot and
nothing can be installed there.  It is deliberately small: an RGB canvas,
thick and dashed lines, round markers, a 5x7 bitmap font (upper case,
digits, a little punctuation) and a PNG encoder (zlib + struct).  Enough for
one chart with a log or linear x axis, a linear y axis, ticks, a legend and
reference lines; not a plotting library.

    line_chart(path, series, title=..., xlabel=..., ylabel=..., xlog=True,
               xticks=[(x, "10M"), ...], hlines=[(1.0, "NATIVE")])

where series is a list of dicts: {"label", "points": [(x, y), ...],
"color": (r, g, b) or None, "dashed": bool}.
"""

import math
import struct
import zlib

# 5x7 glyphs, one hex number per row, bit 4 the leftmost column.  Lower case
# is drawn as upper case (draw_text upper-cases), which keeps the table short.
_FONT = {
    "0": "0E 11 13 15 19 11 0E", "1": "04 0C 04 04 04 04 0E",
    "2": "0E 11 01 02 04 08 1F", "3": "1F 02 04 02 01 11 0E",
    "4": "02 06 0A 12 1F 02 02", "5": "1F 10 1E 01 01 11 0E",
    "6": "06 08 10 1E 11 11 0E", "7": "1F 01 02 04 08 08 08",
    "8": "0E 11 11 0E 11 11 0E", "9": "0E 11 11 0F 01 02 0C",
    "A": "0E 11 11 1F 11 11 11", "B": "1E 11 11 1E 11 11 1E",
    "C": "0E 11 10 10 10 11 0E", "D": "1C 12 11 11 11 12 1C",
    "E": "1F 10 10 1E 10 10 1F", "F": "1F 10 10 1E 10 10 10",
    "G": "0E 11 10 17 11 11 0F", "H": "11 11 11 1F 11 11 11",
    "I": "0E 04 04 04 04 04 0E", "J": "07 02 02 02 02 12 0C",
    "K": "11 12 14 18 14 12 11", "L": "10 10 10 10 10 10 1F",
    "M": "11 1B 15 15 11 11 11", "N": "11 11 19 15 13 11 11",
    "O": "0E 11 11 11 11 11 0E", "P": "1E 11 11 1E 10 10 10",
    "Q": "0E 11 11 11 15 12 0D", "R": "1E 11 11 1E 14 12 11",
    "S": "0F 10 10 0E 01 01 1E", "T": "1F 04 04 04 04 04 04",
    "U": "11 11 11 11 11 11 0E", "V": "11 11 11 11 11 0A 04",
    "W": "11 11 11 15 15 15 0A", "X": "11 11 0A 04 0A 11 11",
    "Y": "11 11 11 0A 04 04 04", "Z": "1F 01 02 04 08 10 1F",
    " ": "00 00 00 00 00 00 00", ".": "00 00 00 00 00 0C 0C",
    ",": "00 00 00 00 0C 04 08", "-": "00 00 00 1F 00 00 00",
    "/": "00 01 02 04 08 10 00", "(": "02 04 08 08 08 04 02",
    ")": "08 04 02 02 02 04 08", ":": "00 0C 0C 00 0C 0C 00",
    "=": "00 00 1F 00 1F 00 00", "+": "00 04 04 1F 04 04 00",
    "_": "00 00 00 00 00 00 1F", "%": "18 19 02 04 08 13 03",
    ">": "08 04 02 01 02 04 08", "<": "02 04 08 10 08 04 02",
    "*": "00 04 15 0E 15 04 00", "?": "0E 11 01 02 04 00 04",
}
_GLYPHS = {ch: [int(b, 16) for b in rows.split()] for ch, rows in _FONT.items()}

# distinct colours for up to eight series, then they repeat
PALETTE = [(31, 119, 180), (214, 39, 40), (44, 160, 44), (255, 127, 14),
           (148, 103, 189), (140, 86, 75), (227, 119, 194), (23, 190, 207)]


class Canvas:
    def __init__(self, width, height, bg=(255, 255, 255)):
        self.w, self.h = width, height
        self.px = bytearray(bytes(bg) * (width * height))

    def set(self, x, y, color):
        if 0 <= x < self.w and 0 <= y < self.h:
            i = (y * self.w + x) * 3
            self.px[i:i + 3] = bytes(color)

    def rect(self, x0, y0, x1, y1, color):
        for y in range(max(0, y0), min(self.h, y1 + 1)):
            for x in range(max(0, x0), min(self.w, x1 + 1)):
                self.set(x, y, color)

    def dot(self, x, y, r, color):
        for dy in range(-r, r + 1):
            for dx in range(-r, r + 1):
                if dx * dx + dy * dy <= r * r + r:
                    self.set(x + dx, y + dy, color)

    def line(self, x0, y0, x1, y1, color, width=1, dash=0):
        """A line of square brush `width`; dash > 0 draws dash-pixel
        segments with dash-pixel gaps (steps counted along the major axis)."""
        x0, y0, x1, y1 = int(round(x0)), int(round(y0)), int(round(x1)), int(round(y1))
        n = max(abs(x1 - x0), abs(y1 - y0), 1)
        half = width // 2
        for step in range(n + 1):
            if dash and (step // dash) % 2:
                continue
            x = x0 + (x1 - x0) * step / n
            y = y0 + (y1 - y0) * step / n
            xi, yi = int(round(x)), int(round(y))
            if width == 1:
                self.set(xi, yi, color)
            else:
                self.rect(xi - half, yi - half, xi - half + width - 1, yi - half + width - 1, color)

    def text(self, x, y, s, color=(0, 0, 0), scale=2, vertical=False):
        """Text with its top-left corner at (x, y); vertical runs bottom to
        top (for the y axis label), (x, y) then being its bottom-left."""
        for ch in s.upper():
            rows = _GLYPHS.get(ch, _GLYPHS["?"])
            for r, bits in enumerate(rows):
                for c in range(5):
                    if bits & (0x10 >> c):
                        if vertical:
                            self.rect(x + r * scale, y - (c + 1) * scale + 1,
                                      x + r * scale + scale - 1, y - c * scale, color)
                        else:
                            self.rect(x + c * scale, y + r * scale,
                                      x + c * scale + scale - 1, y + r * scale + scale - 1, color)
            if vertical:
                y -= 6 * scale
            else:
                x += 6 * scale

    def png(self):
        raw = b"".join(b"\x00" + bytes(self.px[y * self.w * 3:(y + 1) * self.w * 3])
                       for y in range(self.h))

        def chunk(kind, data):
            return (struct.pack(">I", len(data)) + kind + data +
                    struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
        return (b"\x89PNG\r\n\x1a\n" +
                chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def text_width(s, scale=2):
    return len(s) * 6 * scale - scale


def _nice_step(span, want=6):
    """A 1, 2 or 5 times power of ten step giving about `want` ticks."""
    raw = span / max(want, 1)
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def line_chart(path, series, title="", xlabel="", ylabel="", xlog=False,
               xticks=None, hlines=(), width=1000, height=600, note=""):
    series = [s for s in series if s["points"]]
    c = Canvas(width, height)
    left, right, top, bottom = 90, 300, 60, 80
    pw, ph = width - left - right, height - top - bottom
    xs = [p[0] for s in series for p in s["points"]] or [1, 10]
    ys = [p[1] for s in series for p in s["points"]] + [h[0] for h in hlines] or [0, 1]

    fx = (lambda v: math.log10(v)) if xlog else (lambda v: v)
    xmin, xmax = fx(min(xs)), fx(max(xs))
    if xmax - xmin < 1e-9:
        xmin, xmax = xmin - 0.5, xmax + 0.5
    pad = (xmax - xmin) * 0.06
    xmin, xmax = xmin - pad, xmax + pad
    ymax = max(ys) * 1.12 if max(ys) > 0 else 1.0
    ystep = _nice_step(ymax)
    ymax = math.ceil(ymax / ystep) * ystep

    def px(v):
        return left + (fx(v) - xmin) / (xmax - xmin) * pw

    def py(v):
        return top + ph - v / ymax * ph

    grid, axis = (225, 225, 225), (60, 60, 60)
    # y grid and ticks
    v = 0.0
    while v <= ymax + 1e-9:
        y = int(round(py(v)))
        c.line(left, y, left + pw, y, grid)
        label = ("%g" % round(v, 6))
        c.text(left - 10 - text_width(label), y - 7, label, axis)
        v += ystep
    # x grid and ticks: given ones, or each data x
    for xv, label in (xticks or [(x, "%g" % x) for x in sorted(set(xs))]):
        x = int(round(px(xv)))
        c.line(x, top, x, top + ph, grid)
        c.line(x, top + ph, x, top + ph + 6, axis)
        c.text(x - text_width(label) // 2, top + ph + 12, label, axis)
    # reference lines, dashed grey, labelled at the right end
    for yv, label in hlines:
        y = int(round(py(yv)))
        c.line(left, y, left + pw, y, (120, 120, 120), width=2, dash=8)
        c.text(left + pw - text_width(label) - 4, y - 18, label, (120, 120, 120))
    c.line(left, top, left, top + ph, axis, width=2)
    c.line(left, top + ph, left + pw, top + ph, axis, width=2)

    for i, s in enumerate(series):
        color = s.get("color") or PALETTE[i % len(PALETTE)]
        pts = sorted(s["points"])
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            c.line(px(x0), py(y0), px(x1), py(y1), color, width=3, dash=7 if s.get("dashed") else 0)
        for x, y in pts:
            c.dot(int(round(px(x))), int(round(py(y))), 3 if s.get("dashed") else 5, color)

    # legend, right of the plot
    lx, ly = left + pw + 25, top
    for i, s in enumerate(series):
        color = s.get("color") or PALETTE[i % len(PALETTE)]
        c.line(lx, ly + 7, lx + 30, ly + 7, color, width=3, dash=6 if s.get("dashed") else 0)
        c.dot(lx + 15, ly + 7, 3 if s.get("dashed") else 5, color)
        c.text(lx + 40, ly, s["label"], (0, 0, 0))
        ly += 26
    if note:
        for j, part in enumerate(note.split("\n")):
            # scale 1 only where a line would not fit beside the plot
            small = text_width(part) > width - lx - 5
            c.text(lx, ly + 14 + j * 18, part, (90, 90, 90), scale=1 if small else 2)

    c.text((width - text_width(title)) // 2, 18, title, (0, 0, 0))
    c.text(left + (pw - text_width(xlabel)) // 2, height - 34, xlabel, axis)
    c.text(20, top + (ph + text_width(ylabel)) // 2, ylabel, axis, vertical=True)
    with open(path, "wb") as f:
        f.write(c.png())
