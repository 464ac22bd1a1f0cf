"""Lição 2: todos os estados que o disco pode guardar se a energia cair no meio de uma gravação.

Uma gravação é uma sequência de chamadas ao sistema de arquivos (abrir, escrever, fsync,
os.replace, os.remove...). ``SaveTrace`` fotografa a pasta do checkpoint antes de cada uma
delas e no fim, e anota o que já é durável: o conteúdo de um arquivo só depois de um fsync
dele; um nome criado, trocado ou apagado só depois de um fsync da pasta. ``crash_states``
monta, para cada um desses pontos, os estados que uma queda de energia pode deixar, num
modelo conservador de um sistema de arquivos Linux (docs/modelo-de-queda.md):

- um arquivo cujo conteúdo atual ainda não passou por fsync pode voltar com o conteúdo
  durável anterior, vazio, com só um pedaço (o começo, "rasgado") ou inteiro; um arquivo que
  já existia e foi aberto de novo para escrita (``open(path, "w")``, ``"r+"``, ``os.open``
  com ``O_TRUNC``, ``os.truncate``) também, até o próximo fsync dele, mesmo que no fim ele
  tenha os mesmos bytes de antes: no meio da reescrita ele esteve vazio ou pela metade;
- cada nome da pasta que mudou desde o último fsync da pasta pode voltar como era
  (o arquivo antigo, ou nada) ou como ficou;
- o que veio depois da última sincronização pode ter se perdido.

Para o espaço de estados não explodir, cada ponto varia no máximo ``MAX_NAMES_VARIED`` nomes
da pasta (o checkpoint primeiro) e gera no máximo ``MAX_STATES_PER_POINT`` estados.
``explore_save`` junta tudo: grava por cima de um checkpoint anterior com o espião ligado,
recria cada estado numa pasta de rascunho e lê cada um com o ``load`` dado.
"""
from __future__ import annotations

import io
import itertools
import sys
import json
import os
import shutil
import stat
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

MAX_NAMES_VARIED = 4  # nomes da pasta cuja entrada pode ser a antiga ou a nova (2**4 combinações)
MAX_STATES_PER_POINT = 64

# As funções de verdade, guardadas antes de qualquer espião: a fotografia da pasta não pode
# passar pelos espiões (nem contar como uma chamada da gravação observada).
_io_open = io.open
REAL_OS_CALLS = {name: getattr(os, name) for name in (
    "replace", "rename", "link", "remove", "unlink", "fsync", "fdatasync", "truncate", "ftruncate", "open",
) if hasattr(os, name)}
# As mesmas funções no módulo de baixo (posix.replace é os.replace): quem chama posix.open
# também passa pelo espião.
_LOW = sys.modules.get("posix") or sys.modules.get("nt")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_TRUNC | os.O_APPEND
# As outras maneiras de trocar um nome: por dentro elas chamam os.rename ou os.replace (ou, no
# shutil.move, copiam), e a chamada aparece com o nome que o aluno escreveu.
REAL_MOVES = {"shutil.move": shutil.move, "Path.rename": Path.rename, "Path.replace": Path.replace}
REAL_CALLS = {**REAL_OS_CALLS, **REAL_MOVES}
SWAPS = ("`os.replace(", "`os.rename(", "`os.link(", "`shutil.move(", "`Path.rename(", "`Path.replace(")


START = "o começo da gravação"


def _of(call: str) -> str:
    """"de `os.replace(...)`", "do fsync da pasta": a chamada depois de "antes"/"depois"."""
    return f"do {call}" if call.startswith(("fsync", "fdatasync")) else f"de {call}"


@dataclass(frozen=True)
class Snapshot:
    """A pasta num ponto da gravação: o que há nela e o que dela já é durável."""
    after: str                   # a última chamada antes deste ponto
    before: str | None           # a próxima chamada (None: a gravação já voltou)
    names: dict                  # nome -> chave do arquivo (um inode, sem reuso)
    contents: dict               # chave -> bytes agora
    durable_names: dict          # nome -> chave, como estava no último fsync da pasta
    durable_contents: dict       # chave -> bytes no último fsync do arquivo
    rewritten: frozenset = frozenset()  # chaves de arquivos que já existiam, reabertos para escrita desde o último fsync


@dataclass(frozen=True)
class CrashState:
    """Um estado possível do disco depois de uma queda: nome -> bytes de cada arquivo."""
    files: tuple                 # ((nome, bytes), ...) em ordem de nome
    after: str
    before: str | None

    @property
    def returned(self) -> bool:
        """A queda veio depois de a gravação voltar (quem chamou já conta com ela)."""
        return self.before is None

    def where(self) -> str:
        """Onde a máquina caiu, em palavras."""
        if self.before is None and self.after == START:
            return "depois que a gravação voltou (sem nenhuma chamada ao sistema de arquivos observada)"
        if self.before is None:
            return f"depois que a gravação voltou (a última chamada foi {self.after})"
        if self.after == START:
            return f"no começo da gravação, antes {_of(self.before)}"
        return f"logo depois {_of(self.after)} e antes {_of(self.before)}"

    def describe(self) -> str:
        parts = [f"{name} com {len(data)} bytes" if data else f"{name} vazio" for name, data in self.files]
        return ", ".join(parts) or "a pasta vazia"


class SaveTrace:
    """O caderno da gravação observada: uma fotografia da pasta antes de cada chamada."""

    def __init__(self, folder) -> None:
        self.folder = Path(folder)
        self.folder_inode = os.stat(self.folder).st_ino
        self._keys: dict[int, int] = {}
        self._serial = itertools.count()
        self.calls: list[str] = []
        self.snapshots: list[Snapshot] = []
        names, contents = self._look()
        # o ponto de partida é durável: o checkpoint anterior já sobreviveu a quedas
        self._durable_names, self._durable_contents = dict(names), dict(contents)
        self._rewritten: set[int] = set()
        self._last = START

    def _key(self, inode: int) -> int:
        if inode not in self._keys:
            self._keys[inode] = next(self._serial)
        return self._keys[inode]

    def _look(self) -> tuple[dict, dict]:
        names, contents = {}, {}
        with os.scandir(self.folder) as entries:
            for entry in entries:
                if not entry.is_file(follow_symlinks=False):
                    continue
                key = self._key(entry.inode())
                names[entry.name] = key
                with _io_open(entry.path, "rb") as file:
                    contents[key] = file.read()
        return names, contents

    def shown(self, path, dir_fd: int | None = None) -> str:
        """Um caminho como a mensagem o mostra: só o nome, se está na pasta do checkpoint
        (um nome relativo é relativo a ``dir_fd``, se dado, ou à pasta atual)."""
        try:
            text = os.fsdecode(path)
        except TypeError:
            return repr(path)
        full = Path(text) if os.path.isabs(text) else opened_folder(dir_fd) / text
        return full.name if full.parent.resolve() == self.folder.resolve() else text

    def before(self, call: str) -> None:
        """Fotografa a pasta: a máquina pode cair aqui, antes de ``call``."""
        self._snapshot(call)
        self.calls.append(call)
        self._last = call

    def finished(self) -> None:
        """A gravação voltou: o último ponto, em que só a versão nova vale."""
        self._snapshot(None)

    def _snapshot(self, call: str | None) -> None:
        names, contents = self._look()
        self.snapshots.append(Snapshot(self._last, call, names, contents,
                                       dict(self._durable_names), dict(self._durable_contents),
                                       frozenset(self._rewritten)))

    @staticmethod
    def existing(path, dir_fd: int | None = None) -> bool:
        """``path`` (relativo a ``dir_fd``, se dado) já é um arquivo."""
        try:
            info = os.stat(path, dir_fd=dir_fd) if dir_fd is not None else os.stat(path)
        except (OSError, TypeError, ValueError):
            return False
        return stat.S_ISREG(info.st_mode)

    def rewriting(self, path=None, descriptor: int | None = None, dir_fd: int | None = None) -> None:
        """Um arquivo que já existe foi aberto para escrita (ou truncado): até o próximo fsync
        dele, uma queda pode deixá-lo vazio ou pela metade, qualquer que seja o conteúdo final."""
        try:
            if descriptor is not None:
                info = os.fstat(descriptor)
            elif dir_fd is not None:
                info = os.stat(path, dir_fd=dir_fd)
            else:
                info = os.stat(path)
        except (OSError, TypeError, ValueError):
            return
        if stat.S_ISREG(info.st_mode):
            self._rewritten.add(self._key(info.st_ino))

    def unlinking(self, path, dir_fd: int | None = None) -> Callable[[], None]:
        """Antes de um nome sumir (os.remove, o destino de os.replace): se era o último nome
        do arquivo, seu inode pode ser reusado, e a chave dele não pode ir junto."""
        try:
            info = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
        except (OSError, TypeError, ValueError):
            return lambda: None
        if info.st_nlink != 1:
            return lambda: None
        return lambda: self._keys.pop(info.st_ino, None)

    def synced(self, descriptor: int) -> None:
        """Depois de um fsync (ou fdatasync) de verdade: o que ele tornou durável."""
        try:
            info = os.fstat(descriptor)
        except OSError:
            return
        if stat.S_ISDIR(info.st_mode):
            if info.st_ino == self.folder_inode:
                self._durable_names = self._look()[0]
            return
        if not stat.S_ISREG(info.st_mode):
            return
        key = self._key(info.st_ino)
        self._rewritten.discard(key)
        names, contents = self._look()
        if key in contents:
            self._durable_contents[key] = contents[key]
            return
        try:  # um arquivo fora da pasta (ainda sem nome nela): lido pelo descritor
            with _io_open(f"/proc/self/fd/{descriptor}", "rb") as file:
                self._durable_contents[key] = file.read()
        except OSError:
            pass


def _flags_shown(flags: int) -> str:
    """os.O_WRONLY | os.O_TRUNC, como o aluno escreveu (as principais)."""
    names = [name for name in ("O_WRONLY", "O_RDWR", "O_CREAT", "O_EXCL", "O_TRUNC", "O_APPEND")
             if flags & getattr(os, name)]
    return " | ".join(f"os.{name}" for name in names) or "os.O_RDONLY"


def opened_folder(dir_fd: int | None) -> Path:
    """A pasta de que um nome relativo parte: a aberta em ``dir_fd``, ou a atual."""
    if dir_fd is None:
        return Path.cwd()
    try:
        return Path(os.readlink(f"/proc/self/fd/{dir_fd}"))
    except (OSError, TypeError):
        return Path.cwd()


def folder_shown(descriptor: int) -> str:
    """A pasta aberta em ``descriptor``, como a mensagem a mostra ("." quando é a pasta atual)."""
    try:
        where = os.readlink(f"/proc/self/fd/{descriptor}")
    except OSError:
        return "uma pasta"
    return '".", a pasta atual' if where == os.getcwd() else where


def crash_states(trace: SaveTrace, focus: str) -> list[CrashState]:
    """Todos os estados distintos que uma queda pode deixar, ponto a ponto; ``focus`` é o
    nome do checkpoint, o primeiro a variar."""
    seen, states = set(), []
    for snapshot in trace.snapshots:
        for files in _states_at(snapshot, focus):
            mark = (files, snapshot.before is None)
            if mark not in seen:
                seen.add(mark)
                states.append(CrashState(files, snapshot.after, snapshot.before))
    return states


def _states_at(snapshot: Snapshot, focus: str) -> Iterator[tuple]:
    every = sorted(set(snapshot.names) | set(snapshot.durable_names), key=lambda name: (name != focus, name))
    changed = [name for name in every if snapshot.names.get(name) != snapshot.durable_names.get(name)]
    varied = changed[:MAX_NAMES_VARIED]
    choices = [(snapshot.durable_names.get(name), snapshot.names.get(name)) if name in varied
               else (snapshot.names.get(name),) for name in every]
    produced = 0
    for picked in itertools.product(*choices):
        entries = [(name, key) for name, key in zip(every, picked) if key is not None]
        keys = list(dict.fromkeys(key for _, key in entries))
        options = [_content_options(snapshot, key) for key in keys]
        for contents in itertools.product(*options):
            chosen = dict(zip(keys, contents))
            yield tuple((name, chosen[key]) for name, key in sorted(entries))
            produced += 1
            if produced >= MAX_STATES_PER_POINT:
                return


def _content_options(snapshot: Snapshot, key: int) -> list[bytes]:
    """O conteúdo durável; vazio; um começo rasgado do que falta; tudo (sem repetir)."""
    durable = snapshot.durable_contents.get(key)
    current = snapshot.contents.get(key, durable if durable is not None else b"")
    rewritten = key in snapshot.rewritten
    if durable == current and not rewritten:
        return [current]
    kept = durable if durable is not None and current.startswith(durable) and not rewritten else b""
    torn = current[: len(kept) + (len(current) - len(kept)) // 2]
    options = [durable if durable is not None else b"", b"", torn, current]
    return list(dict.fromkeys(options))


def materialise(state: CrashState, folder) -> Path:
    """Recria ``state`` numa pasta vazia (criada se preciso) e a devolve."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in state.files:
        with _io_open(folder / name, "wb") as file:
            file.write(data)
    return folder


@contextmanager
def recorded_os_calls(trace: SaveTrace, fail_replace: bool = False) -> Iterator[dict]:
    """Troca, dentro do bloco, as funções do ``os`` que mudam o disco por espiões que
    fotografam a pasta antes de cada chamada e depois a fazem de verdade; ``shutil.move``,
    ``Path.rename`` e ``Path.replace`` também, com o nome que o aluno usou. Com
    ``fail_replace``, toda troca de nome (os.replace, os.rename, os.link e o que passa por
    elas) levanta OSError sem trocar nada (um disco cheio, uma permissão). Devolve os espiões
    (nome -> função), para quem precisar instalá-los em outros lugares (um
    ``from os import replace``, por exemplo)."""
    real = REAL_OS_CALLS
    outer = threading.local()  # a troca que o aluno chamou (shutil.move...), enquanto ela roda

    def moving(name):
        def spy(src, dst, *args, **kwargs):
            src_fd, dst_fd = kwargs.get("src_dir_fd"), kwargs.get("dst_dir_fd")
            trace.before(getattr(outer, "call", None)
                         or f"`os.{name}({trace.shown(src, src_fd)}, {trace.shown(dst, dst_fd)})`")
            outer.call = None
            if fail_replace:
                raise OSError(28, "No space left on device (falha simulada na troca)")
            forget = trace.unlinking(dst, dst_fd)
            result = real[name](src, dst, *args, **kwargs)
            forget()
            return result
        return spy

    def removing(name):
        def spy(path, *args, **kwargs):
            trace.before(f"`os.{name}({trace.shown(path, kwargs.get('dir_fd'))})`")
            forget = trace.unlinking(path, kwargs.get("dir_fd"))
            result = real[name](path, *args, **kwargs)
            forget()
            return result
        return spy

    def syncing(name):
        def spy(descriptor):
            number = descriptor if isinstance(descriptor, int) else descriptor.fileno()
            info = os.fstat(number)
            if not stat.S_ISDIR(info.st_mode):
                kind = "do arquivo"
            elif info.st_ino == trace.folder_inode:
                kind = "da pasta"
            else:
                kind = f"de outra pasta ({folder_shown(number)}), não a do checkpoint"
            trace.before(f"{name} {kind}")
            result = real[name](descriptor)
            trace.synced(number)
            return result
        return spy

    def truncating(name):
        def spy(target, length):
            shown = "o arquivo" if isinstance(target, int) else trace.shown(target)
            trace.before(f"`os.{name}({shown}, {length})`")
            result = real[name](target, length)
            if isinstance(target, int):
                trace.rewriting(descriptor=target)
            else:
                trace.rewriting(target)
            return result
        return spy

    def opening(name):
        def spy(path, flags, *args, dir_fd=None, **kwargs):
            again = bool(flags & WRITE_FLAGS) and trace.existing(path, dir_fd)
            if again:  # reabrir para escrita um arquivo que já existe: uma reescrita no lugar
                trace.before(f"`os.open({trace.shown(path, dir_fd)}, {_flags_shown(flags)})`")
            descriptor = real[name](path, flags, *args, dir_fd=dir_fd, **kwargs)
            if again:
                trace.rewriting(descriptor=descriptor)
            return descriptor
        return spy

    def named_move(label):
        function = REAL_MOVES[label]

        def spy(src, dst, *args, **kwargs):
            if getattr(outer, "call", None) is not None:  # um shutil.move por dentro de outro
                return function(src, dst, *args, **kwargs)
            outer.call = f"`{label}({trace.shown(src)}, {trace.shown(dst)})`"
            try:
                return function(src, dst, *args, **kwargs)
            finally:
                outer.call = None
        return spy

    makers = {"replace": moving, "rename": moving, "link": moving, "remove": removing, "unlink": removing,
              "fsync": syncing, "fdatasync": syncing, "truncate": truncating, "ftruncate": truncating,
              "open": opening}
    spies = {name: makers[name](name) for name in real}
    moves = {label: named_move(label) for label in REAL_MOVES}
    low = [name for name in real if _LOW is not None and getattr(_LOW, name, None) is real[name]]
    for name, spy in spies.items():
        setattr(os, name, spy)
    for name in low:
        setattr(_LOW, name, spies[name])
    shutil.move = moves["shutil.move"]
    Path.rename, Path.replace = moves["Path.rename"], moves["Path.replace"]
    try:
        yield {**spies, **moves}
    finally:
        for name, function in real.items():
            setattr(os, name, function)
        for name in low:
            setattr(_LOW, name, real[name])
        shutil.move = REAL_MOVES["shutil.move"]
        Path.rename, Path.replace = REAL_MOVES["Path.rename"], REAL_MOVES["Path.replace"]


@dataclass(frozen=True)
class Verdict:
    """O que o ``load`` leu num estado, e se isso é aceitável ali."""
    state: CrashState
    outcome: str                 # "anterior", "novo", "nenhum" ou a descrição do problema
    acceptable: bool


def judge(state: CrashState, loaded: Any, error: BaseException | None, old: Any, new: Any,
          path: Any = None) -> Verdict:
    """Antes de a gravação voltar, vale o checkpoint anterior ou o novo (ou nenhum, se não
    havia anterior); depois, só o novo. ``path``, o arquivo lido, sai da mensagem do erro."""
    if error is not None:
        text = str(error).replace(os.fspath(path), "").strip(" :") if path is not None else str(error)
        return Verdict(state, f"levanta {type(error).__name__}" + (f" ({text})" if text else ""), False)
    if loaded == new and new is not None:
        return Verdict(state, "novo", True)
    if loaded is None:
        return Verdict(state, "nenhum", old is None and not state.returned)
    if loaded == old:
        return Verdict(state, "anterior", not state.returned)
    return Verdict(state, "um checkpoint que não é nem o anterior nem o novo", False)


def read_json_or_none(path) -> Any:
    """A leitura mais simples: o JSON do arquivo, ou None se ele não existe."""
    try:
        with _io_open(path, encoding="utf-8") as file:
            return json.load(file)
    except FileNotFoundError:
        return None


def explore_save(save: Callable, old: Any, new: Any, folder, load: Callable = read_json_or_none,
                 name: str = "checkpoint.json") -> list[Verdict]:
    """Grava ``new`` com ``save`` por cima de ``old`` (None: a pasta começa vazia), com o
    espião ligado; depois recria cada estado possível numa subpasta de ``folder`` e o lê
    com ``load`` (por padrão, ``read_json_or_none``). Devolve um veredito por estado."""
    folder = Path(folder)
    work = folder / "gravacao"
    work.mkdir(parents=True)
    path = work / name
    if old is not None:
        with _io_open(path, "w", encoding="utf-8") as file:
            json.dump(old, file, ensure_ascii=False)
    trace = SaveTrace(work)
    with recorded_os_calls(trace):
        save(new, path)
    trace.finished()
    verdicts = []
    for number, state in enumerate(crash_states(trace, name)):
        place = materialise(state, folder / f"estado-{number}")
        try:
            loaded, error = load(place / name), None
        except Exception as raised:  # noqa: BLE001 - o tipo do erro é o achado
            loaded, error = None, raised
        verdicts.append(judge(state, loaded, error, old, new, place / name))
        shutil.rmtree(place, ignore_errors=True)
    return verdicts
