"""Lição 5 na linha de comando: rebobinar e bifurcar uma execução, em qualquer armazenamento.

``python -m harness rewind`` e ``fork`` fazem com o armazenamento da execução (arquivos, SQLite
ou PostgreSQL) o que ``rewind_to`` e ``fork_from`` fazem com uma pasta, só pelo contrato
``RunStore``: ``find_point`` acha o ponto de ``--to``, ``rewound_state`` e ``rewind`` rebobinam,
``fork`` bifurca. O que cada armazenamento precisa para aguentar uma queda no meio fica dentro
dele: nos arquivos, o plano da rebobinagem (rewind.json) e a pasta de obra da bifurcação; num
banco, uma transação.

A rebobinagem confere tudo antes e depois toma a posse, para nenhum worker gravar a mesma
execução enquanto a cena troca. A bifurcação cria outra execução, em dry-run: run_id próprio,
o cenário da original e o status que o ponto copiado tinha.
"""
from __future__ import annotations

import os
import re

from harness.timeline import TimelineError

# --to 2 (o último ponto do turno 2), --to 2-A ou --to 2-B (um ponto específico)
POINT_SPEC = re.compile(r"(\d+)(?:-([AB]))?")


def parse_point_spec(text):
    """``"2" -> (2, None)``, ``"2-A" -> (2, "A")``; qualquer outra coisa é TimelineError."""
    match = POINT_SPEC.fullmatch(text.strip().upper())
    if match is None:
        raise TimelineError(f"--to {text!r} não é um ponto: use TURNO, TURNO-A ou TURNO-B (por exemplo 2 ou 2-A)")
    return int(match.group(1)), match.group(2)


def rewind_in_store(store, turn, point=None):
    """Volta a execução de ``store`` ao último ponto do turno ``turn`` (ou ao ponto ``point`` dele).

    Como na lição 5, só move estado: nenhuma ferramenta roda, chamadas pendentes continuam
    pendentes e a execução fica pausada, pronta para --resume. Tudo é lido e conferido antes
    (um pedido impossível não toca nem na posse); a troca acontece sob a posse, com o token
    conferido, e a cena é lida de novo já com a posse nas mãos. Devolve a cena gravada.
    """
    target = store.find_point(turn, point)
    store.rewound_state(target.id)
    lease = store.acquire_lease(owner=f"{os.getpid()}:rebobinar")
    try:
        return store.rewind(lease, target.id, store.rewound_state(target.id))
    finally:
        store.release_lease(lease)


def fork_in_store(store, turn, new_store, point=None, say=print):
    """Abre em ``new_store`` uma nova linha do tempo, em dry-run, a partir do ponto do turno ``turn``.

    A original só é lida. A nova registra a origem (parent) e começa a própria sequência pelo
    ponto copiado; chamadas pendentes vão pendentes, com os registros que a original tem delas
    (``inherited_receipts``), e a retomada as fecha pelo livro-razão, em dry-run.
    """
    return store.fork(store.find_point(turn, point), new_store, say=say)
