"""One results page: the module every page is written with (demo/page, and the benchmarks that
follow it), filling the one template beside it (page.html).

A page is built in order, the way it is read: headings, paragraphs, tables, figures. A number the
reader should check is written with `number()`: a <data> element whose value a test can compare
with the file it came from. Figures stay beside the page in its folder (relative links), so the
page is small and opens from file:// with no network. A figure may carry its axes' geometry
(`axes_geometry`, saved by whoever drew it) and some of its points: hovering then names the point.
A timeline (`Page.timeline`) is drawn here as inline SVG from a trace's slices, so the reader can
zoom it to a few milliseconds (wheel, drag, or the buttons) with no library and no download.
`machine()` is the table of cores, load and versions a page ends with.

Only the standard library: the page is written wherever the demo runs.
"""
import html
import json
import math
import os
import pathlib
import platform
import string
import subprocess

TEMPLATE = pathlib.Path(__file__).resolve().with_name("page.html")


def esc(text):
    return html.escape(str(text), quote=True)


def number(value, unit="", key=None):
    """A number as the reader sees it, and as a test reads it back: <data value=...>."""
    attributes = f' value="{esc(value)}"' + (f' data-key="{esc(key)}"' if key else "")
    space = " " if unit[:1].isalpha() else ""  # 35418.0 ms, but 197.4/s and 100.0%
    return f"<data{attributes}>{esc(value)}{space}{esc(unit)}</data>"


def axes_geometry(fig, ax, dpi):
    """Where matplotlib put `ax` in the image `fig.savefig(..., dpi=dpi)` writes (no bbox_inches):
    its box in image pixels from the top left, and its data limits. Call it after tight_layout."""
    width, height = fig.get_size_inches() * dpi
    box = ax.get_position()  # figure fraction, from the bottom left
    return {"width": round(width), "height": round(height),
            "box": [round(box.x0 * width, 2), round((1 - box.y1) * height, 2),
                    round(box.x1 * width, 2), round((1 - box.y0) * height, 2)],
            "x": list(ax.get_xlim()), "y": list(ax.get_ylim()), "ylog": ax.get_yscale() == "log"}


def thin(points, geometry, cell=3):
    """One point of each label per `cell` x `cell` image pixels: every dot the reader can point
    at keeps a real row behind it, and a figure of 370,000 rows stays a few thousand points."""
    left, top, right, bottom = geometry["box"]
    x0, x1 = geometry["x"]
    y0, y1 = geometry["y"]
    if geometry["ylog"]:
        y0, y1 = math.log10(y0), math.log10(y1)
    kept, seen = [], set()
    for x, y, label in points:
        v = math.log10(max(y, 10 ** y0)) if geometry["ylog"] else y
        px = left + (x - x0) / (x1 - x0) * (right - left)
        py = bottom - (v - y0) / (y1 - y0) * (bottom - top)
        key = (int(px // cell), int(py // cell), label)
        if key not in seen:
            seen.add(key)
            kept.append(point_row(x, y, label))
    return kept


def point_row(x, y, label):
    # Three significant digits of time and the latency as the summary writes it: small JSON.
    return [round(x, 3), round(y, 3) if y < 10 else round(y, 1), label]


# The Debian packages whose versions a results page names (absent ones say so).
PACKAGES = ("g++-12", "libcpp-httplib-dev", "libboost-fiber1.74-dev", "libpq-dev", "postgresql-15",
            "python3-matplotlib", "wrk", "golang-go", "nodejs")


def machine(load_before):
    """(name, value) rows: the machine, its load before (the caller read /proc/loadavg when its
    run began) and now, after; the packages' versions. For pages written as the run ends."""
    cpu = next((line.split(":", 1)[1].strip() for line in
                pathlib.Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown CPU")
    rows = [("machine", f"{os.cpu_count()} cores of an {cpu}"),
            ("system", f"{platform.system()} {platform.release()}"),
            ("load before the run", f"{load_before} (1, 5 and 15 minute averages)"),
            ("load after the run", " ".join(pathlib.Path("/proc/loadavg").read_text().split()[:3]))]
    for package in PACKAGES:
        found = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package],
                               capture_output=True, text=True)
        rows.append((package, found.stdout.strip() if found.returncode == 0 else "not installed"))
    return rows


# A timeline's geometry in SVG units: time runs 0..TIME_UNITS across the window, whatever its
# length; rows are ROW_UNITS high (thinner past LABELLED_ROWS, where every k-th row is named).
TIME_UNITS = 1000
ROW_UNITS = 14
LABELLED_ROWS = 40
LABEL_PX = 150  # the left column for the rows' names
TICKS = 6
WAIT_FILL = {"pool.borrow": "#d62728", "executor.queue": "#ff7f0e", "socket.read": "#1f77b4",
             "socket.write": "#17becf", "gate reject": "#9467bd", "gate admit": "#e377c2",
             "pool.borrow timeout": "#8b0000", "downstream": "#2ca02c", "pool.hold": "#bcbd22"}


class Page:
    def __init__(self, title):
        self.title = title
        self.parts = [f"<h1>{esc(title)}</h1>"]
        self.hovers = 0

    def heading(self, level, text, anchor=None):
        anchor = f' id="{esc(anchor)}"' if anchor else ""
        self.parts.append(f"<h{level}{anchor}>{esc(text)}</h{level}>")

    def para(self, markup):
        """A paragraph of markup the caller escaped (esc) or built with number()."""
        self.parts.append(f"<p>{markup}</p>")

    def pre(self, text):
        self.parts.append(f"<pre>{esc(text)}</pre>")

    def table(self, header, rows, numeric=()):
        """Cells are markup; columns whose index is in `numeric` are right-aligned."""
        def cells(tag, values):
            return "".join(f'<{tag}{" class=n" if i in numeric else ""}>{v}</{tag}>'
                           for i, v in enumerate(values))
        body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
        self.parts.append(f"<table><thead><tr>{cells('th', [esc(h) for h in header])}</tr>"
                          f"</thead><tbody>{body}</tbody></table>")

    def figure(self, folder, name, alt, caption, axes=None):
        """An image beside the page (folder/name), with alt text and a caption (markup). `axes`:
        a list of dicts, axes_geometry's plus points [[x, y, label index]], labels, and the names
        and units of x and y; then hovering the image names the nearest point."""
        path = pathlib.Path(folder) / name
        if not path.exists():
            self.para(f"<em>{esc(name)} is not in this folder: its run did not draw it.</em>")
            return
        hover = ""
        if axes:
            self.hovers += 1
            ident = f"hover-{self.hovers}"
            spec = {"width": axes[0]["width"], "axes": axes}
            # "</" cannot end the script early: JSON allows "<\/".
            data = json.dumps(spec, separators=(",", ":")).replace("</", "<\\/")
            hover = f' data-hover="{ident}"'
            caption += " <em>Point at a dot to see its row.</em>"
            self.parts.append(f'<script type="application/json" id="{ident}">{data}</script>')
        self.parts.append(f'<figure><img src="{esc(name)}" alt="{esc(alt)}"{hover}>'
                          f"<figcaption>{caption}</figcaption></figure>")

    def timeline(self, rows, window_ms, alt, caption):
        """A zoomable timeline, inline SVG. `rows`: [(name, [(start ms, length ms, kind)])], time
        from the window's start, kind "turn" (a black bar, upper half) or a wait's name (a
        coloured bar, lower half; overlapping waits darken). page.html's script zooms the inner
        <svg>'s viewBox: a wheel, a drag, the buttons, or a double click to see it all again."""
        self.hovers += 1
        ident = f"timeline-{self.hovers}"
        row = ROW_UNITS if len(rows) <= LABELLED_ROWS else max(3, 600 // len(rows))
        every = 1 if len(rows) <= LABELLED_ROWS else math.ceil(len(rows) / LABELLED_ROWS)
        height = len(rows) * row
        k = TIME_UNITS / window_ms
        shapes, labels = [], []
        for i, (name, slices) in enumerate(rows):
            y = i * row
            if i % every == 0:
                labels.append(f'<text x="{LABEL_PX - 4}" y="{y + row * 0.75:g}" '
                              f'text-anchor="end">{esc(name)}</text>')
            for start, length, kind in slices:
                top, fill = (y + 1, "#000") if kind == "turn" else \
                    (y + row / 2, WAIT_FILL.get(kind, "#7f7f7f"))
                # A stroke that does not scale keeps a 10 µs turn one pixel wide at any zoom.
                shapes.append(f'<rect x="{start * k:.3f}" y="{top:g}" width="{length * k:.3f}" '
                              f'height="{row / 2 - 1:g}" fill="{fill}" stroke="{fill}"'
                              f'{" fill-opacity=.5" if kind != "turn" else ""}>'
                              f"<title>{esc(kind)} {start:.3f}+{length:.3f} ms</title></rect>")
        kinds = sorted({kind for _, slices in rows for _, _, kind in slices} - {"turn"})
        legend = " ".join(f'<span style="color:{WAIT_FILL.get(kind, "#7f7f7f")}">■</span> '
                          f"{esc(kind)}" for kind in kinds)
        ticks = "".join(f'<text class="tick" x="0" y="{height + 14}"></text>' for _ in range(TICKS))
        self.parts.append(
            f'<figure class="timeline"><div class="zoom-buttons">'
            f'<button type="button" data-zoom-step="0.5">zoom in</button> '
            f'<button type="button" data-zoom-step="2">zoom out</button> '
            f'<button type="button" data-zoom-step="0">whole window</button> '
            f'<span class="zoom-range"></span></div>'
            f'<svg id="{ident}" role="img" aria-label="{esc(alt)}" width="100%" '
            f'height="{height + 20}" data-window-ms="{window_ms:g}" data-label-px="{LABEL_PX}">'
            f"<title>{esc(alt)}</title><g class=\"names\">{''.join(labels)}</g>"
            f'<svg class="zoom" x="{LABEL_PX}" y="0" width="1" height="{height}" '
            f'viewBox="0 0 {TIME_UNITS} {height}" preserveAspectRatio="none">'
            f'<rect class="pan" width="{TIME_UNITS}" height="{height}" fill="#fafafa"/>'
            f"{''.join(shapes)}</svg>{ticks}</svg>"
            f"<figcaption>{caption} Black: turns; {legend or 'no waits'}. <em>Turn the wheel over "
            f"it to zoom (down to a tenth of a millisecond), drag to move along, double-click "
            f"for the whole window.</em></figcaption></figure>")

    def raw(self, markup):
        self.parts.append(markup)

    def html(self):
        template = string.Template(TEMPLATE.read_text())
        return template.substitute(title=esc(self.title), body="\n".join(self.parts))

    def write(self, path):
        pathlib.Path(path).write_text(self.html())
