"""Tarefas roteirizadas (cenários): a tarefa, os arquivos do mundo e a fila de respostas do modelo.

Ficam em ``harness/scenarios/NOME.json`` para que lições, testes e a linha de
comando rodem exatamente a mesma história.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from harness.tools import Workspace

SCENARIOS_DIR = Path(__file__).parent / "scenarios"


@dataclass
class Scenario:
    name: str
    task: str
    responses: list[dict]
    files: dict[str, str] = field(default_factory=dict)
    description: str = ""

    def make_workspace(self, root) -> Workspace:
        """Cria o mundo do cenário em ``root`` (arquivos na sandbox, caixa de saída vazia)."""
        workspace = Workspace(root)
        workspace.add_files(self.files)
        return workspace


def list_scenarios() -> list[str]:
    return sorted(path.stem for path in SCENARIOS_DIR.glob("*.json"))


def load_scenario(name: str) -> Scenario:
    path = SCENARIOS_DIR / f"{name}.json"
    if not path.exists():
        raise KeyError(f"cenário desconhecido: {name!r}; disponíveis: {', '.join(list_scenarios())}")
    data = json.loads(path.read_text(encoding="utf-8"))
    return Scenario(
        name=data["name"],
        task=data["task"],
        responses=data["responses"],
        files=data.get("files", {}),
        description=data.get("description", ""),
    )


def reading_loop_responses(turns: int) -> list[dict]:
    """Um modelo que nunca encerra: lê um arquivo por turno, ``turns`` vezes, e só então conclui.

    Serve para mostrar o teto MAX_TURNS em ação e para medir custos em execuções longas.
    """
    responses = [
        {
            "content": [{"type": "tool_use", "id": f"toolu_loop{turn:04d}", "name": "list_dir",
                         "input": {"path": "."}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 300 + 20 * turn, "output_tokens": 25},
        }
        for turn in range(turns)
    ]
    responses.append({
        "content": [{"type": "text", "text": "Terminei de olhar a pasta."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 300 + 20 * turns, "output_tokens": 12},
    })
    return responses
