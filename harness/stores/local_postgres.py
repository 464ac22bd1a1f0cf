"""Um PostgreSQL descartável: um cluster novo numa pasta temporária, só com um socket Unix.

Serve aos testes, ao benchmark e ao apêndice: ``initdb`` cria o cluster, ``pg_ctl`` o sobe
sem nenhuma porta TCP (``listen_addresses=''``), o socket fica dentro da própria pasta, e
tudo é apagado no fim. Usa os binários do pacote ``postgresql`` do Debian, que ficam em
``/usr/lib/postgresql/VERSÃO/bin`` (fora do PATH).

O ``initdb`` se recusa a rodar como root: nesse caso a pasta passa a ser do usuário
``postgres`` (criado pelo pacote) e os comandos rodam com ``runuser -u postgres``.
Como usuário comum, tudo roda direto.
"""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

POSTGRES_USER = "postgres"


def find_postgres_bin():
    """A pasta com ``initdb`` e ``pg_ctl``: PATH, depois a versão mais nova do pacote Debian."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).parent
    installed = Path("/usr/lib/postgresql")
    if installed.is_dir():
        versions = sorted((folder for folder in installed.iterdir() if (folder / "bin" / "initdb").exists()),
                          key=lambda folder: int(folder.name) if folder.name.isdigit() else 0)
        if versions:
            return versions[-1] / "bin"
    return None


def unavailable_reason():
    """Por que não dá para subir um PostgreSQL aqui; None quando dá."""
    if find_postgres_bin() is None:
        return ("PostgreSQL não encontrado (nem initdb no PATH, nem /usr/lib/postgresql/*/bin): "
                "instale o pacote postgresql (Debian: apt-get install postgresql)")
    if os.geteuid() == 0 and (shutil.which("runuser") is None or not _user_exists(POSTGRES_USER)):
        return "rodando como root sem o usuário postgres ou sem runuser: o initdb recusa root"
    return None


def _user_exists(name):
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


class LocalPostgres:
    """Um cluster descartável. Use como ``with LocalPostgres() as server: server.dsn``."""

    def __init__(self, settings=None):
        self.bin = find_postgres_bin()
        self.settings = dict(settings or {})
        self.folder = None

    @property
    def dsn(self):
        """O endereço para ``--store`` e para o psycopg: o socket Unix da pasta, sem porta TCP."""
        return f"postgresql://{POSTGRES_USER}@/postgres?host={quote(str(self.folder), safe='/')}"

    def _as_owner(self, command):
        if os.geteuid() == 0:
            return ["runuser", "-u", POSTGRES_USER, "--", *command]
        return command

    def start(self):
        reason = unavailable_reason()
        if reason:
            raise RuntimeError(reason)
        # Caminho curto: o socket Unix tem limite de ~100 caracteres.
        self.folder = Path(tempfile.mkdtemp(prefix="pg-", dir="/tmp" if Path("/tmp").is_dir() else None))
        try:  # Ctrl-C no meio do initdb ou do pg_ctl não deixa uma pasta (nem um servidor) para trás
            if os.geteuid() == 0:
                shutil.chown(self.folder, POSTGRES_USER, POSTGRES_USER)
            data = self.folder / "data"
            subprocess.run(self._as_owner([str(self.bin / "initdb"), "-D", str(data), "-A", "trust",
                                           "-U", POSTGRES_USER, "-E", "UTF8", "--no-locale", "--no-sync"]),
                           check=True, capture_output=True, text=True)
            options = [f"-k {self.folder}", "-c listen_addresses=''"]
            options += [f"-c {key}={value}" for key, value in self.settings.items()]
            result = subprocess.run(self._as_owner([str(self.bin / "pg_ctl"), "-D", str(data), "-o", " ".join(options),
                                                    "-l", str(self.folder / "log"), "-w", "start"]),
                                    capture_output=True, text=True)
            if result.returncode != 0:
                log = (self.folder / "log").read_text(errors="replace") if (self.folder / "log").exists() else ""
                raise RuntimeError(f"pg_ctl start falhou: {result.stderr.strip()}\n{log[-1000:]}")
        except BaseException:
            self.stop()
            raise
        atexit.register(self.stop)  # um notebook ou teste que para no meio não deixa um servidor rodando
        return self

    def restart(self):
        """Reinicia o servidor (``pg_ctl restart -m fast``): todas as conexões caem, como numa manutenção."""
        data = self.folder / "data"
        subprocess.run(self._as_owner([str(self.bin / "pg_ctl"), "-D", str(data), "-m", "fast", "-w",
                                       "-l", str(self.folder / "log"), "restart"]),
                       check=True, capture_output=True, text=True)

    def stop(self):
        if self.folder is None:
            return
        data = self.folder / "data"
        if (data / "postmaster.pid").exists():
            subprocess.run(self._as_owner([str(self.bin / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                                           "stop"]), capture_output=True)
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
