"""One results page: the module every page is written with (demo/page, and the benchmarks that
follow it), filling the one template beside it (page.html).

A page is built in order, the way it is read: headings, paragraphs, tables, figures. A number the
reader should check is written with `number()`: a <data> element whose value a test can compare
with the file it came from. Figures stay beside the page in its folder (relative links), so the
page is small and opens from file:// with no network. A figure may carry its axes' geometry
(`axes_geometry`, saved by whoever drew it) and some of its points: hovering then names the point.

Only the standard library: the page is written wherever the demo runs.
"""
import html
import json
import math
import pathlib
import string

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

    def raw(self, markup):
        self.parts.append(markup)

    def html(self):
        template = string.Template(TEMPLATE.read_text())
        return template.substitute(title=esc(self.title), body="\n".join(self.parts))

    def write(self, path):
        pathlib.Path(path).write_text(self.html())
