# Two commands on a fresh machine: `make demo` and `make test`. Each sets up .venv from nothing but Python 3.11+.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,ray]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/sitemapkit generate examples/urls.txt examples/products.csv \
		--base-url https://www.example.com/ --out examples/out --gzip --max-urls 1000 --xsl default
	@echo
	@echo "# and what a search engine would say about the result:"
	$(BIN)/sitemapkit validate examples/out/sitemap.xml.gz --url https://www.example.com/sitemap.xml.gz
	@echo
	@echo "# a whole build declared in examples/sitemapkit.toml (a site folder + JSONL with video and hreflang):"
	$(BIN)/sitemapkit build examples/sitemapkit.toml --explain
	$(BIN)/sitemapkit validate examples/build/sitemap.xml.gz --url https://www.example.com/sitemap.xml.gz

test: $(STAMP)
	$(BIN)/python -m pytest src tests
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench,ray]'
	$(BIN)/python bench/run.py $(ARGS)

clean:
	rm -rf $(VENV) examples/out examples/build bench/.work .pytest_cache .mypy_cache .ruff_cache
