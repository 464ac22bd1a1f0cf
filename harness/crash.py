"""Lição 6: quedas sob encomenda. ``CRASH_AFTER=rótulo:n`` derruba o processo na n-ésima vez
que a execução passa pelo ponto ``rótulo``.

Sem ``CRASH_AFTER`` definida, ``crash_point`` não faz nada: os pontos podem ficar no
código de produção. Com ``CRASH_MODE=kill`` a queda é um SIGKILL de verdade, que nenhum
``except`` e nenhum ``finally`` conseguem interceptar.
"""
from __future__ import annotations

import os
import signal
from collections import Counter

CRASH_LABELS = (
    "after-model-response",   # o modelo respondeu, nada foi gravado ainda
    "after-save-A",           # ponto de gravação A escrito
    "after-tool-run",         # a ferramenta rodou, o efeito ainda não foi registrado
    "after-effect-write",     # o livro-razão registrou o efeito
    "after-save-B",           # ponto de gravação B escrito
    "mid-checkpoint-write",   # no meio da gravação do checkpoint (o .tmp existe, o rename não)
)

EXIT_CODE_KILLED = 137  # 128 + 9 (SIGKILL): o código que um processo morto pelo kernel deixa

_passes: Counter = Counter()


class SimulatedCrash(Exception):
    """Uma queda simulada. Só ``main()`` a captura, para sair com 137 como uma morte real."""


def parse_crash_after(spec):
    """``"after-save-A:2"`` -> ``("after-save-A", 2)``; um valor malformado é um erro claro."""
    label, _, count = spec.partition(":")
    if label not in CRASH_LABELS:
        raise ValueError(f"CRASH_AFTER: rótulo desconhecido {label!r}; use um de {', '.join(CRASH_LABELS)}")
    try:
        n = int(count) if count else 1
    except ValueError:
        raise ValueError(f"CRASH_AFTER: contagem inválida {count!r}; use rótulo:n com n >= 1") from None
    if n < 1:
        raise ValueError(f"CRASH_AFTER: contagem inválida {n}; use rótulo:n com n >= 1")
    return label, n


def crash_point(label):
    """Conta a passagem por ``label`` e cai se esta for a passagem pedida em CRASH_AFTER."""
    spec = os.environ.get("CRASH_AFTER")
    if not spec:
        return
    target, n = parse_crash_after(spec)
    if label != target:
        return
    _passes[label] += 1
    if _passes[label] == n:
        if os.environ.get("CRASH_MODE") == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise SimulatedCrash(f"queda simulada em {label} (passagem {n})")


def reset_crash_counts():
    """Zera as contagens (cada processo novo já começa do zero; útil dentro de um notebook)."""
    _passes.clear()
