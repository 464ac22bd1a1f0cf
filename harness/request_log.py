"""O registro dos pedidos que o endpoint offline recebe: uma linha JSON por pedido.

Vários processos escrevem no mesmo arquivo, um depois do outro (a execução retomada continua
o registro da que morreu). Um SIGKILL no meio da escrita pode deixar a última linha cortada:
no Linux, uma escrita num arquivo comum que atravessa uma página é interrompida por um sinal
fatal e fica pela metade. Um pedido cortado é um pedido cujo corpo não chegou inteiro ao
servidor, e um servidor HTTP não responde a um corpo incompleto; por isso quem lê o registro
pula a linha cortada, e quem escreve depois começa numa linha nova para não colar nela.
"""
from __future__ import annotations

import json
import os
from pathlib import Path


def append_request(log_path, body: dict) -> None:
    """Acrescenta um pedido ao registro, numa linha só, sem colar numa linha cortada antes."""
    record = json.dumps({"pid": os.getpid(), "body": body}, ensure_ascii=False).encode("utf-8") + b"\n"
    descriptor = os.open(log_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(descriptor).st_size
        if size and os.pread(descriptor, 1, size - 1) != b"\n":
            record = b"\n" + record  # o processo anterior morreu no meio da linha dele
        while record:  # uma escrita só, salvo escrita curta: linhas de processos não se misturam
            record = record[os.write(descriptor, record):]
    finally:
        os.close(descriptor)


def read_requests(log_path) -> list[dict]:
    """Cada pedido registrado por inteiro, em ordem, como {"pid", "body"}; linhas cortadas ficam de fora."""
    path = Path(log_path)
    if not path.exists():
        return []
    requests = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # vazia ou cortada por um SIGKILL: o servidor não chegou a ler esse pedido
        if isinstance(record, dict) and isinstance(record.get("body"), dict):
            requests.append(record)
    return requests
