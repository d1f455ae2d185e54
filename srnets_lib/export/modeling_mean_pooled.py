"""A BERT sequence classifier that reads the masked mean of the last token states instead of the
[CLS] state, then BERT's pooler (dense + tanh), dropout and classifier: what srnets trains with
`pooling: mean` (the packaged all-MiniLM-L6-v2 was trained as a sentence embedder with mean
pooling). Parameter names are BertForSequenceClassification's, so the weights load unchanged.

This file is copied beside the exported weights and loaded by transformers alone
(`AutoModelForSequenceClassification.from_pretrained(folder, trust_remote_code=True)`); it
imports nothing but torch and transformers. Its own model_type makes loading without
trust_remote_code fail loudly instead of falling back to [CLS] pooling.
"""

import torch
from transformers import BertConfig, BertForSequenceClassification
from transformers.modeling_outputs import SequenceClassifierOutput


class MeanPooledBertConfig(BertConfig):
    model_type = "bert_mean_pooled"


class BertMeanPooledForSequenceClassification(BertForSequenceClassification):
    config_class = MeanPooledBertConfig

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None, **kwargs):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        states = self.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                           return_dict=True).last_hidden_state
        weights = attention_mask.unsqueeze(-1).to(states.dtype)
        mean = (states * weights).sum(1) / weights.sum(1).clamp_min(1.0)
        pooled = self.bert.pooler.activation(self.bert.pooler.dense(mean))
        logits = self.classifier(self.dropout(pooled))
        loss = None
        if labels is not None:
            if self.config.num_labels == 1:
                loss = torch.nn.functional.mse_loss(logits.squeeze(-1), labels.float())
            else:
                loss = torch.nn.functional.cross_entropy(logits, labels)
        return SequenceClassifierOutput(loss=loss, logits=logits)
