"""The runs behind a set of requests, each once, dependencies first, with what each must leave
behind: its own requests merged with what the runs that depend on it read (`needs`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from srnets_lib.settings.config import RunConfig
from srnets_lib.settings.request import Request


@dataclass
class Node:
    config: RunConfig
    request: Request

    @property
    def key(self) -> str:
        return self.config.key()


def needs(config: RunConfig, default: Request) -> list[tuple[RunConfig, Request]]:
    """The one rule for what a run's dependencies keep: a run started from another's weights
    reads its selected weights (or those after init_step steps, section 5.1); the confreg
    teacher's weights are read for its predictions; a subnetwork fine-tuned in isolation reads
    the source run's mask, which every pruning run keeps. None of them reads an IMP level's scores."""
    wanted, default = [], replace(default, levels=())
    if config.init_from is not None:
        if config.init_step is not None:
            wanted.append((config.init_from, replace(default, keep_steps=(config.init_step,))))
        else:
            wanted.append((config.init_from, replace(default, weights=True)))
    if config.teacher is not None:
        wanted.append((config.teacher, replace(default, weights=True)))
    if config.mask_from is not None:
        wanted.append((config.mask_from, default))
    return wanted


class RunGraph:
    def __init__(self, default: Request | None = None):
        self.default = default or Request()
        self.nodes: dict[str, Node] = {}  # dependencies before the runs that read them

    def add(self, config: RunConfig, request: Request | None = None) -> Node:
        """Add a run (and its dependencies) with what it is asked for; requests merge."""
        request = request or self.default
        for dependency, wanted in needs(config, self.default):
            self.add(dependency, wanted)
        key = config.key()
        if key in self.nodes:
            self.nodes[key].request = self.nodes[key].request.merge(request)
        else:
            self.nodes[key] = Node(config, request)
        return self.nodes[key]

    def closure(self, configs) -> "RunGraph":
        """The runs of `configs` and every run they depend on, with the requests merged here, in
        this graph's order (dependencies first)."""
        wanted: set[str] = set()

        def visit(config):
            if config.key() not in wanted:
                wanted.add(config.key())
                for dependency in config.dependencies():
                    visit(dependency)

        for config in configs:
            visit(config)
        part = RunGraph(self.default)
        part.nodes = {key: node for key, node in self.nodes.items() if key in wanted}
        return part

    def dependencies(self, node: Node) -> list[str]:
        return [d.key() for d in node.config.dependencies()]

    def __iter__(self):
        return iter(list(self.nodes.values()))

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, key: str) -> Node:
        return self.nodes[key]
