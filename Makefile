# Two commands do all the set-up on a fresh machine:
#   make run    execute the whole workbook (papermill) and print a report
#   make test   ruff and mypy, then unit tests + strict nbval of every notebook + papermill runs with other parameters,
#               on both cores
# Both create .venv and install requirements.txt and this package on first use.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
ARGS   ?=

.PHONY: run test check refresh unit lab book translations course grade bench drift configs screenshots clean help

help:
	@echo "make run     execute every notebook into build/executed and print a report (ARGS='--fast', ARGS='--only 01')"
	@echo "make test    the full test suite (what .ci/run runs)"
	@echo "make check   ruff (helpers, tests, notebooks, benchmarks) and mypy (helpers): seconds"
	@echo "make unit    ruff, then mypy beside the tests that start no notebook, process or server (about a minute)"
	@echo "make bench   the benchmarks (python -m benchmarks.run $$ARGS); results in build/benchmarks"
	@echo "make refresh re-execute notebooks in place and store clean outputs (ARGS='01' for one)"
	@echo "make book    build the book from the stored outputs, in English and Chinese (build/book/en, build/book/zh_CN; make run builds it from its own run)"
	@echo "make translations  after an English edit: merge new and changed messages into notebooks/locales/zh_CN/*.po and list what needs translating"
	@echo "make lab     open the workbook in JupyterLab on 127.0.0.1:8888 (ARGS='--port 9999', ARGS='--lang zh_CN'); the URL with its token is printed"
	@echo "make course  build the nbgrader course in build/course: teacher's version and students' release (ARGS='03 --due \"2026-12-10 23:59\"')"
	@echo "make grade   grade what students returned that is new, each notebook in a sandbox: feedback, grades.csv, class report (ARGS='--from DIR', '--zip FILE --chapter 03', '--all')"
	@echo "make drift   run the workbook against the newest TensorFlow in build/drift/venv-latest (ARGS='--nightly': venv-nightly); report in build/drift/report.md"
	@echo "make configs run the workbook with oneDNN's CPU kernels forced off and on; report in build/configurations/report.md (ARGS='onednn-on --only 10')"
	@echo "make screenshots  photograph the TensorBoard dashboard from chapter 06's last run into notebooks/images (ARGS='06_graphs' for one view; run the chapter first)"
	@echo "make clean   remove build/ (keeps .venv)"

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	$(PY) -m pip install --disable-pip-version-check -q --no-deps -e .
	touch $(STAMP)

# tests/test_browser.py opens the book and JupyterLab in Debian's headless Chromium; make test installs it
# (as root, through apt) when /usr/bin/chromedriver is missing, with a CJK font for the Chinese edition
# (without one, Chromium draws Chinese text as boxes).
CHROMEDRIVER := /usr/bin/chromedriver
CJK_FONT     := /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc
$(CHROMEDRIVER) $(CJK_FONT):
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-noto-cjk

# tests/test_browser.py also runs axe-core's accessibility rules (WCAG 2.1 A and AA) on every page of the book: the
# npm package pinned in package.json and package-lock.json, which make test installs into node_modules/ (npm itself
# through apt when it is missing). touch: npm ci keeps the file's date from the package, older than package.json's.
AXE := node_modules/axe-core/axe.min.js
$(AXE): package.json package-lock.json
	command -v npm >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm)
	npm ci --no-audit --no-fund --loglevel=error
	touch $(AXE)

# make grade runs each returned notebook's kernel in bubblewrap's sandbox (helpers/workbook/sandbox.py); make grade and
# make test install it (as root, through apt) when /usr/bin/bwrap is missing. Where apt cannot, make grade says what to do.
BWRAP := /usr/bin/bwrap
$(BWRAP):
	-apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap

run: $(STAMP)
	$(PY) -m helpers.workbook run $(ARGS)

# Static checks first: a typo fails in seconds, before any TensorFlow import.
check: $(STAMP)
	$(PY) -m ruff check
	$(PY) -m mypy

test: check $(CHROMEDRIVER) $(CJK_FONT) $(BWRAP) $(AXE)
	$(PY) -m pytest -n 2 --dist loadfile --durations=25 $(ARGS)

# The quick loop: ruff first (a typo fails in a second), then mypy beside the tests rather than before them (from a
# cold mypy cache, 58 s against 76 s one after the other: benchmarks/README.md). mypy's report is printed after the
# tests'; either failing fails the target.
unit: $(STAMP)
	$(PY) -m ruff check
	@report=$$(mktemp); $(PY) -m mypy >"$$report" 2>&1 & mypy=$$!; \
	$(PY) -m pytest tests -n 2 --dist loadfile -m "not notebook and not process" --durations=15 $(ARGS); tests=$$?; \
	wait $$mypy; typed=$$?; echo "mypy:"; cat "$$report"; rm -f "$$report"; \
	test $$tests -eq 0 && test $$typed -eq 0

bench: $(STAMP)
	$(PY) -m benchmarks.run $(ARGS)

# Not part of make test: builds a separate venv with the newest TensorFlow (the pinned .venv is untouched).
drift: $(STAMP)
	$(PY) -m helpers.workbook drift $(ARGS)

# Not part of make test:
# every notebook in each kernel configuration, compared cell by cell with the stored outputs.
configs: $(STAMP)
	$(PY) -m helpers.workbook configs $(ARGS)

book: $(STAMP)
	$(PY) -m helpers.workbook book

translations: $(STAMP)
	$(PY) -m helpers.workbook translations update

lab: $(STAMP)
	$(PY) -m helpers.workbook lab $(ARGS)

# Teaching with nbgrader (notebooks/teaching.md): build/course from the chapters, then grade what students return.
course: $(STAMP)
	$(PY) -m helpers.workbook course $(ARGS)

grade: $(STAMP) $(BWRAP)
	$(PY) -m helpers.workbook grade $(ARGS)

# Not part of make test: headless Chromium photographs the dashboard from the logs of a chapter's last run (make run ARGS='--only 06').
screenshots: $(STAMP) $(CHROMEDRIVER)
	$(PY) -m helpers.workbook screenshots $(ARGS)

refresh: $(STAMP)
	$(PY) -m helpers.workbook refresh $(ARGS)

clean:
	rm -rf build
