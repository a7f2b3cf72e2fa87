"""Writes early_stopped_forest_1_5_2.json, forest_1_5_2.json and their margins (XGBoost 1.5.2).

An early-stopped binary:logistic model of two trees a round (num_parallel_tree=2), which
XGBoost 1.5 writes without num_parallel_tree (only best_ntree_limit says the rounds' size),
and XGBoost's own margins of 40 events: of the rounds up to best_iteration (computed in the
training session, where the booster knows its rounds) and of every tree.
"""

import json
import sys

import numpy as np
import xgboost as xgb

out = sys.argv[1]
rng = np.random.default_rng(1)
X = rng.normal(size=(1200, 3)).astype(np.float32)
X[rng.random(X.shape) < 0.1] = np.nan
y = (np.nan_to_num(X[:, 0]) + rng.normal(size=1200) > 0.2).astype(int)
params = {"objective": "binary:logistic", "eta": 0.3, "max_depth": 2, "nthread": 1,
          "num_parallel_tree": 2, "subsample": 0.8, "eval_metric": "logloss", "seed": 3}
dtrain, dvalid = xgb.DMatrix(X[:600], y[:600]), xgb.DMatrix(X[600:], y[600:])
booster = xgb.train(params, dtrain, 200, evals=[(dvalid, "valid")], early_stopping_rounds=3,
                    verbose_eval=False)
booster.save_model(f"{out}/early_stopped_forest_1_5_2.json")
Xe = X[:40]
best = booster.predict(xgb.DMatrix(Xe), output_margin=True,
                       iteration_range=(0, booster.best_iteration + 1))
every = booster.predict(xgb.DMatrix(Xe), output_margin=True)
with open(f"{out}/early_stopped_forest_1_5_2.margins.json", "w") as handle:
    json.dump({"xgboost": xgb.__version__, "best_iteration": booster.best_iteration,
               "best_ntree_limit": booster.best_ntree_limit,
               "X": [[None if np.isnan(v) else float(v) for v in row] for row in Xe],
               "best_margin": best.astype(float).tolist(),
               "every_margin": every.astype(float).tolist()}, handle)

# Not early-stopped: XGBoost 1.5 writes best_iteration (the last round) and best_ntree_limit
# into every model it trains.
forest = xgb.train({"objective": "binary:logistic", "eta": 0.5, "max_depth": 2, "nthread": 1,
                    "num_parallel_tree": 3, "subsample": 0.7, "seed": 3}, dtrain, 4)
forest.save_model(f"{out}/forest_1_5_2.json")
with open(f"{out}/forest_1_5_2.margins.json", "w") as handle:
    json.dump({"xgboost": xgb.__version__,
               "X": [[None if np.isnan(v) else float(v) for v in row] for row in Xe],
               "margin": forest.predict(xgb.DMatrix(Xe), output_margin=True).astype(float).tolist()},
              handle)
