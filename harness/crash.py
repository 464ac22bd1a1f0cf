"""Lição 6: quedas sob encomenda. ``CRASH_AFTER=rótulo:n`` derruba o processo na n-ésima vez
que a execução passa pelo ponto ``rótulo``.

Sem ``CRASH_AFTER`` definida, ``crash_point`` só conta as passagens: os pontos podem ficar
no código de produção. O modo da queda vem de ``CRASH_MODE``:

- (ausente) ``SimulatedCrash``: uma exceção que só ``main()`` captura, saindo com 137;
- ``kill``: um SIGKILL de verdade, que nenhum ``except`` e nenhum ``finally`` interceptam;
- ``stop``: um SIGSTOP, o processo congela (como numa pausa longa da máquina virtual) e só
  continua com SIGCONT. Serve para mostrar um worker que acorda depois de perder a posse.
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
CRASH_MODES = ("exception", "kill", "stop")

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


def crash_mode():
    """O modo pedido em CRASH_MODE; um valor desconhecido é um erro claro, não uma queda silenciosa."""
    mode = os.environ.get("CRASH_MODE") or "exception"
    if mode not in CRASH_MODES:
        raise ValueError(f"CRASH_MODE: modo desconhecido {mode!r}; use um de {', '.join(CRASH_MODES)}")
    return mode


def check_crash_variables():
    """Confere CRASH_AFTER e CRASH_MODE antes da execução: um erro de digitação não vira queda no meio."""
    spec = os.environ.get("CRASH_AFTER")
    if spec:
        parse_crash_after(spec)
        crash_mode()


def crash_point(label):
    """Conta a passagem por ``label`` e cai se esta for a passagem pedida em CRASH_AFTER."""
    if label not in CRASH_LABELS:
        raise ValueError(f"crash_point: rótulo desconhecido {label!r}; use um de {', '.join(CRASH_LABELS)}")
    _passes[label] += 1
    spec = os.environ.get("CRASH_AFTER")
    if not spec:
        return
    target, n = parse_crash_after(spec)
    if label != target or _passes[label] != n:
        return
    mode = crash_mode()
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)  # congela aqui; com SIGCONT, segue a partir daqui
        return
    raise SimulatedCrash(f"queda simulada em {label} (passagem {n})")


def crash_counts():
    """Quantas vezes este processo passou por cada rótulo (para montar a matriz de quedas)."""
    return {label: _passes[label] for label in CRASH_LABELS}


def reset_crash_counts():
    """Zera as contagens (cada processo novo já começa do zero; útil dentro de um notebook)."""
    _passes.clear()
