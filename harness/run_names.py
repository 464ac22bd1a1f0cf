"""O nome de uma execução no PostgreSQL: uma chave de linha que o worker também usa como nome de pasta.

Por isso ele é conferido onde entra (``submit --run``, ``--run`` de qualquer comando) e de
novo onde é usado (o worker, ao pegar uma linha que alguém pode ter plantado direto no banco):
letras, dígitos, ``.``, ``_`` e ``-``, até ``MAX_RUN_NAME`` caracteres, sem começar por ``.``
(nada de ``.``, ``..`` ou pasta oculta) nem por ``-`` (não vira uma opção de comando).
"""
from __future__ import annotations

import re

MAX_RUN_NAME = 100
RUN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,%d}" % (MAX_RUN_NAME - 1))
# O mesmo padrão na sintaxe do PostgreSQL (~), para a fila nem oferecer uma linha de nome ruim.
RUN_NAME_SQL = "^[A-Za-z0-9_][A-Za-z0-9._-]{0,%d}$" % (MAX_RUN_NAME - 1)


def run_name_problem(name):
    """Por que ``name`` não serve como nome de execução; None se serve."""
    if not isinstance(name, str) or not name:
        return "o nome de execução precisa ser um texto não vazio"
    shown = repr(name) if len(name) <= 60 else repr(name[:57] + "...")
    if len(name) > MAX_RUN_NAME:
        return f"nome de execução com {len(name)} caracteres ({shown}); o limite é {MAX_RUN_NAME}"
    if RUN_NAME.fullmatch(name) is None:
        return (f"nome de execução inválido: {shown}; use só letras, dígitos, '.', '_' e '-', sem começar por "
                f"'.' ou '-' (um nome nunca é um caminho)")
    return None


def is_run_name(name):
    return run_name_problem(name) is None
