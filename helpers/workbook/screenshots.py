"""Screenshots of the real TensorBoard dashboard, taken again whenever the pins move: ``python -m helpers.workbook screenshots``.

A chapter that teaches TensorBoard shows the dashboard as you see it. The images in ``notebooks/images/`` are taken
from the logs a chapter's last run left in its build folder (``build/06_tensorboard/logs/...``): for each
:class:`View`, a TensorBoard server (:func:`helpers.tensorboard_server.serve`) reads one folder of those logs,
headless Chromium (:mod:`helpers.workbook.chromium`) opens one dashboard route, and the screenshot is cropped
and stored as a small palette PNG (:func:`shrink`). Run the chapter first (``make run ARGS='--only 06'`` or
``make refresh ARGS=06``), then ``make screenshots``.

A new view is one more :class:`View` in :data:`VIEWS`: the image's name, the chapter whose logs it shows, the
folder the server reads, the route (the part of the URL after ``#``), and the runs the server must list first.
The chapter shows the image as a Markdown image, ``![alt text](images/NAME.png)``, with a caption under it.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from helpers.failures import CommandError, UsageError
from helpers.paths import build_root, display_path, repo_root
from helpers.workbook import chromium

#: Where the chapters' images are stored; a chapter links to them as ``images/NAME.png``.
IMAGES_DIR = repo_root() / "notebooks" / "images"
#: The largest image stored, in bytes: the notebooks and the book stay small.
MAX_BYTES = 150_000


class ScreenshotsFailed(CommandError):
    """A screenshot could not be taken (no logs from a run of the chapter, no Chromium, a page that stayed empty); the line says which."""

    meaning = "a screenshot could not be taken (screenshots)"


@dataclass(frozen=True)
class View:
    """One dashboard page to photograph: which logs the server reads and which route the browser opens."""

    name: str  #: the image's file name without ``.png``, in :data:`IMAGES_DIR`
    chapter: str  #: the chapter whose build folder holds the logs (``06_tensorboard``)
    logs: str  #: the folder below that build folder the server reads (``logs/custom``)
    route: str  #: the dashboard's route, the URL after ``#`` (``scalars&tagFilter=loss``)
    runs: tuple[str, ...] = ()  #: runs the server must list before the page is opened
    window: tuple[int, int] = (1100, 640)  #: the page's width and height in the browser (the screenshot's size before cropping)
    crop: tuple[int, int, int, int] | None = None  #: (left, top, right, bottom) in the screenshot; None keeps it whole
    settle: float = 10.0  #: seconds the page gets to fetch its data and draw it

    def logdir(self, build: Path) -> Path:
        return build / self.chapter / self.logs


#: Every view the workbook shows, in the order they are taken. Chapters 06 and 07 write the folders named here.
VIEWS: tuple[View, ...] = (
    View("06_scalars_loss", "06_tensorboard", "logs/custom", "scalars&tagFilter=%5E(loss%7Caccuracy)%24&_smoothingWeight=0", ("train", "validation"),
         window=(1100, 650)),
    View("06_scalars_learning_rate", "06_tensorboard", "logs/custom", "scalars&tagFilter=learning_rate&_smoothingWeight=0", ("train",),
         window=(1100, 650)),
    View("06_hparams_table", "06_tensorboard", "logs/hparams_sweep", "hparams", ("lr_0.01", "lr_0.1", "lr_0.5"), window=(1100, 420)),
    View("06_graphs", "06_tensorboard", "logs/graph_trace", "graphs", (".",), window=(900, 600)),
    View("07_debugger_v2", "07_gradient_checking", "debugger_v2_dump", "debugger-v2", window=(1200, 720), crop=(0, 0, 1200, 492), settle=20.0),
)  # fmt: skip


def select(names: Sequence[str], views: Sequence[View] = VIEWS) -> list[View]:
    """The views whose name or chapter starts with one of ``names`` (all when none); :class:`UsageError` for a name matching none."""
    if not names:
        return list(views)
    chosen: list[View] = []
    for name in names:
        found = [view for view in views if view.name.startswith(name) or view.chapter.startswith(name)]
        if not found:
            raise UsageError(f"no screenshot matches {name!r}; the views are: {', '.join(view.name for view in views)}")
        chosen += [view for view in found if view not in chosen]
    return chosen


def check_logs(views: Sequence[View], build: Path) -> None:
    """:class:`ScreenshotsFailed` naming the chapters to run first when a view's log folder is missing."""
    missing = sorted({view.chapter for view in views if not view.logdir(build).is_dir()})
    if missing:
        numbers = " ".join(chapter.split("_")[0] for chapter in missing)
        raise ScreenshotsFailed(
            f"no logs from a run of {', '.join(missing)} in {display_path(build)}: run it first (python -m helpers.workbook run --only {numbers})"
        )


def shrink(png: bytes, crop: tuple[int, int, int, int] | None = None, *, colors: int = 128) -> bytes:
    """The screenshot cropped to ``crop`` and stored with a palette of ``colors`` colours: a dashboard has few, so it stays sharp."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        picture = image.convert("RGB")
    if crop is not None:
        left, top, right, bottom = crop
        if not (0 <= left < right <= picture.width and 0 <= top < bottom <= picture.height):
            raise ValueError(f"crop {crop} does not fit a {picture.width}x{picture.height} screenshot")
        picture = picture.crop(crop)
    out = io.BytesIO()
    picture.quantize(colors=colors, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(out, format="PNG", optimize=True)
    return out.getvalue()


@contextlib.contextmanager
def _browser(profile: Path) -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not chromium.installed():
        raise ScreenshotsFailed(f"no {chromium.CHROMIUM} or {chromium.CHROMEDRIVER}: install Debian's chromium and chromium-driver (make test does)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium.CHROMIUM)
    for flag in chromium.flags(profile):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(chromium.CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _set_viewport(driver: object, width: int, height: int) -> None:
    """Size the window so that the page itself is ``width`` x ``height`` (the window adds its own frame)."""
    driver.set_window_size(width, height)  # type: ignore[attr-defined]
    inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")  # type: ignore[attr-defined]
    driver.set_window_size(2 * width - inner[0], 2 * height - inner[1])  # type: ignore[attr-defined]


def take(views: Sequence[View], *, build: Path | None = None, out_dir: Path = IMAGES_DIR) -> list[Path]:
    """Photograph each view from its own TensorBoard server; return the images written.

    The server is started from the build folder on a relative log folder, so the path the dashboard prints
    (``06_tensorboard/logs/custom``) is the same on every machine.
    """
    from helpers import tensorboard_server

    build = build_root() if build is None else build
    check_logs(views, build)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="screenshots-") as scratch, _browser(Path(scratch) / "profile") as driver:
        for view in views:
            with contextlib.chdir(build), tensorboard_server.serve(Path(view.chapter) / view.logs) as base_url:
                tensorboard_server.wait_for_runs(base_url, view.runs)
                _set_viewport(driver, *view.window)
                driver.get(f"{base_url}/#{view.route}")  # type: ignore[attr-defined]
                time.sleep(view.settle)
                png = driver.get_screenshot_as_png()  # type: ignore[attr-defined]
            try:
                image = shrink(png, view.crop)
            except ValueError as error:
                raise ScreenshotsFailed(f"{view.name}: {error}") from None
            if len(image) > MAX_BYTES:
                raise ScreenshotsFailed(f"{view.name}: {len(image):,} bytes, more than {MAX_BYTES:,}: crop it or make its window smaller")
            path = out_dir / f"{view.name}.png"
            path.write_bytes(image)
            written.append(path)
            print(f"{display_path(path)}: {len(image) // 1000} kB, from {view.chapter}/{view.logs} #{view.route.split('&')[0]}", flush=True)
    return written


def image_paths(views: Sequence[View] = VIEWS, out_dir: Path = IMAGES_DIR) -> list[Path]:
    """Where the views' images are stored."""
    return [out_dir / f"{view.name}.png" for view in views]

