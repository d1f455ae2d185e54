"""evaluate-compatible module: `evaluate.load(srnets_lib.metrics.metric_path("accuracy"))`."""

import datasets
import evaluate

from srnets_lib.metrics import accuracy


class Accuracy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="accuracy as in appendix B.1 of 'A Win-win Deal' (srnets_lib.metrics.accuracy)",
            citation="",
            inputs_description="predictions, references: class indices",
            features=datasets.Features({"predictions": datasets.Value("int64"),
                                        "references": datasets.Value("int64")}),
        )

    def _compute(self, predictions, references):
        return {"accuracy": accuracy(predictions, references)}
