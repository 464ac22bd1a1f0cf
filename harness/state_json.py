"""A leitura de todo JSON que o harness guarda: um arquivo da execução ou uma coluna do banco.

O que está numa pasta de execução ou numa linha do banco é entrada não confiável: alguém
pode ter editado, um disco pode ter estragado, uma gravação pode ter sido cortada. Antes de
qualquer uso, o texto passa por aqui:

- UTF-8 estrito (um byte 0xff não vira um caractere qualquer);
- profundidade limitada (100.000 ``[`` seguidos não derrubam o processo com RecursionError,
  e uma estrutura funda demais para regravar nunca entra na cena);
- inteiros com um número limitado de dígitos (o Python recusa converter mais de 4.300
  com ValueError) e nada de NaN ou Infinity, que não são JSON;
- um problema é um ``StateFileError``, que diz onde (o arquivo, ou a tabela e a linha) e
  qual campo. Cada leitor o traduz no erro do seu assunto (CheckpointError,
  EffectsLedgerError...) ou o deixa subir: a linha de comando o diz numa linha só.
"""
from __future__ import annotations

import errno
import json
import os
import re
import sys

from harness import run_paths

# Bem acima do que uma cena tem (mensagem -> blocos -> entrada da ferramenta -> ...) e bem
# abaixo do limite de recursão do Python, que o json.dumps da próxima gravação também usa.
MAX_DEPTH = 200
# O mesmo teto do próprio Python para converter texto em int (sys.get_int_max_str_digits):
# tudo o que o harness conseguiu gravar, ele consegue ler.
MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300
_KEY_BEFORE = re.compile(r'"((?:[^"\\]|\\.){1,80})"\s*:\s*[\[{]?\s*$')


class StateFileError(Exception):
    """Um JSON guardado pela execução não se deixa ler: ``where`` (arquivo ou tabela/linha) e ``problem``."""

    def __init__(self, where, problem):
        self.where = os.fspath(where) if isinstance(where, os.PathLike) else str(where)
        self.problem = problem
        super().__init__(f"{self.where}: {problem}")


class _HugeInteger(Exception):
    def __init__(self, digits):
        self.digits = digits


class _NotFinite(Exception):
    def __init__(self, token):
        self.token = token


def _bounded_int(text):
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _HugeInteger(digits)
    return int(text)


def _no_constant(name):
    raise _NotFinite(name)


def _finite_float(text):
    value = float(text)
    if value in (float("inf"), float("-inf")):  # 1e400 vira infinito sem aviso
        raise _NotFinite(text)
    return value


def _value_spot(text, token):
    """Onde ``token`` aparece como valor (depois de ``:``, ``[`` ou ``,``), para a mensagem."""
    match = re.search(r"[:\[,]\s*(%s)" % re.escape(token), text)
    return _place(text, match.start(1)) if match else "posição desconhecida"


def field_before(text, offset):
    """O nome do campo cujo valor começa em ``offset`` (o último ``"nome":`` antes dele), ou None."""
    match = _KEY_BEFORE.search(text[max(0, offset - 200):offset])
    return match.group(1) if match else None


def _place(text, offset):
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    field = field_before(text, offset)
    return f"linha {line}, coluna {column}" + (f", campo '{field}'" if field else "")


def decode_text(data, where):
    """Bytes -> texto em UTF-8 estrito; um texto que já veio decodificado precisa ser UTF-8 válido."""
    if isinstance(data, str):
        try:
            data.encode("utf-8")
        except UnicodeEncodeError as error:
            raise StateFileError(where, f"o texto não é UTF-8 válido (posição {error.start})") from None
        return data
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as error:
        raise StateFileError(where, f"o arquivo não é texto UTF-8 válido: byte 0x{data[error.start]:02x} "
                                    f"na posição {error.start} (gravação interrompida ou arquivo editado?)") from None


def parse_state_json(data, where, allow_non_finite=False):
    """Texto (ou bytes) -> o valor JSON, com os limites deste módulo; StateFileError se não dá.

    ``allow_non_finite`` deixa passar NaN e Infinity (o lease.json que um código antigo gravou
    com eles: quem lê decide o que um prazo assim quer dizer)."""
    text = decode_text(data, where)
    if not text.strip():
        raise StateFileError(where, "arquivo vazio (gravação interrompida?)")
    try:
        value = json.loads(text, parse_int=_bounded_int, parse_float=None if allow_non_finite else _finite_float,
                           parse_constant=None if allow_non_finite else _no_constant)
    except json.JSONDecodeError as error:
        raise StateFileError(where, f"JSON inválido ou truncado na linha {error.lineno}, coluna {error.colno}: "
                                    f"{error.msg}") from None
    except _HugeInteger as huge:
        offset = re.search(r"-?\d{%d,}" % (MAX_INT_DIGITS + 1), text)
        spot = _place(text, offset.start()) if offset else "posição desconhecida"
        raise StateFileError(where, f"um inteiro de {huge.digits} dígitos ({spot}); o limite é "
                                    f"{MAX_INT_DIGITS}") from None
    except _NotFinite as bad:  # NaN, Infinity, -Infinity ou 1e400: o Python aceita, o JSON não
        raise StateFileError(where, f"o valor {bad.token} não é um número finito "
                                    f"({_value_spot(text, bad.token)})") from None
    except RecursionError:
        raise StateFileError(where, f"aninhamento fundo demais (mais de {MAX_DEPTH} níveis de [ ou {{)") from None
    check_depth(value, where)
    return value


def check_depth(value, where, limit=MAX_DEPTH):
    """Percorre ``value`` sem recursão e recusa o que passa de ``limit`` níveis, dizendo o caminho."""
    stack = [(value, 1, "")]
    while stack:
        current, depth, path = stack.pop()
        if depth > limit:
            shown = path if len(path) <= 60 else path[:60] + "..."
            raise StateFileError(where, f"aninhamento fundo demais em '{shown or '(raiz)'}' (mais de {limit} "
                                        f"níveis de [ ou {{)")
        if isinstance(current, dict):
            stack.extend((item, depth + 1, f"{path}.{key}" if path else key) for key, item in current.items())
        elif isinstance(current, list):
            stack.extend((item, depth + 1, f"{path}[{index}]") for index, item in enumerate(current))


def _read_bytes(path):
    """Os bytes de ``path``, aberto sem seguir links (``harness.run_paths``); None se não existe."""
    directory, name = os.path.split(os.path.abspath(path))
    try:
        return run_paths.read_bytes(directory, name)
    except FileNotFoundError:
        return None
    except run_paths.RunPathError as error:  # um link plantado (até para nada) não é "não existe"
        problem = error.problem if error.errno == errno.ELOOP else f"não dá para ler o arquivo: {error.problem}"
        raise StateFileError(path, problem) from None
    except OSError as error:
        raise StateFileError(path, f"não dá para ler o arquivo: {error.strerror or error}") from None


def read_state_json(path, allow_non_finite=False):
    """O valor JSON do arquivo ``path``; None se ele não existe. Qualquer outro problema é StateFileError."""
    data = _read_bytes(path)
    return None if data is None else parse_state_json(data, path, allow_non_finite)


def read_state_object(path):
    """Como ``read_state_json``, mas o valor precisa ser um objeto JSON (dict)."""
    value = read_state_json(path)
    if value is not None and not isinstance(value, dict):
        raise StateFileError(path, f"esperava um objeto JSON, encontrei {type(value).__name__}")
    return value


def read_state_lines(path):
    """Um arquivo JSON Lines (uma linha por registro, como world/outbox.jsonl): a lista de objetos.

    Ausente = []. Cada linha é lida com os mesmos limites; o erro diz o arquivo e a linha.
    """
    data = _read_bytes(path)
    if data is None:
        return []
    where = os.fspath(path)
    text = decode_text(data, where)
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        record = parse_state_json(line, f"{where}, linha {number}")
        if not isinstance(record, dict):
            raise StateFileError(f"{where}, linha {number}", f"esperava um objeto JSON, encontrei "
                                                             f"{type(record).__name__}")
        records.append(record)
    return records
