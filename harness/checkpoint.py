"""Lição 2: gravar e ler a cena de execução (checkpoint.json) sem nunca deixar um arquivo rasgado."""
from __future__ import annotations

import json
import os
import tempfile

from harness.state_json import StateFileError, parse_state_json

CHECKPOINT_VERSION = 1

# Campo -> tipo(s) aceitos. O checkpoint é validado antes de qualquer uso.
CHECKPOINT_FIELDS = {
    "version": int,
    "task": str,
    "turns": int,
    "tokens_used": int,
    "messages": list,
    "pending_tool_use": (list, type(None)),
}


class CheckpointError(Exception):
    """O checkpoint existe, mas não dá para confiar nele: a mensagem diz por quê."""


def write_json_atomic(path, data):
    """Grava JSON de forma atômica: ou o arquivo antigo inteiro, ou o novo inteiro.

    1. escreve tudo num arquivo temporário na MESMA pasta (os.replace só é
       atômico dentro de um mesmo sistema de arquivos), de nome único: mkstemp o
       cria com O_CREAT | O_EXCL | O_NOFOLLOW, então um nome que já existe (um link
       plantado para fora da pasta, o temporário de outro gravador) nunca é aberto;
    2. flush + fsync: os bytes saem do buffer do Python e do cache do sistema;
    3. os.replace troca o nome de uma vez (se algo falha antes, o temporário sai);
    4. fsync da pasta: a própria troca de nome sobrevive a uma queda de energia.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with open(descriptor, "w", encoding="utf-8") as file:
            json.dump(data, file, ensure_ascii=False, indent=1)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    directory = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def save_checkpoint(state, path):
    """Grava o estado de execução inteiro em ``path`` (JSON, nunca pickle)."""
    write_json_atomic(path, state)


def load_checkpoint(path):
    """Lê o checkpoint; None só quando ele não existe. Qualquer outro problema é um erro claro."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as error:
        # Uma gravação cortada no meio de um "ç" deixa bytes que nem chegam a ser texto.
        raise CheckpointError(
            f"{path}: o arquivo não é texto UTF-8 válido (gravação interrompida?): {error.reason}"
        ) from None
    if not text.strip():
        raise CheckpointError(f"{path}: arquivo vazio (gravação interrompida?)")
    try:
        # JSON truncado, mas também o que o json.loads aceitaria e nada depois aguentaria:
        # milhares de "[" seguidos, um inteiro de milhares de dígitos, NaN.
        data = parse_state_json(text, path)
    except StateFileError as error:
        raise CheckpointError(str(error)) from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: esperava um objeto JSON, encontrei {type(data).__name__}")
    # Só um número inteiro é "outra versão"; um "1" em texto cai no erro de tipo logo abaixo.
    if type(data.get("version")) is int and data["version"] != CHECKPOINT_VERSION:
        raise CheckpointError(
            f"{path}: checkpoint de outra versão: o arquivo é v{data['version']}, "
            f"este código lê v{CHECKPOINT_VERSION}"
        )
    for field, expected in CHECKPOINT_FIELDS.items():
        if field not in data:
            raise CheckpointError(f"{path}: campo obrigatório ausente: {field}")
        value = data[field]
        # bool é subclasse de int em Python; um turns=True não é um número de turnos.
        if not isinstance(value, expected) or isinstance(value, bool):
            raise CheckpointError(
                f"{path}: campo '{field}' com tipo errado: {type(value).__name__}"
            )
    if not data["messages"]:
        raise CheckpointError(f"{path}: 'messages' está vazio; toda execução começa pela tarefa")
    return data
