"""The scikit-learn protocol of hepbdt's estimators, without depending on scikit-learn.

Parameters (``get_params``/``set_params``, so ``clone`` works; ``fitted_params``, and
``resolved_growth`` for what "auto" tree shapes and learning rates mean), tags, metadata routing
(``set_fit_request``/``set_score_request``, so weighted fits and weighted scores work in
``cross_val_score`` and ``GridSearchCV``) and :class:`NotFittedError`. scikit-learn is
imported only by the methods that scikit-learn itself calls.
"""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Any

__all__ = ["NotFittedError", "SklearnProtocol", "not_fitted", "column_vector_warning", "fitted_params",
           "resolved_growth", "with_resolved_growth", "is_auto"]

_REQUEST_VALUES = (True, False, None)


class NotFittedError(ValueError, AttributeError, RuntimeError):
    """A method that needs a fitted model was called before ``fit``. When scikit-learn is
    in use the error is also its ``sklearn.exceptions.NotFittedError`` (and it stays the
    RuntimeError hepbdt raised before 0.2)."""


@functools.cache
def _with_sklearn(base: type) -> type:
    return type("NotFittedError", (NotFittedError, base), {"__module__": __name__})


def not_fitted(message: str) -> NotFittedError:
    """The error to raise before fit (scikit-learn's kind too, when scikit-learn is loaded)."""
    exceptions = sys.modules.get("sklearn.exceptions")
    cls = NotFittedError if exceptions is None else _with_sklearn(exceptions.NotFittedError)
    return cls(message)


def column_vector_warning() -> type[Warning]:
    """The warning for a column-vector y: scikit-learn's DataConversionWarning when it is
    loaded, else a UserWarning."""
    exceptions = sys.modules.get("sklearn.exceptions")
    return UserWarning if exceptions is None else exceptions.DataConversionWarning


def fitted_params(model: Any) -> dict[str, Any]:
    """The parameters ``model`` was fitted with (recorded by its fit or its load), whatever
    ``set_params`` changed since; ``get_params()`` when it records none (not fitted); {}
    for a model without parameters. Files, exports and reports describe the fitted trees
    with these: ``set_params`` after a fit acts on the next fit only."""
    recorded = getattr(model, "__dict__", {}).get("_fitted_params")
    if recorded is not None:
        return dict(recorded)
    return dict(model.get_params()) if hasattr(model, "get_params") else {}


# The classifier's trees under n_trees="auto" with its default gradient booster, where
# max_depth, max_leaves and learning_rate are all "auto" (none given): leaf-wise,
# AUTO_LEAVES leaves, no depth limit, learning rate AUTO_RATE, chosen on the panel of
# benchmarks/bench_defaults.py (README "The defaults, measured"; their trees grow on one
# thread, so a small fit keeps its time when the two cores of a small machine slow their
# messages to each other). Anywhere else "auto" is CLASSIFIER_DEPTH at CLASSIFIER_RATE,
# depth-wise: the defaults before, so that an integer n_trees, another booster or a given
# depth, leaf count or learning rate trains as it did. The regressor's are its defaults.
AUTO_LEAVES = 15
AUTO_RATE = 0.15
CLASSIFIER_DEPTH = 5
CLASSIFIER_RATE = 0.1
REGRESSOR_DEPTH = 4
REGRESSOR_RATE = 0.15


def resolved_growth(params: dict[str, Any], classifier: bool) -> tuple[Any, Any, Any]:
    """(max_depth, max_leaves, learning_rate) that estimator options ``params`` train with,
    each "auto" resolved (see AUTO_LEAVES); other values as given (unchecked)."""
    depth, leaves, rate = (params.get("max_depth"), params.get("max_leaves"),
                           params.get("learning_rate"))
    auto = (classifier and is_auto(depth) and is_auto(leaves) and is_auto(rate)
            and is_auto(params.get("n_trees", "auto"))
            and params.get("boosting", "gradient") == "gradient"
            and params.get("decorrelation") is None)
    if is_auto(depth):
        depth = None if auto else (CLASSIFIER_DEPTH if classifier else REGRESSOR_DEPTH)
    if is_auto(leaves):
        leaves = AUTO_LEAVES if auto else None
    if is_auto(rate):
        rate = AUTO_RATE if auto else (CLASSIFIER_RATE if classifier else REGRESSOR_RATE)
    return depth, leaves, rate


def with_resolved_growth(params: dict[str, Any], classifier: bool) -> dict[str, Any]:
    """A copy of ``params`` with max_depth, max_leaves and learning_rate resolved
    (``resolved_growth``): before n_trees="auto" is replaced by the rounds kept, which
    would turn the automatic tree shape into the depth-wise one."""
    params = dict(params)
    params["max_depth"], params["max_leaves"], params["learning_rate"] = resolved_growth(
        params, classifier)
    return params


def is_auto(value: Any) -> bool:
    """Whether an option is the string "auto" (an array compared with "auto" is no answer)."""
    return isinstance(value, str) and value == "auto"


class SklearnProtocol:
    """Parameters from the ``__init__`` signature, tags and metadata routing."""

    _estimator_type = ""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters as a dict."""
        return {k: getattr(self, k) for k in self._param_names()}

    def set_params(self, **params: Any) -> Any:
        """Set constructor parameters; unknown names are an error."""
        valid = self._param_names()
        for k, v in params.items():
            if k not in valid:
                raise ValueError(f"unknown parameter {k!r} for {type(self).__name__}; valid: {valid}")
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        defaults = {k: p.default for k, p in inspect.signature(type(self).__init__).parameters.items()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items() if defaults.get(k) != v]
        return f"{type(self).__name__}({', '.join(changed)})"

    def _multi_class_tag(self) -> bool:
        """Whether these options train more than two classes (scikit-learn's ``multi_class``
        tag); a classifier whose options are two-class only overrides it."""
        return self._estimator_type == "classifier"

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's tags: classification (of more than two classes where the options
        allow it) or regression, NaN allowed, dense only."""
        # scikit-learn is optional: only scikit-learn calls this
        from sklearn.utils import ClassifierTags, InputTags, RegressorTags, Tags, TargetTags

        is_clf = self._estimator_type == "classifier"
        multi_class = self._multi_class_tag()
        return Tags(estimator_type=self._estimator_type, target_tags=TargetTags(required=True),
                    input_tags=InputTags(allow_nan=True),
                    classifier_tags=ClassifierTags(multi_class=multi_class) if is_clf else None,
                    regressor_tags=RegressorTags() if not is_clf else None)

    # -- metadata routing -------------------------------------------------------------------
    def _set_request(self, method: str, sample_weight: Any) -> Any:
        if not (sample_weight in _REQUEST_VALUES or isinstance(sample_weight, str)):
            raise ValueError(f"sample_weight={sample_weight!r}: expected True, False, None or an "
                             "alias (str)")
        requests = dict(getattr(self, "_routing_requests", None) or {})
        requests[method] = sample_weight
        self._routing_requests = requests
        return self

    def __sklearn_clone__(self) -> Any:
        """A copy with the same parameters and metadata requests, unfitted (scikit-learn's
        ``clone``; the requests must survive cross-validation)."""
        # scikit-learn is optional: only scikit-learn calls this
        from sklearn.base import clone

        new = type(self)(**{k: clone(v, safe=False) for k, v in self.get_params().items()})
        if getattr(self, "_routing_requests", None):
            new._routing_requests = dict(self._routing_requests)
        return new

    def set_fit_request(self, *, sample_weight: Any = None) -> Any:
        """Whether ``fit`` takes ``sample_weight`` when scikit-learn routes metadata."""
        return self._set_request("fit", sample_weight)

    def set_score_request(self, *, sample_weight: Any = None) -> Any:
        """Whether ``score`` takes ``sample_weight`` when scikit-learn routes metadata."""
        return self._set_request("score", sample_weight)

    def get_metadata_routing(self) -> Any:
        """The metadata this estimator requests (scikit-learn's MetadataRequest)."""
        # scikit-learn is optional: only scikit-learn calls this
        from sklearn.utils.metadata_routing import MetadataRequest

        requests = getattr(self, "_routing_requests", None) or {}
        routing = MetadataRequest(owner=type(self).__name__)
        for method in ("fit", "score"):
            getattr(routing, method).add_request(param="sample_weight",
                                                 alias=requests.get(method))
        return routing
