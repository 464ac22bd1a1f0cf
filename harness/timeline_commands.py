"""Lição 5 na linha de comando: rebobinar e bifurcar a pasta de uma execução.

``python -m harness rewind`` e ``fork`` chamam ``rewind_to`` e ``fork_from`` com o que uma
execução da lição 6 pede a mais. A rebobinagem confere tudo antes e depois toma a posse, para
nenhum worker gravar a mesma pasta enquanto a cena troca. A bifurcação leva uma cópia do
mundo do cenário (``world/``), que as ferramentas de leitura da nova linha vão consultar; em
dry-run, nada é escrito nem na caixa de saída da original nem na da cópia.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from harness.lifecycle import acquire_lease, fenced, release_lease
from harness.runner import WORLD_DIR
from harness.timeline import TimelineError, fork_from, fork_source, read_point, rewind_scene, rewind_to, scene_only

# --to 2 (o último ponto do turno 2), --to 2-A ou --to 2-B (um ponto específico)
POINT_SPEC = re.compile(r"(\d+)(?:-([AB]))?")


def parse_point_spec(text):
    """``"2" -> (2, None)``, ``"2-A" -> (2, "A")``; qualquer outra coisa é TimelineError."""
    match = POINT_SPEC.fullmatch(text.strip().upper())
    if match is None:
        raise TimelineError(f"--to {text!r} não é um ponto: use TURNO, TURNO-A ou TURNO-B (por exemplo 2 ou 2-A)")
    return int(match.group(1)), match.group(2)


def require_run_dir(run_dir):
    if not Path(run_dir).is_dir():
        raise TimelineError(f"{run_dir} não existe: não há execução para rebobinar ou bifurcar")


def rewind_run(run_dir, turn, point=None):
    """``rewind_to`` sob a posse da execução.

    A cena é conferida antes (um pedido impossível não toca nem no lease.json) e a rebobinagem
    acontece com o token de cerca conferido: com um worker rodando, LeaseHeld e nada muda.
    """
    require_run_dir(run_dir)
    rewind_scene(run_dir, turn, point)
    lease = acquire_lease(run_dir, owner=f"{os.getpid()}:rebobinar")
    try:
        with fenced(lease):
            return rewind_to(run_dir, turn, point)
    finally:
        release_lease(lease)


def fork_preview(run_dir, turn, new_run_dir, point=None):
    """O que ``fork_run`` faria (o ponto e a cena copiados), sem criar nada."""
    require_run_dir(run_dir)
    path, parent = fork_source(run_dir, turn, new_run_dir, point)
    return path, parent, scene_only(read_point(path))


def fork_run(run_dir, turn, new_run_dir, point=None):
    """``fork_from`` e, se a original tem um mundo de cenário, uma cópia dele na pasta nova."""
    require_run_dir(run_dir)
    info = fork_from(run_dir, turn, new_run_dir, point)
    world = Path(run_dir) / WORLD_DIR
    if world.is_dir():
        shutil.copytree(world, Path(new_run_dir) / WORLD_DIR)
    return info
