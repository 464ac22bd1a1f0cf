"""Onde uma execução grava o que precisa sobreviver: arquivos, SQLite ou PostgreSQL.

Os três cumprem o mesmo contrato (``base.RunStore``): a cena, a sequência de pontos, o
livro-razão, as aprovações, a posse com fencing token e a rebobinagem e a bifurcação da
lição 5 (cada um à prova de queda do seu jeito: um banco numa transação, os arquivos com o
plano em rewind.json e a pasta de obra da bifurcação).

    open_store("files", pasta)                  os arquivos que as lições 2 a 6 constroem
    open_store("sqlite", pasta)                 um arquivo pasta/run.sqlite3 (WAL, synchronous=FULL)
    open_store("postgresql://...", pasta, run)  um servidor; a execução é a linha ``run``

Módulos: ``base`` (o contrato e o ``StoreError``), ``files``, ``sql`` (o que os dois bancos compartilham),
``sqlite``, ``postgres`` (com ``claim_run`` para vários workers), ``database_world`` (a caixa
de saída como tabela) e ``local_postgres`` (um servidor descartável para testes e aulas).
"""
from __future__ import annotations

from pathlib import Path

from harness.stores.base import StoreError  # o erro do contrato, importável também daqui

STORE_KINDS = ("files", "sqlite", "postgresql://...")
POSTGRES_PREFIXES = ("postgresql://", "postgres://")
# O arquivo que mostra, numa pasta, a execução de cada armazenamento local.
RUN_MARKERS = {"files": ("checkpoint.json", "em arquivos"), "sqlite": ("run.sqlite3", "em SQLite")}


def is_postgres(spec):
    return isinstance(spec, str) and spec.startswith(POSTGRES_PREFIXES)


def open_store(spec, workdir, run=None):
    """O armazenamento pedido em ``spec`` para a execução da pasta ``workdir``.

    No PostgreSQL a execução é uma linha do banco (``run``; padrão: o nome da pasta) e a
    pasta guarda só a sandbox do mundo.
    """
    if spec in (None, "", "files"):
        from harness.stores.files import FileStore

        refuse_another_stores_run("files", workdir)
        return FileStore(workdir)
    if spec == "sqlite":
        from harness.stores.sqlite import SqliteStore

        refuse_another_stores_run("sqlite", workdir)
        return SqliteStore(workdir)
    if is_postgres(spec):
        from harness.stores.postgres import PostgresStore

        from harness.run_names import run_name_problem

        refuse_another_stores_run("postgresql://...", workdir)
        run = run or Path(workdir).name
        if run_name_problem(run):  # o nome da pasta vira o nome da execução: a mesma regra do --run
            raise StoreError(f"{run_name_problem(run)} (vindo do nome da pasta {workdir}); diga outro com --run NOME")
        return PostgresStore(spec, run, Path(workdir) / "world")
    from harness.stores.addresses import without_password

    raise StoreError(f"armazenamento desconhecido: {without_password(spec)!r}; use files, sqlite ou postgresql://...")


def refuse_another_stores_run(kind, workdir):
    """Uma pasta guarda a execução de UM armazenamento. Começar outro ali apagaria o mundo
    (a caixa de saída, os chamados) da execução que já está lá; ler com o armazenamento errado
    diria "não há execução" de uma que existe. StoreError antes de tocar em qualquer arquivo."""
    for other, (marker, where) in RUN_MARKERS.items():
        if other != kind and (Path(workdir) / marker).exists():
            option = "--store files (o padrão)" if other == "files" else f"--store {other}"
            raise StoreError(f"{workdir} já guarda uma execução {where} ({marker}): para ela, use {option}; "
                             f"para uma execução com --store {kind}, escolha outra pasta (--workdir)")
