"""evaluate-compatible module: `evaluate.load(srnets_lib.metrics.metric_path("weighted_f1"))`."""

import datasets
import evaluate

from srnets_lib.metrics import weighted_f1


class WeightedF1(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="weighted_f1 as in appendix B.1 of 'A Win-win Deal' (srnets_lib.metrics.weighted_f1)",
            citation="",
            inputs_description="predictions, references: class indices",
            features=datasets.Features({"predictions": datasets.Value("int64"),
                                        "references": datasets.Value("int64")}),
        )

    def _compute(self, predictions, references):
        return {"weighted_f1": weighted_f1(predictions, references)}
