"""Read the student's notebook without ever writing it, and explain why when it is unusable."""
from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import NamedTuple

import nbformat
from nbformat.warnings import MissingIDFieldWarning

from grader.core.errors import os_reason
from grader.core.results import INVALID_NOTEBOOK, NOTEBOOK_UNREADABLE


class NotebookProblem(NamedTuple):
    message: str  # Portuguese, ready to show
    kind: str  # INVALID_NOTEBOOK (the content) or NOTEBOOK_UNREADABLE (the file itself)


def read_notebook(path: Path) -> tuple[nbformat.NotebookNode | None, NotebookProblem | None]:
    """(notebook, None) or (None, why it is unusable). The file is only read."""
    path = Path(path)
    shown = path.name
    if not path.exists():
        return None, NotebookProblem(
            f"O notebook {shown} não foi encontrado ({path}). Confira o caminho; o padrão é "
            "exercises/exercise-N.ipynb na pasta do curso.",
            NOTEBOOK_UNREADABLE,
        )
    if path.is_dir():
        return None, NotebookProblem(f"{shown} é uma pasta, não um notebook (.ipynb).", NOTEBOOK_UNREADABLE)
    try:
        raw = path.read_bytes()
    except OSError as error:
        return None, NotebookProblem(f"Não consegui ler {shown}: {os_reason(error)}.", NOTEBOOK_UNREADABLE)
    notebook, message = _parse(raw, shown)
    return notebook, None if message is None else NotebookProblem(message, INVALID_NOTEBOOK)


# The json module's messages (CPython's Modules/_json.c and json/decoder.py), said in Portuguese.
_JSON_PROBLEMS = {
    "Expecting value": "esperava um valor",
    "Expecting property name enclosed in double quotes": "esperava um nome entre aspas duplas",
    "Expecting ',' delimiter": "faltou uma vírgula",
    "Expecting ':' delimiter": "faltaram os dois-pontos",
    "Unterminated string starting at": "um texto entre aspas que nunca fecha",
    "Invalid control character at": "um caractere de controle dentro de um texto",
    "Invalid \\escape": "uma barra invertida inválida",
    "Invalid \\uXXXX escape": "um \\u sem quatro dígitos hexadecimais",
    "Extra data": "há mais coisa depois do fim do JSON",
}


def json_problem_words(message: str) -> str:
    """``: `` and json's problem in Portuguese, or nothing for a message this table does not know."""
    words = _JSON_PROBLEMS.get(message)
    return f": {words}" if words else ""


def _parse(raw: bytes, shown: str) -> tuple[nbformat.NotebookNode | None, str | None]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, f"{shown} não é um notebook válido: o arquivo não é texto UTF-8 (é binário?)."
    if not text.strip():
        return None, f"{shown} está vazio: não é um notebook válido. Salve o notebook de novo no Jupyter."
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        return None, (
            f"{shown} não é um notebook válido: o conteúdo não é JSON (linha {error.lineno}, "
            f"coluna {error.colno}{json_problem_words(error.msg)}). Um .ipynb salvo pelo Jupyter é JSON; o arquivo "
            "foi editado à mão ou salvo em outro formato?"
        )
    except RecursionError:  # thousands of [ or { inside one another: json gives up on the depth
        return None, (
            f"{shown} não é um notebook válido: o JSON tem listas ou objetos uns dentro dos outros em "
            "profundidade demais para ser lido. Um .ipynb salvo pelo Jupyter nunca é assim; salve o "
            "notebook de novo no Jupyter."
        )
    if not isinstance(data, dict) or "cells" not in data or "nbformat" not in data:
        return None, (
            f"{shown} é JSON, mas não é um notebook do Jupyter (faltam os campos 'cells' e "
            "'nbformat'). Confira se escolheu o arquivo certo."
        )
    try:
        with warnings.catch_warnings():
            # A cell without an id (an older or hand-made notebook) is fine: nbformat adds one in
            # memory, and its English warning would only puzzle the student.
            warnings.simplefilter("ignore", MissingIDFieldWarning)
            notebook = nbformat.reads(text, as_version=4)
        nbformat.validate(notebook)
    except Exception as error:  # nbformat raises several kinds for a damaged file
        summary = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return None, f"{shown} é um notebook corrompido: {summary}. Salve-o de novo no Jupyter."
    return notebook, None
