"""Write tiny model files with the hepbdt on PYTHONPATH (tests/data/old_models fixtures)."""
import sys
import warnings

import numpy as np

from hepbdt import BDTClassifier as C
from hepbdt import BDTRegressor as R

warnings.simplefilter("ignore")

out, tag = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(3)
n = 600
X = rng.normal(0, 1, (n, 3)).astype(np.float32)
X[:, 2] = np.round(X[:, 2] * 2) / 2
y = (X[:, 0] - 0.5 * X[:, 1] + rng.normal(0, 0.8, n) > 0).astype(int)
X[rng.random(n) < 0.1, 1] = np.nan
y3 = np.digitize(X[:, 0] + rng.normal(0, 0.5, n), [-0.5, 0.5])
yr = 2 * X[:, 0] + X[:, 2] + rng.normal(0, 0.3, n)
kw = dict(n_trees=3, max_depth=2, random_state=1, max_bins=16)
jobs = {"gradient": lambda: C(boosting="gradient", **kw).fit(X, y),
        "newton": lambda: C(boosting="newton", **kw).fit(X, y),
        "adaboost": lambda: C(boosting="adaboost", **kw).fit(X, y),
        "adaboost_noyesno": lambda: C(boosting="adaboost", use_yes_no_leaf=False, **kw).fit(X, y),
        "realadaboost": lambda: C(boosting="realadaboost", **kw).fit(X, y),
        "regressor_absolute": lambda: R(boosting="gradient", loss="absolute", **kw).fit(X, yr),
        "multiclass_newton": lambda: C(boosting="newton", **kw).fit(X, y3),
        "multiclass_samme": lambda: C(boosting="adaboost", **kw).fit(X, y3),
        "leafwise": lambda: C(boosting="newton", n_trees=3, max_depth=4, max_leaves=5,
                               random_state=1, max_bins=16).fit(X, y)}
for name, job in jobs.items():
    try:
        job().save(f"{out}/{tag}_{name}.json")
        print("OK", name)
    except Exception as exc:
        print("FAIL", name, type(exc).__name__, str(exc)[:100])
