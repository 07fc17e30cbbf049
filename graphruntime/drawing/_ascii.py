"""ASCII art for a drawable graph: a Sugiyama layout (grandalf) painted on a text canvas.

The layout parameters and the painting follow LangGraph's ``draw_ascii`` so the text is the
same. grandalf is optional (the ``draw`` extra): without it this raises
:class:`MissingDependencyError` naming the extra.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from graphruntime.drawing._errors import MissingDependencyError
from graphruntime.errors import InvalidArgumentError

if TYPE_CHECKING:
    from graphruntime.drawing._parts import Edge

# A box is three lines: top border, the label, bottom border.
_BOX_HEIGHT = 3


class _BoxView:
    """What grandalf needs to know about a vertex: its box size (``w``, ``h``)."""

    def __init__(self, label: str) -> None:
        self.w = len(label) + 2
        self.h = _BOX_HEIGHT
        self.xy: tuple[float, float] = (0.0, 0.0)


class _EdgeView:
    """Receives the points grandalf routes an edge through."""

    def __init__(self) -> None:
        self.pts: list[tuple[float, float]] = []

    def setpath(self, pts: list[tuple[float, float]]) -> None:
        self.pts = pts


class _Canvas:
    def __init__(self, cols: int, lines: int) -> None:
        if cols <= 1 or lines <= 1:
            raise InvalidArgumentError("Canvas dimensions should be > 1")
        self.cols = cols
        self.lines = lines
        self.cells = [[" "] * cols for _ in range(lines)]

    def text(self) -> str:
        return os.linesep.join("".join(row) for row in self.cells)

    def point(self, x: int, y: int, char: str) -> None:
        if not 0 <= x < self.cols:
            raise InvalidArgumentError("x should be >= 0 and < number of columns")
        if not 0 <= y < self.lines:
            raise InvalidArgumentError("y should be >= 0 and < number of lines")
        self.cells[y][x] = char

    def line(self, x0: int, y0: int, x1: int, y1: int, char: str) -> None:
        """A straight line, stepping along its longer axis (rounding the other)."""
        if x0 > x1:
            x0, y0, x1, y1 = x1, y1, x0, y0
        dx, dy = x1 - x0, y1 - y0
        if dx == 0 and dy == 0:
            self.point(x0, y0, char)
        elif abs(dx) >= abs(dy):
            for x in range(x0, x1 + 1):
                y = y0 if dx == 0 else y0 + round((x - x0) * dy / float(dx))
                self.point(x, y, char)
        elif y0 < y1:
            for y in range(y0, y1 + 1):
                x = x0 if dy == 0 else x0 + round((y - y0) * dx / float(dy))
                self.point(x, y, char)
        else:
            for y in range(y1, y0 + 1):
                x = x0 if dy == 0 else x1 + round((y - y1) * dx / float(dy))
                self.point(x, y, char)

    def write(self, x: int, y: int, text: str) -> None:
        for i, char in enumerate(text):
            self.point(x + i, y, char)

    def box(self, x0: int, y0: int, width: int, height: int) -> None:
        if width <= 1 or height <= 1:
            raise InvalidArgumentError("Box dimensions should be > 1")
        right, bottom = x0 + width - 1, y0 + height - 1
        for x in range(x0, right):
            self.point(x, y0, "-")
            self.point(x, bottom, "-")
        for y in range(y0, bottom):
            self.point(x0, y, "|")
            self.point(right, y, "|")
        for x, y in ((x0, y0), (right, y0), (x0, bottom), (right, bottom)):
            self.point(x, y, "+")


def _layout(labels: Mapping[str, str], edges: Sequence[Edge]) -> Any:
    try:
        from grandalf.graphs import Edge as GEdge
        from grandalf.graphs import Graph as GGraph
        from grandalf.graphs import Vertex
        from grandalf.layouts import SugiyamaLayout
        from grandalf.routing import route_with_lines
        from grandalf.utils.poset import Poset
    except ImportError as exc:
        raise MissingDependencyError(
            "draw_ascii() lays the graph out with grandalf, which is not installed: "
            "pip install 'graphruntime[draw]' (or pip install grandalf)."
        ) from exc

    vertices = {node_id: Vertex(f" {label} ") for node_id, label in labels.items()}
    # A self-loop cannot be routed on this canvas (grandalf finds no way out of the box).
    gedges = [
        GEdge(vertices[e.source], vertices[e.target], data=e.conditional)
        for e in edges
        if e.source != e.target
    ]
    graph = GGraph(vertices.values(), gedges)
    for vertex in vertices.values():
        vertex.view = _BoxView(vertex.data)
    for gedge in gedges:
        gedge.view = _EdgeView()
    # Only the first connected component is drawn, as in LangGraph.
    component = graph.C[0]
    # grandalf collects a component's edges in a set, so their order (which line is painted
    # last where two cross) would follow memory addresses; keep the graph's edge order.
    members = set(component.sE)
    component.sE = Poset([e for e in gedges if e in members])
    layout = SugiyamaLayout(component)
    roots = [v for v in component.sV if len(v.e_in()) == 0]
    layout.init_all(roots=roots, optimize=True)
    layout.yspace = _BOX_HEIGHT
    layout.xspace = min(v.view.w for v in vertices.values())
    layout.route_edge = route_with_lines
    layout.draw()
    return layout


def render_ascii(labels: Mapping[str, str], edges: Sequence[Edge]) -> str:
    """Boxes for nodes, ``*`` lines for edges and ``.`` lines for conditional ones.

    Self-loops are left out, and edges are painted in the graph's order (LangGraph raises
    on a self-loop, and paints crossing edges in an order that varies from run to run).
    """
    layout = _layout(labels, edges)
    xs: list[float] = []
    ys: list[float] = []
    for vertex in layout.g.sV:
        x, y = vertex.view.xy
        xs += [x - vertex.view.w / 2.0, x + vertex.view.w / 2.0]
        ys += [y, y + vertex.view.h]
    for gedge in layout.g.sE:
        for x, y in gedge.view.pts:
            xs.append(x)
            ys.append(y)
    minx, miny = min(xs), min(ys)
    canvas = _Canvas(math.ceil(math.ceil(max(xs)) - math.floor(minx)) + 1, round(max(ys) - miny))

    # Edges first, so the boxes drawn after them cover their ends.
    for gedge in layout.g.sE:
        pts = gedge.view.pts
        if len(pts) <= 1:
            raise InvalidArgumentError("Not enough points to draw an edge")
        for (sx, sy), (ex, ey) in itertools.pairwise(pts):
            start_x, start_y = round(sx - minx), round(sy - miny)
            end_x, end_y = round(ex - minx), round(ey - miny)
            if min(start_x, start_y, end_x, end_y) < 0:
                raise InvalidArgumentError(
                    f"Invalid edge coordinates: start_x={start_x}, start_y={start_y}, "
                    f"end_x={end_x}, end_y={end_y}"
                )
            canvas.line(start_x, start_y, end_x, end_y, "." if gedge.data else "*")
    for vertex in layout.g.sV:
        left = vertex.view.xy[0] - vertex.view.w / 2.0
        top = vertex.view.xy[1]
        canvas.box(round(left - minx), round(top - miny), vertex.view.w, vertex.view.h)
        canvas.write(round(left - minx) + 1, round(top - miny) + 1, vertex.data)
    return canvas.text()
