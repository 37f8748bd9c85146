"""Sphinx configuration of the sklearn_dp documentation.

Build (warnings are errors), from the repository root:

    python -m sphinx -W --keep-going -b html docs docs/_build/html

Add ``-D plot_gallery=0`` to skip running the gallery examples.
"""

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# The package from this checkout, and the local extensions.
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))

import sklearn_dp  # noqa: E402

# Gallery examples run in this process: no interactive windows.
os.environ.setdefault("MPLBACKEND", "Agg")

project = "sklearn_dp"
author = "the sklearn_dp developers"
copyright = "the sklearn_dp developers"
release = sklearn_dp.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    # MyST Markdown pages and the notebooks (docs/notebooks/*.ipynb, rendered
    # with their committed outputs, never executed by the build).
    "myst_nb",
    "sphinx_gallery.gen_gallery",
    # Local (docs/_ext): the "Privacy" docstring section, registry tables.
    "privacy_section",
    "solver_tables",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "README.md",
    "Makefile",
    "**.ipynb_checkpoints",
    # sphinx-gallery writes these next to the generated pages.
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.md5",
    "auto_examples/*.json",
]

# -- MyST ---------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3

# -- MyST-NB: notebooks ---------------------------------------------------------
# The notebooks are committed executed (docs/notebooks/_build_notebooks.py);
# the build shows those outputs and runs nothing.
nb_execution_mode = "off"
nb_merge_streams = True

# -- autodoc / autosummary / numpydoc -----------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_typehints = "none"
# numpydoc lists a class's public methods itself; no separate stub per method.
numpydoc_show_class_members = True
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- sphinx-gallery ------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": str(DOCS / "auto_examples"),
    "filename_pattern": "/plot_",
    "ignore_pattern": r"(__init__|quickstart)\.py",
    "plot_gallery": "True",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "show_memory": False,
    "min_reported_time": 1,
}

# -- HTML --------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"sklearn_dp {release}"
html_static_path = []
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False


def _skip_metadata_request_setters(app, what, name, obj, skip, options):
    # scikit-learn attaches set_fit_request / set_score_request (metadata
    # routing) to every estimator class; their docstrings cross-reference
    # scikit-learn's own glossary and belong to its documentation.
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_request_setters)
