"""Write the two notebooks of docs/notebooks/ from the cells below, and execute them.

Run ``python docs/notebooks/_build_notebooks.py`` (needs the ``docs`` extra:
nbformat, nbclient, ipykernel) after editing a cell, and commit the ``.ipynb``
files it writes: they are committed *with* their outputs, so they read as
finished notebooks on GitHub and in the documentation (which renders them
without running them).  The kernel runs this interpreter with this checkout's
``sklearn_dp`` first on its path; each notebook runs in a temporary
directory.  ``--no-execute`` writes the sources only.

``tests/test_examples.py`` checks that the committed cells are these cells,
that their outputs hold no error and no warning, and (marked slow) executes
them again.
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

PUBLIC_SCALING = """import math
import re

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

data = load_breast_cancer()
# The "Summary Statistics" table of the documentation: one (min, max) per feature.
ranges = re.findall(r"^[a-z ]+\\([a-z ]+\\):\\s+([\\d.]+)\\s+([\\d.]+)\\s*$", data.DESCR, re.M)
lo, hi = np.array(ranges, dtype=float).T
assert lo.size == data.data.shape[1] == 30

# Map each feature from its documented range to [-0.5, 0.5]; clip what falls
# outside (the documented ranges are rounded).  Nothing here is computed from the data.
X = np.clip((data.data - (lo + hi) / 2) / (hi - lo), -0.5, 0.5)
y = data.target
data_norm = 0.5 * math.sqrt(X.shape[1])  # the largest row norm the map allows
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.2, random_state=0, stratify=y
)
print(f"{X_train.shape[0]} training rows, {X_test.shape[0]} test rows, "
      f"data_norm = {data_norm:.3f}")"""


def first_private_model():
    md, code = new_markdown_cell, new_code_cell
    cells = [
        md("""# A first private model

This notebook fits a differentially private logistic regression on scikit-learn's breast
cancer data, reads the privacy guarantee it records, recomputes that guarantee with Google's
`dp_accounting` library, and compares the model with non-private scikit-learn.

**What differential privacy (DP) promises here.** Whatever anyone does with the fitted model,
they learn almost nothing about whether any one row (a patient, with their label) was in the
training data: the probability of any outcome changes by at most a factor `e^epsilon`, plus
`delta`, when one row is added or removed."""),
        md("""## 1. Public bounds

A DP estimator needs every row to be bounded, and the bound must not be read off the private
data (that would leak it). Here we use knowledge that is public: the data set's documentation
prints the minimum and maximum of each of the 30 features. We map every feature to
[-0.5, 0.5] with those ranges; then each row has L2 norm at most `0.5 * sqrt(30)`, which we
pass as `data_norm`. (Rows longer than `data_norm` would be clipped, never rejected.)

Do **not** use a `StandardScaler` or `MinMaxScaler` fitted on the private data: their means and
scales are released without noise (see the Pipeline example in the gallery)."""),
        code(PUBLIC_SCALING),
        md("""## 2. Fit

`epsilon=1.0, delta=1e-5` is the guarantee we ask for (delta well below `1 / n`).
`classes=[0, 1]` declares the label set; otherwise the estimator releases it privately, for
10% of epsilon and half of delta (labels held by very few rows are left out). `random_state=0` makes the
noise reproducible for this tutorial; leave it at `None` for a real release (whoever knows the
seed can remove the noise)."""),
        code("""from sklearn_dp import DPLogisticRegression

model = DPLogisticRegression(
    epsilon=1.0, delta=1e-5, data_norm=data_norm, classes=[0, 1], random_state=0
)
model.fit(X_train, y_train)
print(f"solver used: {model.solver_}, iterations: {model.n_iter_}")
print(f"test accuracy: {model.score(X_test, y_test):.3f}")"""),
        md("""A fitted estimator displays as in scikit-learn: its parameters (the ones you set are
highlighted) and, in a notebook, its fitted attributes."""),
        code("model"),
        md("""## 3. The guarantee: `privacy_spent_` and `dp_event_`

`privacy_spent_` is the `(epsilon, delta)` this fit guarantees for the training rows, under
add/remove-one neighbouring. `dp_event_` describes the mechanism that produced the model, as a
`dp_accounting.DpEvent`: a Laplace count of the rows (the number of rows is private too; 5% of
epsilon pays for it) composed with the solver's steps (here `dp_gd`: 100 full-batch Gaussian
steps)."""),
        code("""print("privacy_spent_:", model.privacy_spent_)
print("dp_event_:", model.dp_event_)"""),
        md("""Anyone can check the claim without trusting our code for it: give the event to an
accountant of `dp_accounting`. The privacy-loss-distribution (PLD) accountant is tight and
pessimistic (it never reports less than the true epsilon); the Renyi (RDP) accountant is a
valid but looser upper bound, so it reports a little more. The library calibrates its noise
with PLD (and with exact formulas where they exist)."""),
        code("""import dp_accounting

from sklearn_dp.accounting import epsilon_of_event

delta = model.privacy_spent_[1]
pld = dp_accounting.pld.PLDAccountant()
pld.compose(model.dp_event_)
rdp = dp_accounting.rdp.RdpAccountant()
rdp.compose(model.dp_event_)
print(f"PLD accountant:  epsilon = {pld.get_epsilon(delta):.4f} at delta = {delta:g}")
print(f"RDP accountant:  epsilon = {rdp.get_epsilon(delta):.4f} (a looser bound)")
print(f"sklearn_dp.accounting.epsilon_of_event: {epsilon_of_event(model.dp_event_, delta):.4f}")
assert pld.get_epsilon(delta) <= model.privacy_spent_[0] + 1e-9"""),
        md("""## 4. Compared with scikit-learn

Non-private `LogisticRegression` on the same features and split, the same solver without
noise (`epsilon=float("inf")`: not private, it spends nothing), and the private model at a few
epsilons. One noisy fit on 455 rows varies with the noise draw, so we show the median over 10
draws."""),
        code("""from sklearn.linear_model import LogisticRegression

baseline = LogisticRegression().fit(X_train, y_train)
noiseless = DPLogisticRegression(
    epsilon=float("inf"), data_norm=data_norm, classes=[0, 1]
).fit(X_train, y_train)
print(f"scikit-learn LogisticRegression: {baseline.score(X_test, y_test):.3f}")
print(f"dp_gd without noise (epsilon=inf, not private): {noiseless.score(X_test, y_test):.3f}")
for epsilon in [0.1, 0.5, 1.0, 2.0, 5.0]:
    scores = [
        DPLogisticRegression(epsilon=epsilon, data_norm=data_norm, classes=[0, 1],
                             random_state=seed).fit(X_train, y_train).score(X_test, y_test)
        for seed in range(10)
    ]
    print(f"DP epsilon={epsilon:<4g} median test accuracy over 10 noise draws: "
          f"{np.median(scores):.3f}")"""),
        md("""## What is protected, and what is not

* Protected: each training row with its label, including whether it is in the data at all.
* Public by assumption: the number of features, every parameter you pass (`data_norm`,
  `classes`, `epsilon`, `C`, ...), the code. The number of rows is **not** assumed public.
* Not covered: anything you compute from the private data outside the estimator, such as a
  scaler fitted on it, or the test accuracy if the test rows are private too (here the score
  is for illustration), or the choice among several fits (see the notebook on tuning).

Next: *tuning epsilon with a budget*, where several fits share one `PrivacyBudget`."""),
    ]
    return cells


def tuning_with_a_budget():
    md, code = new_markdown_cell, new_code_cell
    cells = [
        md("""# Tuning epsilon with a budget

Every fit on private data spends privacy, and spends add up. A `PrivacyBudget` holds the
total you allow for one data set, is checked **before** each fit touches the data, and keeps a
ledger of what was spent. This notebook shares one budget across a `GridSearchCV`, reads its
ledger, runs out of it, explains what tuning on private data leaks, and keeps the ledger in an
SQLite file that several processes can share."""),
        md("""## Data with public bounds

As in *a first private model*: features mapped to [-0.5, 0.5] with the ranges printed in the
data set's documentation."""),
        code(PUBLIC_SCALING),
        md("""## One budget, one GridSearchCV

The estimator keeps a reference to the budget; `sklearn.base.clone` (which `GridSearchCV`
calls for every fit) returns the same budget object, so every fit of the search is counted:
3 candidates x 3 folds plus the refit of the best candidate = 10 ledger entries.

The search chooses each fit after seeing earlier results, so the budget must admit spends by a
rule that stays valid under such *adaptive* composition. `composition="zcdp"`, the default for
a budget with `delta > 0` (written out here), charges every fit the rho of its Gaussian
mechanism (rho-zCDP) and admits a spend while the rhos add up to no more than `rho_limit`, the
rho whose `(epsilon, delta)` conversion meets the limits; the fits' deltas do not add up. For
many Gaussian fits it is much tighter than `composition="basic"`, where the epsilons and the
deltas simply add up.

`error_score="raise"` makes a refused fit stop the search. With scikit-learn's default
(`error_score=nan`) a `BudgetExceededError` becomes a warning and a NaN score and the search
continues: nothing is overspent (a refused fit spends nothing) but the results have holes."""),
        code("""from sklearn.model_selection import GridSearchCV

from sklearn_dp import BudgetExceededError, DPLogisticRegression, PrivacyBudget

budget = PrivacyBudget(epsilon=5.0, delta=1e-5, composition="zcdp")
model = DPLogisticRegression(delta=1e-6, data_norm=data_norm, classes=[0, 1],
                             budget=budget, random_state=0)
search = GridSearchCV(model, {"epsilon": [0.25, 0.5, 1.0]}, cv=3, error_score="raise")
search.fit(X_train, y_train)
for epsilon, score in zip(search.cv_results_["param_epsilon"],
                          search.cv_results_["mean_test_score"]):
    print(f"epsilon={epsilon:<5g} mean validation accuracy {score:.3f}")
print("best:", search.best_params_, f"test accuracy {search.score(X_test, y_test):.3f}")"""),
        md("""## The ledger

One entry per fit: who spent, the solver, the `(epsilon, delta)` it guarantees, its `DpEvent`
and `rho`, what the zCDP filter charged for it. `spent` and `remaining` state the rhos as an
epsilon at the half of the budget's delta that pays for the conversion (the other half is a
pool for approximate-DP parts, such as a label-set release, which these fits with
`classes=[0, 1]` do not have). Basic composition (the sum of the epsilons) is printed beside
it; so is the budget's `fixed_sequence_epsilon()`, a numerical (PLD) composition of the
recorded events that is tighter still but valid only for fits fixed in advance, so the budget
reports it and never admits by it."""),
        code("""for entry in budget.ledger:
    print(f"{entry.id:2d}. {entry.estimator:20s} solver={entry.solver:6s} "
          f"epsilon={entry.epsilon:<5g} delta={entry.delta:g} rho={entry.rho:.4f} {entry.status}")
print(f"\\nbasic composition: epsilon {sum(e.epsilon for e in budget.ledger):.3f}, "
      f"delta {sum(e.delta for e in budget.ledger):g}")
print(f"rho charged: {budget.rho_spent:.4f} of {budget.rho_limit:.4f}")
print("budget.spent     = (epsilon={:.4f}, delta={:g})".format(*budget.spent))
print("budget.remaining = (epsilon={:.4f}, delta={:g})".format(*budget.remaining))
print(f"fixed-sequence (PLD) epsilon, reported only: {budget.fixed_sequence_epsilon():.4f}")"""),
        md("""## Running out

A second search at larger epsilons does not fit. The budget refuses the first fit that would
take it past its limit, before that fit sees the data; the fits before it happened and are on
the ledger. A refused fit leaves the estimator exactly as it was."""),
        code("""n_before = len(budget.ledger)
try:
    GridSearchCV(model, {"epsilon": [4.0, 8.0]}, cv=3, error_score="raise").fit(X_train, y_train)
except BudgetExceededError as exc:
    print("BudgetExceededError:", str(exc).split(". ")[0])
print(f"fits of the second search on the ledger: {len(budget.ledger) - n_before}")

best = search.best_estimator_
ledger, coef = budget.ledger, best.coef_.copy()
try:
    best.set_params(epsilon=8.0).fit(X_train, y_train)
except BudgetExceededError:
    print("refused again")
print("ledger unchanged:", budget.ledger == ledger,
      "| coefficients unchanged:", np.array_equal(best.coef_, coef),
      "| privacy_spent_ still", best.privacy_spent_)"""),
        md("""## What tuning on private data leaks

The ledger accounts for every fit. It does **not** account for the *choice*: the selected
candidate (and its validation score) is a function of the private validation folds, released
without noise. An attacker who sees which epsilon, or which `C`, won learns a little about the
data, and repeated adaptive searches learn more. In practice:

* choose epsilon from your privacy requirements, not by validation accuracy (accuracy always
  prefers the largest epsilon: the search above did exactly that);
* tune the other hyper-parameters on public or synthetic data of the same shape, then make one
  private fit;
* otherwise treat the chosen hyper-parameters as a further release that the ledger does not
  cover (private hyper-parameter selection is on the roadmap)."""),
        md("""## A ledger in an SQLite file

An in-memory budget counts in one process only: a copy of it in a joblib worker refuses to
spend (it cannot count in a copy). With `storage="path.sqlite"` the ledger lives in a file:
durable across restarts, and every check-and-spend is one transaction, so several processes
(`GridSearchCV(n_jobs=2)`, or separate jobs) can share it and never overspend together. The
file records the limits; reopening it with other limits is refused."""),
        code("""import os
import tempfile

from sklearn_dp import BudgetStorageError

path = os.path.join(tempfile.mkdtemp(), "breast_cancer_budget.sqlite")
shared = PrivacyBudget(epsilon=5.0, delta=1e-5, composition="zcdp", storage=path)
model = DPLogisticRegression(delta=1e-6, data_norm=data_norm, classes=[0, 1],
                             budget=shared, random_state=0)
GridSearchCV(model, {"epsilon": [0.5, 1.0]}, cv=3, n_jobs=2, error_score="raise").fit(
    X_train, y_train
)
print(f"entries written by two worker processes and the refit: {len(shared.ledger)}")

# Later, in another session: the same file, the same ledger.
reopened = PrivacyBudget(epsilon=5.0, delta=1e-5, composition="zcdp", storage=path)
print("reopened:", reopened)
try:
    PrivacyBudget(epsilon=50.0, delta=1e-5, composition="zcdp", storage=path)
except BudgetStorageError as exc:
    print("BudgetStorageError:", str(exc).split(". ")[0])"""),
        md("""The file stores events with `pickle`: open only ledger files you trust. See the user
guide for how the budget composes, and the gallery example *Tuning epsilon with GridSearchCV
and a shared budget* for a plot of the ledger."""),
    ]
    return cells


def _kernel_spec(directory):
    """A kernel spec that runs this interpreter, in a private JUPYTER_PATH entry."""
    name = "sklearn-dp-notebooks"
    spec_dir = Path(directory) / "kernels" / name
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return name


def execute(nb):
    """Run ``nb`` in place with this interpreter and this checkout's sklearn_dp."""
    import nbclient

    names = ("JUPYTER_PATH", "PYTHONPATH", "MPLBACKEND", "OPENBLAS_NUM_THREADS")
    saved = {key: os.environ.get(key) for key in names}
    with tempfile.TemporaryDirectory() as jupyter, tempfile.TemporaryDirectory() as workdir:
        kernel = _kernel_spec(jupyter)
        os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [jupyter, saved["JUPYTER_PATH"]]))
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), saved["PYTHONPATH"]]))
        os.environ["MPLBACKEND"] = "Agg"
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        try:
            nbclient.NotebookClient(
                nb,
                timeout=600,
                kernel_name=kernel,
                resources={"metadata": {"path": workdir}},
            ).execute()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    # The committed files carry no run-specific metadata.
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    _set_metadata(nb)


def _set_metadata(nb):
    nb.metadata.clear()
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    nb.metadata["language_info"] = {"name": "python"}


NOTEBOOKS = {
    "first_private_model.ipynb": first_private_model,
    "tuning_epsilon_with_a_budget.ipynb": tuning_with_a_budget,
}


def build(name, run=True):
    """The notebook ``name`` from its cells, executed unless ``run`` is false."""
    nb = new_notebook(cells=NOTEBOOKS[name]())
    _set_metadata(nb)
    if run:
        execute(nb)
    nbformat.validate(nb)
    return nb


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-execute", action="store_true", help="write the sources only")
    parser.add_argument("names", nargs="*", help=f"notebooks to write (default: {list(NOTEBOOKS)})")
    args = parser.parse_args(argv)
    for name in args.names or NOTEBOOKS:
        nb = build(name, run=not args.no_execute)
        path = HERE / name
        nbformat.write(nb, path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
