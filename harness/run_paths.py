"""Os caminhos dentro de uma execução: confinados à pasta dela e abertos sem seguir links.

Tudo o que está numa pasta de execução pode ter sido plantado por alguém (uma pasta
copiada de outra máquina, um colega com acesso ao disco): é dado, nunca endereço. Um link
simbólico ``checkpoint.json.tmp -> ~/.bashrc`` faria uma escrita ingênua sobrescrever o
alvo; um ``world -> /`` levaria a caixa de saída para fora da execução. Por isso cada
caminho aqui é:

- **relativo e confinado**: sem ``/`` no começo, sem ``..``, sem byte nulo, de tamanho limitado;
- **aberto componente a componente, sem seguir links** (``O_NOFOLLOW`` em cada pasta,
  a partir de um descritor da raiz): um link no meio do caminho é recusado, nunca seguido;
- **gravado de forma atômica num temporário de nome único** criado com
  ``O_CREAT | O_EXCL``: um nome que já existe (um link plantado, inclusive) nunca é aberto.

A raiz (a pasta que a pessoa deu em ``--workdir``, ou a sandbox do worker) é de confiança;
o que fica abaixo dela, não. Os erros são ``RunPathError``, um ``OSError`` com a mensagem em
português: os comandos já transformam um ``OSError`` numa linha só.
"""
from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import time

MAX_PATH_CHARS = 1024      # um caminho de ferramenta ou de cenário maior que isso não é um caminho
MAX_NAME_CHARS = 255       # o limite de um nome de arquivo no Linux
TEMPORARY_SUFFIX = ".tmp"
LEFTOVER_SECONDS = 60.0    # um temporário mais velho que isso sobrou de uma queda
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class RunPathError(OSError):
    """Um caminho que sairia da execução, ou que passa por um link: recusado antes de abrir."""

    def __init__(self, path, problem, code=errno.EPERM):
        super().__init__(code, problem, os.fspath(path))
        self.problem = problem

    def __str__(self):
        return f"{self.filename}: {self.problem}"


def relative_parts(relative, what="caminho"):
    """Os componentes de ``relative`` (sem ``.``), ou RunPathError se ele não fica dentro da raiz."""
    if not isinstance(relative, (str, os.PathLike)):
        raise RunPathError(repr(relative), f"o {what} precisa ser um texto")
    text = os.fspath(relative)
    if not isinstance(text, str) or not text:
        raise RunPathError(repr(relative), f"o {what} precisa ser um texto não vazio")
    shown = text if len(text) <= 80 else text[:77] + "..."
    if "\x00" in text:
        raise RunPathError(repr(shown), f"o {what} tem um byte nulo")
    if len(text) > MAX_PATH_CHARS:
        raise RunPathError(shown, f"o {what} tem {len(text)} caracteres (o limite é {MAX_PATH_CHARS})")
    if text.startswith("/"):
        raise RunPathError(shown, f"o {what} é absoluto; só caminhos relativos à pasta valem")
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise RunPathError(shown, f"o {what} sobe de pasta com '..'")
    for part in parts:
        if len(part) > MAX_NAME_CHARS:
            raise RunPathError(shown, f"um nome do {what} passa de {MAX_NAME_CHARS} caracteres")
    return parts


def _link_problem(dir_fd, name):
    """Por que abrir ``name`` falhou: um link é dito como link; None se o problema é outro."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return "é um link simbólico, e a execução não segue links (pode ter sido plantado para levar a leitura ou a escrita para fora dela)"
    return None


@contextlib.contextmanager
def _named(shown):
    """Um OSError de uma chamada com ``dir_fd`` traz só o nome curto: aqui ele ganha o caminho inteiro,
    para a mensagem dizer qual arquivo (o disco cheio em ``runs/x/checkpoint.json``, não em ``checkpoint.json``)."""
    try:
        yield
    except RunPathError:
        raise
    except OSError as error:
        error.filename, error.filename2 = os.fspath(shown), None
        raise


def _open_at(dir_fd, name, flags, mode, shown):
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EEXIST, errno.ENXIO):
            problem = _link_problem(dir_fd, name)
            if problem:
                raise RunPathError(shown, problem, errno.ELOOP) from None
        raise


@contextlib.contextmanager
def open_folder(root, parts, create=False):
    """Um descritor da pasta ``root/parts...``, aberta sem seguir link em nenhum componente abaixo de ``root``."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        walked = os.fspath(root)
        for part in parts:
            walked = os.path.join(walked, part)
            try:
                inner = _open_at(fd, part, _DIRECTORY, 0, walked)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)   # mkdir nunca segue um link: um link ali dá EEXIST
                inner = _open_at(fd, part, _DIRECTORY, 0, walked)
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def _split(root, path):
    """``path`` absoluto ou relativo a ``root`` -> (componentes da pasta, nome), confinado a ``root``."""
    root, path = os.fspath(root), os.fspath(path)
    if os.path.isabs(path):
        absolute_root = os.path.abspath(root)
        relative = os.path.relpath(os.path.abspath(path), absolute_root)
        if relative == os.pardir or relative.startswith(os.pardir + os.sep):
            raise RunPathError(path, f"fica fora de {root}")
        path = relative
    parts = relative_parts(path)
    if not parts:
        raise RunPathError(path, "não nomeia um arquivo")
    return parts[:-1], parts[-1]


def open_file(root, path, flags=os.O_RDONLY, mode=0o644, create_folders=False):
    """Abre ``root/path`` sem seguir link nenhum abaixo de ``root``; devolve o descritor."""
    folders, name = _split(root, path)
    shown = os.path.join(os.fspath(root), *folders, name)
    with _named(shown), open_folder(root, folders, create=create_folders) as dir_fd:
        fd = _open_at(dir_fd, name, flags, mode, shown)
    if not flags & (os.O_WRONLY | os.O_RDWR):
        kind = os.fstat(fd).st_mode
        if not stat.S_ISREG(kind):
            os.close(fd)
            raise RunPathError(shown, "não é um arquivo comum", errno.EISDIR if stat.S_ISDIR(kind) else errno.EINVAL)
    return fd


def read_bytes(root, path, limit=None):
    """Os bytes de ``root/path`` (no máximo ``limit``, e um a mais para saber se passou); FileNotFoundError se não existe."""
    fd = open_file(root, path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as file:
        return file.read() if limit is None else file.read(limit + 1)


def read_text(root, path):
    """O texto UTF-8 de ``root/path``, aberto sem seguir links; None se o arquivo não existe."""
    try:
        data = read_bytes(root, path)
    except FileNotFoundError:
        return None
    return data.decode("utf-8")


def write_atomic(root, path, text, before_replace=None, create_folders=False):
    """Grava ``text`` em ``root/path`` de forma atômica, sem seguir links.

    O temporário tem nome único e é criado com ``O_CREAT | O_EXCL``: um link ou um arquivo
    plantado com o nome dele faz a criação falhar, nunca a segue. ``os.replace`` troca o
    NOME do destino (um link no lugar do destino é substituído, o alvo dele não é tocado).
    ``before_replace`` roda com o temporário completo, antes da troca (o ponto de queda).
    """
    folders, name = _split(root, path)
    data = text.encode("utf-8")
    shown = os.path.join(os.fspath(root), *folders, name)
    with _named(shown), open_folder(root, folders, create=create_folders) as dir_fd:
        for _attempt in range(100):
            temporary = f"{name}.{secrets.token_hex(6)}{TEMPORARY_SUFFIX}"
            try:
                fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o644, dir_fd=dir_fd)
                break
            except FileExistsError:
                continue
        else:  # cem nomes aleatórios ocupados: alguém enche a pasta de propósito
            raise RunPathError(os.path.join(os.fspath(root), *folders, name), "não achei um nome livre para o temporário")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            if before_replace is not None:
                before_replace()
            os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError:
            # Uma gravação que falhou (disco cheio) não deixa lixo; uma queda (simulada ou não) deixa o
            # temporário, que ninguém lê e que remove_leftover_temporaries apaga depois.
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=dir_fd)
            raise
        os.fsync(dir_fd)


def write_json(path, data, root=None, before_replace=None, create_folders=False):
    """``data`` em JSON compacto em ``path``, por ``write_atomic``; a raiz padrão é a pasta do arquivo."""
    import json

    path = os.path.abspath(path)  # relativo, ele seria lido a partir de root, não da pasta atual
    root = os.path.dirname(path) if root is None else os.path.abspath(root)
    write_atomic(root, path, json.dumps(data, ensure_ascii=False, separators=(",", ":")), before_replace,
                 create_folders)


def open_text(path):
    """``open(path, encoding="utf-8")`` sem seguir link: o arquivo de estado de uma execução."""
    directory, name = os.path.split(os.path.abspath(path))
    return os.fdopen(open_file(directory, name), encoding="utf-8")


def refuse_link(path):
    """RunPathError se ``path`` é um link simbólico (a pasta da execução o recebeu de alguém)."""
    if os.path.islink(path):
        raise RunPathError(path, "é um link simbólico, e a execução não segue links (pode ter sido plantado "
                                 "para levar a leitura ou a escrita para fora dela)", errno.ELOOP)


def append_line(root, path, line):
    """Acrescenta ``line`` a ``root/path`` (criado se falta), sem seguir links, e leva ao disco."""
    fd = open_file(root, path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    shown = os.path.join(os.fspath(root), os.fspath(path))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RunPathError(path, "não é um arquivo comum")
        data = line.encode("utf-8")
        with _named(shown):
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
    finally:
        os.close(fd)


def remove_leftover_temporaries(folder, older_than=LEFTOVER_SECONDS, clock=time.time):
    """Apaga os temporários de ``write_atomic`` que sobraram de quedas (mais velhos que ``older_than`` s).

    Só o nome some: apagar um link apaga o link, nunca o alvo. Um temporário recente pode
    ser de alguém gravando agora: fica.
    """
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        for name in os.listdir(dir_fd):
            if not is_write_temporary(name):
                continue
            with contextlib.suppress(OSError):
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                if clock() - info.st_mtime >= older_than:
                    os.unlink(name, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def is_write_temporary(name):
    """``checkpoint.json.1a2b3c4d5e6f.tmp`` (o nome que ``write_atomic`` dá ao temporário) ou
    ``checkpoint.json.k2x_9qpz.tmp`` (o de ``write_json_atomic``, da lição 2, tirado de ``tempfile.mkstemp``)."""
    if not name.endswith(TEMPORARY_SUFFIX):
        return False
    stem = name[: -len(TEMPORARY_SUFFIX)]
    head, _, token = stem.rpartition(".")
    if len(token) == 12:
        return bool(head) and all(c in "0123456789abcdef" for c in token)
    return bool(head) and len(token) == 8 and all(c in "abcdefghijklmnopqrstuvwxyz0123456789_" for c in token)
