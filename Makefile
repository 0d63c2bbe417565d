# fleetmon: the two commands of the README.
#   make demo   set up and run the app on a built-in simulated fleet
#   make test   set up, type-check (mypy, config in pyproject.toml) and run the whole test suite
#   make agent-pyz  build the single-file node agent dist/fleetmon-agent.pyz (docs/install-node.md)
#   make i18n-update  extract the core's marked strings into its .po catalogs (docs/i18n.md)
# Each creates .venv, installs what it needs and is safe to run again.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test bench venv clean agent-pyz app deps-test deps-demo i18n i18n-update

# The core's gettext catalogs (docs/i18n.md): each .po in the repository compiled to the .mo beside it.
PO := $(wildcard fleetmon/locale/*/LC_MESSAGES/fleetmon.po)
MO := $(PO:.po=.mo)

# System packages first (each target its own list; quick when all are installed), then the venv.
deps-test:
	@PYTHON=$(PYTHON) sh packaging/system-deps.sh test

deps-demo:
	@PYTHON=$(PYTHON) sh packaging/system-deps.sh demo

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip
	@$(BIN)/python -m pip install -q -e '.[app,test]'
	@touch $(STAMP)

venv: $(STAMP) i18n

fleetmon/locale/%/LC_MESSAGES/fleetmon.mo: fleetmon/locale/%/LC_MESSAGES/fleetmon.po $(STAMP)
	$(BIN)/pybabel -q compile -D fleetmon -l $* -i $< -o $@

i18n: $(MO)

i18n-update: $(STAMP)
	@mkdir -p build
	$(BIN)/pybabel -q extract -F babel.cfg -k N_ -k ngettext:1,2 --no-location --sort-output \
		--project fleetmon -o build/fleetmon.pot .
	$(BIN)/pybabel -q update -D fleetmon -d fleetmon/locale -i build/fleetmon.pot --no-fuzzy-matching --ignore-obsolete

demo: deps-demo $(STAMP) i18n
	$(BIN)/fleetmon demo

# mypy first: a type error fails the target before the (slower) tests run. Two pytest-xdist
# workers (the 2 cores CI has), a test file per worker at a time, so a module's fixture runs once.
# pytest-randomly shuffles the order on every run and the summary prints its seed: repeat an order
# with `-p randomly --randomly-seed=N`, or add `-p no:randomly` for file order. The 15 slowest tests are listed
# (the suite must stay under 10 minutes on 2 cores).
# PYTHONDONTWRITEBYTECODE (set on some machines) is cleared for the run: the suite starts a few hundred
# `python -m fleetmon` children (agents, CLI runs), and without cached bytecode each compiles fleetmon again.
test: deps-test $(STAMP) i18n
	$(BIN)/python -m mypy
	PYTHONDONTWRITEBYTECODE= QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -n 2 --dist loadfile --durations=15

bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# Needs only python3 (stdlib): no venv. The node then needs Python 3.8+ and nvidia-ml-py.
agent-pyz:
	$(PYTHON) packaging/build_agent_pyz.py -o dist/fleetmon-agent.pyz

# The workstation app as one folder, dist/fleetmon/fleetmon (PyInstaller recipe: packaging/fleetmon.spec).
app: $(STAMP) i18n
	$(BIN)/python -m pip install -q pyinstaller
	$(BIN)/pyinstaller --noconfirm packaging/fleetmon.spec
	dist/fleetmon/fleetmon --version

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache

# The window's translations (docs/i18n.md): the .ts sources are in the repository, the .qm Qt loads is built
# from each by pyside6-lrelease as part of `make i18n` (so venv, demo, test and app build them; ui/i18n.py
# also builds a missing or older one on first use). `make translations` after marking or changing strings in
# ui/: collects them into each .ts (a new one unfinished: translate it there; tests/ui/test_i18n_ui.py fails
# until then).
TS := $(wildcard ui/translations/fleetmon_*.ts)
QM := $(TS:.ts=.qm)
.PHONY: translations
ui/translations/%.qm: ui/translations/%.ts $(STAMP)
	$(BIN)/pyside6-lrelease -silent $< -qm $@.part && mv $@.part $@  # renamed over: a running app maps the old one

i18n: $(QM)

translations: $(STAMP)
	$(BIN)/pyside6-lupdate -extensions py -locations none -no-obsolete ui -ts $(TS)
