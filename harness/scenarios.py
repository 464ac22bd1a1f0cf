"""Tarefas roteirizadas (cenários): a tarefa, os arquivos do mundo e a fila de respostas do modelo.

Ficam em ``harness/scenarios/NOME.json`` para que lições, testes e a linha de
comando rodem exatamente a mesma história.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from harness.run_paths import RunPathError, relative_parts
from harness.tools import Workspace

SCENARIOS_DIR = Path(__file__).parent / "scenarios"
# Um cenário é escolhido pelo NOME, entre os que o curso traz: nunca um caminho.
SCENARIO_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


class ScenarioError(ValueError):
    """Um nome que não é de um cenário do curso, ou um arquivo de cenário ilegível: a mensagem diz qual."""


def scenario_files_problem(files):
    """Por que os ``files`` de um cenário não servem (um nome que sairia da sandbox...); None se servem."""
    if not isinstance(files, dict):
        return f"'files' precisa ser um objeto {{nome: texto}}, não {type(files).__name__}"
    for name, text in files.items():
        try:
            relative_parts(name, "nome de arquivo")
        except RunPathError as error:
            return f"arquivo {error.filename}: {error.problem}"
        if not relative_parts(name):
            return f"arquivo {name!r}: não nomeia um arquivo"
        if not isinstance(text, str):
            return f"arquivo {name}: o conteúdo precisa ser texto"
    return None


@dataclass
class Scenario:
    name: str
    task: str
    responses: list[dict]
    files: dict[str, str] = field(default_factory=dict)
    description: str = ""

    def make_workspace(self, root, boundary=None) -> Workspace:
        """Cria o mundo do cenário em ``root`` (arquivos na sandbox, caixa de saída vazia).

        Os nomes dos arquivos são conferidos de novo aqui, mesmo num cenário do curso: nenhum
        deles escreve fora da sandbox.
        """
        problem = scenario_files_problem(self.files)
        if problem:
            raise ScenarioError(f"cenário {self.name}: {problem}")
        workspace = Workspace(root, boundary)
        workspace.add_files(self.files)
        return workspace


def list_scenarios() -> list[str]:
    return sorted(path.stem for path in SCENARIOS_DIR.glob("*.json") if SCENARIO_NAME.fullmatch(path.stem))


def is_scenario_name(name) -> bool:
    """``name`` é o nome de um cenário do curso (não um caminho, não um nome inventado)?"""
    return isinstance(name, str) and SCENARIO_NAME.fullmatch(name) is not None and name in list_scenarios()


def shown_name(name) -> str:
    text = repr(name)
    return text if len(text) <= 80 else text[:77] + "..."


def load_scenario(name: str) -> Scenario:
    """O cenário ``name``, lido de ``harness/scenarios/``; ScenarioError para qualquer outra coisa."""
    if not is_scenario_name(name):
        raise ScenarioError(f"cenário desconhecido: {shown_name(name)} (um cenário é um nome, nunca um caminho); "
                            f"disponíveis: {', '.join(list_scenarios())}")
    path = SCENARIOS_DIR / f"{name}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        where = f"linha {error.lineno}, coluna {error.colno}" if isinstance(error, json.JSONDecodeError) \
            else type(error).__name__
        raise ScenarioError(f"{path}: arquivo de cenário ilegível ({where}); restaure-o do repositório") from None
    if not isinstance(data, dict) or not all(isinstance(data.get(key), kind) for key, kind in
                                             (("name", str), ("task", str), ("responses", list))):
        raise ScenarioError(f"{path}: esperava um objeto com name, task (textos) e responses (lista)")
    problem = scenario_files_problem(data.get("files", {}))
    if problem:
        raise ScenarioError(f"{path}: {problem}")
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
