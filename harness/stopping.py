"""Quando ``run`` para sem cair: um Ctrl-C, um erro da API ou um disco que não aceita gravar.

Uma queda (SIGKILL, falta de energia) não avisa ninguém, e a retomada a conta como uma
tentativa de recuperação. Estes três avisam: o processo ainda está vivo, sabe o motivo e
pode dizê-lo numa linha. Nos dois primeiros ele ainda grava a execução como pausada (a
última cena gravada, com o motivo), para a próxima retomada não contar uma queda que não
houve. Nenhuma cena nova é gravada aqui: a do meio de um turno pode ter uma chamada sem
resultado, e a última gravada já é, por construção, uma de onde a retomada sabe seguir.
"""
from __future__ import annotations

import errno
import signal
import threading

from harness import api_errors
from harness.lifecycle import LeaseHeld, set_status

# O que fazer diante de cada erro de disco, pelo errno.
DISK_ADVICE = {
    errno.ENOSPC: "o disco está cheio: libere espaço",
    errno.EDQUOT: "a cota de disco acabou: libere espaço",
    errno.EROFS: "o sistema de arquivos está montado só para leitura: use uma pasta gravável",
    errno.EACCES: "sem permissão de escrita: ajuste as permissões da pasta",
    errno.EPERM: "sem permissão de escrita: ajuste as permissões da pasta",
    errno.ELOOP: "apague o link (ou ponha ali o arquivo de verdade): a execução só usa o que está dentro da pasta dela",
}


def pause_stopped_run(store, reason):
    """Grava como pausada a execução de ``store`` que este processo rodava; devolve a cena ou None.

    A posse do processo já foi devolvida (o ``finally`` de ``run_durable``), e ``store`` é um
    armazenamento aberto de novo (uma conexão interrompida no meio de um comando não serve
    mais): uma posse nova, e só uma execução ainda ``running`` muda. Com outro worker na
    posse, ou sem cena gravada, nada muda. Um segundo Ctrl-C durante esta gravação é ignorado.
    """
    previous = ignore_ctrl_c()
    try:
        if not store.exists():
            return None
        try:
            lease = store.acquire_lease()
        except LeaseHeld:
            return None
        try:
            state = store.load()
            if state is not None and state["status"] == "running":
                set_status(state, "paused", reason)
                store.save(lease, state, crash_points=False)
            return state
        finally:
            store.release_lease(lease)
    finally:
        restore_ctrl_c(previous)


def ignore_ctrl_c():
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, signal.SIG_IGN)


def restore_ctrl_c(previous):
    if previous is not None:
        signal.signal(signal.SIGINT, previous)


def describe_api_error(error):
    """Uma linha sobre o erro da API: o código HTTP, o tipo e a mensagem que a API mandou."""
    if isinstance(error, api_errors.APIStatusError):
        body = error.body if isinstance(error.body, dict) else {}
        detail = body.get("error", {}) if isinstance(body.get("error"), dict) else {}
        kind = detail.get("type") or type(error).__name__
        message = detail.get("message") or error.message
        if error.status_code in (429, 500, 502, 503, 504, 529):
            advice = "é passageiro do lado da API: tente de novo em instantes"
        else:
            advice = "a API recusou o pedido: ele não vai passar se for repetido igual"
        return f"a API respondeu {error.status_code} ({kind}: {message}); {advice}"
    if isinstance(error, api_errors.APITimeoutError):
        return "a API não respondeu a tempo; tente de novo em instantes"
    return f"não deu para falar com a API ({error}); confira a rede e tente de novo"


def describe_disk_error(error):
    """Uma linha sobre um OSError de gravação: o arquivo, o erro do sistema e o que fazer."""
    where = error.filename2 or error.filename or "a pasta da execução"  # num rename, o destino
    advice = DISK_ADVICE.get(error.errno, "confira o disco e a pasta")
    return f"não deu para gravar em {where}: {error.strerror or error}; {advice}"
