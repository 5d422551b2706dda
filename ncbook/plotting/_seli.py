r"""Figures of the SELI chapter: norm bars, closed forms against ``R``, the SELI explorer.

Letters: ``C`` classes, ``R`` the STEP imbalance ratio, ``C_min`` minority classes; figure labels
follow the book's notation (class means :math:`\mu_c`, roman subscripts).
"""

from __future__ import annotations

import base64
import functools
import io
import json
import uuid
from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from .._validation import check_bool, check_positive
from ..profiles import show_progress
from ..geometry import cosine_matrix, etf_gram, seli_geometry, seli_step_closed_form, seli_step_limits
from ._core import LEGEND_FONTSIZE, MAX_FIGURE_WIDTH, gram_heatmap, new_axes

__all__ = ["seli_norm_bars", "seli_closed_form_figure", "curves", "seli_explorer", "seli_network_figure", "seli_ridge_figure",
           "seli_ufm_figure", "seli_widget", "step_counts"]


def step_counts(ratio: float, minority_fraction: float, num_classes: int, n_min: int = 1) -> np.ndarray:
    """STEP counts: ``C - k`` majorities (``k = floor(minority_fraction C + 1/2)`` clipped to ``[1, C - 1]``) of ``round(R n_min)``, then minorities of ``n_min``.

    At least one class of each kind is kept. Raises ``ValueError`` for ``ratio < 1``,
    ``minority_fraction`` outside ``(0, 1)`` or ``num_classes < 2``.

    Returns
    -------
    ndarray of shape (C,), int64
        Majorities first.

    Examples
    --------
    >>> step_counts(10, 0.5, 4, n_min=5).tolist()
    [50, 50, 5, 5]
    >>> step_counts(10, 0.05, 4).tolist()   # at least one minority class
    [10, 10, 10, 1]
    """
    ratio = check_positive("ratio", ratio)
    if ratio < 1:
        raise ValueError(f"ratio must be >= 1; got {ratio!r}.")
    if not 0 < float(minority_fraction) < 1:
        raise ValueError(f"minority_fraction must lie in (0, 1); got {minority_fraction!r}.")
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) or num_classes < 2:
        raise ValueError(f"num_classes must be an integer >= 2; got {num_classes!r}.")
    k_min = int(np.clip(np.floor(minority_fraction * num_classes + 0.5), 1, num_classes - 1))  # as data.long_tailed_counts, clipped for sliders
    k_maj = num_classes - k_min
    return np.array([max(int(round(ratio * n_min)), 1)] * k_maj + [n_min] * k_min)


def seli_norm_bars(classifiers, means, ax=None, *, counts=None, title: str | None = None):
    """Side-by-side bars of classifier and class-mean norms per class, each divided by its largest.

    Parameters
    ----------
    classifiers, means : array-like of shape (C, d)
    ax : Axes, optional
    counts : array-like of shape (C,), optional
        Shown as tick labels ``c (n_c)``.
    title : str, optional

    Returns
    -------
    Axes

    Examples
    --------
    >>> g = seli_geometry([50, 50, 5, 5])
    >>> ax = seli_norm_bars(g.classifiers, g.means, counts=g.counts)
    >>> [round(float(b.get_height()), 3) for b in ax.patches][:4]   # classifier norms / largest
    [1.0, 1.0, 0.708, 0.708]
    >>> plt.close(ax.figure)
    """
    w = np.linalg.norm(np.asarray(classifiers, dtype=float), axis=1)
    h = np.linalg.norm(np.asarray(means, dtype=float), axis=1)
    ax = new_axes(ax)
    x = np.arange(w.size)
    ax.bar(x - 0.2, w / w.max(), width=0.4, label=r"$\|w_c\|$")
    ax.bar(x + 0.2, h / h.max(), width=0.4, label=r"$\|\mu_c\|$")
    ax.set_xticks(x)
    if counts is not None:
        ax.set_xticklabels([f"{i}\n({int(n)})" for i, n in enumerate(counts)], fontsize=LEGEND_FONTSIZE)
    ax.set_xlabel("class (count)" if counts is not None else "class")
    ax.set_ylabel("norm / largest")
    ax.set_ylim(0, 1.35)
    ax.legend(fontsize=LEGEND_FONTSIZE, loc="upper center", ncol=2)
    if title:
        ax.set_title(title)
    return ax


def curves(x, ys: Mapping[str, Sequence[float]], ax=None, *, logx: bool = False, logy: bool = False,
           hlines: Mapping[str, float] | None = None, xlabel: str | None = None, ylabel: str | None = None,
           title: str | None = None, styles: Mapping[str, str] | None = None):
    """Several labelled curves over a shared ``x``, with optional dashed horizontal asymptotes.

    Parameters
    ----------
    x : array-like of shape (m,)
    ys : mapping of str to array-like of shape (m,)
        One curve per label; NaN entries leave gaps.
    ax : Axes, optional
    logx, logy : bool
    hlines : mapping of str to float, optional
        A dashed horizontal line in the colour of the curve with that label.
    xlabel, ylabel, title : str, optional
    styles : mapping of str to str, optional
        Matplotlib line styles by label (default ``"-"``).

    Returns
    -------
    Axes

    Examples
    --------
    >>> ax = curves([1, 10, 100], {"a": [1, 2, 3]}, logx=True, hlines={"a": 3.0})
    >>> len(ax.lines), ax.get_xscale()
    (2, 'log')
    >>> plt.close(ax.figure)
    """
    ax = new_axes(ax)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, y) in enumerate(ys.items()):
        ax.plot(x, y, (styles or {}).get(label, "-"), color=colors[i % len(colors)], label=label)
        if hlines and label in hlines and np.isfinite(hlines[label]):
            ax.axhline(hlines[label], color=colors[i % len(colors)], ls="--", lw=0.8)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=LEGEND_FONTSIZE)
    return ax


def seli_closed_form_figure(ratios, class_numbers: Sequence[int] = (4, 10, 20), minority_fraction: float = 0.5):
    """Closed-form SELI quantities against ``R`` (log axis) for several ``C``, with large-``R`` limits.

    Three panels: classifier norm ratio ``||w_min|| / ||w_maj||`` (dashed: its limit),
    cosine between two minority classifiers (dashed: 1), and the embedding norm ratio
    divided by ``R^{1/4}`` (dashed: the limiting constant).

    Parameters
    ----------
    ratios : array-like of float, all ``>= 1``
    class_numbers : sequence of int
        Values of ``C``, each ``>= 2``.
    minority_fraction : float
        In ``(0, 1)``; ``C_min`` is rounded as in :func:`step_counts`.

    Returns
    -------
    Figure

    Examples
    --------
    >>> fig = seli_closed_form_figure([1.0, 10.0, 100.0], class_numbers=(4,))
    >>> len(fig.axes)
    3
    >>> plt.close(fig)
    """
    ratios = np.asarray(ratios, dtype=float)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), layout="constrained")
    panels = [("w_norm_ratio", r"$\|w_{\mathrm{min}}\| / \|w_{\mathrm{maj}}\|$", "w_norm_ratio"),
              ("w_cos_min_min", r"$\cos(w_{\mathrm{min}}, w'_{\mathrm{min}})$", "w_cos_min_min"),
              ("h_norm_ratio", r"$\|\mu_{\mathrm{min}}\| / \|\mu_{\mathrm{maj}}\|$ $/ R^{1/4}$", "h_norm_ratio_rate")]
    for ax, (key, ylabel, limit_key) in zip(axes, panels):
        ys, lines = {}, {}
        for c in class_numbers:
            k_min = int(np.clip(np.floor(minority_fraction * c + 0.5), 1, c - 1))
            vals = np.array([seli_step_closed_form(r, c - k_min, k_min)[key] for r in ratios])
            if key == "h_norm_ratio":
                vals = vals / ratios ** 0.25
            ys[f"C = {c}"] = vals
            lines[f"C = {c}"] = seli_step_limits(c - k_min, k_min)[limit_key]
        curves(ratios, ys, ax, logx=True, hlines=lines, xlabel="R", ylabel=ylabel)
    fig.suptitle(f"SELI under STEP imbalance (minority fraction {minority_fraction:g}); dashed: R -> inf")
    return fig


def seli_explorer(ratio: float = 10.0, minority_fraction: float = 0.5, num_classes: int = 4):
    """The SELI geometry of STEP counts, drawn as one static Figure.

    Panels: cosines of the SELI classifiers, cosines of the SELI class means, the
    simplex-ETF cosines for reference, and the norm bars. Works as a plain call (the
    built book shows the returned Figure) and as the function behind :func:`seli_widget`.

    Parameters
    ----------
    ratio : float
        ``R >= 1``.
    minority_fraction : float
        Share of classes that are minorities, in ``(0, 1)``.
    num_classes : int
        ``C >= 2``.

    Returns
    -------
    matplotlib Figure

    Raises
    ------
    ValueError
        For values that :func:`step_counts` rejects.

    Examples
    --------
    >>> fig = seli_explorer(10.0, 0.5, 4)
    >>> len(fig.axes) >= 4
    True
    >>> plt.close(fig)
    """
    counts = step_counts(ratio, minority_fraction, num_classes, n_min=1)
    geo = seli_geometry(counts)
    # a fixed layout (no layout engine): the panels sit where constrained layout put them, at half the drawing
    # time, which the widget's precomputed frames pay once per state
    fig, axes = plt.subplots(1, 4, figsize=(MAX_FIGURE_WIDTH, 3.2), gridspec_kw=dict(width_ratios=(1, 1, 1, 1.05)))
    fig.subplots_adjust(left=0.025, right=0.99, bottom=0.2, top=0.84, wspace=0.32)
    gram_heatmap(cosine_matrix(geo.classifiers), axes[0], title="SELI classifiers (cosine)")
    gram_heatmap(cosine_matrix(geo.means), axes[1], title="SELI class means (cosine)")
    gram_heatmap(etf_gram(counts.size), axes[2], title="simplex ETF (cosine)")
    seli_norm_bars(geo.classifiers, geo.means, axes[3], counts=counts, title="norms")
    fig.suptitle(f"R = {ratio:g}, minority fraction = {minority_fraction:g}, C = {counts.size}")
    return fig


# Precomputed states of the explorer shown where no kernel runs (the built HTML page): R over
# half-decades (the values a log slider in steps of 0.5 lands on) and three minority fractions.
WIDGET_RATIOS = (1.0, 10 ** 0.5, 10.0, 10 ** 1.5, 100.0, 10 ** 2.5, 1000.0)
WIDGET_FRACTIONS = (0.25, 0.5, 0.75)


def _is_drawn(ratio: float, minority_fraction: float, num_classes: int, dpi: int) -> bool:
    """Whether :func:`_explorer_png` holds this state already (its cache keys are its arguments)."""
    return (float(ratio), float(minority_fraction), int(num_classes), int(dpi)) in _DRAWN


_DRAWN: set = set()


@functools.lru_cache(maxsize=256)
def _explorer_png(ratio: float, minority_fraction: float, num_classes: int, dpi: int) -> bytes:
    """PNG bytes of :func:`seli_explorer` (cached: sliders revisit states, cells are re-run).

    The figure is closed, so that no backend shows it again at the end of a cell.
    """
    fig = seli_explorer(ratio, minority_fraction, num_classes)
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=dpi)
    finally:
        plt.close(fig)
    _DRAWN.add((float(ratio), float(minority_fraction), int(num_classes), int(dpi)))
    return buf.getvalue()


class SeliWidget:
    """The SELI explorer with sliders, displayed truthfully wherever it is shown.

    Built by :func:`seli_widget`; read that function's notes. Displaying it publishes one
    output with three representations, and each front end picks the one it can run:

    * ``application/vnd.jupyter.widget-view+json`` (live kernel: Jupyter, Colab, VS Code):
      ipywidgets sliders for ``R`` (log scale), the minority fraction and ``C`` over an
      ``ipywidgets.Output`` that receives an explicit PNG of :func:`seli_explorer` each time a
      slider moves. The kernel sets the figure as the Output's ``outputs`` state, never by
      capturing cell output, so a notebook client executing the cell has nothing to send back
      and cannot block on it.
    * ``text/html`` (a static page, no kernel; the book's HTML build drops the widget view with
      ``nb_mime_priority_overrides`` in ``_config.yml``): precomputed figures on the grid
      ``ratios x minority_fractions`` at fixed ``C``, with two range inputs that swap them in
      the browser (a few lines of JavaScript, no network). Without JavaScript only the figure
      of the initial values shows and the sliders stay hidden.
    * ``image/png``: the figure of the initial values.
    """

    def __init__(self, ratio: float, minority_fraction: float, num_classes: int, *, ratios: Sequence[float],
                 minority_fractions: Sequence[float], dpi: int, progress: bool = False):
        self.ratio, self.minority_fraction, self.num_classes = float(ratio), float(minority_fraction), int(num_classes)
        self.ratios = tuple(float(r) for r in ratios)
        self.minority_fractions = tuple(float(f) for f in minority_fractions)
        self.dpi = int(dpi)
        self.progress = bool(progress)
        self._live = None

    def png(self, ratio: float, minority_fraction: float, num_classes: int | None = None) -> bytes:
        """PNG bytes of ``seli_explorer(ratio, minority_fraction, num_classes)`` (cached)."""
        c = self.num_classes if num_classes is None else num_classes
        return _explorer_png(float(ratio), float(minority_fraction), int(c), self.dpi)

    def frames(self) -> dict[tuple[float, float], bytes]:
        """The precomputed states of the static page: ``{(R, minority fraction): PNG}`` at this ``C``.

        Drawing them takes a few seconds (about a fifth of a second each); a text bar on stderr counts them
        when ``progress`` is on and some are not drawn yet (a stream output, never a second display).
        """
        grid = [(r, f) for r in self.ratios for f in self.minority_fractions]
        new = [key for key in grid if not _is_drawn(key[0], key[1], self.num_classes, self.dpi)]
        bar = None
        if self.progress and len(new) > 1:
            import sys

            from tqdm import tqdm   # a text bar: the cell's one display output stays the widget

            bar = tqdm(total=len(new), desc="explorer frames", file=sys.stderr, leave=False)
        try:
            out = {}
            for key in grid:
                out[key] = self.png(*key)
                if bar is not None and key in new:
                    bar.update(1)
            return out
        finally:
            if bar is not None:
                bar.close()

    # -- live widget (kernel) ------------------------------------------------------------------
    def live(self):
        """The ipywidgets box (sliders over an Output holding an explicit figure); built once.

        Raises ``ImportError`` if ipywidgets is not installed.
        """
        if self._live is not None:
            return self._live
        import ipywidgets as widgets

        sliders = {
            "ratio": widgets.FloatLogSlider(value=self.ratio, base=10, min=0, max=3, step=0.05, description="R",
                                            continuous_update=False),
            "minority_fraction": widgets.FloatSlider(value=self.minority_fraction, min=0.05, max=0.95, step=0.05,
                                                     description="minority fraction", continuous_update=False,
                                                     style={"description_width": "initial"}),
            "num_classes": widgets.IntSlider(value=self.num_classes, min=2, max=12, description="C",
                                             continuous_update=False),
        }
        out = widgets.Output()

        def redraw(_change=None):
            values = [sliders[k].value for k in ("ratio", "minority_fraction", "num_classes")]
            png = base64.b64encode(self.png(*values)).decode("ascii")
            text = "SELI explorer: R = {:.3g}, minority fraction = {:g}, C = {}".format(*values)
            # the kernel sets the Output's state itself (one message): no `with out:` capture of cell
            # output that a notebook client would have to mirror back to the kernel
            out.outputs = ({"output_type": "display_data", "metadata": {},
                            "data": {"image/png": png, "text/plain": text}},)

        for s in sliders.values():
            s.observe(redraw, names="value")
        redraw()
        self._live = widgets.VBox([widgets.HBox(list(sliders.values())), out])
        return self._live

    # -- static page -----------------------------------------------------------------------------
    def to_html(self) -> str:
        """Self-contained HTML: the precomputed frames and two range inputs that switch them."""
        uid = f"ncbook-seli-{uuid.uuid4().hex[:10]}"
        r0 = int(np.argmin(np.abs(np.log(np.array(self.ratios)) - np.log(self.ratio))))
        f0 = int(np.argmin(np.abs(np.array(self.minority_fractions) - self.minority_fraction)))
        imgs, frames = [], self.frames()
        for i, r in enumerate(self.ratios):
            for j, f in enumerate(self.minority_fractions):
                data = base64.b64encode(frames[r, f]).decode("ascii")
                hidden = "" if (i, j) == (r0, f0) else " hidden"
                imgs.append(f'<img class="ncbook-seli-frame" data-r="{i}" data-f="{j}"{hidden} '
                            f'alt="SELI explorer at R = {r:.3g}, minority fraction = {f:g}, C = {self.num_classes}" '
                            f'style="max-width:100%" src="data:image/png;base64,{data}">')
        r_labels = json.dumps([f"{r:.3g}" for r in self.ratios])
        f_labels = json.dumps([f"{f:g}" for f in self.minority_fractions])
        return (
            f'<div id="{uid}" class="ncbook-seli-explorer" data-frames="{len(imgs)}" '
            f'data-classes="{self.num_classes}">\n'
            f'<div class="ncbook-seli-controls" hidden style="font-family:sans-serif;font-size:0.9em;margin:0.3em 0">'
            f'<label>R <input type="range" class="ncbook-seli-r" min="0" max="{len(self.ratios) - 1}" step="1" '
            f'value="{r0}"> <output class="ncbook-seli-r-value"></output></label>&emsp;'
            f'<label>minority fraction <input type="range" class="ncbook-seli-f" min="0" '
            f'max="{len(self.minority_fractions) - 1}" step="1" value="{f0}"> '
            f'<output class="ncbook-seli-f-value"></output></label>&emsp;'
            f'<span>C = {self.num_classes} (precomputed states; run the notebook for any value)</span></div>\n'
            + "\n".join(imgs) +
            "\n<script>\n(function () {\n"
            f'  var root = document.getElementById("{uid}");\n'
            "  if (!root) { return; }\n"
            f"  var rLabels = {r_labels}, fLabels = {f_labels};\n"
            '  var r = root.querySelector(".ncbook-seli-r"), f = root.querySelector(".ncbook-seli-f");\n'
            '  var frames = root.querySelectorAll(".ncbook-seli-frame");\n'
            "  function show() {\n"
            "    for (var k = 0; k < frames.length; k++) {\n"
            "      frames[k].hidden = !(frames[k].dataset.r === r.value && frames[k].dataset.f === f.value);\n"
            "    }\n"
            '    root.querySelector(".ncbook-seli-r-value").textContent = rLabels[+r.value];\n'
            '    root.querySelector(".ncbook-seli-f-value").textContent = fLabels[+f.value];\n'
            "    root.dataset.shown = r.value + \",\" + f.value;\n"
            "  }\n"
            '  r.addEventListener("input", show);\n'
            '  f.addEventListener("input", show);\n'
            '  root.querySelector(".ncbook-seli-controls").hidden = false;\n'
            "  show();\n"
            '  root.dataset.ready = "1";\n'
            "})();\n</script>\n</div>"
        )

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = {
            "text/plain": (f"SELI explorer: R = {self.ratio:g}, minority fraction = {self.minority_fraction:g}, "
                           f"C = {self.num_classes}"),
            "image/png": base64.b64encode(self.png(self.ratio, self.minority_fraction)).decode("ascii"),
            "text/html": self.to_html(),
        }
        live = self._live_view()
        if live is not None:
            bundle["application/vnd.jupyter.widget-view+json"] = live
        return bundle

    def _live_view(self):
        """The widget-view data of :meth:`live` when a kernel runs and ipywidgets is installed, else None."""
        try:
            from IPython import get_ipython

            if getattr(get_ipython(), "kernel", None) is None:
                return None
            box = self.live()
        except ImportError:
            return None
        return {"version_major": 2, "version_minor": 0, "model_id": box.model_id}


def seli_widget(ratio: float = 10.0, minority_fraction: float = 0.5, num_classes: int = 4, *,
                ratios: Sequence[float] = WIDGET_RATIOS, minority_fractions: Sequence[float] = WIDGET_FRACTIONS,
                dpi: int = 72, progress: bool | None = None) -> SeliWidget:
    """Sliders for ``R`` (log scale), minority fraction and ``C`` in front of :func:`seli_explorer`.

    In a live kernel (Jupyter, Colab) the sliders recompute the figure for any value; on a
    static page (the built book) they switch between figures precomputed on the grid
    ``ratios x minority_fractions`` at ``C = num_classes``, so a slider never pretends.

    Parameters
    ----------
    ratio : float
        Initial ``R >= 1``.
    minority_fraction : float
        Initial share of minority classes, in ``(0, 1)``.
    num_classes : int
        ``C >= 2``; fixed on the static page.
    ratios, minority_fractions : sequence of float
        The grid of the static page (``len(ratios) * len(minority_fractions)`` figures).
    dpi : int
        Resolution of every figure.
    progress : bool, optional
        A text bar (stderr) while the static page's figures are drawn; default :func:`ncbook.profiles.show_progress`.

    Returns
    -------
    SeliWidget
        Display it (last expression of a cell). Its ``image/png`` form is
        ``seli_explorer(ratio, minority_fraction, num_classes)``; ``.live()`` is the
        ipywidgets box, ``.to_html()`` the static page form, ``.frames()`` the precomputed PNGs.

    Raises
    ------
    ValueError
        For values that :func:`step_counts` rejects, or an empty grid.

    Notes
    -----
    Executing the cell never waits on the client: no output is captured into the Output
    widget while the cell runs (the figure is set as the Output's state by the kernel).
    Capturing output there (``ipywidgets.interactive`` whose function calls ``plt.show()``)
    makes nbclient send comm messages on the shell channel while it waits on that channel for
    the execute reply, and the reply can then sit unread until the cell timeout.

    Examples
    --------
    >>> w = seli_widget(10.0, 0.5, 4, ratios=(1.0, 10.0), minority_fractions=(0.5,), dpi=20)
    >>> sorted(w.frames())
    [(1.0, 0.5), (10.0, 0.5)]
    >>> html = w.to_html()
    >>> html.count('class="ncbook-seli-frame"'), html.count(" hidden")
    (2, 2)
    """
    step_counts(ratio, minority_fraction, num_classes)  # validates the initial values
    for name, grid in (("ratios", ratios), ("minority_fractions", minority_fractions)):
        if len(grid) == 0:
            raise ValueError(f"{name} must hold at least one value; got {grid!r}.")
    for r in ratios:
        step_counts(r, minority_fractions[0], num_classes)
    for f in minority_fractions:
        step_counts(ratios[0], f, num_classes)
    dpi = int(check_positive("dpi", dpi))
    progress = show_progress() if check_bool("progress", progress, allow_none=True) is None else progress
    return SeliWidget(ratio, minority_fraction, num_classes, ratios=ratios, minority_fractions=minority_fractions,
                      dpi=dpi, progress=progress)


def seli_ufm_figure(histories: Mapping, *, check: tuple):
    """The UFM runs: distance of the logits to the SEL matrix over the steps, and one run's Grams.

    Parameters
    ----------
    histories : mapping of (R, optimizer) to dict
        The history of each run (:func:`ncbook.ufm.train_ufm`: arrays ``step``, ``z_sel``, ``w_seli``, ``w_etf``,
        ``m_seli``, ``m_etf``); optimizer ``"ngd"`` (solid lines) or ``"gd"`` (dashed).
    check : (R, optimizer)
        The run whose classifier and class-mean Grams the right panel follows (to SELI and to the ETF).

    Returns
    -------
    Figure
        Two panels, log distance axes.

    Raises
    ------
    ValueError
        If ``check`` is not a key of ``histories``.

    Examples
    --------
    >>> h = {"step": np.array([0, 10]), **{k: np.array([1.0, 0.1]) for k in ("z_sel", "w_seli", "w_etf", "m_seli", "m_etf")}}
    >>> fig = seli_ufm_figure({(1, "ngd"): h, (1, "gd"): h}, check=(1, "ngd"))
    >>> len(fig.axes[0].lines), len(fig.axes[1].lines)
    (2, 4)
    >>> plt.close(fig)
    """
    if check not in histories:
        raise ValueError(f"check must be one of the runs {sorted(histories)}; got {check!r}.")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    for (ratio, opt), h in histories.items():
        axes[0].plot(h["step"], h["z_sel"], "-" if opt == "ngd" else "--", label=f"{opt.upper()}, R = {ratio:g}")
    axes[0].set(yscale="log", xlabel="step", ylabel="distance of the logits to SEL", title="convergence worsens with R")
    axes[0].legend(fontsize=LEGEND_FONTSIZE, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    h = histories[check]
    for key, label in (("w_seli", "W to SELI"), ("w_etf", "W to ETF"), ("m_seli", "means to SELI"),
                       ("m_etf", "means to ETF")):
        axes[1].plot(h["step"], h[key], label=label)
    axes[1].set(yscale="log", xlabel="step", title=f"{check[1].upper()}, R = {check[0]:g}")
    axes[1].legend(fontsize=LEGEND_FONTSIZE)
    return fig


def seli_ridge_figure(lambdas, distance, norm_ratio, cos_min, *, seli_norm_ratio: float):
    r"""The ridge path: distance of ``Z_lambda`` to SELI against ``lambda``, and the minority classifiers.

    Parameters
    ----------
    lambdas : array-like of shape (m,), positive
    distance : array-like of shape (m,)
        ``dist(Z_lambda, SELI)``; the left panel also draws a multiple of ``1 / log(1/lambda)`` through its first
        point.
    norm_ratio, cos_min : array-like of shape (m,)
        Minority over majority classifier norm, and the cosine of the two minority classifiers (NaN where
        one vanished).
    seli_norm_ratio : float
        SELI's norm ratio (the ``lambda -> 0`` limit), dashed.

    Returns
    -------
    Figure

    Examples
    --------
    >>> fig = seli_ridge_figure([1e-4, 1e-2], [0.2, 0.3], [0.6, 0.5], [0.1, 0.9], seli_norm_ratio=0.7)
    >>> len(fig.axes)
    2
    >>> plt.close(fig)
    """
    lam = np.asarray(lambdas, dtype=float)
    distance = np.asarray(distance, dtype=float)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    rate = distance[0] * np.log(1 / lam[0]) / np.log(1 / lam)
    curves(lam, {r"distance of $Z_\lambda$ to SELI": distance, r"$\propto 1 / \log(1/\lambda)$": rate}, axes[0],
           logx=True, xlabel=r"$\lambda$", styles={r"$\propto 1 / \log(1/\lambda)$": ":"})
    ratio_label = r"$\|w_{\mathrm{min}}\| / \|w_{\mathrm{maj}}\|$"
    curves(lam, {ratio_label: norm_ratio, r"$\cos(w_{\mathrm{min}}, w'_{\mathrm{min}})$": cos_min}, axes[1], logx=True,
           xlabel=r"$\lambda$", hlines={ratio_label: float(seli_norm_ratio)},
           title=r"dashed: SELI ($\lambda \to 0$)")
    return fig


def seli_network_figure(distances: Mapping, classifiers, means, counts, *, title: str = ""):
    """A trained network against SELI: its distances over training, its norm bars and SELI's.

    Parameters
    ----------
    distances : mapping or DataFrame
        Columns ``epoch``, ``w_seli``, ``w_etf``, ``m_seli``, ``m_etf`` (one row per measurement).
    classifiers, means : array-like of shape (C, d)
        The trained classifier rows and the centred class means.
    counts : array-like of shape (C,)
        Training samples per class (SELI of these counts is drawn beside the network).
    title : str
        Title of the left panel.

    Returns
    -------
    Figure
        Three panels: the distances (linear axis), the network's norms, SELI's norms.

    Examples
    --------
    >>> g = seli_geometry([50, 50, 5, 5])
    >>> d = {"epoch": [1, 2], "w_seli": [0.5, 0.2], "w_etf": [0.5, 0.4], "m_seli": [0.6, 0.3], "m_etf": [0.6, 0.5]}
    >>> fig = seli_network_figure(d, g.classifiers, g.means, [50, 50, 5, 5])
    >>> len(fig.axes)
    3
    >>> plt.close(fig)
    """
    counts = np.asarray(counts)
    seli = seli_geometry(counts)
    fig, axes = plt.subplots(1, 3, figsize=(MAX_FIGURE_WIDTH, 3.6), layout="constrained",
                             gridspec_kw=dict(width_ratios=(1.2, 1, 1)))
    for key, label in (("w_seli", "classifier to SELI"), ("w_etf", "classifier to ETF"),
                       ("m_seli", "class means to SELI"), ("m_etf", "class means to ETF")):
        axes[0].plot(list(distances["epoch"]), list(distances[key]), label=label)
    axes[0].set(xlabel="epoch", ylabel="distance", title=title)
    axes[0].legend(fontsize=LEGEND_FONTSIZE, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    groups, start = [], 0          # "0-4: 120, 5-9: 12": the classes of each count (tick labels would collide)
    for end in range(1, counts.size + 1):
        if end == counts.size or counts[end] != counts[start]:
            groups.append(f"{start}-{end - 1}: {int(counts[start])}" if end - 1 > start else f"{start}: {int(counts[start])}")
            start = end
    for ax, (w, m, name) in zip(axes[1:], ((classifiers, means, "trained network"),
                                            (seli.classifiers, seli.means, "SELI prediction"))):
        seli_norm_bars(w, m, ax, title=name)
        ax.set_xlabel(f"class (samples: {', '.join(groups)})")
    return fig
