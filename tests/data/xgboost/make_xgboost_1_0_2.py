"""Writes logitraw_1_0_2.json and its margins (run with XGBoost 1.0.2, numpy < 2).

A binary:logitraw model at the default base_score 0.5, which XGBoost before 1.3.1 turned
into the margin logit(0.5) = 0 (later versions take base_score as the margin itself), and
XGBoost 1.0.2's own margins of 40 events.
"""

import json
import sys

import numpy as np
import xgboost as xgb

out = sys.argv[1]
rng = np.random.default_rng(7)
X = rng.normal(size=(800, 3)).astype(np.float32)
X[rng.random(X.shape) < 0.1] = np.nan
y = (np.nan_to_num(X[:, 0]) + rng.normal(size=800) > 0.4).astype(int)
booster = xgb.train({"objective": "binary:logitraw", "max_depth": 2, "eta": 0.3, "nthread": 1},
                    xgb.DMatrix(X, y), 5)
booster.save_model(f"{out}/logitraw_1_0_2.json")
Xe = X[:40]
with open(f"{out}/logitraw_1_0_2.margins.json", "w") as handle:
    json.dump({"xgboost": xgb.__version__,
               "X": [[None if np.isnan(v) else float(v) for v in row] for row in Xe],
               "margin": booster.predict(xgb.DMatrix(Xe), output_margin=True).astype(float).tolist()},
              handle)
