# Two commands do all the set-up on a fresh machine:
#   make run    execute the whole workbook (papermill) and print a report
#   make test   unit tests + strict nbval of every notebook + papermill runs with other parameters
# Both create .venv and install requirements.txt and this package on first use.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
ARGS   ?=

.PHONY: run test refresh unit lab clean help

help:
	@echo "make run     execute every notebook into build/executed and print a report (ARGS='--fast', ARGS='--only 01')"
	@echo "make test    the full test suite (what .ci/run runs)"
	@echo "make unit    only the unit tests of helpers/ (fast, no notebooks)"
	@echo "make refresh re-execute notebooks in place and store clean outputs (ARGS='01' for one)"
	@echo "make lab     open the workbook in JupyterLab on 127.0.0.1:8888 (ARGS='--port 9999'); the URL with its token is printed"
	@echo "make clean   remove build/ (keeps .venv)"

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	$(PY) -m pip install --disable-pip-version-check -q --no-deps -e .
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m helpers.workbook run $(ARGS)

test: $(STAMP)
	$(PY) -m pytest $(ARGS)

unit: $(STAMP)
	$(PY) -m pytest tests -m "not notebook" $(ARGS)

lab: $(STAMP)
	$(PY) -m helpers.workbook lab $(ARGS)

refresh: $(STAMP)
	$(PY) -m helpers.workbook refresh $(ARGS)

clean:
	rm -rf build
